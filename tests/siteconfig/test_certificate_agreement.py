"""`validate` and the certificates step agree on every user certificate: what one accepts the other accepts.

Before they shared one list of names, `validate` accepted an API certificate for `api.<domain>` alone and the step
refused it for lacking `api-int.<domain>`, after the node's network had already been changed.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import textwrap
from collections.abc import Callable

import pytest

from snoreloc import errors
from snoreloc.pki import certs
from snoreloc.siteconfig import loader, model
from snoreloc.steps.cluster import certificates
from snoreloc.steps.openshift import serving

DOMAIN = "sno1.site.example.com"  # the domain the `signer` fixture's tests use

NOW = dt.datetime.now(dt.UTC)
Pair = tuple[bytes, bytes]
Signer = tuple[bytes, bytes]


def _issued(names: list[str], *, start: dt.datetime = NOW, days: int = 365) -> Callable[[Signer], Pair]:
    return lambda signer: certs.issue_serving(*signer, names, days=days, now=start)


def _mismatched(names: list[str]) -> Callable[[Signer], Pair]:
    def make(signer: Signer) -> Pair:
        return certs.issue_serving(*signer, names, now=NOW)[0], certs.issue_serving(*signer, names, now=NOW)[1]

    return make


# (which certificate, how the pair is made, whether both must accept it)
CASES: dict[str, tuple[str, Callable[[Signer], Pair], bool]] = {
    "api-exact-name": ("api", _issued([f"api.{DOMAIN}"]), True),
    "api-with-api-int": ("api", _issued([f"api.{DOMAIN}", f"api-int.{DOMAIN}"]), True),
    "api-wildcard-of-the-domain": ("api", _issued([f"*.{DOMAIN}"]), True),
    "api-only-api-int": ("api", _issued([f"api-int.{DOMAIN}"]), False),
    "api-wrong-domain": ("api", _issued(["api.elsewhere.example.org"]), False),
    "api-expired": ("api", _issued([f"api.{DOMAIN}"], start=NOW - dt.timedelta(days=30), days=10), False),
    "api-key-mismatch": ("api", _mismatched([f"api.{DOMAIN}"]), False),
    "ingress-wildcard-without-bare-apps": ("ingress", _issued([f"*.apps.{DOMAIN}"]), True),
    "ingress-wildcard-and-bare-apps": ("ingress", _issued([f"*.apps.{DOMAIN}", f"apps.{DOMAIN}"]), True),
    "ingress-exact-names-no-wildcard": (
        "ingress",
        _issued([f"console-openshift-console.apps.{DOMAIN}", f"oauth-openshift.apps.{DOMAIN}"]),
        False,
    ),
    "ingress-wrong-domain": ("ingress", _issued(["*.apps.elsewhere.example.org"]), False),
    "ingress-expired": ("ingress", _issued([f"*.apps.{DOMAIN}"], start=NOW - dt.timedelta(days=30), days=10), False),
    "ingress-key-mismatch": ("ingress", _mismatched([f"*.apps.{DOMAIN}"]), False),
}


def _validate(tmp_path: pathlib.Path, which: str, pair: Pair) -> bool:
    for suffix, content in (("crt", pair[0]), ("key", pair[1])):
        target = tmp_path / f"{which}.{suffix}"
        target.write_bytes(content)
        target.chmod(0o600)
    path = tmp_path / "site-config.yaml"
    path.write_text(
        textwrap.dedent(f"""\
            apiVersion: snoreloc.io/v1alpha1
            kind: SiteConfig
            metadata: {{name: site-1}}
            spec:
              domain: {DOMAIN}
              certificates:
                {which}:
                  certificate: {{file: {which}.crt}}
                  key: {{file: {which}.key}}
            """)
    )
    return loader.validate(str(path), now=NOW).valid


def _step_accepts(which: str, pair: Pair) -> bool:
    site = model.SiteConfig("site-1", DOMAIN, certificates=model.Certificates(**{which: model.CertKeyPair(*pair)}))
    target = next(t for t in serving.targets(site) if t.user is not None)
    try:
        certificates.user_pair(target, NOW)
    except errors.ConfigError:
        return False
    return True


@pytest.mark.parametrize("case", list(CASES))
def test_validate_and_the_step_agree(case: str, tmp_path: pathlib.Path, signer: Signer) -> None:
    which, make, accepted = CASES[case]
    pair = make(signer)
    assert (_validate(tmp_path, which, pair), _step_accepts(which, pair)) == (accepted, accepted)


def test_our_own_certificates_carry_the_extra_names() -> None:
    api, ingress = serving.targets(model.SiteConfig("site-1", DOMAIN))
    assert api.names == (f"api.{DOMAIN}", f"api-int.{DOMAIN}")
    assert ingress.names == (f"*.apps.{DOMAIN}", f"apps.{DOMAIN}")
    for target in (api, ingress):
        assert set(target.served.required) <= set(target.served.issued)
