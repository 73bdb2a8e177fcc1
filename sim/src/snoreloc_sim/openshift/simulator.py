"""One running simulated SNO: the cluster model, its seed and operators, the API and router listeners, a kubeconfig.

Tests, the demo, benchmarks and `snoreloc sim serve` all start the simulator the same way, so a scenario that
fails in one reproduces in the others::

    with Simulator(seed="4.16", speed=600, faults="seed=7,503=0.05") as sim:
        client = kubernetes.config.new_client_from_config(str(sim.kubeconfig_path))

Start-up mints the CA and serving key pairs (EC, fast), loads the seed and starts the operators; it takes well
under a second on a laptop and is bounded at `START_SECONDS` on anything slower.
"""

from __future__ import annotations

import logging
import secrets
import time
from pathlib import Path
from typing import Any

import yaml

from snoreloc_sim.kube import api as kube_api
from snoreloc_sim.kube import clientauth, faults, model, registry, server, tls, validation
from snoreloc_sim.kube.served import Served, client_cert_kubeconfig, write_private
from snoreloc_sim.openshift import admin_access, crds, dns, operators, seeds

LOG = logging.getLogger(__name__)

START_SECONDS = 5.0


def _fault_spec(value: faults.FaultSpec | str | None) -> faults.FaultSpec | None:
    if isinstance(value, str):
        return faults.parse(value) if value.strip() else None
    return value


def version_info(openshift_version: str) -> dict[str, Any]:
    """`/version` for an OpenShift release: 4.N ships Kubernetes 1.(N+13) (4.14 -> 1.27, 4.16 -> 1.29)."""
    minor = int(openshift_version.split(".")[1]) + 13
    return {
        "major": "1",
        "minor": str(minor),
        "gitVersion": f"v1.{minor}.10+67d3387",
        "gitCommit": "67d338757e35bd1e2a3e9b6d1f2b0c1f0d6a8a51",
        "gitTreeState": "clean",
        "buildDate": "2024-10-01T00:00:00Z",
        "goVersion": "go1.21.13",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


class Simulator(Served):
    """A simulated SNO served over HTTPS on 127.0.0.1; a context manager (`start()` on enter, `stop()` on exit).

    `seed` is the OpenShift minor version ("4.12": ICSP only, "4.14": IDMS served but the factory mirror is an
    ICSP, "4.16": IDMS era; see `seeds`); `speed` divides every simulated duration; `faults` is a FaultSpec or
    its string form (see `faults`); `routes` adds that many user routes; `port`/`router_port` 0 pick free ports;
    `workdir` (default: a private temporary directory) holds the kubeconfig. Name resolution (`openshift.dns`):
    `site_dns` is what the site's DNS answers (default: every name, pointing at the node); `node_dns` says whether
    the factory node has the SNO dnsmasq configuration; `host_root` is the node's root directory, where the
    node's dnsmasq reads its overrides file on `restart_dnsmasq()`.
    `shelved_days`: the node was sealed that many days before this start (`operators.shelf`: every certificate
    aged, the expired ones regenerated, asked for by CSR, or left stuck at start).

    Besides `kubeconfig_path` (a bearer token: what the agent's node kubeconfig stands for, valid whatever the
    admin client CA holds), `factory_admin_kubeconfig` is the factory's admin kubeconfig: a client certificate
    signed by the admin client CA seeded in `openshift-config/admin-kubeconfig-client-ca` (`admin_access`).
    `kubeadmin_password` is the seeded kubeadmin password; `kubeadmin_login` checks one against the Secret.
    """

    def __init__(
        self,
        seed: str = "4.16",
        speed: float = 1.0,
        *,
        faults: faults.FaultSpec | str | None = None,
        routes: int = 0,
        port: int = 0,
        router_port: int = 0,
        token: str | None = None,
        workdir: Path | str | None = None,
        expired_kubelet_cert: bool = False,
        shelved_days: int = 0,
        crd_dir: Path | None = None,
        site_dns: dns.SiteDns | None = None,
        node_dns: bool = True,
        host_root: Path | None = None,
    ) -> None:
        self.seed = seed
        self.speed = speed
        self.fault_spec = _fault_spec(faults)
        self.routes = routes
        self.expired_kubelet_cert = expired_kubelet_cert
        self.shelved_days = shelved_days
        self.token = token or secrets.token_urlsafe(32)
        self._ports = (port, router_port)
        self._crd_dir = crd_dir
        super().__init__(workdir)
        self._state: _Running | None = None
        self.seed_facts: Any = None
        self.startup_seconds = 0.0
        self._site_dns, self._node_dns, self.host_root = site_dns, node_dns, host_root
        self.dns: dns.Resolution | None = None
        self.factory_access: admin_access.Factory | None = None

    # lifecycle

    def start(self) -> Simulator:
        if self._state is not None:
            return self
        began = time.monotonic()
        authority = tls.new_authority()
        served = self._served(registry.load(self._crd_dir or crds.DIR))
        cluster = model.Cluster(store=model.Store(), timeline=model.Timeline(self.speed), types=dict(served.types))
        cluster.serving.set("api", "", authority.served())
        self.seed_facts = self._populate(cluster)
        self._state = _Running(self, authority, served, cluster)
        self._state.start(self._ports)
        self._write_kubeconfig()
        self.startup_seconds = time.monotonic() - began
        LOG.info("simulator up at %s in %.2fs", self.api_url, self.startup_seconds)
        return self

    def _served(self, every: registry.Registry) -> registry.Registry:
        """What this seed's API server knows: a 4.12 cluster has no ImageDigestMirrorSet/ImageTagMirrorSet."""
        return every.without(seeds.unserved(self.seed))

    def _populate(self, cluster: model.Cluster) -> Any:
        facts = seeds.load(
            cluster,
            version=self.seed,
            routes=self.routes,
            expired_kubelet_cert=self.expired_kubelet_cert,
            shelved_days=self.shelved_days,
        )
        self.dns = self._resolution(facts)
        self.factory_access = admin_access.mint()
        admin_access.seed(cluster, self.factory_access)
        operators.start(cluster, self.dns)
        return facts

    def _resolution(self, facts: Any) -> dns.Resolution:
        install = dns.Install(facts.cluster_name, facts.base_domain, facts.internal_ip) if self._node_dns else None
        site = self._site_dns if self._site_dns is not None else dns.SiteDns.everything(facts.internal_ip)
        return dns.Resolution(dns.NodeDns(install, self.host_root), site)

    def resolve(self, name: str) -> list[str]:
        """What `name` resolves to on the node (its dnsmasq, then the site's DNS); empty when it does not."""
        return self.dns.lookup(name) if self.dns is not None else []

    def attach_host_root(self, root: Path) -> None:
        """Where the node's files are (the demo's and the tests' temporary host root)."""
        if self.dns is not None:
            self.dns.node.root = root
            self.dns.node.restart()  # the boot's start of dnsmasq.service: its script writes its file there

    def restart_dnsmasq(self) -> None:
        """The node's `systemctl restart dnsmasq.service`: its script re-reads the overrides file."""
        if self.dns is not None:
            self.dns.node.restart()

    def _halt(self) -> None:
        if self._state is not None:
            self._state.stop()
            self._state = None

    # what clients need

    @property
    def running(self) -> _Running:
        if self._state is None:
            raise RuntimeError("the simulator is not running: call start()")
        return self._state

    @property
    def cluster(self) -> model.Cluster:
        return self.running.cluster

    @property
    def injector(self) -> faults.Injector | None:
        return self.running.injector

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.running.api.port}"

    @property
    def router_address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.running.router.port)

    @property
    def ca_pem(self) -> bytes:
        return self.running.authority.ca_pem

    @property
    def factory_admin_kubeconfig(self) -> Path:
        return self.workdir / "factory-admin.kubeconfig"

    @property
    def kubeadmin_password(self) -> str:
        if self.factory_access is None:
            raise RuntimeError("the simulator is not running: call start()")
        return self.factory_access.kubeadmin_password

    def kubeadmin_login(self, password: str) -> bool:
        """Whether kubeadmin can log in with `password` now (the Secret exists and its hash matches)."""
        return admin_access.kubeadmin_login(self.cluster, password)

    def _write_kubeconfig(self) -> None:
        self.publish_kubeconfig(self.api_url, self.ca_pem, self.token)
        assert self.factory_access is not None
        client = self.factory_access.client
        config = client_cert_kubeconfig(self.api_url, self.ca_pem, client.cert_pem, client.key_pem)
        write_private(self.factory_admin_kubeconfig, yaml.safe_dump(config, sort_keys=False))


class _Running:
    """The parts that exist only while the simulator runs."""

    def __init__(
        self, owner: Simulator, authority: tls.Authority, served: registry.Registry, cluster: model.Cluster
    ) -> None:
        self.authority = authority
        self.cluster = cluster
        self.contexts = tls.Contexts()
        self.injector = faults.Injector(owner.fault_spec) if owner.fault_spec is not None else None
        version = version_info(owner.seed)
        self.handler = kube_api.Api(cluster, served, validation.Validator(owner._crd_dir or crds.DIR), version)
        verifier = clientauth.Verifier(admin_access.client_ca_bundle(cluster, authority.ca_pem))
        self.front = server.Front(
            self.handler, owner.token, cluster.availability, cluster.recorder, self.injector, client_cas=verifier
        )
        self.api: server.Listener
        self.router: server.Listener

    def start(self, ports: tuple[int, int]) -> None:
        fallback, serving = self.authority.served(), self.cluster.serving
        refuse = self._refusing
        api_context = tls.server_context(serving, "api", fallback, self.contexts, client_certificates=True)
        self.api = server.Listener(self.front, api_context, port=ports[0], refuse=refuse)
        router_context = tls.server_context(serving, "router", fallback, self.contexts)
        self.router = server.Listener(server.RouterService(), router_context, port=ports[1])
        self.handler.server_address = f"127.0.0.1:{self.api.port}"
        if self.injector is not None:
            self.injector.schedule_outages(self.cluster.availability)
        self.api.start()
        self.router.start()

    def _refusing(self) -> bool:
        return self.cluster.availability.down() == "refuse"

    def stop(self) -> None:
        if self.injector is not None:
            self.injector.stopped.set()
        self.handler.stopped.set()
        self.api.stop()
        self.router.stop()
        self.cluster.timeline.close()
        self.contexts.close()
