"""Certificates: serving certificates for the new API and apps names, as TLS secrets with stable names.

By default each is issued by the cluster's own signer (API: `loadbalancer-serving-signer`, so kubeconfigs that
already trust the cluster keep working; ingress: the ingress operator's `router-ca`); a user's pair from the
site-config is used instead when given, after the same checks `validate` made, for the same names
(`model.served_names`: a user's certificate must cover what the cluster serves with it; ours add a few names). The
secrets have fixed names, so a re-run finds them and reuses them (no write) while they are still valid for the same
names and not close to expiry.
The ingress pair is written twice: componentRoutes read `openshift-config`, the IngressController reads
`openshift-ingress`. A secret of one of these names that does not carry our label is the user's: the step refuses
it before any write (naming it and what to do) rather than taking it over.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from snoreloc import errors, redact
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.steps import base, context
from snoreloc.steps.openshift import ownership, serving


def pair_problems(ctx: context.Context, pair: tuple[bytes, bytes] | None, names: tuple[str, ...]) -> list[str]:
    """Why a pair cannot serve `names` for at least the renewal margin (empty: it can)."""
    if pair is None:
        return ["missing or not a kubernetes.io/tls secret with tls.crt and tls.key"]
    margin = ctx.clock.now() + timedelta(days=ctx.settings.cert_renew_before_days)
    problems = certs.check_pair(pair[0], pair[1], names, ctx.clock.now())
    if not problems and certs.check_pair(pair[0], pair[1], names, margin):
        problems.append(f"expires within {ctx.settings.cert_renew_before_days} days")
    return problems


def _issue(ctx: context.Context, target: serving.Target) -> tuple[bytes, bytes]:
    signer = serving.tls_pair(ctx.kube.find(target.signer))
    if signer is None:
        raise errors.UnavailableError(
            f"cannot issue the {target.what} certificate: signer {target.signer} is missing or incomplete",
            hint="Supply the certificate in the site-config (certificates section) instead.",
        )
    chain, key = certs.issue_serving(signer[0], signer[1], list(target.served.issued), now=ctx.clock.now())
    redact.register_secret(key)
    return chain, key


def _material(ctx: context.Context, target: serving.Target) -> tuple[tuple[bytes, bytes], str]:
    """The pair to store: the stored one while still good (and still the user's, if theirs), else a new one."""
    stored = serving.tls_pair(ctx.kube.find(target.secrets[0]))
    user = (target.user.cert_pem, target.user.key_pem) if target.user else None
    if stored is not None and not pair_problems(ctx, stored, target.names) and (user is None or stored == user):
        return stored, "reused"
    if user is not None:
        return user_pair(target, ctx.clock.now()), "user-supplied"
    return _issue(ctx, target), "issued"


def user_pair(target: serving.Target, now: dt.datetime) -> tuple[bytes, bytes]:
    """The site-config's pair for `target`, checked as `validate` checks it; ConfigError when it cannot serve."""
    if target.user is None:
        raise ValueError(f"the site-config has no {target.what} certificate")
    pair = (target.user.cert_pem, target.user.key_pem)
    redact.register_secret(pair[1])
    problems = certs.check_pair(pair[0], pair[1], target.served.required, now)
    if problems:
        raise errors.ConfigError(f"the {target.what} certificate from the site-config cannot be used: "
                                 + "; ".join(problems))  # fmt: skip
    return pair


def tls_secret(ref: kube.Ref, pair: tuple[bytes, bytes]) -> kube.Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ref.name, "namespace": ref.namespace, "labels": dict(ownership.MANAGED_BY)},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64.b64encode(pair[0]).decode(), "tls.key": base64.b64encode(pair[1]).decode()},
    }


def _secret_change(
    ctx: context.Context, ref: kube.Ref, pair: tuple[bytes, bytes], why: str
) -> base.ObjectChange | None:
    desired = tls_secret(ref, pair)

    def merge(current: kube.Obj) -> kube.Obj:
        current["type"] = desired["type"]
        current["data"] = desired["data"]
        current["metadata"].setdefault("labels", {}).update(ownership.MANAGED_BY)
        return current

    change = base.upsert(ctx, ref, desired, merge)
    if change is not None and change.action is base.Action.UPDATE and current_type(change.before) != desired["type"]:
        return base.ObjectChange(ref, base.Action.DELETE, change.before, None, why="type is immutable: recreate")
    return None if change is None else dataclasses.replace(change, why=why)


def current_type(obj: kube.Obj | None) -> str | None:
    return None if obj is None else obj.get("type")


class Certificates(base.ObjectStep):
    name = "certificates"
    description = "preparing serving certificates for the new names"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"domain": ctx.site.domain, "user": ctx.site.certificates}

    def plan(self, ctx: context.Context) -> base.Plan:
        changes: list[base.ObjectChange] = []
        notes = []
        for target in serving.targets(ctx.site):
            for ref in target.secrets:
                ownership.refuse_users(ref, ctx.kube.find(ref))
        for target in serving.targets(ctx.site):
            pair, source = _material(ctx, target)
            notes.append(f"{target.what} certificate for {', '.join(target.names)}: {source}")
            for ref in target.secrets:
                change = _secret_change(ctx, ref, pair, f"{target.what} certificate, {source}")
                if change is not None and change.action is base.Action.DELETE:
                    changes += [change, base.create(ref, tls_secret(ref, pair), why="recreate as kubernetes.io/tls")]
                elif change is not None:
                    changes.append(change)
        return base.Plan(self.name, tuple(changes), tuple(notes))

    def verify(self, ctx: context.Context) -> None:
        for target in serving.targets(ctx.site):
            for ref in target.secrets:
                pair = serving.tls_pair(ctx.kube.find(ref))
                problems = certs.check_pair(*pair, target.names, ctx.clock.now()) if pair else ["missing"]
                if problems:
                    raise errors.TemporaryError(f"certificates: {ref}: {'; '.join(problems)}")
