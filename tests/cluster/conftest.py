"""Helpers for scenario tests: a site-config for the seeded cluster, and a relocation run against the simulator.

Runs use a `ScaledClock` at the simulator's speed, so timeouts and poll intervals keep their cluster-second
meaning while a whole relocation takes a few seconds of real time.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import paths, pipeline, runner
from snoreloc.sim import certs as sim_certs
from snoreloc.siteconfig import model
from snoreloc.steps import base, context

NEW_DOMAIN = "edge7.example.net"
MIRROR = "mirror.edge7.example.net:5000"
SITE_AUTH = base64.b64encode(b"site-user:site-pass-0123").decode()
PULL_SECRET = json.dumps({"auths": {"mirror.edge7.example.net:5000": {"auth": SITE_AUTH}}}).encode()
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0FfZm9yX3Rlc3RzX29ubHk=\n-----END CERTIFICATE-----\n"

# Objects a relocation may touch, snapshotted for rollback comparisons.
WATCHED = (
    kube.Ref(kube.APISERVERS, "cluster"),
    kube.Ref(kube.INGRESSES, "cluster"),
    kube.Ref(kube.IMAGES, "cluster"),
    kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator"),
    kube.Ref(kube.SECRETS, "pull-secret", "openshift-config"),
)


def site_config(**overrides: Any) -> model.SiteConfig:
    values: dict[str, Any] = {
        "name": "site7",
        "domain": NEW_DOMAIN,
        "pull_secret": model.PullSecret(PULL_SECRET),
        "image_digest_mirrors": (model.Mirror("quay.io/openshift-release-dev", (f"{MIRROR}/ocp",)),),
        "image_tag_mirrors": (model.Mirror("registry.redhat.io", (f"{MIRROR}/rh",)),),
        "remove_mirrors": ("factory-mirror",),
        "registry_ca": (model.RegistryCA("mirror.edge7.example.net:5000", CA_PEM),),
    }
    values.update(overrides)
    return model.SiteConfig(**values)


@dataclass
class Relocation:
    """One state directory and one client against one cluster; `run()` may be called repeatedly."""

    sim: Any
    root: Path
    client: kube.Client
    clock: clock_mod.Clock

    @property
    def paths(self) -> paths.Paths:
        return paths.Paths.under(self.root)

    def request(self, site: model.SiteConfig, **options: Any) -> pipeline.Request:
        settings = context.Settings(
            ingress_endpoint=self.sim.router_address,
            poll_interval=2.0,
            operator_regen_timeout=600.0,
            csr_wait=30.0,
            route_workers=options.pop("route_workers", 16),
        )
        return pipeline.Request(
            site, self.paths, runner.Options(**options), settings, resolve=lambda name: ["127.0.0.1"]
        )

    def run(self, site: model.SiteConfig | None = None, **options: Any) -> runner.Result:
        return pipeline.execute(self.request(site or site_config(), **options), self.client, self.clock)

    def get(self, ref: kube.Ref) -> kube.Obj:
        return self.client.get(ref)

    def status(self) -> dict[str, Any]:
        return json.loads(self.paths.status.read_text())

    def report(self) -> dict[str, Any]:
        return json.loads(self.paths.report.read_text())


def make_client(sim: Any, policy: kube.Policy | None = None) -> tuple[kube.Client, clock_mod.Clock]:
    clock = clock_mod.ScaledClock(sim.speed)
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock, policy=policy or kube.Policy())
    return client, clock


@pytest.fixture
def relocation(sim: Any, tmp_path: Path) -> Relocation:
    client, clock = make_client(sim)
    return Relocation(sim, tmp_path, client, clock)


def spec_of(obj: kube.Obj) -> kube.Obj:
    """What rollback promises to restore: everything but status and server-managed metadata."""
    kept = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("status", "metadata")}
    meta = obj.get("metadata", {})
    kept["metadata"] = {k: meta.get(k) for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return kept


def progressing(r: Relocation, operator: str) -> dict[str, Any] | None:
    """The operator's Progressing condition, or None while the API is away under a rollout."""
    try:
        co = r.client.get(kube.Ref(kube.CLUSTEROPERATORS, operator))
    except Exception:
        return None
    return base.conditions(co).get("Progressing", {})


def wait_rollout(r: Relocation, operator: str, before: dict[str, Any] | None, seconds: float = 30.0) -> None:
    """Block (bounded) until the operator has reacted to a change (its Progressing condition differs from
    `before`), then until the cluster is settled again: a settled cluster read too early is the old one."""
    deadline = time.monotonic() + seconds
    while progressing(r, operator) in (before, None):
        if time.monotonic() > deadline:
            raise AssertionError(f"{operator} did not start a rollout for the change")
        time.sleep(0.02)
    wait_healthy(r, seconds)


def wait_healthy(r: Relocation, seconds: float = 30.0) -> None:
    """Block (bounded, real seconds) until every ClusterOperator is settled: test set-up that changed the cluster."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            cos = r.client.list(kube.CLUSTEROPERATORS)
        except Exception:  # the API restarting under a rollout
            cos = []
        if cos and not any(base.operator_problems(co) for co in cos):
            return
        time.sleep(0.05)
    raise AssertionError("the cluster did not settle")


def add_legacy_named_certificate(r: Relocation) -> None:
    """A pre-existing namedCertificate (with its working secret) and a pre-existing componentRoute entry."""
    ca = sim_certs.make_ca("legacy-ca")
    pair = sim_certs.issue(ca, ["legacy.example.org"])
    r.client.create(
        kube.SECRETS,
        {
            "metadata": {"name": "legacy-cert", "namespace": "openshift-config"},
            "type": "kubernetes.io/tls",
            "data": {
                "tls.crt": base64.b64encode(pair.cert_pem).decode(),
                "tls.key": base64.b64encode(pair.key_pem).decode(),
            },
        },
    )
    named = [{"names": ["legacy.example.org"], "servingCertificate": {"name": "legacy-cert"}}]
    before = progressing(r, "kube-apiserver")
    r.client.patch(kube.Ref(kube.APISERVERS, "cluster"), {"spec": {"servingCerts": {"namedCertificates": named}}})
    wait_rollout(r, "kube-apiserver", before)
