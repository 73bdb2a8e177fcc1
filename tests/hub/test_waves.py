"""Waves against the hub simulator over HTTPS with the real controller (kopf in a thread): the canary batch's nodes
fail with one cause and the wave halts before the next batch, naming it, holding every Site whose node has not
started (no credential, `fleet make-media` exits 75 saying why); the owner's approval opens the next batch; a batch
whose failures pass its success threshold halts it; at most `maxConcurrency` Sites relocate at once. The nodes'
reports are written as a node writes them: through each site's own reporting token."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import waves
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod

from hubsim.test_hub_kubectl import KUBECTL
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import (
    NS,
    SITES,
    Running,
    get_site,
    report_kubeconfig,
    request_credential,
    site_client,
    site_object,
    wait_for,
)

TEMPLATE = "4f2a9c0de1b27788"


def _sites(admin: kube.Client, prefix: str, count: int, wave: str) -> list[str]:
    names = [f"{prefix}-{index:03d}" for index in range(count)]
    for name in names:
        obj = site_object(name)
        obj["metadata"]["labels"] = {"rollout": wave}
        obj["metadata"]["annotations"] = {site.TEMPLATE_DIGEST: TEMPLATE}
        admin.create(SITES, obj)
    return names


def _wave(admin: kube.Client, name: str, **spec: Any) -> None:
    body = {"apiVersion": site.API_VERSION, "kind": wave_mod.KIND, "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"rollout": name}}, **spec}}  # fmt: skip
    admin.create(waves.WAVES, body)


def _wave_status(admin: kube.Client, name: str) -> dict[str, Any]:
    return dict(admin.get(waves.wave_ref(NS, name)).get("status") or {})


def _gates(admin: kube.Client, wave: str) -> dict[str, dict[str, Any]]:
    listed = admin.list(SITES, NS, label_selector=f"rollout={wave}")
    return {obj["metadata"]["name"]: dict(site.view(obj).gate) for obj in listed}


def _open(gates: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(name for name, gate in gates.items() if gate.get("state") == site.GATE_OPEN)


def _report(hub: HubSimulator, admin: kube.Client, name: str, state: str, **extra: Any) -> None:
    """The node's report of Site `name`, sent as the node sends it: its own token, its own Site's status."""
    obj = request_credential(admin, name)
    digest = obj["status"]["media"]["digest"]
    agent = {"runState": state, "source": "node", "agentVersion": "1.2.3", "siteConfigDigest": digest, **extra}
    own = site_client(hub, report_kubeconfig(admin, name), f"{name}.kubeconfig")
    try:
        own.request("PATCH", kube.Ref(SITES, name, NS).path("status"), body={"status": {site.STATUS_AGENT: agent}},
                    content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
    finally:
        own.close()


def _fail(hub: HubSimulator, admin: kube.Client, name: str, step: str = "domain", code: int = 69) -> None:
    failure = {"step": step, "message": f"{name}: the mirror did not answer", "hint": "check the mirror"}
    _report(hub, admin, name, "failed", step=step, exitCode=code, failure=failure)


def _wait_wave(admin: kube.Client, name: str, check: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    return dict(wait_for(what, lambda: (s := _wave_status(admin, name)) and check(s) and s, timeout=90.0))


def _all_gated(admin: kube.Client, wave: str, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    wanted = set(names)
    return dict(
        wait_for(
            f"every Site of {wave} gated",
            lambda: (g := _gates(admin, wave)) and set(g) == wanted and all(g.values()) and g,
            timeout=120.0,
        )
    )


def test_a_canary_failing_with_one_cause_halts_the_wave_and_approval_opens_the_next_batch(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    names = _sites(admin, "store", 50, "spring")
    _wave(admin, "spring", canary=5, batches=["15"], successThreshold=40, sameCause=3, manualApproval=True)
    gates = _all_gated(admin, "spring", names)
    canary = names[:5]
    assert _open(gates) == canary, "the canary batch only"
    assert gates[names[5]]["cause"] == "batch 1 waits for batch 0 to finish"
    assert {g["batch"] for g in gates.values()} == {0, 1, 2}
    for name in canary[:3]:
        _fail(hub, admin, name)
    halted = _wait_wave(admin, "spring", lambda s: s.get("phase") == "Halted", "the wave halted")
    cause = halted["halt"]["cause"]
    assert cause.startswith("3 Sites failed with the same cause (step domain, reason Unavailable, agent 1.2.3, "
                            f"template {TEMPLATE})"), cause  # fmt: skip
    assert halted["halt"]["batch"] == 0
    assert halted["batches"][0]["failed"] == 3 and halted["batches"][1]["state"] == "Pending"
    gates = wait_for("the canary's unstarted Sites held", lambda: (g := _gates(admin, "spring"))
                     and g[canary[3]]["state"] == site.GATE_HELD and g)  # fmt: skip
    assert _open(gates) == canary[:3], "the nodes that started are never held"
    held = gates[names[20]]
    assert held["state"] == site.GATE_HELD and held["cause"] == f"wave spring halted: {cause}"[:512]
    assert held["since"] and held["wave"] == "spring"
    # a held Site gets no credential, and make-media says why at once, with nothing written
    media = get_site(admin, names[20])
    ready = site.view(media).condition(site.Condition.MEDIA_READY) or {}
    assert (ready.get("status"), ready.get("reason")) == ("False", "Held")
    assert admin.find(kube.Ref(kube.SECRETS, credentials.binding_name(names[20]), NS)) is None
    capsys.readouterr()
    argv = ["fleet", "make-media", names[20], "-n", NS, "--kubeconfig", str(hub.kubeconfig_path),
            "--out-dir", str(tmp_path / "stick")]  # fmt: skip
    assert main.main(argv) == 75
    said = capsys.readouterr().err
    assert "held by the fleet" in said and "wave spring" in said and "3 Sites failed" in said
    assert not (tmp_path / "stick").exists()
    # the owner reviews the canary and approves batch 1: the halt is lifted; the canary's last two relocate
    admin.patch(waves.wave_ref(NS, "spring"), {"spec": {"approvedBatches": 1}})
    wait_for("the canary reopened", lambda: _open(_gates(admin, "spring")) == canary)
    for name in canary[3:]:
        _report(hub, admin, name, "done", step="settle")
    opened = _wait_wave(admin, "spring", lambda s: s["batches"][1]["state"] == "Open", "batch 1 open")
    assert opened["phase"] == "Progressing" and "halt" not in opened
    gates = wait_for("batch 1's Sites open", lambda: (g := _gates(admin, "spring")) and len(_open(g)) == 20 and g)
    assert _open(gates) == sorted(names[:20])
    assert gates[names[20]]["cause"] == "batch 2 waits for batch 1 to finish"


def test_a_batch_failing_past_its_threshold_halts_the_wave(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    kubectl: Any,
) -> None:
    start_controller()
    names = _sites(admin, "shop", 10, "autumn")
    _wave(admin, "autumn", canary=4, successThreshold=75, sameCause=10)
    _all_gated(admin, "autumn", names)
    _fail(hub, admin, names[0], step="domain")
    _wait_wave(admin, "autumn", lambda s: s["batches"][0]["failed"] == 1, "one failure counted")
    assert _wave_status(admin, "autumn")["phase"] == "Progressing", "one failure of four is what 75% allows"
    _fail(hub, admin, names[1], step="certificates", code=65)
    halted = _wait_wave(admin, "autumn", lambda s: s.get("phase") == "Halted", "the wave halted")
    assert halted["halt"]["cause"] == (
        "batch 0 has 2 of 4 Sites not relocated, more than the 1 its success threshold of 75% allows"
    )
    gates = wait_for("the unstarted canaries held", lambda: (g := _gates(admin, "autumn"))
                     and _open(g) == names[:2] and g)  # fmt: skip
    assert gates[names[9]]["cause"].startswith("wave autumn halted: batch 0 has 2 of 4")
    # what the owner reads: `fleet status --wave`, its JSON, the HTML page, `kubectl get waves`
    hub_args = ["-n", NS, "--kubeconfig", str(hub.kubeconfig_path)]
    capsys.readouterr()
    assert main.main(["fleet", "status", "--wave", "autumn", *hub_args]) == 0
    table = capsys.readouterr().out
    assert table.startswith("wave autumn: Halted (Sites rollout=autumn)\n  halted in batch 0: batch 0 has 2 of 4")
    assert "10 sites" in table and "Failed" in table
    assert main.main(["fleet", "status", "--wave", "autumn", "-o", "json", *hub_args]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["wave"]["halt"]["batch"] == 0 and document["total"] == 10
    assert [b["failed"] for b in document["wave"]["batches"]] == [2, 0]
    assert main.main(["fleet", "status", "--wave", "nowhere", *hub_args]) == 69
    page = tmp_path / "fleet.html"
    assert main.main(["fleet", "report", "--html", str(page), *hub_args]) == 0
    html = page.read_text()
    assert '<h2 id="waves">Waves</h2>' in html and "<b>Halted in batch 0:</b> batch 0 has 2 of 4" in html
    if KUBECTL is not None:
        lines = kubectl("get", "waves", "-n", NS).out.splitlines()
        assert lines[0].split() == ["NAME", "PHASE", "BATCH", "SITES", "RELOCATED", "FAILED", "CAUSE", "AGE"]
        assert lines[1].split()[:7] == ["autumn", "Halted", "0", "10", "0", "2", "batch"]


def test_no_more_sites_relocate_at_once_than_the_wave_allows(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    start_controller()
    names = _sites(admin, "kiosk", 8, "summer")
    _wave(admin, "summer", canary=0, maxConcurrency=3, offline="hold")
    gates = _all_gated(admin, "summer", names)
    first = _open(gates)
    assert first == names[:3]
    assert (
        gates[names[3]]["cause"] == "waits for a place: 3 Sites of wave summer relocate at once (spec.maxConcurrency)"
    )
    _report(hub, admin, first[0], "running", step="settle")
    _report(hub, admin, first[1], "done", step="settle")
    gates = wait_for("a place freed", lambda: (g := _gates(admin, "summer")) and len(_open(g)) == 4 and g)
    assert _open(gates) == names[:4], "the next Site took the freed place"
    running = [n for n in _open(gates) if get_site(admin, n)["status"].get("phase") != "Relocated"]
    assert len(running) == 3
    status = _wait_wave(admin, "summer", lambda s: s["relocated"] == 1, "the relocation counted (within 10 s)")
    config = yaml.safe_load(report_kubeconfig(admin, first[0]))
    extension = config["contexts"][0]["context"]["extensions"][0]
    assert extension["name"] == "fleet.snoreloc.io/site"
    assert extension["extension"]["offline"] == "hold", "the wave's offline policy travels to the node"
    assert status["batches"][-1]["held"] == 4 and status["relocated"] == 1
