"""What support asks for first about the cluster, read at collection time for the collect-logs bundle: every
ClusterOperator, the master MachineConfigPool, the Node and the certificate signing requests (the node's CSRs are
what keeps a node NotReady after months on a shelf); and the cluster's current configuration, which is what a
relocation changes: ClusterVersion, the APIServer, the Ingress, the default IngressController, the Proxy, the
Image config and the mirror objects (ImageDigestMirrorSets, ImageTagMirrorSets, ImageContentSourcePolicies), with
the most recent Events (`EVENTS_KEPT` of them, each cut to what triage reads).

Each read is bounded in time (a client policy of a few attempts and `READ_SECONDS` in all: the API may be the
very thing that is broken; once a read finds the API unreachable, the reads after it are not tried, so a dead API
costs one read's time, not one per member) and in size (`MAX_BYTES` a member; more is cut, and the cut is said),
scrubbed of secret-named fields and redacted. A read that fails is not an error of `collect-logs`: it is named with
its reason in the bundle's MANIFEST. Of the CSRs only what triage needs is kept (who asked, for what signer, when,
and the decision), not the request or the issued certificate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from snoreloc import errors, redact, safefile
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.steps import base
from snoreloc.steps.cluster import proxy

READ_SECONDS = 20.0  # all attempts of one read together
MAX_BYTES = 4 * 1024 * 1024  # a member of the bundle; a cluster of one node stays far below
EVENTS_KEPT = 500  # the most recent Events kept (OpenShift keeps Events for 3 hours: an SNO holds a few thousand)
EVENT_PAGES = 20  # pages of Events read at most (of `Policy.list_page` each); more are left unread, and said
POLICY = kube.Policy(attempts=3, total=READ_SECONDS, backoff_max=5.0, connect_timeout=5.0, read_timeout=10.0)


@dataclass
class Read:
    """Members read (name: redacted bytes) and reads that failed (name: why)."""

    members: dict[str, bytes] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)


def _csr(obj: kube.Obj) -> kube.Obj:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    kept_spec = {key: spec.get(key) for key in ("signerName", "username", "usages", "expirationSeconds") if key in spec}
    return {
        "metadata": {key: obj["metadata"].get(key) for key in ("name", "creationTimestamp")},
        "spec": kept_spec,
        "status": {"conditions": status.get("conditions") or []},
    }


def _without_managed_fields(obj: kube.Obj) -> kube.Obj:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def bounded_json(value: Any, limit: int = MAX_BYTES) -> bytes:
    """`value` as redacted JSON, cut at `limit` bytes with a last line that says so."""
    data = redact.redact(json.dumps(value, indent=1, sort_keys=True, default=str)).encode("utf-8")
    if len(data) <= limit:
        return data
    return data[:limit] + f"\n... cut at {limit} bytes of {len(data)}\n".encode()


def _scrubbed(obj: kube.Obj) -> kube.Obj:
    """A configuration object as the bundle keeps it: no managedFields, every secret-named field masked (a Proxy's
    `trustedCA` names a ConfigMap, but a field of a later API may hold a value: masked by its name, as the
    site-config's are)."""
    from snoreloc.engine import bundle  # noqa: PLC0415 (the bundle's one scrub; it imports this module lazily)

    scrubbed: kube.Obj = bundle.scrub(_without_managed_fields(obj))
    return scrubbed


def _one(ref: kube.Ref) -> Callable[[kube.Client], Any]:
    return lambda c: _scrubbed(c.get(ref))


def _every(resource: kube.Resource) -> Callable[[kube.Client], Any]:
    return lambda c: [_scrubbed(o) for o in c.list(resource)]


def _event(obj: kube.Obj) -> kube.Obj:
    """What triage reads of an Event: where, what about, which kind, why, what it says, how often and when."""
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    return {
        "namespace": (obj.get("metadata") or {}).get("namespace"),
        "object": {key: involved.get(key) for key in ("kind", "name", "namespace") if involved.get(key)},
        "type": obj.get("type"),
        "reason": obj.get("reason"),
        "message": obj.get("message"),
        "count": obj.get("count"),
        "first": obj.get("firstTimestamp"),
        "last": _when(obj),
        "from": obj.get("reportingComponent") or source.get("component"),
    }


def _when(obj: kube.Obj) -> str:
    """An Event's latest time as RFC 3339 text (UTC, so text order is time order to the second)."""
    series = obj.get("series") or {}
    found = obj.get("lastTimestamp") or series.get("lastObservedTime") or obj.get("eventTime")
    return str(found or obj.get("firstTimestamp") or (obj.get("metadata") or {}).get("creationTimestamp") or "")


def recent_events(client: kube.Client) -> dict[str, Any]:
    """The `EVENTS_KEPT` most recent Events of every namespace, newest first, from at most `EVENT_PAGES` pages."""
    kept: list[kube.Obj] = []
    read = pages = 0
    for page in client.pages(kube.EVENTS):
        read, pages = read + len(page), pages + 1
        kept = sorted([*kept, *(_event(e) for e in page)], key=lambda e: str(e["last"]), reverse=True)[:EVENTS_KEPT]
        if pages >= EVENT_PAGES:
            break
    note = f"the {len(kept)} most recent of {read} Events read"
    if pages >= EVENT_PAGES:
        note += f" (the first {EVENT_PAGES} pages; more were left unread)"
    return {"note": note, "events": kept}


READS: tuple[tuple[str, Callable[[kube.Client], Any]], ...] = (
    (
        "cluster/clusteroperators.json",
        lambda c: [_without_managed_fields(o) for o in c.list(kube.CLUSTEROPERATORS)],
    ),
    ("cluster/machineconfigpool-master.json", lambda c: _without_managed_fields(c.get(kube.Ref(kube.MCPS, "master")))),
    ("cluster/nodes.json", lambda c: [_without_managed_fields(o) for o in c.list(kube.NODES)]),
    ("cluster/csrs.json", lambda c: [_csr(o) for o in c.list(kube.CSRS)]),
    ("cluster/clusterversion.json", _one(base.CLUSTERVERSION)),
    ("cluster/config/apiserver.json", _one(base.APISERVER_CLUSTER)),
    ("cluster/config/ingress.json", _one(base.INGRESS_CLUSTER)),
    ("cluster/config/ingresscontroller-default.json", _one(base.DEFAULT_INGRESSCONTROLLER)),
    ("cluster/config/proxy.json", _one(proxy.PROXY_CLUSTER)),
    ("cluster/config/image.json", _one(base.IMAGE_CLUSTER)),
    ("cluster/config/imagedigestmirrorsets.json", _every(kube.IDMS)),  # 4.13+: a 4.12 API answers 404, said so
    ("cluster/config/imagetagmirrorsets.json", _every(kube.ITMS)),
    ("cluster/config/imagecontentsourcepolicies.json", _every(kube.ICSP)),
    ("cluster/events.json", recent_events),
)


def read(connect: Callable[[], kube.Client]) -> Read:
    """Every read of `READS`; a client that cannot be made, or a read that fails, is named with its reason."""
    found = Read()
    try:
        client = connect()
    except (errors.SnorelocError, OSError, ValueError) as exc:
        reason = f"no client for the API: {getattr(exc, 'message', None) or exc}"
        found.unread.update(dict.fromkeys((name for name, _read in READS), redact.redact(reason)))
        return found
    gone = ""  # the read that found the API unreachable: the reads after it are not tried
    try:
        for name, one in READS:
            if gone:
                found.unread[name] = f"not tried: the API did not answer the read of {gone}"
                continue
            try:
                found.members[name] = bounded_json(one(client))
            except errors.SnorelocError as exc:
                found.unread[name] = redact.redact(exc.message)
                gone = name if isinstance(exc, kube.Unreachable) else ""
    finally:
        client.close()
    return found


def connector(kubeconfig: str, clock: clock_mod.Clock) -> Callable[[], kube.Client]:
    """What `read` calls to make its client: the kubeconfig, with the short policy above. Its credentials (a token,
    a client key, a password) are registered with `redact` at once, before the bundle takes any text: a journal
    line or a command's answer that carries one is masked, whatever its shape."""
    register_credentials(kubeconfig)
    return lambda: kube.Client.from_kubeconfig(kubeconfig, clock=clock, policy=POLICY)


def register_credentials(kubeconfig: str) -> None:
    """Register the kubeconfig's secret fields; a file that cannot be read registers nothing (the read that fails
    later says why)."""
    import yaml  # noqa: PLC0415 (lazy: only collect-logs reads a kubeconfig here)

    try:
        document = yaml.safe_load(safefile.read_text(kubeconfig, safefile.KUBECONFIG, follow=True))
    except (OSError, safefile.Unfit, yaml.YAMLError):
        return
    redact.register_fields(document, redact.KUBECONFIG_SECRET_FIELDS)
