"""kube-apiserver operator: a new revision per APIServer change, with the API outage SNO pays for each one.

On a single node there is one kube-apiserver, so each revision means minutes of rollout and about a minute with
no API at all: that cost is why the agent batches APIServer changes. The named certificates are served (by SNI)
only once the new revision is up. A referenced secret that is missing or not a key pair makes the new revision
crash-loop ("failed to load SNI cert and key"); the single-node startup monitor falls back to the last good
revision, so the API comes back with the old certificates and the operator stays Degraded until someone fixes
the secret or the APIServer.

A revision is also made when the OAuth metadata changes (a new oauth route host), see `component_routes`. A new
revision made while the installer of the previous one still runs (the first 90 s) replaces it: the node restarts
once, into the newest revision (`_absorb`); one made later is a rollout of its own, with its own outage. The
recorder counts both the revisions made and the rollouts (restarts).

Timeline of a revision (cluster seconds): 0 installer starts (Progressing=True), 90 five seconds of 503, 95 the
old server stops (connections refused for 60 s), 155 the new server answers (new certificates served, a few
seconds of 503 while it warms up), 240 the installer reports done (Progressing=False).
"""

from __future__ import annotations

import threading

from snoreloc_sim.kube import certs, model
from snoreloc_sim.openshift.operators import base, component_routes, conditions, watch

Obj = model.Obj

OPERATOR = "kube-apiserver"
CONFIG_NAMESPACE = "openshift-config"
LB_SECRET = ("openshift-kube-apiserver", "external-loadbalancer-serving-certkey")
FIRST_REVISION = 12

INSTALLER_SECONDS = 90.0
WARN_SECONDS = 5.0
DOWN_SECONDS = 60.0
SETTLE_SECONDS = 85.0  # from the new server answering to the installer reporting done


def named_certificates(apiserver: Obj | None) -> list[Obj]:
    spec = (apiserver or {}).get("spec") or {}
    return list((spec.get("servingCerts") or {}).get("namedCertificates") or [])


def referenced_secrets(apiserver: Obj | None) -> set[str]:
    return {str((n.get("servingCertificate") or {}).get("name", "")) for n in named_certificates(apiserver)}


class KubeAPIServerOperator:
    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._revision = FIRST_REVISION  # the revision the node runs
        self._latest = FIRST_REVISION  # the newest revision created (a failed one stays counted)
        self._served: set[str] = set()
        self._serial = base.Serial(cluster, OPERATOR, self._plan)
        self._installing = False  # an installer pod is running for the rollout in progress
        self._table: dict[str, model.ServedCert] = {}  # what the revision being installed will serve

    def watches(self) -> tuple[watch.Watch, ...]:
        """The cluster APIServer config (a new generation, or its creation), the secrets in openshift-config its
        named certificates use, and the oauth metadata the authentication operator publishes."""
        generation, live = ("metadata.generation",), watch.LIVE
        metadata = component_routes.METADATA_NAME, component_routes.METADATA_NAMESPACE
        return (
            watch.Watch(base.APISERVERS, self._apiserver_changed, "cluster", None, live, generation, True),
            watch.Watch(base.SECRETS, self._secret_changed, namespace=CONFIG_NAMESPACE, changed=("data",)),
            watch.Watch(base.CONFIGMAPS, self._metadata_changed, *metadata, changed=("data",)),
        )

    def _apiserver_changed(self, change: watch.Change) -> None:
        generation = (change.new or {})["metadata"].get("generation")
        self._request(f"apiservers.config.openshift.io/cluster generation {generation}")

    def _metadata_changed(self, change: watch.Change) -> None:
        self._request("configmap openshift-kube-apiserver/oauth-metadata changed")

    def _secret_changed(self, change: watch.Change) -> None:
        name = change.meta.get("name")
        apiserver = base.find(self._cluster, base.APISERVERS, "cluster")
        if name in referenced_secrets(apiserver):
            self._request(f"secret {CONFIG_NAMESPACE}/{name} changed")

    def _request(self, trigger: str) -> None:
        if not self._absorb(trigger):
            self._serial.request(trigger)

    def _absorb(self, trigger: str) -> bool:
        """A new revision while the installer of the previous one still runs: the node moves straight to the new
        one, and the old server is restarted once (library-go pkg/operator/staticpod/controller/installer/
        installer_controller.go, `newNodeStateForInstallInProgress`: with a newer revision pending it deletes the
        unfinished installer pod and targets the latest revision). A revision that would crash-loop is not
        absorbed: it follows as its own rollout."""
        with self._lock:
            if not self._installing:
                return False
        try:
            table = self._serving_table(base.find(self._cluster, base.APISERVERS, "cluster"))
        except base.BadSecret:
            return False
        with self._lock:
            if not self._installing:
                return False
            self._latest += 1
            self._table, current, target = table, self._revision, self._latest
        self._cluster.recorder.revision(OPERATOR)
        self._report(conditions.progressing("NodeInstaller", _progress(current, target) + f" ({trigger})"))
        return True

    def _plan(self, trigger: str) -> list[base.Step]:
        with self._lock:
            self._latest += 1
            current, target = self._revision, self._latest
        self._cluster.recorder.revision(OPERATOR)
        apiserver = base.find(self._cluster, base.APISERVERS, "cluster")
        try:
            table = self._serving_table(apiserver)
        except base.BadSecret as exc:
            return self._failing_plan(current, target, str(exc), apiserver)
        with self._lock:
            self._installing, self._table = True, table
        return [
            (0.0, lambda: self._report(conditions.progressing("NodeInstaller", _progress(current, target)))),
            (INSTALLER_SECONDS, self._install),
            (WARN_SECONDS + DOWN_SECONDS, lambda: self._new_server_up(self._table)),
            (SETTLE_SECONDS, lambda: self._done(self._latest)),
        ]

    def _install(self) -> None:
        """The installer is done: from here on a new revision is a rollout of its own."""
        with self._lock:
            self._installing = False
        self._stop_old_server()

    def _serving_table(self, apiserver: Obj | None) -> dict[str, model.ServedCert]:
        """SNI name -> certificate for a revision: the load-balancer cert, overridden by named certificates."""
        lb = self._lb_cert()
        table = {name.lower(): lb for name in certs.first_cert_names(lb.cert_pem)} if lb else {}
        for named in named_certificates(apiserver):
            secret = str((named.get("servingCertificate") or {}).get("name", ""))
            cert = base.load_tls(self._cluster, CONFIG_NAMESPACE, secret)
            names = named.get("names") or certs.first_cert_names(cert.cert_pem)
            table.update(dict.fromkeys((str(n).lower() for n in names), cert))
        return table

    def _lb_cert(self) -> model.ServedCert | None:
        try:
            return base.load_tls(self._cluster, LB_SECRET[0], LB_SECRET[1])
        except base.BadSecret:
            return None

    def _report(self, updates: list[conditions.Condition]) -> None:
        conditions.set_operator(self._cluster, OPERATOR, updates)

    def _stop_old_server(self) -> None:
        wall = self._cluster.timeline.scaled
        self._cluster.availability.outage(wall(WARN_SECONDS), "503")
        self._cluster.availability.outage(wall(DOWN_SECONDS), "refuse", start_in=wall(WARN_SECONDS))

    def _new_server_up(self, table: dict[str, model.ServedCert]) -> None:
        self._cluster.availability.outage(self._cluster.timeline.scaled(WARN_SECONDS), "503")
        with self._lock:
            stale, self._served = self._served - set(table), set(table)
        for name in stale:
            self._cluster.serving.remove("api", name)
        for name, cert in table.items():
            self._cluster.serving.set("api", name, cert)

    def _done(self, target: int) -> None:
        with self._lock:
            self._revision = target
        message = f"NodeInstallerProgressing: 1 node is at revision {target}"
        self._report([*conditions.settled(message)])

    def _failing_plan(self, current: int, target: int, problem: str, apiserver: Obj | None) -> list[base.Step]:
        names = sorted(n for named in named_certificates(apiserver) for n in named.get("names") or [])
        progress = _progress(current, target)
        crash = (
            f'StaticPodsDegraded: pod/kube-apiserver container "kube-apiserver" is waiting: CrashLoopBackOff: '
            f"revision {target}: failed to load SNI cert and key for {names}: {problem}; "
            f"the startup monitor fell back to revision {current}"
        )
        return [
            (0.0, lambda: self._report(conditions.progressing("NodeInstaller", progress))),
            (INSTALLER_SECONDS, self._stop_old_server),
            (WARN_SECONDS + DOWN_SECONDS, lambda: self._report(conditions.degraded("StaticPods_Error", crash))),
        ]


def _progress(current: int, target: int) -> str:
    return f"NodeInstallerProgressing: 1 node is at revision {current}; 0 nodes have achieved new revision {target}"
