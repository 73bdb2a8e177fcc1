"""The built-in Kubernetes kinds the simulator serves, described the way `validation` describes CRDs.

kube-apiserver validates built-in kinds in Go, not with OpenAPI, so there are no CRD files for them. The agent
writes Secrets (TLS certificates, the pull secret), ConfigMaps (CA bundles), Namespaces and CSRs, and reads Nodes
and Pods; those writes must be refused for the same reasons a real cluster refuses them. Each kind here is a small
structural schema (so unknown fields are pruned with a warning, as the real decoder does), a `prepare` step for
kube's own mutations (Secret `stringData` folded into `data`, `type` defaulted), and a `check` for the Go rules
a schema cannot say. `check` returns `Issue`s; `validation` turns them into field errors.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509

Obj = dict[str, Any]
REDACTED = "<secret contents redacted>"
MAX_SECRET_BYTES = 1024 * 1024
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_MESSAGE = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_SIGNER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+/[-._a-zA-Z0-9]+")
KEY_USAGES = (
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
)
# Secret types whose data must hold given keys (kube's ValidateSecret).
REQUIRED_SECRET_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


@dataclass(frozen=True)
class Issue:
    """A violation found by a kind's Go-style rules: kube's error type (cause), field, value and detail."""

    reason: str
    field: str
    value: Any = None
    detail: str = ""


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    schema: Obj = field(repr=False)
    subresources: tuple[str, ...] = ()
    name_check: str = "subdomain"
    prepare: Callable[[Obj], None] = lambda _obj: None
    check: Callable[[Obj, Obj | None], list[Issue]] = lambda _obj, _old: []

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _obj(properties: Obj | None = None, **extra: Any) -> Obj:
    schema: Obj = {"type": "object", **extra}
    if properties is not None:
        schema["properties"] = properties
    return schema


_STR: Obj = {"type": "string"}
_OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRING_MAP: Obj = {"type": "object", "additionalProperties": _STR}


def _root(**properties: Obj) -> Obj:
    base = {"apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"}}
    return _obj({**base, **properties})


# ---- Secret ---------------------------------------------------------------------------------------------------


def _prepare_secret(obj: Obj) -> None:
    """kube's own mutations: default `type`, fold `stringData` into `data` (base64), drop `stringData`."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    plain = obj.get("stringData")
    if isinstance(plain, dict) and all(isinstance(v, str) for v in plain.values()):
        data = _map(obj, "data")
        for key, value in plain.items():
            data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
        obj["data"] = data
        del obj["stringData"]


def _map(obj: Obj, name: str) -> Obj:
    """A map-valued field, or {} when absent or ill-typed (the schema reports the type)."""
    value = obj.get(name)
    return value if isinstance(value, dict) else {}


def _decoded(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _data_issues(data: Obj, *, secret: bool) -> list[Issue]:
    issues, total = [], 0
    for key, value in data.items():
        if not _CONFIG_KEY.fullmatch(key):
            issues.append(Issue("FieldValueInvalid", f"data[{key}]", key, _CONFIG_KEY_MESSAGE))
        raw = _decoded(value)
        if raw is None:
            shown = REDACTED if secret else value
            issues.append(Issue("FieldValueInvalid", f"data[{key}]", shown, "illegal base64 data"))
        else:
            total += len(raw)
    if secret and total > MAX_SECRET_BYTES:
        issues.append(Issue("FieldValueTooLong", "data", detail=f"may not be more than {MAX_SECRET_BYTES} bytes"))
    return issues


def _typed_secret_issues(obj: Obj, data: Obj) -> list[Issue]:
    kind = obj.get("type", "Opaque")
    issues = [
        Issue("FieldValueRequired", f"data[{key}]") for key in REQUIRED_SECRET_KEYS.get(kind, ()) if key not in data
    ]
    if kind == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" in data:
        raw = _decoded(data[".dockerconfigjson"])
        if raw is not None and not _is_json_object(raw):
            detail = "must be a valid JSON document holding an `auths` map"
            issues.append(Issue("FieldValueInvalid", "data[.dockerconfigjson]", REDACTED, detail))
    if kind == "kubernetes.io/basic-auth" and not ({"username", "password"} & set(data)):
        issues.append(Issue("FieldValueRequired", "data[username]"))
    return issues


def _is_json_object(raw: bytes) -> bool:
    try:
        parsed = json.loads(raw)
    except ValueError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("auths", {}), dict)


def _immutability_issues(obj: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[Issue]:
    if old is None:
        return []
    issues = []
    if old.get("immutable") is True:
        for name in fields:
            if obj.get(name) != old.get(name):
                issues.append(Issue("FieldValueForbidden", name, detail="field is immutable when `immutable` is set"))
        if obj.get("immutable") is not True:
            issues.append(
                Issue("FieldValueForbidden", "immutable", detail="field is immutable when `immutable` is set")
            )
    return issues


def _check_secret(obj: Obj, old: Obj | None) -> list[Issue]:
    data = _map(obj, "data")
    issues = _data_issues(data, secret=True) + _typed_secret_issues(obj, data)
    if old is not None and old.get("type", "Opaque") != obj.get("type"):
        issues.append(Issue("FieldValueInvalid", "type", obj.get("type"), "field is immutable"))
    return issues + _immutability_issues(obj, old, ("data",))


# ---- ConfigMap ------------------------------------------------------------------------------------------------


def _check_config_map(obj: Obj, old: Obj | None) -> list[Issue]:
    data, binary = _map(obj, "data"), _map(obj, "binaryData")
    issues = [
        Issue("FieldValueInvalid", f"data[{key}]", key, _CONFIG_KEY_MESSAGE)
        for key in data
        if not _CONFIG_KEY.fullmatch(key)
    ]
    issues += [
        Issue("FieldValueInvalid", f"binaryData[{issue.field[5:]}", issue.value, issue.detail)
        for issue in _data_issues(binary, secret=False)
    ]
    issues += [
        Issue("FieldValueInvalid", f"data[{key}]", key, "duplicate of key present in binaryData")
        for key in data
        if key in binary
    ]
    return issues + _immutability_issues(obj, old, ("data", "binaryData"))


# ---- Pod ------------------------------------------------------------------------------------------------------


def _check_pod(obj: Obj, _old: Obj | None) -> list[Issue]:
    containers = (obj.get("spec") or {}).get("containers")
    if not isinstance(containers, list):
        return []
    issues, names = [], set()
    for index, container in enumerate(containers):
        if not isinstance(container, dict):
            continue
        name = container.get("name")
        if name in names:
            issues.append(Issue("FieldValueDuplicate", f"spec.containers[{index}].name", name))
        names.add(name)
    return issues


# ---- CertificateSigningRequest --------------------------------------------------------------------------------


def _check_csr(obj: Obj, _old: Obj | None) -> list[Issue]:
    spec = obj.get("spec") or {}
    issues = []
    request = spec.get("request")
    if isinstance(request, str):
        raw = _decoded(request)
        if raw is None:
            issues.append(Issue("FieldValueInvalid", "spec.request", "[]byte", "illegal base64 data"))
        elif not _is_pem_csr(raw):
            issues.append(
                Issue("FieldValueInvalid", "spec.request", "[]byte", "PEM block type must be CERTIFICATE REQUEST")
            )
    signer = spec.get("signerName")
    if isinstance(signer, str) and signer and not _SIGNER_NAME.fullmatch(signer):
        detail = "should be a domain with at least two segments separated by dots, followed by a path"
        issues.append(Issue("FieldValueInvalid", "spec.signerName", signer, detail))
    return issues


def _is_pem_csr(raw: bytes) -> bool:
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in raw:
        return False
    try:
        x509.load_pem_x509_csr(raw)
    except ValueError:
        return False
    return True


# ---- the kinds ------------------------------------------------------------------------------------------------

KINDS: tuple[Kind, ...] = (
    Kind(
        group="",
        version="v1",
        plural="namespaces",
        kind="Namespace",
        namespaced=False,
        schema=_root(
            spec=_obj({"finalizers": {"type": "array", "items": _STR}}),
            status=_obj(
                {
                    "phase": {"type": "string", "enum": ["Active", "Terminating"]},
                    "conditions": {"type": "array", "items": _OPEN},
                }
            ),
        ),
        subresources=("status",),
        name_check="label",
    ),
    Kind(
        group="",
        version="v1",
        plural="secrets",
        kind="Secret",
        namespaced=True,
        schema=_root(data=_STRING_MAP, stringData=_STRING_MAP, type=_STR, immutable={"type": "boolean"}),
        prepare=_prepare_secret,
        check=_check_secret,
    ),
    Kind(
        group="",
        version="v1",
        plural="configmaps",
        kind="ConfigMap",
        namespaced=True,
        schema=_root(data=_STRING_MAP, binaryData=_STRING_MAP, immutable={"type": "boolean"}),
        check=_check_config_map,
    ),
    Kind(
        group="",
        version="v1",
        plural="nodes",
        kind="Node",
        namespaced=False,
        schema=_root(spec=_OPEN, status=_OPEN),
        subresources=("status",),
    ),
    Kind(
        group="",
        version="v1",
        plural="pods",
        kind="Pod",
        namespaced=True,
        schema=_root(
            spec=_obj(
                {
                    "containers": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(
                            {"name": _STR, "image": _STR},
                            required=["name", "image"],
                            **{"x-kubernetes-preserve-unknown-fields": True},
                        ),
                    }
                },
                required=["containers"],
                **{"x-kubernetes-preserve-unknown-fields": True},
            ),
            status=_OPEN,
        ),
        subresources=("status",),
        check=_check_pod,
    ),
    Kind(
        group="certificates.k8s.io",
        version="v1",
        plural="certificatesigningrequests",
        kind="CertificateSigningRequest",
        namespaced=False,
        schema=_root(
            spec=_obj(
                {
                    "request": _STR,
                    "signerName": _STR,
                    "expirationSeconds": {"type": "integer", "minimum": 600},
                    "usages": {"type": "array", "items": {"type": "string", "enum": list(KEY_USAGES)}},
                    "username": _STR,
                    "uid": _STR,
                    "groups": {"type": "array", "items": _STR},
                    "extra": {"type": "object", "additionalProperties": {"type": "array", "items": _STR}},
                },
                required=["request", "signerName", "usages"],
            ),
            status=_OPEN,
        ),
        subresources=("status", "approval"),
        check=_check_csr,
    ),
)
