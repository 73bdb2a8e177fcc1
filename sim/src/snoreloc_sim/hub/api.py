"""The hub's resource semantics: the simulator's `server.Api` with what a plain kube-apiserver adds for the hub.

`HubApi` keeps the object paths, writes, patches, validation and server-side apply of `server.Api` and changes
only what differs on a plain Kubernetes hub: discovery with every verb and category (`discovery`), watches that
resume from a resourceVersion (`watch`), lists with consistent continue tokens (`paging`), TokenRequest
(`tokens`), finalizers and owner references on delete (`lifecycle`), and server-side printing (`tables`).
"""

from __future__ import annotations

from typing import Any

from snoreloc_sim import model, registry, server
from snoreloc_sim.hub import crds, discovery

Obj = dict[str, Any]


def version_info() -> Obj:
    """`/version` of the Kubernetes release the hub models."""
    return {
        "major": "1",
        "minor": "30",
        "gitVersion": "v1.30.4",
        "gitCommit": "a51b3b711150f57ffc1f526a640ec058514ed596",
        "gitTreeState": "clean",
        "buildDate": "2024-08-14T19:04:58Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


class HubApi(server.Api):
    """`server.Api` over the hub's catalog of types (built-ins plus CRDs created at run time)."""

    def __init__(self, cluster: model.Cluster, admitter: server.Admitter) -> None:
        empty = registry.Registry(types={}, builtin=frozenset())
        super().__init__(cluster, empty, admitter, version_info())
        self.catalog: crds.Catalog | None = None

    def _route(self, request: server.Request, conflict: bool) -> server.Response:
        if request.path == "/openapi/v2":
            # kubectl 1.20 fetches the OpenAPI v2 document (protobuf) to validate client-side; an empty body is a
            # valid empty document, so kubectl skips its own validation and the hub's admission decides.
            return server.Response(200, "")
        return super()._route(request, conflict)

    def _discovery(self, parts: list[str]) -> Obj | None:
        resources = parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis")
        if not resources or self.catalog is None:
            return super()._discovery(parts)
        group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
        found = discovery.resource_list(self.registry, self.catalog.extras, group, version)
        if found is None:
            raise model.ApiError(404, "NotFound", "the server could not find the requested resource")
        return found
