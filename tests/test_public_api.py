"""The public surface, pinned (design §7, as httpx does): a name added to or dropped from `__all__` is a decision,
so it must change this test too. Everything else is internal and may move freely."""

from __future__ import annotations

import importlib

import pytest

import snoreloc
from snoreloc import errors

PUBLIC = {
    "snoreloc": ["ExitCode", "SnorelocError", "__version__"],
    # the agent's face for the fleet and the demo (tests/test_siblings.py: they use nothing else of the agent)
    "snoreloc.siblings": [
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
    ],
    "snoreloc.waits": ["PROGRESS", "Wait", "Waiting", "duration", "subscribe", "until"],
    "snoreloc.engine.journal": [
        "FORMAT_VERSION",
        "Document",
        "ErrorRecord",
        "Journal",
        "RunInfo",
        "RunState",
        "SiteRef",
        "StepRecord",
        "StepState",
        "TimingRow",
        "WaitRecord",
        "plausible",
        "read",
        "timings",
    ],
    "snoreloc.cli.common": [
        "DEFAULT_KUBECONFIG",
        "MAX_ROUTE_WORKERS",
        "add_cluster",
        "add_output",
        "add_run",
        "add_state",
        "exit_code",
        "load_site",
        "make_client",
        "make_clock",
        "make_options",
        "make_paths",
        "make_request",
        "make_settings",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_public_names_are_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name])
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names what it does not define: {missing}"


def test_the_package_exports_the_error_tree_root_and_the_version() -> None:
    assert snoreloc.SnorelocError is errors.SnorelocError
    assert snoreloc.ExitCode is errors.ExitCode
    assert snoreloc.__version__.count(".") == 2
