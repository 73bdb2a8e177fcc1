"""Benchmark 2: the agent's relocation against real baselines, each run on its own simulator in the same benchmark.

"Sequential / actual" used to compare the agent with a computed sum of rollout times, which no tool achieves or
suffers. Here the alternatives run: on a fresh simulator at the same speed, with the agent's own kube client
(`snoreloc.adapters.kube`), each re-enacts the order of writes and waits of

- `cro`: RHsyseng/cluster-relocation-operator (`controllers/clusterrelocation_controller.go:Reconcile`): registry
  CA, mirrors and pull secret without waiting; the ingress certificate, IngressController `defaultCertificate`,
  Ingress `appsDomain` + componentRoutes; the API certificate and APIServer namedCertificates; then `verifyDomain`
  (dial the apps endpoint every 10 s until it presents `*.apps.<domain>`, wait for ClusterOperator ingress; same
  for the API and kube-apiserver), wait for openshift-apiserver, then delete the routes left on the old domain.
- `ztpfw`: rh-ecosystem-edge/ztp-pipeline-relocatable's domain change (`ui/backend/src/endpoints/changeDomain.ts`
  driven by `PersistPage/persist.ts`): certificate secrets, one Ingress patch, one APIServer patch, sleep 10 s, then
  wait (5 s polls) for ClusterOperators authentication, openshift-apiserver and kube-apiserver.
- `naive`: one change at a time, each followed by a wait until every ClusterOperator and the master pool settle.

(order and intervals from `../shared/research/anchors-relocation-operator.md`, section 2). So that every flow ends
in the same cluster state as the agent's, each does the same set of changes: what a tool does not do at the site
(ZTPFW: pull secret, mirrors, registry CA, `appsDomain`, the IngressController certificate, user routes) is done in
its flow before or after its own sequence, as a technician would, and pending node CSRs are approved first (ZTPFW's
csr-approver service; CRO has none; on the benchmark's seed the node is Ready and none is pending). Every flow,
the agent's included, ends with a wait until everything settled. The agent runs as `snoreloc run --cluster-only`
in a child process (its start-up is counted); the baselines run in this process with the client already imported,
which flatters them slightly.

The figure for each baseline is its wall time over the agent's (target >= 1.5 each). No sums are computed. Beside
it: the same over the agent's cluster phase alone (from its first step to its end, so without its process start-up,
which the baselines do not pay), and per flow the kube-apiserver revisions the simulator made and the restarts
(rollouts) it performed: a revision made while the installer of the previous one runs costs no restart of its own.

`--oauth-publish SECONDS` sets how long the simulated authentication operator takes to publish a moved oauth host (30
cluster seconds by default, `snoreloc_sim.openshift.operators.component_routes.APPLY_SECONDS`). The agent writes the
APIServer change only once that host is out (`snoreloc.steps.openshift.apiserver_revision`); CRO and ZTPFW write it at
once, so when the publication comes after the installer of their revision has finished (90 s in the simulator), the
new oauth metadata costs them a second revision with its own restart. How long a real authentication operator takes
here was not measured (the research notes say "about half a minute"); the option shows both sides of that trade on
one simulator.

Run: `.venv/bin/python bench/baselines.py [--speed 5] [--flows cro,ztpfw,naive] [--oauth-publish 30]`.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common
import harness

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc_sim.kube import certs
from snoreloc_sim.openshift.operators import component_routes, kube_apiserver

NAME = "baselines"
RATIO_MIN = 1.5
FLOW_BUDGET = 1800.0  # cluster seconds any one wait may take (the longest rollout is 240 s)
SETTLE_GRACE = 10.0  # cluster seconds after a write before an operator is sure to have noticed it
REGISTRY = "registry.site-17.example.com:8443"
NAMESPACE_KEEP = ("openshift-console", "openshift-authentication")
Flow = Callable[["Site"], None]


class Site:
    """One baseline's handle on a simulator: the agent's kube client, the scale of time, the change set."""

    def __init__(self, bench: harness.Bench) -> None:
        self.bench = bench
        self.speed = bench.speed
        self.clock = clock_mod.SystemClock()
        self.kube = kube.Client.from_kubeconfig(str(bench.sim.kubeconfig_path), clock=self.clock)
        ca = certs.make_ca("bench-baselines")
        self.api_cert = certs.issue(ca, [f"api.{harness.DOMAIN}"])
        self.apps_cert = certs.issue(ca, [f"*.apps.{harness.DOMAIN}"])
        self.old_apps = self._apps_domain()

    def _apps_domain(self) -> str:
        ingress = self.kube.get(kube.Ref(kube.INGRESSES, "cluster"))
        return str(ingress["spec"].get("appsDomain") or ingress["spec"]["domain"])

    def wall(self, cluster_seconds: float) -> float:
        return cluster_seconds / self.speed

    def sleep(self, cluster_seconds: float) -> None:
        time.sleep(self.wall(cluster_seconds))

    def wait(self, what: str, check: Callable[[], bool], interval: float) -> None:
        """Poll `check` every `interval` cluster seconds (bounded) until it holds."""
        plan = waits.Wait("baseline", what, budget=self.wall(FLOW_BUDGET), interval=self.wall(interval))
        waits.until(lambda: True if check() else None, plan, self.clock)

    # the changes, as each tool writes them -----------------------------------------------------------------------

    def put_secret(self, namespace: str, name: str, pair: certs.KeyPair) -> None:
        data = {"tls.crt": pair.cert_pem, "tls.key": pair.key_pem}
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "kubernetes.io/tls",
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }
        self.kube.create(kube.SECRETS, body)

    def registry_ca(self) -> None:
        pem = (common.ROOT / "examples" / "registry-ca.crt").read_text()
        key = REGISTRY.replace(":", "..")
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "site-registry-ca", "namespace": "openshift-config"},
            "data": {key: pem},
        }
        self.kube.create(kube.CONFIGMAPS, body)
        self.kube.patch(
            kube.Ref(kube.IMAGES, "cluster"), {"spec": {"additionalTrustedCA": {"name": "site-registry-ca"}}}
        )

    def mirrors(self) -> None:
        digest = {"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": [f"{REGISTRY}/ocp4/ocp-release"]}
        tag = {"source": "registry.redhat.io/rhel9", "mirrors": [f"{REGISTRY}/rhel9"]}
        idms = {"metadata": {"name": "site-mirrors"}, "spec": {"imageDigestMirrors": [digest]}}
        itms = {"metadata": {"name": "site-mirrors"}, "spec": {"imageTagMirrors": [tag]}}
        self.kube.create(kube.IDMS, {"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", **idms})
        self.kube.create(kube.ITMS, {"apiVersion": "config.openshift.io/v1", "kind": "ImageTagMirrorSet", **itms})
        self.kube.delete(kube.Ref(kube.IDMS, harness.FACTORY_MIRROR))

    def pull_secret(self) -> None:
        text = (common.ROOT / "examples" / "pull-secret.json").read_text()
        data = {".dockerconfigjson": base64.b64encode(json.dumps(json.loads(text)).encode()).decode()}
        self.kube.patch(kube.Ref(kube.SECRETS, "pull-secret", "openshift-config"), {"data": data})

    def ingress_certificate(self) -> None:
        self.put_secret("openshift-ingress", "site-apps-cert", self.apps_cert)
        self.put_secret("openshift-config", "site-apps-cert", self.apps_cert)
        ref = kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator")
        self.kube.patch(ref, {"spec": {"defaultCertificate": {"name": "site-apps-cert"}}})

    def ingress_config(self) -> None:
        apps = f"apps.{harness.DOMAIN}"
        routes = [
            ("console", "openshift-console", f"console-openshift-console.{apps}"),
            ("downloads", "openshift-console", f"downloads-openshift-console.{apps}"),
            ("oauth-openshift", "openshift-authentication", f"oauth-openshift.{apps}"),
        ]
        entries = [
            {"name": n, "namespace": ns, "hostname": host, "servingCertKeyPairSecret": {"name": "site-apps-cert"}}
            for n, ns, host in routes
        ]
        self.kube.patch(kube.Ref(kube.INGRESSES, "cluster"), {"spec": {"appsDomain": apps, "componentRoutes": entries}})

    def api_certificate(self) -> None:
        self.put_secret("openshift-config", "site-api-cert", self.api_cert)
        named = [{"names": [f"api.{harness.DOMAIN}"], "servingCertificate": {"name": "site-api-cert"}}]
        self.kube.patch(kube.Ref(kube.APISERVERS, "cluster"), {"spec": {"servingCerts": {"namedCertificates": named}}})

    def approve_csrs(self) -> None:
        for csr in self.kube.list(kube.CSRS):
            if (csr.get("status") or {}).get("conditions"):
                continue
            if csr["spec"].get("username", "").startswith("system:serviceaccount:default:"):
                continue  # the simulator's decoy: not the node's request
            self.kube.approve_csr(csr["metadata"]["name"], "approved by the baseline benchmark")

    def stale_routes(self) -> list[kube.Obj]:
        return [
            r
            for r in self.kube.list(kube.ROUTES)
            if str(r["spec"].get("host", "")).endswith(f".{self.old_apps}")
            and r["metadata"]["namespace"] not in NAMESPACE_KEEP
        ]

    def patch_routes(self) -> None:
        new_apps = f"apps.{harness.DOMAIN}"
        for route in self.stale_routes():
            host = str(route["spec"]["host"]).removesuffix(self.old_apps) + new_apps
            self.kube.patch(kube.ref_of(route), {"spec": {"host": host}})

    def delete_routes(self) -> None:
        for route in self.stale_routes():
            self.kube.delete(kube.ref_of(route))

    # the waits -----------------------------------------------------------------------------------------------------

    def operator_settled(self, name: str) -> bool:
        found = self.kube.find(kube.Ref(kube.CLUSTEROPERATORS, name))
        return found is not None and _settled(found)

    def wait_operator(self, name: str, interval: float) -> None:
        self.wait(f"{name} settled", lambda: self.operator_settled(name), interval)

    def wait_served(self, address: tuple[str, int], name: str, interval: float) -> None:
        """CRO's verifyDomain: dial with SNI `name` until the presented certificate names `name` (or its wildcard)."""
        expected = "*." + name.split(".", 1)[1] if name.startswith("test.") else name
        self.wait(f"{name} served", lambda: self.serves(address, name, expected), interval)

    def all_settled(self) -> bool:
        """Every ClusterOperator settled and the master pool updated; else TemporaryError naming what is not."""
        waiting = [o["metadata"]["name"] for o in self.kube.list(kube.CLUSTEROPERATORS) if not _settled(o)]
        pool = self.kube.find(kube.Ref(kube.MCPS, "master"))
        if pool is None or _condition(pool, "Updated") != "True":
            waiting.append("mcp/master")
        if waiting:
            raise errors.TemporaryError("not settled: " + ", ".join(waiting))
        return True

    def serves(self, address: tuple[str, int], sni: str, expected: str) -> bool:
        try:
            pem = kube.dial_tls(address, sni)
        except Exception:  # a restarting endpoint: not yet
            return False
        return expected in certs.first_cert_names(pem)


def _condition(obj: kube.Obj, kind: str) -> str:
    found = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})
    return str(found.get("status", ""))


def _settled(operator: kube.Obj) -> bool:
    state = {kind: _condition(operator, kind) for kind in ("Available", "Progressing", "Degraded")}
    return state == {"Available": "True", "Progressing": "False", "Degraded": "False"}


def cro(site: Site) -> None:
    site.approve_csrs()
    site.registry_ca()
    site.mirrors()
    site.pull_secret()
    site.ingress_certificate()
    site.ingress_config()
    site.api_certificate()
    site.wait_served(site.bench.sim.router_address, f"test.apps.{harness.DOMAIN}", 10)
    site.wait_operator("ingress", 10)
    site.wait_served(site.kube.endpoint, f"api.{harness.DOMAIN}", 10)
    site.wait_operator("kube-apiserver", 10)
    site.wait_operator("openshift-apiserver", 10)
    site.delete_routes()


def ztpfw(site: Site) -> None:
    site.approve_csrs()
    site.registry_ca()  # not ZTPFW's at the site: done first, by hand
    site.mirrors()
    site.pull_secret()
    site.ingress_certificate()  # ZTPFW leaves the default certificate alone; done with its secrets here
    site.ingress_config()
    site.api_certificate()
    site.sleep(10)
    for name in ("authentication", "openshift-apiserver", "kube-apiserver"):
        site.wait_operator(name, 5)
    site.patch_routes()  # ZTPFW moves only its own UI route; the users' are moved afterwards


def naive(site: Site) -> None:
    for change in (
        site.approve_csrs,
        site.registry_ca,
        site.mirrors,
        site.pull_secret,
        site.ingress_certificate,
        site.ingress_config,
        site.api_certificate,
        site.patch_routes,
    ):
        change()
        site.sleep(SETTLE_GRACE)
        site.wait("everything settled", site.all_settled, 5)


FLOWS: dict[str, Flow] = {"cro": cro, "ztpfw": ztpfw, "naive": naive}


def _per_operator(operators: Sequence[str]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for operator in operators:
        counted[operator] = counted.get(operator, 0) + 1
    return counted


def _revisions(bench: harness.Bench) -> int:
    return bench.sim.cluster.recorder.revisions.get(kube_apiserver.OPERATOR, 0)


def run_flow(flow: Flow, speed: float, routes: int) -> dict[str, Any]:
    """One fresh simulator; the flow, then the final settle every flow ends with; its wall time and rollouts."""
    with harness.Bench(speed=speed, routes=routes) as bench:
        first, revisions = len(bench.sim.cluster.recorder.rollouts), _revisions(bench)
        started = time.monotonic()
        site = Site(bench)
        flow(site)
        site.sleep(SETTLE_GRACE)
        site.wait("everything settled", site.all_settled, 5)
        wall = time.monotonic() - started
        rollouts = bench.sim.cluster.recorder.rollouts[first:]
        made = _revisions(bench) - revisions
    return {
        "wall_s": wall,
        "rollouts_per_operator": _per_operator([r.operator for r in rollouts]),
        "kube_apiserver_revisions": made,
    }


def run_agent(speed: float, routes: int) -> dict[str, Any]:
    with harness.Bench(speed=speed, routes=routes) as bench:
        revisions = _revisions(bench)
        run = bench.relocate()
        made = _revisions(bench) - revisions
    steps = run.steps()
    return {
        "wall_s": run.child.wall_s,
        "cluster_phase_s": run.child.wall_s - (steps[0]["start"] if steps else 0.0),
        "rollouts_per_operator": _per_operator([r["operator"] for r in run.rollouts]),
        "kube_apiserver_revisions": made,
    }


@contextmanager
def oauth_publication(seconds: float | None) -> Iterator[None]:
    """The simulated authentication operator takes `seconds` to publish a moved oauth host (None: its default)."""
    default = component_routes.APPLY_SECONDS
    component_routes.APPLY_SECONDS = default if seconds is None else seconds
    try:
        yield
    finally:
        component_routes.APPLY_SECONDS = default


def measure(
    speed: float = 5.0, routes: int = 0, flows: Sequence[str] = tuple(FLOWS), oauth_publish: float | None = None
) -> dict[str, Any]:
    with oauth_publication(oauth_publish):
        agent = run_agent(speed, routes)
        found = {name: run_flow(FLOWS[name], speed, routes) for name in flows}
    for result in found.values():
        result["over_agent"] = result["wall_s"] / agent["wall_s"]
        result["over_agent_cluster_phase"] = result["wall_s"] / agent["cluster_phase_s"]
    targets = {
        f"{name}_over_agent": common.target(result["over_agent"], RATIO_MIN, at_most=False)
        for name, result in found.items()
    }
    results = {
        "speed": speed,
        "user_routes": routes,
        "oauth_publish_s": component_routes.APPLY_SECONDS if oauth_publish is None else oauth_publish,
        "agent": agent,
        "baselines": found,
    }
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    results = payload["results"]
    agent = results["agent"]
    lines = [
        f"speed {results['speed']:g}, oauth host published after {results['oauth_publish_s']:g} cluster s",
        f"{'flow':>7} {'wall s':>8} {'/ agent':>8} {'/ agent cluster phase':>22} {'KAS revisions':>14}  "
        "rollouts per operator",
    ]
    rows = [("agent", agent, 1.0, agent["wall_s"] / agent["cluster_phase_s"])]
    rows += [(n, r, r["over_agent"], r["over_agent_cluster_phase"]) for n, r in results["baselines"].items()]
    for name, result, ratio, phase in rows:
        counted = ", ".join(f"{op} {n}" for op, n in sorted(result["rollouts_per_operator"].items()))
        lines.append(
            f"{name:>7} {result['wall_s']:>8.2f} {ratio:>8.2f} {phase:>22.2f} "
            f"{result['kube_apiserver_revisions']:>14}  {counted}"
        )
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The agent against re-enacted baselines on the same simulator.")
    parser.add_argument("--speed", type=float, default=5.0, help="simulator speed (default 5)")
    parser.add_argument("--routes", type=int, default=0, help="extra user routes in the seed (default 0)")
    parser.add_argument("--flows", default=",".join(FLOWS), help=f"baselines to run (default {','.join(FLOWS)})")
    parser.add_argument(
        "--oauth-publish", type=float, default=None, help="cluster seconds to publish the oauth host (default 30)"
    )
    parser.add_argument("--name", default=NAME, help=f"result name (default {NAME})")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    flows = [name for name in args.flows.split(",") if name]
    unknown = set(flows) - set(FLOWS)
    if unknown:
        parser.error(f"unknown flow(s): {', '.join(sorted(unknown))}")
    payload = measure(args.speed, args.routes, flows, args.oauth_publish)
    payload["benchmark"] = args.name
    common.publish(args.name, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
