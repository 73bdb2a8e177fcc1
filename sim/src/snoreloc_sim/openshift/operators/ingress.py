"""Ingress operator: the router's default certificate follows IngressController `default` `spec.defaultCertificate`.

The secret is looked up in `openshift-ingress` (the operand namespace, not `openshift-config`). After the router
deployment rolls out (~90 s), the router presents it to clients without a more specific match, and the operator
publishes the certificate bundle to `openshift-config-managed/default-ingress-cert` (`ca-bundle.crt`), which
the console and oauth clients trust. A missing or broken secret leaves the old router running and the operator
Degraded.
"""

from __future__ import annotations

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base, conditions, watch

Obj = model.Obj

OPERATOR = "ingress"
CONTROLLER = ("openshift-ingress-operator", "default")
OPERAND_NAMESPACE = "openshift-ingress"
GENERATED_SECRET = "router-certs-default"  # noqa: S105 (a secret's name)
ROUTER_CA = ("openshift-ingress-operator", "router-ca")
PUBLISHED = ("openshift-config-managed", "default-ingress-cert")
SWITCH_SECONDS = 60.0  # new router pod serving
SETTLE_SECONDS = 30.0


def default_certificate(controller: Obj | None) -> str:
    spec = (controller or {}).get("spec") or {}
    return str((spec.get("defaultCertificate") or {}).get("name") or GENERATED_SECRET)


class IngressOperator:
    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._serial = base.Serial(cluster, OPERATOR, self._plan)

    def watches(self) -> tuple[watch.Watch, ...]:
        """The default IngressController (its default certificate) and the secrets of the router's namespace."""
        namespace, name = CONTROLLER
        return (
            watch.Watch(base.INGRESSCONTROLLERS, self._controller_changed, name, namespace, events=watch.LIVE),
            watch.Watch(base.SECRETS, self._secret_changed, namespace=OPERAND_NAMESPACE, changed=("data",)),
        )

    def _controller_changed(self, change: watch.Change) -> None:
        old, new = change.old, change.new
        if default_certificate(old) != default_certificate(new) or old is None:
            self._serial.request(f"ingresscontroller default defaultCertificate {default_certificate(new)}")

    def _secret_changed(self, change: watch.Change) -> None:
        name = change.meta.get("name")
        controller = base.find(self._cluster, base.INGRESSCONTROLLERS, CONTROLLER[1], CONTROLLER[0])
        if name == default_certificate(controller):
            self._serial.request(f"secret {OPERAND_NAMESPACE}/{name} changed")

    def _plan(self, trigger: str) -> list[base.Step]:
        name = default_certificate(base.find(self._cluster, base.INGRESSCONTROLLERS, CONTROLLER[1], CONTROLLER[0]))
        try:
            cert = base.load_tls(self._cluster, OPERAND_NAMESPACE, name)
        except base.BadSecret as exc:
            problem = str(exc)
            return [(0.0, lambda: self._degraded(problem))]
        message = (
            'ingresscontroller "default" is progressing: IngressControllerProgressing: One or more status '
            "conditions indicate progressing: DeploymentRollingOut=True (DeploymentRollingOut: Waiting for router "
            "deployment rollout to finish: 1 old replica(s) are pending termination...)"
        )
        return [
            (0.0, lambda: self._report("Progressing", "True", "Reconciling", message)),
            (SWITCH_SECONDS, lambda: self._cluster.serving.set("router", "", cert)),
            (SETTLE_SECONDS, lambda: self._finish(name, cert)),
        ]

    def _report(self, kind: str, status: str, reason: str, message: str) -> None:
        update = [conditions.Condition(kind, status, reason, message)]
        conditions.set_operator(self._cluster, OPERATOR, update)
        self._set_controller(update)

    def _set_controller(self, updates: list[conditions.Condition]) -> None:
        controller = base.find(self._cluster, base.INGRESSCONTROLLERS, CONTROLLER[1], CONTROLLER[0])
        if controller is None:
            return
        status = controller.setdefault("status", {})
        status["conditions"] = conditions.merge(status.get("conditions") or [], updates, base.timestamp())
        status["observedGeneration"] = controller["metadata"].get("generation", 1)
        base.write_status(self._cluster, base.INGRESSCONTROLLERS, controller)

    def _degraded(self, problem: str) -> None:
        message = (
            f'The "default" ingress controller reports Degraded=True: DegradedConditions: One or more other status '
            f"conditions indicate a degraded state: DeploymentDegraded=True (default certificate: {problem})"
        )
        conditions.set_operator(self._cluster, OPERATOR, conditions.degraded("IngressDegraded", message))
        self._set_controller(conditions.degraded("DegradedConditions", message))

    def _finish(self, name: str, cert: model.ServedCert) -> None:
        self._publish(name, cert)
        conditions.set_operator(self._cluster, OPERATOR, conditions.settled())
        self._set_controller(conditions.settled()[:3])

    def _publish(self, name: str, cert: model.ServedCert) -> None:
        """`ca-bundle.crt`: the router CA for the generated certificate, else the custom certificate's chain."""
        bundle = cert.cert_pem
        if name == GENERATED_SECRET:
            ca = base.find(self._cluster, base.SECRETS, ROUTER_CA[1], ROUTER_CA[0])
            bundle = base.unb64(ca["data"]["tls.crt"]) if ca else bundle
        configmaps = base.rtype(self._cluster, base.CONFIGMAPS)
        current = self._cluster.store.find(configmaps, PUBLISHED[1], PUBLISHED[0])
        body: Obj = {"metadata": {"name": PUBLISHED[1], "namespace": PUBLISHED[0]}}
        body["data"] = {"ca-bundle.crt": bundle.decode()}
        if current is None:
            self._cluster.store.create(configmaps, body)
        else:
            current["data"] = body["data"]
            self._cluster.store.update(configmaps, current, check_rv=False)
