from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from snoreloc import errors
from snoreloc.adapters import clock, command, fs, kube
from snoreloc.factory import machineconfig, seal
from snoreloc.host import kubelet
from snoreloc.pki import shelf
from snoreloc.steps.openshift import name_clashes

OPTIONS = machineconfig.FactoryOptions(
    internal_ips=(ipaddress.ip_interface("192.168.127.10/24"), ipaddress.ip_interface("fd00:127::10/64")),
    image="quay.io/snoreloc/snoreloc:0.1.0",
)
IP_JSON = json.dumps(
    [{"ifname": "br-ex", "addr_info": [
        {"family": "inet", "local": "10.0.0.5", "prefixlen": 24},
        {"family": "inet", "local": "192.168.127.10", "prefixlen": 24},
        {"family": "inet6", "local": "fd00:127::10", "prefixlen": 64},
    ]}]
)  # fmt: skip


SIGNERS_UNTIL = datetime(2026, 12, 1, tzinfo=UTC)  # the clock says 2026-01-01: 334 days of shelf


@dataclass
class FakeFacts:
    unhealthy: list[str] = field(default_factory=list)
    pool: list[str] = field(default_factory=list)
    clashes: list[str] = field(default_factory=list)
    ways_in: list[str] = field(default_factory=list)
    signers: dict[str, datetime | None] = field(
        default_factory=lambda: {w.name: SIGNERS_UNTIL for w in shelf.WATCHED if not w.path}
    )

    def certificates(self) -> dict[str, datetime | None]:
        return dict(self.signers)

    def name_clashes(self) -> list[str]:
        return self.clashes

    def factory_ways_in(self) -> list[str]:
        return self.ways_in

    def unhealthy_operators(self) -> list[str]:
        return self.unhealthy

    def pool_problems(self, pool: str, machineconfig: str) -> list[str]:
        assert (pool, machineconfig) == ("master", "99-master-snoreloc")
        return self.pool

    def domain(self) -> str:
        return "factory.example.com"

    def version(self) -> str:
        return "4.16.3"

    def node_name(self) -> str:
        return "sno-0"


def kubelet_bundle(now: datetime, days: float) -> bytes:
    """A kubelet-client-current.pem: the certificate and its private key in one file, as kubelet writes it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "system:node:sno-0")])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=days))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM) + key_pem


@pytest.fixture
def node(host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock) -> seal.Node:
    """A node the factory prepared correctly: every check passes."""
    for path, text, mode in (
        (machineconfig.CONFIG_PATH, machineconfig.config_text(OPTIONS), 0o644),
        (machineconfig.DISPATCHER_PATH, machineconfig.dispatcher_script(OPTIONS), 0o755),
        (machineconfig.KUBELET_DROPIN, machineconfig.kubelet_dropin(OPTIONS), 0o644),
        (machineconfig.CRIO_DROPIN, machineconfig.crio_dropin(OPTIONS), 0o644),
        (seal.UNIT_FILE, machineconfig.unit_text(machineconfig.Runtime.CONTAINER), 0o644),
        (machineconfig.DNSMASQ_SCRIPT, "#!/usr/bin/env bash\n", 0o755),  # the Assisted Installer's SNO dnsmasq
    ):
        host.write_text(path, text, mode=mode)
    host.write_bytes(seal.KUBELET_CLIENT_CERT, kubelet_bundle(clk.now(), 60), mode=0o600)
    host.write_bytes(shelf.KUBELET_SERVER_FILE, kubelet_bundle(clk.now(), 30), mode=0o600)
    runner.on(["ip", "-j", "addr", "show", "dev", "br-ex"], command.Result(0, IP_JSON))
    runner.on(["podman", "image", "exists"], command.Result(0))
    runner.on(["systemctl", "disable", "kubelet.service"]).on(["systemctl", "stop", "kubelet.service"])
    runner.on(["crictl", "pods", "-q"], command.Result(0, "pod-a\npod-b\n"))
    runner.on(["crictl", "stopp"]).on(["crictl", "rmp"])
    return seal.Node(host, runner, clk)


def test_seal_writes_the_marker_disables_kubelet_and_clears_pods(node: seal.Node, runner: command.FakeRunner) -> None:
    sealed = seal.seal(node, FakeFacts())
    assert sealed.warnings == ()
    marker = json.loads(node.host.read_text(kubelet.SEAL_MARKER))
    recorded = marker.pop("shelf")
    assert marker | {"snoreloc": "x"} == {
        "domain": "factory.example.com", "version": "4.16.3", "node": "sno-0",
        "time": "2026-01-01T00:00:00Z", "snoreloc": "x",
    }  # fmt: skip
    assert recorded["sealedAt"] == "2026-01-01T00:00:00Z"
    assert (recorded["mustBootBy"], recorded["setBy"]) == ("2026-12-01T00:00:00Z", "kube-apiserver-to-kubelet-signer")
    assert {c["name"] for c in recorded["certificates"]} == {w.name for w in shelf.WATCHED}
    actions = [c for c in runner.commands() if c[0] in {"systemctl", "crictl"}]
    assert actions == [
        ("systemctl", "disable", "kubelet.service"),
        ("systemctl", "stop", "kubelet.service"),
        ("crictl", "pods", "-q"),
        ("crictl", "stopp", "pod-a", "pod-b"),
        ("crictl", "rmp", "-a", "-f"),
    ]


def test_seal_powers_off_when_asked(node: seal.Node, runner: command.FakeRunner) -> None:
    runner.on(["systemctl", "poweroff"])
    seal.seal(node, FakeFacts(), seal.Options(poweroff=True))
    assert runner.commands()[-1] == ("systemctl", "poweroff")


def _unhealthy(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    facts.unhealthy.append("kube-apiserver: Available=True, Progressing=True, Degraded=False")


def _pool(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    facts.pool.append("MachineConfigPool master is not Updated (wait for the MachineConfig to roll out)")


def _ip_missing(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    runner.on(
        ["ip", "-j", "addr", "show", "dev", "br-ex"], command.Result(0, IP_JSON.replace("fd00:127::10", "fd00::9"))
    )


def _dropin_missing(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    node.host.remove(machineconfig.CRIO_DROPIN)


def _not_executable(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    node.host.chmod(machineconfig.DISPATCHER_PATH, 0o644)


def _no_image(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    runner.on(["podman", "image", "exists"], command.Result(1))


def _cert_expired(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    node.host.write_bytes(seal.KUBELET_CLIENT_CERT, kubelet_bundle(node.clk.now(), -0.5))


def _cert_missing(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    node.host.remove(seal.KUBELET_CLIENT_CERT)


def _no_machineconfig(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    node.host.remove(machineconfig.CONFIG_PATH)


def _name_clash(node: seal.Node, facts: FakeFacts, runner: command.FakeRunner) -> None:
    facts.clashes.append(name_clashes.fix(kube.Ref(kube.SECRETS, "snoreloc-api-cert", "openshift-config")))


Breaker = Callable[[seal.Node, FakeFacts, command.FakeRunner], None]


@pytest.mark.parametrize(
    ("breaker", "expected"),
    [
        (_unhealthy, "cluster: ClusterOperator kube-apiserver: Available=True, Progressing=True"),
        (_pool, "machineconfig: MachineConfigPool master is not Updated"),
        (_ip_missing, "internal-ip: fd00:127::10/64 is not on br-ex"),
        (_dropin_missing, "files: /etc/systemd/system/crio.service.d/30-nodenet.conf is missing"),
        (_not_executable, "30-snoreloc-internal-ip is not executable"),
        (_no_image, "image: the agent image quay.io/snoreloc/snoreloc:0.1.0 is not on this node: run `podman pull"),
        (_cert_expired, "kubelet-cert: the kubelet client certificate expired"),
        (_cert_missing, "kubelet-cert: cannot read the kubelet client certificate"),
        (_no_machineconfig, "machineconfig: /etc/snoreloc/config is missing"),
        (_name_clash, "names: Secret openshift-config/snoreloc-api-cert exists but was not created by snoreloc"),
    ],
    ids=lambda value: getattr(value, "__name__", "")[1:],
)
def test_each_check_refuses_and_nothing_is_changed(
    node: seal.Node, runner: command.FakeRunner, breaker: Breaker, expected: str
) -> None:
    facts = FakeFacts()
    breaker(node, facts, runner)
    with pytest.raises(seal.SealRefused) as caught:
        seal.seal(node, facts)
    assert caught.value.exit_code == errors.ExitCode.UNAVAILABLE == 69
    assert expected in caught.value.message
    assert len(caught.value.findings) == 1
    assert not node.host.exists(kubelet.SEAL_MARKER)
    assert not runner.ran("systemctl") and not runner.ran("crictl")


def test_every_problem_is_listed_at_once(node: seal.Node, runner: command.FakeRunner) -> None:
    facts = FakeFacts()
    for breaker in (_unhealthy, _no_image, _dropin_missing):
        breaker(node, facts, runner)
    with pytest.raises(seal.SealRefused, match=r"3 problem\(s\)") as caught:
        seal.seal(node, facts)
    assert [f.check for f in caught.value.findings] == ["files", "image", "cluster"]


def test_certificate_expiring_on_the_shelf_warns_unless_strict(node: seal.Node) -> None:
    node.host.write_bytes(seal.KUBELET_CLIENT_CERT, kubelet_bundle(node.clk.now(), 12))
    with pytest.raises(seal.SealRefused, match="within the 30-day shelf time"):
        seal.seal(node, FakeFacts(), seal.Options(strict=True))
    sealed = seal.seal(node, FakeFacts())
    assert [w.check for w in sealed.warnings] == ["kubelet-cert"]
    assert "renewal CSRs" in sealed.warnings[0].message


def test_a_started_seal_is_completed_without_the_cluster(node: seal.Node, runner: command.FakeRunner) -> None:
    node.host.write_text(kubelet.SEAL_MARKER, json.dumps({"domain": "factory.example.com"}))
    sealed = seal.seal(node, None)
    assert sealed.marker == {"domain": "factory.example.com"}
    assert runner.ran("crictl", "rmp", "-a", "-f")


def test_no_pods_means_no_stopp(node: seal.Node, runner: command.FakeRunner) -> None:
    runner.on(["crictl", "pods", "-q"], command.Result(0, ""))
    seal.seal(node, FakeFacts())
    assert not runner.ran("crictl", "stopp")


def test_cert_expiry_reads_only_the_certificate(clk: clock.FakeClock) -> None:
    bundle = kubelet_bundle(clk.now(), 10)
    assert seal.kubelet_cert_expiry(bundle).date() == (clk.now() + timedelta(days=10)).date()
    with pytest.raises(ValueError, match="no certificate"):
        seal.kubelet_cert_expiry(bundle.split(b"-----END CERTIFICATE-----")[1])


def _without_internal_ips(node: seal.Node) -> None:
    options = machineconfig.FactoryOptions(image=OPTIONS.image)
    node.host.write_text(machineconfig.CONFIG_PATH, machineconfig.config_text(options), mode=0o644)


def test_seal_refuses_a_node_whose_node_ip_is_not_decoupled(node: seal.Node) -> None:
    _without_internal_ips(node)
    with pytest.raises(seal.SealRefused, match="node-ip: kubelet and CRI-O keep the factory node IP"):
        seal.seal(node, FakeFacts())
    assert not node.host.exists(kubelet.SEAL_MARKER)


def test_seal_ships_it_when_told_and_says_so(node: seal.Node) -> None:
    _without_internal_ips(node)
    sealed = seal.seal(node, FakeFacts(), seal.Options(allow_factory_node_ip=True))
    assert [w.check for w in sealed.warnings] == ["node-ip"]
    assert node.host.exists(kubelet.SEAL_MARKER)


def test_a_node_without_node_local_dns_seals_with_a_warning(node: seal.Node) -> None:
    node.host.remove(machineconfig.DNSMASQ_SCRIPT)

    sealed = seal.seal(node, FakeFacts())

    assert [w.check for w in sealed.warnings] == ["node-dns"]
    assert "render the factory MachineConfig with --node-dns" in sealed.warnings[0].message


def test_the_factorys_ways_in_are_listed_as_warnings_never_a_refusal(node: seal.Node) -> None:
    """What the cluster says travels with the node (the lines come from `steps.openshift.factory_access`, shown
    over HTTPS in tests/cluster/test_admin_access.py) is a warning each: the site-config, not seal, revokes them."""
    ways = ["the kubeadmin login: Secret kube-system/kubeadmin present; a site-config's spec.adminAccess.kubeadmin ..."]
    sealed = seal.seal(node, FakeFacts(ways_in=ways))
    assert [(w.check, w.message, w.fatal) for w in sealed.warnings] == [("factory-access", ways[0], False)]
    assert node.host.exists(kubelet.SEAL_MARKER)


def test_a_signer_expiring_within_the_shelf_time_warns_unless_strict(node: seal.Node) -> None:
    soon = FakeFacts()
    soon.signers["kube-apiserver-to-kubelet-signer"] = datetime(2026, 1, 20, tzinfo=UTC)
    sealed = seal.seal(node, soon, seal.Options(shelf_days=30))
    [warning] = [w for w in sealed.warnings if w.check == "shelf"]
    assert "must boot by 2026-01-20 (in 19 days, set by kube-apiserver-to-kubelet-signer)" in warning.message
    assert "certificate-not-after-" in warning.message  # the documented renewal
    node.host.remove(kubelet.SEAL_MARKER)
    with pytest.raises(seal.SealRefused, match="must boot by 2026-01-20"):
        seal.seal(node, soon, seal.Options(shelf_days=30, strict=True))


def test_an_expired_signer_refuses_and_an_unreadable_one_warns(node: seal.Node) -> None:
    facts = FakeFacts()
    facts.signers["aggregator-client-signer"] = None
    sealed = seal.seal(node, facts)
    assert [w.message for w in sealed.warnings if w.check == "shelf"] == [
        "cannot read aggregator-client-signer: the must-boot-by date may be earlier than recorded"
    ]
    node.host.remove(kubelet.SEAL_MARKER)
    facts.signers["kube-apiserver-to-kubelet-signer"] = datetime(2025, 12, 1, tzinfo=UTC)
    with pytest.raises(seal.SealRefused, match="shelf: kube-apiserver-to-kubelet-signer expired at 2025-12-01"):
        seal.seal(node, facts)
    assert not node.host.exists(kubelet.SEAL_MARKER)
