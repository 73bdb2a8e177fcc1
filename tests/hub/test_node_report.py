"""The node's reports (`snoreloc.engine.hubreport`): bounded and redacted, signed so a report carried back by hand
can be proven, sent to the hub simulator over HTTPS only once the site network is committed, landing in the Site's
status; a refused token (403) stops the reporter with one log line, and an unreachable hub costs the run at most
the final send's bound."""

from __future__ import annotations

import logging
import pathlib
import time
from typing import Any

import pytest
from snoreloc_fleet.controller import operator
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import make_media as makemedia

from snoreloc import errors, redact
from snoreloc.adapters import clock, kube
from snoreloc.engine import hubreport, journal
from snoreloc.siteconfig import medium
from snoreloc.steps import base
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, get_site, ready_site, site_object, wait_for, wait_phase

FAST = hubreport.Settings(debounce=0.05, final=15.0, backoff_initial=0.2, backoff_max=0.5)
STEPS = ["network", "kubelet", "api", "settle"]


def _medium(admin: kube.Client, name: str, directory: pathlib.Path) -> pathlib.Path:
    """The stick `fleet make-media` makes for `name`, as files in `directory`; the site-config's path."""
    directory.mkdir(mode=0o700)
    for file, data in makemedia.make(admin, NS, name).items():
        (directory / file).write_bytes(data)
    return directory / medium.SITE_CONFIG_NAME


def _journal(state_dir: pathlib.Path, site_config: pathlib.Path) -> journal.Journal:
    jour = journal.Journal(state_dir / "status.json", clock.SystemClock())
    jour.begin_run(site_name="s", site_fingerprint="f", order=STEPS, mode="node", site_path=str(site_config))
    return jour


def _step(jour: journal.Journal, name: str, warnings: tuple[str, ...] = ()) -> None:
    jour.start_step(name, "fp")
    jour.finish_step(name, base.StepOutcome(warnings=warnings))


def test_the_report_is_bounded_redacted_and_holds_no_site_config(tmp_path: pathlib.Path) -> None:
    redact.register_secret("pa55w0rd-of-the-site")
    jour = _journal(tmp_path, tmp_path / "site-config.yaml")
    many = tuple(f"warning {i}: token pa55w0rd-of-the-site " + "x" * 3000 for i in range(50))
    _step(jour, "network", many)
    jour.start_step("kubelet", "fp")
    jour.fail_step("kubelet", errors.TemporaryError("kubelet failed with pa55w0rd-of-the-site", hint="reboot"))
    jour.end_run(journal.RunState.FAILED, errors.TemporaryError("kubelet failed"))
    report = hubreport.snapshot(jour.doc, digest="sha256:" + "0" * 64)
    text = hubreport.canonical(report).decode()
    assert "pa55w0rd-of-the-site" not in text
    assert len(report["warnings"]) == hubreport.MAX_WARNINGS
    assert all(len(w) <= hubreport.MAX_TEXT for w in report["warnings"])
    assert report["failure"]["step"] == "kubelet" and report["failure"]["hint"] == "reboot"
    assert (report["runState"], report["step"], report["stepsDone"], report["exitCode"]) == ("failed", "kubelet", 1, 75)
    assert len(text) < 64 * 1024
    assert set(report) == set(site.agent_schema()["properties"])


def test_a_signed_report_verifies_only_unchanged_with_its_key() -> None:
    report = {"runState": "done", "siteConfigDigest": "sha256:1"}
    signature = hubreport.sign(b"k" * 32, NS, "store-1", report)
    assert hubreport.verify(b"k" * 32, NS, "store-1", report, signature)
    assert not hubreport.verify(b"k" * 32, NS, "store-1", {**report, "runState": "failed"}, signature)
    assert not hubreport.verify(b"k" * 32, NS, "store-2", report, signature)
    assert not hubreport.verify(b"j" * 32, NS, "store-1", report, signature)


def test_the_reporting_kubeconfig_names_the_site_and_its_key(tmp_path: pathlib.Path) -> None:
    text = credentials.kubeconfig(credentials.Hub("https://hub:6443", b"CA"), NS, "store-1", "tok-123", b"k" * 32)
    path = tmp_path / medium.HUB_FILE
    path.write_text(text)
    target = hubreport.target_from(path)
    assert (target.namespace, target.name, target.key) == (NS, "store-1", b"k" * 32)
    assert target.path == f"/apis/fleet.snoreloc.io/v1alpha1/namespaces/{NS}/sites/store-1/status"
    assert "tok-123" not in redact.redact(f"token tok-123 {text}")


def test_reports_land_in_the_sites_status_once_the_network_is_committed(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    digest = ready_site(admin, "store-1")["status"]["media"]["digest"]
    site_config = _medium(admin, "store-1", tmp_path / "stick")
    jour = _journal(tmp_path, site_config)
    reporter = hubreport.Reporter(jour.path, clock.SystemClock(), FAST).start()
    try:
        jour.start_step("network", "fp")
        reporter.kick()
        time.sleep(0.5)
        assert get_site(admin, "store-1")["status"].get(site.STATUS_AGENT) is None  # not before the commit
        jour.finish_step("network", base.StepOutcome())
        reporter.kick()
        wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
        for name in STEPS[1:]:
            _step(jour, name)
            reporter.kick()
        jour.end_run(journal.RunState.DONE)
    finally:
        reporter.finish()
    agent = wait_phase(admin, "store-1", site.Phase.RELOCATED)["status"][site.STATUS_AGENT]
    assert (agent["runState"], agent["siteConfigDigest"], agent["stepsDone"]) == ("done", digest, 4)
    assert agent["source"] == "node" and agent["agentVersion"]
    assert reporter.stopped_reason == ""


@pytest.mark.hubsimonly  # the hub's injected 409
def test_a_conflicting_write_is_retried(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    ready_site(admin, "store-1")
    jour = _journal(tmp_path, _medium(admin, "store-1", tmp_path / "stick"))
    _step(jour, "network")
    hub.faults.conflict_next(f"{site.PLURAL}.{site.GROUP}", "store-1", NS)
    reporter = hubreport.Reporter(jour.path, clock.SystemClock(), FAST).start()
    reporter.kick()
    wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
    reporter.finish()
    assert hub.faults.fired[0].startswith("409 patch") and reporter.stopped_reason == ""


def test_a_refused_token_stops_the_reporter_with_one_line(
    hub: HubSimulator,
    admin: kube.Client,
    controller: operator.Controller,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("store-1", "store-2"):
        admin.create(SITES, site_object(name))
        wait_phase(admin, name, site.Phase.READY)
    site_config = _medium(admin, "store-1", tmp_path / "stick")
    other = makemedia.make(admin, NS, "store-2")[medium.HUB_FILE]  # store-2's token, naming store-1
    (site_config.parent / medium.HUB_FILE).write_bytes(other.replace(b"site: store-2", b"site: store-1"))
    jour = _journal(tmp_path, site_config)
    _step(jour, "network")
    caplog.set_level(logging.INFO, logger=hubreport.__name__)
    reporter = hubreport.Reporter(jour.path, clock.SystemClock(), FAST).start()
    reporter.kick()
    wait_for("the reporter to stop", lambda: reporter.stopped_reason)
    for name in STEPS[1:]:
        _step(jour, name)
        reporter.kick()
    reporter.finish()
    assert "403" in reporter.stopped_reason
    lines = [r for r in caplog.records if r.name == hubreport.__name__]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert get_site(admin, "store-1")["status"].get(site.STATUS_AGENT) is None
    assert reporter.sends == 0


def test_an_unreachable_hub_costs_the_run_at_most_the_final_bound(tmp_path: pathlib.Path) -> None:
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / medium.SITE_CONFIG_NAME).write_text("apiVersion: snoreloc.io/v1alpha1\n")
    hub = credentials.Hub("https://127.0.0.1:9", b"")  # nothing listens on the discard port
    (stick / medium.HUB_FILE).write_text(credentials.kubeconfig(hub, NS, "store-1", "t", b"k" * 32))
    jour = _journal(tmp_path, stick / medium.SITE_CONFIG_NAME)
    _step(jour, "network")
    settings = hubreport.Settings(debounce=0.05, final=1.0, backoff_initial=0.2, backoff_max=0.5)
    reporter = hubreport.Reporter(jour.path, clock.SystemClock(), settings).start()
    started = time.monotonic()
    for name in STEPS[1:]:
        _step(jour, name)
        reporter.kick()  # never blocks
    assert time.monotonic() - started < 0.5
    jour.end_run(journal.RunState.DONE)
    ended = time.monotonic()
    reporter.finish()
    assert time.monotonic() - ended < 0.5, "a refused connection costs the end of the run nothing"
    assert reporter.sends == 0 and reporter.stopped_reason == ""


def test_a_medium_without_a_hub_reports_nothing(tmp_path: pathlib.Path) -> None:
    (tmp_path / medium.SITE_CONFIG_NAME).write_text("apiVersion: snoreloc.io/v1alpha1\n")
    jour = _journal(tmp_path, tmp_path / medium.SITE_CONFIG_NAME)
    _step(jour, "network")
    reporter = hubreport.Reporter(jour.path, clock.SystemClock(), FAST).start()
    reporter.kick()
    wait_for("the reporter to end", lambda: reporter.stopped_reason)
    reporter.finish()
    assert reporter.stopped_reason == "this medium names no hub" and reporter.sends == 0


@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ({"httpsProxy": "http://proxy.store:3128"}, "http://proxy.store:3128"),
        ({"httpsProxy": "http://proxy.store:3128", "noProxy": [".example.com"]}, None),
        ({"httpsProxy": "http://proxy.store:3128", "noProxy": ["hub.example.com"]}, None),
        ({}, None),
    ],
)
def test_the_node_reaches_the_hub_through_the_sites_proxy(
    tmp_path: pathlib.Path, proxy: dict[str, Any], expected: str | None
) -> None:
    hub = credentials.Hub("https://hub.example.com:6443", b"CA")
    obj = site_object("store-1", {"domain": "sno.store-1.example.com", "proxy": proxy})
    text = credentials.kubeconfig(hub, NS, "store-1", "t", b"k" * 32, proxy=credentials.proxy_for(obj, hub))
    path = tmp_path / medium.HUB_FILE
    path.write_text(text)
    loaded = kube.Client.from_kubeconfig(str(path), clock=clock.SystemClock())
    try:
        assert loaded._api.configuration.proxy == expected  # what the kubernetes client will dial through
    finally:
        loaded.close()
