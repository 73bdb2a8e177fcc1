"""The agent's one face for its sibling distributions: the fleet (`snoreloc_fleet`) and the simulator's demo.

Everything else in `snoreloc` is internal and may move freely; what the fleet and the demo may use is the list
below, pinned by `tests/test_public_api.py` and enforced by `tests/test_siblings.py` (no module of the fleet or of
the demo imports any other part of the agent). A rule the node and the hub must share (the site-config's checks,
what a stick carries, the safe writer, masking) is reached here, so there is one definition of it.

Modules load on first use (PEP 562 `__getattr__`), not when this module is imported: `fleet --help` and
`fleet status` stay as light as before (the site-config checks, pydantic and the timeline load only for the verbs
that use them). For the type checker the names are plain imports.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the type checker sees; at run time each loads on first use
    from snoreloc import errors, logs, redact, safefile, sanitize, waits
    from snoreloc.adapters import blockdev, clock, command, console, fs, kube, nmstate, probe, systemd
    from snoreloc.cli import main
    from snoreloc.engine import hubreport, journal, node, paths, runner, timeline, view
    from snoreloc.factory import media
    from snoreloc.host import services
    from snoreloc.pki import certs
    from snoreloc.siteconfig import files, findings, loader, medium, model, schema, yamlpos
    from snoreloc.steps import context

# name -> the agent module it is: the whole surface, one line each
_MODULES: dict[str, str] = {
    # errors, masking, the one safe writer and bounded reader, the one sanitiser, the one wait
    "errors": "snoreloc.errors",
    "logs": "snoreloc.logs",
    "redact": "snoreloc.redact",
    "safefile": "snoreloc.safefile",
    "sanitize": "snoreloc.sanitize",
    "waits": "snoreloc.waits",
    # the external systems (the kube client is the only way to a cluster or a hub)
    "blockdev": "snoreloc.adapters.blockdev",
    "clock": "snoreloc.adapters.clock",
    "command": "snoreloc.adapters.command",
    "console": "snoreloc.adapters.console",
    "fs": "snoreloc.adapters.fs",
    "kube": "snoreloc.adapters.kube",
    "nmstate": "snoreloc.adapters.nmstate",
    "probe": "snoreloc.adapters.probe",
    "systemd": "snoreloc.adapters.systemd",
    # the site-config's rules, shared by the node and the hub, and what a stick carries
    "files": "snoreloc.siteconfig.files",
    "findings": "snoreloc.siteconfig.findings",
    "loader": "snoreloc.siteconfig.loader",
    "medium": "snoreloc.siteconfig.medium",
    "model": "snoreloc.siteconfig.model",
    "schema": "snoreloc.siteconfig.schema",
    "yamlpos": "snoreloc.siteconfig.yamlpos",
    "media": "snoreloc.factory.media",
    # the node's reports to its hub, and what people look at
    "hubreport": "snoreloc.engine.hubreport",
    "timeline": "snoreloc.engine.timeline",
    # the whole node flow, which the demo drives on fakes
    "certs": "snoreloc.pki.certs",
    "context": "snoreloc.steps.context",
    "journal": "snoreloc.engine.journal",
    "main": "snoreloc.cli.main",
    "node": "snoreloc.engine.node",
    "paths": "snoreloc.engine.paths",
    "runner": "snoreloc.engine.runner",
    "services": "snoreloc.host.services",
    "view": "snoreloc.engine.view",
}

__all__ = [  # the pinned surface (tests/test_public_api.py); each name's module is in _MODULES
    "blockdev",
    "certs",
    "clock",
    "command",
    "console",
    "context",
    "errors",
    "files",
    "findings",
    "fs",
    "hubreport",
    "journal",
    "kube",
    "loader",
    "logs",
    "main",
    "media",
    "medium",
    "model",
    "nmstate",
    "node",
    "paths",
    "probe",
    "redact",
    "runner",
    "safefile",
    "sanitize",
    "schema",
    "services",
    "systemd",
    "timeline",
    "view",
    "waits",
    "yamlpos",
]


def __getattr__(name: str) -> ModuleType:
    """The agent module `name` names, imported on first use (PEP 562)."""
    try:
        target = _MODULES[name]
    except KeyError:
        raise AttributeError(f"snoreloc.siblings has no {name!r}: the agent's surface is {__all__}") from None
    module = importlib.import_module(target)
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
