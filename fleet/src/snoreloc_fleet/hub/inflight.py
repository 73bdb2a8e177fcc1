"""Which Sites the hub is relocating right now: what `fleet diff` must not change under a running node.

A node that has begun its run carries the stick it started with; a change to its Site's medium (or its removal) in
the middle of that run leaves the hub and the node describing different sites: the run ends `DigestMismatch`, or its
Site is gone. So a change touching such a Site waits until the run ends. A run has begun and not ended in the phases
`IN_FLIGHT`: InProgress, Stale (it went silent mid-run) and Failed (the technician resumes it with the same stick).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from snoreloc.siblings import kube
from snoreloc_fleet.hub import hubaccess
from snoreloc_fleet.resource import site

IN_FLIGHT = (site.Phase.IN_PROGRESS.value, site.Phase.STALE.value, site.Phase.FAILED.value)


@dataclass(frozen=True)
class OnHub:
    """A Site as the hub has it: its phase, and whether its stick's credential was issued (a stick may be out)."""

    phase: str
    stick_made: bool

    @property
    def in_flight(self) -> bool:
        return self.phase in IN_FLIGHT


def read(client: kube.Client, keys: Iterable[tuple[str, str]]) -> Mapping[tuple[str, str], OnHub | None]:
    """Each (namespace, name) as the hub has it (None: no such Site), one GET each."""
    resource = hubaccess.sites()
    found: dict[tuple[str, str], OnHub | None] = {}
    for namespace, name in keys:
        obj = client.find(kube.Ref(resource, name, namespace))
        if obj is None:
            found[(namespace, name)] = None
            continue
        view = site.view(obj)
        media = view.condition(site.Condition.MEDIA_READY.value) or {}
        found[(namespace, name)] = OnHub(str(view.status.get(site.STATUS_PHASE) or ""), media.get("status") == "True")
    return found
