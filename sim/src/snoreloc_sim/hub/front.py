"""What stands before the hub's resource semantics: authentication, authorization, injected faults, write order.

kube-apiserver's handler chain (staging/src/k8s.io/apiserver/pkg/server/config.go, `DefaultBuildHandlerChain`)
authenticates (401 when no authenticator accepts the credential; a request without one is `system:anonymous`),
honours impersonation, builds the request's attributes (`endpoints/request/requestinfo.go`), authorizes them (403),
and only then reaches the REST handlers. The hub does the same with the admin token and the ServiceAccount tokens
it issued (`tokens`), and RBAC (`rbac`).

While the server starts (`ready_at`, the hub simulator's `starting_seconds` after a start or a restart), a
request for a path not (yet) served answers 503 ServiceUnavailable, `details.retryAfterSeconds: 5` and the header
`Retry-After: 5`, where it would answer 404 once started: kube-apiserver's last handler
(`staging/src/k8s.io/apiserver/pkg/util/notfoundhandler/not_found_handler.go`, until "mux and discovery" are
complete; `endpoints/handlers/responsewriters/writers.go`, `ErrorNegotiated`, sets the header from the details),
and every path of a custom resource's group answers so too, as its CRD's handler is not installed until the CRD
informer has synced (kubernetes PR 81244, "Return 503 for custom resource requests during server start").

Writes are serialised: each one commits and notifies the watch history before the next begins, so events reach
the history in resourceVersion order, as etcd's revisions do.
"""

from __future__ import annotations

import collections
import hmac
import json
import time
import urllib.parse
from dataclasses import dataclass

from snoreloc_sim.hub import escalation, faults, rbac, tokens
from snoreloc_sim.hub.api import HubApi
from snoreloc_sim.kube import messages, model

Obj = dict[str, object]
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SSAR = "selfsubjectaccessreviews"


@dataclass(frozen=True)
class Seen:
    """One request as it arrived (no credentials), so a test can check what a real client sends."""

    method: str
    target: str  # path and query
    content_type: str
    accept: str
    user_agent: str


class HubFront:
    """A `server.Service`: one request in, one response (or a dropped connection) out."""

    def __init__(self, api: HubApi, admin_token: str, issued: tokens.Tokens, authorizer: rbac.Authorizer) -> None:
        self.api = api
        self._admin_token = admin_token
        self.tokens = issued
        self.authorizer = authorizer
        self.faults = faults.HubFaults(self._bump)
        self.seen: collections.deque[Seen] = collections.deque(maxlen=2000)
        self.caller = escalation.Caller()
        self.ready_at = 0.0  # time.monotonic() before which an unserved path answers 503 (starting)

    def serve(self, request: messages.Request) -> messages.Response | None:
        query = urllib.parse.urlencode(request.query)
        target = f"{request.path}?{query}" if query else request.path
        self.seen.append(Seen(request.method, target, request.content_type, request.accept, request.user_agent))
        if self.faults.latency:
            time.sleep(self.faults.latency)
        user, refusal = self._identify(request)
        if user is None:
            return messages.error_response(refusal or model.ApiError(401, "Unauthorized", "Unauthorized"))
        attrs = rbac.attributes(request)
        refusal = self.authorizer.authorize(user, attrs) or self.faults.refusal(attrs)
        if refusal is not None:
            return messages.error_response(refusal)
        if attrs.resource == SSAR and attrs.verb == "create":
            return self._review(user, request)
        if time.monotonic() < self.ready_at and self._custom(request.path):
            return _starting()  # the CRD handler is not installed yet
        response = self._handle(user, request)
        if time.monotonic() < self.ready_at and _unserved(response):
            return _starting()
        return response

    def _custom(self, path: str) -> bool:
        """Whether `path` is under a group no built-in kind is in (a custom resource's, or none's)."""
        parts = path.strip("/").split("/")
        if len(parts) < 2 or parts[0] != "apis":
            return False
        registry = self.api.registry
        return not any(t.group == parts[1] and registry.is_builtin(t) for t in registry.types.values())

    def _identify(self, request: messages.Request) -> tuple[tokens.User | None, model.ApiError | None]:
        """Who asks (after impersonation), or the 401/403 that refuses them."""
        user = self._authenticate(request)
        if user is None:
            return None, model.ApiError(401, "Unauthorized", "Unauthorized")
        if not request.impersonate_user:
            return user, None
        return self._impersonate(user, request.impersonate_user)

    def _handle(self, user: tokens.User, request: messages.Request) -> messages.Response:
        if request.method not in WRITES:
            return self.api.handle(request)
        self.caller.user = user  # for the admission hooks that judge who writes (escalation)
        try:
            with self.api.write_lock:
                return self.api.handle(request)
        finally:
            self.caller.user = None

    def _bump(self, attrs: rbac.Attributes) -> None:
        """Another writer got there first: the object's resourceVersion moves on."""
        key = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        rtype = self.api.registry.types.get(key)
        if rtype is not None:
            with self.api.write_lock:
                self.api.cluster.store.bump(rtype, attrs.name, attrs.namespace if rtype.namespaced else "")

    def _impersonate(self, user: tokens.User, wanted: str) -> tuple[tokens.User | None, model.ApiError | None]:
        """`Impersonate-User` (kubectl --as): allowed by the `impersonate` verb on users, or on that ServiceAccount
        (staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go, `WithImpersonation`)."""
        prefix = "system:serviceaccount:"
        if wanted.startswith(prefix) and wanted.count(":") == 3:
            namespace, name = wanted[len(prefix) :].split(":")
            attrs = rbac.Attributes("impersonate", "", True, "", "serviceaccounts", "", namespace, name)
            as_user = tokens.service_account_user(namespace, name)
        else:
            attrs = rbac.Attributes("impersonate", "", True, "", "users", "", "", wanted)
            as_user = tokens.User(wanted, ("system:authenticated",))
        refused = self.authorizer.authorize(user, attrs)
        return (None, refused) if refused is not None else (as_user, None)

    def _authenticate(self, request: messages.Request) -> tokens.User | None:
        """The admin, a ServiceAccount, `system:anonymous` without credentials, or None for a credential that
        no authenticator accepts (401)."""
        if not request.authorization.strip():
            return tokens.ANONYMOUS
        scheme, _, token = request.authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        if hmac.compare_digest(token.encode(), self._admin_token.encode()):
            return tokens.ADMIN
        return self.tokens.authenticate(token)

    def _review(self, user: tokens.User, request: messages.Request) -> messages.Response:
        """A SelfSubjectAccessReview: the same decision for the attributes it names (`kubectl auth can-i`);
        pkg/registry/authorization/selfsubjectaccessreview/rest.go."""
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return messages.error_response(
                model.ApiError(400, "BadRequest", "the object provided could not be decoded")
            )
        spec = body.get("spec") or {}
        wanted = spec.get("resourceAttributes")
        if wanted:
            attrs = rbac.Attributes(
                verb=wanted.get("verb", ""),
                path="",
                resource_request=True,
                api_group=wanted.get("group", ""),
                resource=wanted.get("resource", ""),
                subresource=wanted.get("subresource", ""),
                namespace=wanted.get("namespace", ""),
                name=wanted.get("name", ""),
            )
        else:
            other = spec.get("nonResourceAttributes") or {}
            attrs = rbac.Attributes(verb=other.get("verb", ""), path=other.get("path", ""))
        refusal = self.authorizer.authorize(user, attrs)
        status: Obj = {"allowed": refusal is None}
        if refusal is not None:
            status["reason"] = ""
        answer = {**body, "metadata": {"creationTimestamp": None}, "status": status}
        return messages.Response(201, answer)


UNSERVED = "the server could not find the requested resource"
STARTING = "the request has been made before all known HTTP paths have been installed, please try again"
RETRY_AFTER_SECONDS = 5


def _unserved(response: messages.Response | None) -> bool:
    """A 404 for a path the server does not serve (not for an object that is not there)."""
    body = response.body if response is not None else None
    return response is not None and response.code == 404 and isinstance(body, dict) and body.get("message") == UNSERVED


def _starting() -> messages.Response:
    error = model.ApiError(503, "ServiceUnavailable", STARTING, details={"retryAfterSeconds": RETRY_AFTER_SECONDS})
    response = messages.error_response(error)
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
