"""The simulated OpenShift operators: each reacts to store changes with a realistic, speed-scaled rollout.

`start(cluster)` wires them all to a cluster whose seed is loaded (see `seeds.load`). One module per operator:
`routes` (host generation and router status), `openshift_apiserver` (routing subdomain), `kube_apiserver`
(revisions, outages, served API certificates), `ingress` (router default certificate), `component_routes`
(console and authentication), `machine_config` (pool updates, reboots), `kubelet` (CSRs and their signer, and
the static-pod operators' node controller), `route_health` (the authentication and console operators' route
checks, through the cluster's name resolution). Each declares what it watches (`watch.Watch`: type, object or
namespace, events, fields); `watch.fan_out` hands a store change to the handlers whose declaration it passes.
"""

from __future__ import annotations

from snoreloc_sim.kube import model
from snoreloc_sim.openshift import dns
from snoreloc_sim.openshift.operators import (
    base,
    component_routes,
    ingress,
    kube_apiserver,
    kubelet,
    machine_config,
    openshift_apiserver,
    route_health,
    routes,
    watch,
)


def start(cluster: model.Cluster, resolution: dns.Resolution | None = None) -> tuple[watch.Operator, ...]:
    """Subscribe every operator's watches to the cluster's store (call once, after the seed is loaded) and return
    the operators. Without a `resolution` the route checks are left out (every name resolves)."""
    routing = routes.Routing(routes.effective_domain(base.find(cluster, base.INGRESSES, "cluster")))
    route_controller = routes.RouteController(cluster, routing)
    route_controller.install()
    node_controller = kubelet.NodeController(cluster)
    operators: tuple[watch.Operator, ...] = (
        route_controller,
        openshift_apiserver.OpenShiftAPIServerOperator(cluster, routing),
        kube_apiserver.KubeAPIServerOperator(cluster),
        ingress.IngressOperator(cluster),
        component_routes.ConsoleOperator(cluster),
        component_routes.AuthenticationOperator(cluster),
        machine_config.MachineConfigOperator(cluster),
        kubelet.CSRSigner(cluster),
        node_controller,
    )
    if resolution is not None:
        operators += tuple(route_health.start(cluster, resolution))
    cluster.store.subscribe(watch.fan_out(operators))
    node_controller.sync()  # a node shelved past its certificate is NotReady from the start
    return operators
