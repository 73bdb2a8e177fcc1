"""`validate --annotate`: the user's own file, reprinted with each offending line tagged, and a legend below.

The form is cloud-init's `schema --annotate`: `# E1,E2` at the end of each line with a problem (`W1` for
warnings), then a footer `# E1: path: message (line L)`. A person fixing the file sees the problems where they are.
Inline secrets (private keys, pull secrets) are blanked in the reprint, and every line passes through the redactor
as well (line for line, so the tags stay on their lines), because this is the one place the user's text is echoed:
its patterns mask secret-looking values even under a misspelt key or in a file that does not parse.
"""

from __future__ import annotations

from collections.abc import Sequence

from snoreloc import errors, redact
from snoreloc.siteconfig import yamlpos


def _mask_span(lines: list[str], span: yamlpos.Span) -> None:
    first, start_col = span.start.line - 1, span.start.column - 1
    last, end_col = span.end.line - 1, span.end.column - 1
    if first == last:
        lines[first] = lines[first][:start_col] + redact.MASK + lines[first][end_col:]
        return
    lines[first] = lines[first][:start_col] + redact.MASK
    for index in range(first + 1, min(last, len(lines))):
        lines[index] = ""
    if end_col > 0 and last < len(lines):  # the value ends mid-line (flow style): keep what follows it
        lines[last] = " " * end_col + lines[last][end_col:]


def _masked(text: str, spans: Sequence[yamlpos.Span]) -> list[str]:
    lines = text.splitlines()
    for span in spans:
        if span.start.line - 1 < len(lines):
            _mask_span(lines, span)
    return lines


def _legend(
    problems: Sequence[errors.Problem], warnings: Sequence[errors.Problem]
) -> tuple[dict[int, list[str]], list[str]]:
    tags: dict[int, list[str]] = {}
    footer: list[str] = []
    for prefix, title, items in (("E", "Errors", problems), ("W", "Warnings", warnings)):
        if items:
            footer.append(f"# {title}: -------------")
        for number, problem in enumerate(items, start=1):
            label = f"{prefix}{number}"
            if problem.line is not None:
                tags.setdefault(problem.line, []).append(label)
            footer.append(f"# {label}: {problem.render()}")
    return tags, footer


def render(
    text: str,
    problems: Sequence[errors.Problem],
    warnings: Sequence[errors.Problem] = (),
    secret_spans: Sequence[yamlpos.Span] = (),
) -> str:
    """`text` with `# E1,W1` tags on the lines that have problems, and the legend at the end."""
    lines = redact.redact("\n".join(_masked(text, secret_spans)), keep_lines=True).split("\n")
    tags, footer = _legend(problems, warnings)
    for line_number in sorted(n for n in tags if n > len(lines)):  # e.g. a problem at the end of the file
        lines += [""] * (line_number - len(lines))
    out = [f"{line}\t\t# {','.join(tags[n])}" if n in tags else line for n, line in enumerate(lines, start=1)]
    if footer:
        out += ["", *(redact.redact(line) for line in footer)]
    return "\n".join(out) + "\n"
