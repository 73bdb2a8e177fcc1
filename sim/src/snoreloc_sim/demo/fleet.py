"""`snoreloc demo --fleet N` (`make demo-fleet`): a fleet seen end to end on this machine, changing nothing here.

A simulated hub (the plain Kubernetes API of `snoreloc_sim.hub`, the Site CRD applied as `fleet install` does),
an inventory of N sites rendered from one template and validated in bulk (one site is invalid, and the demo shows
why), the sites applied to the hub as `Site` objects with their files in Secrets, the real hub controller (kopf,
in a thread) validating them and issuing each site's reporting credential, sticks made for a few sites, and those
sites' simulated nodes reporting a relocation with their sticks' own credentials (one finishes, one fails, one is
still running), then `fleet status` and the HTML report. Every step is the real command, run in this process.

The nodes are simulated at the hub's edge only: what they send is what a node's reporter sends (a merge patch of
the Site's `status.agent`, with the token on its stick); `snoreloc demo` shows a node's relocation itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from snoreloc_fleet import credentials, install, site
from snoreloc_fleet.controller import operator, reconcile

from snoreloc.adapters import clock, kube
from snoreloc.cli import main as cli
from snoreloc_sim.hub.simulator import HubSimulator

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
NAMESPACE = "fleet-demo"
STEPS = ("preflight", "network", "kubelet-start", "api-wait", "certificates", "domain", "settle", "routes")
BAD_ROW = 7  # this site's gateway is not an address: the demo's invalid site
PLACEHOLDERS = (
    ("name: store-0412\n", "name: ${name}\n"),
    ("domain: sno1.store-0412.example.com", "domain: ${domain}"),
    ("- ip: 10.41.20.10\n", "- ip: ${address}\n"),
    ("next-hop-address: 10.41.20.1\n", "next-hop-address: ${gateway}\n"),
)


def _say(text: str) -> None:
    sys.stdout.write(f"\n== {text}\n")
    sys.stdout.flush()


def _fleet(*argv: str) -> int:
    sys.stdout.write(f"$ snoreloc fleet {' '.join(argv)}\n")
    sys.stdout.flush()
    return cli.main(["fleet", *argv])


def write_inputs(directory: Path, sites: int) -> tuple[Path, Path]:
    """The template (the complete example with placeholders), its shared files, and an inventory of `sites`."""
    text = (EXAMPLES / "site-config.yaml").read_text(encoding="utf-8")
    for before, after in PLACEHOLDERS:
        text = text.replace(before, after)
    # no cluster-wide proxy: the simulated nodes report from here, where the example's proxy does not exist
    start = text.index("\n  proxy:\n")
    text = text[:start] + text[text.index("\n\n", start) :]
    template = directory / "base.yaml"
    template.write_text(text, encoding="utf-8")
    for name in ("pull-secret.json", "registry-ca.crt", "proxy-ca.crt"):
        shutil.copy(EXAMPLES / name, directory / name)
        (directory / name).chmod(0o600)
    shutil.copytree(EXAMPLES / "manifests", directory / "manifests")
    rows = ["name,domain,address,gateway"]
    for number in range(1, sites + 1):
        net = f"10.{number // 250}.{number % 250}"
        gateway = f"{net}.256" if number == BAD_ROW else f"{net}.1"
        rows.append(f"store-{number:04d},sno.store-{number:04d}.example.com,{net}.10,{gateway}")
    inventory = directory / "sites.csv"
    inventory.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return template, inventory


def _apply(client: kube.Client, path: Path) -> int:
    count = 0
    for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        resource = kube.SECRETS if obj["kind"] == "Secret" else reconcile.SITES
        client.create(resource, obj)
        count += 1
    return count


def _phases(client: kube.Client) -> dict[str, int]:
    counts: dict[str, int] = {}
    for obj in client.list(reconcile.SITES, NAMESPACE):
        phase = str((obj.get("status") or {}).get(site.STATUS_PHASE) or site.Phase.PENDING)
        counts[phase] = counts.get(phase, 0) + 1
    return counts


def _wait_validated(client: kube.Client, sites: int, timeout: float = 120.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    counts: dict[str, int] = {}
    while time.monotonic() < deadline:
        counts = _phases(client)
        if counts.get(site.Phase.READY, 0) + counts.get(site.Phase.INVALID, 0) == sites:
            return counts
        time.sleep(0.5)
    raise TimeoutError(f"the controller did not validate every Site within {timeout:.0f} s: {counts}")


def _report(digest: str, state: str, done: int, *, failed: str | None = None) -> dict[str, Any]:
    """What a node's reporter sends (`snoreloc.engine.hubreport.snapshot`'s fields), for a run at `done` steps."""
    steps = []
    for index, name in enumerate(STEPS):
        if index < done:
            steps.append({"name": name, "state": "done", "seconds": 40.0 + 25 * index})
        elif index == done and failed:
            steps.append({"name": name, "state": "failed", "seconds": 300.0})
        elif index == done and state == "running":
            steps.append({"name": name, "state": "running", "seconds": None})
        else:
            steps.append({"name": name, "state": "pending", "seconds": None})
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    todo = {"failed": "re-insert the stick and run `snoreloc run` again", "running": "wait", "done": ""}[state]
    return {
        "reportedAt": now,
        "agentVersion": "demo",
        "source": "node",
        "siteConfigDigest": digest,
        "runState": state,
        "step": STEPS[min(done, len(STEPS) - 1)],
        "stepsDone": done,
        "stepsTotal": len(STEPS),
        "todo": todo,
        "steps": steps,
        "warnings": [],
        "waiting": {
            "step": STEPS[done],
            "what": "the kube-apiserver rollout",
            "elapsedSeconds": 42.0,
            "budgetSeconds": 1200.0,
        }
        if state == "running"
        else None,
        "failure": {"step": failed, "message": f"{failed}: a bounded wait ran out", "hint": "check the site network"}
        if failed
        else None,
        "exitCode": {"done": 0, "failed": 75}.get(state),
    }


def _node_reports(admin: kube.Client, sticks: Path, names: list[str]) -> None:
    """Each node sends its report with the token on its own stick (it may patch its own Site's status only)."""
    runs = [("done", len(STEPS), None), ("failed", 3, "api-wait"), ("running", 6, None)]
    for name, (state, done, failed) in zip(names, runs, strict=False):
        digest = str(
            ((admin.get(kube.Ref(reconcile.SITES, name, NAMESPACE)).get("status") or {}).get("media") or {}).get(
                "digest", ""
            )
        )
        node = kube.Client.from_kubeconfig(str(sticks / name / "hub-report.kubeconfig"), clock=clock.SystemClock())
        try:
            path = kube.Ref(reconcile.SITES, name, NAMESPACE).path("status")
            report = _report(digest, state, done, failed=failed)
            node.request("PATCH", path, body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH)
        finally:
            node.close()
        sys.stdout.write(f"  {name}: the node reports {state} (step {report['step']})\n")


def _controller(hub: HubSimulator) -> tuple[threading.Event, threading.Thread]:
    config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem), stale_after=900.0)
    options = operator.Options(config=config, kubeconfig=str(hub.kubeconfig_path), sweep=2.0, workers=4)
    controller = operator.Controller(options)
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop, ready), name="fleet-controller", daemon=True)
    thread.start()
    if not ready.wait(60):
        raise TimeoutError("the hub controller did not start within 60 s")
    return stop, thread


def _install(client: kube.Client) -> None:
    crd = next(obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition")
    client.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
    client.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": NAMESPACE}})


def _wait_phases(client: kube.Client, wanted: set[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not wanted <= set(_phases(client)):
        time.sleep(0.5)


def play(workdir: Path, sites: int) -> int:
    hub_config: list[str]
    with HubSimulator(workdir=workdir / "hub") as hub:
        hub_config = ["--kubeconfig", str(hub.kubeconfig_path), "-n", NAMESPACE]
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        _install(admin)
        _say(f"1. a hub: the simulator at {hub.api_url}, the Site CRD installed")
        template, inventory = write_inputs(workdir, sites)
        _say(f"2. an inventory of {sites} sites ({inventory}) and one template ({template})")
        _fleet("render", "--template", str(template), "--inventory", str(inventory), "--out", str(workdir / "sites"))
        _say(f"3. every site-config checked with the agent's rules, on every core (store-{BAD_ROW:04d} is wrong)")
        _fleet("validate", str(workdir / "sites"), "--unique-addresses", "--junit", str(workdir / "junit.xml"))
        _say("4. the same rows as Sites on the hub, their files in Secrets; the controller checks each one")
        _fleet(
            "render",
            "--template",
            str(template),
            "--inventory",
            str(inventory),
            "--sites",
            str(workdir / "hub-objects"),
            "-n",
            NAMESPACE,
        )
        applied = _apply(admin, workdir / "hub-objects" / "secrets.yaml") + _apply(
            admin, workdir / "hub-objects" / "sites.yaml"
        )
        sys.stdout.write(f"  applied {applied} objects\n")
        stop, thread = _controller(hub)
        try:
            counts = _wait_validated(admin, sites)
            sys.stdout.write(f"  the controller: {counts}\n")
            chosen = [f"store-{n:04d}" for n in (1, 2, 3)]
            _say(f"5. sticks for {', '.join(chosen)}, each with its own reporting credential")
            for name in chosen:
                _fleet("make-media", name, *hub_config, "--out-dir", str(workdir / "sticks" / name))
            _say("6. their nodes relocate and report to the hub (one done, one failed, one running)")
            _node_reports(admin, workdir / "sticks", chosen)
            _wait_phases(admin, {site.Phase.RELOCATED, site.Phase.FAILED, site.Phase.IN_PROGRESS})
            _say("7. the fleet at a glance")
            _fleet("status", *hub_config)
            _fleet("why", f"store-{BAD_ROW:04d}", *hub_config)
            _fleet("why", "store-0002", *hub_config)
            page = workdir / "fleet.html"
            _say("8. the fleet on one page")
            _fleet("report", *hub_config, "--html", str(page), "--title", "demo fleet")
        finally:
            stop.set()
            thread.join(30)
            admin.close()
    sys.stdout.write(f"\nopen {workdir / 'fleet.html'} in a browser; the demo's files are in {workdir}\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.keep:
        workdir = Path(args.keep)
        workdir.mkdir(parents=True, exist_ok=True)
        return play(workdir, args.fleet)
    workdir = Path(tempfile.mkdtemp(prefix="snoreloc-demo-fleet-"))
    return play(workdir, args.fleet)
