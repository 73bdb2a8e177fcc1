"""The files of a Site's medium, as the hub hands them out: its site-config, its files, and its reporting kubeconfig.

One assembly for both ways a medium reaches a server: `fleet make-media` writes this tree to a stick, and the
controller builds a BMC-delivered Site's image (`hub.mediaimage`) from it (issue 36). The Site must be valid on the
hub for its current generation with its credential issued (`issued`: MediaReady True); the tree is rebuilt from the
Site and the Secrets and ConfigMaps it names, checked again with the agent's rules, and its digest compared with the
one the controller put in `status.media` (a difference: the Site or an input changed since, and nothing is made).
"""

from __future__ import annotations

import base64
import pathlib
from collections.abc import Mapping
from typing import Any

from snoreloc.siblings import errors, kube, medium
from snoreloc_fleet.hub import credentials, sitemedium
from snoreloc_fleet.resource import site


def issued(obj: Mapping[str, Any]) -> str:
    """The digest the controller issued, once the Site is valid and its credential issued; else TemporaryError (75)
    saying why (held by its wave, not valid, not yet issued)."""
    seen = site.view(obj)
    media = seen.condition(site.Condition.MEDIA_READY)
    name = seen.name
    if media and media.get("reason") == site.Reason.HELD and seen.held:
        gate = seen.gate
        raise errors.TemporaryError(
            f"site {name} is held by the fleet (wave {gate.get('wave')}, batch {gate.get('batch')}): "
            f"{gate.get('cause')}; no medium is made for it until its batch opens",
            hint=f"See `snoreloc fleet status --wave {seen.gate.get('wave')} -n {seen.namespace}`; run this again "
            "once its batch is open.",
        )
    if not media or media.get("status") != "True" or media.get("observedGeneration") != seen.generation:
        why = media.get("message") if media else "the controller has not reconciled it yet"
        raise errors.TemporaryError(
            f"site {name}: no medium can be made yet: {why}", hint=f"See `kubectl get site {name} -o yaml` (status)."
        )
    return seen.media_digest


def hub_report(client: kube.Client, obj: Mapping[str, Any]) -> bytes | None:
    """The site's reporting kubeconfig (None when the Site does not report)."""
    if not site.reports(obj):
        return None
    ref = kube.Ref(kube.SECRETS, credentials.report_secret_name(obj["metadata"]["name"]), obj["metadata"]["namespace"])
    secret = client.get(ref)
    return base64.b64decode(secret["data"][credentials.KUBECONFIG_KEY])


def tree(client: kube.Client, obj: Mapping[str, Any]) -> dict[str, bytes]:
    """The medium's files for a Site whose credential is issued (`issued`), its reporting kubeconfig included, proven
    equal to what the controller validated: ConfigError (65) when not valid, TemporaryError (75) when it changed."""
    name = site.view(obj).name
    digest = issued(obj)
    checked = sitemedium.examine(client, obj)
    if not checked.valid:
        problems = (*checked.refused, *checked.inline, *checked.missing, *checked.problems)
        raise errors.ConfigError(f"site {name}: not valid", problems=problems)
    if checked.digest != digest:
        raise errors.TemporaryError(
            f"site {name}: the Site or its inputs changed since the controller checked it ({checked.digest} here, "
            f"{digest} in its status); nothing was made",
            hint="Wait for the controller to reconcile it (its status.media.digest changes), then run this again.",
        )
    files = dict(checked.tree)
    report = hub_report(client, obj)
    if report is not None:  # the rule every medium's kubeconfig meets: it runs nothing on the node
        medium.hub_kubeconfig(report, pathlib.Path(medium.HUB_FILE).parent, set(files), source="the hub's credential")
        files[medium.HUB_FILE] = report
    return files
