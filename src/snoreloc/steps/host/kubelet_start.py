"""Step `kubelet`: start kubelet, which `snoreloc seal` disabled at the factory, once the site network is up."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.host import kubelet
from snoreloc.host.services import HostServices
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)


class StartKubelet:
    """Start kubelet (disabled at the factory by `snoreloc seal`)."""

    name = "kubelet"
    description = "starting kubelet"

    def __init__(self, host: HostServices) -> None:
        self.host = host

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}

    def plan(self, ctx: context.Context) -> base.Plan:
        running = self.host.units.is_active(kubelet.KUBELET)
        return base.Plan(self.name, notes=("kubelet already runs" if running else "start kubelet",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        started = kubelet.start_kubelet(self.host.units, progress=LOG.info)
        return base.StepOutcome(changed=("started kubelet",) if started else (), details={"started": started})

    def verify(self, ctx: context.Context) -> None:
        if not self.host.units.is_active(kubelet.KUBELET):
            raise errors.TemporaryError("kubelet: the unit is not active", hint="Check `journalctl -u kubelet -b`.")
