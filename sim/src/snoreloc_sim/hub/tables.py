"""Server-side printing: the `meta.k8s.io/v1` Table kubectl asks for with `Accept: ...;as=Table;...`.

kubectl prints what the server's Table says, so a CRD's `additionalPrinterColumns` only reach `kubectl get` this
way. Followed (kubernetes/kubernetes):
- `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor/tableconvertor.go`
  (`New`, `ConvertToTable`, `cellForJSONValue`): a `Name` column, then one per printer column; a value that is
  missing or of the wrong type is null; `string` columns print the value as JSONPath does, `date` columns show
  the age (`metatable.ConvertToHumanReadableDateType`, `apimachinery/pkg/util/duration.HumanDuration`).
- `pkg/printers/internalversion/printers.go`: the columns of the built-in kinds kubectl gets here (Namespace,
  Secret, ConfigMap, ServiceAccount, Event (`printEvent`, without its wide columns), Role/ClusterRole,
  RoleBinding/ClusterRoleBinding);
  `staging/src/k8s.io/apiserver/pkg/registry/rest/table.go` (`DefaultTableConvertor`): Name and Created At for
  the rest.
- `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go`: each row carries the object as
  PartialObjectMetadata (`includeObject=Metadata`, the default), whole (`Object`) or not at all (`None`); a watch
  asked as a Table gets each event's object as a one-row Table.
JSONPath here covers what printer columns use: `.a.b`, `[n]`, `['key.with.dots']` and `[?(@.k=="v")]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended for "
    "creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It "
    "is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_MISSING = object()
_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\['([^']*)'\]|\[\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)\]""")


def wants_table(accept: str) -> bool:
    """Whether the client asked for a Table (kubectl sends `application/json;as=Table;v=v1;g=meta.k8s.io,...`)."""
    first = accept.split(",", maxsplit=1)[0]
    return "as=Table" in first and "g=meta.k8s.io" in first


def _split(whole: int, unit: int, small: int, big: str, rest: str) -> str:
    """`<n><big>` or `<n><big><m><rest>` (m = the remainder in `small` units, left out when 0)."""
    remainder = (whole % unit) // small
    return f"{whole // unit}{big}" + (f"{remainder}{rest}" if remainder else "")


def human_duration(seconds: float) -> str:
    """`duration.HumanDuration`: exact for short ages, coarser as they grow."""
    whole, minute, hour, day, year = int(seconds), 60, 3600, 86400, 365 * 86400
    if whole < 0:
        return "<invalid>" if whole < -1 else "0s"
    ladder: list[tuple[int, Callable[[], str]]] = [
        (2 * minute, lambda: f"{whole}s"),
        (10 * minute, lambda: _split(whole, minute, 1, "m", "s")),
        (3 * hour, lambda: f"{whole // minute}m"),
        (8 * hour, lambda: _split(whole, hour, minute, "h", "m")),
        (48 * hour, lambda: f"{whole // hour}h"),
        (8 * day, lambda: _split(whole, day, hour, "d", "h")),
        (2 * year, lambda: f"{whole // day}d"),
        (8 * year, lambda: _split(whole, year, day, "y", "d")),
    ]
    for below, render in ladder:
        if whole < below:
            return render()
    return f"{whole // year}y"


def age(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return "<invalid>"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - moment).total_seconds())


def find(obj: Any, path: str) -> Any:
    """The value at a simple JSONPath (`_MISSING` when absent)."""
    node, position = obj, 0
    text = path.strip().removeprefix("{").removesuffix("}").removeprefix("$")
    while position < len(text):
        step = _STEP.match(text, position)
        if step is None:
            return _MISSING
        position = step.end()
        key, index, quoted, field, value = step.groups()
        if key is not None or quoted is not None:
            node = node.get(key if key is not None else quoted, _MISSING) if isinstance(node, dict) else _MISSING
        elif index is not None:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else _MISSING
        else:
            node = (
                next((i for i in node if isinstance(i, dict) and str(find(i, "." + field)) == value), _MISSING)
                if isinstance(node, list)
                else _MISSING
            )
        if node is _MISSING:
            return _MISSING
    return node


def _print(value: Any) -> str:
    """How JSONPath prints a found value in a string column."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_CELLS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], Any]]] = {
    "string": (lambda _v: True, _print),
    "integer": (_is_number, int),
    "number": (_is_number, float),
    "boolean": (lambda v: isinstance(v, bool), bool),
    "date": (lambda v: isinstance(v, str), age),
}


def cell(kind: str, value: Any) -> Any:
    """`cellForJSONValue` (and `PrintResults` for string columns): None when missing or of the wrong type."""
    accepts, convert = _CELLS.get(kind, (lambda _v: False, lambda v: v))
    if value is _MISSING or value is None or not accepts(value):
        return None
    return convert(value)


def _column(name: str, kind: str, description: str = "", fmt: str = "", priority: int = 0) -> Obj:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": priority}


Printer = tuple[list[Obj], Callable[[Obj], list[Any]]]
_NAME = _column("Name", "string", NAME_DESCRIPTION, "name")
_AGE = _column("Age", "string", AGE_DESCRIPTION)


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _created(obj: Obj) -> str:
    return str(_meta(obj).get("creationTimestamp") or "")


def _role_ref(obj: Obj) -> str:
    ref = obj.get("roleRef") or {}
    return f"{ref.get('kind')}/{ref.get('name')}"


def _printer(extra: list[tuple[str, str, Callable[[Obj], Any]]]) -> Printer:
    """Name, the extra (header, description, value) columns, Age."""
    headers = [_NAME, *(_column(name, "string", text) for name, text, _value in extra), _AGE]
    return headers, lambda o: [_meta(o).get("name"), *(value(o) for _n, _t, value in extra), age(_created(o))]


def _event_age(obj: Obj) -> str:
    """`printEvent`: the last timestamp, else the first, else the event time."""
    return age(obj.get("lastTimestamp") or obj.get("firstTimestamp") or obj.get("eventTime"))


def _event_object(obj: Obj) -> str:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


_EVENTS: Printer = (
    [
        _column("Last Seen", "string", "Time when last event occurred"),
        _column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future."),
        _column("Reason", "string", "Reason why the event was generated"),
        _column("Object", "string", "The object this Event is about"),
        _column("Message", "string", "A human-readable description of the status of this operation."),
    ],
    lambda o: [
        _event_age(o),
        o.get("type"),
        o.get("reason"),
        _event_object(o),
        str(o.get("message") or o.get("note") or "").strip(),
    ],
)
_SA_SECRETS = "Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount."
_CREATED_AT: Printer = (
    [_NAME, _column("Created At", "date", AGE_DESCRIPTION)],
    lambda o: [_meta(o).get("name"), _created(o)],
)
BUILTIN_PRINTERS: dict[str, Printer] = {
    "namespaces": _printer([("Status", "The status of the namespace", lambda o: (o.get("status") or {}).get("phase"))]),
    "secrets": _printer(
        [
            ("Type", "The type of secret", lambda o: o.get("type", "")),
            ("Data", "The number of entries in the secret", lambda o: len(o.get("data") or {})),
        ]
    ),
    "configmaps": _printer([("Data", "Number of data in configmap", lambda o: len(o.get("data") or {}))]),
    "serviceaccounts": _printer([("Secrets", _SA_SECRETS, lambda o: len(o.get("secrets") or []))]),
    "events": _EVENTS,
    "events.events.k8s.io": _EVENTS,
    "roles.rbac.authorization.k8s.io": _CREATED_AT,
    "clusterroles.rbac.authorization.k8s.io": _CREATED_AT,
    "rolebindings.rbac.authorization.k8s.io": _printer([("Role", "Role is the reference to the role", _role_ref)]),
    "clusterrolebindings.rbac.authorization.k8s.io": _printer(
        [("Role", "Role is the reference to the role", _role_ref)]
    ),
}
DEFAULT_PRINTER = _CREATED_AT


def crd_printer(columns: tuple[Obj, ...]) -> Printer:
    """The printer a CRD's additionalPrinterColumns make."""
    headers = [_NAME] + [
        _column(
            c["name"],
            c.get("type", "string"),
            c.get("description") or f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}",
            c.get("format", ""),
            int(c.get("priority", 0)),
        )
        for c in columns
    ]

    def cells(obj: Obj) -> list[Any]:
        return [_meta(obj).get("name")] + [
            cell(c.get("type", "string"), find(obj, c.get("jsonPath", ""))) for c in columns
        ]

    return headers, cells


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}


def table(body: Obj, printer: Printer, query: dict[str, str]) -> Obj:
    """The Table for a list or one object."""
    headers, cells = printer
    listed = body.get("kind", "").endswith("List") and isinstance(body.get("items"), list)
    items = body["items"] if listed else [body]
    include = query.get("includeObject") or "Metadata"
    rows = []
    for obj in items:
        row: Obj = {"cells": cells(obj)}
        shown = _row_object(obj, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    meta = {
        k: v
        for k, v in (body.get("metadata") or {}).items()
        if k in ("resourceVersion", "continue", "remainingItemCount")
    }
    if not listed:
        meta = {"resourceVersion": _meta(body).get("resourceVersion", "")}
    result: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    if query.get("noHeaders") != "true":
        result["columnDefinitions"] = headers
    return result


def table_events(events: Iterator[Obj], printer: Printer, query: dict[str, str]) -> Iterator[Obj]:
    """A watch's events with each object as a one-row Table, as kube-apiserver's watch encoder transforms them
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go); BOOKMARK and ERROR events pass unchanged."""
    for event in events:
        if event.get("type") in ("BOOKMARK", "ERROR"):
            yield event
        else:
            yield {**event, "object": table(event["object"], printer, query)}
