"""The simulator refuses what kube-apiserver with the real OpenShift CRDs refuses, and stores what it would store."""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from snoreloc_sim.kube import model, validation
from snoreloc_sim.openshift import crds

REPO = Path(__file__).resolve().parents[2]
SHARED_CRDS = REPO.parent / "shared" / "openshift-crds"
VENDORED_CRDS = REPO / "tests" / "data" / "openshift-crds" / "openshift-crds.tar.xz"


# A schema with CEL rules adds this when an earlier error (required, type, enum...) stops the rules from running.
NOT_CHECKED = ("FieldValueInvalid", "")


@pytest.fixture(scope="module")
def validator() -> validation.Validator:
    return validation.Validator(crds.DIR)


@functools.cache
def rtype(key: str) -> model.ResourceType:
    """The served type for a generated CRD or a built-in kind, by store key."""
    known = validation.load_crds(crds.DIR)
    info = known.get(key) or validation.Validator(crds.DIR).builtin_infos[key]
    return model.ResourceType(info.group, info.version, info.plural, info.kind, info.namespaced)


def refused(validator: validation.Validator, key: str, obj: dict[str, Any], old: dict[str, Any] | None = None):
    with pytest.raises(model.ApiError) as caught:
        validator.admit(rtype(key), obj, old)
    assert caught.value.code == 422
    assert caught.value.reason == "Invalid"
    return caught.value


def causes(error: model.ApiError) -> set[tuple[str, str]]:
    return {(cause["reason"], cause["field"]) for cause in error.causes}


def ingress(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "cluster"},
        "spec": {"domain": "apps.factory.example.com", **spec},
    }


def idms(*mirrors: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageDigestMirrorSet",
        "metadata": {"name": "mirrors"},
        "spec": {"imageDigestMirrors": list(mirrors)},
    }


def route(**spec: Any) -> dict[str, Any]:
    base = {"to": {"kind": "Service", "name": "console"}, "port": {"targetPort": "https"}}
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "console", "namespace": "openshift-console"},
        "spec": {**base, **spec},
    }


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


# ---- the generator --------------------------------------------------------------------------------------------


def _vendored_crds(into: Path) -> Path:
    """The upstream CRD manifests, unpacked from the copy vendored in tests/data (any clone has it)."""
    with tarfile.open(VENDORED_CRDS) as archive:
        if hasattr(tarfile, "data_filter"):  # 3.11.4 and later
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)  # our own archive, committed beside this test
    return into / "openshift-crds"


def test_generated_schemas_match_a_fresh_run_of_the_generator(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("gen_sim_schemas", REPO / "tools" / "gen_sim_schemas.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    upstream = _vendored_crds(tmp_path / "upstream")
    written = generator.generate(upstream, tmp_path / "out")
    committed = sorted(crds.DIR.glob("*.json"))
    assert [p.name for p in written] == [p.name for p in committed]
    for fresh in written:
        assert fresh.read_text() == (crds.DIR / fresh.name).read_text(), fresh.name


@pytest.mark.skipif(not SHARED_CRDS.is_dir(), reason="../shared is not beside this clone: nothing to compare with")
def test_the_vendored_crds_are_the_shared_ones_byte_for_byte(tmp_path: Path) -> None:
    upstream = _vendored_crds(tmp_path)
    vendored = {p.name: p.read_bytes() for p in upstream.iterdir()}
    assert vendored == {p.name: p.read_bytes() for p in SHARED_CRDS.iterdir() if p.is_file()}


def test_generated_summary_keeps_names_scope_and_subresources_but_no_descriptions() -> None:
    ic = json.loads((crds.DIR / "ingresscontrollers.operator.openshift.io.json").read_text())
    assert (ic["kind"], ic["listKind"], ic["namespaced"], ic["subresources"]) == (
        "IngressController",
        "IngressControllerList",
        True,
        ["status", "scale"],
    )
    network = json.loads((crds.DIR / "networks.config.openshift.io.json").read_text())
    assert network["subresources"] == []
    assert '"description": "' not in (crds.DIR / "routes.route.openshift.io.json").read_text()


# ---- Ingress --------------------------------------------------------------------------------------------------


def test_component_route_without_hostname_is_refused_naming_the_field(validator: validation.Validator) -> None:
    obj = ingress(componentRoutes=[{"namespace": "openshift-console", "name": "console"}])
    error = refused(validator, "ingresses.config.openshift.io", obj)
    assert causes(error) == {
        ("FieldValueRequired", "spec.componentRoutes[0].hostname"),
        NOT_CHECKED,
    }
    assert error.message.startswith('Ingress.config.openshift.io "cluster" is invalid: [')
    assert "spec.componentRoutes[0].hostname: Required value" in error.message
    assert error.details == {"name": "cluster", "group": "config.openshift.io", "kind": "Ingress"}


def test_component_routes_with_the_same_namespace_and_name_are_duplicates(validator: validation.Validator) -> None:
    route_a = {"namespace": "openshift-console", "name": "console", "hostname": "console.apps.site.example.com"}
    route_b = {**route_a, "hostname": "other.apps.site.example.com"}
    error = refused(validator, "ingresses.config.openshift.io", ingress(componentRoutes=[route_a, route_b]))
    assert causes(error) == {("FieldValueDuplicate", "spec.componentRoutes[1]")}
    assert 'Duplicate value: {"name":"console","namespace":"openshift-console"}' in error.message


def test_changing_the_ingress_domain_is_refused_by_its_cel_rule(validator: validation.Validator) -> None:
    key = "ingresses.config.openshift.io"
    stored, _ = validator.admit(rtype(key), ingress(), None)
    moved = ingress()
    moved["spec"]["domain"] = "apps.site.example.com"
    error = refused(validator, key, moved, stored)
    assert causes(error) == {("FieldValueInvalid", "spec.domain")}
    assert error.message == (
        'Ingress.config.openshift.io "cluster" is invalid: spec.domain: Invalid value: "apps.site.example.com": '
        "domain is immutable once set"
    )


def test_ingress_domain_may_be_set_the_first_time_and_kept(validator: validation.Validator) -> None:
    key = "ingresses.config.openshift.io"
    before = ingress()
    del before["spec"]["domain"]
    stored, _ = validator.admit(rtype(key), before, None)
    after, warnings = validator.admit(rtype(key), ingress(), stored)  # absent -> set: transition rule not run
    assert after["spec"]["domain"] == "apps.factory.example.com" and warnings == []
    validator.admit(rtype(key), ingress(appsDomain="apps.other.example.com"), after)


def test_valid_ingress_with_component_route_is_admitted_with_defaults(validator: validation.Validator) -> None:
    component = {
        "namespace": "openshift-console",
        "name": "console",
        "hostname": "console.apps.site.example.com",
        "servingCertKeyPairSecret": {"name": "console-cert"},
    }
    stored, warnings = validator.admit(
        rtype("ingresses.config.openshift.io"), ingress(componentRoutes=[component]), None
    )
    assert warnings == []
    assert stored["spec"]["componentRoutes"] == [component]


def test_hostname_pattern_accepts_unicode_letters_and_refuses_underscores(validator: validation.Validator) -> None:
    key = "ingresses.config.openshift.io"
    unicode_route = {"namespace": "ns", "name": "r", "hostname": "console.bücher.example"}
    validator.admit(rtype(key), ingress(componentRoutes=[unicode_route]), None)
    bad = {"namespace": "ns", "name": "r", "hostname": "bad_host.example.com"}
    error = refused(validator, key, ingress(componentRoutes=[bad]))
    assert causes(error) == {("FieldValueInvalid", "spec.componentRoutes[0].hostname")}
    assert "should match" in error.message


# ---- APIServer ------------------------------------------------------------------------------------------------


def apiserver(*named: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "APIServer",
        "metadata": {"name": "cluster"},
        "spec": {"servingCerts": {"namedCertificates": list(named)}},
    }


def test_named_certificate_serving_certificate_needs_a_name(validator: validation.Validator) -> None:
    error = refused(
        validator,
        "apiservers.config.openshift.io",
        apiserver({"names": ["api.site.example.com"], "servingCertificate": {}}),
    )
    assert ("FieldValueRequired", "spec.servingCerts.namedCertificates[0].servingCertificate.name") in causes(error)


def test_named_certificate_without_serving_certificate_is_accepted_as_the_real_schema_does(
    validator: validation.Validator,
) -> None:
    # The CRD does not list servingCertificate as required; kube-apiserver accepts this (the operator ignores it).
    validator.admit(rtype("apiservers.config.openshift.io"), apiserver({"names": ["api.site.example.com"]}), None)


def test_valid_apiserver_passes_and_gets_its_defaults(validator: validation.Validator) -> None:
    obj = apiserver({"names": ["api.site.example.com"], "servingCertificate": {"name": "api-cert"}})
    stored, warnings = validator.admit(rtype("apiservers.config.openshift.io"), obj, None)
    assert warnings == []
    assert stored["spec"]["audit"] == {"profile": "Default"}  # OpenAPI default applied, as kube does


def test_unknown_fields_are_pruned_with_one_warning_each(validator: validation.Validator) -> None:
    obj = apiserver({"names": ["api.site.example.com"], "servingCertificate": {"name": "c", "namespace": "x"}})
    obj["spec"]["foo"] = 1
    obj["extra"] = True
    stored, warnings = validator.admit(rtype("apiservers.config.openshift.io"), obj, None)
    assert sorted(warnings) == [
        'unknown field "extra"',
        'unknown field "spec.foo"',
        'unknown field "spec.servingCerts.namedCertificates[0].servingCertificate.namespace"',
    ]
    assert "foo" not in stored["spec"] and "extra" not in stored
    assert stored["spec"]["servingCerts"]["namedCertificates"][0]["servingCertificate"] == {"name": "c"}
    assert stored["metadata"] == {"name": "cluster"} and stored["kind"] == "APIServer"
    assert validator.unknown_fields(rtype("apiservers.config.openshift.io"), obj) == [
        "spec.servingCerts.namedCertificates[0].servingCertificate.namespace",
        "spec.foo",
        "extra",
    ]


def test_every_violation_is_listed(validator: validation.Validator) -> None:
    obj = apiserver({"names": "not-a-list", "servingCertificate": {}})
    obj["spec"]["encryption"] = {"type": "rot13"}
    error = refused(validator, "apiservers.config.openshift.io", obj)
    assert {
        ("FieldValueTypeInvalid", "spec.servingCerts.namedCertificates[0].names"),
        ("FieldValueRequired", "spec.servingCerts.namedCertificates[0].servingCertificate.name"),
        ("FieldValueNotSupported", "spec.encryption.type"),
    } <= causes(error)


# ---- image mirroring ------------------------------------------------------------------------------------------


def test_idms_mirror_with_a_tag_fails_the_pattern(validator: validation.Validator) -> None:
    entry = {"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.site.example.com/ocp:4.16"]}
    error = refused(validator, "imagedigestmirrorsets.config.openshift.io", idms(entry))
    assert causes(error) == {("FieldValueInvalid", "spec.imageDigestMirrors[0].mirrors[0]")}


def test_idms_duplicate_mirrors_in_a_set_are_refused(validator: validation.Validator) -> None:
    mirror = "mirror.site.example.com:5000/ocp/release"
    entry = {"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": [mirror, mirror]}
    error = refused(validator, "imagedigestmirrorsets.config.openshift.io", idms(entry))
    assert causes(error) == {("FieldValueDuplicate", "spec.imageDigestMirrors[0].mirrors[1]")}
    assert f'Duplicate value: "{mirror}"' in error.message


def test_valid_idms_passes(validator: validation.Validator) -> None:
    entry = {
        "source": "quay.io/openshift-release-dev/ocp-release",
        "mirrors": ["mirror.site.example.com:5000/ocp/release"],
        "mirrorSourcePolicy": "NeverContactSource",
    }
    stored, warnings = validator.admit(rtype("imagedigestmirrorsets.config.openshift.io"), idms(entry), None)
    assert stored["spec"]["imageDigestMirrors"] == [entry] and warnings == []


def test_valid_icsp_passes(validator: validation.Validator) -> None:
    obj = {
        "apiVersion": "operator.openshift.io/v1alpha1",
        "kind": "ImageContentSourcePolicy",
        "metadata": {"name": "mirrors"},
        "spec": {
            "repositoryDigestMirrors": [
                {"source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev", "mirrors": ["mirror.site.example.com/ocp"]}
            ]
        },
    }
    stored, warnings = validator.admit(rtype("imagecontentsourcepolicies.operator.openshift.io"), obj, None)
    assert warnings == [] and stored["spec"] == obj["spec"]


# ---- IngressController ----------------------------------------------------------------------------------------


def ingress_controller(domain: str) -> dict[str, Any]:
    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "IngressController",
        "metadata": {"name": "default", "namespace": "openshift-ingress-operator"},
        "spec": {"domain": domain},
    }


def test_ingress_controller_domain_must_be_a_dns_subdomain(validator: validation.Validator) -> None:
    error = refused(validator, "ingresscontrollers.operator.openshift.io", ingress_controller("Apps_Site.example.com"))
    assert causes(error) == {("FieldValueInvalid", "spec.domain")}
    assert "domain must consist of lower case alphanumeric characters" in error.message


def test_ingress_controller_domain_labels_are_at_most_63_characters(validator: validation.Validator) -> None:
    error = refused(
        validator, "ingresscontrollers.operator.openshift.io", ingress_controller("a" * 64 + ".example.com")
    )
    assert "each DNS label must not exceed 63 characters" in error.message


def test_ingress_controller_valid_domain_passes(validator: validation.Validator) -> None:
    stored, _ = validator.admit(
        rtype("ingresscontrollers.operator.openshift.io"), ingress_controller("apps.site.example.com"), None
    )
    assert stored["spec"]["domain"] == "apps.site.example.com"


# ---- Route ----------------------------------------------------------------------------------------------------


def test_passthrough_route_with_a_path_is_refused(validator: validation.Validator) -> None:
    obj = route(path="/console", tls={"termination": "passthrough"})
    error = refused(validator, "routes.route.openshift.io", obj)
    assert ("FieldValueInvalid", "spec") in causes(error)
    assert "must validate at least one schema (anyOf)" in error.message


def test_valid_route_passes_with_defaults(validator: validation.Validator) -> None:
    obj = route(host="console.apps.site.example.com", tls={"termination": "reencrypt"})
    stored, warnings = validator.admit(rtype("routes.route.openshift.io"), obj, None)
    assert warnings == []
    assert stored["spec"]["to"]["weight"] == 100  # default
    assert stored["spec"]["wildcardPolicy"] == "None"  # default


@pytest.mark.parametrize("port", [8443, "https"])
def test_route_target_port_is_int_or_string(validator: validation.Validator, port: int | str) -> None:
    stored, _ = validator.admit(rtype("routes.route.openshift.io"), route(port={"targetPort": port}), None)
    assert stored["spec"]["port"]["targetPort"] == port


@pytest.mark.parametrize("port", [0, "", 1.5, True, ["https"]])
def test_route_target_port_refuses_zero_empty_and_other_types(validator: validation.Validator, port: Any) -> None:
    error = refused(validator, "routes.route.openshift.io", route(port={"targetPort": port}))
    assert {field for _, field in causes(error)} & {"spec.port.targetPort"}


def test_passthrough_route_with_a_certificate_is_refused_but_secret_text_is_not_echoed(
    validator: validation.Validator,
) -> None:
    secret = "-----BEGIN PRIVATE KEY-----\nMIIsecretmaterial\n-----END PRIVATE KEY-----"
    error = refused(validator, "routes.route.openshift.io", route(tls={"termination": "passthrough", "key": secret}))
    assert "MIIsecretmaterial" not in error.message
    assert "MIIsecretmaterial" not in json.dumps(error.causes)


# ---- status writes and the status subresource -----------------------------------------------------------------


def test_main_write_keeps_stored_status_and_status_write_is_validated(validator: validation.Validator) -> None:
    key = "ingresses.config.openshift.io"
    stored, _ = validator.admit(rtype(key), ingress(), None)
    stored["status"] = {"defaultPlacement": "ControlPlane"}
    sent = ingress()
    sent["status"] = {"defaultPlacement": "Nowhere"}  # ignored on the main resource, as kube does
    kept, _ = validator.admit(rtype(key), sent, stored)
    assert kept["status"] == {"defaultPlacement": "ControlPlane"}
    error = refused_status(validator, key, sent, stored)
    assert causes(error) == {("FieldValueNotSupported", "status.defaultPlacement"), NOT_CHECKED}


def refused_status(validator: validation.Validator, key: str, obj: dict[str, Any], old: dict[str, Any]):
    with pytest.raises(model.ApiError) as caught:
        validator.admit(rtype(key), obj, old, subresource="status")
    return caught.value


def test_metadata_name_must_be_a_dns_subdomain(validator: validation.Validator) -> None:
    obj = ingress()
    obj["metadata"]["name"] = "Cluster_1"
    error = refused(validator, "ingresses.config.openshift.io", obj)
    assert causes(error) == {("FieldValueInvalid", "metadata.name")}
    del obj["metadata"]["name"]
    error = refused(validator, "ingresses.config.openshift.io", obj)
    assert causes(error) == {("FieldValueRequired", "metadata.name"), NOT_CHECKED}
    assert "some validation rules were not checked" in error.message


def test_unknown_types_are_admitted_unchanged(validator: validation.Validator) -> None:
    widgets = model.ResourceType("example.com", "v1", "widgets", "Widget", True)
    obj = {"metadata": {"name": "x"}, "spec": {"anything": [1, 2]}}
    assert validator.admit(widgets, obj, None) == (obj, [])


# ---- built-in kinds -------------------------------------------------------------------------------------------


def secret(kind: str | None = None, **data: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    if kind:
        obj["type"] = kind
    if data:
        obj["data"] = data
    return obj


def test_tls_secret_without_tls_key_is_refused(validator: validation.Validator) -> None:
    error = refused(validator, "secrets", secret("kubernetes.io/tls", **{"tls.crt": b64("cert")}))
    assert causes(error) == {("FieldValueRequired", "data[tls.key]")}
    assert error.message == 'Secret "s" is invalid: data[tls.key]: Required value'


def test_secret_data_must_be_base64_and_the_value_is_not_echoed(validator: validation.Validator) -> None:
    error = refused(validator, "secrets", secret(password="hunter2!!"))
    assert causes(error) == {("FieldValueInvalid", "data[password]")}
    assert "hunter2" not in error.message


def test_secret_string_data_is_folded_into_data_and_type_defaults_to_opaque(validator: validation.Validator) -> None:
    obj = secret(**{"a": b64("old")})
    obj["stringData"] = {"a": "new", "b": "plain"}
    stored, _ = validator.admit(rtype("secrets"), obj, None)
    assert stored["type"] == "Opaque" and "stringData" not in stored
    assert stored["data"] == {"a": b64("new"), "b": b64("plain")}


def test_dockerconfigjson_secret_needs_its_key_and_valid_json(validator: validation.Validator) -> None:
    kind = "kubernetes.io/dockerconfigjson"
    assert causes(refused(validator, "secrets", secret(kind))) == {("FieldValueRequired", "data[.dockerconfigjson]")}
    error = refused(validator, "secrets", secret(kind, **{".dockerconfigjson": b64("{not json")}))
    assert causes(error) == {("FieldValueInvalid", "data[.dockerconfigjson]")}
    pull = json.dumps({"auths": {"quay.io": {"auth": b64("u:p")}}})
    validator.admit(rtype("secrets"), secret(kind, **{".dockerconfigjson": b64(pull)}), None)


def test_secret_type_cannot_change(validator: validation.Validator) -> None:
    stored, _ = validator.admit(rtype("secrets"), secret(a=b64("x")), None)
    error = refused(
        validator, "secrets", secret("kubernetes.io/tls", **{"tls.crt": b64("c"), "tls.key": b64("k")}), stored
    )
    assert causes(error) == {("FieldValueInvalid", "type")}


def test_config_map_binary_data_must_be_base64(validator: validation.Validator) -> None:
    obj = {"metadata": {"name": "ca", "namespace": "ns"}, "data": {"ca-bundle.crt": "pem"}, "binaryData": {"b": "***"}}
    error = refused(validator, "configmaps", obj)
    assert causes(error) == {("FieldValueInvalid", "binaryData[b]")}
    obj["binaryData"] = {"b": b64(b"\x00\x01")}
    validator.admit(rtype("configmaps"), obj, None)


def test_namespace_name_is_a_dns_label(validator: validation.Validator) -> None:
    error = refused(validator, "namespaces", {"metadata": {"name": "openshift.config"}})
    assert causes(error) == {("FieldValueInvalid", "metadata.name")}
    validator.admit(rtype("namespaces"), {"metadata": {"name": "openshift-config"}}, None)


def test_pod_needs_containers_with_images(validator: validation.Validator) -> None:
    assert causes(refused(validator, "pods", {"metadata": {"name": "p", "namespace": "n"}, "spec": {}})) == {
        ("FieldValueRequired", "spec.containers")
    }
    pod = {"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    stored, _ = validator.admit(rtype("pods"), pod, None)
    assert stored["spec"] == pod["spec"]


def csr_pem() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "system:node:sno")])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return request.public_bytes(serialization.Encoding.PEM)


def test_csr_requires_a_pem_request_signer_and_known_usages(validator: validation.Validator) -> None:
    key = "certificatesigningrequests.certificates.k8s.io"
    good = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr-1"},
        "spec": {
            "request": b64(csr_pem()),
            "signerName": "kubernetes.io/kubelet-serving",
            "usages": ["digital signature", "server auth"],
        },
    }
    validator.admit(rtype(key), good, None)
    bad = json.loads(json.dumps(good))
    bad["spec"].update(request=b64("not a csr"), usages=["server auth", "world domination"])
    del bad["spec"]["signerName"]
    error = refused(validator, key, bad)
    assert {
        ("FieldValueRequired", "spec.signerName"),
        ("FieldValueNotSupported", "spec.usages[1]"),
        ("FieldValueInvalid", "spec.request"),
    } <= causes(error)
