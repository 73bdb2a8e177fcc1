"""openshift-apiserver: a new Ingress `appsDomain` takes effect for routes only after its deployment rolls out.

This is why a route created right after the agent patches `appsDomain` can still get the old suffix: the
routing subdomain switches at the end of this rollout (~75 s on SNO), not at the patch.
"""

from __future__ import annotations

import threading

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base, conditions, routes, watch

Obj = model.Obj

OPERATOR = "openshift-apiserver"
ROLLOUT_SECONDS = 75.0


class OpenShiftAPIServerOperator:
    def __init__(self, cluster: model.Cluster, routing: routes.Routing) -> None:
        self._cluster, self._routing = cluster, routing
        self._lock = threading.Lock()
        self._generation = 3  # the apiserver Deployment's generation, for the operator's message
        self._serial = base.Serial(cluster, OPERATOR, self._plan)

    def watches(self) -> tuple[watch.Watch, ...]:
        """The cluster Ingress config: its routing domain (`appsDomain`, else `domain`)."""
        domains = ("spec.appsDomain", "spec.domain")
        return (watch.Watch(base.INGRESSES, self._ingress_changed, "cluster", events=watch.LIVE, changed=domains),)

    def _ingress_changed(self, change: watch.Change) -> None:
        old, new = change.old, change.new
        if routes.effective_domain(old) != routes.effective_domain(new):
            self._serial.request(f"ingresses.config.openshift.io/cluster routing domain {routes.effective_domain(new)}")

    def _plan(self, trigger: str) -> list[base.Step]:
        with self._lock:
            self._generation += 1
            generation = self._generation
        message = (
            f"APIServerDeploymentProgressing: deployment/apiserver.openshift-apiserver: observed generation is "
            f"{generation - 1}, desired generation is {generation}."
        )
        return [
            (0.0, lambda: conditions.set_operator(self._cluster, OPERATOR, self._progressing(message))),
            (ROLLOUT_SECONDS, self._finish),
        ]

    @staticmethod
    def _progressing(message: str) -> list[conditions.Condition]:
        return conditions.progressing("APIServerDeployment_NewGeneration", message)

    def _finish(self) -> None:
        ingress = base.find(self._cluster, base.INGRESSES, "cluster")
        domain = routes.effective_domain(ingress)
        if domain:
            self._routing.switch(domain)
        conditions.set_operator(self._cluster, OPERATOR, conditions.settled())
