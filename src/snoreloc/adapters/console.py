"""The console banner: what a technician in front of the node's screen sees at the login prompt.

agetty shows every `/etc/issue.d/*.issue` file above the login prompt, so one file there tells the person at the
console which step is running, and at the end either where the new console is or what failed and what to do.
agetty treats a backslash as an escape (`\\n` is the hostname), so text is escaped before it is written.
`agetty --reload` makes waiting prompts redraw; it is best-effort, because the banner is a courtesy, never a reason
to fail.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from snoreloc import errors, redact, sanitize
from snoreloc.adapters import command, fs

LOG = logging.getLogger(__name__)

ISSUE_FILE = "/etc/issue.d/50-snoreloc.issue"
TITLE = "snoreloc: relocating this node to its site"
FOOTER = "Details: `snoreloc status --long` or `journalctl -u snoreloc -b`."
RELOAD_TIMEOUT = 10.0


class Banner:
    """Writes the banner under the host root and asks agetty to redraw."""

    def __init__(self, host: fs.HostFS, runner: command.Runner) -> None:
        self.host = host
        self.runner = runner

    def progress(
        self,
        step: str,
        detail: str = "",
        *,
        index: int | None = None,
        total: int | None = None,
        now: str = "",
        page: str = "",
    ) -> None:
        position = f" ({index}/{total})" if index is not None and total is not None else ""
        lines = [TITLE, f"In progress{position}: {step}" + (f": {detail}" if detail else "")]
        self.show(lines + _guide(now, page) + [FOOTER])

    def done(self, console_url: str, warnings: Sequence[str] = (), *, now: str = "", page: str = "") -> None:
        lines = ["snoreloc: relocation done.", f"Web console: {console_url}"]
        lines += [f"Warning: {warning}" for warning in warnings]
        self.show(lines + _guide(now, page))

    def failed(self, step: str, message: str, hint: str, *, now: str = "", page: str = "") -> None:
        lines = [f"snoreloc: relocation FAILED at step {step}.", message, f"Likely fix: {hint}"]
        self.show(lines + _guide(now, page) + [FOOTER])

    def show(self, lines: Sequence[str]) -> None:
        text = "\n".join(escape(sanitize.visible(redact.redact(line), keep_lines=False)) for line in lines)
        self.host.write_text(ISSUE_FILE, f"\n{text}\n\n", mode=0o644)
        self._reload()

    def clear(self) -> None:
        self.host.remove(ISSUE_FILE)
        self._reload()

    def _reload(self) -> None:
        try:
            self.runner.run(["agetty", "--reload"], timeout=RELOAD_TIMEOUT, check=False)
        except errors.SnorelocError as exc:
            LOG.debug("agetty --reload: %s", exc)


def _guide(now: str, page: str) -> list[str]:
    """The technician's line (what to do now) and where the progress page is."""
    return ([f"Now: {now}"] if now else []) + ([f"Progress page: {page}"] if page else [])


def escape(line: str) -> str:
    """Text agetty prints as is: backslashes doubled, control characters dropped."""
    printable = "".join(char for char in line if char.isprintable())
    return printable.replace("\\", "\\\\")
