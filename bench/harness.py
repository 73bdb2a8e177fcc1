"""A relocation as the benchmarks run it: the simulator in this process, the agent as a real `snoreloc run` child.

The agent runs as its own process, started the way the systemd unit starts it, so its wall time includes
interpreter start-up and imports, its peak RSS is its own (`os.wait4`), and it does not share a GIL with the
simulated API server. What the benchmarks read afterwards comes from two independent sides: the agent's journal
(`status.json`: when each step ran) and the simulator's recorder (which rollouts ran, when; how many requests). A
request log wraps the simulator's API handler from the outside (no simulator code is changed) so the API-economy
benchmark can tell which objects each write touched.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import common

from snoreloc_sim.openshift import simulator

DOMAIN = "site-17.edge.example.com"
NODE_NAME = "sno1-node"  # the simulator seed's node
FACTORY_MIRROR = "factory-mirror"  # the simulator seed's factory mirror set
SITE_CONFIG = f"""\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata:
  name: bench-site-17
spec:
  domain: {DOMAIN}
  pullSecret:
    file: pull-secret.json
    mode: replace
  imageDigestMirrors:
    - source: quay.io/openshift-release-dev/ocp-release
      mirrors: [registry.site-17.example.com:8443/ocp4/openshift-release-dev/ocp-release]
  imageTagMirrors:
    - source: registry.redhat.io/rhel9
      mirrors: [registry.site-17.example.com:8443/rhel9]
  removeMirrors: [{FACTORY_MIRROR}]
  registryCA:
    - registry: registry.site-17.example.com:8443
      certificate: {{file: registry-ca.crt}}
  kubelet:
    nodeName: {NODE_NAME}
    approveCSRs: true
  # The agent's own work is not sped up with the simulator: at speed 600 a minute of it is 10 cluster-hours.
  # The widest bounds keep the whole-run deadline from ending a fast-simulated run that is merely busy.
  timeouts:
    total: 86400
    settle: 14400
"""
SITE_FILES = ("pull-secret.json", "registry-ca.crt")


def write_site(directory: Path) -> Path:
    """The benchmark site-config (every cluster step has work to do) and its files; the YAML's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in SITE_FILES:
        shutil.copy(common.ROOT / "examples" / name, directory / name)
    path = directory / "site-config.yaml"
    path.write_text(SITE_CONFIG)
    return path


@dataclass(frozen=True)
class Request:
    """One API request the simulator answered: method, path, the created object's name (POST), status code."""

    method: str
    path: str
    name: str
    code: int


class RequestLog:
    """Wraps the simulator's API handler to note every request it answers; thread-safe."""

    def __init__(self, sim: simulator.Simulator) -> None:
        self._lock = threading.Lock()
        self.entries: list[Request] = []
        api = sim.running.front.api
        self._inner = api.handle
        setattr(api, "handle", self._handle)  # noqa: B010 (an instance attribute over the bound method)

    def _handle(self, request: Any, **kwargs: Any) -> Any:
        response = self._inner(request, **kwargs)
        entry = Request(request.method, request.path, _posted_name(request), int(getattr(response, "code", 0)))
        with self._lock:
            self.entries.append(entry)
        return response

    def since(self, start: int) -> list[Request]:
        with self._lock:
            return list(self.entries[start:])

    def __len__(self) -> int:
        with self._lock:
            return len(self.entries)


def _posted_name(request: Any) -> str:
    if request.method != "POST" or not request.body:
        return ""
    try:
        return str(json.loads(request.body).get("metadata", {}).get("name", ""))
    except (ValueError, AttributeError):
        return ""


@dataclass(frozen=True)
class AgentRun:
    """One `snoreloc run` child: its measurement, its journal and report, and the simulator's view meanwhile."""

    child: common.ChildRun
    started: float  # time.monotonic() when the child was spawned
    status: dict[str, Any]
    report: dict[str, Any] | None
    requests: list[Request]
    rollouts: list[dict[str, Any]]
    stderr_tail: str
    wall_offset: float = field(repr=False)  # time.time() - time.monotonic(), to place journal timestamps

    def at(self, iso: str) -> float:
        """Seconds after the child started for a journal timestamp."""
        wall = dt.datetime.fromisoformat(iso).timestamp()
        return wall - self.wall_offset - self.started

    def steps(self) -> list[dict[str, Any]]:
        """Each step that ran: name, start and end (seconds after the child started), duration and state."""
        found = []
        for name in self.status.get("order") or list(self.status.get("steps", {})):
            record = self.status.get("steps", {}).get(name, {})
            if record.get("started") and record.get("finished"):
                start, end = self.at(record["started"]), self.at(record["finished"])
                found.append({"step": name, "start": start, "end": end, "state": record.get("state")})
        return found

    def step(self, name: str) -> dict[str, Any] | None:
        return next((s for s in self.steps() if s["step"] == name), None)


class Bench:
    """One simulator plus a scratch directory; `relocate()` runs the agent against it (again and again)."""

    def __init__(
        self, *, speed: float, routes: int = 0, faults: str | None = None, seed: str = "4.16", shelved: bool = False,
        shelved_days: int = 0,
    ) -> None:  # fmt: skip
        """`shelved`: the node's kubelet certificate expired on the shelf, so it is NotReady until its CSRs are
        approved (the simulator's `expired_kubelet_cert`). `shelved_days`: every certificate of the model aged by
        that many days (issue 37, the simulator's `shelved_days`)."""
        self.speed = speed
        self._tmp = tempfile.TemporaryDirectory(prefix="snoreloc-bench-")
        self.workdir = Path(self._tmp.name)
        self.sim = simulator.Simulator(
            seed=seed, speed=speed, faults=faults, routes=routes, expired_kubelet_cert=shelved,
            shelved_days=shelved_days,
        )  # fmt: skip
        self.site_config = write_site(self.workdir / "site")
        self.log: RequestLog | None = None

    def __enter__(self) -> Bench:
        self.sim.start()
        self.log = RequestLog(self.sim)
        return self

    def __exit__(self, *exc: object) -> None:
        self.sim.stop()
        self._tmp.cleanup()

    def argv(self, route_workers: int | None = None, extra: tuple[str, ...] = ()) -> list[str]:
        host, port = self.sim.router_address
        argv = [
            *common.snoreloc_argv(),
            "run",
            "--cluster-only",
            "--site-config", str(self.site_config),
            "--kubeconfig", str(self.sim.kubeconfig_path),
            "--root", str(self.workdir / "root"),
            "--ingress-endpoint", f"{host}:{port}",
            "--time-scale", repr(self.speed),
        ]  # fmt: skip
        if route_workers is not None:
            argv += ["--route-workers", str(route_workers)]
        return argv + list(extra)

    def relocate(self, *, route_workers: int | None = None, timeout: float = 1800.0) -> AgentRun:
        """Run `snoreloc run --cluster-only` to the end; raises if it fails (exit codes 0 and 2 are success)."""
        assert self.log is not None, "use Bench as a context manager"
        first_request, first_rollout = len(self.log), len(self.sim.cluster.recorder.rollouts)
        stderr = self.workdir / "agent.stderr"
        wall_offset = time.time() - time.monotonic()
        child = common.run_child(self.argv(route_workers), timeout=timeout, stderr=stderr)
        started = child.started
        run = AgentRun(
            child=child,
            started=started,
            status=_read_json(self.workdir / "root" / "var" / "lib" / "snoreloc" / "status.json") or {},
            report=_read_json(self.workdir / "root" / "var" / "lib" / "snoreloc" / "report.json"),
            requests=self.log.since(first_request),
            rollouts=self._rollouts(first_rollout, started),
            stderr_tail=stderr.read_text(errors="replace")[-2000:],
            wall_offset=wall_offset,
        )
        if child.exit_code not in (0, 2):
            raise RuntimeError(f"snoreloc run exited {child.exit_code}:\n{run.stderr_tail}")
        return run

    def _rollouts(self, first: int, started: float) -> list[dict[str, Any]]:
        recorded = self.sim.cluster.recorder.rollouts[first:]
        return [
            {
                "operator": r.operator,
                "trigger": r.trigger,
                "start": r.started - started,
                "end": r.finished - started,
                "seconds": r.finished - r.started,
            }
            for r in recorded
        ]

    def snapshot(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Every object in the simulator's store, keyed by (type key, namespace, name), deep-copied."""
        cluster = self.sim.cluster
        found = {}
        for key, rtype in cluster.types.items():
            for obj in cluster.store.list(rtype):
                meta = obj.get("metadata", {})
                found[(key, meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)
        return found

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until every simulated rollout has finished (bounded)."""
        deadline = time.monotonic() + timeout
        while not self.sim.cluster.timeline.idle():
            if time.monotonic() > deadline:
                raise TimeoutError(f"simulator still busy after {timeout:.0f} s")
            time.sleep(0.05)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded
