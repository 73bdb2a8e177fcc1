"""snoreloc's own network code, run inside a sandbox: the test process cannot join the sandbox's namespaces itself.

`python agent.py converge BACKEND DESIRED.json [PROBE_WINDOW [FACTORY_ROOT]]` runs `snoreloc.host.network.converge`
with the real probes and the chosen nmstate backend (`lib`: libnmstate, `cli`: nmstatectl), and prints one JSON
line: what changed and what the probes saw, or the error class, its exit code and message. With FACTORY_ROOT (a
directory holding etc/snoreloc/config), the internal addresses join the desired state as the network step adds them.
`python agent.py crash DESIRED.json TIMEOUT` applies without committing under a rollback timeout of TIMEOUT seconds
and dies at once, as a power cut or an OOM kill would leave it.
`python agent.py discover [LABEL...]` runs `snoreloc.siteconfig.discovery.discover` (blkid, mount) and prints
what it copied.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pathlib
import sys
from typing import Any

import yaml

from snoreloc import errors
from snoreloc.adapters import blockdev, clock, command, fs, nmstate, probe
from snoreloc.engine import node, paths, runner
from snoreloc.host import internal_ip, network
from snoreloc.siteconfig import discovery
from snoreloc.steps import context

COMPAT_BIN = "/run/site/bin"  # where the sandbox puts its `nmstatectl` (see realhost_sandbox.NMSTATECTL_COMPAT)


def backend(name: str) -> nmstate.NmstateBackend:
    if name == "lib":
        return nmstate.LibnmstateBackend(importlib.import_module("libnmstate"))
    os.environ["PATH"] = f"{COMPAT_BIN}:{os.environ['PATH']}"
    return nmstate.NmstatectlBackend(command.SubprocessRunner(), fs.HostFS())


def converge(name: str, desired_file: str, window: str = "3", factory_root: str = "") -> dict[str, Any]:
    desired = json.loads(pathlib.Path(desired_file).read_text())
    if factory_root:  # as the network step does: the internal addresses of the factory config join the desired state
        desired = internal_ip.with_internal(desired, internal_ip.read(fs.HostFS(pathlib.Path(factory_root))))
    policy = network.Policy(
        rollback_timeout=int(float(window)) + 30, probe_window=float(window), probe_interval=1, backoff=0.5
    )
    runner = command.SubprocessRunner()
    try:
        outcome = network.converge(
            backend(name), probe.NetworkProber(runner, timeout=1.0), clock.SystemClock(), desired, policy=policy
        )
    except errors.SnorelocError as exc:
        return {"error": type(exc).__name__, "exit": int(exc.exit_code), "message": str(exc)}
    checks = [[str(check.target), check.ok, check.detail] for check in outcome.checks]
    return {"change": outcome.change.value, "attempts": outcome.attempts, "checks": checks}


def crash(desired_file: str, timeout: str) -> None:
    desired = json.loads(pathlib.Path(desired_file).read_text())
    checkpoint = backend("lib").apply(desired, commit=False, rollback_timeout=int(timeout))
    print(json.dumps({"checkpoint": checkpoint.id if checkpoint else None}), flush=True)
    os._exit(137)


def discover(*labels: str) -> dict[str, Any]:
    if labels:
        discovery.LABELS = labels
    host = fs.HostFS()
    devices = blockdev.BlockDevices(command.SubprocessRunner(), host)
    policy = discovery.WaitPolicy(timeout=10, poll=1)
    try:
        found = discovery.discover(host, devices, clock.SystemClock(), policy=policy)
    except errors.SnorelocError as exc:
        saved = sorted(str(p) for p in pathlib.Path(discovery.STATE_DIR).rglob("*") if p.is_file())
        return {"error": type(exc).__name__, "exit": int(exc.exit_code), "message": str(exc), "saved": saved}
    files = {name: (found.path.parent / name).read_text() for name in found.copied}
    return {"source": found.source.value, "device": found.device, "files": files, "skipped": list(found.skipped)}


def node_flow(desired_file: str, workdir: str) -> dict[str, Any]:
    """The demo's node flow (site-config, network, kubelet, API wait, cluster steps) with the real network parts.

    The cluster is the simulator, served here; kubelet's systemctl is the demo's scripted one; the network goes
    through libnmstate to the sandbox's NetworkManager and is probed for real.
    """
    from snoreloc_sim.demo import flow  # noqa: PLC0415
    from snoreloc_sim.openshift import simulator  # noqa: PLC0415 (only this command needs the simulator)

    speed = 20.0
    with simulator.Simulator("4.16", speed, workdir=pathlib.Path(workdir) / "sim") as sim:
        root = fs.HostFS(pathlib.Path(workdir) / "root")
        site = flow.write_site(root, sim)
        document = yaml.safe_load(site.read_text())
        document["spec"]["network"] = json.loads(pathlib.Path(desired_file).read_text())
        site.write_text(yaml.safe_dump(document, sort_keys=False))
        demo = flow.services(root, sim, clock.ScaledClock(speed))
        real_prober = probe.NetworkProber(command.SubprocessRunner(), timeout=1.0)
        svc = dataclasses.replace(demo, host=dataclasses.replace(demo.host, nmstate=backend("lib"), prober=real_prober))
        req = node.NodeRequest(
            paths=paths.Paths.under(root.path("/")),
            options=runner.Options(),
            settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
        )
        try:
            node.relocate(req, svc)
        except errors.SnorelocError as exc:
            return {"error": type(exc).__name__, "exit": int(exc.exit_code), "message": str(exc)}
        report = json.loads(req.paths.report.read_text())
        return {"report": report, "kubelet": flow_commands(svc)}


def flow_commands(svc: Any) -> list[list[str]]:
    return [list(argv) for argv in svc.devices.runner.commands() if argv[:1] == ("systemctl",)]


def main(argv: list[str]) -> None:
    if argv[0] == "node-flow":
        print(json.dumps(node_flow(*argv[1:])), flush=True)
        return
    if argv[0] == "crash":
        crash(*argv[1:])
    if argv[0] == "discover":
        print(json.dumps(discover(*argv[1:])), flush=True)
        return
    print(json.dumps(converge(*argv[1:])), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
