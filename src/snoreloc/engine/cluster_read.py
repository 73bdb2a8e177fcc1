"""What support asks for first about the cluster, read at collection time for the collect-logs bundle: every
ClusterOperator, the master MachineConfigPool, the Node and the certificate signing requests (the node's CSRs are
what keeps a node NotReady after months on a shelf).

Each read is bounded in time (a client policy of a few attempts and `READ_SECONDS` in all: the API may be the
very thing that is broken) and in size (`MAX_BYTES` a member; more is cut, and the cut is said), and redacted. A
read that fails is not an error of `collect-logs`: it is named with its reason in the bundle's MANIFEST. Of the
CSRs only what triage needs is kept (who asked, for what signer, when, and the decision), not the request or the
issued certificate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from snoreloc import errors, redact
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube

READ_SECONDS = 20.0  # all attempts of one read together
MAX_BYTES = 4 * 1024 * 1024  # a member of the bundle; a cluster of one node stays far below
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


READS: tuple[tuple[str, Callable[[kube.Client], Any]], ...] = (
    (
        "cluster/clusteroperators.json",
        lambda c: [_without_managed_fields(o) for o in c.list(kube.CLUSTEROPERATORS)],
    ),
    ("cluster/machineconfigpool-master.json", lambda c: _without_managed_fields(c.get(kube.Ref(kube.MCPS, "master")))),
    ("cluster/nodes.json", lambda c: [_without_managed_fields(o) for o in c.list(kube.NODES)]),
    ("cluster/csrs.json", lambda c: [_csr(o) for o in c.list(kube.CSRS)]),
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
    try:
        for name, one in READS:
            try:
                found.members[name] = bounded_json(one(client))
            except errors.SnorelocError as exc:
                found.unread[name] = redact.redact(exc.message)
    finally:
        client.close()
    return found


def connector(kubeconfig: str, clock: clock_mod.Clock) -> Callable[[], kube.Client]:
    """What `read` calls to make its client: the kubeconfig, with the short policy above."""
    return lambda: kube.Client.from_kubeconfig(kubeconfig, clock=clock, policy=POLICY)
