"""`spec.operators`: which ClusterOperators the relocation requires or ignores, validated before any change."""

from __future__ import annotations

import pathlib
import textwrap

from snoreloc.siteconfig import loader, model

HEAD = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata:
  name: site-1
spec:
  domain: sno1.site.example.com
"""


def _write(tmp_path: pathlib.Path, body: str) -> str:
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + textwrap.indent(body, "  "))
    return str(path)


def test_require_and_ignore_become_the_model(tmp_path: pathlib.Path) -> None:
    config = loader.load(_write(tmp_path, "operators:\n  require: [monitoring]\n  ignore: [insights]\n"))
    assert config.operators == model.Operators(require=("monitoring",), ignore=("insights",))


def test_a_core_operator_cannot_be_ignored(tmp_path: pathlib.Path) -> None:
    problems = loader.validate(_write(tmp_path, "operators:\n  ignore: [insights, etcd]\n")).problems
    assert [(p.path, p.line) for p in problems] == [("spec.operators.ignore[1]", 8)]
    assert "core operator" in problems[0].message


def test_one_name_in_both_lists_is_refused(tmp_path: pathlib.Path) -> None:
    problems = loader.validate(_write(tmp_path, "operators:\n  require: [insights]\n  ignore: [insights]\n")).problems
    assert [p.path for p in problems] == ["spec.operators.ignore[0]"]
    assert "also in operators.require" in problems[0].message
