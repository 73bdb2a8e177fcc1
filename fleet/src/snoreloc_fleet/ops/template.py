"""One site-config template, many sites: `${column}` placeholders filled from an inventory row.

The templating is Python's `string.Template` (standard library, no code in templates, `$$` for a literal `$`),
applied to each string *value* of the parsed template, never to its text: a cell can only ever become a value,
however many colons, quotes or newlines it holds, so no inventory cell can add a key or change the document's shape.
A value that is exactly one placeholder takes the cell's type (a YAML inventory's list stays a list; a CSV cell of
digits becomes a number, `true`/`false` a boolean) and an empty cell leaves that key, or list item, out.

Every value filled in remembers its cell, and every `{file: NAME}` its directory (the site's files directory when
the file is there, else the template's), so a later problem at a field names the inventory line and column to fix.
"""

from __future__ import annotations

import pathlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc import errors
from snoreloc_fleet.ops import agent, inventory

Path = tuple[str | int, ...]
_WHOLE = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")
_INLINE_SECRET_KEYS = frozenset(("pem", "inline", "json"))  # secret fields whose value *is* the secret
_DROP = object()
HEADER = "# Rendered by `snoreloc fleet render`"


@dataclass(frozen=True)
class Template:
    """A parsed template: its data, the line of each path, and the directory its shared files live in."""

    source: str
    data: Any
    lines: Mapping[Path, int]
    directory: pathlib.Path

    def where(self, path: Path) -> str:
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return f"{self.source} line {line}"
        return self.source


@dataclass(frozen=True)
class FileRef:
    """A file the rendered site-config names, and where render found it."""

    ref: str
    origin: pathlib.Path
    per_site: bool  # from the site's own files directory (else the template's)


@dataclass
class Rendered:
    """One site's site-config, or the problems that kept it from being rendered."""

    row: inventory.Row
    data: Any = None
    trace: dict[str, str] = field(default_factory=dict)  # field path (agent's notation) -> inventory cell
    files: list[FileRef] = field(default_factory=list)
    problems: list[errors.Problem] = field(default_factory=list)

    def text(self, template: Template) -> str:
        head = f"{HEADER} from {template.source} and {self.row.where()} (site {self.row.name}).\n"
        note = "# Change the inventory or the template and render again rather than editing this file.\n"
        return head + note + yaml.dump(self.data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)


def _secret_placeholders(template: Template) -> list[errors.Problem]:
    """Placeholders where the value itself is a secret: an inventory may never fill those."""
    problems = []
    for path in agent.secret_paths():
        if path[-1] not in _INLINE_SECRET_KEYS:
            continue
        value: Any = template.data
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, str) and "$" in value.replace("$$", ""):
            problems.append(
                errors.Problem(
                    template.where(path),
                    f"{agent.dotted(path)} takes a secret, which an inventory may not carry: "
                    "use {file: NAME} with the file in each site's files directory (mode 0600)",
                )
            )
    return problems


def load(path: pathlib.Path) -> Template:
    """Parse the template (the agent's bounded YAML loader, so its problems carry lines)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read the template {path}: {exc.strerror}") from None
    data, lines = agent.positioned(raw, path.name)
    template = Template(path.name, data, lines, path.parent)
    problems = _secret_placeholders(template)
    if problems:
        raise errors.ConfigError(f"the template {path.name} asks the inventory for secrets", problems=problems)
    return template


def _typed(value: Any, textual: bool) -> Any:
    """A CSV cell standing alone as a value: digits are a number, true/false a boolean, the rest text."""
    if not textual or not isinstance(value, str):
        return value
    if re.fullmatch(r"-?[0-9]{1,18}", value):
        return int(value)
    return {"true": True, "false": False}.get(value, value)


class _Renderer:
    def __init__(self, template: Template, row: inventory.Row, inventory_dir: pathlib.Path) -> None:
        self.template = template
        self.row = row
        self.out = Rendered(row)
        self.files_dir = row.files_dir(inventory_dir)
        self.textual = row.source.lower().endswith(".csv")

    def problem(self, path: Path, message: str, column: str | None = None) -> None:
        where = self.row.where(column) if column else self.row.where()
        self.out.problems.append(errors.Problem(f"{where} ({self.template.where(path)})", message))

    def column(self, path: Path, name: str) -> Any:
        if name not in self.row.values:
            columns = ", ".join(sorted(self.row.values))
            self.problem(path, f"the template's ${{{name}}} names no inventory column (columns: {columns})")
            return None
        self.out.trace[agent.dotted(path)] = self.row.where(name)
        return self.row.values[name]

    def scalar(self, path: Path, text: str) -> Any:
        whole = _WHOLE.match(text)
        if whole:
            value = self.column(path, whole.group(1) or whole.group(2))
            return _DROP if value in (None, "") else _typed(value, self.textual)
        template = string.Template(text)
        if not template.is_valid():
            self.problem(path, f"the template's value {text!r} has a bad placeholder; write $$ for a literal '$'")
            return text
        values = {name: self.column(path, name) for name in template.get_identifiers()}
        return template.substitute({k: "" if v is None else str(v) for k, v in values.items()})

    def walk(self, node: Any, path: Path) -> Any:
        if isinstance(node, Mapping):
            items = ((k, self.walk(v, (*path, k))) for k, v in node.items())
            return {k: v for k, v in items if v is not _DROP}
        if isinstance(node, list):
            items_list = (self.walk(v, (*path, i)) for i, v in enumerate(node))
            return [v for v in items_list if v is not _DROP]
        if isinstance(node, str) and "$" in node:
            return self.scalar(path, node)
        return node

    def locate(self, path: Path, ref: str) -> None:
        own = self.files_dir / ref if self.files_dir else None
        if own is not None and own.exists():
            self.out.files.append(FileRef(ref, own, per_site=True))
            holder = path[:-1] if path[-1] == "file" else path  # `{file: NAME}`: the field is the object holding it
            self.out.trace[agent.dotted(holder)] = self.row.where(inventory.FILES)
        elif (self.template.directory / ref).exists():
            self.out.files.append(FileRef(ref, self.template.directory / ref, per_site=False))
        else:
            place = f"{self.files_dir} nor " if self.files_dir else ""
            self.problem(path, f"'{ref}' is in neither {place}the template's directory", inventory.FILES)

    def references(self, node: Any, path: Path) -> None:
        """Find every `{file: NAME}` (and the extra-manifests directory) the rendered site-config names."""
        if isinstance(node, Mapping):
            for key, value in node.items():
                if (key == "file" and isinstance(value, str)) or (
                    path == ("spec", "extraManifests") and key == "directory"
                ):
                    self.locate((*path, key), str(value))
                else:
                    self.references(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                self.references(value, (*path, index))


def render(template: Template, row: inventory.Row, inventory_dir: pathlib.Path) -> Rendered:
    """The site-config of one inventory row, its trace and its files; problems instead when it cannot be made."""
    renderer = _Renderer(template, row, inventory_dir)
    data = renderer.walk(template.data, ())
    if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
        data["metadata"]["name"] = row.name  # the inventory's name is the site's name, whatever the template says
        renderer.out.trace[agent.dotted(("metadata", "name"))] = row.where(inventory.NAME)
    renderer.out.data = data
    renderer.references(data, ())
    return renderer.out
