"""The `Site` resource (`sites.fleet.snoreloc.io`): its names, its status shape and its CustomResourceDefinition.

Every other fleet module (the controller, `fleet status`, `fleet why`, metrics, make-media, import-report) reads the
Site through the names defined here, so the phase names, condition types, reasons and status keys exist once. The
node's report (`status.agent`) is shaped by the agent (`snoreloc.engine.hubreport`), which cannot import this
package; this module bounds it in the schema with the agent's own limits, and bounds every number of the status
(no negative or 1e300 seconds) and every string (no control character: `NO_CONTROLS`), so the hub refuses a report
that is not plausible (issue 30: reports are data, not trust).

A Site's spec is the site-config's spec (`spec.siteConfig`, checked by the controller with the agent's own rules,
not by the schema: one definition of each rule) plus `spec.files`, which resolves the site-config's `{file: NAME}`
references from Secrets or ConfigMaps of the Site's namespace: secret material is never inline in a Site. The names
a Site gives them are Kubernetes names (`snoreloc_fleet.resource.siteinput`, whose patterns the schema carries).

`python -m snoreloc_fleet.resource.site` prints the CRD (`deploy/crd.yaml` is that output; a test keeps them equal).
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from snoreloc.siblings import hubreport
from snoreloc_fleet.resource import delivery, siteinput

GROUP = hubreport.GROUP
VERSION = hubreport.VERSION
API_VERSION = f"{GROUP}/{VERSION}"
KIND = hubreport.KIND
PLURAL = hubreport.PLURAL
SINGULAR = "site"
CRD_NAME = f"{PLURAL}.{GROUP}"
PHASE_LABEL = f"{GROUP}/phase"  # kept equal to status.phase, so `-l fleet.snoreloc.io/phase=Failed` selects
SITE_LABEL = f"{GROUP}/site"  # on every object the controller makes for a Site
# `fleet make-media` asks for the site's reporting credential by setting this annotation (an RFC 3339 time) on the
# Site; the controller issues credentials only to valid Sites that carry it
MEDIA_REQUESTED = f"{GROUP}/media-requested"
# Argo CD's per-resource sync options (argo-cd docs/user-guide/sync-options.md: "No Prune Resources", "No Resource
# Deletion"): the controller sets them on a Site once it is Relocated, so neither removing its line from Git (prune)
# nor deleting the Application (delete) deletes the Site of a store that now runs at its site.
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
KEEP_OPTIONS = ("Prune=false", "Delete=false")


def kept_options(current: object) -> str | None:
    """The sync-options annotation's value with `KEEP_OPTIONS` in it, the Site's other options kept (None: it has them
    already). Argo CD reads the value as comma-separated `Name=value` options."""
    given = [o.strip() for o in str(current or "").split(",") if o.strip()]
    if all(o in given for o in KEEP_OPTIONS):
        return None
    names = {o.split("=", 1)[0] for o in KEEP_OPTIONS}
    return ",".join([*(o for o in given if o.split("=", 1)[0] not in names), *KEEP_OPTIONS])


# `fleet render` records on each Site where its inventory-filled fields came from (JSON: field path -> `sites.csv
# line 13, column domain`), so `fleet report` can name the cell to fix beside a validation error
INVENTORY_CELLS = f"{GROUP}/inventory-cells"
MAX_INVENTORY_CELLS = 64 * 1024  # characters of that annotation (kube allows 256 KiB for all of them)
# `fleet render` puts the digest of the template a Site came from here (a wave's brake groups failures by it)
TEMPLATE_DIGEST = f"{GROUP}/template-digest"

MAX_FINDINGS = 20  # validation errors kept in status; `more` counts the rest
MAX_FINDING_WARNINGS = 10  # validation warnings kept
MAX_FINDING_PATH = 256
MAX_FINDING_MESSAGE = 512
MAX_CONDITION_MESSAGE = 1024
# Bounds of the numbers in status (the schema's; `ops.metrics` drops a duration or age outside them): no run, step or
# wait lasts a year, no run has a thousand steps, exit codes are bytes, no finding's line is past the node's limit.
MAX_SECONDS = 366 * 86400
MAX_STEP_COUNT = 1000
MAX_EXIT_CODE = 255
MAX_LINE = 10_000_000
MAX_MORE = 1_000_000
CLOCK_SKEW = 300.0  # a report dated further ahead of the hub's clock is implausible (status: ClockAhead)
# No control character (C0 but tab and line feed, DEL, C1) in any status string: `kubectl get sites` prints them
# raw. Every writer shows them as escapes first (`snoreloc.sanitize.visible`: the node's report, the controller).
NO_CONTROLS = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"


class Phase(enum.StrEnum):
    """`status.phase`: one word for `kubectl get sites`."""

    PENDING = "Pending"  # not reconciled yet, or suspended
    INVALID = "Invalid"  # the site-config fails the agent's rules, or an input (Secret, ConfigMap) is missing
    READY = "Ready"  # valid: make the stick (which asks for its credential); no report yet
    IN_PROGRESS = "InProgress"  # the node reports a run in progress
    RELOCATED = "Relocated"  # the node reports done, with the site-config digest the hub issued
    FAILED = "Failed"  # the node reports a failed (or rolled back) run
    STALE = "Stale"  # the node reported a run in progress, then nothing for too long


class Condition(enum.StrEnum):
    """`status.conditions[].type` (metav1.Condition, with observedGeneration)."""

    VALIDATED = "Validated"
    MEDIA_READY = "MediaReady"
    REPORTING = "Reporting"
    RELOCATED = "Relocated"
    FAILED = "Failed"
    MEDIA_INSERTED = "MediaInserted"  # a BMC-delivered Site's image is in its server's virtual CD (issue 36)
    NODE_READ_MEDIUM = "NodeReadMedium"  # its node reported the image's digest
    MEDIA_EJECTED = "MediaEjected"  # the hub took it back


class Reason(enum.StrEnum):
    """`status.conditions[].reason` and `status.reason` (CamelCase, as metav1.Condition requires)."""

    VALID = "Valid"
    INVALID_SITE_CONFIG = "InvalidSiteConfig"
    INLINE_SECRET = "InlineSecret"  # noqa: S105 (a reason, not a secret)
    INVALID_SPEC = "InvalidSpec"  # a name, file name, size or depth refused before anything is read (siteinput)
    MISSING_INPUT = "MissingInput"
    SUSPENDED = "Suspended"
    CREDENTIAL_ISSUED = "CredentialIssued"
    NOT_REQUESTED = "NotRequested"  # no stick asked for yet (no media-requested annotation)
    REVOKED = "Revoked"  # the credential was revoked after it answered the last request
    HELD = "Held"  # the Site's wave holds it (status.gate): no credential is issued, no stick made
    REPORTING_DISABLED = "ReportingDisabled"
    NOT_VALID = "NotValid"
    NO_REPORT = "NoReport"
    REPORTED = "Reported"
    IMPORTED = "Imported"
    SILENT = "Silent"
    CLOCK_AHEAD = "ClockAhead"  # the node's report is dated ahead of the hub's clock: its time is not trusted
    DIGEST_MISMATCH = "DigestMismatch"
    RUNNING = "Running"
    DONE = "Done"
    RUN_FAILED = "RunFailed"
    NOT_FAILED = "NotFailed"
    INSERTED = "Inserted"  # the BMC cycle's (`controller.bmccycle`); its failures are `hub.redfish.Problem`s
    EJECTED = "Ejected"
    NOT_INSERTED = "NotInserted"
    WAITING_FOR_NODE = "WaitingForNode"
    READ_TIMEOUT = "ReadTimeout"
    NO_IMAGE_SERVER = "NoImageServer"
    EJECT_ABANDONED = "EjectAbandoned"  # a deleted Site's eject given up (its Warning Event)


# status keys (each used by the controller and the readers)
STATUS_OBSERVED = "observedGeneration"
STATUS_PHASE = "phase"
STATUS_REASON = "reason"
STATUS_CONDITIONS = "conditions"
STATUS_VALIDATION = "validation"  # {errors: [{path, line, message}], warnings: [...], more}
STATUS_MEDIA = "media"  # {digest, files}
STATUS_CREDENTIAL = "credential"  # {serviceAccount, secret, issuedAt, expiresAt}
STATUS_ADMIN_ACCESS = "adminAccess"  # {state, secret, caFingerprint, rotation, kubeadmin}: public facts, never a key
# {state, digest, downloads, insertedAt, deadline, readAt, ejectedAt, problem, message, attempts, retryAt, redeliver}:
# where a BMC-delivered Site's image is; written by the controller's BMC cycle only (`controller.bmccycle`)
STATUS_DELIVERY = "delivery"
STATUS_AGENT = hubreport.REPORT_FIELD  # the node's report: written by the node or by import-report only
# {state, wave, batch, cause, since}: the wave's word to the node (the wave contract, docs/fleet.md "Running a wave");
# written by the controller's wave reconcile only, read by the node with its site token (`snoreloc.engine.fleetgate`).
# The fields and bounds are the agent's (`snoreloc.engine.hubreport`): one definition for the node and the hub.
STATUS_GATE = hubreport.GATE_FIELD
GATE_OPEN = hubreport.GATE_OPEN
GATE_HELD = hubreport.GATE_HELD
MAX_GATE_CAUSE = hubreport.MAX_GATE_CAUSE
# {mustBootBy, setBy, sealedAt, source}: the node's horizon (issue 37), written by the controller from the node's
# report (`status.agent.shelf`) or, before it reports, from the depot's seal record (`spec.shelf`), so `kubectl get
# sites` prints it (`horizon` decides which; the readers call it on the Site itself).
STATUS_SHELF = hubreport.SHELF_FIELD
SPEC_SHELF = hubreport.SHELF_FIELD  # spec.shelf: the depot's seal record (`fleet render` fills it from a column)
SHELF_REPORTED = "reported"
SHELF_INVENTORY = "inventory"
MAX_BATCHES = (
    100  # batches a wave may have (the canary counted); the node accepts any `batch` up to hubreport.MAX_BATCH
)


DEFAULT_EXPIRATION = 7776000  # seconds a site's reporting token lives unless `spec.report.expirationSeconds` says


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class View:
    """A Site as the fleet reads it, parsed once: each field read in one place, whatever shape the hub served (a part
    that is missing or not a mapping reads as empty). The object itself is kept in `obj` for writing back."""

    obj: Mapping[str, Any]
    namespace: str
    name: str
    uid: str
    generation: int
    labels: Mapping[str, Any]
    annotations: Mapping[str, Any]
    site_config: Mapping[str, Any]
    files: Mapping[str, Any]
    reports: bool  # `spec.report.enabled`, default true: the node reports to the hub and needs a credential
    expiration: int  # `spec.report.expirationSeconds`: its reporting token's life
    status: Mapping[str, Any]

    @property
    def media_requested(self) -> str:
        """The time `fleet make-media` last asked for the site's credential ("" when never)."""
        return str(self.annotations.get(MEDIA_REQUESTED) or "")

    @property
    def gate(self) -> Mapping[str, Any]:
        """The wave's word on this Site (`status.gate`; empty: in no wave, its node goes)."""
        return _mapping(self.status.get(STATUS_GATE))

    @property
    def held(self) -> bool:
        """Whether the Site's wave holds it (no credential, no stick)."""
        return self.gate.get("state") == GATE_HELD

    @property
    def media_digest(self) -> str:
        """The digest of the medium the controller validated (`status.media.digest`)."""
        return str(_mapping(self.status.get(STATUS_MEDIA)).get("digest") or "")

    def condition(self, kind: str) -> Mapping[str, Any] | None:
        """The status condition of type `kind`, if the status holds one."""
        listed = self.status.get(STATUS_CONDITIONS)
        found = (
            [c for c in listed if isinstance(c, Mapping) and c.get("type") == kind] if isinstance(listed, list) else []
        )
        return found[0] if found else None


def view(obj: Mapping[str, Any]) -> View:
    """The typed view of a Site object (or of any object shaped like one: a watch event's, a rendered one)."""
    meta, spec = _mapping(obj.get("metadata")), _mapping(obj.get("spec"))
    report = _mapping(spec.get("report"))
    generation, expiration = meta.get("generation"), report.get("expirationSeconds")
    return View(
        obj=obj,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        generation=generation if isinstance(generation, int) else 0,
        labels=_mapping(meta.get("labels")),
        annotations=_mapping(meta.get("annotations")),
        site_config=_mapping(spec.get("siteConfig")),
        files=_mapping(spec.get("files")),
        reports=report.get("enabled", True) is not False,
        expiration=expiration if isinstance(expiration, int) and expiration > 0 else DEFAULT_EXPIRATION,
        status=_mapping(obj.get("status")),
    )


@dataclass(frozen=True)
class Horizon:
    """A sealed node's horizon as the hub knows it: the date it must boot by, the certificate that sets it, when it
    was sealed, and whence the hub knows it (`SHELF_REPORTED` by the node, or `SHELF_INVENTORY`: `spec.shelf`)."""

    must_boot_by: dt.datetime
    set_by: str
    sealed_at: dt.datetime | None
    source: str

    def days_left(self, now: dt.datetime) -> float:
        """Days until the node must boot (negative: past it)."""
        return (self.must_boot_by - now).total_seconds() / 86400.0

    def status(self) -> dict[str, Any]:
        """`status.shelf`, as the controller writes it (an unknown field left out: a merge patch has no null)."""
        found = {
            hubreport.SHELF_MUST_BOOT_BY: _stamp(self.must_boot_by),
            hubreport.SHELF_SET_BY: self.set_by,
            hubreport.SHELF_SEALED_AT: _stamp(self.sealed_at) if self.sealed_at else "",
            "source": self.source,
        }
        return {key: value for key, value in found.items() if value}


EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)  # a horizon before this (or after `LATEST`) is implausible
LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: object) -> dt.datetime | None:
    """An RFC 3339 time as a Site or a node's report writes it (UTC when it names no offset, at most 64 characters);
    None for anything else. The one parser of the fleet's times: `rfc3339` bounds it, `fleetstate.when` judges it."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def rfc3339(value: Any) -> dt.datetime | None:
    """An RFC 3339 time between `EARLIEST` and `LATEST` (UTC when it names no offset); None for anything else."""
    moment = parse_time(value)
    return moment if moment is not None and EARLIEST <= moment <= LATEST else None


def horizon_of(given: Any, source: str) -> Horizon | None:
    """A horizon from its fields (the report's `shelf`, or `spec.shelf`); None without a plausible must-boot-by
    date. A set-by with a control character reads as unknown, a sealing after the date as unknown."""
    found = _mapping(given)
    must = rfc3339(found.get(hubreport.SHELF_MUST_BOOT_BY))
    if must is None:
        return None
    sealed = rfc3339(found.get(hubreport.SHELF_SEALED_AT))
    set_by = found.get(hubreport.SHELF_SET_BY)
    shown = set_by[: hubreport.MAX_NAME] if isinstance(set_by, str) and re.fullmatch(NO_CONTROLS, set_by) else ""
    return Horizon(must, shown, sealed if sealed is not None and sealed <= must else None, source)


def horizon(obj: Mapping[str, Any]) -> Horizon | None:
    """The Site's horizon: the node's report of it (`status.agent.shelf`, read from its own seal marker) when there
    is one, else the depot's seal record (`spec.shelf`); None when neither holds a plausible must-boot-by date (a
    node's report is data, not trust: an implausible one reads as absent)."""
    status, spec = _mapping(obj.get("status")), _mapping(obj.get("spec"))
    reported = horizon_of(_mapping(status.get(STATUS_AGENT)).get(hubreport.SHELF_FIELD), SHELF_REPORTED)
    return reported or horizon_of(spec.get(SPEC_SHELF), SHELF_INVENTORY)


def reports(obj: Mapping[str, Any]) -> bool:
    """Whether the Site's node reports to the hub (`spec.report.enabled`, default true): it then needs a credential."""
    return view(obj).reports


# the node's report states (journal RunState values) as the controller reads them
RUN_DONE = ("done", "done-with-warnings")
RUN_FAILED = ("failed", "rolled-back", "partial")


# --- the CRD -------------------------------------------------------------------------------------------------------


def _string(max_length: int = hubreport.MAX_TEXT, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, **extra}


def _text(max_length: int = hubreport.MAX_TEXT) -> dict[str, Any]:
    """A status string: bounded, and no control character (kube-apiserver checks both on a custom resource's
    status write: k8s.io/kube-openapi pkg/validation/validate, `MaxLength` and `Pattern`, RE2 syntax)."""
    return _string(max_length, pattern=NO_CONTROLS)


def _number(maximum: float, *, nullable: bool = False, integer: bool = False) -> dict[str, Any]:
    """A status number between 0 and `maximum` (kube-openapi's `Minimum`/`Maximum`: no negative or 1e300)."""
    found: dict[str, Any] = {"type": "integer" if integer else "number", "minimum": 0, "maximum": maximum}
    return {**found, "nullable": True} if nullable else found


def _key_ref() -> dict[str, Any]:
    """A Secret's or ConfigMap's key: its name and key proven Kubernetes names at admission (`siteinput` checks the
    same in the controller, for a Site admitted before)."""
    name = _string(siteinput.MAX_OBJECT_NAME, pattern=siteinput.DNS1123_SUBDOMAIN)
    key = _string(siteinput.MAX_CONFIG_KEY, pattern=siteinput.CONFIG_KEY)
    return {"type": "object", "required": ["name", "key"], "properties": {"name": name, "key": key}}


def _spec() -> dict[str, Any]:
    file_source = {
        "type": "object",
        "description": "Where the file's bytes are: one key of a Secret (secret material) or of a ConfigMap.",
        "properties": {"secretKeyRef": _key_ref(), "configMapKeyRef": _key_ref()},
        "x-kubernetes-validations": [
            {
                "rule": "has(self.secretKeyRef) != has(self.configMapKeyRef)",
                "message": "give exactly one of secretKeyRef and configMapKeyRef",
            }
        ],
    }
    return {
        "type": "object",
        "required": ["siteConfig"],
        "properties": {
            "siteConfig": {
                "type": "object",
                "description": "The site-config's spec (snoreloc site-config schema), checked by the controller "
                "with the agent's own rules. Files it references ({file: NAME}) are resolved through spec.files.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "files": {
                "type": "object",
                "description": "The site-config's referenced files by name, from Secrets or ConfigMaps of this "
                "namespace (the pull secret, private keys and proxy credentials come from Secrets).",
                "maxProperties": 64,
                "additionalProperties": file_source,
            },
            "report": {
                "type": "object",
                "properties": {
                    "enabled": {"type": "boolean", "default": True},
                    "expirationSeconds": {
                        "type": "integer",
                        "minimum": 3600,
                        "maximum": 31536000,
                        "default": 7776000,
                        "description": "Lifetime of the site's reporting token (default 90 days).",
                    },
                },
            },
            "suspend": {"type": "boolean", "description": "true: the controller leaves this Site alone."},
            "delivery": delivery.spec_schema(),
            hubreport.SHELF_FIELD: {
                "type": "object",
                "description": "The node's seal record as the depot gives it (issue 37), before the node ever "
                "reports: the date it must boot by (RFC 3339), and optionally the certificate that sets it and when "
                "it was sealed. The node's own report of its horizon takes precedence.",
                "required": [hubreport.SHELF_MUST_BOOT_BY],
                "properties": _shelf_properties(),
            },
            "adminAccess": {
                "type": "object",
                "description": "The site's own admin keys, made by the hub (issue 32): the controller generates an "
                "admin client CA and client certificate into the Secret NAME-admin (backup-labelled) and puts only "
                "the CA's certificate on the stick; `snoreloc fleet admin-kubeconfig` hands the kubeconfig over.",
                "properties": {
                    "generate": {"type": "boolean", "default": False},
                    "kubeadmin": {
                        "type": "boolean",
                        "default": False,
                        "description": "true: a new kubeadmin password too (kept in the Secret; the stick carries "
                        "only its bcrypt hash). false: the site's kubeadmin is removed.",
                    },
                    "rotation": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 1000000,
                        "default": 0,
                        "description": "Raise it to have new keys made (the Secret records the value its keys "
                        "answer); the site takes them with its next medium.",
                    },
                },
            },
        },
    }


def _finding() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "path": _text(MAX_FINDING_PATH),
            "line": {"type": "integer", "minimum": 1, "maximum": MAX_LINE},
            "message": _text(MAX_FINDING_MESSAGE),
        },
    }


def _condition() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": _text(316),
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": _string(1024, pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
            "message": _text(MAX_CONDITION_MESSAGE),
        },
    }


def agent_schema() -> dict[str, Any]:
    """The node's report, bounded with the agent's own limits (`snoreloc.engine.hubreport`)."""
    name = _text(hubreport.MAX_NAME)
    seconds = _number(MAX_SECONDS)
    nullable_object = {"type": "object", "nullable": True}
    return {
        "type": "object",
        "properties": {
            "reportedAt": {"type": "string", "format": "date-time"},
            "agentVersion": _text(64),
            "source": {"type": "string", "enum": [hubreport.Source.NODE, hubreport.Source.IMPORTED]},
            "siteConfigDigest": _text(80),
            "runState": _text(32),
            "exitCode": _number(MAX_EXIT_CODE, integer=True),
            "step": name,
            "stepsDone": _number(MAX_STEP_COUNT, integer=True),
            "stepsTotal": _number(MAX_STEP_COUNT, integer=True),
            "todo": _text(),
            "steps": {
                "type": "array",
                "maxItems": hubreport.MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {"name": name, "state": _text(32), "seconds": _number(MAX_SECONDS, nullable=True)},
                },
            },
            "warnings": {"type": "array", "maxItems": hubreport.MAX_WARNINGS, "items": _text()},
            "waiting": {
                **nullable_object,
                "properties": {
                    "step": name,
                    "what": _text(),
                    "elapsedSeconds": seconds,
                    "budgetSeconds": seconds,
                },
            },
            "failure": {
                **nullable_object,
                "properties": {"step": name, "message": _text(), "hint": _text()},
            },
            "apiCA": _string(hubreport.MAX_API_CA, pattern=hubreport.PEM_TEXT, nullable=True),
            "rollouts": _intervals(name, seconds),
            "waits": _intervals(name, seconds, what=True),
            hubreport.SHELF_FIELD: {**nullable_object, "properties": _shelf_properties()},
        },
    }


def _shelf_properties(*, source: bool = False) -> dict[str, Any]:
    """The horizon's fields (`hubreport.SHELF_*`): the node's report, `spec.shelf` and `status.shelf`."""
    time = {"type": "string", "format": "date-time", "maxLength": 64}
    found: dict[str, Any] = {
        hubreport.SHELF_MUST_BOOT_BY: time,
        hubreport.SHELF_SET_BY: {**_text(hubreport.MAX_NAME), "nullable": True},
        hubreport.SHELF_SEALED_AT: {**time, "nullable": True},
    }
    return {**found, "source": {"type": "string", "enum": [SHELF_REPORTED, SHELF_INVENTORY]}} if source else found


def _intervals(name: dict[str, Any], seconds: dict[str, Any], *, what: bool = False) -> dict[str, Any]:
    """The run's rollouts or waits: seconds after the run started (`hubreport._intervals`)."""
    properties = {"name": name, "startSeconds": seconds, "endSeconds": _number(MAX_SECONDS, nullable=True)}
    return {
        "type": "array",
        "maxItems": hubreport.MAX_INTERVALS,
        "items": {"type": "object", "properties": {**properties, **({"what": _text()} if what else {})}},
    }


def gate_schema() -> dict[str, Any]:
    """The wave's gate (`status.gate`), bounded with the agent's own limits (`snoreloc.engine.hubreport`): the node
    reads it before its first cluster write (`snoreloc.engine.fleetgate`)."""
    return {
        "type": "object",
        "required": ["state", "wave", "batch", "cause", "since"],  # the controller writes all five (the contract)
        "properties": {
            "state": {"type": "string", "enum": list(hubreport.GATE_STATES)},
            "wave": _text(hubreport.MAX_WAVE_NAME),
            "batch": _number(hubreport.MAX_BATCH, integer=True),
            "cause": _text(hubreport.MAX_GATE_CAUSE),
            "since": {"type": "string", "format": "date-time"},
        },
    }


def delivery_status_schema() -> dict[str, Any]:
    """Where a BMC-delivered Site's image is (`status.delivery`, the BMC cycle's record), bounded."""
    stamp = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "properties": {
            "state": {"type": "string", "enum": [state.value for state in delivery.State]},
            "digest": _text(80),
            "downloads": _number(MAX_MORE, integer=True),
            "insertedAt": stamp,
            "deadline": stamp,
            "readAt": stamp,
            "ejectedAt": stamp,
            "problem": _text(32),
            "message": _text(MAX_FINDING_MESSAGE),
            "attempts": _number(MAX_MORE, integer=True),
            "retryAt": stamp,
            "redeliver": _text(64),
            "bmc": _held_bmc(),
        },
    }


def _held_bmc() -> dict[str, Any]:
    """`status.delivery.bmc`: the `spec.delivery.bmc` an image was inserted through (ejected from there), bounded."""
    ref = {"type": "object", "properties": {"name": _text(253), "key": _text(253)}}
    return {
        "type": "object",
        "properties": {
            "address": _text(delivery.MAX_ADDRESS),
            "credentialsName": _text(253),
            "disableCertificateVerification": {"type": "boolean"},
            "caConfigMapKeyRef": ref,
            "power": {"type": "string", "enum": [p.value for p in delivery.Power]},
        },
    }


def _status() -> dict[str, Any]:
    errors = {"type": "array", "maxItems": MAX_FINDINGS, "items": _finding()}
    warnings = {"type": "array", "maxItems": MAX_FINDING_WARNINGS, "items": _finding()}
    return {
        "type": "object",
        "properties": {
            STATUS_OBSERVED: {"type": "integer", "format": "int64", "minimum": 0},
            STATUS_PHASE: {"type": "string", "enum": [p.value for p in Phase]},
            STATUS_REASON: _text(64),
            STATUS_CONDITIONS: {
                "type": "array",
                "maxItems": 10,
                "items": _condition(),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            STATUS_VALIDATION: {
                "type": "object",
                "properties": {"errors": errors, "warnings": warnings, "more": _number(MAX_MORE, integer=True)},
            },
            STATUS_MEDIA: {
                "type": "object",
                "properties": {
                    "digest": _text(80),
                    "files": {"type": "array", "maxItems": 128, "items": _text(253)},
                },
            },
            STATUS_CREDENTIAL: {
                "type": "object",
                "properties": {
                    "serviceAccount": _text(253),
                    "secret": _text(253),
                    "issuedAt": {"type": "string", "format": "date-time"},
                    "expiresAt": {"type": "string", "format": "date-time"},
                },
            },
            STATUS_ADMIN_ACCESS: {
                "type": "object",
                "properties": {
                    "state": _text(32),
                    "secret": _text(253),
                    "caFingerprint": _text(64),
                    "rotation": _number(1000000, integer=True),
                    "kubeadmin": _text(32),
                },
            },
            STATUS_AGENT: agent_schema(),
            STATUS_GATE: gate_schema(),
            STATUS_SHELF: {"type": "object", "properties": _shelf_properties(source=True)},
            STATUS_DELIVERY: delivery_status_schema(),
        },
    }


PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Step", "type": "string", "jsonPath": f".status.{STATUS_AGENT}.step"},
    {"name": "Reported", "type": "date", "jsonPath": f".status.{STATUS_AGENT}.reportedAt"},
    {"name": "Reason", "type": "string", "jsonPath": ".status.reason"},
    {"name": "Medium", "type": "string", "jsonPath": f".status.{STATUS_DELIVERY}.state"},
    {"name": "Downloads", "type": "integer", "jsonPath": f".status.{STATUS_DELIVERY}.downloads"},
    # a string, not a date: kubectl prints a date as its age, and a future one as <invalid>
    {"name": "Must-Boot-By", "type": "string", "jsonPath": f".status.{STATUS_SHELF}.{hubreport.SHELF_MUST_BOOT_BY}"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def definition(
    kind: str,
    names: tuple[str, str],
    metadata: dict[str, Any],
    spec: dict[str, Any],
    status: dict[str, Any],
    *,
    columns: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """A CustomResourceDefinition (apiextensions.k8s.io/v1) of the fleet's API group: namespaced, one served and
    stored version with a status subresource. `names`: (plural, singular). Site and Wave are made by it."""
    plural, singular = names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind, "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(column) for column in columns],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": metadata,
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of the Site."""
    # a reporting Site's name labels what is made for it (siteinput.MAX_SITE_NAME); a CRD may bound metadata.name
    # and generateName, nothing else of metadata (kubernetes/kubernetes#77653, apiextensions validation)
    metadata = {"type": "object", "properties": {"name": _string(siteinput.MAX_SITE_NAME)}}
    return definition(KIND, (PLURAL, SINGULAR), metadata, _spec(), _status(), columns=PRINTER_COLUMNS)


def crd_yaml() -> str:
    header = "# The Site CRD. Generated by `python -m snoreloc_fleet.resource.site`; do not edit by hand.\n"
    return header + yaml.safe_dump(crd(), sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(crd_yaml())
