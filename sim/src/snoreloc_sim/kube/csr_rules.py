"""CertificateSigningRequest rules of the real kube-apiserver, so a careless approver fails here as it would there.

Two rules matter to an agent that approves CSRs:
- On create, the requester's identity is not taken from the body: `spec.username`, `uid`, `groups` and `extra` are
  replaced by the authenticated user's (kubernetes pkg/registry/certificates/certificates/strategy.go,
  `PrepareForCreate`); the simulator's one identity has a uid, so `spec.uid` is set. A client cannot forge "this
  came from the node".
- On update, the conditions are validated (kubernetes pkg/apis/certificates/validation/validation.go,
  `validateConditions` and `validateCertificateSigningRequestUpdate`): a type is required; Approved, Denied and
  Failed may only be "True"; no type twice; Approved and Denied are mutually exclusive; an existing Approved,
  Denied or Failed condition may not be removed; and only the `approval` subresource may add or change Approved
  or Denied. The real validation does not refuse unknown condition types, so neither do we. The compatibility
  exemptions for objects that already break a rule are left out: the simulator never stores such an object.
  Each cause carries the reason of its field.ErrorType (Required, NotSupported, Duplicate, Forbidden, Invalid).
"""

from __future__ import annotations

from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]

CSRS = "certificatesigningrequests.certificates.k8s.io"
TRUE_ONLY = ("Approved", "Denied", "Failed")
DECISIONS = ("Approved", "Denied")
STATUS_VALUES = ("True", "False", "Unknown")

# Who the simulator's single bearer token authenticates as: the installer kubeconfig's identity.
ADMIN_USER = "system:admin"
ADMIN_GROUPS = ("system:masters", "system:authenticated")
ADMIN_UID = "6d5b7f0e-4a8c-4f55-9a53-0b6d1f7c2e91"  # the identity's uid, which PrepareForCreate copies to spec.uid


def prepare_for_create(obj: Obj) -> None:
    """Stamp the requester's identity over whatever the body claimed, as the registry strategy does."""
    spec = obj.setdefault("spec", {})
    spec["username"] = ADMIN_USER
    spec["uid"] = ADMIN_UID
    spec["groups"] = list(ADMIN_GROUPS)
    spec.pop("extra", None)


def _conditions(obj: Obj | None) -> list[Obj]:
    return list(((obj or {}).get("status") or {}).get("conditions") or [])


def _of_type(obj: Obj | None, kind: str) -> list[Obj]:
    return [c for c in _conditions(obj) if c.get("type") == kind]


def condition_problems(obj: Obj) -> list[tuple[str, str]]:
    """(field, message) for each condition rule `obj` breaks."""
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    decided: set[str] = set()
    for i, cond in enumerate(_conditions(obj)):
        path, kind, status = f"status.conditions[{i}]", str(cond.get("type") or ""), cond.get("status")
        if not kind:
            problems.append((f"{path}.type", "Required value"))
        allowed = ("True",) if kind in TRUE_ONLY else STATUS_VALUES
        if not status:
            problems.append((f"{path}.status", "Required value"))
        elif status not in allowed:
            problems.append((f"{path}.status", f'Unsupported value: "{status}": supported values: {list(allowed)}'))
        if kind in DECISIONS:
            decided.add(kind)
            if len(decided) == 2:
                problems.append((f"{path}.type", f'Invalid value: "{kind}": Approved and Denied conditions are '
                                                 "mutually exclusive"))  # fmt: skip
        if kind in seen:
            problems.append((f"{path}.type", f'Duplicate value: "{kind}"'))
        seen.add(kind)
    return problems


def update_problems(new: Obj, old: Obj, *, approval: bool) -> list[tuple[str, str]]:
    """(field, message) for each rule an update of `old` to `new` breaks (through `approval` or not)."""
    problems = condition_problems(new)
    for kind in TRUE_ONLY:
        if len(_of_type(new, kind)) < len(_of_type(old, kind)):
            problems.append(("status.conditions", f'Forbidden: updates may not remove a condition of type "{kind}"'))
    if not approval:
        for kind in DECISIONS:
            before, after = _of_type(old, kind), _of_type(new, kind)
            if len(after) > len(before):
                problems.append(("status.conditions", f'Forbidden: updates may not add a condition of type "{kind}"'))
            elif len(after) == len(before) and after != before:
                message = f'Forbidden: updates may not modify a condition of type "{kind}"'
                problems.append(("status.conditions", message))
    return problems


# field.ErrorType's words (k8s.io/apimachinery pkg/util/validation/field/errors.go) and the cause reason each has.
_REASONS = {
    "Required value": "FieldValueRequired",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Forbidden": "FieldValueForbidden",
    "Invalid value": "FieldValueInvalid",
}


def _reason(message: str) -> str:
    return next((reason for words, reason in _REASONS.items() if message.startswith(words)), "FieldValueInvalid")


def check_update(rtype: model.ResourceType, new: Obj, old: Obj, sent_rv: str | None, *, approval: bool) -> None:
    """Raise what the real API answers: 409 for a write from a stale read (the storage layer's precondition comes
    before validation), else 422 when the update breaks a rule."""
    name = (old.get("metadata") or {}).get("name", "")
    if sent_rv and sent_rv != (old.get("metadata") or {}).get("resourceVersion"):
        raise model.ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {rtype.key} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            details={"name": name, "group": rtype.group, "kind": rtype.plural},
        )
    problems = update_problems(new, old, approval=approval)
    if not problems:
        return
    text = ", ".join(f"{field}: {message}" for field, message in problems)
    raise model.ApiError(
        422,
        "Invalid",
        f'{rtype.kind}.{rtype.group} "{name}" is invalid: {text}',
        causes=[{"reason": _reason(m), "message": m, "field": f} for f, m in problems],
        details={"name": name, "group": rtype.group, "kind": rtype.kind},
    )
