"""The settings registry assembles what each setting module declares: schema, secrets, model values, run order.

These pin what the layout promises a newcomer adding a setting: the module and one registry line are enough for
the schema to carry its fragment, `x-secret` to reach the secret list, the loader to place its value, and the
pipeline to run its step where it asked.
"""

from __future__ import annotations

import importlib

import pytest

from snoreloc import errors
from snoreloc.engine import pipeline
from snoreloc.siteconfig import checks, model, registry, schema, setting
from snoreloc.siteconfig.settings import ntp

# The run order the relocation has had since issue 14 (the settings' steps placed by their `after`).
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
    "manifests",
    "proxy",
    "ntp",
    "final-settle",
]


def test_the_pipeline_runs_the_settings_steps_where_they_asked() -> None:
    assert [step.name for step in pipeline.cluster_steps()] == RUN_ORDER


def test_each_settings_step_module_holds_the_step_it_names() -> None:
    for declared in registry.steps():
        assert importlib.import_module(declared.module).STEP.name == declared.name


def test_a_step_placed_after_no_known_step_is_refused() -> None:
    lost = setting.Setting("lost", "", {}, lambda values, checked: None, step=setting.Step("x", "m", after="nowhere"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "SETTINGS", (*registry.SETTINGS, lost))
        with pytest.raises(errors.InternalError, match=r"x \(after nowhere\)"):
            registry.run_order(["csr"])


def test_the_schema_carries_every_fragment_under_its_key() -> None:
    properties = schema.SCHEMA["properties"]["spec"]["properties"]
    for entry in registry.SETTINGS:
        assert properties[entry.key] is entry.schema


def test_the_secret_list_holds_every_x_secret_of_the_settings() -> None:
    found = registry.secret_paths()
    assert found == (("spec", "proxy", "httpProxy"), ("spec", "proxy", "httpsProxy"))
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
    costs = registry.costs()
    assert set(costs) == {"ssh-keys", "catalogs", "manifests", "proxy", "ntp"}
    assert costs["ntp"].reboot == "yes" and costs["ssh-keys"].reboot == "no"
