"""Strings bound for a person's screen, made harmless at the edge: the terminal, the progress page, the SVG.

Text that reaches a person often came from a site-config or the cluster (a site name, an object's name, an error
the API returned), and anyone who wrote those could put a terminal escape (`ESC ]` retitles a window, `ESC [2J`
clears it, a carriage return overwrites a line), a bidirectional override that reorders what is shown, or markup
into them. So every such string passes through one of the functions here, one per kind of sink:

* `visible(text)` shows each control character as an escape a person can read (`\\x1b`, `\\r`, `\\u202e`): C0 and
  C1 controls, DEL, the bidirectional overrides and isolates, and the code points XML forbids; line feed and tab
  stay as they are unless `keep_lines=False`.
* `html(text)` is `visible` with `& < > " '` escaped, for the page's HTML and the SVG's text and attributes.
* `TerminalStream` wraps a text stream (the CLI's stdout and stderr) so nothing written to it skips `visible`.
* `csv_cell(text)` is `visible` on one line (line feeds and tabs shown too) for a cell of a CSV file a person opens
  in a spreadsheet, with a cell that would start a formula (`=`, `+`, `-`, `@`, tab, carriage return) prefixed
  with `'` (OWASP's rule against CSV injection: https://owasp.org/www-community/attacks/CSV_Injection).
* `label(text)` is `visible` on one line, for a Prometheus label value: `prometheus_client` escapes `\\`, `"` and
  line feeds itself, but a lone surrogate makes the whole exposition fail to encode (the scrape answers 500).

JSON and YAML that snoreloc prints are already escaped by their encoders, so the stream changes none of their bytes.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TextIO

__all__ = ["TerminalStream", "csv_cell", "html", "label", "visible"]

# C0 controls but tab and line feed, DEL, C1 controls, bidi embeddings/overrides/isolates/marks, the line and
# paragraph separators, and the non-characters XML 1.0 forbids (U+FFFE, U+FFFF) plus lone surrogates.
_OTHERS = "\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffe\uffff\ud800-\udfff"


@functools.cache
def _pattern(keep_lines: bool) -> re.Pattern[str]:
    """Compiled at the first use rather than at import, as `redact` does its patterns."""
    return re.compile(f"[\x00-\x08{_OTHERS}]" if keep_lines else f"[\x00-\x0a{_OTHERS}]")


_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t", "\x1b": "\\x1b"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, keep_lines: bool = True) -> str:
    """`text` with every control character shown as a readable escape (line feed and tab kept if `keep_lines`)."""
    return _pattern(keep_lines).sub(_shown, str(text))


def html(text: object) -> str:
    """`text` for HTML or SVG, as element text or a quoted attribute: controls visible, markup escaped."""
    import html as html_mod  # noqa: PLC0415 (lazy: only the page and the SVG need it)

    return html_mod.escape(visible(text), quote=True)


# The first characters that make a spreadsheet read a cell as a formula (OWASP, CSV Injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: object) -> str:
    """`text` for one CSV cell: every control shown (line feed and tab too), a formula's first character defused."""
    raw = str(text)
    shown = visible(raw, keep_lines=False)
    return "'" + shown if raw.startswith(FORMULA_STARTS) else shown


def label(text: object) -> str:
    """`text` for a Prometheus label value: one line, every control shown, UTF-8 encodable."""
    return visible(text, keep_lines=False)


class TerminalStream:
    """A text stream whose every write passes through `visible` (line feeds and tabs kept), for stdout and stderr.

    A reader that goes away (`snoreloc analyze | head -1`) is not an error of the verb: from the first
    `BrokenPipeError` on, the stream's descriptor is pointed at /dev/null (so the interpreter's last flush finds no
    broken pipe either, as the Python documentation's note on SIGPIPE advises) and what is written after is
    dropped; the verb goes on and exits with its own code. A run whose output is cut off thus still finishes.

    Anything not overridden (`isatty`, `fileno`, `buffer`, `encoding`) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self.wrapped.write(visible(text))
            except BrokenPipeError:
                self._drop()
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.wrapped.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        """The reader closed the pipe: send the rest, and whatever is still buffered, to /dev/null."""
        self.reader_gone = True
        try:
            descriptor = self.wrapped.fileno()
        except (OSError, ValueError):  # a stream without a descriptor (a test's StringIO): dropping is enough
            return
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, descriptor)
        finally:
            os.close(null)

    def __getattr__(self, name: str) -> object:
        return getattr(self.wrapped, name)
