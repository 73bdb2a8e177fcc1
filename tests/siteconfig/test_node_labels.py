"""`spec.nodeLabels` judged by class (seeded, deterministic): keys and values Kubernetes takes pass and become the
model; every class of key or value it refuses (apimachinery's `IsQualifiedName` / `IsValidLabelValue`), the prefixes
Kubernetes keeps, and too many labels are refused by `validate` at the label's field and line, exit 65."""

from __future__ import annotations

import json
import pathlib
import random
import string

import pytest

from snoreloc.cli import main
from snoreloc.siteconfig import loader
from snoreloc.siteconfig.settings import node_labels

HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
HEAD += "  domain: sno1.site.example.com\n  nodeLabels:\n"
LABEL_LINE = HEAD.count("\n") + 1  # the line of the first label
CASES = 40
_ALNUM = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits


def _name(rng: random.Random, size: int) -> str:
    """A label name (or value) of `size` characters Kubernetes takes: alphanumeric ends, `-_.` inside."""
    if size == 1:
        return rng.choice(_ALNUM)
    middle = "".join(rng.choice(_ALNUM + "-_.") for _ in range(size - 2))
    return rng.choice(_ALNUM) + middle + rng.choice(_ALNUM)


def _prefix(rng: random.Random) -> str:
    """A DNS-1123 subdomain outside kubernetes.io and k8s.io."""
    labels = ["".join(rng.choice(_LOWER) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 4))]
    return ".".join([*labels, "example"])


def _valid_key(rng: random.Random) -> str:
    name = _name(rng, rng.randint(1, 63))
    return f"{_prefix(rng)}/{name}" if rng.random() < 0.7 else name


def _validate(labels: dict[str, str]) -> loader.Report:
    body = "".join(f"    {json.dumps(key)}: {json.dumps(value)}\n" for key, value in labels.items())
    return loader.validate_bytes((HEAD + body).encode(), base_dir=".", source="site-config.yaml")


def test_labels_kubernetes_takes_pass_and_become_the_model() -> None:
    rng = random.Random(31)
    for _ in range(CASES):
        labels = {_valid_key(rng): _name(rng, rng.randint(1, 63)) if rng.random() < 0.9 else "" for _ in range(5)}
        report = _validate(labels)
        assert report.valid, [p.render() for p in report.problems]
        assert report.config is not None
        assert report.config.get(node_labels.SETTING).as_dict() == labels


# Each class of key Kubernetes refuses, or that belongs to it, with a generator of such keys.
BAD_KEYS = {
    "two slashes": lambda rng: f"{_prefix(rng)}/a/{_name(rng, 5)}",
    "empty prefix": lambda rng: f"/{_name(rng, 5)}",
    "empty name": lambda rng: f"{_prefix(rng)}/",
    "name too long": lambda rng: _name(rng, 64),
    "name starts badly": lambda rng: rng.choice("-_.") + _name(rng, 5),
    "name ends badly": lambda rng: _name(rng, 5) + rng.choice("-_."),
    "name has a space": lambda rng: f"{_name(rng, 3)} {_name(rng, 3)}",
    "prefix too long": lambda rng: ".".join(["a" * 60] * 5) + "/x",
    "prefix uppercase": lambda rng: f"Site.{_prefix(rng)}/{_name(rng, 4)}",
    "kubernetes.io": lambda rng: f"kubernetes.io/{_name(rng, 6)}",
    "node-role": lambda rng: f"node-role.kubernetes.io/{rng.choice(['master', 'worker', 'infra', _name(rng, 6)])}",
    "under kubernetes.io": lambda rng: f"{rng.choice(['node', 'topology', 'x.y'])}.kubernetes.io/{_name(rng, 6)}",
    "k8s.io": lambda rng: f"{rng.choice(['', 'kubelet.', 'a.b.'])}k8s.io/{_name(rng, 6)}",
}


@pytest.mark.parametrize("kind", sorted(BAD_KEYS))
def test_a_key_of_each_refused_class_is_refused_at_its_line(kind: str) -> None:
    rng = random.Random(kind)
    for _ in range(CASES // 4):
        key = BAD_KEYS[kind](rng)
        labels = {f"ok.example/{_name(rng, 4)}": "v", key: "v"}
        report = _validate(labels)
        wanted = [p for p in report.problems if p.path == f"spec.nodeLabels.{key}"]
        assert wanted and wanted[0].line == LABEL_LINE + 1, (key, [p.render() for p in report.problems])
        assert len(report.problems) == 1, [p.render() for p in report.problems]
        assert node_labels.key_problem(key) is not None


BAD_VALUES = {
    "too long": lambda rng: _name(rng, 64),
    "starts badly": lambda rng: rng.choice("-_.") + _name(rng, 4),
    "has a slash": lambda rng: f"{_name(rng, 3)}/{_name(rng, 3)}",
    "line break": lambda rng: _name(rng, 6) + "\n",
}


@pytest.mark.parametrize("kind", sorted(BAD_VALUES))
def test_a_value_of_each_refused_class_is_refused_at_its_line(kind: str) -> None:
    rng = random.Random(kind)
    for _ in range(CASES // 4):
        key = f"{_prefix(rng)}/{_name(rng, 6)}"
        report = _validate({key: BAD_VALUES[kind](rng)})
        assert [(p.path, p.line) for p in report.problems] == [(f"spec.nodeLabels.{key}", LABEL_LINE)], [
            p.render() for p in report.problems
        ]


def test_more_labels_than_allowed_are_refused() -> None:
    rng = random.Random(33)
    at_most = {f"site.example/{i}-{_name(rng, 3)}": "v" for i in range(node_labels.MAX_NODE_LABELS)}
    assert _validate(at_most).valid
    report = _validate({**at_most, "site.example/one-more": "v"})
    assert [(p.path, p.line) for p in report.problems] == [("spec.nodeLabels", LABEL_LINE - 1)]
    assert str(node_labels.MAX_NODE_LABELS) in report.problems[0].message


def test_validate_exits_65_and_names_the_field(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + '    "node-role.kubernetes.io/worker": ""\n')
    assert main.main(["validate", str(path)]) == 65
    err = capsys.readouterr().err
    assert "error: spec.nodeLabels.node-role.kubernetes.io/worker: is under node-role.kubernetes.io" in err
    assert f"(line {LABEL_LINE}, column 5)" in err and "nothing was changed" in err
