"""`spec.extraManifests` offline: parsed into the model in order, and every document the cluster could never take
refused by `validate` with the site-config line, the file and the document."""

from __future__ import annotations

import datetime as dt
import pathlib

import pytest

from snoreloc import redact
from snoreloc.siteconfig import loader

HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
HEAD += "  domain: sno1.site.example.com\n"
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  a: '1'\n"
SECRET_VALUE = "s1te-Passw0rd-0412"


def _validate(tmp_path: pathlib.Path, field: str, manifests: dict[str, str]) -> loader.Report:
    for name, text in manifests.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + f"  extraManifests: {field}\n")
    return loader.validate(str(path), now=dt.datetime.now(dt.UTC))


def _messages(report: loader.Report) -> str:
    return "\n".join(p.render() for p in report.problems)


def test_a_directory_is_read_in_name_order_with_every_document(tmp_path: pathlib.Path) -> None:
    two = CONFIGMAP.format(name="b") + "---\n" + CONFIGMAP.format(name="c")
    files = {"m/20-two.yaml": two, "m/10-one.json": '{"apiVersion": "v1", "kind": "Namespace", '
             '"metadata": {"name": "site-apps"}}', "m/notes.txt": "ignored"}  # fmt: skip
    report = _validate(tmp_path, "{directory: m}", files)
    assert report.valid, report.problems
    assert report.config is not None
    found = [(m.source, m.index, m.line, m.label) for m in report.config.extra_manifests]
    assert found == [
        ("m/10-one.json", 0, 1, "Namespace site-apps"),
        ("m/20-two.yaml", 0, 1, "ConfigMap default/b"),
        ("m/20-two.yaml", 1, 9, "ConfigMap default/c"),
    ]


def test_a_list_of_files_keeps_its_order(tmp_path: pathlib.Path) -> None:
    files = {"z.yaml": CONFIGMAP.format(name="z"), "a.yaml": CONFIGMAP.format(name="a")}
    report = _validate(tmp_path, "{files: [z.yaml, a.yaml]}", files)
    assert report.config is not None
    assert [m.name for m in report.config.extra_manifests] == ["z", "a"]


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("a: [\n", "bad.yaml: line 2: invalid YAML"),
        ("- just\n- a list\n", "bad.yaml document 1 (line 1): is not an object"),
        ("kind: ConfigMap\nmetadata: {name: x, namespace: default}\n", "apiVersion is missing"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-, namespace: d}\n", "metadata.name is missing"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "ConfigMap is namespaced: give metadata.namespace"),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, namespace: y}\n", "cluster-scoped: remove"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: d}\n", "metadata.name must be"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: d}\nmetadata: {}\n", "duplicate key"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: d}\ndata: !!binary aGk=\n",
            "unsupported tag",
        ),
        ("", "holds no document"),
    ],
)
def test_a_manifest_the_cluster_could_never_take_is_refused_naming_file_and_document(
    tmp_path: pathlib.Path, text: str, wanted: str
) -> None:
    report = _validate(
        tmp_path, "{files: [ok.yaml, bad.yaml]}", {"ok.yaml": CONFIGMAP.format(name="a"), "bad.yaml": text}
    )
    assert not report.valid
    assert wanted in _messages(report)
    assert report.problems[0].path == "spec.extraManifests.files[1]"
    assert report.problems[0].line == 7


def test_the_same_object_twice_is_refused_naming_both_places(tmp_path: pathlib.Path) -> None:
    files = {"m/a.yaml": CONFIGMAP.format(name="x"), "m/b.yaml": CONFIGMAP.format(name="x")}
    report = _validate(tmp_path, "{directory: m}", files)
    assert "m/b.yaml document 1 (line 1): ConfigMap default/x is also given by m/a.yaml document 1" in _messages(report)


@pytest.mark.parametrize(
    "field",
    ["{directory: missing}", "{directory: ../elsewhere}", "{files: [/etc/passwd]}", "{directory: empty}"],
)
def test_an_unusable_directory_or_file_is_refused(tmp_path: pathlib.Path, field: str) -> None:
    (tmp_path / "empty").mkdir()
    report = _validate(tmp_path, field, {})
    assert not report.valid
    assert report.problems[0].path.startswith("spec.extraManifests")


def test_a_secret_outside_a_secret_manifest_is_refused_without_showing_it(tmp_path: pathlib.Path) -> None:
    leaky = CONFIGMAP.format(name="leaky") + f"  password: {SECRET_VALUE}\n"
    report = _validate(tmp_path, "{files: [leaky.yaml]}", {"leaky.yaml": leaky})
    text = _messages(report)
    assert "looks like a secret" in text and "put it in a Secret manifest" in text
    assert SECRET_VALUE not in text


def test_a_secret_manifest_is_accepted_and_its_values_are_registered_for_redaction(tmp_path: pathlib.Path) -> None:
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\n"
    secret += f"stringData:\n  site-key: {SECRET_VALUE}\n"
    report = _validate(tmp_path, "{files: [secret.yaml]}", {"secret.yaml": secret})
    assert report.valid, report.problems
    assert SECRET_VALUE not in redact.redact(f"a log line with {SECRET_VALUE} in it")


def test_an_alias_bomb_is_refused_quickly(tmp_path: pathlib.Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    bomb += "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    report = _validate(tmp_path, "{files: [bomb.yaml]}", {"bomb.yaml": bomb})
    assert "alias" in _messages(report)
