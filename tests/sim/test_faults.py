"""Injected faults: each kind observable over HTTPS, the same for the same seed, and outages that end."""

from __future__ import annotations

import http.client
import time

import pytest

from snoreloc_sim.kube import faults
from snoreloc_sim.openshift import simulator

from .conftest import Call, call, tls_context

pytestmark = pytest.mark.simonly  # the simulator's fault injection

PATH = "/api/v1/namespaces/default/configmaps"


def test_spec_grammar() -> None:
    spec = faults.parse(
        "seed=7,latency=2ms,500=0.05,503=0.05,429=0.05,reset=0.02,hang=0.01,conflict=0.1,outage=30s@10s"
    )
    assert spec.seed == 7
    assert spec.latency == pytest.approx(0.002)
    assert spec.rates[faults.Action.ERROR_429] == 0.05
    assert spec.conflict == 0.1
    assert spec.outages == (faults.Outage(30.0, 10.0, "refuse"),)
    assert faults.parse("outage=1m@0:503,hang-for=1.5s,health=1").outages == (faults.Outage(60.0, 0.0, "503"),)


@pytest.mark.parametrize("bad", ["latency", "500=2", "outage=1s@0:sideways", "bogus=1", "seed=x"])
def test_bad_specs_name_the_item(bad: str) -> None:
    with pytest.raises(ValueError, match="fault item"):
        faults.parse(bad)


def _codes(sim: simulator.Simulator, count: int) -> list[str]:
    seen = []
    for _ in range(count):
        try:
            seen.append(str(call(sim, "GET", PATH, timeout=2).code))
        except (OSError, http.client.HTTPException):
            seen.append("dropped")
    return seen


def test_the_same_seed_gives_the_same_faults() -> None:
    spec = "seed=11,500=0.2,503=0.2,429=0.2,reset=0.1"
    runs = []
    for _ in range(2):
        with simulator.Simulator(speed=600, faults=spec) as sim:
            runs.append(_codes(sim, 30))
    assert runs[0] == runs[1]
    assert {"500", "503", "429", "dropped", "200"} <= set(runs[0])
    with simulator.Simulator(speed=600, faults="seed=12,500=0.2,503=0.2,429=0.2,reset=0.1") as other:
        assert _codes(other, 30) != runs[0]


@pytest.mark.parametrize(
    ("sim", "code", "reason"),
    [
        ({"faults": "500=1"}, 500, "InternalError"),
        ({"faults": "503=1,retry-after=3"}, 503, "ServiceUnavailable"),
        ({"faults": "429=1,retry-after=3"}, 429, "TooManyRequests"),
    ],
    indirect=["sim"],
)
def test_error_faults_answer_a_status(raw: Call, code: int, reason: str) -> None:
    reply = raw("GET", PATH)
    assert (reply.code, reply.body["reason"]) == (code, reason)
    if code != 500:
        assert reply.headers["retry-after"] == "3"


@pytest.mark.parametrize("sim", [{"faults": "reset=1"}], indirect=True)
def test_reset_drops_the_connection(raw: Call) -> None:
    with pytest.raises((OSError, http.client.HTTPException)):
        raw("GET", PATH)


@pytest.mark.parametrize("sim", [{"faults": "hang=1,hang-for=2s"}], indirect=True)
def test_hang_outlasts_the_client_timeout(raw: Call) -> None:
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        raw("GET", PATH, timeout=0.3)
    assert time.monotonic() - began < 1.5


@pytest.mark.parametrize("sim", [{"faults": "latency=150ms"}], indirect=True)
def test_latency_delays_every_api_request(raw: Call) -> None:
    began = time.monotonic()
    assert raw("GET", PATH).code == 200
    assert time.monotonic() - began >= 0.15


@pytest.mark.parametrize("sim", [{"faults": "500=1"}], indirect=True)
def test_health_endpoints_are_spared_unless_asked(raw: Call) -> None:
    assert raw("GET", "/readyz").code == 200


@pytest.mark.parametrize("sim", [{"faults": "conflict=1"}], indirect=True)
def test_conflict_fault_races_a_fresh_update(raw: Call, sim: simulator.Simulator) -> None:
    created = raw("POST", PATH, {"metadata": {"name": "raced"}, "data": {"a": "1"}}).body
    created["data"] = {"a": "2"}
    reply = raw("PUT", f"{PATH}/raced", created)
    assert (reply.code, reply.body["reason"]) == (409, "Conflict")
    unconditional = raw("PATCH", f"{PATH}/raced", {"data": {"a": "3"}}, content_type="application/merge-patch+json")
    assert unconditional.code == 200
    assert sim.injector is not None and sim.injector.counts["conflict"] == 2


@pytest.mark.parametrize("sim", [{"faults": "outage=0.6s@0s"}], indirect=True)
def test_outage_refuses_then_recovers(raw: Call) -> None:
    with pytest.raises((OSError, http.client.HTTPException)):
        raw("GET", PATH, timeout=2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            assert raw("GET", PATH, timeout=2).code == 200
            return
        except (OSError, http.client.HTTPException):
            time.sleep(0.1)
    pytest.fail("the API did not come back within 5 s of a 0.6 s outage")


@pytest.mark.parametrize("sim", [{"faults": "outage=0.6s@0s:503"}], indirect=True)
def test_outage_in_503_mode_answers_service_unavailable(raw: Call) -> None:
    reply = raw("GET", "/readyz")
    assert reply.code == 503
    time.sleep(0.7)
    assert raw("GET", "/readyz").code == 200


def test_model_outage_refuses_established_keep_alive_connections(sim: simulator.Simulator) -> None:
    connection = http.client.HTTPSConnection("127.0.0.1", sim.running.api.port, context=tls_context(sim), timeout=2)
    headers = {"Authorization": f"Bearer {sim.token}"}
    connection.request("GET", PATH, headers=headers)
    assert connection.getresponse().read()
    sim.cluster.availability.outage(0.5, "refuse")
    with pytest.raises((OSError, http.client.HTTPException)):
        connection.request("GET", PATH, headers=headers)
        connection.getresponse().read()
    connection.close()
