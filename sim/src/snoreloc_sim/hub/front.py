"""What stands before the hub's resource semantics: authentication, authorization, injected faults, write order.

kube-apiserver's handler chain (staging/src/k8s.io/apiserver/pkg/server/config.go, `DefaultBuildHandlerChain`)
authenticates (401 when no authenticator accepts the credential), builds the request's attributes
(`endpoints/request/requestinfo.go`), authorizes them (403), and only then reaches the REST handlers. The hub does
the same with the admin token and the ServiceAccount tokens it issued (`tokens`), and RBAC (`rbac`).

Writes are serialised: each one commits and notifies the watch history before the next begins, so events reach
the history in resourceVersion order, as etcd's revisions do.
"""

from __future__ import annotations

import hmac

from snoreloc_sim import model, server
from snoreloc_sim.hub.api import HubApi

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class HubFront:
    """A `server.Service`: one request in, one response (or a dropped connection) out."""

    def __init__(self, api: HubApi, admin_token: str) -> None:
        self.api = api
        self._admin_token = admin_token

    def serve(self, request: server.Request) -> server.Response | None:
        if request.path not in server.PUBLIC_PATHS and not self._admin(request):
            return server.error_response(model.ApiError(401, "Unauthorized", "Unauthorized"))
        if request.method in WRITES:
            with self.api.write_lock:
                return self.api.handle(request)
        return self.api.handle(request)

    def _admin(self, request: server.Request) -> bool:
        scheme, _, token = request.authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self._admin_token.encode())
