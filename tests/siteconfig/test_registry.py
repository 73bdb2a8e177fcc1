"""The settings registry assembles what each setting module declares: schema, secrets, model values; the steps name
their settings and run in one listed order.

These pin what the layout promises a newcomer adding a setting: the module and one registry line are enough for
the schema to carry its fragment, `x-secret` to reach the secret list, the loader to place its value; and a step
module naming its setting, placed in the one run order (`engine.order`), runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from snoreloc.engine import order
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import checks, model, registry, schema, setting
from snoreloc.siteconfig.settings import ntp

# The run order the relocation has had since issue 14 (one list since issue 31: `engine.order`).
RUN_ORDER = [
    "csr",
    "preflight",
    "certificates",
    "cluster-config",
    "ssh-keys",
    "catalogs",
    "domain",
    "routes",
    "settle",
    "admin-access",  # issue 32: once the cluster has settled under its new names (docstring of engine.order)
    "node-labels",
    "manifests",
    "proxy",
    "ntp",
    "final-settle",
]
# Which setting each step applies (its `setting`), by step name.
APPLIED = {
    "ssh-keys": "sshAuthorizedKeys",
    "catalogs": "catalogSources",
    "manifests": "extraManifests",
    "proxy": "proxy",
    "ntp": "ntp",
    "node-dns": "dns",
    "node-labels": "nodeLabels",
    "admin-access": "adminAccess",
}


def test_the_steps_run_in_the_one_listed_order() -> None:
    assert [step.name for step in order.cluster_steps()] == RUN_ORDER


def test_each_step_that_applies_a_setting_names_a_registered_one() -> None:
    applied = order.settings_applied(order.cluster_steps() + order.host_steps(HostServices(*(None,) * 4), Path("/")))
    assert {name: entry.key for name, entry in applied.items()} == APPLIED
    assert all(entry in registry.SETTINGS for entry in applied.values())


def test_no_setting_names_a_step_module_by_string() -> None:
    for entry in registry.SETTINGS:
        assert not hasattr(entry, "step")
        assert "snoreloc.steps" not in repr(entry.cost)


def test_the_schema_carries_every_fragment_under_its_key() -> None:
    properties = schema.SCHEMA["properties"]["spec"]["properties"]
    for entry in registry.SETTINGS:
        assert properties[entry.key] is entry.schema


def test_the_secret_list_holds_every_x_secret_of_the_settings() -> None:
    found = registry.secret_paths()
    assert found == (
        ("spec", "proxy", "httpProxy"),
        ("spec", "proxy", "httpsProxy"),
        ("spec", "adminAccess", "kubeadmin", "passwordHash"),  # under a `oneOf` (remove | keep | {passwordHash})
    )
    assert set(found) <= set(schema.SECRET_PATHS)
    core = {("spec", "certificates", which, "key", "pem") for which in ("api", "ingress")}
    core |= {("spec", "pullSecret", "inline"), ("spec", "pullSecret", "json")}
    assert set(schema.SECRET_PATHS) == core | set(found)


def test_a_setting_without_a_field_is_read_with_get_and_defaults_to_its_load_of_nothing() -> None:
    extra = setting.Setting("siteNote", "", {"type": "string"}, lambda values, checked: values or "none given")
    site = model.SiteConfig("s", "a.example.com", settings={"siteNote": "hello"})
    assert site.get(extra) == "hello"
    assert model.SiteConfig("s", "a.example.com").get(extra) == "none given"
    assert site.get(ntp.SETTING) is None  # a setting with a field of its own reads that field


def test_the_loader_places_a_value_of_a_setting_without_a_field_in_settings() -> None:
    extra = setting.Setting("siteNote", "", {"type": "string"}, lambda values, checked: f"note: {values}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "SETTINGS", (*registry.SETTINGS, extra))
        values = registry.load({"siteNote": "x"}, checks.Checked((), {}))
    assert values["siteNote"] == "note: x"
    assert values[ntp.SETTING.key] is None  # absent: the setting's own default


def test_costs_name_each_settings_step() -> None:
    costs = order.costs()
    assert set(costs) == {"ssh-keys", "catalogs", "node-labels", "manifests", "proxy", "ntp", "admin-access"}
    assert costs["ntp"].reboot == "yes" and costs["ssh-keys"].reboot == "no"


def test_the_agent_reads_every_setting_one_way() -> None:
    """No product module reads a setting through its legacy `SiteConfig` field (`site.ntp`): `site.get(SETTING)`."""
    import ast  # noqa: PLC0415

    fields = {entry.field for entry in registry.SETTINGS if entry.field}
    found = []
    for path in sorted((Path(__file__).resolve().parents[2] / "src" / "snoreloc").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            owner = node.value if isinstance(node, ast.Attribute) else None
            named = getattr(owner, "attr", None) or getattr(owner, "id", None)
            if isinstance(node, ast.Attribute) and node.attr in fields and named == "site":
                found.append(f"{path.name}:{node.lineno} site.{node.attr}")
    assert found == []
