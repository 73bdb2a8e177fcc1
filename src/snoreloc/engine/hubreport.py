"""The node's reports to its fleet hub: the run's progress written into its own `Site`'s status, never in the way.

A medium made by the fleet hub carries `hub-report.kubeconfig` beside the site-config: a kubeconfig whose token may
only get and patch this one Site's status, and, in its context's extensions, the Site's namespace and name, the
site's report key and its offline policy (`offline`, for the fleet's gate). Once the site network is committed (the
`network` step is done) the reporter sends the whole report (`snapshot`) as a JSON merge patch of `status.agent` at
every step end, wait report and at the end of the run. It runs in its own thread: sends are debounced
(`Settings.debounce`), one request at a time, each bounded by socket timeouts, retried with back-off while the hub
is unreachable; the end of the run gets one attempt, which waits at most `Settings.final` seconds. A 401, 403, 404
or a refused report (400/422) stops it with one log line. Nothing it does can fail or slow the relocation: a site
that cannot reach its hub relocates as one without a hub.

The report holds no secret: only step names, states, times, the wait in progress, the failure's redacted message
and hint, warnings (redacted), the technician's line, the digest of the site-config the node runs and, once the
`shelf` step has run, the node's horizon (issue 37: must boot by, the certificate that sets it, when it was
sealed). The same report, signed with the site's key (`signed`), is what `snoreloc status --output json` carries
under `hub`, so a report carried back by hand from a site without a network path to the hub can be proven and
applied by `snoreloc fleet import-report`.

The report's shape is defined here, once; the fleet's Site resource (`snoreloc_fleet.resource.site`) bounds it in
its schema. So is the other half of the node's dialogue with its hub, the wave's gate (`status.gate`, written by the
hub's controller, read by the node before its first cluster write: `snoreloc.engine.fleetgate`): its field names, its
states and bounds, and the site's offline policy carried in the kubeconfig's extension beside the report key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import pathlib
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import snoreloc
from snoreloc import errors, redact, safefile, sanitize, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import journal, view

if TYPE_CHECKING:  # the kubernetes client loads only when a report is sent: `snoreloc status` must stay fast
    from snoreloc.adapters import kube

# `snoreloc.siteconfig.medium` (the site-config's rules behind it) loads where a report is made, not here: the
# fleet's readers (`fleet status`, `why`, `report`) import this module for the names above and nothing else.

LOG = logging.getLogger(__name__)

# Where the report goes: the Site resource of the fleet hub (its CRD ships with snoreloc-fleet).
GROUP = "fleet.snoreloc.io"
VERSION = "v1alpha1"
PLURAL = "sites"
KIND = "Site"
EXTENSION = f"{GROUP}/site"  # the kubeconfig context extension naming the Site and holding the report key
REPORT_FIELD = "agent"  # status.agent: written only by the node (or an imported report)
SIGNATURE_PREFIX = "hmac-sha256:"
COMMITTED_STEP = "network"  # reports start once the site network is committed

# Bounds of the report (the Site's schema enforces the same: `snoreloc_fleet.resource.site`).
MAX_TEXT = 1024
MAX_NAME = 128
MAX_STEPS = 40
MAX_WARNINGS = 20
MAX_INTERVALS = 24  # rollouts, and waits, each: what the fleet report's timelines draw
MAX_KUBECONFIG_BYTES = 64 * 1024
MAX_API_CA = 16 * 1024  # the public CA bundle that verifies the site's API (a few certificates)
PEM_TEXT = r"^[-A-Za-z0-9+/= \n]*$"  # what a bundle of PEM certificates is made of, and nothing else
STOPPING_STATUSES = (401, 403, 404)

# The wave's gate on the Site (`status.gate`: written by the hub, read by the node; `snoreloc.engine.fleetgate`).
GATE_FIELD = "gate"
GATE_OPEN = "Open"
GATE_HELD = "Held"
GATE_STATES = (GATE_OPEN, GATE_HELD)
MAX_GATE_CAUSE = 512  # characters of `status.gate.cause`
MAX_WAVE_NAME = 253
MAX_BATCH = 100_000
# What a node does when it cannot ask its hub (unreachable, or its token refused): the extension's `offline`.
OFFLINE_KEY = "offline"
OFFLINE_PROCEED = "proceed"  # go, with a warning (also when the extension says nothing: the behaviour before waves)
OFFLINE_HOLD = "hold"  # wait for the hub, bounded by the site's `timeouts.fleetHold`, then stop (exit 75)
OFFLINE_POLICIES = (OFFLINE_PROCEED, OFFLINE_HOLD)

# The node's horizon (issue 37: `snoreloc.pki.shelf`), public facts the hub shows: the report's `shelf`, read from
# the `shelf` step's journal record (no cluster call), and a Site's `spec.shelf` given by the depot before the node
# ever reports. Their keys, once, for the node and the hub.
SHELF_FIELD = "shelf"
SHELF_MUST_BOOT_BY = "mustBootBy"
SHELF_SET_BY = "setBy"
SHELF_SEALED_AT = "sealedAt"
SHELF_STEP = "shelf"  # the step whose journal details hold them (`snoreloc.steps.host.shelf_life`)


class Source:
    NODE = "node"
    IMPORTED = "imported"


@dataclass(frozen=True)
class Target:
    """Where this node reports: the hub's kubeconfig, the Site, the site's report key and its offline policy."""

    kubeconfig: pathlib.Path
    namespace: str
    name: str
    key: bytes = field(repr=False)
    offline: str = OFFLINE_PROCEED

    @property
    def path(self) -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}/{self.name}/status"


def _text(value: object, limit: int = MAX_TEXT) -> str:
    """Secrets masked, control characters shown as escapes (the Site's schema refuses them), cut to `limit`."""
    return sanitize.visible(redact.redact(str(value)))[:limit]


def _current_context(config: Mapping[str, Any]) -> Mapping[str, Any]:
    wanted = config.get("current-context")
    for entry in config.get("contexts") or []:
        if isinstance(entry, Mapping) and entry.get("name") == wanted and isinstance(entry.get("context"), Mapping):
            context: Mapping[str, Any] = entry["context"]
            return context
    raise ValueError("no current context")


def _extension(context: Mapping[str, Any]) -> Mapping[str, Any]:
    for entry in context.get("extensions") or []:
        if (
            isinstance(entry, Mapping)
            and entry.get("name") == EXTENSION
            and isinstance(entry.get("extension"), Mapping)
        ):
            extension: Mapping[str, Any] = entry["extension"]
            return extension
    raise ValueError(f"no {EXTENSION} extension in the current context")


def _register_tokens(config: Mapping[str, Any]) -> None:
    for entry in config.get("users") or []:
        user = entry.get("user") if isinstance(entry, Mapping) else None
        if isinstance(user, Mapping) and isinstance(user.get("token"), str):
            redact.register_secret(user["token"])


def target_from(kubeconfig: pathlib.Path) -> Target:
    """The Site and key a reporting kubeconfig names; ValueError (never quoting the file) when it names none, or
    when it would run anything or read a file outside its medium (`medium.hub_kubeconfig`: errors.ConfigError, a
    ValueError, naming the field): such a kubeconfig never reaches the kubernetes client."""
    from snoreloc.siteconfig import medium  # noqa: PLC0415 (lazy: see the imports)

    raw = safefile.read(
        kubeconfig, safefile.Kind("hub reporting kubeconfig", MAX_KUBECONFIG_BYTES)
    )  # Unfit: ValueError
    config = medium.hub_kubeconfig(raw, kubeconfig.parent)
    _register_tokens(config)
    context = _current_context(config)
    ext = _extension(context)
    try:
        key = base64.b64decode(str(ext["reportKey"]), validate=True)
    except (KeyError, binascii.Error):
        raise ValueError("the extension holds no base64 reportKey") from None
    redact.register_secret(str(ext["reportKey"]))
    namespace, name = str(context.get("namespace") or ""), str(ext.get("site") or "")
    if not (namespace and name and key):
        raise ValueError("the context names no namespace, or the extension no site")
    return Target(kubeconfig, namespace, name, key, offline_policy(ext))


def offline_policy(extension: Mapping[str, Any]) -> str:
    """The extension's `offline` (absent: proceed); ValueError naming the field for any other value."""
    value = extension.get(OFFLINE_KEY, OFFLINE_PROCEED)
    if value not in OFFLINE_POLICIES:
        shown = sanitize.visible(str(value), keep_lines=False)[:40]
        raise ValueError(f"the extension's {OFFLINE_KEY} is {shown!r}: give one of {', '.join(OFFLINE_POLICIES)}")
    return str(value)


def find_target(site_config: pathlib.Path) -> Target | None:
    """The reporting target beside a site-config (None: this site reports to no hub, or the file is unusable,
    which is logged once without its content)."""
    from snoreloc.siteconfig import medium  # noqa: PLC0415 (lazy: see the imports)

    kubeconfig = site_config.parent / medium.HUB_FILE
    if not kubeconfig.is_file():
        return None
    try:
        return target_from(kubeconfig)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc).splitlines()[0][:300]
        LOG.warning("%s is not a usable hub reporting kubeconfig (%s): not reporting to a hub", kubeconfig, reason)
        return None


# --- the report -------------------------------------------------------------------------------------------------


def _current_step(run: view.RunFacts) -> str:
    for wanted in ("running", "failed"):
        for step in run.steps:
            if step.state == wanted:
                return step.name
    done = [step.name for step in run.steps if step.state == "done"]
    return done[-1] if done else ""


def _waiting(doc: journal.Document) -> dict[str, Any] | None:
    wait = doc.waiting
    if wait is None:
        return None
    return {
        "step": _text(wait.step, MAX_NAME),
        "what": _text(wait.what),
        "elapsedSeconds": round(wait.elapsed, 1),
        "budgetSeconds": round(wait.budget, 1),
    }


def _failure(run: view.RunFacts) -> dict[str, Any] | None:
    failed = next((step for step in run.steps if step.state == "failed"), None)
    if failed is None and not run.error:
        return None
    return {
        "step": failed.name if failed else "",
        "message": _text(failed.error if failed else run.error),
        "hint": _text(failed.hint if failed else run.hint),
    }


def snapshot(
    doc: journal.Document, *, digest: str, source: str = Source.NODE, now: datetime | None = None
) -> dict[str, Any]:
    """The report (`status.agent`): bounded, redacted, the same whoever sends it."""
    run = view.facts(doc)
    warnings = list(dict.fromkeys(w for step in run.steps for w in step.warnings))
    report: dict[str, Any] = {
        "reportedAt": (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "agentVersion": snoreloc.__version__,
        "source": source,
        "siteConfigDigest": digest,
        "runState": run.state,
        "step": _current_step(run),
        "stepsDone": sum(1 for step in run.steps if step.state == "done"),
        "stepsTotal": len(run.steps),
        "todo": _text(view.todo_of(run)),
        "steps": [
            {"name": _text(step.name, MAX_NAME), "state": step.state, "seconds": step.seconds}
            for step in run.steps[:MAX_STEPS]
        ],
        "warnings": [_text(w) for w in warnings[:MAX_WARNINGS]],
        "waiting": _waiting(doc),
        "failure": _failure(run),
        "exitCode": run.exit_code,  # None (null) removes an earlier run's from the Site: a merge patch
        "apiCA": _api_ca(doc),
        "rollouts": _intervals(run, run.rollouts),
        "waits": _intervals(run, run.waits, what=True),
        SHELF_FIELD: _shelf(doc),
    }
    return report


def _shelf(doc: journal.Document) -> dict[str, Any] | None:
    """The horizon the `shelf` step recorded (must boot by, the certificate that sets it, when the node was sealed),
    as RFC 3339 times; None (removed from the Site) until the step ran, or when it recorded no horizon. A value that
    is not a time the step writes (`pki.shelf.stamp`) is left out."""
    record = doc.steps.get(SHELF_STEP)
    details = record.details if record else {}
    found = {key: details.get(key) for key in (SHELF_MUST_BOOT_BY, SHELF_SEALED_AT)}
    times = {key: value for key, value in found.items() if isinstance(value, str) and _is_stamp(value)}
    if SHELF_MUST_BOOT_BY not in times:
        return None
    set_by = details.get(SHELF_SET_BY)
    return {
        SHELF_MUST_BOOT_BY: times[SHELF_MUST_BOOT_BY],
        SHELF_SET_BY: _text(set_by, MAX_NAME) if isinstance(set_by, str) else None,
        SHELF_SEALED_AT: times.get(SHELF_SEALED_AT),
    }


def _is_stamp(text: str) -> bool:
    from snoreloc.pki import shelf  # noqa: PLC0415 (lazy: the fleet's readers import this module)

    try:
        shelf.parse_stamp(text)
    except ValueError:
        return False
    return True


def _offset(moment: datetime | None, origin: datetime, speed: float) -> float | None:
    """Seconds of the run's own clock after `origin` (the steps' seconds are the run's clock's: a simulated run's
    timestamps are wall time, so its offsets are scaled to match)."""
    return None if moment is None else round(max(0.0, (moment - origin).total_seconds()) * speed, 1)


def _intervals(run: view.RunFacts, found: Sequence[view.Interval], *, what: bool = False) -> list[dict[str, Any]]:
    """The run's rollouts (or waits) as seconds after the run started (`endSeconds` null while one goes on), in the
    same seconds as its steps, so the hub draws the timeline the node would: bounded, redacted."""
    origin = run.started
    if origin is None:
        return []
    kept = [i for i in found if i.started >= origin][:MAX_INTERVALS]
    return [
        {
            "name": _text(i.name, MAX_NAME),
            "startSeconds": _offset(i.started, origin, run.speed),
            "endSeconds": _offset(i.finished, origin, run.speed),
            **({"what": _text(i.what)} if what else {}),
        }
        for i in kept
    ]


def _api_ca(doc: journal.Document) -> str | None:
    """The public CA bundle that verifies the relocated API, as the admin-access step recorded it (the hub completes
    the owner's admin kubeconfig with it); None (removed from the Site) until then, or when it is not plain PEM."""
    from snoreloc.steps.cluster import admin_access  # noqa: PLC0415 (lazy: the fleet's readers import this module)

    record = doc.steps.get(admin_access.STEP.name)
    found = (record.details if record else {}).get(admin_access.API_CA_DETAIL)
    if not isinstance(found, str) or len(found) > MAX_API_CA or not re.fullmatch(PEM_TEXT, found):
        return None
    return found


def canonical(report: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the report as compact JSON with sorted keys."""
    return json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(key: bytes, namespace: str, name: str, report: Mapping[str, Any]) -> str:
    """HMAC-SHA256 of the Site's namespace, name and the report, with the site's report key."""
    message = f"{namespace}/{name}\n".encode() + canonical(report)
    return SIGNATURE_PREFIX + hmac.new(key, message, hashlib.sha256).hexdigest()


def verify(key: bytes, namespace: str, name: str, report: Mapping[str, Any], signature: str) -> bool:
    return hmac.compare_digest(sign(key, namespace, name, report), signature)


def signed(doc: journal.Document) -> dict[str, Any] | None:
    """The report signed with the site's key, for `snoreloc status --output json` (None: no hub on this medium)."""
    site_config = pathlib.Path(doc.site.path) if doc.site and doc.site.path else None
    if site_config is None or not site_config.is_file():
        return None
    target = find_target(site_config)
    if target is None:
        return None
    from snoreloc.siteconfig import medium  # noqa: PLC0415 (lazy: see the imports)

    report = snapshot(doc, digest=medium.digest_of(site_config))
    return {
        "namespace": target.namespace,
        "name": target.name,
        "report": report,
        "signature": sign(target.key, target.namespace, target.name, report),
    }


# --- sending ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """Real seconds: they bound sockets and a thread, which know no other clock."""

    debounce: float = 2.0
    final: float = 15.0
    backoff_initial: float = 10.0
    backoff_max: float = 300.0
    connect_timeout: float = 5.0
    read_timeout: float = 10.0


ClientFactory = Callable[[Target], "kube.Client"]


def _client(target: Target, settings: Settings, clock: clock_mod.Clock) -> kube.Client:
    from snoreloc.adapters import kube  # noqa: PLC0415 (lazy, as above)

    policy = kube.Policy(
        attempts=1, total=settings.read_timeout, connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout, pool_size=1,
    )  # fmt: skip
    return kube.Client.from_kubeconfig(str(target.kubeconfig), clock=clock, policy=policy)


class Reporter:
    """Sends the journal's report to the hub in a background thread; `kick` after any change, `finish` at the end."""

    def __init__(
        self, status: pathlib.Path, clock: clock_mod.Clock, settings: Settings = Settings(),
        client_factory: ClientFactory | None = None,
    ) -> None:  # fmt: skip
        self.status = status
        self.settings = settings
        self._factory = client_factory or (lambda target: _client(target, settings, clock))
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._finishing = threading.Event()
        self._finished = threading.Event()
        self._sent: dict[str, Any] | None = None  # the last report the hub accepted (reportedAt left out)
        self._target: Target | None = None
        self._digest = ""
        self._client: kube.Client | None = None
        self.stopped_reason = ""  # why it gave up (401/403/404/refused, no hub): tests read it
        self.sends = 0
        self._thread = threading.Thread(target=self._loop, name="snoreloc-hub-report", daemon=True)
        self._unsubscribe: Callable[[], None] = lambda: None

    def start(self) -> Reporter:
        self._unsubscribe = waits.subscribe(lambda _waiting: self.kick())
        self._thread.start()
        return self

    def kick(self, *_args: object) -> None:
        """Something changed (a step, a wait, the run's end): send a report soon. Never blocks."""
        self._wake.set()

    def finish(self) -> None:
        """The run ended: one attempt at the last report (a hub that refuses the connection costs nothing, one that
        does not answer at most `Settings.final` seconds); never raises."""
        self._unsubscribe()
        self._finishing.set()
        self._wake.set()
        self._finished.wait(self.settings.final)
        self._stop.set()
        self._wake.set()
        self._thread.join(1.0)
        if self._client is not None and not self._thread.is_alive():
            self._client.close()

    # --- the thread ---------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        backoff = 0.0
        while True:
            self._wake.wait(backoff or None)  # a change, or the end of the back-off
            if self._stop.is_set():
                return
            if not backoff and not self._finishing.is_set():
                self._finishing.wait(self.settings.debounce)  # one report for a burst of changes
            final = self._finishing.is_set()  # this attempt reads the journal after the run ended
            self._wake.clear()
            backoff = self._once(backoff)
            if backoff < 0 or final:  # the end of the run gets one attempt, not a retry
                self._finished.set()
                return

    def _once(self, delay: float) -> float:
        """One attempt; returns the back-off before the next (0: sent or nothing to send; -1: stop for good)."""
        from snoreloc.adapters import kube  # noqa: PLC0415 (lazy, as above)

        try:
            return self._send()
        except (kube.Unreachable, kube.Conflict, errors.TemporaryError, OSError) as exc:  # 5xx, 429, 409: later
            LOG.info("hub report not sent (%s); retrying", _text(exc, 300))
            return min(max(delay * 2, self.settings.backoff_initial), self.settings.backoff_max)
        except kube.Forbidden as exc:
            return self._give_up(str(exc))
        except (kube.NotFound, kube.Invalid) as exc:
            return self._give_up(str(exc))
        except Exception as exc:  # reporting must never fail the relocation
            return self._give_up(f"{type(exc).__name__}: {exc}")

    def _give_up(self, reason: str) -> float:
        self.stopped_reason = _text(reason, 300)
        LOG.warning(
            "hub report stopped: %s (the relocation goes on; its status stays on this node)", self.stopped_reason
        )
        return -1.0

    def _report(self) -> dict[str, Any] | None:
        doc = journal.read(self.status)
        committed = doc.record(COMMITTED_STEP).state is journal.StepState.DONE
        if not committed or doc.site is None or not doc.site.path:
            return None
        if self._target is None:
            site_config = pathlib.Path(doc.site.path)
            self._target = find_target(site_config)
            if self._target is None:
                raise _NoHub
            from snoreloc.siteconfig import medium  # noqa: PLC0415 (lazy: see the imports)

            self._digest = medium.digest_of(site_config)
        return snapshot(doc, digest=self._digest)

    def _send(self) -> float:
        try:
            report = self._report()
        except _NoHub:
            self.stopped_reason = "this medium names no hub"
            return -1.0
        if report is None:
            return 0.0
        comparable = {k: v for k, v in report.items() if k != "reportedAt"}
        if comparable == self._sent:
            return 0.0
        assert self._target is not None  # set by _report
        if self._client is None:
            self._client = self._factory(self._target)
        body = {"status": {REPORT_FIELD: report}}
        self._client.request(
            "PATCH", self._target.path, body=body, content_type="application/merge-patch+json", retry=False
        )
        self._sent = comparable
        self.sends += 1
        return 0.0


class _NoHub(Exception):
    """This medium names no hub: the reporter ends quietly."""


def start(status: pathlib.Path, clock: clock_mod.Clock, settings: Settings = Settings()) -> Reporter:
    """A started reporter for the run whose journal is `status` (it stays silent when the medium names no hub)."""
    return Reporter(status, clock, settings).start()
