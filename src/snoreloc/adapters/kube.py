"""The one door to the cluster's API: the official kubernetes client behind a small typed surface, with a retry policy.

During a relocation the API goes away on purpose (each kube-apiserver rollout on SNO is minutes of refused
connections and 503s), so every request here is retried on what a rollout looks like (connection errors, resets,
timeouts, 429 with Retry-After, 5xx) with jittered exponential backoff, bounded in attempts and in time measured by
the injected clock. What a retry cannot fix (400/403/404/422, and the 500 with which kube-apiserver refuses an
apply whose body does not fit the type: see `refused_content`) is raised at once as a clear error. Read-modify-write
goes through `modify`, which re-reads and re-applies on 409 Conflict. Requests and writes are counted, because "a
re-run makes zero writes" is a promise the tests and benchmarks check.

Only this module imports `kubernetes`; the CLI imports it lazily so `snoreloc --version` stays fast. The module
also holds the two other network seams of the cluster steps: a TLS dial that returns the certificate an endpoint
presents for a name (SNI), and name resolution.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import socket
import ssl
import stat
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import tenacity
import urllib3
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from snoreloc import errors, redact
from snoreloc.adapters import clock as clock_mod

LOG = logging.getLogger(__name__)

Obj = dict[str, Any]

NODE_KUBECONFIG = (
    "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"
)

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
FIELD_MANAGER = "snoreloc"  # our name in managedFields (server-side apply)
JSON_PATCH = "application/json-patch+json"
TOKEN_RECHECK = 10.0  # seconds between two looks at whether the kubeconfig's token needs renewing
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True, order=True)
class Resource:
    """Where a kind lives in the API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, name: str | None = None, namespace: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{urllib.parse.quote(namespace)}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{urllib.parse.quote(name)}"
        if subresource:
            base += f"/{subresource}"
        return base


SECRETS = Resource("", "v1", "secrets", "Secret", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
NODES = Resource("", "v1", "nodes", "Node", False)
CSRS = Resource("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", False)
EVENTS = Resource("", "v1", "events", "Event", True)
CLUSTEROPERATORS = Resource("config.openshift.io", "v1", "clusteroperators", "ClusterOperator", False)
CLUSTERVERSIONS = Resource("config.openshift.io", "v1", "clusterversions", "ClusterVersion", False)
INGRESSES = Resource("config.openshift.io", "v1", "ingresses", "Ingress", False)
APISERVERS = Resource("config.openshift.io", "v1", "apiservers", "APIServer", False)
DNSES = Resource("config.openshift.io", "v1", "dnses", "DNS", False)
IMAGES = Resource("config.openshift.io", "v1", "images", "Image", False)
INFRASTRUCTURES = Resource("config.openshift.io", "v1", "infrastructures", "Infrastructure", False)
IDMS = Resource("config.openshift.io", "v1", "imagedigestmirrorsets", "ImageDigestMirrorSet", False)
ITMS = Resource("config.openshift.io", "v1", "imagetagmirrorsets", "ImageTagMirrorSet", False)
ICSP = Resource("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies", "ImageContentSourcePolicy", False)
INGRESSCONTROLLERS = Resource("operator.openshift.io", "v1", "ingresscontrollers", "IngressController", True)
ROUTES = Resource("route.openshift.io", "v1", "routes", "Route", True)
MCPS = Resource("machineconfiguration.openshift.io", "v1", "machineconfigpools", "MachineConfigPool", False)
CATALOGSOURCES = Resource("operators.coreos.com", "v1alpha1", "catalogsources", "CatalogSource", True)
OPERATORHUBS = Resource("config.openshift.io", "v1", "operatorhubs", "OperatorHub", False)
PROXIES = Resource("config.openshift.io", "v1", "proxies", "Proxy", False)
MACHINECONFIGS = Resource("machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig", False)

KNOWN: tuple[Resource, ...] = (
    SECRETS,
    CONFIGMAPS,
    NODES,
    CSRS,
    CLUSTEROPERATORS,
    CLUSTERVERSIONS,
    INGRESSES,
    APISERVERS,
    DNSES,
    IMAGES,
    INFRASTRUCTURES,
    IDMS,
    ITMS,
    ICSP,
    INGRESSCONTROLLERS,
    ROUTES,
    MCPS,
    MACHINECONFIGS,
    PROXIES,
    CATALOGSOURCES,
    OPERATORHUBS,
)


def resource_for(api_version: str, kind: str, plural: str = "", namespaced: bool | None = None) -> Resource:
    """The known resource for an object's apiVersion and kind (backups record objects by these); a kind we do not
    know (a site's extra manifest) is described by the `plural` and scope recorded with it."""
    for res in KNOWN:
        if res.api_version == api_version and res.kind == kind:
            return res
    if plural and namespaced is not None:
        group, _, version = api_version.rpartition("/")
        return Resource(group, version, plural, kind, namespaced)
    raise errors.InternalError(f"unknown kind {kind} ({api_version})")


@dataclass(frozen=True, order=True)
class Ref:
    """One object: its resource, name and (for namespaced kinds) namespace."""

    resource: Resource
    name: str
    namespace: str = ""

    def path(self, subresource: str | None = None) -> str:
        return self.resource.path(self.name, self.namespace or None, subresource)

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource.kind} {where}"

    @property
    def key(self) -> str:
        """A stable text key (file names, status.json)."""
        return f"{self.resource.plural}.{self.resource.group or 'core'}.{self.namespace or '_'}.{self.name}"


def ref_of(obj: Obj) -> Ref:
    meta = obj.get("metadata", {})
    resource = resource_for(obj.get("apiVersion", ""), obj.get("kind", ""))
    return Ref(resource, meta.get("name", ""), meta.get("namespace", "") if resource.namespaced else "")


# --- errors -------------------------------------------------------------------------------------------------------


class ApiError(errors.PermanentStepError):
    """The API refused a request in a way retrying will not change (400, 404, 409 after retries, 422)."""

    def __init__(
        self, message: str, *, status: int, reason: str = "", hint: str | None = None, detail: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.reason = reason
        self.detail = detail or message  # the API's own words, without the request line


class NotFound(ApiError):
    """404: the object (or its namespace) does not exist."""


class Conflict(ApiError):
    """409: the object changed under us more often than the conflict budget allows, or already exists."""


class Invalid(ApiError):
    """400/422, or the 500 of a refused apply body: the object we sent does not validate."""


class Forbidden(errors.PermissionDenied):
    """401/403: the kubeconfig's identity may not do this."""


class NamespaceTerminating(errors.TemporaryError):
    """403 from the NamespaceLifecycle admission (cause `NamespaceTerminating`): the namespace is being deleted, so
    nothing can be created in it until it is gone; not a lack of rights (k8s.io/apiserver pkg/admission/plugin/
    namespace/lifecycle/admission.go)."""


class Unreachable(errors.TemporaryError):
    """The API did not answer successfully within the retry budget (outage, 5xx, throttling). `delay`: the seconds
    the server asked us to wait (429/503 Retry-After), 0 when it named none."""


class ListExpired(errors.TemporaryError):
    """410 Expired between two pages of a list: the server no longer holds the listing; list again."""


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(self, what: str, retry_after: float = 0.0) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


# --- policy -------------------------------------------------------------------------------------------------------


Configuration = k8s_client.Configuration  # the official client's connection settings, for the fleet's kopf side


def configuration(kubeconfig: str | None, clock: clock_mod.Clock, context: str | None = None) -> Configuration:
    """The official client's settings from `kubeconfig` (a file that is no regular file, or a broken one, refused with
    the reason), or from the pod's service account when None (the hub controller in its Deployment); the token
    refresh throttled (`throttled_refresh`) and the client's own retries off (ours are bounded, on the injected
    clock). `Client.from_kubeconfig` and the fleet controller's kopf side both start here."""
    settings = k8s_client.Configuration()
    if kubeconfig is None:
        k8s_config.load_incluster_config(client_configuration=settings)  # type: ignore[no-untyped-call]
    else:
        _refuse_special(kubeconfig)
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, client_configuration=settings
            )
        except _BROKEN_KUBECONFIG as exc:
            raise _kubeconfig_error(kubeconfig, exc) from None
    if settings.refresh_api_key_hook is not None:  # else the whole kubeconfig is read again every request
        settings.refresh_api_key_hook = throttled_refresh(settings.refresh_api_key_hook, clock)
    settings.retries = False
    return settings


def api_client(settings: Configuration) -> Any:
    """The official client's connection for `settings`, what `Client(...)` is built on."""
    return k8s_client.ApiClient(settings)


@dataclass(frozen=True)
class Policy:
    """How hard to try. `total` and the backoffs are seconds of the injected clock; the per-request
    connect/read timeouts are real seconds (they bound a socket, which knows no other clock)."""

    # `total` is the bound; `attempts` only stops a tight loop. An SNO kube-apiserver restart refuses connections
    # for about a minute and often more (origin PR #26337; shared/research/openshift-rollouts-on-sno.md), and
    # jittered backoffs drawn low can spend a dozen attempts in under a minute: a count that small gave up mid-restart.
    attempts: int = 60
    total: float = 600.0
    backoff_initial: float = 0.5
    backoff_max: float = 20.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    conflict_attempts: int = 8
    pool_size: int = 32
    list_page: int = 500  # objects per list request


def _retry_after(headers: Any) -> float:
    try:
        value = headers.get("Retry-After") if headers is not None else None
        return min(float(value), 120.0) if value else 0.0
    except (TypeError, ValueError):
        return 0.0


def _status_error(method: str, path: str, status: int, body: bytes) -> errors.SnorelocError:
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        payload = {}
    message = payload.get("message") or body[:200].decode("utf-8", "replace")
    reason = payload.get("reason", "")
    text = f"{method} {path}: {status} {reason}: {message}".strip()
    if status == 403 and _causes(payload, "NamespaceTerminating"):
        return NamespaceTerminating(text, hint="The namespace is being deleted; run again once it is gone.")
    if status in (401, 403):
        return Forbidden(text, hint="Check that the kubeconfig grants cluster-admin (the node-local one does).")
    if status == 404:
        return NotFound(text, status=status, reason=reason, detail=message)
    if status == 409:
        return Conflict(text, status=status, reason=reason, detail=message)
    if status in (400, 422):
        hint = "This is a snoreloc bug or an unexpected API schema."
        return Invalid(text, status=status, reason=reason, hint=hint, detail=message)
    return ApiError(text, status=status, reason=reason, detail=message)


def _causes(payload: Any, reason: str) -> bool:
    details = payload.get("details") if isinstance(payload, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return any(isinstance(c, dict) and c.get("reason") == reason for c in causes or [])


# What an answer means is not always what its status class says. kube-apiserver refuses a server-side apply whose
# body does not fit the type's schema (a field of the wrong type, a field the type does not declare, a keyed list
# item without its key) with a 500: the field manager's conversion of the body to a typed value fails with a plain
# error, "failed to create typed patch object (<ns>/<name>; <gvk>): <path>: <why>" (k8s.io/apimachinery
# pkg/util/managedfields/internal/structuredmerge.go, structuredMergeManager.Apply), which the apiserver's
# responsewriters.ErrorToAPIStatus turns into a Status with code 500 and no reason. It comes back the same on
# every attempt, with fieldValidation=Strict too: the object is wrong, not the server.
_CONTENT_REFUSALS = ("failed to create typed patch object",)


def refused_content(status: int, body: bytes) -> str | None:
    """The server's words when a 5xx answer refuses the request's content (retrying cannot help), else None."""
    if status != 500:
        return None
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        return None
    message = payload.get("message") if isinstance(payload, dict) else None
    if isinstance(message, str) and any(marker in message for marker in _CONTENT_REFUSALS):
        return message
    return None


def _is_transport_error(exc: BaseException) -> bool:
    return isinstance(exc, urllib3.exceptions.HTTPError | OSError | ssl.SSLError | ConnectionError)


def throttled_refresh(hook: Callable[[Any], None], clock: clock_mod.Clock) -> Callable[[Any], None]:
    """The kubeconfig loader's token-refresh hook, run at most once per `TOKEN_RECHECK` seconds.

    The kubernetes client calls the hook before every request; it re-applies the whole kubeconfig, and setting the
    host re-reads every environment variable for proxies: ~0.5 ms of CPU per request, a third of what a route
    costs us. It renews a token only when the token expires within 5 minutes, so checking every few seconds is
    as safe. The hook re-installs itself when it runs, so this wrapper puts itself back each time."""
    lock = threading.Lock()
    last = [-math.inf]

    def refresh(configuration: Any) -> None:
        with lock:
            now = clock.monotonic()
            if now - last[0] < TOKEN_RECHECK:
                return
            last[0] = now
            hook(configuration)
            configuration.refresh_api_key_hook = refresh

    return refresh


def merge_patch(old: Obj, new: Obj) -> Obj:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`: objects merge key by key, a removed key is
    null, anything else (lists included) is replaced whole. A null *value* in `new` cannot be expressed (it
    would remove the key), which kube objects never need."""
    patch: Obj = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            nested = merge_patch(before, value)
            if nested:
                patch[key] = nested
        elif key not in old or before != value:
            patch[key] = value
    return patch


# What the kubernetes client raises on a kubeconfig it cannot use: its own error for missing keys, and whatever
# its loader meets on a document of the wrong shape (a number where a list belongs, broken YAML).
_BROKEN_KUBECONFIG = (
    OSError,
    k8s_config.ConfigException,
    yaml.YAMLError,
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
    RecursionError,
)
_KUBECONFIG_HINT = "Pass --kubeconfig with a readable, well-formed kubeconfig file."


def _refuse_special(path: str) -> None:
    """A FIFO or device as the kubeconfig would block the loader or feed it endless bytes: refuse it unopened. A
    missing file is named as missing: the loader would call it "Invalid kube-config file"."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise errors.UnavailableError(
            f"cannot load kubeconfig {path}: no such file",
            hint=f"Check the path; {_KUBECONFIG_HINT[0].lower()}{_KUBECONFIG_HINT[1:]}",
        ) from None
    except OSError:
        return  # the loader reports an unreadable file itself
    if not stat.S_ISREG(info.st_mode):
        raise errors.UnavailableError(f"cannot load kubeconfig {path}: not a regular file", hint=_KUBECONFIG_HINT)


def _kubeconfig_error(path: str, exc: BaseException) -> errors.UnavailableError:
    """Exit 69 naming the file; the loader's own words are kept only when they are its (redacted) diagnosis."""
    if isinstance(exc, OSError | k8s_config.ConfigException):
        detail = redact.redact(str(exc))
    else:
        detail = f"it is not a kubeconfig of the expected shape ({type(exc).__name__})"
    return errors.UnavailableError(f"cannot load kubeconfig {path}: {detail}", hint=_KUBECONFIG_HINT)


class Client:
    """A small typed surface over the kube API (core and custom resources alike), with retries and counters."""

    def __init__(self, api_client: Any, *, clock: clock_mod.Clock, policy: Policy = Policy()) -> None:
        self._api = api_client
        self._clock = clock
        self.policy = policy
        self._lock = threading.Lock()
        self.requests = 0
        self.writes = 0
        self.last_write: float | None = None
        self._discovered: dict[str, list[Obj]] = {}  # group/version -> its APIResourceList entries

    @classmethod
    def from_kubeconfig(
        cls, path: str, *, clock: clock_mod.Clock, policy: Policy = Policy(), context: str | None = None
    ) -> Client:
        settings = configuration(path, clock, context)
        settings.connection_pool_maxsize = policy.pool_size  # reaches urllib3's pools as `maxsize`
        return cls(api_client(settings), clock=clock, policy=policy)

    @property
    def endpoint(self) -> tuple[str, int]:
        """The API server's host and port, as the kubeconfig names them."""
        parsed = urllib.parse.urlparse(self._api.configuration.host)
        return parsed.hostname or "localhost", parsed.port or 443

    def close(self) -> None:
        self._api.close()

    # --- the request core ---------------------------------------------------------------------------------------

    def _count(self, method: str, query: dict[str, str]) -> None:
        with self._lock:
            self.requests += 1
            if method in _WRITE_METHODS and query.get("dryRun") != "All":  # a dry run changes nothing
                self.writes += 1
                self.last_write = self._clock.monotonic()

    def _attempt(self, method: str, path: str, body: Any, content_type: str | None, query: dict[str, str]) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        serialized = self._api.param_serialize(
            method, path, query_params=list(query.items()) or None, header_params=headers,
            body=body, auth_settings=["BearerToken"],
        )  # fmt: skip
        self._count(method, query)
        timeout = (self.policy.connect_timeout, self.policy.read_timeout)
        try:
            response = self._api.call_api(*serialized, _request_timeout=timeout)
            data = response.read()
        except Exception as exc:
            if _is_transport_error(exc) or getattr(exc, "status", None) == 0:
                self._drop_connections()
                raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
            raise
        return self._decode(method, path, response.status, response.getheaders(), data)

    def _drop_connections(self) -> None:
        """After a transport error every pooled keep-alive connection is suspect (the server restarted): the
        next attempt must dial afresh rather than fail on the next stale socket."""
        rest = getattr(self._api, "rest_client", None)
        if rest is not None:
            rest.pool_manager.clear()

    def _decode(self, method: str, path: str, status: int, headers: Any, data: bytes) -> Any:
        refusal = refused_content(status, data)
        if refusal is not None:
            text = f"{method} {path}: {status}: {refusal}"
            raise Invalid(text, status=status, hint="The object does not fit its type's schema.", detail=refusal)
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}", _retry_after(headers))
        if status >= 400:
            raise _status_error(method, path, status, data)
        try:
            return json.loads(data) if data else {}
        except ValueError:  # /readyz and /livez answer plain text ("ok"), on a real kube-apiserver too
            return {"text": data.decode("utf-8", "replace")}
        except RecursionError:  # kube-apiserver stores JSON nested far deeper than Python's decoder follows
            raise errors.UnavailableError(
                f"{method} {path}: the answer is nested deeper than this client can read",
                hint="An object holds a pathologically nested field; find it with kubectl and correct or delete it.",
            ) from None

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        backoff = tenacity.wait_random_exponential(multiplier=self.policy.backoff_initial, max=self.policy.backoff_max)(
            state
        )
        return max(backoff, getattr(exc, "retry_after", 0.0))

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        query: dict[str, str] | None = None,
        retry: bool = True,
    ) -> Any:
        """One API call, retried on transient failures within the policy's attempts and total time. With
        `retry=False` a transient failure is raised at once as `Unreachable`, for callers that pause for an outage
        themselves (many route workers waiting once, instead of each backing off on its own)."""
        if not retry:
            try:
                return self._attempt(method, path, body, content_type, query or {})
            except _Retryable as exc:
                raise Unreachable(f"{method} {path}: {exc.what}", delay=exc.retry_after) from exc
        started = self._clock.monotonic()

        def stop(state: tenacity.RetryCallState) -> bool:
            elapsed = self._clock.monotonic() - started
            return state.attempt_number >= self.policy.attempts or elapsed >= self.policy.total

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            LOG.info("%s %s: %s; retrying (attempt %d)", method, path, exc, state.attempt_number)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            stop=stop,
            wait=self._wait,
            sleep=self._clock.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            return retrying(self._attempt, method, path, body, content_type, query or {})
        except _Retryable as exc:
            seconds = self._clock.monotonic() - started
            raise Unreachable(
                f"{method} {path}: the API did not answer successfully ({exc.what}) after {seconds:.0f}s",
                hint="The API may be restarting; run `snoreloc run` again to resume.",
                delay=exc.retry_after,
            ) from exc

    # --- the typed surface ------------------------------------------------------------------------------------

    def get(self, ref: Ref, *, retry: bool = True) -> Obj:
        result: Obj = self.request("GET", ref.path(), retry=retry)
        return result

    def find(self, ref: Ref) -> Obj | None:
        """The object, or None if it (or its namespace) does not exist."""
        try:
            return self.get(ref)
        except NotFound:
            return None

    def pages(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Iterator[list[Obj]]:
        """The objects of a kind, one page (`limit`, `continue`) at a time: no response holds thousands of them, and
        a caller that keeps only what it needs never holds the whole list. `ListExpired` when the server forgot
        the listing between two pages (after etcd compaction); the pages already yielded are then incomplete."""
        token: str | None = None
        while True:
            items, token = self.page(
                resource, token, namespace, label_selector=label_selector, field_selector=field_selector
            )
            yield items
            if not token:
                return

    def page(
        self,
        resource: Resource,
        token: str | None = None,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        retry: bool = True,
    ) -> tuple[list[Obj], str | None]:
        """One page of a list (see `pages`): its objects and the `continue` token of the next page (None: the
        last). A caller that pauses for an outage itself reads on from the token it holds."""
        query = {"limit": str(self.policy.list_page)}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:  # the type's selectable fields only (e.g. a Secret's `type`), else the server answers 400
            query["fieldSelector"] = field_selector
        if token:
            query["continue"] = token
        try:
            result = self.request("GET", resource.path(namespace=namespace), query=query, retry=retry)
        except ApiError as exc:
            if exc.status != 410:
                raise
            raise ListExpired(f"listing {resource.plural}: {exc.message}") from exc
        items: list[Obj] = result.get("items") or []
        for item in items:  # list items carry no apiVersion/kind in kube responses
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items, (result.get("metadata") or {}).get("continue") or None

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None) -> list[Obj]:
        """Every object of a kind (read in pages; an expired listing is started over, within the conflict budget)."""
        for _attempt in range(self.policy.conflict_attempts):
            try:
                return [obj for page in self.pages(resource, namespace, label_selector=label_selector) for obj in page]
            except ListExpired as exc:
                LOG.info("%s; listing again", exc.message)
        raise ListExpired(f"listing {resource.plural}: expired {self.policy.conflict_attempts} times")

    def create(self, resource: Resource, obj: Obj) -> Obj:
        namespace = obj.get("metadata", {}).get("namespace") if resource.namespaced else None
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        result: Obj = self.request("POST", resource.path(namespace=namespace), body=body)
        return result

    def replace(self, ref: Ref, obj: Obj) -> Obj:
        result: Obj = self.request("PUT", ref.path(), body=obj)
        return result

    def patch(self, ref: Ref, patch: Obj, *, retry: bool = True) -> Obj:
        """A JSON merge patch (RFC 7386): the only patch type custom resources accept besides JSON patch."""
        result: Obj = self.request("PATCH", ref.path(), body=patch, content_type=MERGE_PATCH, retry=retry)
        return result

    def json_patch(self, ref: Ref, operations: Sequence[Obj], *, retry: bool = True) -> Obj:
        """A JSON patch (RFC 6902). With a `test` operation it is a write conditional on one field, checked and
        applied atomically by the server: a failed test is 422 (`Invalid`) and changes nothing."""
        body = list(operations)  # the kubernetes client sends a JSON patch only when the body is a list
        result: Obj = self.request("PATCH", ref.path(), body=body, content_type=JSON_PATCH, retry=retry)
        return result

    def delete(self, ref: Ref) -> None:
        self.request("DELETE", ref.path())

    def apply(self, ref: Ref, obj: Obj, *, force: bool = False, dry_run: bool = False) -> Obj:
        """Server-side apply of `obj` under our field manager ("Server-Side Apply", kubernetes.io/docs/reference/
        using-api/server-side-apply/): creates it when absent; `force` takes over fields other managers own;
        `dry_run` has the server validate and answer the result without storing it (not counted as a write)."""
        query = {"fieldManager": FIELD_MANAGER}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        result: Obj = self.request("PATCH", ref.path(), body=obj, content_type=APPLY_PATCH, query=query)
        return result

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """Where the cluster serves `kind` of `api_version`, from its discovery documents; None when it does not
        serve that kind (or that group/version). One request per group/version, remembered."""
        entries = self._discovered.get(api_version)
        if entries is None:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                entries = list(self.request("GET", path).get("resources") or [])
            except NotFound:
                entries = []
            self._discovered[api_version] = entries
        for entry in entries:
            if entry.get("kind") == kind and "/" not in str(entry.get("name", "")):
                group, _, version = api_version.rpartition("/")
                return Resource(group, version, str(entry["name"]), kind, bool(entry.get("namespaced")))
        return None

    def modify(self, ref: Ref, fn: Callable[[Obj], Obj | None]) -> Obj:
        """GET, apply `fn` to a copy, PUT with the read resourceVersion; on 409 read again and re-apply.

        `fn` returns the desired object, or None for "no change"; an unchanged result makes no write.
        """
        for attempt in range(1, self.policy.conflict_attempts + 1):
            current = self.get(ref)
            desired = fn(copy.deepcopy(current))
            if desired is None or desired == current:
                return current
            desired.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
            try:
                return self.replace(ref, desired)
            except Conflict:
                LOG.info("%s changed while we wrote it (attempt %d); re-reading", ref, attempt)
        raise self._still_conflicting(ref)

    def patch_from(self, ref: Ref, current: Obj, fn: Callable[[Obj], Obj | None], *, retry: bool = True) -> Obj:
        """`modify` from an object the caller already holds (a list item): no GET before the first write.

        The write is a merge patch of what `fn` changed, guarded by `current`'s resourceVersion, so a change made
        since `current` was read fails with 409; then the object is read again and `fn` re-applied to it.
        `current` may be a part of the object (its resourceVersion and the fields `fn` reads and sets).
        """
        for attempt in range(1, self.policy.conflict_attempts + 1):
            desired = fn(copy.deepcopy(current))
            if desired is None or desired == current:
                return current
            body = merge_patch(current, desired)
            version = current.get("metadata", {}).get("resourceVersion")
            if version:
                body.setdefault("metadata", {})["resourceVersion"] = version
            try:
                return self.patch(ref, body, retry=retry)
            except Conflict:
                LOG.info("%s changed since we read it (attempt %d); re-reading", ref, attempt)
            current = self.get(ref, retry=retry)
        raise self._still_conflicting(ref)

    def _still_conflicting(self, ref: Ref) -> Conflict:
        return Conflict(
            f"{ref}: still conflicting after {self.policy.conflict_attempts} attempts",
            status=409,
            reason="Conflict",
            hint="Another writer keeps changing this object; run `snoreloc run` again.",
        )

    def approve_csr(self, csr: Obj, message: str) -> Obj:
        """Add an Approved condition to `csr` through its approval subresource, guarded by the resourceVersion it
        was read at: if anyone changed it since (another approver decided it), the API answers 409 and `Conflict`
        is raised with nothing written. The caller re-reads and decides again."""
        ref = Ref(CSRS, csr["metadata"]["name"])
        body = copy.deepcopy(csr)
        body.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": "Approved", "status": "True", "reason": "SnorelocApproved", "message": message,
             "lastUpdateTime": self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")}
        )  # fmt: skip
        result: Obj = self.request("PUT", ref.path("approval"), body=body)
        return result

    def server_version(self) -> str:
        version: Obj = self.request("GET", "/version")
        return str(version.get("gitVersion", ""))

    def ready(self) -> bool:
        """One quick probe of /readyz (no retries): for callers that poll the API themselves."""
        return self._answers("/readyz", {})

    def serves(self, resource: Resource) -> bool:
        """One quick probe (no retries) that `resource` is served: a list of at most one object. Stricter than
        `ready` for kinds an aggregated API serves (routes: openshift-apiserver behind the kube-apiserver): when
        it is the only kube-apiserver, as on SNO, it goes ready without waiting for the aggregated APIs to be
        reachable, which answer 503 meanwhile (openshift/kubernetes PR 1616,
        openshift-kube-apiserver/openshiftkubeapiserver/sdn_readyz_wait.go)."""
        return self._answers(resource.path(), {"limit": "1"})

    def _answers(self, path: str, query: dict[str, str]) -> bool:
        try:
            self._attempt("GET", path, None, None, query)
        except (_Retryable, errors.SnorelocError, ValueError):
            return False
        return True


# --- the other network seams: served certificates and name resolution ----------------------------------------------


def dial_tls(address: tuple[str, int], sni: str, timeout: float = 10.0) -> bytes:
    """The leaf certificate (PEM) `address` presents for the name `sni`. Trust is not checked: we compare."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection(address, timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=sni) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        raise errors.TemporaryError(f"cannot dial {address[0]}:{address[1]} for {sni}: {exc}") from exc
    if not der:
        raise errors.TemporaryError(f"{address[0]}:{address[1]} presented no certificate for {sni}")
    return ssl.DER_cert_to_PEM_cert(der).encode()


def verify_tls(address: tuple[str, int], sni: str, ca_pem: bytes | None, timeout: float = 10.0) -> str | None:
    """Why a client trusting only `ca_pem` (None: the system's trust store) would refuse what `address` serves for
    the name `sni`, or None when it accepts it. As in Go clients (`oc`, `kubectl`), any certificate of the bundle
    is a trust anchor, an intermediate CA included; the name is checked against `sni`."""
    context = ssl.create_default_context(cadata=ca_pem.decode("ascii") if ca_pem else None)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    try:
        with (
            socket.create_connection(address, timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=sni),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        return str(exc.verify_message or exc.reason)
    except (OSError, ssl.SSLError) as exc:
        raise errors.TemporaryError(f"cannot dial {address[0]}:{address[1]} for {sni}: {exc}") from exc


def resolve(name: str) -> list[str]:
    """The addresses `name` resolves to here (empty when it does not resolve)."""
    try:
        infos: Iterable[Any] = socket.getaddrinfo(name, None)
    except OSError:
        return []
    return sorted({str(info[4][0]) for info in infos})
