"""The agent's face for its siblings (`snoreloc.siblings`): each name is the module it says, and each third-party
client stays in the modules that own it (as kopf confines its clients to two modules). That the fleet and the demo
import nothing else of the agent is the import-linter contract `siblings-one-face` (`tools/import_contracts.py`).

Read from the import graph itself (grimp, which import-linter is built on), so no module is listed by hand: a
setting that imports `cryptography`, or a fleet module that imports `kubernetes`, fails here.
"""

from __future__ import annotations

import importlib

import grimp
import pytest

from snoreloc import siblings

# a third-party package -> the packages or modules that own it (a module of them, or one of their descendants)
OWNERS: dict[str, tuple[str, ...]] = {
    "kubernetes": ("snoreloc.adapters.kube",),
    "kopf": ("snoreloc_fleet.controller.operator",),
    "cryptography": ("snoreloc.pki", "snoreloc_sim"),  # the simulator is an independent oracle with its own
    "bcrypt": (  # kubeadmin's hash; the emulated BMC's htpasswd (sushy-tools reads bcrypt)
        "snoreloc_fleet.hub.adminaccess",
        "snoreloc_sim.openshift.admin_access",
        "snoreloc_sim.demo.bmc",
    ),
    "pycdlib": ("snoreloc_fleet.hub.mediaimage",),  # the site's configuration image (issue 36)
    "sushy": ("snoreloc_fleet.hub.redfish",),  # the site's BMC (issue 36)
}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("snoreloc", "snoreloc_fleet", "snoreloc_sim", include_external_packages=True)


def _within(module: str, owners: tuple[str, ...]) -> bool:
    return any(module == owner or module.startswith(owner + ".") for owner in owners)


def _modules(graph: grimp.ImportGraph, package: str) -> set[str]:
    return {package} | graph.find_descendants(package)


def test_the_face_names_each_module_once_and_each_name_is_that_module() -> None:
    assert siblings.__all__ == sorted(siblings._MODULES)
    for name, target in siblings._MODULES.items():
        assert getattr(siblings, name) is importlib.import_module(target), name


def test_an_unknown_name_is_an_attribute_error_naming_the_surface() -> None:
    with pytest.raises(AttributeError, match="surface"):
        siblings.__getattr__("journal_internals")


@pytest.mark.parametrize("package", sorted(OWNERS))
def test_a_third_party_client_stays_in_the_modules_that_own_it(graph: grimp.ImportGraph, package: str) -> None:
    importers = graph.find_modules_that_directly_import(package)
    strays = sorted(m for m in importers if not _within(m, OWNERS[package]))
    assert not strays, f"{package} belongs to {OWNERS[package]}; move the use there: {strays}"


def test_the_check_sees_a_stray_import(graph: grimp.ImportGraph) -> None:
    """The graph does hold the owners' imports: the check above is not vacuous."""
    for package, owners in OWNERS.items():
        assert any(_within(m, owners) for m in graph.find_modules_that_directly_import(package)), package
