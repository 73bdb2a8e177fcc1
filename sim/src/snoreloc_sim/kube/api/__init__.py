"""The simulated kube-apiserver's resource semantics: Requests in, Responses out, over the cluster's store.

No sockets here (`server` serves it over HTTPS), so it can be exercised directly. One module per concern, each a
piece of `Api`: `paths` (the shared state, discovery, a path parsed into a Target), `reads` (get, list, watch),
`writes` (create, update, admission), `patches` (the patch dialects and server-side apply), `deletes`;
`selectors` and `admission` (the validation seam) are what they use. `Api` routes a request to them; the hub's
`hub.api.HubApi` extends it.
"""

from __future__ import annotations

import urllib.parse

from snoreloc_sim.kube import model
from snoreloc_sim.kube.api.deletes import Deletes
from snoreloc_sim.kube.api.patches import Patches
from snoreloc_sim.kube.api.paths import Target, method_not_allowed
from snoreloc_sim.kube.messages import Request, Response, error_response


class Api(Patches, Deletes):
    """Routes a request to discovery, or to the read, write, patch or delete of its Target."""

    def handle(self, request: Request, *, conflict: bool = False) -> Response:
        try:
            return self._route(request, conflict)
        except model.ApiError as error:
            return error_response(error)

    def _route(self, request: Request, conflict: bool) -> Response:
        if request.path in ("/readyz", "/livez", "/healthz"):
            return Response(200, "ok")
        if request.path == "/version":
            return Response(200, self.version)
        parts = [urllib.parse.unquote(p) for p in request.path.strip("/").split("/")]
        document = self._discovery(parts)
        if document is not None:
            if request.method != "GET":
                raise method_not_allowed(request.method)
            return Response(200, document)
        return self._resource(request, self._target(parts), conflict)

    def _resource(self, request: Request, target: Target, conflict: bool) -> Response:
        method = request.method
        if target.name is None:
            collection = {"GET": self._list, "POST": self._create, "DELETE": self._delete_collection}
            if method not in collection:
                raise method_not_allowed(method)
            return collection[method](request, target)
        if method == "GET":
            return Response(200, self._get(target))
        if method == "DELETE" and not target.subresource:
            return self._delete(request, target)
        if method in ("PUT", "PATCH"):
            if conflict:
                self._bump(target)
            if method == "PUT":
                return self._update(request, target)
            return self._patch(request, target)
        raise method_not_allowed(method)
