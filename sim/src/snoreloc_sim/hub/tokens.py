"""ServiceAccount tokens: TokenRequest issues them, bearer authentication accepts them while they are valid.

Followed (kubernetes/kubernetes):
- `pkg/registry/core/serviceaccount/storage/token.go`, `TokenREST.Create`: the ServiceAccount must exist; a bound
  object must be a v1 Secret or Pod that exists, and its UID (when given) must match ("the UID in the bound object
  reference (...) does not match the UID in record...", 409); audiences default to the API server's;
  the answer is the TokenRequest with `status.token` and `status.expirationTimestamp`, 201.
- `pkg/apis/authentication/v1/defaults.go`: `expirationSeconds` defaults to 3600;
  `pkg/apis/authentication/validation/validation.go`, `ValidateTokenRequest`: at least 600, at most 2^32 (422).
- `pkg/serviceaccount/claims.go`, `validator.Validate`, and `pkg/serviceaccount/jwt.go`: a token is refused (401)
  once it expired, when its audience is not the API server's, when its ServiceAccount or bound object is gone,
  recreated (another UID) or being deleted.
- `staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go`: the user is
  `system:serviceaccount:<namespace>:<name>` in groups `system:serviceaccounts`,
  `system:serviceaccounts:<namespace>` (and `system:authenticated`, added by the authenticator union).

- The token cache: `pkg/kubeapiserver/options/authentication.go`, `NewBuiltInAuthenticationOptions`, sets
  `TokenSuccessCacheTTL: 10 * time.Second` and `TokenFailureCacheTTL: 0` (no kube-apiserver flag changes them), and
  `pkg/kubeapiserver/authenticator/config.go` wraps the token authenticators in
  `staging/src/k8s.io/apiserver/pkg/authentication/token/cache/cached_token_authenticator.go`: a success is kept
  `successTTL` by the token's digest and answered from there without looking again, failures are not kept. So a
  revoked token (its binding Secret or ServiceAccount deleted) keeps authenticating until its cached success, at
  most 10 s old, lapses: 8-10 s was measured on kube-apiserver 1.36. `cache_seconds` (default 0: refused at once,
  for fast tests) models it; `REAL_CACHE_SECONDS` is the real server's.

Difference: tokens are random opaque strings the hub remembers, not signed JWTs (clients treat them as opaque;
nothing here reads their claims). Only Secrets can be bound: the hub serves no Pods.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from snoreloc_sim.kube import model, validation

Obj = dict[str, Any]
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)
DEFAULT_SECONDS = 3600
MIN_SECONDS = 600
MAX_SECONDS = 1 << 32
REAL_CACHE_SECONDS = 10.0  # kube-apiserver's TokenSuccessCacheTTL (see the docstring)
_TOKEN_REQUEST = validation.CrdInfo(
    "authentication.k8s.io", "v1", "tokenrequests", "TokenRequest", True, (), {}, name_check=""
)


@dataclass(frozen=True)
class User:
    """An authenticated identity, as kube's `user.Info`."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""


ADMIN = User("kubernetes-admin", ("system:masters", "system:authenticated"))
# A request without credentials (kube-apiserver's --anonymous-auth defaults to true):
# staging/src/k8s.io/apiserver/pkg/authentication/request/anonymous/anonymous.go
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
    return User(f"system:serviceaccount:{namespace}:{name}", groups, uid)


@dataclass(frozen=True)
class Issued:
    """What the hub remembers of a token it issued."""

    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    expires: float
    bound_secret: tuple[str, str] | None  # (name, uid)


def _rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Tokens:
    """Issues and checks ServiceAccount tokens over the hub's store. `clock` is wall time plus the test's skew."""

    def __init__(
        self, store: model.Store, lookup: Callable[[str], model.ResourceType], *, cache_seconds: float = 0.0
    ) -> None:
        self._store = store
        self._lookup = lookup
        self._lock = threading.Lock()
        self._issued: dict[str, Issued] = {}
        self._cached: dict[str, tuple[User, float]] = {}  # digest -> (user, until, by time.monotonic)
        self.cache_seconds = cache_seconds
        self.skew = 0.0

    def now(self) -> float:
        return time.time() + self.skew

    def request(self, namespace: str, name: str, body: Obj) -> Obj:
        """Serve `POST .../serviceaccounts/<name>/token`; returns the TokenRequest answer."""
        account = self._store.get(self._lookup("serviceaccounts"), name, namespace)
        spec: Obj = body["spec"] if isinstance(body.get("spec"), dict) else {}
        seconds = spec.get("expirationSeconds") or DEFAULT_SECONDS
        _check_seconds(seconds)
        audiences = tuple(spec.get("audiences") or API_AUDIENCES)
        bound = self._bound_secret(namespace, spec.get("boundObjectRef"))
        token = secrets.token_urlsafe(48)
        expires = self.now() + int(seconds)
        issued = Issued(namespace, name, account["metadata"]["uid"], audiences, expires, bound)
        with self._lock:
            self._issued[_digest(token)] = issued
        answered_spec = {**spec, "audiences": list(audiences), "expirationSeconds": int(seconds)}
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": answered_spec,
            "status": {"token": token, "expirationTimestamp": _rfc3339(expires)},
        }

    def _bound_secret(self, namespace: str, ref: Any) -> tuple[str, str] | None:
        if not ref:
            return None
        kind, api_version = ref.get("kind"), ref.get("apiVersion")
        if kind != "Secret" or api_version not in (None, "", "v1"):
            raise model.ApiError(400, "BadRequest", f"cannot bind token to object of type {api_version}, Kind={kind}")
        secret = self._store.get(self._lookup("secrets"), ref.get("name", ""), namespace)
        uid = secret["metadata"]["uid"]
        if ref.get("uid") and ref["uid"] != uid:
            message = (
                f'Operation cannot be fulfilled on Secret "{ref.get("name")}": the UID in the bound object reference '
                f"({ref['uid']}) does not match the UID in record. The object might have been deleted and then "
                "recreated"
            )
            raise model.ApiError(409, "Conflict", message, details={"name": ref.get("name", ""), "kind": "Secret"})
        return ref.get("name", ""), uid

    def authenticate(self, token: str) -> User | None:
        """The ServiceAccount a token speaks for, or None when it is unknown or no longer valid; a success is
        remembered `cache_seconds` and answered from there (the real server's token cache), failures are not."""
        digest = _digest(token)
        with self._lock:
            cached = self._cached.get(digest)
            if cached is not None:
                if time.monotonic() < cached[1]:
                    return cached[0]
                del self._cached[digest]
        user = self._check(digest)
        if user is not None and self.cache_seconds > 0:
            with self._lock:
                self._cached[digest] = (user, time.monotonic() + self.cache_seconds)
        return user

    def _check(self, digest: str) -> User | None:
        with self._lock:
            found = self._issued.get(digest)
        if found is None or self.now() >= found.expires or not set(found.audiences) & set(API_AUDIENCES):
            return None
        account = self._store.find(self._lookup("serviceaccounts"), found.service_account, found.namespace)
        if not _alive(account, found.service_account_uid):
            return None
        if found.bound_secret is not None:
            name, uid = found.bound_secret
            if not _alive(self._store.find(self._lookup("secrets"), name, found.namespace), uid):
                return None
        return service_account_user(found.namespace, found.service_account, found.service_account_uid)


def _digest(token: str) -> str:
    """Issued tokens are kept by digest: a lookup compares no secret, and memory holds none."""
    return hashlib.sha256(token.encode()).hexdigest()


def _alive(obj: Obj | None, uid: str) -> bool:
    if obj is None:
        return False
    meta = obj["metadata"]
    return bool(meta.get("uid") == uid and not meta.get("deletionTimestamp"))


def _check_seconds(seconds: Any) -> None:
    problem = ""
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        problem = "must be an integer"
    elif seconds < MIN_SECONDS:
        problem = "may not specify a duration less than 10 minutes"
    elif seconds > MAX_SECONDS:
        problem = "may not specify a duration larger than 2^32 seconds"
    if problem:
        error = validation.FieldError(validation.Reason.INVALID, "spec.expirationSeconds", seconds, problem)
        raise validation.invalid(_TOKEN_REQUEST, {"metadata": {"name": ""}}, [error])
