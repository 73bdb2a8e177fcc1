"""The validation seam: what the resource semantics ask of schema validation before a write is stored.

`kube.validation.Validator` is the one implementation (CRD schemas with CEL, the built-in kinds' rules); the seam
keeps `api` from depending on how validation is done.
"""

from __future__ import annotations

from typing import Any, Protocol

from snoreloc_sim.kube import model

Obj = dict[str, Any]


class Admitter(Protocol):
    """Schema validation (the `validation` module): prune, default and check an object before it is stored."""

    def admit(
        self, rtype: model.ResourceType, new: Obj, old: Obj | None, *, subresource: str = ""
    ) -> tuple[Obj, list[str]]: ...

    def unknown_fields(self, rtype: model.ResourceType, obj: Obj) -> list[str]: ...

    def schema(self, rtype: model.ResourceType) -> Obj | None:
        """The type's OpenAPI schema (server-side apply merges lists by it), or None when unknown."""
