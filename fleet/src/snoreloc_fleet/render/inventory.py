"""A fleet's inventory: one row per site (a spreadsheet's CSV export, or a YAML list), each value with its place.

A fleet owner keeps sites in a table, not in thousands of files. Each row names a site and gives the values its
site-config template asks for (`${domain}`, `${address}`...); the column `files` names the directory holding that
site's own files (certificates, network state). Every value keeps where it came from (file, line, column) so that
any later problem, in the template or in the agent's validation of the rendered file, points at the cell to fix.

Secrets never live here: an inventory is mailed around, diffed and pasted into tickets. A column named like a
secret, or a cell shaped like one (a private key, a password in a URL, a registry auth), is refused with its place
and never its value; secrets come from the per-site files (mode 0600) or, on the hub, from Secret references.

An inventory is read by the agent's bounded reader (a FIFO, a device or a file past 64 MiB is refused) and parsed
as strictly as a site-config: YAML by the agent's positioned loader (`siteconfig.yamlpos`, with an inventory's
larger bounds: aliases, values after expansion and nodes counted before anything is built; a duplicate key is a
problem at its line), CSV with each column once and each cell at most 128 KiB; text that is not UTF-8 is named by
its line. Every refusal is exit 65 with the line.
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

from snoreloc.siblings import errors, safefile
from snoreloc_fleet import agent

NAME = "name"  # the site's name: metadata.name of its site-config, its directory, its Site object
FILES = "files"  # the directory (relative to the inventory) holding the site's own files
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # what `${column}` in a template can name
_SITE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label: a directory, an object name
# An inventory of 10,000 sites with 25 columns is about 5 MiB of CSV, 500,000 YAML keys and values.
KIND = safefile.Kind("inventory", 64 * 1024 * 1024)
MAX_CELL = 128 * 1024  # characters in one cell: the csv module's own field limit (a site-config is at most 1 MiB)
MAX_ALIASES = 128  # YAML aliases (`*name`): a handful is a convenience, thousands a bomb
MAX_VALUES = 1_000_000  # YAML values after expanding aliases (an alias bomb stops here, in about a second)
MAX_NODES = 500_000  # YAML keys and values as written (each costs about half a KiB while composing)


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


def _huge_cell(row: Row, column: str, value: Any) -> errors.Problem | None:
    size = len(value) if isinstance(value, str) else len(json.dumps(value, default=str))
    if size <= MAX_CELL:
        return None
    return _problem(
        row.where(column),
        f"the cell is {size} characters, more than the {MAX_CELL} a cell may hold; a large value (a certificate, "
        "a network) belongs in a file of the site's files directory, referenced with {file: NAME}",
    )


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
        problem = _huge_cell(row, column, value) or _secret_cell(row, column, value)
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


def read_input(path: pathlib.Path, kind: safefile.Kind, what: str) -> bytes:
    """The bytes of an input file the person named (a link is judged by its target), by the bounded reader: a FIFO,
    a device, a directory or a file past `kind`'s limit is refused at once (exit 65), a missing file is exit 69."""
    try:
        return safefile.read(path, kind, follow=True)
    except safefile.Unfit as exc:
        raise errors.ConfigError(
            f"{what} {path} cannot be used: {exc}", hint=f"Give {what} as a regular file of at most {kind.limit} bytes."
        ) from None
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read {what} {path}: {exc.strerror}") from None


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        problem = _problem(f"{source} line {line}", "is not UTF-8 (Latin-1 or another legacy encoding?)")
        raise errors.ConfigError(
            f"the inventory {source} is not UTF-8 text",
            problems=[problem],
            hint='Save it as UTF-8 (a spreadsheet\'s "CSV UTF-8" export).',
        ) from None


def _not_a_table(source: str, where: str, message: str) -> errors.ConfigError:
    return errors.ConfigError(f"the inventory {source} is not a table", problems=[_problem(where, message)])


def _header(reader: Any, source: str) -> list[str]:
    header = next(reader, None)
    if not header:
        raise errors.ConfigError(f"the inventory {source} is empty: its first line names the columns")
    columns = [c.strip() for c in header]
    first: dict[str, int] = {}
    for number, column in enumerate(columns, start=1):
        if column in first:
            where = f"{source} line {reader.line_num}, column {column}"
            raise _not_a_table(source, where, f"is column {first[column]} and column {number}: name each column once")
        first[column] = number
    return columns


def _records(reader: Any, source: str) -> Iterator[list[str]]:
    """The CSV's records; a cell past the csv module's limit, or a broken quote, is a problem at its line."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _not_a_table(
                source, f"{source} line {reader.line_num}", f"{exc} (a cell holds at most {MAX_CELL} characters)"
            ) from None
        yield record


def _csv_rows(text: str, source: str) -> tuple[list[Row], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    columns = _header(reader, source)
    rows: list[Row] = []
    for record in _records(reader, source):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(columns):
            where = f"{source} line {reader.line_num}"
            raise _not_a_table(source, where, f"has {len(record)} cells, the header {len(columns)}")
        values = {c: cell.strip() for c, cell in zip(columns, record, strict=True)}
        rows.append(Row(source, len(rows) + 1, values, dict.fromkeys(columns, reader.line_num)))
    return rows, columns


def _yaml_document(text: str, source: str) -> Any:
    """The agent's positioned loader with an inventory's bounds; every problem (a duplicate key...) with its line."""
    sizes = {"size": KIND.limit, "aliases": MAX_ALIASES, "values": MAX_VALUES, "nodes": MAX_NODES}
    return agent.positioned_document(text.encode("utf-8"), f"the inventory {source}", **sizes)


def _yaml_rows(text: str, source: str) -> tuple[list[Row], list[str]]:
    document = _yaml_document(text, source)
    data: Any = document.data
    prefix: tuple[str | int, ...] = ()
    if isinstance(data, Mapping):
        data, prefix = data.get("sites"), ("sites",)
    if not isinstance(data, list):
        raise errors.ConfigError(f"the inventory {source} must be a list of sites (or a mapping with `sites:`)")
    rows: list[Row] = []
    columns: dict[str, None] = {}
    for number, item in enumerate(data, start=1):
        here = document.marks.get((*prefix, number - 1))
        if not isinstance(item, Mapping):
            where = f"{source} line {here.line if here else '?'}"
            raise _not_a_table(source, where, "a site is a mapping of column: value")
        lines = {str(k): m.line for k in item if (m := document.marks.get((*prefix, number - 1, k))) is not None}
        values = {str(k): v for k, v in item.items()}
        columns.update(dict.fromkeys(values))
        rows.append(Row(source, number, values, lines))
    return rows, list(columns)


def load(path: pathlib.Path) -> list[Row]:
    """The inventory's rows (CSV by its `.csv` suffix, YAML otherwise); raises ConfigError with every problem."""
    source = path.name
    text = _decode(read_input(path, KIND, "the inventory"), source)
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
