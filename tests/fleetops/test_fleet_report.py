"""`fleet report --html`: the page's parts from a known fleet, then the page in a real headless Chromium.

Chromium is Debian's `chromium` (`.ci/run` installs it); where it is missing or cannot start, the browser test
skips and says why. The screenshots stay in the test's tmp dir.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from fleetinputs import site_row
from fleetsites import NOW, fleet, iso, report, site_obj
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate, page

from snoreloc.cli import main as cli

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


# --- what needs the owner comes first; uneventful rows fold ----------------------------------------------------


def _section(html: str, heading_id: str) -> str:
    start = html.index(f'<h2 id="{heading_id}">')
    return html[start : html.index("<h2 ", start + 1)]


def _needs_fleet() -> list[dict[str, Any]]:
    """The fleet of 12, its Done store-0001 with a warning, its Ready store-0012 with a stick whose token expires in
    3 days, 46 more Ready sites without a stick and 3 clean Relocated ones past them."""
    objs = fleet()
    objs[0]["status"][site.STATUS_AGENT]["runState"] = "done-with-warnings"
    objs[0]["status"][site.STATUS_AGENT]["warnings"] = ["removeMirrors[0]: no ImageDigestMirrorSet factory-mirrors"]
    ready = objs[-1]
    ready["metadata"]["annotations"] = {site.MEDIA_REQUESTED: "2026-11-20T10:00:00Z"}
    ready["status"][site.STATUS_CREDENTIAL] = {"expiresAt": iso(NOW + dt.timedelta(days=3))}
    objs += [site_obj(f"zz-ready-{n:02d}", site.Phase.READY, reason=site.Reason.NOT_REQUESTED) for n in range(46)]
    return objs


def test_the_page_opens_with_what_needs_the_owner() -> None:
    html = page.render([fleetstate.row(o) for o in _needs_fleet()], NOW, title="EMEA fleet")
    needs = _section(html, "needs")
    assert html.index('id="needs"') < html.index('id="phases"'), "the owner's list comes before the figures"
    assert "Failed (3)" in needs and "settle timed out" in needs and "api-wait timed out" in needs
    assert "Stale: no report for too long (1)" in needs and "store-0010" in needs and "47m" in needs
    assert "Invalid (1)" in needs and "has an empty label" in needs and "spec.domain" in needs
    assert "Warnings (1)" in needs and "no ImageDigestMirrorSet factory-mirrors" in needs
    assert "Reporting tokens expiring within 14 days" in needs and "store-0012" in needs and "in 3d0h" in needs
    assert "store-0002" not in needs, "a clean relocation needs nobody"
    assert "wall-clock time at a site" in html and "simulated seconds" in html, "the durations say whose clock"


def test_a_calm_fleet_says_nothing_needs_the_owner() -> None:
    calm = [site_obj(f"store-{n}", site.Phase.RELOCATED, reason=site.Reason.DONE) for n in range(3)]
    assert "Nothing needs you" in _section(page.render([fleetstate.row(o) for o in calm], NOW, title="x"), "needs")


def test_46_identical_ready_rows_fold_and_the_relocated_ones_stay_in_view() -> None:
    html = page.render([fleetstate.row(o) for o in _needs_fleet()], NOW, title="x")
    table = _section(html, "sites")
    shown = re.findall(r"<tr><td>(?:<a [^>]+>)?([\w-]+)(?:</a>)?</td><td>fleet-emea</td>", table)
    assert "zz-ready-00" not in shown and len(shown) == 12, shown  # the fleet of 12 and none of the 46
    assert "<summary>46 sites" in table and "NotRequested, nothing to do" in table
    assert shown.index("store-0002") < shown.index("store-0012"), "relocated before ready"
    assert re.search(r"store-0001</a></td>.*?1 warning: removeMirrors\[0\]", table), "Done shows its warnings"


def test_ready_sites_show_their_sticks_and_when_their_tokens_expire() -> None:
    html = page.render([fleetstate.row(o) for o in _needs_fleet()], NOW, title="x")
    sticks = html[html.index('<h2 id="sticks">') :]
    assert "1 of 47 Ready sites have a stick; 46 have none yet" in sticks
    assert "store-0012" in sticks and "2026-11-27 22:00 UTC" in sticks and "in 3d0h" in sticks


def test_an_invalid_rendered_site_names_the_inventory_cell_to_fix(
    tmp_path: pathlib.Path, template_path: pathlib.Path, write_inventory: Callable[..., pathlib.Path]
) -> None:
    """`fleet render --sites` records each inventory-filled field's cell on the Site; the report puts it beside the
    controller's finding."""
    inventory = write_inventory([site_row(1), site_row(2)])
    argv = ["fleet", "render", "--template", str(template_path), "--inventory", str(inventory)]
    assert cli.main([*argv, "--sites", str(tmp_path / "hub")]) == 0
    rendered = list(yaml.safe_load_all((tmp_path / "hub" / "sites.yaml").read_text()))[1]
    rendered["status"] = {
        site.STATUS_PHASE: site.Phase.INVALID.value,
        site.STATUS_REASON: site.Reason.INVALID_SITE_CONFIG.value,
        site.STATUS_VALIDATION: {
            "errors": [
                {"path": "spec.siteConfig.domain", "line": 3, "message": "has an empty label"}
            ]  # the controller names the Site's field
        },
    }
    needs = _section(page.render([fleetstate.row(rendered)], NOW, title="x"), "needs")
    assert "sites.csv line 3, column domain" in needs and "has an empty label" in needs
