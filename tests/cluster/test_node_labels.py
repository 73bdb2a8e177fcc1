"""The site's node labels over HTTPS: merged into the Node's labels (the kubelet's and a user's untouched, a value of
the same key replaced and said so in the plan), nothing written again on a re-run, kept by a later run that no
longer lists them, and put back by `rollback` key by key: the factory's value again, the site's own key gone, a
label a user added since left alone."""

from __future__ import annotations

from collections.abc import Mapping

from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import node_labels

from .conftest import Relocation, site_config

REGION = "site.example.com/region"
STORE = "site.example.com/store"
TEAM = "team.example.com/owner"


def labelled(**labels: str) -> model.SiteConfig:
    wanted = {REGION if key == "region" else STORE: value for key, value in labels.items()}
    return site_config(settings={node_labels.KEY: node_labels.NodeLabels(tuple(wanted.items()))})


def node_ref(r: Relocation) -> kube.Ref:
    (node,) = r.client.list(kube.NODES)
    return kube.Ref(kube.NODES, node["metadata"]["name"])


def labels_of(r: Relocation) -> dict[str, str]:
    return dict(r.get(node_ref(r))["metadata"].get("labels") or {})


def set_labels(r: Relocation, labels: Mapping[str, str | None]) -> None:
    """Set (or with None remove) labels on the node as a user would."""

    def change(node: kube.Obj) -> kube.Obj:
        current = node["metadata"].setdefault("labels", {})
        for key, value in labels.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        return node

    r.client.modify(node_ref(r), change)


def user_labels(r: Relocation, labels: Mapping[str, str]) -> None:
    """A user's labels before the run, taken off again when the test ends."""
    set_labels(r, labels)
    r.undo.append(lambda: set_labels(r, dict.fromkeys(labels)))


def test_the_labels_are_merged_and_a_rerun_writes_nothing(relocation: Relocation) -> None:
    user_labels(relocation, {REGION: "factory", TEAM: "edge"})
    before = labels_of(relocation)
    site = labelled(region="north", store="store-0042")
    plans = relocation.run(site, dry_run=True).plans
    (planned,) = [p for p in plans if p.step == "node-labels"]
    assert [str(change.ref) for change in planned.changes] == [str(node_ref(relocation))]
    assert f"replaces {REGION}: factory -> north" in planned.notes
    assert labels_of(relocation) == before  # planning wrote nothing

    assert relocation.run(site).actions["node-labels"] == "ran"
    after = labels_of(relocation)
    assert after == {**before, REGION: "north", STORE: "store-0042"}  # the kubelet's and the user's kept
    writes = relocation.client.writes
    assert set(relocation.run(site).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


def test_a_later_run_keeps_them_and_rollback_puts_back_only_those_keys(relocation: Relocation) -> None:
    user_labels(relocation, {REGION: "factory"})
    factory = labels_of(relocation)
    relocation.run(labelled(region="north"))
    set_labels(relocation, {TEAM: "edge"})  # a user's label added at the site, after our run
    relocation.run(labelled(store="store-0042"))  # a re-relocation that no longer lists the region
    assert labels_of(relocation) == {**factory, REGION: "north", TEAM: "edge", STORE: "store-0042"}

    told: list[str] = []
    outcome = pipeline.rollback(relocation.paths, relocation.client, relocation.clock, announce=told.append)
    assert labels_of(relocation) == {**factory, TEAM: "edge"}  # the factory's value back, ours gone, theirs kept
    assert f"Node {node_ref(relocation).name}" in outcome.restored
    assert any("the node's labels go back" in line for line in told) and not outcome.forecast.reboot
    assert not list(relocation.paths.backups.glob(f"{node_ref(relocation).key}*"))
    set_labels(relocation, {TEAM: None})


def test_a_node_without_the_setting_is_not_touched(relocation: Relocation) -> None:
    before = labels_of(relocation)
    result = relocation.run(site_config())
    assert result.actions["node-labels"] in ("ran", "skipped")
    assert labels_of(relocation) == before
    assert not list(relocation.paths.backups.glob(f"{node_ref(relocation).key}*"))
