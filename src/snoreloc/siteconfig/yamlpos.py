"""YAML loading that remembers where every value came from, and refuses documents built to hurt the parser.

A technician fixes a site-config with a text editor, so every problem must name a line. PyYAML's `compose` keeps
each node's start and end marks; we walk the node graph ourselves to build plain data and a path -> position
index in one pass. The walk also enforces what `safe_load` does not: a size limit, a nesting-depth limit, an alias
limit and a node budget (alias bombs expand exponentially only when someone walks them: we walk them with a
budget), no duplicate keys (PyYAML silently keeps the last), no custom tags, and dates left as strings. A custom
tag, a merge key, a key that is not a string or a number too long is a problem at its own path and line, not a
refusal of the whole document.

PyYAML reads YAML 1.1, where some plain values are not what a person who learnt YAML 1.2 (or JSON) expects:
`30:00` is the number 1800 (base 60), `0755` is 493 (octal), `1_000` is 1000, and `yes`, `no`, `on` and `off` are
true and false. With `yaml11=True` each such value gets a warning at its line saying what was read and how to
write it (`yaml11_reading`); with `integers_only=True` a number with a fraction or an exponent is an error (the
site-config has no field that takes one: `8080.0` where a port is meant is refused, not rounded).

Depth, aliases and the number of nodes are counted while composing, as each node starts: a node costs about half
a kilobyte in PyYAML's graph, so a 1 MiB file of 300,000 one-letter scalars would take hundreds of megabytes and
seconds to build before any later count could refuse it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml._yaml import CParser
from yaml._yaml import Mark as CMark
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from snoreloc.siteconfig import findings

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 128
MAX_NODES = 100_000  # values after expanding aliases (the walk)
MAX_DOCUMENT_NODES = 20_000  # keys and values as written (composing); a realistic site-config has a few hundred
MAX_NUMBER_CHARS = 64  # a port, a timeout or an MTU needs a handful; thousands of digits cost quadratic time

_TAG = "tag:yaml.org,2002:"
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
_YamlMark = yaml.Mark | CMark  # libyaml's events (so our nodes) carry its own Mark type
_NUMBERS = frozenset((_TAG + "int", _TAG + "float"))
_PLAIN_SCALARS = frozenset(_TAG + name for name in ("str", "int", "float", "bool", "null"))
_BOOLEANS_12 = frozenset(("true", "false", "True", "False", "TRUE", "FALSE"))  # YAML 1.2's core schema
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_BINARY = re.compile(r"[-+]?0b[01_]+")


@dataclass(frozen=True)
class Limits:
    """The bounds of one load; the defaults are the site-config's. A caller reading a larger kind of document (the
    fleet's inventory: one entry per site) passes its own, each still checked before the graph is built."""

    bytes: int = MAX_BYTES
    aliases: int = MAX_ALIASES
    nodes: int = MAX_NODES
    document_nodes: int = MAX_DOCUMENT_NODES


SITE_CONFIG = Limits()


@dataclass(frozen=True)
class Mark:
    """A 1-based line and column in the source text."""

    line: int
    column: int


@dataclass(frozen=True)
class Span:
    """Where a value node starts and ends (end is exclusive, as YAML marks are)."""

    start: Mark
    end: Mark


@dataclass(frozen=True)
class Document:
    """Plain data (dicts, lists, scalars) plus, for every path, where its entry starts and its value spans."""

    data: Any
    marks: Mapping[findings.Path, Mark]
    spans: Mapping[findings.Path, Span] = field(repr=False)
    issues: tuple[tuple[findings.Finding, Mark], ...] = ()  # problems found while loading, each with its place

    def locate(self, path: findings.Path) -> Mark | None:
        """The mark of `path`, or of its nearest ancestor that exists in the file (for missing keys)."""
        for end in range(len(path), -1, -1):
            mark = self.marks.get(path[:end])
            if mark is not None:
                return mark
        return None


class YamlError(Exception):
    """The text is not YAML we accept. Carries the position; never quotes the document."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _mark(mark: _YamlMark) -> Mark:
    return Mark(mark.line + 1, mark.column + 1)


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


def _fail(message: str, mark: _YamlMark | None) -> YamlError:
    return YamlError(message, mark.line + 1, mark.column + 1) if mark else YamlError(message)


class _LimitedLoader(Composer, CParser, SafeConstructor, Resolver):
    """SafeLoader that counts nodes, aliases and nesting while composing, before any structure is built from them.

    libyaml (`CParser`) scans and parses, the Python `Composer` composes: scanning in Python cost 90 % of a
    site-config's validation (issue 23's bench), and composing here is what keeps the counts ahead of the graph.
    """

    def __init__(self, stream: str, limits: Limits = SITE_CONFIG) -> None:
        CParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._limits = limits

    def _here(self) -> _YamlMark | None:
        event = self.peek_event()
        return event.start_mark if event is not None else None

    def _count(self) -> None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > self._limits.aliases:
                raise _fail(f"too many aliases (more than {self._limits.aliases})", self._here())
            return
        self._nodes += 1
        if self._nodes > self._limits.document_nodes:
            raise _fail(f"the document has more than {self._limits.document_nodes} keys and values", self._here())

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._count()
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _fail(f"nested deeper than {MAX_DEPTH} levels", self._here())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def yaml11_reading(tag: str, text: str, value: Any) -> str | None:
    """Why a plain scalar's YAML 1.1 reading may surprise, with the reading taken and how to write it; else None."""
    if tag == _TAG + "bool" and text not in _BOOLEANS_12:
        word = "true" if value else "false"
        return f"`{text}` was read as {word} (YAML 1.1); write {word}, or quote it if the text is meant"
    if tag not in _NUMBERS:
        return None
    rules = (
        (_SEXAGESIMAL, "base 60: each `:` multiplies by 60"),
        (_BINARY, "binary"),
        (_OCTAL, "octal: a leading 0"),
    )
    for pattern, rule in rules:
        if pattern.fullmatch(text) and text.lstrip("+-") != "0":
            return f"`{text}` was read as the number {value} (YAML 1.1 {rule}); write {value}, or quote it for text"
    if "_" in text:
        return f"`{text}` was read as the number {value} (YAML 1.1 ignores `_` in numbers); write {value}"
    return None


@dataclass(frozen=True)
class Reading:
    """What the walk also judges: YAML 1.1 surprises (warnings), numbers with a fraction (errors), and which paths'
    values are secret (their text is never quoted)."""

    yaml11: bool = False
    integers_only: bool = False
    secret: Callable[[findings.Path], bool] = lambda _path: False


class _Walker:
    """Turns a composed node graph into data while recording positions; bounded in depth and total nodes."""

    def __init__(
        self, loader: _LimitedLoader, budget: int = MAX_NODES, reading: Reading = Reading(), limit: int | None = None
    ) -> None:
        self._loader = loader
        self._reading = reading
        self.budget = budget
        self.limit = budget if limit is None else limit  # the whole stream's, for the message
        self.marks: dict[findings.Path, Mark] = {}
        self.spans: dict[findings.Path, Span] = {}
        self.issues: list[tuple[findings.Finding, Mark]] = []

    def walk(self, node: yaml.Node, path: findings.Path) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _fail(f"the document expands to more than {self.limit} values (an alias bomb?)", node.start_mark)
        if len(path) > MAX_DEPTH:
            raise _fail(f"nested deeper than {MAX_DEPTH} levels (a recursive alias?)", node.start_mark)
        self.spans[path] = Span(_mark(node.start_mark), _mark(node.end_mark))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return self._sequence(node, path)
        return self._scalar(node, path)

    def _issue(self, path: findings.Path, message: str, node: yaml.Node, *, warning: bool = False) -> None:
        found = findings.warning(path, message) if warning else findings.error(path, message)
        self.issues.append((found, _mark(node.start_mark)))

    def _mapping(self, node: yaml.MappingNode, path: findings.Path) -> dict[str, Any]:
        if node.tag != _TAG + "map":
            self._issue(path, f"unsupported tag {_short(node.tag)}", node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            if key is None:
                continue
            child = (*path, key)
            if key in out:
                first = self.marks[child]
                issue = findings.error(child, f"duplicate key (first given at line {first.line})")
                self.issues.append((issue, _mark(key_node.start_mark)))
                continue
            self.marks[child] = _mark(key_node.start_mark)
            out[key] = self.walk(value_node, child)
        return out

    def _key(self, node: yaml.Node, path: findings.Path) -> str | None:
        """The key's text; None (with a problem at the mapping's path) for a merge key or a key not a string."""
        if node.tag == _TAG + "merge":
            self._issue(path, "merge keys (<<) are not supported; write the fields out", node)
            return None
        if not isinstance(node, yaml.ScalarNode) or node.tag != _TAG + "str":
            self._issue(path, "mapping keys must be plain strings (quote it)", node)
            return None
        return str(node.value)

    def _sequence(self, node: yaml.SequenceNode, path: findings.Path) -> list[Any]:
        if node.tag != _TAG + "seq":
            self._issue(path, f"unsupported tag {_short(node.tag)}", node)
        items = []
        for index, item in enumerate(node.value):
            self.marks[(*path, index)] = _mark(item.start_mark)
            items.append(self.walk(item, (*path, index)))
        return items

    def _scalar(self, node: yaml.Node, path: findings.Path) -> Any:
        if node.tag == _TAG + "timestamp":  # a date is just text to us (and to JSON Schema)
            return str(node.value)
        if node.tag not in _PLAIN_SCALARS:
            self._issue(path, f"unsupported tag {_short(node.tag)}", node)
            return str(node.value)  # its text: the tag is the one problem reported here
        if node.tag in _NUMBERS and len(str(node.value)) > MAX_NUMBER_CHARS:
            self._issue(path, f"a number longer than {MAX_NUMBER_CHARS} characters", node)
            return None
        value = self._loader.construct_object(node)
        if isinstance(node, yaml.ScalarNode) and not node.style:  # plain: None from PyYAML, "" from libyaml
            self._judge_reading(node, path, value)
        return value

    def _judge_reading(self, node: yaml.ScalarNode, path: findings.Path, value: Any) -> None:
        secret = self._reading.secret(path)
        if self._reading.integers_only and node.tag == _TAG + "float":
            shown = "" if secret else f" (`{node.value}`)"
            self._issue(path, f"must be a whole number{shown}: no field of the site-config takes a fraction", node)
            return
        reading = yaml11_reading(node.tag, str(node.value), value) if self._reading.yaml11 else None
        if reading is not None:
            text = "a plain value was read by YAML 1.1 rules; quote it" if secret else reading
            self._issue(path, text, node, warning=True)


def _decode(raw: bytes, limit: int = MAX_BYTES) -> str:
    if len(raw) > limit:
        raise YamlError(f"the file is larger than {limit // 1024} KiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"the file is not UTF-8 text (bad byte at offset {exc.start})") from None


def _unprintable(text: str, exc: yaml.reader.ReaderError) -> YamlError:
    """PyYAML refuses control characters before parsing anything: say where, as for any other YAML error."""
    before = text[: exc.position]
    line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(exc.character)
    return YamlError(f"invalid YAML: control character U+{code:04X} is not allowed", line, column)


def _compose(text: str, limits: Limits = SITE_CONFIG) -> tuple[_LimitedLoader, yaml.Node]:
    loader, nodes = _compose_nodes(text, lambda loader: [loader.get_single_node()], limits)
    if not nodes or nodes[0] is None:
        raise YamlError("the document is empty", 1, 1)
    return loader, nodes[0]


def _every_node(loader: _LimitedLoader) -> list[yaml.Node | None]:
    nodes = []
    while loader.check_node():
        nodes.append(loader.get_node())
    return nodes


def _compose_nodes(
    text: str, take: Callable[[_LimitedLoader], list[yaml.Node | None]], limits: Limits = SITE_CONFIG
) -> tuple[_LimitedLoader, list[yaml.Node | None]]:
    """The nodes `take` composes from `text`, every limit of `_LimitedLoader` applying to the whole text."""
    try:
        loader = _LimitedLoader(text, limits)
    except yaml.reader.ReaderError as exc:
        raise _unprintable(text, exc) from None
    try:
        nodes = take(loader)
    except yaml.reader.ReaderError as exc:
        raise _unprintable(text, exc) from None
    except yaml.MarkedYAMLError as exc:
        if (exc.problem or "").startswith(_LIBYAML_TOO_DEEP):  # libyaml's scanner looks ahead past our count
            raise _fail(f"nested deeper than {MAX_DEPTH} levels", exc.problem_mark) from None
        problem = exc.problem or "invalid YAML"
        where = f" {exc.context}" if exc.context else ""
        raise _fail(f"invalid YAML: {problem}{where}", exc.problem_mark) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {type(exc).__name__}") from None
    finally:
        loader.dispose()
    return loader, nodes


def _expansion(root: yaml.Node, limit: int) -> None:
    """Refuse, before walking anything, a graph whose aliases expand to more than `limit` values: each node's
    expanded size is counted once (an alias is the same node object), so the cost is that of the text as written.
    A node still being counted (a recursive alias) is left to the walk, which says so by its depth."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 0  # in progress
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        total = 1 + sum(size(child) for child in children)
        if total > limit:
            raise _fail(f"the document expands to more than {limit} values (an alias bomb?)", root.start_mark)
        sizes[id(node)] = total
        return total

    size(root)


def load(raw: bytes, reading: Reading = Reading(), limits: Limits = SITE_CONFIG) -> Document:
    """Parse `raw` (one YAML document) into data with positions; raises YamlError with the line on failure."""
    loader, node = _compose(_decode(raw, limits.bytes), limits)
    _expansion(node, limits.nodes)
    walker = _Walker(loader, budget=limits.nodes, reading=reading)
    walker.marks[()] = _mark(node.start_mark)
    data = walker.walk(node, ())
    return Document(data, walker.marks, walker.spans, tuple(walker.issues))


def load_all(raw: bytes) -> list[tuple[int, Document]]:
    """Every non-empty document of a `---`-separated stream, each with its index in the stream (from 0) and
    positions; the limits of `load` hold for the whole text, and the values of all documents share one budget."""
    loader, nodes = _compose_nodes(_decode(raw), _every_node)
    budget = MAX_NODES
    found = []
    for index, node in enumerate(nodes):
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _TAG + "null"):
            continue
        walker = _Walker(loader, budget, limit=MAX_NODES)
        walker.marks[()] = _mark(node.start_mark)
        data = walker.walk(node, ())
        budget = walker.budget
        found.append((index, Document(data, walker.marks, walker.spans, tuple(walker.issues))))
    return found
