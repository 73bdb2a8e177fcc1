"""What marks an object as ours: our label. An object of our name without it is the user's, never taken over."""

from __future__ import annotations

from snoreloc import errors
from snoreloc.adapters import kube

MANAGED_BY = {"app.kubernetes.io/managed-by": "snoreloc"}


def ours(obj: kube.Obj | None) -> bool:
    """Whether we created the object: it carries our label."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def label_text() -> str:
    return ", ".join(f"{key}={value}" for key, value in MANAGED_BY.items())


def refuse_users(ref: kube.Ref, current: kube.Obj | None, *, step: str = "certificates") -> None:
    """Refuse, before any write, an object of our name that we did not create: it is the user's, not ours to take."""
    if current is not None and not ours(current):
        raise errors.PermanentStepError(
            f"{step}: {ref} exists but was not created by snoreloc (no {label_text()} label); not taking it over",
            hint=f"Rename or delete {ref} if it is no longer needed, or add the label if it is snoreloc's, then run "
            "again.",
        )
