"""Where a request goes: the API's state, discovery documents, and the object path parsed into a Target.

kube-apiserver's URL layout: core `/api/v1`, groups under `/apis/<group>/<version>`, `namespaces/<ns>/` before a
namespaced plural, then an object name and a subresource (k8s.io/apiserver pkg/endpoints/request/requestinfo.go,
`NewRequestInfo`). A path that names no served type, the wrong scope or an unknown subresource is a 404.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from snoreloc_sim.kube import model, registry
from snoreloc_sim.kube.api.admission import Admitter

Obj = dict[str, Any]
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class Target:
    """What an object path names."""

    rtype: model.ResourceType
    namespace: str | None
    name: str | None
    subresource: str = ""


def not_found_path() -> model.ApiError:
    return model.ApiError(404, "NotFound", "the server could not find the requested resource")


def method_not_allowed(method: str) -> model.ApiError:
    return model.ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource: {method}"
    )


def bad_request(message: str) -> model.ApiError:
    return model.ApiError(400, "BadRequest", message)


class Paths:
    """The state every piece of the resource semantics shares, and the parsing of a path into discovery or a
    Target."""

    def __init__(
        self,
        cluster: model.Cluster,
        served: registry.Registry,
        admitter: Admitter,
        version: Obj,
        server_address: str = "127.0.0.1:0",
    ) -> None:
        self.cluster = cluster
        self.registry = served
        self.admitter = admitter
        self.version = version
        self.server_address = server_address
        self.stopped = threading.Event()

    def _discovery(self, parts: list[str]) -> Obj | None:
        if parts == ["api"]:
            return registry.api_versions(self.server_address)
        if parts == ["apis"]:
            return registry.api_group_list(self.registry)
        if len(parts) == 2 and parts[0] == "apis":
            versions = self.registry.group_versions().get(parts[1])
            if not versions:
                raise not_found_path()
            return registry.api_group(parts[1], versions)
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            found = registry.api_resource_list(self.registry, group, version)
            if found is None:
                raise not_found_path()
            return found
        return None

    def _target(self, parts: list[str]) -> Target:
        if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise not_found_path()
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise not_found_path()
        rtype = self.registry.lookup(group, version, rest[0])
        if rtype is None:
            raise not_found_path()
        target = Target(rtype, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else "")
        self._check_scope(target)
        return target

    @staticmethod
    def _check_scope(target: Target) -> None:
        rtype = target.rtype
        if target.namespace is not None and not rtype.namespaced:
            raise not_found_path()
        if rtype.namespaced and target.namespace is None and target.name is not None:
            raise not_found_path()
        if target.subresource and target.subresource not in rtype.subresources:
            raise not_found_path()
