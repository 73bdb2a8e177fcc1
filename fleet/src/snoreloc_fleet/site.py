"""The `Site` resource (`sites.fleet.snoreloc.io`): its names, its status shape and its CustomResourceDefinition.

Every other fleet module (the controller, `fleet status`, `fleet why`, metrics, make-media, import-report) reads the
Site through the names defined here, so the phase names, condition types, reasons and status keys exist once. The
node's report (`status.agent`) is shaped by the agent (`snoreloc.engine.hubreport`), which cannot import this
package; this module bounds it in the schema with the agent's own limits.

A Site's spec is the site-config's spec (`spec.siteConfig`, checked by the controller with the agent's own rules,
not by the schema: one definition of each rule) plus `spec.files`, which resolves the site-config's `{file: NAME}`
references from Secrets or ConfigMaps of the Site's namespace: secret material is never inline in a Site.

`python -m snoreloc_fleet.site` prints the CRD (`deploy/crd.yaml` is that output; a test keeps them equal).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from typing import Any

import yaml

from snoreloc.engine import hubreport

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

MAX_FINDINGS = 20  # validation errors kept in status; `more` counts the rest
MAX_FINDING_WARNINGS = 10  # validation warnings kept
MAX_FINDING_PATH = 256
MAX_FINDING_MESSAGE = 512
MAX_CONDITION_MESSAGE = 1024


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


class Reason(enum.StrEnum):
    """`status.conditions[].reason` and `status.reason` (CamelCase, as metav1.Condition requires)."""

    VALID = "Valid"
    INVALID_SITE_CONFIG = "InvalidSiteConfig"
    INLINE_SECRET = "InlineSecret"  # noqa: S105 (a reason, not a secret)
    MISSING_INPUT = "MissingInput"
    SUSPENDED = "Suspended"
    CREDENTIAL_ISSUED = "CredentialIssued"
    NOT_REQUESTED = "NotRequested"  # no stick asked for yet (no media-requested annotation)
    REVOKED = "Revoked"  # the credential was revoked after it answered the last request
    REPORTING_DISABLED = "ReportingDisabled"
    NOT_VALID = "NotValid"
    NO_REPORT = "NoReport"
    REPORTED = "Reported"
    IMPORTED = "Imported"
    SILENT = "Silent"
    DIGEST_MISMATCH = "DigestMismatch"
    RUNNING = "Running"
    DONE = "Done"
    RUN_FAILED = "RunFailed"
    NOT_FAILED = "NotFailed"


# status keys (each used by the controller and the readers)
STATUS_OBSERVED = "observedGeneration"
STATUS_PHASE = "phase"
STATUS_REASON = "reason"
STATUS_CONDITIONS = "conditions"
STATUS_VALIDATION = "validation"  # {errors: [{path, line, message}], warnings: [...], more}
STATUS_MEDIA = "media"  # {digest, files}
STATUS_CREDENTIAL = "credential"  # {serviceAccount, secret, issuedAt, expiresAt}
STATUS_AGENT = hubreport.REPORT_FIELD  # the node's report: written by the node or by import-report only


def reports(obj: Mapping[str, Any]) -> bool:
    """Whether the Site's node reports to the hub (`spec.report.enabled`, default true): it then needs a credential."""
    return ((obj.get("spec") or {}).get("report") or {}).get("enabled", True) is not False


# the node's report states (journal RunState values) as the controller reads them
RUN_DONE = ("done", "done-with-warnings")
RUN_FAILED = ("failed", "rolled-back", "partial")


# --- the CRD -------------------------------------------------------------------------------------------------------


def _string(max_length: int = hubreport.MAX_TEXT, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, **extra}


def _key_ref() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["name", "key"],
        "properties": {"name": _string(253), "key": _string(253)},
    }


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
        },
    }


def _finding() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "path": _string(MAX_FINDING_PATH),
            "line": {"type": "integer"},
            "message": _string(MAX_FINDING_MESSAGE),
        },
    }


def _condition() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": _string(316),
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": _string(1024, pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
            "message": _string(MAX_CONDITION_MESSAGE),
        },
    }


def agent_schema() -> dict[str, Any]:
    """The node's report, bounded with the agent's own limits (`snoreloc.engine.hubreport`)."""
    name = _string(hubreport.MAX_NAME)
    nullable_object = {"type": "object", "nullable": True}
    return {
        "type": "object",
        "properties": {
            "reportedAt": {"type": "string", "format": "date-time"},
            "agentVersion": _string(64),
            "source": {"type": "string", "enum": [hubreport.Source.NODE, hubreport.Source.IMPORTED]},
            "siteConfigDigest": _string(80),
            "runState": _string(32),
            "exitCode": {"type": "integer"},
            "step": name,
            "stepsDone": {"type": "integer", "minimum": 0},
            "stepsTotal": {"type": "integer", "minimum": 0},
            "todo": _string(),
            "steps": {
                "type": "array",
                "maxItems": hubreport.MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {"name": name, "state": _string(32), "seconds": {"type": "number", "nullable": True}},
                },
            },
            "warnings": {"type": "array", "maxItems": hubreport.MAX_WARNINGS, "items": _string()},
            "waiting": {
                **nullable_object,
                "properties": {
                    "step": name,
                    "what": _string(),
                    "elapsedSeconds": {"type": "number"},
                    "budgetSeconds": {"type": "number"},
                },
            },
            "failure": {
                **nullable_object,
                "properties": {"step": name, "message": _string(), "hint": _string()},
            },
        },
    }


def _status() -> dict[str, Any]:
    errors = {"type": "array", "maxItems": MAX_FINDINGS, "items": _finding()}
    warnings = {"type": "array", "maxItems": MAX_FINDING_WARNINGS, "items": _finding()}
    return {
        "type": "object",
        "properties": {
            STATUS_OBSERVED: {"type": "integer", "format": "int64"},
            STATUS_PHASE: {"type": "string", "enum": [p.value for p in Phase]},
            STATUS_REASON: _string(64),
            STATUS_CONDITIONS: {
                "type": "array",
                "maxItems": 8,
                "items": _condition(),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            STATUS_VALIDATION: {
                "type": "object",
                "properties": {"errors": errors, "warnings": warnings, "more": {"type": "integer", "minimum": 0}},
            },
            STATUS_MEDIA: {
                "type": "object",
                "properties": {
                    "digest": _string(80),
                    "files": {"type": "array", "maxItems": 128, "items": _string(253)},
                },
            },
            STATUS_CREDENTIAL: {
                "type": "object",
                "properties": {
                    "serviceAccount": _string(253),
                    "secret": _string(253),
                    "issuedAt": {"type": "string", "format": "date-time"},
                    "expiresAt": {"type": "string", "format": "date-time"},
                },
            },
            STATUS_AGENT: agent_schema(),
        },
    }


PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Step", "type": "string", "jsonPath": f".status.{STATUS_AGENT}.step"},
    {"name": "Reported", "type": "date", "jsonPath": f".status.{STATUS_AGENT}.reportedAt"},
    {"name": "Reason", "type": "string", "jsonPath": ".status.reason"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition (apiextensions.k8s.io/v1) of the Site."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": SINGULAR, "kind": KIND, "listKind": f"{KIND}List"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(column) for column in PRINTER_COLUMNS],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": _spec(),
                                "status": _status(),
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_yaml() -> str:
    header = "# The Site CRD. Generated by `python -m snoreloc_fleet.site`; do not edit by hand.\n"
    return header + yaml.safe_dump(crd(), sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(crd_yaml())
