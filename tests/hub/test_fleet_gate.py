"""The fleet's gate on the node (`snoreloc.engine.fleetgate`, issue 33 item 2): before its first cluster write, a
node whose stick was made by its hub reads its own Site's `status.gate` with its reporting token and waits while it
is Held ("held by the fleet: <cause>" on the console, the page and `snoreloc status`), goes when it opens, stops with
exit 75 at its bound having changed nothing on the cluster, follows its offline policy when it cannot ask, and never
holds a node that has started. The test writes `status.gate` with the hub admin's client, as the wave controller
does; the node runs the demo's node flow against the OpenShift simulator, over HTTPS to both."""

from __future__ import annotations

import json
import pathlib
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import waves
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod
from snoreloc_fleet.verbs import install

from snoreloc import errors, redact
from snoreloc.adapters import clock, fs, kube
from snoreloc.cli import main
from snoreloc.engine import fleetgate, hubreport, journal, node, order, paths, runner, view
from snoreloc.siteconfig import medium
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

from .conftest import (
    NS,
    SITES,
    apply_site,
    demo_site,
    keep_files,
    make_stick,
    report_kubeconfig,
    request_credential,
    site_client,
    wait_for,
    wait_phase,
)

pytestmark = pytest.mark.simonly

SITE = "store-042"
CAUSE = "wave store-rollout halted: 3 Sites failed with the same cause (step domain, reason Unreachable)"


WAVE = "store-rollout"


def set_gate(admin: kube.Client, state: str, cause: str = "", *, name: str = SITE, batch: int = 1) -> None:
    """Write the Site's `status.gate` as the wave controller does (a merge patch of the status subresource). The
    Wave the gate names exists (the controller removes a gate naming a Wave that is gone) but selects no Site, so
    the test, not the wave's plan, says what the gate is (`test_a_wave_holds_a_node_until_its_batch_is_approved`
    lets the wave decide)."""
    if admin.find(kube.Ref(waves.WAVES, WAVE, NS)) is None:
        nobody = {"matchLabels": {"fleet.snoreloc.io/test": "selects-no-site"}}
        body = {"apiVersion": site.API_VERSION, "kind": wave_mod.KIND, "metadata": {"name": WAVE, "namespace": NS},
                "spec": {"selector": nobody}}  # fmt: skip
        admin.create(waves.WAVES, body)
    since = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    gate = {"state": state, "wave": WAVE, "batch": batch, "cause": cause, "since": since}
    path = kube.Ref(SITES, name, NS).path("status")
    admin.request("PATCH", path, body={"status": {"gate": gate}}, content_type=kube.MERGE_PATCH, retry=False)


def stick(
    hub: HubSimulator, admin: kube.Client, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], hold: int
) -> fs.HostFS:
    """The demo's site as Site store-042 (its fleetHold `hold` seconds), Ready, its stick made from the hub into the
    node's /etc/snoreloc. The node's host root."""
    spec, files = demo_site(tmp_path / "demo")
    spec = {**spec, "timeouts": {**spec.get("timeouts", {}), "fleetHold": hold}}
    apply_site(admin, NS, SITE, config=spec, refs=keep_files(admin, NS, SITE, files))
    wait_phase(admin, SITE, site.Phase.READY)
    root = fs.HostFS(tmp_path / "root")
    make_stick(hub, SITE, root.path("/etc/snoreloc"), capsys)
    return root


def hub_file(root: fs.HostFS) -> pathlib.Path:
    return root.path("/etc/snoreloc") / medium.HUB_FILE


def token_of(root: fs.HostFS) -> str:
    return str(yaml.safe_load(hub_file(root).read_text())["users"][0]["user"]["token"])


def edit_hub_file(root: fs.HostFS, *, offline: str | None = None, server: str | None = None) -> None:
    """The stick's reporting kubeconfig with another offline policy (as the hub writes a Wave's `spec.offline`) or
    another server (a site whose network cannot reach the hub)."""
    config = yaml.safe_load(hub_file(root).read_text())
    if offline is not None:
        config["contexts"][0]["context"]["extensions"][0]["extension"][hubreport.OFFLINE_KEY] = offline
    if server is not None:
        config["clusters"][0]["cluster"]["server"] = server
    hub_file(root).write_text(yaml.safe_dump(config))


def cluster_snapshot(sim: simulator.Simulator) -> dict[str, Any]:
    """What a relocation writes first and throughout: CSR approvals, the config objects, Secrets, labels, mirrors."""
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock.SystemClock())
    try:
        refs = (
            kube.Ref(kube.APISERVERS, "cluster"),
            kube.Ref(kube.INGRESSES, "cluster"),
            kube.Ref(kube.IMAGES, "cluster"),
            kube.Ref(kube.PROXIES, "cluster"),
            kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator"),
        )
        shot: dict[str, Any] = {str(ref): client.get(ref).get("spec") for ref in refs}
        decided = {o["metadata"]["name"]: (o.get("status") or {}).get("conditions") for o in client.list(kube.CSRS)}
        shot["csr-approvals"] = {name: conditions for name, conditions in decided.items() if conditions}
        shot["secrets"] = sorted(o["metadata"]["name"] for o in client.list(kube.SECRETS, namespace="openshift-config"))
        shot["nodes"] = {o["metadata"]["name"]: o["metadata"].get("labels") for o in client.list(kube.NODES)}
        shot["mirrors"] = sorted(o["metadata"]["name"] for o in client.list(kube.IDMS))
        shot["machineconfigs"] = sorted(o["metadata"]["name"] for o in client.list(kube.MACHINECONFIGS))
        return shot
    finally:
        client.close()


class Run:
    """The node flow in a thread (it blocks while held); `join` gives its result or raises its error."""

    def __init__(self, root: fs.HostFS, sim: simulator.Simulator) -> None:
        self.root = root
        self.outcome: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._run, args=(sim,), daemon=True)
        self.thread.start()

    def _run(self, sim: simulator.Simulator) -> None:
        try:
            self.outcome["result"] = demo.relocate(self.root, sim)[1]
        except BaseException as exc:
            self.outcome["error"] = exc

    @property
    def status_path(self) -> pathlib.Path:
        return paths.Paths.under(self.root.path("/")).status

    def waiting_detail(self) -> str:
        waiting = journal.read(self.status_path).waiting
        return waiting.detail if waiting is not None and waiting.step == fleetgate.STEP else ""

    def join(self, timeout: float = 240.0) -> runner.Result:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the node flow did not end"
        if "error" in self.outcome:
            raise self.outcome["error"]
        result: runner.Result = self.outcome["result"]
        return result


def reported(admin: kube.Client) -> dict[str, Any]:
    """The node's report on its Site (`status.agent`)."""
    return dict(site.view(admin.get(kube.Ref(SITES, SITE, NS))).status.get(site.STATUS_AGENT) or {})


class Notifications:
    """A notify socket standing in for systemd's (NOTIFY_SOCKET), drained in a thread: what the node told systemd."""

    def __init__(self, path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.heard: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))

    def _drain(self) -> None:
        while not self.done.is_set():
            try:
                self.heard.append(self.sock.recv(65536).decode())
            except TimeoutError:
                continue

    def stop(self) -> list[str]:
        self.done.set()
        self.thread.join(5)
        self.sock.close()
        return self.heard


def status_text(root: fs.HostFS, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    main.main(["status", "--root", str(root.path("/"))])
    return capsys.readouterr().out


def page_text(root: fs.HostFS) -> str:
    address = view.page_address(paths.Paths.under(root.path("/")).state_dir)
    port = urllib.parse.urlsplit(address).port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        return str(answer.read().decode())


def banner(root: fs.HostFS) -> str:
    return root.read_text("/etc/issue.d/50-snoreloc.issue")


def no_cluster_step_started(root: fs.HostFS) -> bool:
    doc = journal.read(paths.Paths.under(root.path("/")).status)
    return fleetgate.started(doc, [step.name for step in order.cluster_steps()]) == ""


def test_a_held_node_changes_nothing_until_its_gate_opens_then_goes(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=7200)
    set_gate(admin, "Held", CAUSE)
    before = cluster_snapshot(sim)

    run = Run(root, sim)
    wait_for("the node to show the hold", lambda: CAUSE in run.waiting_detail(), timeout=120)
    assert f"held by the fleet: {CAUSE}" in status_text(root, capsys)
    assert f"held by the fleet: {CAUSE}" in banner(root)
    assert "held by the fleet: wave store-rollout halted" in page_text(root)
    agent = wait_for("the hub to see the node waiting", lambda: reported(admin).get("waiting"))
    assert agent["step"] == fleetgate.STEP
    set_gate(admin, "Held", "batch 2 waits for approval")  # the cause changes: the node shows the new one
    wait_for("the new cause", lambda: "batch 2 waits for approval" in run.waiting_detail(), timeout=60)
    assert "batch 2 waits for approval" in banner(root)
    assert cluster_snapshot(sim) == before and no_cluster_step_started(root), "a held node changed the cluster"

    set_gate(admin, "Open")
    result = run.join()

    assert result.state.value in ("done", "done-with-warnings")
    assert cluster_snapshot(sim) != before
    record = journal.read(run.status_path).record(fleetgate.STEP)
    assert record.state is journal.StepState.DONE and record.details["verdict"] == "open"
    assert record.details["waitedSeconds"] > 0
    assert token_of(root) not in capsys.readouterr().err + status_text(root, capsys)


def test_a_node_held_past_its_bound_stops_with_75_having_changed_nothing(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    set_gate(admin, "Held", CAUSE)
    before = cluster_snapshot(sim)
    systemd_hears = Notifications(tmp_path / "notify", monkeypatch)

    with pytest.raises(errors.TemporaryError) as stopped:
        Run(root, sim).join()

    heard = systemd_hears.stop()
    gate_at = len(order.host_steps(demo_host(tmp_path), tmp_path)) + 2  # after the site-config and the host steps
    total = gate_at + len(order.cluster_steps()) + len(order.settled_host_steps(demo_host(tmp_path), tmp_path))
    assert f"STATUS=step {gate_at}/{total} fleet-gate: held by the fleet: {CAUSE}" in heard  # `systemctl status`
    extensions = [int(line.split("=")[1]) for line in heard if line.startswith("EXTEND_TIMEOUT_USEC=")]
    assert len(extensions) >= 2 and min(extensions) > 3600 * 1_000_000  # the whole run still fits after the hold
    assert stopped.value.exit_code == errors.ExitCode.TEMPORARY
    assert f"held by the fleet: {CAUSE} for 10m 00s" in stopped.value.message
    assert "Nothing on the cluster was changed" in (stopped.value.hint or "")
    assert cluster_snapshot(sim) == before and no_cluster_step_started(root)
    shown = status_text(root, capsys)
    assert "status: failed" in shown and f"held by the fleet: {CAUSE}" in shown
    assert f"now: {fleetgate.HINT}" in shown and "call support" not in shown  # the fleet owner lets it go, not support
    assert f"held by the fleet: {CAUSE}" in banner(root) and "Nothing on the cluster was changed" in banner(root)
    assert token_of(root) not in capsys.readouterr().err + shown


@pytest.mark.parametrize("cannot", ["unreachable", "revoked"])
def test_a_node_that_cannot_ask_with_policy_hold_waits_then_stops_with_75(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    cannot: str,
) -> None:
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    server = "https://127.0.0.1:9" if cannot == "unreachable" else None  # nothing listens on the discard port
    edit_hub_file(root, offline=hubreport.OFFLINE_HOLD, server=server)
    if cannot == "revoked":
        credentials.revoke(admin, NS, SITE)
    before = cluster_snapshot(sim)

    with pytest.raises(errors.TemporaryError) as stopped:
        Run(root, sim).join()

    why = "does not answer" if cannot == "unreachable" else "refused this site's token"
    assert why in stopped.value.message and "offline policy is hold" in stopped.value.message
    assert "network path to the fleet hub" in (stopped.value.hint or "")
    assert cluster_snapshot(sim) == before and no_cluster_step_started(root)
    assert token_of(root) not in capsys.readouterr().err + status_text(root, capsys)


def test_a_node_that_cannot_reach_its_hub_goes_with_a_warning_by_default(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    set_gate(admin, "Held", CAUSE)  # the hub would hold it, but the node cannot ask
    edit_hub_file(root, server="https://127.0.0.1:9")  # no offline policy written: proceed

    result = Run(root, sim).join()

    assert result.state.value == "done-with-warnings"
    record = journal.read(paths.Paths.under(root.path("/")).status).record(fleetgate.STEP)
    assert record.details["verdict"] == "offline"
    assert any("offline policy is proceed" in warning for warning in record.warnings)


def test_a_node_that_has_started_is_never_held(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Any], tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    set_gate(admin, "Held", CAUSE)
    target = hubreport.target_from(hub_file(root))
    later = [step.name for step in order.cluster_steps()]
    status = tmp_path / "status.json"
    jour = journal.Journal(status, clock.SystemClock())
    jour.begin_run(site_name=SITE, site_fingerprint="f", order=["api", fleetgate.STEP, *later], mode="node")
    gate = fleetgate.FleetGate(target, status, later, poll=0.2)
    with pytest.raises(errors.TemporaryError, match="held by the fleet"):  # not started: held
        gate.decide(clock.SystemClock(), budget=1.0)

    jour.start_step("csr", "fp")  # a re-run after its first cluster write
    jour.fail_step("csr", errors.TemporaryError("the API went away"))
    asked: list[hubreport.Target] = []
    gate = fleetgate.FleetGate(target, status, later, client_factory=lambda t: asked.append(t) or pytest.fail())
    verdict = gate.decide(clock.SystemClock(), budget=1.0)
    assert (verdict.how, asked) == ("started", [])


HOSTILE = (
    "\x1b[2J\x1b]0;pwned\x07 batch 2\nwaits\r for \u202eapproval\u202c\t" + "x" * 5000
)  # clears the screen, sets a terminal title, a second line, a bidi override, and far longer than 512


def test_the_cause_from_the_hub_is_shown_sanitised_bounded_and_without_a_token(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Any], tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    open_site_status(admin)  # a hub whose Site schema does not bound the gate (installed before waves, or tampered)
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    token = token_of(root)
    set_gate(admin, "Held", f"{HOSTILE} token {token}")
    target = hubreport.target_from(hub_file(root))
    lines: list[str] = []
    gate = fleetgate.FleetGate(target, tmp_path / "status.json", ["csr"], show=lines.append, poll=0.2)

    with pytest.raises(errors.TemporaryError) as stopped:
        gate.decide(clock.SystemClock(), budget=1.0)

    (line,) = lines
    assert line.startswith("held by the fleet: \\x1b[2J\\x1b]0;pwned\\x07 batch 2\\nwaits\\r for \\u202eapproval")
    assert len(line) <= len("held by the fleet: ") + hubreport.MAX_GATE_CAUSE
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u202c" for c in line)
    assert line in stopped.value.message
    everything = line + stopped.value.message + caplog.text + json.dumps(capsys.readouterr()[1])
    assert token not in everything and token not in redact.redact(everything)


def open_site_status(admin: kube.Client) -> None:
    """The hub's Site CRD with `status.gate` left open (x-kubernetes-preserve-unknown-fields)."""
    crds = install.KINDS[("apiextensions.k8s.io/v1", "CustomResourceDefinition")]
    ref = kube.Ref(crds, f"{site.PLURAL}.{site.GROUP}")
    crd = admin.get(ref)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    schema[site.STATUS_GATE] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    admin.replace(ref, crd)


def test_plan_says_whether_the_node_would_be_held_or_which_offline_policy_applies(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    svc = demo.services(root, sim, clock.ScaledClock(600.0))  # a minute of retries at an unreachable hub: 0.1 s
    request = node.NodeRequest(paths=paths.Paths.under(root.path("/")))

    def gate_notes() -> list[str]:
        (plan,) = [p for p in node.plan_node(request, svc).plans if p.step == fleetgate.STEP]
        return list(plan.notes)

    assert gate_notes()[0] == "the fleet lets this node go (in no wave)"
    set_gate(admin, "Held", CAUSE)
    assert gate_notes()[0].startswith(f"would be held by the fleet: {CAUSE} (it waits up to 10m 00s")
    set_gate(admin, "Open")
    assert gate_notes()[0] == "the fleet lets this node go (wave store-rollout: Open)"
    edit_hub_file(root, offline=hubreport.OFFLINE_HOLD, server="https://127.0.0.1:9")
    assert gate_notes() == [
        "the hub does not answer: this site's offline policy is hold: it would wait for the hub up to 10m 00s, "
        "then stop (exit 75)"
    ]
    edit_hub_file(root, offline=hubreport.OFFLINE_PROCEED)
    assert gate_notes()[0].endswith("offline policy is proceed: it would go on, with a warning")


def test_the_offline_policy_is_read_from_the_extension_and_refused_when_unknown(tmp_path: pathlib.Path) -> None:
    text = credentials.kubeconfig(credentials.Hub("https://hub:6443", b"CA"), NS, "store-1", "tok-1", b"k" * 32)
    path = tmp_path / medium.HUB_FILE
    path.write_text(text)
    assert hubreport.target_from(path).offline == hubreport.OFFLINE_PROCEED  # absent: today's behaviour
    for policy in hubreport.OFFLINE_POLICIES:
        path.write_text(text.replace("reportKey:", f"{hubreport.OFFLINE_KEY}: {policy}\n        reportKey:"))
        assert hubreport.target_from(path).offline == policy
    path.write_text(text.replace("reportKey:", f"{hubreport.OFFLINE_KEY}: wait\n        reportKey:"))
    with pytest.raises(ValueError, match="offline is 'wait': give one of proceed, hold"):
        hubreport.target_from(path)


NOT_YET = "held by the fleet: wave w does not let this node go yet"


@pytest.mark.parametrize(
    ("gate", "holds", "line"),
    [
        ({}, False, ""),
        ({"state": "Open", "wave": "w", "batch": 0}, False, ""),
        ({"state": "Held", "wave": "w", "batch": 2}, True, NOT_YET.replace("wave w", "wave w, batch 2,")),
        ({"state": "Paused", "wave": "w"}, True, f"{NOT_YET} (gate state Paused)"),
        ({"wave": "w", "batch": -1}, True, f"{NOT_YET} (gate state unknown)"),
        ({"state": "Held", "cause": "c", "batch": True}, True, "held by the fleet: c"),
    ],
)
def test_any_gate_but_an_open_one_holds(gate: dict[str, Any], holds: bool, line: str) -> None:
    found = fleetgate.gate_of({hubreport.GATE_FIELD: gate} if gate else {})
    assert found.holds is holds
    assert (found.line if holds else "") == line


def test_the_gate_sits_after_the_api_and_before_the_first_cluster_write(tmp_path: pathlib.Path) -> None:
    target = hubreport.Target(tmp_path / "k", NS, SITE, b"k")
    gate = fleetgate.FleetGate(target, tmp_path / "status.json", [])
    names = [step.name for step in order.node_steps(demo_host(tmp_path), tmp_path, gate)]
    hosts = [step.name for step in order.host_steps(demo_host(tmp_path), tmp_path)]
    assert names[names.index(fleetgate.STEP) - 1 : names.index(fleetgate.STEP) + 2] == [
        hosts[-1],
        fleetgate.STEP,
        "csr",
    ]
    assert hosts.index("api") < len(hosts)  # every host step, the API wait among them, comes first
    assert fleetgate.STEP not in [step.name for step in order.node_steps(demo_host(tmp_path), tmp_path)]


def demo_host(tmp_path: pathlib.Path) -> Any:
    from snoreloc.host.services import HostServices  # noqa: PLC0415

    return HostServices(fs=fs.HostFS(tmp_path), nmstate=None, prober=None, units=None)  # type: ignore[arg-type]


def test_a_revoked_token_cannot_read_the_gate_but_a_live_one_reads_only_its_own(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Any], tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=600)
    own = site_client(hub, hub_file(root).read_bytes(), "own.kubeconfig")
    try:
        set_gate(admin, "Held", CAUSE)
        assert fleetgate.ask(own, hubreport.target_from(hub_file(root))).line == f"held by the fleet: {CAUSE}"
        with pytest.raises(kube.Forbidden):
            own.request("GET", kube.Ref(SITES, SITE, NS).path(), retry=False)  # the Site itself: not granted
    finally:
        own.close()


def test_a_wave_holds_a_node_until_its_batch_is_approved(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Any],
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 33 end to end, the controller's wave deciding: store-042 sits in the batch after the canary, which waits
    for the owner's approval; its node, started meanwhile, holds (the cluster untouched, the wave's cause shown) and
    relocates once the owner approves the batch."""
    start_controller()
    root = stick(hub, admin, tmp_path, capsys, hold=7200)
    spec, files = demo_site(tmp_path / "canary")
    canary = "store-001"  # first by name: the canary
    apply_site(admin, NS, canary, config={**spec, "domain": "store001.edge.example.net"},
               refs=keep_files(admin, NS, canary, files))  # fmt: skip
    wait_phase(admin, canary, site.Phase.READY)
    for name in (canary, SITE):
        admin.patch(kube.Ref(SITES, name, NS), {"metadata": {"labels": {"rollout": "spring"}}})
    spring = {"selector": {"matchLabels": {"rollout": "spring"}}, "canary": 1, "manualApproval": True}
    meta = {"name": "spring", "namespace": NS}
    admin.create(waves.WAVES, {"apiVersion": site.API_VERSION, "kind": wave_mod.KIND, "metadata": meta, "spec": spring})

    def gate() -> dict[str, Any]:
        return dict(site.view(admin.get(kube.Ref(SITES, SITE, NS))).gate)

    held = wait_for("the wave to hold store-042", lambda: (g := gate()).get("state") == site.GATE_HELD and g)
    before = cluster_snapshot(sim)
    run = Run(root, sim)
    wait_for("the node to show the wave's hold", lambda: held["cause"] in run.waiting_detail(), timeout=120)
    assert f"held by the fleet: {held['cause']}" in status_text(root, capsys)
    assert cluster_snapshot(sim) == before and no_cluster_step_started(root), "a held node changed the cluster"

    obj = request_credential(admin, canary)  # the canary's node relocates and says so with its own token
    agent = {"runState": "done", "source": "node", "siteConfigDigest": obj["status"]["media"]["digest"]}
    own = site_client(hub, report_kubeconfig(admin, canary), f"{canary}.kubeconfig")
    try:
        own.request("PATCH", kube.Ref(SITES, canary, NS).path("status"), body={"status": {site.STATUS_AGENT: agent}},
                    content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
    finally:
        own.close()
    admin.patch(waves.wave_ref(NS, "spring"), {"spec": {"approvedBatches": 1}})
    wait_for("the wave to open store-042's batch", lambda: gate().get("state") == site.GATE_OPEN, timeout=120)
    result = run.join()
    assert result.state.value in ("done", "done-with-warnings")
    assert journal.read(run.status_path).record(fleetgate.STEP).details["verdict"] == "open"
