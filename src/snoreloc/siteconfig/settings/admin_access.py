"""`spec.adminAccess`: the site's own administrator access, so the factory's stops working (issue 32).

A cluster leaves the factory with the factory's ways in: the admin client certificate the installer wrote (signed
by a signer whose certificate sits in ConfigMap `openshift-config/admin-kubeconfig-client-ca`) and the `kubeadmin`
password (its bcrypt hash in Secret `kube-system/kubeadmin`). Whoever ran the depot holds both for every site. This
setting carries only public material: the certificate of the owner's admin client CA (its key stays on the owner's
machine, made by `snoreloc admin-access init`), whether the factory's signers are revoked, and what becomes of
`kubeadmin` (removed, or its password replaced by a bcrypt hash: never a password in clear on the medium).

The mechanism is OpenShift's own: the kube-apiserver operator folds `admin-kubeconfig-client-ca` into the API
server's client CA bundle (openshift/cluster-kube-apiserver-operator
`pkg/operator/targetconfigcontroller/targetconfigcontroller.go`, `ManageClientCABundle`: `CombineCABundleConfigMaps`
of `openshift-config/admin-kubeconfig-client-ca` and the operator's own client CAs into
`openshift-kube-apiserver/client-ca`), so adding a CA there lets
its client certificates in and removing one revokes them; `oc config new-admin-kubeconfig` appends a CA there the
same way (openshift/oc `pkg/cli/config/adminkubeconfig`), and CRC replaces the bundle at each start
(`pkg/crc/cluster/cluster.go`, `EnsureGeneratedClientCAPresentInTheCluster`). Removing the `kubeadmin` Secret turns
that login off (the OAuth server's bootstrap authenticator reads it and compares the password with bcrypt:
openshift/library-go `pkg/authentication/bootstrapauthenticator/bootstrap.go`), which recert also does for an empty
`kubeadmin_password_hash`. That authenticator refuses a Secret created over an hour after `kube-system`, so a new
hash only ever replaces the one in the installer's Secret (the step says when there is none).

Checks: a private key where a certificate belongs is refused at its line and never quoted (and its text is masked
everywhere from then on); each certificate must be a CA (basic constraints `CA:TRUE`) within its validity; the
password hash must have bcrypt's shape (`$2a$`/`$2b$`/`$2y$`, a cost 04-31, 53 characters of salt and hash) and is
`x-secret`. Without `adminAccess` nothing changes and `validate` warns that the factory keeps admin access.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc import redact
from snoreloc.pki import certs
from snoreloc.siteconfig import checks, claims, findings, fragments, setting

KEY = "adminAccess"
CLIENT_CA_CONFIGMAP = "admin-kubeconfig-client-ca"  # in openshift-config
CLIENT_CA_NAMESPACE = "openshift-config"
CLIENT_CA_KEY = "ca-bundle.crt"
KUBEADMIN_SECRET = "kubeadmin"  # noqa: S105 (a name: in kube-system, key `kubeadmin`, the bcrypt hash)
KUBEADMIN_NAMESPACE = "kube-system"
KUBEADMIN_KEY = "kubeadmin"
MAX_CLIENT_CAS = 8
FACTORY_KEEPS_ACCESS = (
    "the factory keeps admin access to this site: its admin client certificate and the kubeadmin password keep "
    "working; give spec.adminAccess.clientCA (make one with `snoreloc admin-access init --dir DIR`)"
)

# bcrypt's modular crypt format: $2a$/$2b$/$2y$, a two-digit cost 04-31, then 22 characters of salt and 31 of hash
# in bcrypt's base64 alphabet (OpenBSD bcrypt.c; the OAuth server checks the Secret with golang.org/x/crypto/bcrypt,
# which reads the same format, `newFromHash`).
BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
BCRYPT_BODY = 53
_BCRYPT_ALPHABET = re.compile(r"[./A-Za-z0-9]+")


class Kubeadmin(enum.Enum):
    REMOVE = "remove"  # the kubeadmin Secret is deleted: the login is off
    KEEP = "keep"  # left as the factory set it
    REPLACE = "replace"  # its hash becomes the site-config's (`{passwordHash: ...}`)


def _schema() -> dict[str, Any]:
    hash_object = fragments.obj(
        {
            "passwordHash": fragments.prop(
                "A bcrypt hash of kubeadmin's new password ($2a$, $2b$ or $2y$, e.g. from `htpasswd -nbBC 12 '' "
                "PASSWORD | cut -d: -f2`); never the password itself.",
                ["$2y$12$..."],
                type="string",
                minLength=1,
                maxLength=128,
                **{"x-secret": True},
            )
        },
        ("passwordHash",),
    )
    return fragments.prop(
        "The site's own administrator access: the certificate of the owner's admin client CA (public; its key "
        "never leaves the owner's machine), whether the factory's admin client signers are revoked, and what "
        "becomes of kubeadmin. Without it the factory keeps admin access (a warning).",
        [{"clientCA": {"file": "owner-admin-ca.crt"}, "revokeFactory": True, "kubeadmin": "remove"}],
        **fragments.obj(
            {
                "clientCA": fragments.pem_source(
                    "certificate(s) of the owner's admin client CA (public; a private key is refused)",
                    "owner-admin-ca.crt",
                ),
                "revokeFactory": fragments.prop(
                    "Remove the factory's admin client signers from `admin-kubeconfig-client-ca`, so the factory's "
                    "admin kubeconfig gets 401. Default: true when clientCA is given.",
                    [True],
                    type="boolean",
                ),
                "kubeadmin": {
                    "description": "`remove` (the kubeadmin login is off), `keep`, or `{passwordHash: ...}` (a bcrypt "
                    "hash of a new password). Default: remove when clientCA is given, else keep.",
                    "examples": ["remove"],
                    "oneOf": [{"type": "string", "enum": ["remove", "keep"]}, hash_object],
                    "x-message": "must be remove, keep, or a mapping with passwordHash (a bcrypt hash)",
                },
            },
            minProperties=1,
        ),
    )


@dataclass(frozen=True)
class AdminAccess:
    """The site's admin access: the owner's CA bundle (PEM, public), whether the factory's signers go, kubeadmin."""

    client_ca: str | None
    revoke_factory: bool
    kubeadmin: Kubeadmin
    password_hash: str | None = field(default=None, repr=False)

    def fingerprints(self) -> tuple[str, ...]:
        """The SHA-256 fingerprints of the owner's CA certificates, in order."""
        if self.client_ca is None:
            return ()
        return tuple(certs.fingerprint(cert) for cert in certs.parse_chain(self.client_ca.encode("ascii")))


def _kubeadmin(value: Any, has_ca: bool) -> tuple[Kubeadmin, str | None]:
    if isinstance(value, Mapping):
        return Kubeadmin.REPLACE, str(value["passwordHash"])
    if value is None:
        return (Kubeadmin.REMOVE if has_ca else Kubeadmin.KEEP), None
    return Kubeadmin(value), None


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> AdminAccess | None:
    if values is None:
        return None
    bundle = checked.sources.get((*SETTING.path, "clientCA"))
    has_ca = bundle is not None
    kubeadmin, password_hash = _kubeadmin(values.get("kubeadmin"), has_ca)
    revoke = values.get("revokeFactory")
    return AdminAccess(
        client_ca=bundle.decode("ascii") if bundle is not None else None,
        revoke_factory=has_ca if revoke is None else bool(revoke),
        kubeadmin=kubeadmin,
        password_hash=password_hash,
    )


def bcrypt_problem(value: str) -> str | None:
    """Why `value` is not a bcrypt hash, or None. Never quotes it."""
    prefix = value[:4]
    if prefix not in BCRYPT_PREFIXES:
        if value.startswith("$2"):
            return "is not a bcrypt hash: it must start with $2a$, $2b$ or $2y$"
        return "is not a bcrypt hash (it must start with $2a$, $2b$ or $2y$): give the hash, never the password"
    cost, dollar, body = value[4:].partition("$")
    if not (dollar and len(cost) == 2 and cost.isdigit() and 4 <= int(cost) <= 31):
        return "has no bcrypt cost: after the prefix come two digits 04-31 and '$'"
    if len(body) != BCRYPT_BODY or not _BCRYPT_ALPHABET.fullmatch(body):
        return f"is not a bcrypt hash: after the cost come {BCRYPT_BODY} characters of salt and hash ([./A-Za-z0-9])"
    return None


def _private_key(run: checks.Run, where: findings.Path, bundle: bytes) -> bool:
    """Whether the bundle holds a private key; if so its whole text is masked from now on and the line refused."""
    if b"PRIVATE KEY" not in bundle:
        return False
    redact.register_secret(bundle)
    run.error(
        where,
        "holds a private key: give only the CA's certificate (public); the key stays on the owner's machine. "
        "Remove the key from this file and keep it 0600 elsewhere",
    )
    return True


def _ca_problems(cert: certs.Certificate, position: int, now: dt.datetime) -> list[str]:
    info = certs.info(cert)
    what = f"certificate {position}" + (f" (CN {info.subject_cn})" if info.subject_cn else "")
    problems = []
    if not info.is_ca:
        problems.append(
            f"{what} is not a CA (no basic constraints CA:TRUE): give the certificate of the CA that signs the "
            "owner's admin client certificates, not a client certificate"
        )
    if cert.not_valid_after_utc <= now:
        problems.append(f"{what} expired on {cert.not_valid_after_utc:%Y-%m-%d}: make a new CA")
    elif cert.not_valid_before_utc > now:
        problems.append(
            f"{what} is not valid before {cert.not_valid_before_utc:%Y-%m-%d}: check the clock that made it"
        )
    return problems


def _chain(run: checks.Run, line: findings.Path, bundle: bytes) -> list[certs.Certificate] | None:
    """The owner's CA certificates, or None after reporting why they cannot be used."""
    if _private_key(run, line, bundle):
        return None
    try:
        chain = certs.parse_chain(bundle)
    except certs.CertError as exc:
        run.error(line, str(exc))
        return None
    problems = [p for position, cert in enumerate(chain, start=1) for p in _ca_problems(cert, position, run.now)]
    if len(chain) > MAX_CLIENT_CAS:
        problems.append(f"holds {len(chain)} certificates; give at most {MAX_CLIENT_CAS}")
    for problem in problems:
        run.error(line, problem)
    return None if problems else chain


def _client_ca(run: checks.Run, values: Mapping[str, Any]) -> bool:
    """Check the owner's CA bundle; whether one was given and is usable (then remembered, cleaned, for the model)."""
    where = (*SETTING.path, "clientCA")
    if "clientCA" not in values or not run.sound(where):
        return False
    source = values["clientCA"]
    bundle = run.source(where, source, secret=False)
    chain = None if bundle is None else _chain(run, checks.origin(where, source), bundle)
    if chain is None:
        run.sources.pop(where, None)  # never reaches the model (a private key least of all)
        return False
    run.sources[where] = certs.pem_bundle(chain)
    return True


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    values = spec.get(KEY)
    if values is None:
        run.warn(checks.SPEC, FACTORY_KEEPS_ACCESS)
        return
    if not isinstance(values, Mapping):
        return
    has_ca = _client_ca(run, values)
    kubeadmin = values.get("kubeadmin")
    where = (*SETTING.path, "kubeadmin", "passwordHash")
    if isinstance(kubeadmin, Mapping) and isinstance(kubeadmin.get("passwordHash"), str):
        redact.register_secret(kubeadmin["passwordHash"])
        problem = bcrypt_problem(kubeadmin["passwordHash"])
        if problem:
            run.error(where, problem)
    if "clientCA" not in values:
        if values.get("revokeFactory") is True:
            run.error(
                (*SETTING.path, "revokeFactory"),
                "would revoke the factory's admin client certificates with no new CA to replace them: give clientCA",
            )
        run.warn(SETTING.path, FACTORY_KEEPS_ACCESS.split(";", maxsplit=1)[0] + " (no clientCA given)")
    elif has_ca and values.get("revokeFactory") is False:
        run.warn((*SETTING.path, "revokeFactory"), "the factory's admin client certificates keep working at this site")
    if has_ca and kubeadmin == "keep":
        run.warn((*SETTING.path, "kubeadmin"), "the factory's kubeadmin password keeps working at this site")


def _claims(spec: Mapping[str, Any]) -> Iterator[claims.Claim]:
    values = spec.get(KEY)
    if not isinstance(values, Mapping) or not values:
        return
    if "clientCA" in values:
        yield claims.Claim(
            "", "ConfigMap", CLIENT_CA_NAMESPACE, CLIENT_CA_CONFIGMAP, SETTING.path, "the admin client CA bundle"
        )
    if values.get("kubeadmin", "remove" if "clientCA" in values else "keep") != "keep":
        yield claims.Claim("", "Secret", KUBEADMIN_NAMESPACE, KUBEADMIN_SECRET, SETTING.path, "the kubeadmin login")


SETTING = setting.Setting(
    key=KEY,
    field="",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="no",
        note="admin access: the API server reloads its client CAs live (no rollout, no reboot); the factory's "
        "admin kubeconfig stops working when its signer is revoked",
    ),
    claims=_claims,
    rollback=setting.Rollback(
        why="the factory's admin access comes back: its admin client signer and the kubeadmin login (no rollout)"
    ),
)
