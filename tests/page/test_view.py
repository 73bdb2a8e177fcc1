"""What people look at, from the journal: the timeline's rollouts and waits, the critical chain, the technician's
line, the page's HTML (escaped, redacted, no script), and the progressPage block of the site-config."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from snoreloc import errors, redact, waits
from snoreloc.adapters import clock
from snoreloc.cli import main as cli
from snoreloc.engine import intervals, journal, node, page, timeline, view
from snoreloc.siteconfig import loader

T0 = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _observe(doc: dict[str, Any], name: str, busy: bool, since: datetime) -> bool:
    log = doc.setdefault(intervals.ROLLOUTS, [])
    written = intervals.when(doc["rollouts"].get(name))
    return intervals.observe(log, name, busy, since, run_started=at(0), written=written)


def _facts(doc: dict[str, Any]) -> view.RunFacts:
    return view.facts(journal.Document.from_storage(doc))


def _doc(**extra: Any) -> dict[str, Any]:
    return {"run": {"started": at(0).isoformat()}, "rollouts": {}, "steps": {}, "order": [], **extra}


class TestRolloutLog:
    def test_seen_start_and_end_make_one_interval(self) -> None:
        doc = _doc()
        assert _observe(doc, "kube-apiserver", True, at(10))
        assert not _observe(doc, "kube-apiserver", True, at(10)), "the same reading twice changes nothing"
        assert _observe(doc, "kube-apiserver", False, at(250))
        assert not _observe(doc, "kube-apiserver", False, at(250))
        [entry] = doc[intervals.ROLLOUTS]
        assert (entry["started"], entry["finished"], entry["start_seen"]) == (
            at(10).isoformat(timespec="milliseconds"),
            at(250).isoformat(timespec="milliseconds"),
            True,
        )

    def test_an_unseen_start_is_our_write(self) -> None:
        doc = _doc(rollouts={"ingress": at(5).isoformat()})
        assert _observe(doc, "ingress", False, at(40))
        [entry] = doc[intervals.ROLLOUTS]
        assert entry["started"].startswith(at(5).isoformat()[:19]) and not entry["start_seen"]

    def test_transitions_before_the_run_or_without_our_write_are_not_rollouts(self) -> None:
        doc = _doc()
        assert not _observe(doc, "dns", True, at(-3600))
        assert not _observe(doc, "dns", False, at(30)), "no open interval and no write of ours"
        assert doc.get(intervals.ROLLOUTS, []) == []

    def test_the_journal_keeps_them_and_a_new_run_forgets_them(self, tmp_path: pathlib.Path) -> None:
        fake = clock.FakeClock()
        jour = journal.Journal(tmp_path / "status.json", fake)
        jour.begin_run(site_name="s", site_fingerprint="f", order=["settle"], mode="node")
        jour.observe("console", True, fake.now())
        fake.sleep(30)
        jour.observe("console", False, fake.now())
        saved = json.loads((tmp_path / "status.json").read_text())
        assert [e["name"] for e in saved[intervals.ROLLOUTS]] == ["console"]
        assert [e["name"] for e in journal.read(tmp_path / "status.json").rollout_log] == ["console"]
        jour.begin_run(site_name="s", site_fingerprint="f", order=["settle"], mode="node")
        assert jour.doc.rollout_log == []


def test_a_bounded_wait_is_journalled_with_its_step(tmp_path: pathlib.Path) -> None:
    fake = clock.FakeClock()
    jour = journal.Journal(tmp_path / "status.json", fake)
    jour.begin_run(site_name="s", site_fingerprint="f", order=["api"], mode="node")
    answers = iter([None, None, None, True])
    unsubscribe = waits.subscribe(jour.on_wait)
    try:
        waits.until(lambda: next(answers), waits.Wait("api", "the API", budget=60, interval=5), fake)
    finally:
        unsubscribe()
    [entry] = json.loads((tmp_path / "status.json").read_text())[intervals.WAITS]
    assert (entry["step"], entry["what"], entry["budget"]) == ("api", "the API", 60)
    shown = view.timeline_of(view.facts(jour.doc))
    assert [(w.step, round(w.end - w.start)) for w in shown.waits] == [("api", 15)]


def _finished_run() -> dict[str, Any]:
    steps = {
        "domain": {"state": "done", "started": at(1).isoformat(), "finished": at(2).isoformat()},
        "settle": {"state": "done", "started": at(2).isoformat(), "finished": at(29).isoformat()},
        "routes": {"state": "done", "started": at(29).isoformat(), "finished": at(30).isoformat()},
    }
    log = [
        {"name": "ingress", "started": at(2).isoformat(), "finished": at(9).isoformat(), "start_seen": True},
        {"name": "kube-apiserver", "started": at(2).isoformat(), "finished": at(28).isoformat(), "start_seen": True},
    ]
    doc = _doc(steps=steps, order=list(steps), state="done", site_config={"name": "store-1"})
    doc["run"]["finished"] = at(30).isoformat()
    doc[intervals.ROLLOUTS] = log
    doc[intervals.WAITS] = [
        {
            "step": "settle",
            "what": "the cluster",
            "budget": 60,
            "started": at(2).isoformat(),
            "finished": at(29).isoformat(),
        }
    ]
    return doc


def test_the_long_pole_is_the_critical_chain_and_the_svg_draws_it() -> None:
    shown = view.timeline_of(_facts(_finished_run()))
    assert shown.critical_chain == ["rollout: kube-apiserver"]
    assert shown.end == 30.0
    root = ET.fromstring(timeline.svg(shown))
    kinds = [e.get("class") for e in root.iter(f"{SVG}rect") if e.get("class")]
    assert kinds.count("step") == 3 and kinds.count("rollout") == 2 and kinds.count("wait") == 1
    fills = {e.findtext(f"{SVG}title", "").rsplit(": ", 1)[0]: e.get("fill") for e in root.iter(f"{SVG}rect")}
    assert fills["rollout: kube-apiserver"] == timeline.COLOURS["critical"]
    assert fills["rollout: ingress"] == timeline.COLOURS["rollout"]


def test_analyze_writes_the_svg(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "status.json").write_text(json.dumps(_finished_run()))
    out = tmp_path / "t.svg"
    assert cli.main(["analyze", "--state-dir", str(state), "--svg", str(out)]) == 0
    assert "rollout: kube-apiserver" in out.read_text()
    assert "the run waited for: rollout: kube-apiserver" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("state", "step", "code", "expected"),
    [
        ("running", "", None, "Wait: the relocation is running"),
        ("failed", "site-config", 75, "Re-insert the stick labelled relocation-config"),
        ("failed", "network", 65, "Re-insert the stick labelled relocation-config"),
        ("failed", "settle", 75, "run `snoreloc run` to resume; if it fails again, call support with the bundle at"),
        ("interrupted", "domain", 70, "Call support with the bundle at /var/lib/snoreloc/snoreloc-logs.tar.gz"),
        ("interrupted", "domain", None, "Reboot the node or run `snoreloc run` to resume"),
        ("done", "", None, "Nothing to do: the relocation is done."),
    ],
)
def test_one_line_says_what_to_do_now(state: str, step: str, code: int | None, expected: str) -> None:
    assert expected in view.todo(state, step=step, exit_code=code)


def test_status_says_what_to_do_and_where_the_page_is(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    doc = _finished_run()
    doc.update(state="failed", error={"message": "boom", "hint": errors.SnorelocError.default_hint, "exit_code": 70})
    doc["steps"]["routes"]["state"] = "failed"
    state.mkdir()
    (state / "status.json").write_text(json.dumps(doc))
    remove = view.publish_page(state, "http://10.0.0.5:8090/")
    assert cli.main(["status", "--state-dir", str(state)]) == 1
    out = capsys.readouterr().out
    assert "now: Call support with the bundle at" in out and "page: http://10.0.0.5:8090/" in out
    remove()
    cli.main(["status", "--state-dir", str(state)])
    assert "page:" not in capsys.readouterr().out


def test_page_html_is_escaped_redacted_and_scriptless() -> None:
    redact.register_secret("s3cr3t-token-value")
    try:
        doc = _finished_run()
        doc["steps"]["settle"]["warnings"] = ["<script>alert(1)</script> token s3cr3t-token-value leaked"]
        shown = view.progress(_facts(doc), console_url="https://console.example")
        html = page.render(shown, timeline.svg(view.timeline_of(_facts(doc))))
    finally:
        redact.forget_secrets()
    assert ("s3cr3t-token-value" not in html and redact.MASK in html) or "&lt;redacted&gt;" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "name='viewport'" in html and "https://console.example" in html


def test_the_current_wait_shows_elapsed_and_budget() -> None:
    doc = _doc(state="running", steps={"settle": {"state": "running", "started": at(0).isoformat()}}, order=["settle"])
    wait = waits.Waiting("settle", "the cluster to settle", 1800.0, at(0), 0.0, "kube-apiserver: Progressing=True")
    shown = view.progress(_facts(doc), waiting=wait, now=at(125))
    html = page.render(shown, "")
    assert "Waiting in <b>settle</b> for the cluster to settle: 2m 05s of at most 30m 00s" in html
    assert "kube-apiserver: Progressing=True" in html and "http-equiv='refresh'" in html


class TestSiteConfigBlock:
    def _write(self, tmp_path: pathlib.Path, block: str) -> pathlib.Path:
        path = tmp_path / "site.yaml"
        body = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: s1\n"
        body += "spec:\n  domain: a.example.com\n"
        path.write_text(body + block)
        return path

    def test_defaults_and_overrides(self, tmp_path: pathlib.Path) -> None:
        assert loader.load(str(self._write(tmp_path, ""))).progress_page == page.model.ProgressPage(True, 8090, 15)
        block = "  progressPage:\n    enabled: false\n    port: 8443\n    keepMinutes: 0\n"
        assert loader.load(str(self._write(tmp_path, block))).progress_page == page.model.ProgressPage(False, 8443, 0)

    @pytest.mark.parametrize("port", [6443, 8080, 9100, 10250, 22623, 30080])
    def test_a_port_openshift_uses_is_refused_at_validate(
        self, tmp_path: pathlib.Path, port: int, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = self._write(tmp_path, f"  progressPage:\n    port: {port}\n")
        assert cli.main(["validate", str(path)]) == errors.ExitCode.BAD_CONFIG
        out = capsys.readouterr()
        assert "spec.progressPage.port" in out.err and "used by OpenShift" in out.err

    def test_privileged_ports_are_refused_by_the_schema(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = self._write(tmp_path, "  progressPage:\n    port: 443\n")
        assert cli.main(["validate", str(path)]) == errors.ExitCode.BAD_CONFIG
        assert "spec.progressPage.port: must be at least 1024" in capsys.readouterr().err


def test_the_page_address_is_the_nodes_first_static_site_address() -> None:
    example = loader.load(str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "site-config.yaml"))
    assert example.progress_page == page.model.ProgressPage(True, 8090, 15)
    assert page.url(example, "0.0.0.0", 8090) == "http://10.41.20.10:8090/"
    assert page.url(example, "127.0.0.1", 41234) == "http://127.0.0.1:41234/"


def test_the_process_lingers_while_the_page_shows_the_outcome_then_ends() -> None:
    run = _facts(_finished_run())
    served = page.PageServer(("127.0.0.1", 0), lambda: (view.progress(run), view.timeline_of(run)))
    served.start().finish(0.3)
    started = datetime.now(UTC)
    node.linger([served])
    assert served.wait(0) and (datetime.now(UTC) - started).total_seconds() < 5
