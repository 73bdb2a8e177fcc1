"""`fleet report --html`: the page's parts from a known fleet, then the page in a real headless Chromium.

Chromium is Debian's `chromium` (`.ci/run` installs it); where it is missing or cannot start, the browser test
skips and says why. The screenshots stay in the test's tmp dir.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from fleetsites import NOW, fleet, report, site_obj
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate, page

HEADLESS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking")


def _rows() -> list[fleetstate.Row]:
    return [fleetstate.row(obj) for obj in fleet()]


def test_the_page_has_phases_durations_slowest_steps_and_ranked_reasons() -> None:
    html = page.render(_rows(), NOW, title="EMEA fleet")
    assert "<title>EMEA fleet</title>" in html and "12 sites" in html
    assert "<script src" not in html and "<link" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert "5 relocations finished; 1 over the 20-minute budget." in html
    assert re.search(r"<tr><td>settle</td><td class=\"n\">7</td>", html)  # 5 done + 2 failed runs of settle
    reasons = re.findall(r'<tr><td class="n">(\d+)</td><td>([^<]+)</td>', html)
    assert reasons[:2] == [("2", "RunFailed at settle"), ("1", "InvalidSiteConfig at spec.domain")]


def test_each_reported_site_has_its_timeline_from_the_agents_drawer() -> None:
    html = page.render(_rows(), NOW, title="fleet", timelines=3)
    pictured = re.findall(r'<details id="(t-[^"]+)"><summary>', html)
    assert pictured == ["t-fleet-emea-store-0006", "t-fleet-emea-store-0007", "t-fleet-emea-store-0008"]
    assert '<a href="#t-fleet-emea-store-0006">store-0006</a>' in html
    picture = html.split('<details id="t-fleet-emea-store-0006">')[1].split("</details>")[0]
    svg = ET.fromstring(picture[picture.index("<svg") :])
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "store-0006: failed" in texts and "settle" in texts
    assert "#9d1c1c" in picture  # the failed step drawn in the drawer's failure colour


def test_the_histogram_bins_durations_and_draws_the_budget() -> None:
    svg = ET.fromstring(page.histogram([600.0, 650.0, 1500.0]))
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert "10-11 min: 2" in titles and "25-26 min: 1" in titles
    assert any(t.text == "budget 20 min" for t in svg.iter("{http://www.w3.org/2000/svg}text"))


def test_messages_from_nodes_are_escaped() -> None:
    agent = report("failed", reported=NOW, upto=2, failed_step="kubelet-start")
    agent["todo"] = "<img src=x onerror=alert(1)>"
    obj = site_obj("store-0099", site.Phase.FAILED, reason=site.Reason.RUN_FAILED, agent=agent)
    html = page.render([fleetstate.row(obj)], NOW, title="x")
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def _chromium(url: str, shot: pathlib.Path, size: str = "1200,1600") -> str:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    profile = shot.parent / f"profile-{shot.stem}"
    argv = [binary, *HEADLESS, f"--user-data-dir={profile}", f"--screenshot={shot}", f"--window-size={size}"]
    result = subprocess.run([*argv, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0 or not shot.exists():
        pytest.skip(f"chromium cannot start here (exit {result.returncode}): {result.stderr[-300:]}")
    return result.stdout


def test_the_page_in_a_real_browser_opens_a_sites_timeline_from_its_link(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "fleet.html"
    target.write_text(page.render(_rows(), NOW, title="EMEA fleet"))
    dom = _chromium(target.as_uri(), tmp_path / "fleet.png")
    assert "Failure reasons, ranked" in dom and "RunFailed at settle" in dom
    assert (tmp_path / "fleet.png").stat().st_size > 20_000  # a drawn page, not a blank one
    opened = _chromium(f"{target.as_uri()}#t-fleet-emea-store-0006", tmp_path / "timeline.png", "1200,2800")
    details = re.search(r'<details id="t-fleet-emea-store-0006"([^>]*)>', opened)
    assert details is not None and "open" in details.group(1)  # the link's target opened, by the page's script
    closed = re.search(r'<details id="t-fleet-emea-store-0007"([^>]*)>', opened)
    assert closed is not None and "open" not in closed.group(1)
