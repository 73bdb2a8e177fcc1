"""A factory-fresh Single Node OpenShift, as the agent finds it at the edge before anything is changed.

Three versions, two mirror eras: "4.12" serves only ImageContentSourcePolicy (ImageDigestMirrorSet and
ImageTagMirrorSet arrived in 4.13, so the API server does not know them: `unserved`); "4.14" serves all three with
the factory mirror still an ICSP; "4.16" has an ImageDigestMirrorSet. The
cluster `sno1` of `factory.example.com` (clearly fake names, realistic shapes) has its singleton configs, ~30
healthy ClusterOperators, one Ready node on its fixed internal IP, working signer key pairs, the operator routes
and a spread of user routes (explicit, generated, edge/passthrough/reencrypt, one on an unrelated domain that
must never be touched). Every object is written straight into the store (no controllers run yet) and must pass
the CRD schemas, which the tests check.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from snoreloc_sim.kube import certs, model
from snoreloc_sim.openshift.operators import base, component_routes, conditions, kubelet, machine_config, routes, shelf

Obj = model.Obj

CLUSTER_NAME = "sno1"
BASE_DOMAIN = "factory.example.com"
NODE_NAME = "sno1-node"
INTERNAL_IP = "192.168.127.10"
USER_NAMESPACES = ("edge-app", "edge-data")
UNRELATED_HOST = "legacy.example.org"
FACTORY_REGISTRY = "registry.factory.example.com:5000"
# (OpenShift release, its kubelet/kube-apiserver version). 4.12.0 / v1.25.4+77bec7a is the pair `oc version`
# prints on a 4.12.0 cluster ("Server Version: 4.12.0", "Kubernetes Version: v1.25.4+77bec7a").
VERSIONS = {
    "4.12": ("4.12.0", "v1.25.4+77bec7a"),
    "4.14": ("4.14.38", "v1.27.16+03a907c"),
    "4.16": ("4.16.21", "v1.29.10+67d3387"),
}
# The factory mirror object's type, per seed.
FACTORY_MIRROR = {"4.12": base.ICSPS, "4.14": base.ICSPS, "4.16": base.IDMS}
# Types the seed's API server does not serve: no discovery entry, 404 on any request.
UNSERVED: dict[str, frozenset[str]] = {"4.12": frozenset({base.IDMS, base.ITMS})}
# (RHCOS build, CRI-O package, kernel) the node reports, per seed.
NODE_SOFTWARE = {
    "4.12": ("412.86.202212081411-0", "1.25.1-5.rhaos4.12.git6005903.el8", "4.18.0-372.36.1.el8_6.x86_64"),
    "4.14": ("414.92.202410151224-0", "1.27.8-4.rhaos4.14.git9db8d5c.el9", "5.14.0-427.40.1.el9_4.x86_64"),
    "4.16": ("416.94.202410211619-0", "1.29.10-3.rhaos4.16.git5b9e3ae.el9", "5.14.0-427.40.1.el9_4.x86_64"),
}

NAMESPACES = (
    "default",
    "kube-system",
    "openshift-config",
    "openshift-config-managed",
    "openshift-ingress",
    "openshift-ingress-operator",
    "openshift-kube-apiserver",
    "openshift-kube-apiserver-operator",
    "openshift-kube-controller-manager",
    "openshift-kube-controller-manager-operator",
    "openshift-console",
    "openshift-authentication",
    "openshift-monitoring",
    "openshift-ingress-canary",
    "openshift-machine-config-operator",
    "openshift-apiserver",
    "openshift-marketplace",
    *USER_NAMESPACES,
)

CLUSTER_OPERATORS = (
    "authentication",
    "baremetal",
    "cloud-controller-manager",
    "cloud-credential",
    "cluster-autoscaler",
    "config-operator",
    "console",
    "control-plane-machine-set",
    "csi-snapshot-controller",
    "dns",
    "etcd",
    "image-registry",
    "ingress",
    "insights",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-storage-version-migrator",
    "machine-api",
    "machine-approver",
    "machine-config",
    "marketplace",
    "monitoring",
    "network",
    "node-tuning",
    "openshift-apiserver",
    "openshift-marketplace",
    "openshift-controller-manager",
    "openshift-samples",
    "operator-lifecycle-manager",
    "operator-lifecycle-manager-catalog",
    "operator-lifecycle-manager-packageserver",
    "service-ca",
    "storage",
)


@dataclass(frozen=True)
class SeedFacts:
    """What a test needs to know about the seeded cluster without reading it back."""

    cluster_name: str
    base_domain: str
    domain: str  # <cluster>.<base>
    apps_domain: str
    api_host: str
    node_name: str
    internal_ip: str
    version: str  # full, e.g. 4.16.21
    minor: str  # a key of VERSIONS: "4.12" | "4.14" | "4.16"
    kube_version: str
    cluster_id: str
    mirror_kind: str  # the factory mirror object's store key
    user_namespaces: tuple[str, ...]
    unrelated_host: str
    routes: int
    expired_kubelet_cert: bool
    lb_signer_pem: bytes
    router_ca_pem: bytes
    shelved_days: int = 0  # days between the seal and this start (`operators.shelf`)
    kubelet_pki: tuple[tuple[str, bytes], ...] = ()  # the kubelet's certificate files on the node: (path, PEM)
    sealed_secrets: tuple[Obj, ...] = ()  # the aged Secrets as the seal found them, before any regeneration


@dataclass(frozen=True)
class _Pki:
    lb_signer: certs.KeyPair
    api: certs.KeyPair
    api_int: certs.KeyPair
    router_ca: certs.KeyPair
    router: certs.KeyPair
    user_ca: certs.KeyPair


def unserved(version: str) -> frozenset[str]:
    """Store keys of the types a cluster of this seed version does not serve (empty for an unknown version)."""
    return UNSERVED.get(version, frozenset())


def load(
    cluster: model.Cluster,
    *,
    version: str = "4.16",
    routes: int = 0,
    expired_kubelet_cert: bool = False,
    shelved_days: int = 0,
) -> SeedFacts:
    """Fill `cluster.store` with a factory SNO and set what its endpoints serve; return the facts.

    `shelved_days`: the node was sealed that many days ago; every certificate of `operators.shelf` is that much
    older, and what the platform does at start with the expired ones is scheduled (the kubelet's CSRs when its
    client certificate has expired, as `expired_kubelet_cert` asks for whatever the days)."""
    if version not in VERSIONS:
        raise ValueError(f"unknown seed version {version!r}: choose one of {sorted(VERSIONS)}")
    if shelved_days < 0:
        raise ValueError(f"shelved_days must be 0 or more, not {shelved_days}")
    expired = expired_kubelet_cert or shelf.kubelet_expired(shelved_days)
    facts = _facts(version, routes, expired)
    pki = _mint(facts, shelf.installed_at(shelved_days))
    facts = _with_cas(facts, pki)
    seed = _Seeder(cluster, facts)
    seed.all(pki)
    files, sealed = shelf.age(cluster, days=shelved_days, node=facts.node_name)
    facts = dataclasses.replace(
        facts, shelved_days=shelved_days, kubelet_pki=tuple(sorted(files.items())), sealed_secrets=tuple(sealed)
    )
    _serve(cluster, facts, pki)
    if expired:
        kubelet.shelve(cluster, facts.node_name, [facts.internal_ip])
    shelf.start(cluster)
    return facts


def _facts(minor: str, route_count: int, expired: bool) -> SeedFacts:
    domain = f"{CLUSTER_NAME}.{BASE_DOMAIN}"
    full, kube = VERSIONS[minor]
    return SeedFacts(
        cluster_name=CLUSTER_NAME,
        base_domain=BASE_DOMAIN,
        domain=domain,
        apps_domain=f"apps.{domain}",
        api_host=f"api.{domain}",
        node_name=NODE_NAME,
        internal_ip=INTERNAL_IP,
        version=full,
        minor=minor,
        kube_version=kube,
        cluster_id=str(uuid.uuid4()),
        mirror_kind=FACTORY_MIRROR[minor],
        user_namespaces=USER_NAMESPACES,
        unrelated_host=UNRELATED_HOST,
        routes=route_count,
        expired_kubelet_cert=expired,
        lb_signer_pem=b"",
        router_ca_pem=b"",
    )


def _with_cas(facts: SeedFacts, pki: _Pki) -> SeedFacts:
    return dataclasses.replace(facts, lb_signer_pem=pki.lb_signer.cert_pem, router_ca_pem=pki.router_ca.cert_pem)


def _mint(facts: SeedFacts, installed: datetime) -> _Pki:
    """The factory's key pairs, with the CNs OpenShift's own signers use (the installer's 10-year load-balancer
    signer dated from the install)."""
    epoch = int(datetime.now(UTC).timestamp())
    lb_signer = certs.make_ca("kube-apiserver-lb-signer", start=installed)
    router_ca = certs.make_ca(f"ingress-operator@{epoch}")
    return _Pki(
        lb_signer=lb_signer,
        api=certs.issue(lb_signer, [facts.api_host]),
        api_int=certs.issue(lb_signer, [f"api-int.{facts.domain}"]),
        router_ca=router_ca,
        router=certs.issue(router_ca, [f"*.{facts.apps_domain}", facts.apps_domain]),
        user_ca=certs.make_ca("edge-app-ca"),
    )


def _serve(cluster: model.Cluster, facts: SeedFacts, pki: _Pki) -> None:
    cluster.serving.set("api", facts.api_host, model.ServedCert(pki.api.cert_pem, pki.api.key_pem))
    cluster.serving.set("api", f"api-int.{facts.domain}", model.ServedCert(pki.api_int.cert_pem, pki.api_int.key_pem))
    cluster.serving.set("router", "", model.ServedCert(pki.router.cert_pem, pki.router.key_pem))


def _ago(hours: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Seeder:
    """Writes the objects; one method per area of the cluster."""

    def __init__(self, cluster: model.Cluster, facts: SeedFacts) -> None:
        self._cluster, self._facts = cluster, facts
        self._now = base.timestamp()

    def put(self, key: str, obj: Obj) -> None:
        self._cluster.store.create(self._cluster.types[key], obj)

    def all(self, pki: _Pki) -> None:
        for namespace in NAMESPACES:
            self.put(base.NAMESPACES, {"metadata": {"name": namespace}, "status": {"phase": "Active"}})
        self.cluster_config()
        self.ingress_config()
        self.operators()
        self.node()
        self.machine_config()
        self.secrets(pki)
        self.operator_routes()
        self.user_routes(pki)
        self.bulk_routes()

    def cluster_config(self) -> None:
        f = self._facts
        self.put(base.CLUSTERVERSIONS, cluster_version(f, self._now))
        self.put(base.INFRASTRUCTURES, infrastructure(f))
        self.put(base.DNSES, {"metadata": {"name": "cluster"}, "spec": {"baseDomain": f.domain}, "status": {}})
        self.put(base.APISERVERS, {"metadata": {"name": "cluster"}, "spec": {"audit": {"profile": "Default"}}})
        image_status = {"internalRegistryHostname": "image-registry.openshift-image-registry.svc:5000"}
        self.put(base.IMAGES, {"metadata": {"name": "cluster"}, "spec": {}, "status": image_status})
        self.put(base.PROXIES, {"metadata": {"name": "cluster"}, "spec": {"trustedCA": {"name": ""}}, "status": {}})
        self.put(base.OAUTHS, {"metadata": {"name": "cluster"}, "spec": {}})
        self.put(base.OPERATORHUBS, {"metadata": {"name": "cluster"}, "spec": {}})
        console_status = {"consoleURL": f"https://console-openshift-console.{f.apps_domain}"}
        self.put(base.CONSOLES, {"metadata": {"name": "cluster"}, "spec": {}, "status": console_status})
        self.put(base.NETWORKS, network())
        self.put(f.mirror_kind, mirror_object(f.mirror_kind))

    def ingress_config(self) -> None:
        f = self._facts
        ingress: Obj = {"metadata": {"name": "cluster"}, "spec": {"domain": f.apps_domain}}
        entries = [
            component_routes.status_entry(c, ingress, c.default_host(ingress), None, self._now)
            for c in component_routes.ALL
        ]
        ingress["status"] = {"defaultPlacement": "ControlPlane", "componentRoutes": entries}
        self.put(base.INGRESSES, ingress)
        self.put(base.INGRESSCONTROLLERS, ingress_controller(f, self._now))

    def operators(self) -> None:
        for name in CLUSTER_OPERATORS:
            related = [{"group": "", "resource": "namespaces", "name": f"openshift-{name}"}]
            status = conditions.operator_status(self._facts.version, related, self._now)
            self.put(base.CLUSTEROPERATORS, {"metadata": {"name": name}, "spec": {}, "status": status})

    def node(self) -> None:
        self.put(base.NODES, node(self._facts, rendered_config(1)))

    def machine_config(self) -> None:
        rendered = rendered_config(1)
        for name in ("00-master", "01-master-kubelet", "99-master-generated-registries", "99-master-ssh", rendered):
            self.put(base.MACHINECONFIGS, machine_config_object(name, self._facts.version))
        self.put(base.MACHINECONFIGPOOLS, master_pool(rendered, self._now))

    def secrets(self, pki: _Pki) -> None:
        tls = base.tls_secret
        self.put(base.SECRETS, pull_secret())
        self.put(base.SECRETS, tls("openshift-kube-apiserver-operator", "loadbalancer-serving-signer", pki.lb_signer))
        self.put(base.SECRETS, tls("openshift-kube-apiserver", "external-loadbalancer-serving-certkey", pki.api))
        self.put(base.SECRETS, tls("openshift-kube-apiserver", "internal-loadbalancer-serving-certkey", pki.api_int))
        self.put(base.SECRETS, tls("openshift-ingress-operator", "router-ca", pki.router_ca))
        self.put(base.SECRETS, tls("openshift-ingress", "router-certs-default", pki.router))
        bundle = {"ca-bundle.crt": pki.router_ca.cert_pem.decode()}
        cm = {"metadata": {"name": "default-ingress-cert", "namespace": "openshift-config-managed"}, "data": bundle}
        self.put(base.CONFIGMAPS, cm)

    def operator_routes(self) -> None:
        apps = self._facts.apps_domain
        self.put(base.CONFIGMAPS, component_routes.oauth_metadata_configmap(f"oauth-openshift.{apps}"))
        for body in operator_route_bodies(apps):
            self.put(base.ROUTES, admitted(body, apps, self._now))

    def user_routes(self, pki: _Pki) -> None:
        apps = self._facts.apps_domain
        for body in user_route_bodies(apps, pki.user_ca):
            self.put(base.ROUTES, admitted(body, apps, self._now))

    def bulk_routes(self) -> None:
        apps, namespace = self._facts.apps_domain, USER_NAMESPACES[1]
        for index in range(self._facts.routes):
            name = f"app-{index:05d}"
            host = f"{name}.{apps}" if index % 2 == 0 else ""
            self.put(base.ROUTES, admitted(route(namespace, name, host, service=name), apps, self._now))


def cluster_version(f: SeedFacts, now: str) -> Obj:
    image = "quay.io/openshift-release-dev/ocp-release@sha256:" + secrets.token_hex(32)
    history = {
        "state": "Completed",
        "version": f.version,
        "image": image,
        "startedTime": _ago(30),
        "completionTime": _ago(29),
        "verified": False,
    }
    conds = [
        conditions.Condition("Available", "True", "", f"Done applying {f.version}"),
        conditions.Condition("Failing", "False"),
        conditions.Condition("Progressing", "False", "", f"Cluster version is {f.version}"),
        conditions.Condition("RetrievedUpdates", "False", "NoChannel", "The update channel has not been configured."),
    ]
    status = {
        "desired": {"version": f.version, "image": image},
        "history": [history],
        "observedGeneration": 1,
        "versionHash": "x0FnSw_Pkx0=",
        "availableUpdates": None,
        "conditions": conditions.merge([], conds, now),
    }
    return {"metadata": {"name": "version"}, "spec": {"clusterID": f.cluster_id}, "status": status}


def infrastructure(f: SeedFacts) -> Obj:
    status = {
        "apiServerURL": f"https://api.{f.domain}:6443",
        "apiServerInternalURI": f"https://api-int.{f.domain}:6443",
        "controlPlaneTopology": "SingleReplica",
        "infrastructureTopology": "SingleReplica",
        "cpuPartitioning": "None",
        "etcdDiscoveryDomain": "",
        "infrastructureName": f"{f.cluster_name}-x7k2p",
        "platform": "None",
        "platformStatus": {"type": "None"},
    }
    spec = {"cloudConfig": {"name": ""}, "platformSpec": {"type": "None"}}
    return {"metadata": {"name": "cluster"}, "spec": spec, "status": status}


def network() -> Obj:
    spec = {
        "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
        "serviceNetwork": ["172.30.0.0/16"],
        "networkType": "OVNKubernetes",
        "externalIP": {"policy": {}},
    }
    status = {
        "clusterNetwork": spec["clusterNetwork"],
        "serviceNetwork": spec["serviceNetwork"],
        "networkType": "OVNKubernetes",
        "clusterNetworkMTU": 1400,
    }
    return {"metadata": {"name": "cluster"}, "spec": spec, "status": status}


def mirror_object(key: str) -> Obj:
    pairs = [
        ("quay.io/openshift-release-dev/ocp-release", f"{FACTORY_REGISTRY}/ocp4/openshift-release"),
        ("quay.io/openshift-release-dev/ocp-v4.0-art-dev", f"{FACTORY_REGISTRY}/ocp4/openshift-release-dev"),
    ]
    items = [{"source": source, "mirrors": [mirror]} for source, mirror in pairs]
    field = "repositoryDigestMirrors" if key == base.ICSPS else "imageDigestMirrors"
    return {"metadata": {"name": "factory-mirror"}, "spec": {field: items}}


def ingress_controller(f: SeedFacts, now: str) -> Obj:
    conds = [
        conditions.Condition("Admitted", "True", "Valid"),
        conditions.Condition("Available", "True", "", ""),
        conditions.Condition("Progressing", "False", "", ""),
        conditions.Condition("Degraded", "False", "", ""),
        conditions.Condition(
            "DeploymentAvailable", "True", "DeploymentAvailable", "The deployment has Available status"
        ),
    ]
    status = {
        "availableReplicas": 1,
        "domain": f.apps_domain,
        "selector": "ingresscontroller.operator.openshift.io/deployment-ingresscontroller=default",
        "endpointPublishingStrategy": {
            "type": "HostNetwork",
            "hostNetwork": {"protocol": "TCP", "httpPort": 80, "httpsPort": 443, "statsPort": 1936},
        },
        "observedGeneration": 1,
        "conditions": conditions.merge([], conds, now),
    }
    meta = {"name": "default", "namespace": "openshift-ingress-operator"}
    return {"metadata": meta, "spec": {"replicas": 1}, "status": status}


def rendered_config(serial: int) -> str:
    return machine_config.rendered_name(serial)


def machine_config_object(name: str, version: str) -> Obj:
    labels = {"machineconfiguration.openshift.io/role": "master"}
    meta: Obj = {"name": name, "labels": labels}
    if name.startswith("rendered-"):
        meta["annotations"] = {"machineconfiguration.openshift.io/generated-by-controller-version": version}
        meta.pop("labels")
    return {"metadata": meta, "spec": {"config": {"ignition": {"version": "3.2.0"}}}}


def master_pool(rendered: str, now: str) -> Obj:
    conds = [
        conditions.Condition("RenderDegraded", "False", "", ""),
        conditions.Condition("NodeDegraded", "False", "", ""),
        conditions.Condition("Degraded", "False", "", ""),
        conditions.Condition("Updated", "True", "", f"All nodes are updated with MachineConfig {rendered}"),
        conditions.Condition("Updating", "False", "", ""),
    ]
    spec = {
        "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "master"}},
        "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/master": ""}},
        "paused": False,
        "configuration": {"name": rendered},
    }
    status = {
        "machineCount": 1,
        "updatedMachineCount": 1,
        "readyMachineCount": 1,
        "unavailableMachineCount": 0,
        "degradedMachineCount": 0,
        "observedGeneration": 1,
        "configuration": {"name": rendered},
        "conditions": conditions.merge([], conds, now),
    }
    meta = {"name": "master", "labels": {"pools.operator.machineconfiguration.openshift.io/master": ""}}
    return {"metadata": meta, "spec": spec, "status": status}


def node(f: SeedFacts, rendered: str) -> Obj:
    annotations = {
        "machineconfiguration.openshift.io/currentConfig": rendered,
        "machineconfiguration.openshift.io/desiredConfig": rendered,
        "machineconfiguration.openshift.io/state": "Done",
    }
    roles = ("master", "control-plane", "worker")
    labels = {f"node-role.kubernetes.io/{role}": "" for role in roles}
    labels.update({"kubernetes.io/hostname": f.node_name, "kubernetes.io/os": "linux"})
    meta = {"name": f.node_name, "labels": labels, "annotations": annotations}
    return {"metadata": meta, "spec": {}, "status": node_status(f)}


def node_status(f: SeedFacts) -> Obj:
    now = model.now_rfc3339()
    if f.expired_kubelet_cert:
        ready = {"status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}
    else:
        ready = {"status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    pressure = [
        {"type": kind, "status": "False", "reason": f"KubeletHas{reason}", "message": ""}
        for kind, reason in (("MemoryPressure", "SufficientMemory"), ("DiskPressure", "NoDiskPressure"))
    ]
    conds = [*pressure, {"type": "Ready", **ready}]
    for cond in conds:
        cond.update(lastHeartbeatTime=now, lastTransitionTime=now)
    return {
        "addresses": [{"type": "InternalIP", "address": f.internal_ip}, {"type": "Hostname", "address": f.node_name}],
        "conditions": conds,
        "capacity": {"cpu": "16", "memory": "65586460Ki", "pods": "250"},
        "nodeInfo": node_info(f),
    }


def node_info(f: SeedFacts) -> Obj:
    rhcos, crio, kernel = NODE_SOFTWARE[f.minor]
    return {
        "architecture": "amd64",
        "bootID": str(uuid.uuid4()),
        "containerRuntimeVersion": f"cri-o://{crio}",
        "kernelVersion": kernel,
        "kubeProxyVersion": f.kube_version,
        "kubeletVersion": f.kube_version,
        "machineID": uuid.uuid4().hex,
        "operatingSystem": "linux",
        "osImage": f"Red Hat Enterprise Linux CoreOS {rhcos}",
        "systemUUID": str(uuid.uuid4()),
    }


def pull_secret() -> Obj:
    """Fake registry auths (random tokens: nothing here is a real credential)."""
    registries = ("cloud.openshift.com", "quay.io", "registry.redhat.io", FACTORY_REGISTRY)
    auths = {
        registry: {"auth": base.b64(f"factory-bot:{secrets.token_urlsafe(24)}"), "email": "factory@example.com"}
        for registry in registries
    }
    data = {".dockerconfigjson": base64.b64encode(json.dumps({"auths": auths}).encode()).decode()}
    meta = {"name": "pull-secret", "namespace": "openshift-config"}
    return {"metadata": meta, "type": "kubernetes.io/dockerconfigjson", "data": data}


def route(namespace: str, name: str, host: str, *, service: str, port: str = "http", tls: Obj | None = None) -> Obj:
    """A Route body; an empty host is generated here as openshift-apiserver would (annotation included)."""
    spec: Obj = {"to": {"kind": "Service", "name": service, "weight": 100}, "port": {"targetPort": port}}
    spec["wildcardPolicy"] = "None"
    if tls is not None:
        spec["tls"] = tls
    meta: Obj = {"name": name, "namespace": namespace}
    if host:
        spec["host"] = host
    return {"metadata": meta, "spec": spec}


def admitted(body: Obj, apps: str, now: str) -> Obj:
    """The route with a host (generated if empty) and the router's admission status."""
    if not body["spec"].get("host"):
        body["spec"]["host"] = routes.generated_host(body, apps)
        body["metadata"]["annotations"] = {routes.GENERATED: "true"}
    body["status"] = {"ingress": [routes.ingress_entry(body, apps, [], now)]}
    return body


def operator_route_bodies(apps: str) -> list[Obj]:
    reencrypt = {"termination": "reencrypt", "insecureEdgeTerminationPolicy": "Redirect"}
    edge = {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
    passthrough = {"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"}
    return [
        route(
            "openshift-console",
            "console",
            f"console-openshift-console.{apps}",
            service="console",
            port="https",
            tls=reencrypt,
        ),
        route("openshift-console", "downloads", f"downloads-openshift-console.{apps}", service="downloads", tls=edge),
        route(
            "openshift-authentication",
            "oauth-openshift",
            f"oauth-openshift.{apps}",
            service="oauth-openshift",
            port="6443",
            tls=passthrough,
        ),
        route("openshift-ingress-canary", "canary", "", service="ingress-canary", port="8080", tls=edge),
        route("openshift-monitoring", "alertmanager-main", "", service="alertmanager-main", port="web", tls=reencrypt),
        route("openshift-monitoring", "prometheus-k8s", "", service="prometheus-k8s", port="web", tls=reencrypt),
        route("openshift-monitoring", "thanos-querier", "", service="thanos-querier", port="web", tls=reencrypt),
    ]


def user_route_bodies(apps: str, user_ca: certs.KeyPair) -> list[Obj]:
    """User routes: explicit and generated hosts, each TLS termination, and one host outside the apps domain."""
    app, data = USER_NAMESPACES
    shop = certs.issue(user_ca, [f"shop.{apps}"])
    payments = certs.issue(user_ca, [f"payments.{apps}"])
    backend_ca = certs.make_ca("payments-backend-ca")
    edge = {"termination": "edge", "certificate": shop.cert_pem.decode(), "key": shop.key_pem.decode()}
    edge["caCertificate"] = user_ca.cert_pem.decode()
    reencrypt = {
        "termination": "reencrypt",
        "certificate": payments.cert_pem.decode(),
        "key": payments.key_pem.decode(),
        "destinationCACertificate": backend_ca.cert_pem.decode(),
    }
    return [
        route(app, "shop", f"shop.{apps}", service="shop", tls=edge),
        route(app, "payments", f"payments.{apps}", service="payments", port="https", tls=reencrypt),
        route(app, "mqtt", f"mqtt.{apps}", service="mqtt-broker", port="8883", tls={"termination": "passthrough"}),
        route(app, "api-gateway", "", service="api-gateway"),
        route(data, "reports", "", service="reports"),
        route(data, "legacy", UNRELATED_HOST, service="legacy", tls={"termination": "edge"}),
    ]
