"""The fleet readers' view of Sites: counts by phase and failure reason, silent sites, the re-run list, `why`."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from fleetsites import NOW, fleet, report, site_obj
from fleetsites import iso as fleetsites_iso
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate
from snoreloc_fleet.verbs import status as cli_status
from snoreloc_fleet.verbs import why as cli_why


def _summary(silent_after: float = 900.0) -> tuple[fleetstate.Summary, list[fleetstate.Row]]:
    rows = [fleetstate.row(obj) for obj in fleet()]
    return fleetstate.summarize(rows, NOW, silent_after=silent_after), rows


def test_counts_by_phase_and_failure_reasons_ranked() -> None:
    summary, _ = _summary()
    assert summary.total == 12
    assert summary.by_phase == {
        "Pending": 0,
        "Invalid": 1,
        "Ready": 1,
        "InProgress": 1,
        "Relocated": 5,
        "Failed": 3,
        "Stale": 1,
    }
    assert summary.reasons == [
        ("RunFailed at settle", 2),
        ("InvalidSiteConfig at spec.domain", 1),
        ("RunFailed at api-wait", 1),
        ("Silent at api-wait", 1),
    ]


def test_silent_means_a_run_in_progress_quiet_for_longer_than_the_limit() -> None:
    summary, _ = _summary(silent_after=900.0)
    assert [r.name for r in summary.silent] == ["store-0010"]  # 47 min; the running one spoke 2 min ago
    summary, _ = _summary(silent_after=60.0)
    assert [r.name for r in summary.silent] == ["store-0010", "store-0009"]  # longest silent first
    assert [r.name for r in summary.rerun] == ["store-0006", "store-0007", "store-0008", "store-0010"]


def test_durations_are_the_steps_seconds_of_finished_runs() -> None:
    _, rows = _summary()
    by_name = {r.name: r for r in rows}
    assert by_name["store-0005"].duration == 1500.0
    assert by_name["store-0001"].duration == 700.0
    assert by_name["store-0009"].duration is None and by_name["store-0012"].duration is None


def test_json_and_csv_carry_every_site() -> None:
    summary, rows = _summary()
    document = json.loads(cli_status.to_json(summary, rows, NOW))
    assert document["total"] == 12 and len(document["sites"]) == 12
    assert document["failureReasons"][0] == {"reason": "RunFailed at settle", "count": 2}
    assert [s["name"] for s in document["silent"]] == ["store-0010"]
    assert document["silent"][0]["silentSeconds"] == 47 * 60
    table = list(csv.DictReader(io.StringIO(cli_status.to_csv(rows, NOW))))
    assert len(table) == 12 and tuple(table[0]) == cli_status.CSV_COLUMNS
    assert {r["name"]: r["failure"] for r in table}["store-0008"] == "RunFailed at api-wait"


def test_the_table_says_counts_reasons_silent_and_rerun() -> None:
    summary, _ = _summary()
    text = cli_status.to_table(summary, NOW, "(read in 1 page)")
    assert "12 sites" in text and "  Relocated        5" in text and "Pending" not in text
    assert "     2  RunFailed at settle" in text
    assert "silent for more than 15m: 1" in text and "store-0010" in text
    assert "to re-run (Failed or Stale): 4" in text
    assert "re-insert the stick" in text


def test_why_a_failed_site_gives_the_failure_its_hint_and_what_to_do() -> None:
    obj = site_obj(
        "store-0006",
        site.Phase.FAILED,
        reason=site.Reason.RUN_FAILED,
        agent=report("failed", reported=NOW - dt.timedelta(minutes=50), upto=6, failed_step="settle"),
    )
    text = cli_why.explain(obj, NOW)
    assert text.startswith("fleet-emea/store-0006: Failed (RunFailed)")
    assert "node report: failed, step settle (6/8 done), 50m ago" in text
    assert "failed in settle: settle timed out" in text and "hint: check the node's network" in text
    assert "steps: preflight done 60s" in text
    assert text.rstrip().endswith("do now: re-insert the stick and run `snoreloc run` again")


def test_why_an_invalid_site_lists_its_findings() -> None:
    obj = site_obj(
        "store-0011",
        site.Phase.INVALID,
        reason=site.Reason.INVALID_SITE_CONFIG,
        errors=[{"path": "spec.domain", "line": 3, "message": "has an empty label"}],
    )
    text = cli_why.explain(obj, NOW)
    assert "error: spec.domain: has an empty label (line 3)" in text
    assert "node report: none yet" in text
    assert "do now: fix the site-config" in text


def test_json_is_what_json_dumps_with_indent_one_gives() -> None:
    """The rows are written by the C encoder; the text is `json.dumps(document, indent=1)` of the same document."""
    _, rows = _summary()
    odd = fleetstate.Row("fleet", 'quote"back\\slash', "Failed", reason="Zürich ✓\ttab", todo="line\nbreak")
    for listed in ([*rows, odd], []):  # the second: every list empty
        summary = fleetstate.summarize(listed, NOW, silent_after=900)
        document = {
            "total": summary.total,
            "byPhase": dict(summary.by_phase),
            "failureReasons": [{"reason": r, "count": n} for r, n in summary.reasons],
            "silentAfterSeconds": summary.silent_after,
            "implausibleReports": len(summary.implausible),
            "silent": [cli_status._row_data(r, NOW) for r in summary.silent],
            "rerun": [cli_status._row_data(r, NOW) for r in summary.rerun],
            "sites": [cli_status._row_data(r, NOW) for r in listed],
        }
        assert cli_status.to_json(summary, listed, NOW) == json.dumps(document, indent=1) + "\n"


def test_a_sites_horizon_is_the_nodes_report_else_the_depots_and_implausible_dates_read_as_unknown() -> None:
    depot = {"mustBootBy": "2027-03-01T09:00:00Z"}
    obj = site_obj("store-0300", site.Phase.READY)
    obj["spec"]["shelf"] = depot
    assert fleetstate.row(obj, now=NOW).horizon == site.Horizon(
        dt.datetime(2027, 3, 1, 9, tzinfo=dt.UTC), "", None, site.SHELF_INVENTORY
    )
    agent = report("running", reported=NOW, upto=3)
    agent["shelf"] = {"mustBootBy": "2026-12-01T00:00:00Z", "setBy": "kube-apiserver-to-kubelet-signer",
                      "sealedAt": "2026-01-01T00:00:00Z"}  # fmt: skip
    obj["status"][site.STATUS_AGENT] = agent
    found = fleetstate.row(obj, now=NOW)
    assert found.horizon is not None and found.horizon.source == site.SHELF_REPORTED
    assert fleetstate.days_left(found, NOW) == 6 and found.shelved and not found.implausible
    # nonsense from a node (or an older hub whose schema bounded nothing): unknown, named, the depot's date kept
    for nonsense in ({"mustBootBy": "1970-01-01T00:00:00Z"}, {"mustBootBy": 5}, "soon", {"setBy": "x"}):
        agent["shelf"] = nonsense
        read = fleetstate.row(obj, now=NOW)
        assert read.horizon is not None and read.horizon.source == site.SHELF_INVENTORY, nonsense
        assert "status.agent.shelf" in read.implausible
    agent["shelf"] = {"mustBootBy": "2026-12-01T00:00:00Z", "setBy": "a\x1b[2Jb", "sealedAt": "2027-01-01T00:00:00Z"}
    odd = fleetstate.row(obj, now=NOW).horizon
    assert odd is not None and (odd.set_by, odd.sealed_at) == ("", None), "a control character, a seal after the date"
    obj["status"][site.STATUS_PHASE] = site.Phase.RELOCATED.value
    assert fleetstate.shelf_order([fleetstate.row(obj, now=NOW)]) == [], "a relocated node is off the shelf"


def test_the_shelf_list_and_why_say_the_days_left_soonest_first_and_past_plainly() -> None:
    def shelved(name: str, days: int, phase: site.Phase = site.Phase.READY) -> dict[str, object]:
        obj = site_obj(name, phase)
        obj["spec"]["shelf"] = {"mustBootBy": fleetsites_iso(NOW + dt.timedelta(days=days, hours=1)),
                                "setBy": "kube-apiserver-to-kubelet-signer"}  # fmt: skip
        return obj

    objs = [shelved("store-0401", 30), shelved("store-0402", -3), shelved("store-0403", 5, site.Phase.RELOCATED)]
    rows = [fleetstate.row(o, now=NOW) for o in objs] + [fleetstate.row(site_obj("store-0404", site.Phase.READY))]
    table = cli_status.shelf_text(rows, NOW, "table", "(footer)").splitlines()
    assert table[1].split()[:4] == ["store-0402", "Ready", "2026-11-21", "PAST"]
    assert table[2].split()[:5] == ["store-0401", "Ready", "2026-12-24", "30", "days"]
    assert table[3].startswith("1 sites not yet relocated have no known must-boot-by date")
    lines = list(csv.DictReader(io.StringIO(cli_status.shelf_text(rows, NOW, "csv", ""))))
    assert [(r["name"], r["daysLeft"], r["source"]) for r in lines] == [
        ("store-0402", "-3", "inventory"), ("store-0401", "30", "inventory"),
    ]  # fmt: skip
    why = cli_why.explain(objs[1], NOW)
    assert "PAST its must-boot-by date 2026-11-21 23:00 UTC by 3 days" in why and "re-sealed at the depot" in why
    assert "must boot by 2026-12-24 23:00 UTC: 30 days left (set by kube-apiserver-to-kubelet-signer" in (
        cli_why.explain(objs[0], NOW)
    )
    assert "must boot" not in cli_why.explain(objs[2], NOW), "a relocated node is off the shelf"
