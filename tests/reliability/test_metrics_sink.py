"""The progress page's `/metrics` by class (issue 30): every hostile string of `test_sinks.HOSTILE` as a step name
in status.json, scraped over HTTP from the page server reading that journal. Each scrape answers 200 with text
prometheus_client's own parser reads back, the step's label carrying no raw control character; before the fix a
lone surrogate made the scrape answer 500 (prometheus_client encodes the exposition as UTF-8)."""

from __future__ import annotations

import json
import pathlib
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import page
from snoreloc.siteconfig import model

from .test_sinks import FORBIDDEN, HOSTILE


def _journal(step: str) -> dict[str, object]:
    running = {"state": "running", "started": "2026-01-01T00:00:01+00:00"}
    return {
        "version": 2,
        "state": "running",
        "order": ["preflight", step],
        "steps": {"preflight": {"state": "done", "duration": 1.0}, step: running},
        "run": {"pid": 1, "started": "2026-01-01T00:00:00+00:00", "finished": None, "mode": "cluster"},
        "rollouts": {},
    }


@pytest.fixture
def served(tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, str]]:
    status = tmp_path / "status.json"
    source = page.Source(status, model.SiteConfig(name="site7", domain="edge7.example.net"), clock_mod.SystemClock())
    server = page.PageServer(("127.0.0.1", 0), source).start()
    yield status, f"http://127.0.0.1:{server.port}/metrics"
    server.stop()
    source.unsubscribe()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_hostile_step_name_scrapes(name: str, served: tuple[pathlib.Path, str]) -> None:
    status, url = served
    step = f"MARK{HOSTILE[name]}"
    status.write_text(json.dumps(_journal(step)))  # ASCII JSON: a lone surrogate as its \\ud800 escape
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode("utf-8")
    assert not FORBIDDEN.search(text), FORBIDDEN.search(text)
    samples = {s.name: s for family in text_string_to_metric_families(text) for s in family.samples}
    shown = samples["snoreloc_run_step_info"].labels["step"]
    assert shown.startswith("MARK") and not FORBIDDEN.search(shown)
    assert samples["snoreloc_run_steps_total"].value == 2
