"""What a site setting declares about itself, in its own module (`snoreloc.siteconfig.settings.<name>`).

A setting is one key of the site-config's `spec`. Its module says everything about it once: the schema fragment
(with `x-secret` on the values never to be echoed), the typed model the agent reads, how that model is built from
the checked values, the offline checks that give each problem its field and line, and what applying it costs (a
reboot, which rollouts). `registry.SETTINGS` lists the modules; the schema, the loader, the checks, the secret list and the
plan's notes are assembled from these declarations. The setting does not name its step: the step module (above it
in the layers) names the setting it applies (`setting = <module>.SETTING`), and `engine.order` places the step in
the one run-order list, so adding a setting is its module, its step if it has one, one line in the registry and
one in the run order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from snoreloc.siteconfig import checks, findings, fragments

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
class Setting(Generic[T]):
    """One site setting. `field`: the `model.SiteConfig` attribute holding it ("" when it only feeds another section's
    check, as `networkAccept` feeds the network's); `load(values, checked)`: the model from the checked values (None
    when the key is absent); `check(run, spec)`: its offline checks, reporting at paths under `spec.<key>`."""

    key: str
    field: str
    schema: dict[str, Any]
    load: Callable[[Any, checks.Checked], T]
    check: Callable[[checks.Run, Mapping[str, Any]], None] | None = None
    cost: Cost = Cost()

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
