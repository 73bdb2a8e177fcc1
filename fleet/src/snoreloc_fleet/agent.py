"""The one place the fleet tooling calls into the agent: its site-config rules, its redaction, its timeline drawer.

The fleet never re-implements a site-config rule: it asks the agent, here. Keeping every such call in this module
means a refactor of the agent's packages (issue 21 moves modules around) changes these few lines and nothing else.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snoreloc.siblings import loader, yamlpos

SITE_CONFIG_NAME = "site-config.yaml"


def check_site_config(raw: bytes, *, base_dir: str, source: str, now: dt.datetime) -> loader.Report:
    """The agent's own verdict on one site-config's text whose file references resolve under `base_dir`."""
    from snoreloc.siblings import loader  # noqa: PLC0415 (workers import it once; `--help` never does)

    return loader.validate_bytes(raw, base_dir=base_dir, source=source, now=now)


def preload() -> None:
    """Import the agent's validation modules now (before forking workers, so each one inherits them)."""
    from snoreloc.siblings import loader  # noqa: F401, PLC0415


def line_of(raw: bytes, path: tuple[str | int, ...]) -> int | None:
    """The line where `path` (or its nearest ancestor) sits in a site-config's text, by the agent's loader."""
    from snoreloc.siblings import yamlpos  # noqa: PLC0415 (only for the few sites a fleet-wide check names)

    try:
        mark = yamlpos.load(raw).locate(path)
    except yamlpos.YamlError:
        return None
    return mark.line if mark else None


def dotted(path: tuple[str | int, ...]) -> str:
    """`spec.network.interfaces[0]`: how the agent writes a field's path in its findings."""
    from snoreloc.siblings import findings  # noqa: PLC0415

    return findings.render_path(path)


def looks_secret(text: str) -> bool:
    """Whether `text` has the shape of a secret by the agent's redaction rules (a private key, a password...)."""
    from snoreloc.siblings import redact  # noqa: PLC0415

    return redact.redact(text) != text


def secret_paths() -> tuple[tuple[str | int, ...], ...]:
    """The site-config fields that hold secrets inline (the schema marks them `x-secret`)."""
    from snoreloc.siblings import schema  # noqa: PLC0415

    return schema.SECRET_PATHS


def positioned(raw: bytes, source: str) -> tuple[object, dict[tuple[str | int, ...], int]]:
    """A YAML document's data and the line of every path in it, by the agent's bounded loader.

    Raises errors.ConfigError (with the line) when the text is not YAML the agent accepts.
    """
    from snoreloc.siblings import (  # noqa: PLC0415
        errors,
        yamlpos,
    )

    try:
        document = yamlpos.load(raw)
    except yamlpos.YamlError as exc:
        problem = errors.Problem(source, exc.message, exc.line, exc.column)
        raise errors.ConfigError(f"{source} is not a usable template", problems=[problem]) from None
    if document.issues:
        problems = [errors.Problem(dotted(f.path), f.message, m.line, m.column) for f, m in document.issues]
        raise errors.ConfigError(f"{source} is not a usable template", problems=problems)
    return document.data, {path: mark.line for path, mark in document.marks.items()}


def positioned_document(
    raw: bytes, source: str, *, size: int, aliases: int, values: int, nodes: int
) -> yamlpos.Document:
    """A YAML document larger than a site-config (an inventory) by the agent's bounded, positioned loader: at most
    `size` bytes, `aliases` aliases, `nodes` keys and values as written and `values` after expanding aliases, each
    counted before the structure is built; a duplicate key, a custom tag or a merge key is a problem at its line.

    Raises errors.ConfigError (with the line) when the text is not YAML the agent accepts.
    """
    from snoreloc.siblings import (  # noqa: PLC0415
        errors,
        yamlpos,
    )

    limits = yamlpos.Limits(bytes=size, aliases=aliases, nodes=values, document_nodes=nodes)
    try:
        document = yamlpos.load(raw, limits=limits)
    except yamlpos.YamlError as exc:
        problem = errors.Problem(source, exc.message, exc.line, exc.column)
        raise errors.ConfigError(f"{source} is not usable YAML", problems=[problem]) from None
    if document.issues:
        problems = [
            errors.Problem(source, f"{dotted(f.path)}: {f.message}", m.line, m.column) for f, m in document.issues
        ]
        raise errors.ConfigError(f"{source} is not usable YAML", problems=problems)
    return document


class Refused(ValueError):
    """A file reference the agent's rule refuses: absolute, with `..`, or resolving outside its directory."""


def resolve_reference(base: str, ref: str) -> str:
    """The real path of `ref` under `base`, proven inside it (links resolved), by the rule the agent applies to a
    site-config's `{file: NAME}` (`siteconfig.files.resolve`); raises Refused saying why."""
    from snoreloc.siblings import files  # noqa: PLC0415

    try:
        return files.resolve(base, ref)
    except files.RefError as exc:
        raise Refused(str(exc)) from None


def timeline_svg(
    title: str,
    steps: list[tuple[str, float, bool]],
    *,
    finished: bool,
    wait: str | None = None,
    rollouts: Sequence[tuple[str, float, float | None]] = (),
    waits: Sequence[tuple[str, str, float, float | None]] = (),
) -> str:
    """The agent's timeline picture (`snoreloc analyze --svg`'s drawer) of steps laid end to end.

    `steps`: (name, seconds, failed) in run order; `rollouts`: (operator, start, end or None) and `waits`: (step,
    what, start, end or None) in seconds after the run started, drawn as the node draws them (the rollouts the run
    waited for in the critical chain's colour, waits hatched); without reported waits, `wait` (what the last step is
    waiting for) is drawn hatched over it.
    """
    from snoreloc.siblings import timeline, view  # noqa: PLC0415 (only `fleet report` draws)

    bars, marks, start = [], [], 0.0
    for name, seconds, failed in steps:
        bars.append(timeline.Bar(name, start, start + seconds, failed=failed))
        start += seconds
    now = max([start, *(s for _, s, _ in rollouts), *(e for _, _, e in rollouts if e is not None)])
    drawn = [timeline.Bar(f"rollout: {n}", s, now if e is None else e, timeline.Kind.ROLLOUT) for n, s, e in rollouts]
    chain = view.critical_chain(drawn, now)
    bars += [timeline.Bar(b.label, b.start, b.end, b.kind, critical=i in chain) for i, b in enumerate(drawn)]
    marks = [timeline.WaitMark(step, what, s, now if e is None else e) for step, what, s, e in waits]
    if wait and not marks and steps:
        last = bars[len(steps) - 1]
        marks.append(timeline.WaitMark(last.label, wait, last.start, last.end))
    axis = "time axis: seconds after the run started, as the node counted its steps (the report's clock note)"
    return timeline.svg(timeline.Timeline(title, tuple(bars), tuple(marks), end=now if finished else None, axis=axis))
