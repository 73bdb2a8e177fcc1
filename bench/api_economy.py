"""Benchmark 2: how many API requests and writes a relocation makes, against the objects that needed a change.

On a single node every write can set off a rollout and every request lands on the one kube-apiserver that is also
restarting under us, so the agent should write each object that needs a change exactly once, and a second run
with the same site-config should write nothing at all. The simulator's store is snapshotted before the run and
after it; an object "needed a change" when a write of ours targeted it and its content (everything but status
and server-managed metadata; status too for status/approval subresource writes) differs between the snapshots.
A write that changed nothing, or a second write to the same object, shows up as writes > objects.

Run: `.venv/bin/python bench/api_economy.py [--speed 60]`.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import common
import harness

NAME = "api_economy"
Key = tuple[str, str, str]
SERVER_MANAGED = ("resourceVersion", "generation", "managedFields", "creationTimestamp", "uid", "selfLink")
STATUS_SUBRESOURCES = ("status", "approval")


def target_of(request: harness.Request) -> tuple[Key, str]:
    """(type key, namespace, name) and subresource a write request addressed, from its URL path."""
    parts = [p for p in request.path.split("/") if p]
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else request.name
    subresource = rest[2] if len(rest) > 2 else ""
    return (f"{plural}.{group}" if group else plural, namespace, name), subresource


def content(obj: dict[str, Any] | None, with_status: bool) -> Any:
    """What a write of ours could have changed in `obj` (None: the object does not exist)."""
    if obj is None:
        return None
    kept = {k: v for k, v in obj.items() if k != "status" or with_status}
    kept["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_MANAGED}
    return kept


def tally(requests: Iterable[harness.Request], before: dict[Key, Any], after: dict[Key, Any]) -> dict[str, Any]:
    """Requests and writes by method, the objects written, and which of them really changed."""
    requests = list(requests)
    writes = [r for r in requests if r.method != "GET"]
    written: dict[Key, set[str]] = collections.defaultdict(set)
    for write in writes:
        key, subresource = target_of(write)
        written[key].add(subresource)
    changed = sorted(
        "/".join(part for part in key if part)
        for key, subs in written.items()
        if content(before.get(key), bool(subs & set(STATUS_SUBRESOURCES)))
        != content(after.get(key), bool(subs & set(STATUS_SUBRESOURCES)))
    )
    per_object = collections.Counter("/".join(p for p in target_of(w)[0] if p) for w in writes)
    return {
        "requests": len(requests),
        "by_method": dict(collections.Counter(r.method for r in requests)),
        "failed": sum(r.code >= 400 for r in requests),
        "by_code": {str(code): n for code, n in sorted(collections.Counter(r.code for r in requests).items())},
        "writes": len(writes),
        "objects_written": len(written),
        "objects_changed": len(changed),
        "changed": changed,
        "written_more_than_once": {k: n for k, n in per_object.items() if n > 1},
        "written_unchanged": sorted(
            "/".join(p for p in key if p) for key in written if "/".join(p for p in key if p) not in changed
        ),
    }


def measure(speed: float = 60.0, routes: int = 0) -> dict[str, Any]:
    """Relocate once (snapshots around it), then again with the same config; both runs' request counts."""
    with harness.Bench(speed=speed, routes=routes) as bench:
        before = bench.snapshot()
        first = bench.relocate()
        bench.wait_idle()
        after = bench.snapshot()
        second = bench.relocate()
    first_tally = tally(first.requests, before, after)
    second_writes = sum(r.method != "GET" for r in second.requests)
    results = {
        "speed": speed,
        "user_routes": routes,
        "first_run": first_tally,
        "second_run": {"requests": len(second.requests), "writes": second_writes, "wall_s": second.child.wall_s},
    }
    targets = {
        "writes_equal_objects_changed": {
            "measured": first_tally["writes"],
            "limit": first_tally["objects_changed"],
            "comparison": "==",
            "met": first_tally["writes"] == first_tally["objects_changed"],
        },
        "second_run_writes": common.target(second_writes, 0, at_most=True),
    }
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    first, second = payload["results"]["first_run"], payload["results"]["second_run"]
    lines = [
        f"first run:  {first['requests']} requests {first['by_method']}, {first['failed']} failed",
        f"            {first['writes']} writes to {first['objects_written']} objects; "
        f"{first['objects_changed']} objects needed a change",
        f"second run: {second['requests']} requests, {second['writes']} writes (target 0)",
    ]
    if first["written_more_than_once"]:
        lines.append(f"written more than once: {first['written_more_than_once']}")
    if first["written_unchanged"]:
        lines.append(f"written but unchanged: {first['written_unchanged']}")
    for name, judged in payload["targets"].items():
        lines.append(f"{name}: {'met' if judged['met'] else 'MISSED'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="API requests and writes per relocation, and on a re-run.")
    parser.add_argument("--speed", type=float, default=60.0)
    parser.add_argument("--routes", type=int, default=0, help="extra user routes in the seed (default 0)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.speed, args.routes)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
