"""Re-relocation to the factory's own domain (issue 30): the domain does not change, so no step waits for the
openshift-apiserver rollout a changed apps domain would start, and a rollback from there waits for none either.

Before the fix the relocation timed out after `timeouts.settle` (exit 75) in the routes step, and the rollback after
A -> factory timed out in its settle wait ("openshift-apiserver: no transition since our change"): both expected
the rollout whenever the Ingress object changed, not when the apps domain openshift-apiserver uses changed
(`steps.cluster.domain.routing_domain`)."""

from __future__ import annotations

from datetime import datetime

import pytest

from snoreloc.adapters import kube
from snoreloc.engine import journal, restore
from snoreloc.steps import base

from .conftest import Relocation, site_config
from .test_users_objects import roll_back_and_compare, snapshot

pytestmark = pytest.mark.simonly

B = "store9.example.org"


def _factory_domain(r: Relocation) -> str:
    return r.facts.apps_domain.removeprefix("apps.")


def _waits_ran_out(r: Relocation) -> list[str]:
    """The last run's finished waits that lasted their whole budget (the defect's: 1800 s for a rollout that never
    started); cluster seconds, so the bound holds however loaded the machine is."""
    return [
        w["what"]
        for w in r.status()["wait_log"]
        if (datetime.fromisoformat(w["finished"]) - datetime.fromisoformat(w["started"])).total_seconds() >= w["budget"]
    ]


def _rolled_out(r: Relocation) -> set[str]:
    """The rollouts the last run set in motion and saw (the timeline's record, `engine.intervals`)."""
    return {entry["name"] for entry in r.status()["rollout_log"]}


def _roll_back_and_compare(r: Relocation, before: dict[str, kube.Obj]) -> restore.Outcome:
    outcome = roll_back_and_compare(r, before)
    assert r.status()["state"] == "rolled-back"
    return outcome


def test_relocating_to_the_factory_domain_waits_for_no_rollout(relocation: Relocation) -> None:
    before = snapshot(relocation)
    result = relocation.run(site_config(domain=_factory_domain(relocation)))
    assert result.state is journal.RunState.DONE
    assert _waits_ran_out(relocation) == []
    assert relocation.get(base.INGRESS_CLUSTER)["spec"]["appsDomain"] == relocation.facts.apps_domain
    assert "openshift-apiserver" not in _rolled_out(relocation)
    assert "openshift-apiserver" not in _roll_back_and_compare(relocation, before).settled


def test_a_b_then_factory_domain_then_rollback_settles(relocation: Relocation) -> None:
    before = snapshot(relocation)
    relocation.run(site_config())  # to A
    relocation.run(site_config(domain=B))  # to B
    result = relocation.run(site_config(domain=_factory_domain(relocation)))  # and back to the factory's domain
    assert result.state is journal.RunState.DONE
    assert _waits_ran_out(relocation) == []
    assert "openshift-apiserver" in _rolled_out(relocation)  # from B's apps domain to the factory's: it moved
    outcome = _roll_back_and_compare(relocation, before)  # raised WaitTimeout after 1800 s before the fix
    assert "openshift-apiserver" not in outcome.settled  # the Ingress went back; its apps domain did not change


def test_rollback_from_a_still_waits_for_openshift_apiserver(relocation: Relocation) -> None:
    before = snapshot(relocation)
    relocation.run(site_config())
    assert "openshift-apiserver" in _roll_back_and_compare(relocation, before).settled
