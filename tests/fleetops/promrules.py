"""Prometheus helpers for the fleet's metric tests: scraping served metrics, and `promtool` on the PrometheusRule.

`promtool test rules` (Debian's `prometheus` package; `.ci/run` installs it) is Prometheus' own rule engine: the
alert expressions are evaluated on input series made from real scrapes, never re-implemented here.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import urllib.request
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from snoreloc_fleet.controller import metrics

RULES = pathlib.Path(metrics.__file__).resolve().parents[1] / "deploy" / "prometheusrule.yaml"
Samples = dict[str, float]  # series text (name{labels}) -> value


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def rule() -> dict[str, Any]:
    document = yaml.safe_load(RULES.read_text())
    assert document["apiVersion"] == "monitoring.coreos.com/v1" and document["kind"] == "PrometheusRule"
    return document


def promtool() -> str:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.skip("promtool is not installed (apt-get install prometheus; .ci/run does)")
    return binary


def values(before: float | None, after: float | None, switch: int, total: int) -> str:
    """promtool's expanding notation: `before` for `switch` minutes, then `after` to the end (`_`: absent)."""
    head = "_" if before is None else f"{before:g}+0"
    tail = "_" if after is None else f"{after:g}+0"
    return f"{head}x{switch - 1} {tail}x{total - switch}"


def series(first: Samples, second: Samples, switch: int, total: int) -> list[dict[str, str]]:
    names = sorted(set(first) | set(second))
    return [
        {"series": name.replace("{}", ""), "values": values(first.get(name), second.get(name), switch, total)}
        for name in names
        if name.startswith("snoreloc_fleet_") and not name.endswith("_created{}") and "_created{" not in name
    ]


def promtool_test(tmp_path: pathlib.Path, series: list[dict[str, str]], expected: list[dict[str, Any]]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule()["spec"]["groups"]}))
    check = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    test = tmp_path / "test.yaml"
    test.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": expected}],
            }
        )
    )
    result = subprocess.run([promtool(), "test", "rules", str(test)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def alert(name: str, at: str, alerts: list[tuple[dict[str, str], str]]) -> dict[str, Any]:
    """promtool's expectation: alert `name` at `at` firing once per (labels, $value), annotations filled in."""
    found = next(r for g in rule()["spec"]["groups"] for r in g["rules"] if r["alert"] == name)
    expected = []
    for labels, value in alerts:
        annotations = {
            k: v.replace("{{ $value }}", value).replace("{{ $labels.namespace }}", labels.get("namespace", ""))
            for k, v in found["annotations"].items()
        }
        expected.append({"exp_labels": {**found["labels"], **labels}, "exp_annotations": annotations})
    return {"eval_time": at, "alertname": name, "exp_alerts": expected}
