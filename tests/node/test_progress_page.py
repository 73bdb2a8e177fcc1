"""The progress page during a simulated node run (host on fakes, cluster steps over HTTPS against the simulator),
loaded in a real headless Chromium: what it shows while running and when finished, on a desktop and a phone
viewport, and that no secret from the run's site-config reaches it. Screenshots stay in the test's tmp dir.

Chromium is Debian's `chromium` (installed by `.ci/run`); where it is missing or cannot start, these tests skip
and say why."""

from __future__ import annotations

import base64
import json
import shutil
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from sealed import sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, command, console, fs
from snoreloc.engine import journal, node, paths, runner, timeline, view
from snoreloc.steps import context
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import simulator

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--dump-dom",
)
DESKTOP = "1100,1400"
PHONE = "390,844"  # a phone held upright, in CSS pixels
SLOW = {"seed": "4.16", "speed": 20.0}  # slow enough that settle lasts seconds: time to look at a running run


def _browse(url: str, shot: Path, size: str) -> str:
    """Load `url` in headless Chromium; save a screenshot at `shot`; return the DOM Chromium built."""
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    profile = shot.parent / f"profile-{shot.stem}"
    argv = [binary, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", f"--window-size={size}", url]
    try:
        result = command.SubprocessRunner().run(argv, timeout=120, check=False)
    except errors.SnorelocError as exc:
        pytest.skip(f"chromium cannot start here: {exc.message}")
    if not result.ok or not shot.exists():
        pytest.skip(f"chromium cannot start here (exit {result.returncode}): {result.stderr[-300:]}")
    return result.stdout


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def _until(check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds}s")


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path)


def _secrets(root: fs.HostFS) -> list[str]:
    """The secret values in the run's site-config: the pull secret's auth and the password inside it."""
    auths = json.loads(root.read_text("/etc/snoreloc/pull-secret.json"))["auths"]
    out = []
    for entry in auths.values():
        out.append(entry["auth"])
        out.append(base64.b64decode(entry["auth"]).decode().split(":", 1)[1])
    return out


class _Run:
    """The node flow in a thread, its progress page on a loopback port."""

    def __init__(self, root: fs.HostFS, sim: simulator.Simulator) -> None:
        self.req = node.NodeRequest(
            paths=paths.Paths.under(root.path("/")),
            options=runner.Options(),
            settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
            page_host="127.0.0.1",
            page_port=0,
        )
        self.svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._relocate, daemon=True)

    def _relocate(self) -> None:
        try:
            node.relocate(self.req, self.svc)
        except BaseException as exc:
            self.error = exc

    def __enter__(self) -> _Run:
        self.thread.start()
        _until(lambda: self.svc.pages, 60)
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(120)
        for served in self.svc.pages:
            served.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.svc.pages[0].port}/"


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
@pytest.mark.allow_subprocess
@pytest.mark.parametrize("sim", [SLOW], indirect=True)
def test_page_in_a_browser_while_running_and_when_done(
    root: fs.HostFS, sim: simulator.Simulator, tmp_path: Path
) -> None:
    demo.write_site(root, sim)
    secrets = _secrets(root)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with _Run(root, sim) as run:
        _until(lambda: "<td>settle</td><td class='state-running'>" in _get(run.url), 60)
        running = _browse(run.url, shots / "running.png", DESKTOP)
        run.thread.join(120)
        assert run.error is None, run.error
        done = _browse(run.url, shots / "done-phone.png", PHONE)
        done_desktop = _browse(run.url, shots / "done.png", DESKTOP)

    assert "Relocation of site store-042: running" in running
    assert '<td>settle</td><td class="state-running">running</td>' in running
    assert "Wait: the relocation is running" in running
    assert "Relocation of site store-042: done" in done
    assert "https://console-openshift-console.apps.store042.edge.example.net" in done
    for name in ("network", "kubelet", "api", "preflight", "certificates", "domain", "settle", "final-settle"):
        assert f"<td>{name}</td>" in running and f"<td>{name}</td>" in done
    assert "rollout: kube-apiserver" in done, "the timeline picture is on the page"
    for text in (running, done, done_desktop):
        for secret in secrets:
            assert secret not in text
    assert "Progress page: http://127.0.0.1:" in root.read_text(console.ISSUE_FILE)
    assert all((shots / f"{n}.png").stat().st_size > 5000 for n in ("running", "done-phone", "done"))


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
def test_page_is_read_only_and_stops_after_its_keep_time(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    with _Run(root, sim) as run:
        run.thread.join(120)
        assert run.error is None, run.error
        state_dir = run.req.paths.state_dir
        assert view.page_address(state_dir) == run.url
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            request = urllib.request.Request(run.url, data=b"x", method=method)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 405 and refused.value.headers["Allow"] == "GET, HEAD"
        with urllib.request.urlopen(urllib.request.Request(run.url, method="HEAD"), timeout=10) as head:
            assert head.status == 200 and head.read() == b""
        with pytest.raises(urllib.error.HTTPError) as missing:
            _get(run.url + "status.json")
        assert missing.value.code == 404
        assert "<svg" in _get(run.url + "timeline.svg")
        served = run.svc.pages[0]
        served.finish(0.2)  # the run's own finish set the site-config's keep time; end it sooner
        assert served.wait(10), "the page stops by itself after its keep time"
        with pytest.raises(OSError):  # refused or reset: nothing serves any more
            _get(run.url)
        assert view.page_address(state_dir) == "", "status stops pointing at a page that is gone"


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
def test_timeline_of_a_demo_run_draws_every_step_and_rollout(
    root: fs.HostFS, sim: simulator.Simulator, tmp_path: Path
) -> None:
    demo.write_site(root, sim)
    with _Run(root, sim) as run:
        run.thread.join(120)
        assert run.error is None, run.error
    doc = journal.read(run.req.paths.status)
    picture = timeline.svg(view.timeline_of(view.facts(doc)))
    (tmp_path / "timeline.svg").write_text(picture)

    labels = [t.text for t in ET.fromstring(picture).iter("{http://www.w3.org/2000/svg}text")]
    assert set(doc.order) <= set(labels), "every step has its row"
    rollouts = {label.removeprefix("rollout: ") for label in labels if label and label.startswith("rollout: ")}
    assert {"kube-apiserver", "openshift-apiserver", "ingress", "mcp/master"} <= rollouts
    assert view.timeline_of(view.facts(doc)).critical_chain, "the run waited for at least one rollout"
    assert 'class="rollout"' in picture


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
def test_the_site_config_can_turn_the_page_off(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    site = yaml.safe_load(root.read_text("/etc/snoreloc/site-config.yaml"))
    site["spec"]["progressPage"] = {"enabled": False}
    root.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(site), mode=0o600)
    run = _Run(root, sim)
    run.thread.start()
    run.thread.join(120)

    assert run.error is None, run.error
    assert run.svc.pages == []
    banner = root.read_text(console.ISSUE_FILE)
    assert "relocation done" in banner and "Progress page" not in banner
    assert view.page_address(run.req.paths.state_dir) == ""


def _metrics(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """`/metrics` parsed by prometheus_client's own parser: sample name -> labels -> value."""
    with urllib.request.urlopen(url + "metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    found["_text"] = {(("text", text),): 0.0}
    return found


def _one(found: dict[str, dict[tuple[tuple[str, str], ...], float]], name: str) -> float:
    return found[name][()]


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
@pytest.mark.parametrize("sim", [SLOW], indirect=True)
def test_metrics_follow_the_runs_journal(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    secrets = _secrets(root)
    with _Run(root, sim) as run:
        _until(lambda: "<td>settle</td><td class='state-running'>" in _get(run.url), 60)
        _until(lambda: _one(_metrics(run.url), "snoreloc_run_wait_seconds") > 0, 60)
        running = _metrics(run.url)
        run.thread.join(120)
        assert run.error is None, run.error
        done = _metrics(run.url)
    run_facts = view.facts(journal.read(run.req.paths.status))
    assert run_facts.started is not None and run_facts.finished is not None
    total = len(run_facts.steps)
    assert _one(running, "snoreloc_run_steps_total") == _one(done, "snoreloc_run_steps_total") == total
    assert 0 < _one(running, "snoreloc_run_steps_done") < total
    assert running["snoreloc_run_step_info"] == {(("step", "settle"),): 1.0}
    assert running["snoreloc_run_state"][(("state", "running"),)] == 1.0
    assert _one(running, "snoreloc_run_wait_budget_seconds") >= _one(running, "snoreloc_run_wait_seconds") > 0
    assert _one(running, "snoreloc_run_duration_seconds") > 0
    assert _one(done, "snoreloc_run_steps_done") == sum(1 for s in run_facts.steps if s.state == "done") == total
    assert done["snoreloc_run_state"][(("state", run_facts.state),)] == 1.0
    assert sum(done["snoreloc_run_state"].values()) == 1.0
    assert _one(done, "snoreloc_run_wait_seconds") == 0
    journal_seconds = (run_facts.finished - run_facts.started).total_seconds()
    assert _one(done, "snoreloc_run_duration_seconds") == pytest.approx(journal_seconds, abs=0.01)
    assert _one(done, "snoreloc_run_warnings") == len({w for s in run_facts.steps for w in s.warnings})
    for found in (running, done):
        text = next(iter(found["_text"]))[0][1]
        assert all(secret not in text for secret in secrets)
