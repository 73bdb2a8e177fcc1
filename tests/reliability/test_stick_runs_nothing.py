"""Nothing on a stick runs (issue 30), by class: every way a reporting kubeconfig can make the kubernetes client run
a command or read a file outside the medium, at every place one is read.

The variants (`HOSTILE`) are the fleet's own reporting kubeconfig (`credentials.kubeconfig`) with one field added: a
user's `exec` plugin (a command that would create a marker file), an `auth-provider`, and each file reference
(`client-certificate`, `client-key`, `tokenFile`, a cluster's `certificate-authority`) as an absolute path, a path
out of the medium, and a link in the medium to a file outside. Each is refused, naming the field, by the node (no
report, a warning), by `snoreloc validate` beside the site-config (a warning) and by `snoreloc make-media
--hub-report` (exit 65, nothing written); the marker is never created. Inline credentials and a relative file inside
the medium pass on the node. A control shows the hazard is real: the plain kubernetes client runs the command.
"""

from __future__ import annotations

import contextlib
import logging
import pathlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes import config as k8s_config
from snoreloc_fleet.hub import credentials

from snoreloc.adapters import clock
from snoreloc.cli import main
from snoreloc.engine import hubreport, journal
from snoreloc.siteconfig import medium
from snoreloc.steps import base

SITE_CONFIG = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata: {name: store-042}\n"
SITE_CONFIG += "spec:\n  domain: store042.example.com\n"
USER, CLUSTER = ("users", 0, "user"), ("clusters", 0, "cluster")


def _exec(marker: pathlib.Path) -> dict[str, Any]:
    return {"apiVersion": "client.authentication.k8s.io/v1", "command": "touch", "args": [str(marker)]}


def _auth_provider(marker: pathlib.Path) -> dict[str, Any]:
    return {"name": "oidc", "config": {"cmd-path": "touch", "cmd-args": str(marker), "idp-issuer-url": "https://x"}}


Value = Callable[[pathlib.Path, pathlib.Path], Any]  # (the medium's directory, the marker) -> the field's value


@dataclass(frozen=True)
class Case:
    where: tuple[Any, ...]
    key: str
    value: Value
    token: bool = True  # keep the inline token (the client prefers it to an exec plugin, so an attack drops it)

    @property
    def field(self) -> str:
        return f"{'users[0].user' if self.where == USER else 'clusters[0].cluster'}.{self.key}"


def _link_out(medium_dir: pathlib.Path) -> str:
    (medium_dir / "hub.pem").symlink_to("/etc/hostname")
    return "hub.pem"


def _file_cases() -> dict[str, Case]:
    cases = {}
    for where, key in ((USER, "client-certificate"), (USER, "client-key"), (USER, "tokenFile")):
        cases |= _file_variants(where, key)
    return cases | _file_variants(CLUSTER, "certificate-authority")


def _file_variants(where: tuple[Any, ...], key: str) -> dict[str, Case]:
    return {
        f"{key}-absolute": Case(where, key, lambda _m, _x: "/etc/hostname"),
        f"{key}-up-and-out": Case(where, key, lambda _m, _x: "../../etc/hostname"),
        f"{key}-link-out": Case(where, key, lambda m, _x: _link_out(m)),
    }


HOSTILE: dict[str, Case] = {
    "exec": Case(USER, "exec", lambda _m, x: _exec(x), token=False),
    "exec-beside-a-token": Case(USER, "exec", lambda _m, x: _exec(x)),
    "auth-provider": Case(USER, "auth-provider", lambda _m, x: _auth_provider(x), token=False),
    **_file_cases(),
}


def _kubeconfig(case: Case | None, medium_dir: pathlib.Path, marker: pathlib.Path) -> str:
    text = credentials.kubeconfig(credentials.Hub("https://127.0.0.1:1", b"CA"), "fleet", "store-042", "t0k", b"k" * 32)
    if case is None:
        return text
    data = yaml.safe_load(text)
    holder = data
    for part in case.where:
        holder = holder[part]
    holder[case.key] = case.value(medium_dir, marker)
    if not case.token:
        del data["users"][0]["user"]["token"]
    return yaml.safe_dump(data, sort_keys=False)


def _field(name: str) -> str:
    return HOSTILE[name].field


def _stick(tmp_path: pathlib.Path, name: str | None) -> tuple[pathlib.Path, pathlib.Path]:
    """A medium's directory (site-config and hub-report.kubeconfig); the marker the command would create."""
    stick = tmp_path / "stick"
    stick.mkdir(mode=0o700)
    marker = pathlib.Path("/tmp") / f"PWNED-{uuid.uuid4().hex}"
    (stick / medium.SITE_CONFIG_NAME).write_text(SITE_CONFIG)
    (stick / medium.HUB_FILE).write_text(_kubeconfig(HOSTILE[name] if name else None, stick, marker))
    return stick, marker


def _report_once(state: pathlib.Path, site_config: pathlib.Path) -> hubreport.Reporter:
    """The node's reporter over a run whose site network is committed: it reads the kubeconfig and would send."""
    state.mkdir(mode=0o700)
    jour = journal.Journal(state / "status.json", clock.SystemClock())
    jour.begin_run(site_name="s", site_fingerprint="f", order=["network"], mode="node", site_path=str(site_config))
    jour.start_step("network", "fp")
    jour.finish_step("network", base.StepOutcome())
    fast = hubreport.Settings(debounce=0.01, final=5.0, backoff_initial=0.1, backoff_max=0.2)
    reporter = hubreport.Reporter(state / "status.json", clock.SystemClock(), fast).start()
    reporter.kick()
    reporter.finish()
    return reporter


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_node_refuses_it_names_the_field_and_runs_nothing(
    name: str, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    stick, marker = _stick(tmp_path, name)
    with pytest.raises(ValueError) as refused:
        hubreport.target_from(stick / medium.HUB_FILE)
    assert str(refused.value).startswith(f"{medium.HUB_FILE}: {_field(name)} (line ")
    with caplog.at_level(logging.WARNING):
        reporter = _report_once(tmp_path / "state", stick / medium.SITE_CONFIG_NAME)
    assert reporter.stopped_reason == "this medium names no hub" and reporter.sends == 0
    assert any(_field(name) in record.getMessage() for record in caplog.records), caplog.text
    assert "t0k" not in caplog.text
    assert not marker.exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_validate_warns_with_the_field(name: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    stick, marker = _stick(tmp_path, name)
    assert main.main(["validate", str(stick / medium.SITE_CONFIG_NAME)]) == 0  # the relocation does not need it
    err = capsys.readouterr().err
    assert f"warning: {medium.HUB_FILE}: {_field(name)}:" in err and "will not report" in err
    assert not marker.exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_make_media_exits_65_with_the_field_and_writes_nothing(
    name: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stick, marker = _stick(tmp_path, None)
    given = tmp_path / "given"
    given.mkdir()
    hub = given / "report.kubeconfig"
    hub.write_text(_kubeconfig(HOSTILE[name], stick, marker))
    fat = tmp_path / "site.img"
    argv = ["make-media", str(stick / medium.SITE_CONFIG_NAME), "--fat", str(fat), "--hub-report", str(hub)]
    assert main.main(argv) == 65
    err = capsys.readouterr().err
    assert f"error: --hub-report {hub}: {_field(name)} (line " in err and "t0k" not in err
    assert not fat.exists() and not marker.exists()


def test_inline_credentials_and_a_file_inside_the_medium_pass_on_the_node(tmp_path: pathlib.Path) -> None:
    stick, _marker = _stick(tmp_path, None)
    assert hubreport.target_from(stick / medium.HUB_FILE).name == "store-042"  # the fleet's own: inline
    data = yaml.safe_load((stick / medium.HUB_FILE).read_text())
    (stick / "certs").mkdir()
    (stick / "certs/hub-ca.pem").write_text("CA")
    data["clusters"][0]["cluster"]["certificate-authority"] = "certs/hub-ca.pem"
    (stick / medium.HUB_FILE).write_text(yaml.safe_dump(data))
    assert hubreport.target_from(stick / medium.HUB_FILE).namespace == "fleet"


def test_control_the_plain_kubernetes_client_runs_an_exec_plugin(tmp_path: pathlib.Path) -> None:
    """Why the rule exists: loading such a kubeconfig is enough for the client to run the command."""
    stick, marker = _stick(tmp_path, "exec")
    with contextlib.suppress(Exception):  # the client complains (the command prints no credential), after running it
        k8s_config.load_kube_config(config_file=str(stick / medium.HUB_FILE), persist_config=False)  # type: ignore[no-untyped-call]
    assert marker.exists()
    marker.unlink()
