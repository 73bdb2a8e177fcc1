"""The simulator keeps the real kube-apiserver's CSR rules: the requester's identity is stamped on create, and
approval conditions are validated (no duplicate type, Approved and Denied exclusive, decisions only "True", none
removed, only through `approval`)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from snoreloc_sim.openshift import simulator
from snoreloc_sim.openshift.operators import kubelet

from .conftest import Call

# The simulator's own CSR rules through `raw` (its token's identity); the same answers against a real cluster are
# pinned by test_real_answers.py.
pytestmark = pytest.mark.simonly

PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
NODE = "system:node:sno1"


def _create(raw: Call) -> dict[str, Any]:
    request = kubelet.csr_pem(NODE, "system:nodes", [])
    body = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "claims-to-be-the-node"},
        "spec": {
            "request": base64.b64encode(request).decode(),
            "signerName": kubelet.CLIENT_SIGNER,
            "usages": ["digital signature", "client auth"],
            "username": NODE,
            "groups": ["system:nodes", "system:authenticated"],
        },
    }
    reply = raw("POST", PATH, body)
    assert reply.code == 201, reply.body
    created: dict[str, Any] = reply.body
    return created


def _decide(raw: Call, csr: dict[str, Any], *kinds: str, subresource: str = "approval") -> Any:
    conditions = [{"type": k, "status": "True", "reason": "Test", "message": "by the test"} for k in kinds]
    body = {**csr, "status": {"conditions": conditions}}
    return raw("PUT", f"{PATH}/{csr['metadata']['name']}/{subresource}", body)


@pytest.mark.parametrize("sim", [{"speed": 200.0}], indirect=True)
def test_create_stamps_the_requesters_identity(sim: simulator.Simulator, raw: Call) -> None:
    created = _create(raw)
    assert created["spec"]["username"] == "system:admin"
    assert "system:nodes" not in created["spec"]["groups"]


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (("Approved", "Approved"), 'Duplicate value: "Approved"'),
        (("Approved", "Denied"), "Approved and Denied conditions are mutually exclusive"),
    ],
)
@pytest.mark.parametrize("sim", [{"speed": 200.0}], indirect=True)
def test_approval_conditions_are_validated(
    sim: simulator.Simulator, raw: Call, kinds: tuple[str, ...], message: str
) -> None:
    csr = _create(raw)
    reply = _decide(raw, csr, *kinds)
    assert reply.code == 422 and message in reply.body["message"]


@pytest.mark.parametrize("sim", [{"speed": 200.0}], indirect=True)
def test_a_decision_stands_and_only_the_approval_subresource_makes_one(sim: simulator.Simulator, raw: Call) -> None:
    csr = _create(raw)
    through_status = _decide(raw, csr, "Approved", subresource="status")
    assert through_status.code == 422 and 'may not add a condition of type "Approved"' in through_status.body["message"]
    denied = _decide(raw, csr, "Denied")
    assert denied.code == 200, denied.body
    removed = _decide(raw, denied.body)
    assert removed.code == 422 and 'may not remove a condition of type "Denied"' in removed.body["message"]
    stale = _decide(raw, csr, "Approved")  # written from the copy read before the denial
    assert stale.code == 409
