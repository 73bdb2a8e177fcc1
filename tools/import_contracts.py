"""import-linter contract types of our own, registered in `.importlinter` (`contract_types`).

`one_face`: the modules of some packages (the fleet, the simulator's demo) may import a package (the agent) only
through one module of it (`snoreloc.siblings`), the way kopf and httpx give one public face over private tiers. The
built-in contracts cannot say "nothing of the agent but this module" without listing every other agent package by
hand, which drifts; this one reads the import graph.
"""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class OneFaceContract(Contract):
    """`importers` reach `package` only through `face`: a direct import of any other module of `package` breaks it."""

    type_name = "one_face"

    importers = fields.ListField(subfield=fields.StringField())
    package = fields.StringField()
    face = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        package, face = str(self.package), str(self.face)
        found = []
        for importer in self.importers:  # type: ignore[attr-defined]
            for module in sorted({str(importer)} | graph.find_descendants(str(importer))):
                for imported in sorted(graph.find_modules_directly_imported_by(module)):
                    inside = imported == package or imported.startswith(package + ".")
                    if inside and imported != face:
                        found.append(f"{module} imports {imported}")
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"import it through {self.face} (add it there if it must be shared):", bold=True)
        for line in check.metadata["found"]:
            output.print_error(f"- {line}")
