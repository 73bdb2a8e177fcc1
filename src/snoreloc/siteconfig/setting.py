"""What a site setting declares about itself, in its own module (`snoreloc.siteconfig.settings.<name>`).

A setting is one key of the site-config's `spec`. Its module says everything about it once: the schema fragment
(with `x-secret` on the values never to be echoed), the typed model the agent reads, how that model is built from
the checked values, the offline checks that give each problem its field and line, the cluster objects (or fields)
it makes snoreloc write (`claims`, `owns`: an extra manifest may not name them; `seal` looks for a user's object
under the fixed names), what restoring those objects sets in motion (`rollback`: its step records it on each
backup as it is taken) and what applying it costs (a reboot, which rollouts). `registry.SETTINGS` lists the
modules; the schema, the loader, the checks, the secret list, the claims and the plan's notes are assembled from
these declarations.

The setting does not name its step: the step module (above it in the layers) names the setting it applies
(`setting = <module>.SETTING`), and `engine.order` places the step in the one run-order list. So adding a setting
is its module, its step's module if it has one, one line in the registry and one in the run order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from snoreloc.siteconfig import checks, findings, fragments
from snoreloc.siteconfig import claims as claims_mod

T = TypeVar("T")


@dataclass(frozen=True)
class Cost:
    """What applying the setting costs at the site: for `plan`'s notes and the docs.

    `reboot`: "no", "yes" or "maybe" (say when in `note`); `rollouts`: the operators (or `mcp/master`) a change sets
    in motion; `note`: the sentence `plan` prints when the setting changes something.
    """

    reboot: str = "no"
    rollouts: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Rollback:
    """What restoring (or deleting) an object the setting's step wrote sets in motion, recorded on the object's
    backup when it is taken, so `rollback` can say it before its first write: `rollouts` as the journal names them,
    whether the node reboots, and why (one line). `reboot_if`: when given, the node reboots only if restoring changes
    one of these fields of the object's `spec` (`why_reboot` then says why)."""

    rollouts: tuple[str, ...] = ()
    reboot: bool = False
    why: str = ""
    reboot_if: tuple[str, ...] = ()
    why_reboot: str = ""

    def as_doc(self) -> dict[str, Any]:
        return {
            "rollouts": list(self.rollouts),
            "reboot": self.reboot,
            "why": self.why,
            "reboot_if": list(self.reboot_if),
            "why_reboot": self.why_reboot,
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Rollback:
        return cls(
            tuple(str(name) for name in doc.get("rollouts", ())),
            bool(doc.get("reboot", False)),
            str(doc.get("why", "")),
            tuple(str(name) for name in doc.get("reboot_if", ())),
            str(doc.get("why_reboot", "")),
        )


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One site setting. `field`: the `model.SiteConfig` attribute holding it ("" when it only feeds another section's
    check, as `networkAccept` feeds the network's); `load(values, checked)`: the model from the checked values (None
    when the key is absent); `check(run, spec)`: its offline checks, reporting at paths under `spec.<key>`;
    `claims(spec)`: the objects (or fields) the site-config's value makes its step write; `owns`: the objects its
    step creates under fixed names whatever the value (claimed when the key is given, unless `claims` says more;
    `seal` refuses a user's object under those names); `rollback`: what restoring its step's objects causes."""

    key: str
    field: str
    schema: dict[str, Any]
    load: Callable[[Any, checks.Checked], T]
    check: Callable[[checks.Run, Mapping[str, Any]], None] | None = None
    cost: Cost = Cost()
    claims: Callable[[Mapping[str, Any]], Iterable[claims_mod.Claim]] | None = None
    owns: tuple[claims_mod.Claim, ...] = ()
    rollback: Rollback = Rollback()

    @property
    def path(self) -> findings.Path:
        return ("spec", self.key)

    @property
    def secrets(self) -> tuple[findings.Path, ...]:
        """Where its secrets sit in a site-config: the properties its fragment marks `x-secret`."""
        return fragments.marked("x-secret", self.schema, self.path)

    @property
    def deprecated(self) -> tuple[findings.Path, ...]:
        """Its fields still accepted but ignored, each with a warning (the standard `deprecated` keyword)."""
        return fragments.marked("deprecated", self.schema, self.path)

    def claimed(self, spec: Mapping[str, Any]) -> list[claims_mod.Claim]:
        """What the site-config's `spec` makes this setting's step write (an extra manifest may not name it)."""
        if self.claims is not None:
            return list(self.claims(spec))
        return list(self.owns) if claims_mod.given(spec, self.key) else []
