"""Every field is read, every schema property has a home in the model, and each list of facts is kept once.

A field that nothing reads is a promise the agent does not keep (`timeouts.networkProbe` was documented and ignored);
these tests make such a field fail the suite instead of reaching a site.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import datetime as dt
import pathlib
import re
import textwrap
from typing import Any

import pytest

from snoreloc import redact
from snoreloc.host import network
from snoreloc.siteconfig import checks, loader, model, registry, schema, semantic, structural
from snoreloc.siteconfig.settings import admin_access, timeouts
from snoreloc.steps.host import site_network

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "snoreloc"
# Where fields are defined and filled in; a read there proves nothing.
NOT_READERS = {SRC / "siteconfig" / "model.py", SRC / "siteconfig" / "loader.py"}

# Schema properties whose model field has another name, or that are how a value is supplied rather than a value.
MAPPED = {
    ("metadata", "name"): "name",
    ("spec", "pullSecret", "file"): "pull_secret.document",
    ("spec", "pullSecret", "inline"): "pull_secret.document",
    ("spec", "pullSecret", "json"): "pull_secret.document",
    ("spec", "imageDigestMirrors"): "image_digest_mirrors",
    ("spec", "imageTagMirrors"): "image_tag_mirrors",
    ("spec", "registryCA"): "registry_ca",
    ("spec", "kubelet", "approveCSRs"): "kubelet.approve_csrs",
}
# Kept out of the model on purpose: free-form data for fleet tooling, which the agent has no use for; and
# `networkAccept`, which only changes what validation refuses (the network checks read it before a model exists).
UNMODELLED = {("metadata", "labels"), ("metadata", "annotations"), ("spec", "networkAccept")}
# Under these, the schema describes someone else's format (nmstate, a certificate source): one model field holds it.
OPAQUE = {
    ("spec", "network"): "network",
    ("spec", "certificates", "api"): "certificates.api",
    ("spec", "certificates", "ingress"): "certificates.ingress",
    ("spec", "proxy", "trustedCA"): "proxy.trusted_ca",
    ("spec", "adminAccess", "clientCA"): "admin_access.client_ca",
    ("spec", "extraManifests"): "extra_manifests",  # a directory or files, read into one tuple of documents
}


# The model class of a field-less setting whose load of nothing is None (its fields are checked on the class).
FIELDLESS_MODELS: dict[str, type[Any]] = {"adminAccess": admin_access.AdminAccess}


def _model_classes() -> list[type[Any]]:
    return [c for c in vars(model).values() if dataclasses.is_dataclass(c) and c.__module__ == model.__name__]


def _attributes_read() -> set[str]:
    read: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path in NOT_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                read.add(node.attr)
            read |= _read_with_get(node)
    return read


def _read_with_get(node: ast.AST) -> set[str]:
    """The field of the setting a `site.get(<module>.SETTING)` call reads (the one way settings are read, issue 31;
    the module imported under its name or as `<name>_setting`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
        return set()
    arg = node.args[0] if node.args else None
    if not (isinstance(arg, ast.Attribute) and arg.attr == "SETTING" and isinstance(arg.value, ast.Name)):
        return set()
    module = arg.value.id.removesuffix("_setting")
    return {e.field for e in registry.SETTINGS if e.field and e.load.__module__.rsplit(".", 1)[-1] == module}


def test_every_model_field_is_read_somewhere() -> None:
    read = _attributes_read()
    unread = [
        f"{cls.__name__}.{f.name}" for cls in _model_classes() for f in dataclasses.fields(cls) if f.name not in read
    ]
    assert unread == [], "fields no code reads: remove them, or make them do what the docs say"


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", name).lower()


def _properties(node: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, child in (node.get("properties") or {}).items():
        here = (*path, name)
        found.append(here)
        if here not in OPAQUE and here not in UNMODELLED and here[:3] != ("spec", "pullSecret", "inline"):
            found += _properties(child, here)
    return found


def _model_path(prop: tuple[str, ...]) -> str | None:
    if prop in MAPPED:
        return MAPPED[prop]
    if prop in OPAQUE:
        return OPAQUE[prop]
    if prop[0] == "spec" and len(prop) > 1:
        return ".".join(_snake(part) for part in prop[1:])
    return None


def _fieldless(key: str) -> Any:
    """The model class of a setting that has no `SiteConfig` field (read with `site.get(SETTING)`), or None."""
    for entry in registry.SETTINGS:
        if entry.key == key and not entry.field:
            absent = entry.load(None, checks.Checked((), {}))
            return FIELDLESS_MODELS.get(key, type(absent)) if absent is None else type(absent)
    return None


def _resolves(dotted: str, key: str = "") -> bool:
    cls: Any = _fieldless(key) or model.SiteConfig
    parts = dotted.split(".")[1:] if _fieldless(key) else dotted.split(".")
    for part in parts:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if part not in fields:
            return False
        default = fields[part].default
        cls = type(default) if dataclasses.is_dataclass(default) else _nested(cls, part)
    return True


def _nested(cls: type[Any], name: str) -> type[Any]:
    hint = str({f.name: f.type for f in dataclasses.fields(cls)}[name])
    inner = re.match(r"^(\w+)", hint)
    return getattr(model, inner.group(1), object) if inner else object


def test_every_schema_property_maps_to_a_model_field() -> None:
    spec_and_metadata = {k: schema.SCHEMA["properties"][k] for k in ("metadata", "spec")}
    props = _properties({"properties": spec_and_metadata})
    homeless = []
    for prop in props:
        if prop in UNMODELLED or prop in {("metadata",), ("spec",)} or prop in schema.DEPRECATED_PATHS:
            continue
        dotted = _model_path(prop)
        if dotted is None or not _resolves(dotted, prop[1] if len(prop) > 1 else ""):
            homeless.append(".".join(prop))
    assert homeless == []


def test_deprecated_properties_have_no_model_field() -> None:
    assert schema.DEPRECATED_PATHS == (("spec", "timeouts", "siteConfig"),)
    assert "site_config" not in {f.name for f in dataclasses.fields(model.Timeouts)}


HEAD = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata: {name: site-1}
spec:
  domain: sno1.site.example.com
"""


def test_an_old_site_config_with_site_config_timeout_validates_with_a_warning(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + textwrap.indent("timeouts: {total: 900, siteConfig: 1200, networkProbe: 60}\n", "  "))
    report = loader.validate(str(path))
    assert report.problems == ()  # 1200 > total is no error: the field means nothing
    found = [(w.path, w.line) for w in report.warnings if w.path != "spec"]  # not the factory-access warning
    assert found == [("spec.timeouts.siteConfig", 6)]
    (ignored,) = [w for w in report.warnings if w.path == "spec.timeouts.siteConfig"]
    assert ignored.message.startswith("Ignored: a site-config cannot bound the wait")
    assert report.config is not None and report.config.timeouts == model.Timeouts(total=900, network_probe=60)


@pytest.mark.parametrize("window", [10, 120, 1800])
def test_network_probe_timeout_is_the_probe_window(window: int) -> None:
    low, high = timeouts.TIMEOUT_BOUNDS["networkProbe"]
    assert low <= window <= high
    policy = site_network.policy_for(model.Timeouts(network_probe=window))
    assert policy.probe_window == window
    assert policy.rollback_timeout >= policy.probe_window + 30  # the Policy's own invariant holds
    assert (policy.probe_interval, policy.attempts) == (network.Policy().probe_interval, network.Policy().attempts)


class TestOneListOfSecrets:
    def test_secret_paths_come_from_the_schema_markers(self) -> None:
        assert schema.SECRET_PATHS == (
            ("spec", "certificates", "api", "key", "pem"),
            ("spec", "certificates", "ingress", "key", "pem"),
            ("spec", "pullSecret", "inline"),
            ("spec", "pullSecret", "json"),
            ("spec", "proxy", "httpProxy"),
            ("spec", "proxy", "httpsProxy"),
            ("spec", "adminAccess", "kubeadmin", "passwordHash"),
        )
        assert {"auth", "password", "identitytoken", "registrytoken"} == schema.AUTH_SECRET_FIELDS

    def test_no_module_keeps_its_own_copy(self) -> None:
        for module in (loader, structural, semantic):
            names = vars(module)
            assert not {"SECRET_PATHS", "_SECRET_WORDS", "_SECRET_FIELDS"} & set(names), module.__name__

    def test_every_auth_secret_field_is_registered_for_redaction(self, tmp_path: pathlib.Path) -> None:
        values = {name: f"{name}-value-0123456789" for name in sorted(schema.AUTH_SECRET_FIELDS)}
        values["auth"] = base64.b64encode(b"fake-user:auth-pass-0123456789").decode()
        entry = ", ".join(f"{k}: {v}" for k, v in values.items())
        body = f"pullSecret:\n  inline:\n    auths:\n      registry.example.com: {{username: u, {entry}}}\n"
        path = tmp_path / "site-config.yaml"
        path.write_text(HEAD + textwrap.indent(body, "  "))
        redact.forget_secrets()
        report = loader.validate(str(path), now=dt.datetime.now(dt.UTC))
        assert report.valid
        for value in [*values.values(), "auth-pass-0123456789"]:
            assert redact.redact(f"x {value} y") == f"x {redact.MASK} y"

    def test_a_type_error_under_a_secret_does_not_quote_it(self) -> None:
        doc = {
            "apiVersion": model.API_VERSION,
            "kind": model.KIND,
            "metadata": {"name": "s"},
            "spec": {"domain": "a.example.com", "pullSecret": {"json": 1234567, "mode": "replace"}},
        }
        messages = [f.message for f in structural.check(doc)]
        assert messages and not any("1234567" in m for m in messages)
