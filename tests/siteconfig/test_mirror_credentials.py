"""A replace-mode pull secret becomes the cluster's only one: mirrors it has no credentials for are warned about at
validate time (no cluster needed), and the warning names the mirror's line."""

from __future__ import annotations

import base64
import json
import pathlib

import pytest

from snoreloc.cli import main as cli
from snoreloc.siteconfig import loader

AUTH = base64.b64encode(b"site-user:site-pass-0123").decode()


def site(tmp_path: pathlib.Path, registry: str, mode: str) -> pathlib.Path:
    secret = json.dumps({"auths": {registry: {"auth": AUTH}}})
    path = tmp_path / "site-config.yaml"
    path.write_text(
        "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata: {name: s1}\nspec:\n"
        "  domain: s1.example.com\n"
        f"  pullSecret: {{json: '{secret}', mode: {mode}}}\n"
        "  imageDigestMirrors:\n"
        "    - source: quay.io/openshift-release-dev\n"
        "      mirrors: [mirror.site.example.com:5000/ocp]\n"
    )
    return path


@pytest.mark.parametrize(
    ("registry", "mode", "warned"),
    [
        ("other.example.com", "replace", True),
        ("mirror.site.example.com:5000", "replace", False),
        ("mirror.site.example.com:5000/ocp", "replace", False),
        ("mirror.site.example.com", "replace", True),  # a port is part of the registry's name
        ("other.example.com", "merge", False),  # the cluster's own credentials stay
    ],
)
def test_mirrors_without_credentials_in_a_replacing_pull_secret_are_warned(
    tmp_path: pathlib.Path, registry: str, mode: str, warned: bool
) -> None:
    report = loader.validate(str(site(tmp_path, registry, mode)))
    assert report.problems == ()
    messages = [w.render() for w in report.warnings]
    assert any("no credentials for mirror.site.example.com:5000" in m for m in messages) == warned, messages


def test_validate_prints_the_warning_with_its_line_and_exits_0(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["validate", str(site(tmp_path, "other.example.com", "replace"))]) == 0
    err = capsys.readouterr().err
    assert "warning: spec.imageDigestMirrors[0].mirrors[0]: the pull secret (mode replace) has no credentials" in err
    assert AUTH not in err
