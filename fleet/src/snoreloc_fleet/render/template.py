"""One site-config template, many sites: `${column}` placeholders filled from an inventory row.

The templating is Python's `string.Template` (standard library, no code in templates, `$$` for a literal `$`),
applied to each string *value* of the parsed template, never to its text: a cell can only ever become a value,
however many colons, quotes or newlines it holds, so no inventory cell can add a key or change the document's shape.
A value that is exactly one placeholder takes the cell's type (a YAML inventory's list stays a list; a CSV cell of
digits becomes a number, `true`/`false` a boolean) and an empty cell leaves that key, or list item, out.

Every value filled in remembers its cell, and every `{file: NAME}` its directory (the site's files directory when
the file is there, else the template's), so a later problem at a field names the inventory line and column to fix.

A `{file: NAME}` (a cell may fill it) names a file inside the inventory's directory (through the site's `files`
directory) or inside the template's directory, by the agent's own rule for references (`siteconfig.files.resolve`:
no absolute path, no `..`, no link whose target is outside), and is read here, once, by the bounded reader (a
FIFO, a device or a file past 1 MiB is a problem at its cell, exit 65): render writes what it read, never a link.
Labels are checked as the hub will check them (a label value or key it would refuse is a problem at its cell).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc.siblings import errors, safefile
from snoreloc_fleet import agent
from snoreloc_fleet.render import inventory

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
    digest: str = ""  # the template's bytes, hashed: a Site's `template-digest` annotation (a wave's brake reads it)

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
    origin: pathlib.Path  # the real path read (a link's target, proven inside)
    per_site: bool  # from the site's own files directory (else the template's)
    contents: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)  # (name in the site's directory, bytes)


@dataclass
class Rendered:
    """One site's site-config, or the problems that kept it from being rendered."""

    row: inventory.Row
    data: Any = None
    trace: dict[str, str] = field(default_factory=dict)  # field path (agent's notation) -> inventory cell
    files: list[FileRef] = field(default_factory=list)
    problems: list[errors.Problem] = field(default_factory=list)
    template_digest: str = ""  # `Template.digest` of the template it came from

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
    raw = inventory.read_input(path, safefile.SITE_FILE, "the template")
    data, lines = agent.positioned(raw, path.name)
    template = Template(path.name, data, lines, path.parent, digest=hashlib.sha256(raw).hexdigest()[:16])
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


# (real path, name in the site's directory) -> what it holds: a file every site shares is read once per render.
Cache = dict[tuple[str, str], tuple[tuple[str, bytes], ...]]
# Label keys and values as the API server validates them (k8s.io/apimachinery pkg/util/validation/validation.go:
# IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain for a key's prefix).
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_FIX = "63 characters at most, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


def label_problem(key: str, value: Any) -> str | None:
    """Why the API server would refuse this label (the key, then the value), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"the label key's prefix {prefix!r} is not a DNS subdomain (lower-case, digits, '-', '.')"
    if len(name) > 63 or not _LABEL_NAME.match(name):
        return f"the label key {key!r} is not a valid label name: {_LABEL_FIX}"
    text = value if isinstance(value, str) else None
    if text is None or len(text) > 63 or (text and not _LABEL_NAME.match(text)):
        return f"the label value {str(value)[:80]!r} is not a valid label value: {_LABEL_FIX} (or empty)"
    return None


def _read_tree(base: str, ref: str, real: str, directory: bool) -> tuple[tuple[str, bytes], ...]:
    """(name, bytes) of the regular file at `real`, or (`directory`) of every file under that directory, each
    proven inside `base` (links resolved) and read by the bounded reader. Raises agent.Refused or safefile.Unfit."""
    if not directory:
        return ((ref, safefile.read(real, safefile.SITE_FILE)),)
    found: list[tuple[str, bytes]] = []
    for root, dirs, names in os.walk(real):
        dirs.sort()
        for entry in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            inner = os.path.relpath(os.path.join(root, entry), real).replace(os.sep, "/")
            target = agent.resolve_reference(base, f"{os.path.relpath(real, base)}/{inner}")
            if os.path.isdir(target):
                raise agent.Refused(f"'{ref}/{inner}' is a link to a directory; give its files instead")
            found.append((f"{ref.rstrip('/')}/{inner}", safefile.read(target, safefile.SITE_FILE)))
    return tuple(found)


class _Renderer:
    def __init__(self, template: Template, row: inventory.Row, inventory_dir: pathlib.Path, cache: Cache) -> None:
        self.template = template
        self.row = row
        self.out = Rendered(row, template_digest=template.digest)
        self.inventory_dir = inventory_dir
        self.files_dir = row.files_dir(inventory_dir)
        self.textual = row.source.lower().endswith(".csv")
        self.cache = cache
        if self.files_dir is not None:
            try:
                agent.resolve_reference(str(inventory_dir), str(row.values[inventory.FILES]))
            except agent.Refused as exc:
                self.out.problems.append(errors.Problem(row.where(inventory.FILES), f"{exc} (the inventory's)"))
                self.files_dir = None

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

    def refuse(self, path: Path, message: str) -> None:
        """A problem with a file reference, at the cell it came from (else the row's `files` cell)."""
        cell = self.out.trace.get(agent.dotted(path))
        where = cell or self.row.where(inventory.FILES if self.files_dir else None)
        fix = "; name a file inside the inventory's directory (the site's files) or the template's"
        self.out.problems.append(errors.Problem(f"{where} ({self.template.where(path)})", message + fix))

    def read(self, base: pathlib.Path, ref: str, directory: bool) -> tuple[str, tuple[tuple[str, bytes], ...]]:
        """(real path, contents) of `ref` under `base` (the site's files directory or the template's directory)."""
        real = agent.resolve_reference(str(base), ref)
        key = (real, ref)
        if key not in self.cache:
            self.cache[key] = _read_tree(os.path.realpath(base), ref, real, directory)
        return real, self.cache[key]

    def locate(self, path: Path, ref: str, directory: bool = False) -> None:
        if os.path.isabs(ref) or ".." in pathlib.PurePosixPath(ref).parts:
            try:
                agent.resolve_reference(str(self.template.directory), ref)  # refuses it, in the agent's words
            except agent.Refused as exc:
                self.refuse(path, str(exc))
                return
        own = self.files_dir / ref if self.files_dir else None
        per_site = own is not None and os.path.lexists(own)
        if not per_site and not os.path.lexists(self.template.directory / ref):
            place = f"{self.files_dir} nor " if self.files_dir else ""
            self.refuse(path, f"'{ref}' is in neither {place}the template's directory")
            return
        try:
            base = self.files_dir if per_site and self.files_dir is not None else self.template.directory
            real, contents = self.read(base, ref, directory)
        except agent.Refused as exc:
            self.refuse(path, str(exc))
            return
        except safefile.Unfit as exc:
            self.refuse(path, f"'{ref}' cannot be used: {exc}")
            return
        except OSError as exc:
            self.refuse(path, f"'{ref}' cannot be read: {exc.strerror}")
            return
        self.out.files.append(FileRef(ref, pathlib.Path(real), per_site=per_site, contents=contents))
        if per_site:
            holder = path[:-1] if path[-1] == "file" else path  # `{file: NAME}`: the field is the object holding it
            self.out.trace.setdefault(agent.dotted(holder), self.row.where(inventory.FILES))

    def labels(self, data: Any) -> None:
        """Each label the hub would refuse, at its cell (or the template's line). A label value is text: a CSV cell
        of digits or true/false standing alone (typed as a number or a boolean) is put back as the text it was."""
        metadata = data.get("metadata") if isinstance(data, dict) else None
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if not isinstance(labels, dict):
            return
        for key, typed in list(labels.items()):
            value = typed
            if self.textual and isinstance(typed, bool | int):
                value = labels[key] = str(typed).lower() if isinstance(typed, bool) else str(typed)
            why = label_problem(str(key), value)
            if why:
                path: Path = ("metadata", "labels", key)
                cell = self.out.trace.get(agent.dotted(path)) or self.row.where()
                self.out.problems.append(errors.Problem(f"{cell} ({self.template.where(path)})", why))

    def references(self, node: Any, path: Path) -> None:
        """Find every `{file: NAME}` (and the extra-manifests directory) the rendered site-config names."""
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "file" and isinstance(value, str):
                    self.locate((*path, key), value)
                elif path == ("spec", "extraManifests") and key == "directory":
                    self.locate((*path, key), str(value), directory=True)
                else:
                    self.references(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                self.references(value, (*path, index))


def render(template: Template, row: inventory.Row, inventory_dir: pathlib.Path, cache: Cache | None = None) -> Rendered:
    """The site-config of one inventory row, its trace and its files (read, bounded and confined); problems instead
    when it cannot be made. `cache` shares files read across rows (the template's files, read once per render)."""
    renderer = _Renderer(template, row, inventory_dir, {} if cache is None else cache)
    data = renderer.walk(template.data, ())
    if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
        data["metadata"]["name"] = row.name  # the inventory's name is the site's name, whatever the template says
        renderer.out.trace[agent.dotted(("metadata", "name"))] = row.where(inventory.NAME)
    renderer.out.data = data
    renderer.labels(data)
    renderer.references(data, ())
    return renderer.out


def render_all(tpl: Template, rows: list[inventory.Row], inventory_dir: pathlib.Path) -> list[Rendered]:
    """Every row rendered with one template (its shared files read once for all of them)."""
    cache: Cache = {}  # the template's shared files are read once, not once per site
    return [render(tpl, row, inventory_dir, cache) for row in rows]
