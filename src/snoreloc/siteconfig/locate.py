"""Where a field of the network the site-config gives is written, for problems found after validation.

Some problems can only be found on the node (a site subnet that overlaps the internal address the factory
MachineConfig set, which only the node's `/etc/snoreloc/config` knows). They must still name the field and the line
like every other refusal: `network_problems` finds them in the site-config the run loaded, inline under
`spec.network` or in the file `spec.network.file` names (then the site-config line is that of `file`, and the
message gives the line in the network file).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from snoreloc import errors, safefile
from snoreloc.siteconfig import findings, yamlpos

NETWORK = ("spec", "network")


def _load(path: str) -> yamlpos.Document | None:
    try:
        return yamlpos.load(safefile.read(path, safefile.SITE_FILE, follow=True))
    except (OSError, safefile.Unfit, yamlpos.YamlError):
        return None


def network_problems(source: str | None, found: Sequence[tuple[findings.Path, str]]) -> list[errors.Problem]:
    """Each (path inside the nmstate document, message) as a Problem at its site-config field and line."""
    document = _load(source) if source else None
    network = document.data.get("spec", {}).get("network") if document and isinstance(document.data, dict) else None
    if source is None or document is None or not isinstance(network, dict) or not isinstance(network.get("file"), str):
        return [_inline(document, path, message) for path, message in found]
    name = network["file"]
    inner = _load(os.path.join(os.path.dirname(os.path.abspath(source)), name))
    mark = document.locate((*NETWORK, "file"))
    problems = []
    for path, message in found:
        at = inner.locate(path) if inner else None
        where = f" (line {at.line} of {name})" if at else ""
        text = f"{name}: {findings.render_path(path)}: {message}{where}"
        problems.append(errors.Problem(findings.render_path((*NETWORK, "file")), text, mark.line if mark else None))
    return problems


def _inline(document: yamlpos.Document | None, path: findings.Path, message: str) -> errors.Problem:
    full = (*NETWORK, *path)
    mark = document.locate(full) if document else None
    return errors.Problem(
        findings.render_path(full), message, mark.line if mark else None, mark.column if mark else None
    )
