"""Reading a site-config: every problem at once, each with its line, and a model only when there are none.

`validate(path) -> Report` is what `snoreloc validate` prints; `load(path) -> model.SiteConfig` is what the agent
uses, raising `errors.ConfigError` carrying every problem so that nothing on the node or the cluster is touched
by a half-valid config. The order is: parse (size, depth and alias limits), schema, semantic checks (which read the
referenced files), then, if nothing failed, the frozen model built from exactly the bytes that were checked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc import errors, redact, safefile
from snoreloc.siteconfig import checks, files, findings, model, registry, schema, semantic, structural, yamlpos

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Report:
    """The outcome of validating one site-config file."""

    source: str
    problems: tuple[errors.Problem, ...] = ()
    warnings: tuple[errors.Problem, ...] = ()
    config: model.SiteConfig | None = field(default=None, repr=False)
    text: str = field(default="", repr=False)
    secret_spans: tuple[yamlpos.Span, ...] = field(default=(), repr=False)

    @property
    def valid(self) -> bool:
        return not self.problems


def _problem(mark: yamlpos.Mark | None, found: findings.Finding) -> errors.Problem:
    return errors.Problem(
        path=findings.render_path(found.path),
        message=redact.redact(found.message),
        line=mark.line if mark else None,
        column=mark.column if mark else None,
        severity=found.severity.value,
    )


def _sorted(problems: list[errors.Problem]) -> tuple[errors.Problem, ...]:
    """In file order, each problem once (a schema with several branches can report the same one per branch)."""
    unique = list(dict.fromkeys(problems))
    return tuple(sorted(unique, key=lambda p: (p.line or 0, p.column or 0, p.path)))


def _read_source(path: str) -> bytes:
    return files.read_top(path, yamlpos.MAX_BYTES)


def _unreadable(source: str, exc: OSError) -> Report:
    reason = exc.strerror or type(exc).__name__
    return Report(source, (errors.Problem("", f"cannot read {source}: {reason}"),))


def validate(path: str, *, now: dt.datetime | None = None) -> Report:
    """Validate the site-config at `path`; referenced files are resolved relative to its directory."""
    try:
        raw = _read_source(path)
    except OSError as exc:
        return _unreadable(path, exc)
    base_dir = os.path.dirname(os.path.abspath(path))
    report = validate_bytes(raw, base_dir=base_dir, source=path, now=now)
    hub = _hub_warnings(base_dir)
    return dataclasses.replace(report, warnings=report.warnings + hub) if hub else report


def _hub_warnings(base_dir: str) -> tuple[errors.Problem, ...]:
    """The fleet hub's reporting kubeconfig beside the site-config (a medium's, or its copy on the node), when it
    would run anything or read a file outside the medium (`medium.hub_kubeconfig`): a warning per refused field, as
    the node then reports to no hub (the relocation itself does not need it). Its lines are the kubeconfig's, so
    they go in the message, not as the site-config's line."""
    from snoreloc.siteconfig import medium  # noqa: PLC0415 (lazy: medium imports discovery, which imports this module)

    hub = os.path.join(base_dir, medium.HUB_FILE)
    try:
        medium.hub_kubeconfig(safefile.read(hub, safefile.KUBECONFIG), pathlib.Path(base_dir))
    except (OSError, safefile.Unfit):
        return ()  # absent (the usual case) or unreadable: the node says so when it tries to report
    except errors.ConfigError as exc:
        return tuple(
            errors.Problem(
                f"{medium.HUB_FILE}: {p.path}" if p.path else medium.HUB_FILE,
                f"{p.message}{f' (its line {p.line})' if p.line else ''}; this node will not report to its hub",
                severity=findings.Severity.WARNING.value,
            )
            for p in exc.problems or (errors.Problem("", exc.message),)
        )
    return ()


# YAML 1.1 readings warned, numbers whole, and no secret's text quoted in either (docs/site-config.md).
_READING = yamlpos.Reading(
    yaml11=True, integers_only=True, secret=lambda path: any(findings.is_under(path, s) for s in schema.SECRET_PATHS)
)


def validate_bytes(raw: bytes, *, base_dir: str, source: str, now: dt.datetime | None = None) -> Report:
    """Validate site-config text whose file references resolve under `base_dir`."""
    try:
        doc = yamlpos.load(raw, _READING)
    except yamlpos.YamlError as exc:
        problem = errors.Problem("", exc.message, exc.line, exc.column)
        return Report(source, (problem,), text=raw.decode("utf-8", "replace"))
    found = structural.check(doc.data)
    checked = None
    if isinstance(doc.data, Mapping):
        broken = frozenset(f.path for f in found) | {f.path for f, _ in doc.issues}
        checked = semantic.check(doc.data, base_dir, now or dt.datetime.now(dt.UTC), broken)
        found += checked.found
    problems = [_problem(doc.locate(f.path), f) for f in found] + [_problem(m, f) for f, m in doc.issues]
    errs = _sorted([p for p in problems if p.severity == findings.Severity.ERROR.value])
    warns = _sorted([p for p in problems if p.severity != findings.Severity.ERROR.value])
    config = _build(doc.data, checked, source) if checked is not None and not errs else None
    spans = tuple(doc.spans[p] for p in schema.SECRET_PATHS if p in doc.spans)
    return Report(source, errs, warns, config, raw.decode("utf-8"), spans)


def load(path: str, *, now: dt.datetime | None = None) -> model.SiteConfig:
    """The validated site-config at `path`; raises errors.ConfigError listing every problem."""
    report = validate(path, now=now)
    for warning in report.warnings:
        LOG.warning("%s: %s", path, warning.render())
    if report.config is None:
        count = len(report.problems)
        raise errors.ConfigError(f"{path}: {count} problem{'s' if count != 1 else ''}", problems=report.problems)
    return report.config


def _pair(checked: checks.Checked, which: str) -> model.CertKeyPair | None:
    base = ("spec", "certificates", which)
    cert = checked.sources.get((*base, "certificate"))
    key = checked.sources.get((*base, "key"))
    return model.CertKeyPair(cert, key) if cert is not None and key is not None else None


def _pull_secret(spec: Mapping[str, Any], checked: checks.Checked) -> model.PullSecret | None:
    if checked.pull_secret is None:
        return None
    mode = model.PullSecretMode(spec["pullSecret"].get("mode", model.PullSecretMode.REPLACE.value))
    return model.PullSecret(checked.pull_secret, mode)


def _mirrors(entries: Any) -> tuple[model.Mirror, ...]:
    return tuple(model.Mirror(e["source"], tuple(e["mirrors"]), e.get("mirrorSourcePolicy")) for e in entries or ())


def _registry_cas(spec: Mapping[str, Any], checked: checks.Checked) -> tuple[model.RegistryCA, ...]:
    out = []
    for index, entry in enumerate(spec.get("registryCA") or ()):
        bundle = checked.sources[("spec", "registryCA", index, "certificate")]  # already a clean PEM bundle
        out.append(model.RegistryCA(entry["registry"], bundle.decode("ascii")))
    return tuple(out)


def _build(data: Mapping[str, Any], checked: checks.Checked, source: str) -> model.SiteConfig:
    spec = data["spec"]
    values = registry.load(spec, checked)
    fields = {entry.field: values[entry.key] for entry in registry.SETTINGS if entry.field in model.FIELDS}
    others = {entry.key: values[entry.key] for entry in registry.SETTINGS if entry.field not in model.FIELDS}
    return model.SiteConfig(
        name=data["metadata"]["name"],
        domain=spec["domain"],
        network=checked.network,
        certificates=model.Certificates(api=_pair(checked, "api"), ingress=_pair(checked, "ingress")),
        pull_secret=_pull_secret(spec, checked),
        image_digest_mirrors=_mirrors(spec.get("imageDigestMirrors")),
        image_tag_mirrors=_mirrors(spec.get("imageTagMirrors")),
        remove_mirrors=tuple(spec.get("removeMirrors") or ()),
        registry_ca=_registry_cas(spec, checked),
        source_path=source,
        settings={key: value for key, value in others.items() if value is not None},
        **fields,
    )
