"""A fleet's inventory: one row per site (a spreadsheet's CSV export, or a YAML list), each value with its place.

A fleet owner keeps sites in a table, not in thousands of files. Each row names a site and gives the values its
site-config template asks for (`${domain}`, `${address}`...); the column `files` names the directory holding that
site's own files (certificates, network state). Every value keeps where it came from (file, line, column) so that
any later problem, in the template or in the agent's validation of the rendered file, points at the cell to fix.

Secrets never live here: an inventory is mailed around, diffed and pasted into tickets. A column named like a
secret, or a cell shaped like one (a private key, a password in a URL, a registry auth), is refused with its place
and never its value; secrets come from the per-site files (mode 0600) or, on the hub, from Secret references.
"""

from __future__ import annotations

import csv
import io
import json
import pathlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc import errors
from snoreloc_fleet.ops import agent

NAME = "name"  # the site's name: metadata.name of its site-config, its directory, its Site object
FILES = "files"  # the directory (relative to the inventory) holding the site's own files
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # what `${column}` in a template can name
_SITE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label: a directory, an object name
_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Row:
    """One site of the inventory: its values by column, and where each came from."""

    source: str
    number: int  # 1-based position among the sites
    values: Mapping[str, Any]
    lines: Mapping[str, int] = field(default_factory=dict)  # column -> line in the inventory file

    @property
    def name(self) -> str:
        return str(self.values[NAME])

    def where(self, column: str | None = None) -> str:
        """`sites.csv line 13, column domain`: the cell to look at."""
        line = self.lines.get(column or NAME, self.lines.get(NAME))
        at = f"line {line}" if line is not None else f"row {self.number}"
        return f"{self.source} {at}" + (f", column {column}" if column else "")

    def files_dir(self, inventory_dir: pathlib.Path) -> pathlib.Path | None:
        value = self.values.get(FILES)
        return inventory_dir / str(value) if value not in (None, "") else None


def _problem(where: str, message: str) -> errors.Problem:
    return errors.Problem(where, message)


def _secret_column(source: str, column: str) -> errors.Problem | None:
    if agent.looks_secret(f"{column}: x"):
        return _problem(
            f"{source} column {column}",
            "is named like a secret; inventories carry no secrets: put it in each site's files directory "
            "(mode 0600) or a Secret on the hub, and reference it from the template with {file: NAME}",
        )
    if not _COLUMN.match(column):
        return _problem(
            f"{source} column {column!r}", "a column name is letters, digits and '_' (a template says ${name})"
        )
    return None


def _secret_cell(row: Row, column: str, value: Any) -> errors.Problem | None:
    text = value if isinstance(value, str) else json.dumps(value)
    if agent.looks_secret(text) or agent.looks_secret(f"{column}: {text}"):
        return _problem(
            row.where(column),
            "holds secret material (the value is not shown); inventories carry no secrets: move it to the site's "
            "files directory (mode 0600) or a Secret on the hub, and reference it from the template",
        )
    return None


def _row_problems(row: Row, seen: dict[str, Row]) -> Iterator[errors.Problem]:
    name = row.values.get(NAME)
    if not isinstance(name, str) or not _SITE_NAME.match(name):
        yield _problem(
            row.where(NAME), f"the site name must be a DNS label (lower-case letters, digits, '-'), got {name!r}"
        )
    elif name in seen:
        yield _problem(row.where(NAME), f"site {name} is already named at {seen[name].where(NAME)}")
    else:
        seen[name] = row
    for column, value in row.values.items():
        problem = _secret_cell(row, column, value)
        if problem:
            yield problem


def check(rows: Sequence[Row], columns: Sequence[str], source: str) -> list[errors.Problem]:
    """Every problem of the inventory as a whole: columns, names, duplicates, secrets. Empty when usable."""
    problems = [p for p in (_secret_column(source, c) for c in columns) if p]
    if NAME not in columns:
        problems.append(_problem(source, f"no '{NAME}' column: each row must name its site"))
        return problems
    seen: dict[str, Row] = {}
    for row in rows:
        problems.extend(_row_problems(row, seen))
    return problems


def _read_text(path: pathlib.Path) -> str:
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read the inventory {path}: {exc.strerror}") from None
    if len(raw) > _MAX_BYTES:
        raise errors.ConfigError(f"the inventory {path} is larger than {_MAX_BYTES // 2**20} MiB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise errors.ConfigError(f"the inventory {path} is not UTF-8 (bad byte at offset {exc.start})") from None


def _csv_rows(text: str, source: str) -> tuple[list[Row], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise errors.ConfigError(f"the inventory {source} is empty: its first line names the columns")
    columns = [c.strip() for c in header]
    rows: list[Row] = []
    for record in reader:
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(columns):
            problem = _problem(
                f"{source} line {reader.line_num}", f"has {len(record)} cells, the header {len(columns)}"
            )
            raise errors.ConfigError(f"the inventory {source} is not a table", problems=[problem])
        values = {c: cell.strip() for c, cell in zip(columns, record, strict=True)}
        rows.append(Row(source, len(rows) + 1, values, dict.fromkeys(columns, reader.line_num)))
    return rows, columns


def _yaml_sites(text: str, source: str) -> tuple[list[Any], list[yaml.Node]]:
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
        root = yaml.compose(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark else ""
        raise errors.ConfigError(f"the inventory {source} is not YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if isinstance(data, Mapping) and isinstance(root, yaml.MappingNode):
        data = data.get("sites")
        root = next((v for k, v in root.value if k.value == "sites"), None)
    if not isinstance(data, list) or not isinstance(root, yaml.SequenceNode):
        raise errors.ConfigError(f"the inventory {source} must be a list of sites (or a mapping with `sites:`)")
    return data, list(root.value)


def _yaml_rows(text: str, source: str) -> tuple[list[Row], list[str]]:
    data, nodes = _yaml_sites(text, source)
    rows: list[Row] = []
    columns: dict[str, None] = {}
    for number, (item, node) in enumerate(zip(data, nodes, strict=True), start=1):
        if not isinstance(item, Mapping) or not isinstance(node, yaml.MappingNode):
            problem = _problem(f"{source} line {node.start_mark.line + 1}", "a site is a mapping of column: value")
            raise errors.ConfigError(f"the inventory {source} has a site that is not a mapping", problems=[problem])
        lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
        values = {str(k): v for k, v in item.items()}
        columns.update(dict.fromkeys(values))
        rows.append(Row(source, number, values, lines))
    return rows, list(columns)


def load(path: pathlib.Path) -> list[Row]:
    """The inventory's rows (CSV by its `.csv` suffix, YAML otherwise); raises ConfigError with every problem."""
    text = _read_text(path)
    source = path.name
    rows, columns = _csv_rows(text, source) if path.suffix.lower() == ".csv" else _yaml_rows(text, source)
    problems = check(rows, columns, source)
    if problems:
        count = len(problems)
        raise errors.ConfigError(
            f"the inventory {source}: {count} problem{'s' if count != 1 else ''}; nothing was written",
            problems=problems,
            hint="Fix the cells named above; each line says the inventory line and column.",
        )
    return rows
