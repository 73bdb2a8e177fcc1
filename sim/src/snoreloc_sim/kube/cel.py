"""Evaluate the CRDs' `x-kubernetes-validations` rules the way kube-apiserver does, with cel-python.

The real OpenShift CRDs carry most of their cross-field rules (immutability, "set this only with that", IP
families) as CEL. A simulator that skipped them would accept writes a real cluster refuses, which is exactly the
class of bug it exists to catch. cel-python implements the CEL core; the Kubernetes extension libraries the CRDs
use (strings, IP/CIDR, URL, `format`) are added here as functions. A rule we still cannot evaluate is never passed
silently: `Engine.unsupported` says why, and evaluation reports it as SKIPPED with that reason.
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import adapter, celtypes, evaluation

MISSING: Any = object()  # "no old value": the field did not exist before (or this is a create)

# Macros are expanded by the parser/evaluator, not looked up as functions.
_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
_VARIABLES = frozenset({"self", "oldSelf", "format"})
# Runtime errors kube-apiserver reports too (data-dependent); anything else is our evaluator's limit.
_KUBE_RUNTIME_ERRORS = ("no such member", "no such key", "index out of", "division by zero", "modulus by zero")
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class Rule:
    """One entry of `x-kubernetes-validations`."""

    rule: str
    message: str = ""
    message_expression: str = ""
    field_path: str = ""
    reason: str = "FieldValueInvalid"

    @classmethod
    def from_schema(cls, raw: dict[str, Any]) -> Rule:
        return cls(
            rule=raw["rule"],
            message=raw.get("message", ""),
            message_expression=raw.get("messageExpression", ""),
            field_path=raw.get("fieldPath", ""),
            reason=raw.get("reason") or "FieldValueInvalid",
        )

    @property
    def transition(self) -> bool:
        """A transition rule (uses `oldSelf`) only runs on update, when the field existed before."""
        return "oldSelf" in _identifiers(self.rule)

    def failure_message(self) -> str:
        """kube's `ruleMessageOrDefault`."""
        if self.message.strip():
            return self.message.strip()
        return f"failed rule: {self.rule.strip()}"

    def error_string(self) -> str:
        """kube's `ruleErrorString`: the message if any, else the rule text."""
        return self.message.strip() or self.rule.strip()


class Status(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Outcome:
    status: Status
    message: str = ""


# ---- Kubernetes CEL extension libraries (the subset these CRDs use, plus close relatives) ----------------------


class _Format:
    """`format.<name>()`: a named string format whose `validate` returns an optional list of errors."""

    def __init__(self, name: str, check: Callable[[str], list[str]]) -> None:
        self.name = name
        self.check = check


@dataclass(frozen=True)
class _Optional:
    value: Any = None
    present: bool = False


class _FormatLibrary:
    """The value bound to the CEL identifier `format`."""


def _dns1123_errors(text: str, pattern: re.Pattern[str], limit: int, rule: str) -> list[str]:
    """apimachinery's messages for an RFC 1123 name: its length bound, then its shape (`rule` says which)."""
    errors = [f"must be no more than {limit} characters"] if len(text) > limit else []
    if not pattern.fullmatch(text):
        errors.append(f"{rule}, and must start and end with an alphanumeric character")
    return errors


def _dns1123_subdomain_errors(text: str) -> list[str]:
    rule = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
    return _dns1123_errors(text, DNS1123_SUBDOMAIN, 253, rule)


def _dns1123_label_errors(text: str) -> list[str]:
    rule = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
    return _dns1123_errors(text, DNS1123_LABEL, 63, rule)


def _validate(fmt: _Format, text: str) -> _Optional:
    errors = fmt.check(str(text))
    if not errors:
        return _Optional()
    return _Optional(celtypes.ListType([celtypes.StringType(e) for e in errors]), present=True)


def _has_value(opt: _Optional) -> celtypes.BoolType:
    return celtypes.BoolType(opt.present)


def _opt_value(opt: _Optional) -> Any:
    if not opt.present:
        raise ValueError("optional.none() dereference")
    return opt.value


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """Go's netip.ParseAddr as kube uses it: no zones, no leading zeros (Python refuses those too)."""
    if "%" in text:
        raise ValueError(f"IP address {text!r} with zone value is not allowed")
    return ipaddress.ip_address(text)


def _is_ip(text: str) -> celtypes.BoolType:
    try:
        _parse_ip(str(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return _parse_ip(str(text))


def _family(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> celtypes.IntType:
    return celtypes.IntType(addr.version)


def _is_cidr(text: str) -> celtypes.BoolType:
    value = str(text)
    if "/" not in value or "%" in value:
        return celtypes.BoolType(False)
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_url(text: str) -> celtypes.BoolType:
    """Go's url.ParseRequestURI: an absolute URL with a scheme, or an absolute path."""
    value = str(text)
    if not value or any(ch.isspace() for ch in value) or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return celtypes.BoolType(False)
    if value.startswith("/"):
        return celtypes.BoolType(True)
    parsed = urllib.parse.urlsplit(value)
    return celtypes.BoolType(bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parsed.scheme or "")))


def _split(text: str, sep: str, limit: int = -1) -> celtypes.ListType:
    """Go's strings.SplitN: n < 0 all parts, n == 0 none, otherwise at most n parts."""
    value, separator, count = str(text), str(sep), int(limit)
    if count == 0:
        return celtypes.ListType([])
    if separator == "":
        head = list(value) if count < 0 else list(value[: count - 1])
        parts = head + ([value[len(head) :]] if value[len(head) :] else [])
    else:
        parts = value.split(separator) if count < 0 else value.split(separator, count - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _lower_ascii(text: str) -> celtypes.StringType:
    return celtypes.StringType("".join(ch.lower() if ch.isascii() else ch for ch in str(text)))


def _upper_ascii(text: str) -> celtypes.StringType:
    return celtypes.StringType("".join(ch.upper() if ch.isascii() else ch for ch in str(text)))


def _trim(text: str) -> celtypes.StringType:
    return celtypes.StringType(str(text).strip())


def _join(items: list[Any], sep: str = "") -> celtypes.StringType:
    return celtypes.StringType(str(sep).join(str(item) for item in items))


def _format_factory(check: Callable[[str], list[str]], name: str) -> Callable[[_FormatLibrary], _Format]:
    def make(_library: _FormatLibrary) -> _Format:
        return _Format(name, check)

    return make


EXTENSIONS: dict[str, Callable[..., Any]] = {
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "split": _split,
    "trim": _trim,
    "join": _join,
    "isIP": _is_ip,
    "ip": _ip,
    "family": _family,
    "isCIDR": _is_cidr,
    "isURL": _is_url,
    "dns1123Subdomain": _format_factory(_dns1123_subdomain_errors, "dns1123Subdomain"),
    "dns1123Label": _format_factory(_dns1123_label_errors, "dns1123Label"),
    "validate": _validate,
    "hasValue": _has_value,
    "value": _opt_value,
}


def supported_functions() -> frozenset[str]:
    return frozenset(evaluation.base_functions) | frozenset(EXTENSIONS) | _MACROS


# ---- static analysis of a rule --------------------------------------------------------------------------------


def _tokens(tree: lark.Tree[Any], kinds: tuple[str, ...], index: int) -> set[str]:
    found = set()
    for node in tree.iter_subtrees():
        if node.data in kinds and len(node.children) > index:
            token = node.children[index]
            name = token.value if isinstance(token, lark.Token) else getattr(token, "data", "")
            found.add(str(name))
    return found


_PARSE_LOCK = threading.Lock()
_PARSE_ENV: celpy.Environment | None = None


def _environment() -> celpy.Environment:
    global _PARSE_ENV  # noqa: PLW0603  (one parser for the process: building it costs ~100 ms)
    if _PARSE_ENV is None:
        _PARSE_ENV = celpy.Environment()
    return _PARSE_ENV


def _parse(text: str) -> lark.Tree[Any]:
    with _PARSE_LOCK:
        return _environment().compile(text)


@functools.lru_cache(maxsize=4096)
def _identifiers(text: str) -> frozenset[str]:
    try:
        tree = _parse(text)
    except Exception:  # unparseable rules are reported by Engine.unsupported
        return frozenset()
    return frozenset(str(tok) for tok in tree.scan_values(lambda v: isinstance(v, lark.Token) and v.type == "IDENT"))


def called_functions(tree: lark.Tree[Any]) -> set[str]:
    """Every function or method name a parsed rule calls."""
    return _tokens(tree, ("ident_arg", "dot_ident_arg"), 0) | _tokens(tree, ("member_dot_arg",), 1)


# ---- the engine -----------------------------------------------------------------------------------------------


_SELF_NAMES = frozenset({"self", "oldSelf"})
MEMO_SIZE = 8192


def _is_self(node: Any) -> bool:
    """`member -> primary -> ident(self|oldSelf)`: the bare variable as the base of a member access."""
    for kind in ("member", "primary"):
        if not isinstance(node, lark.Tree) or node.data != kind or len(node.children) != 1:
            return False
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data == "ident" and str(node.children[0]) in _SELF_NAMES


def self_fields(*trees: lark.Tree[Any]) -> frozenset[str] | None:
    """The fields of `self`/`oldSelf` that parsed expressions read, when they only ever use them as `self.<field>`
    (a `has()` test included); None when any use sees the whole value (`self.all(...)`, `self == x`, `self[k]`).

    The outcome of such a rule is a function of those fields alone, which is what lets `Engine` reuse it."""
    fields: set[str] = set()
    uses = dotted = 0
    for tree in trees:
        for node in tree.iter_subtrees():
            if node.data == "ident" and str(node.children[0]) in _SELF_NAMES:
                uses += 1
            elif node.data == "member_dot" and _is_self(node.children[0]):
                dotted += 1
                fields.add(str(node.children[1]))
    return frozenset(fields) if uses == dotted else None


def _seen(value: Any, fields: frozenset[str] | None) -> Any:
    """What a rule can observe of a value: the fields it reads, or all of it; a marker for "no old value"."""
    if value is MISSING:
        return ["missing"]
    if fields is not None and isinstance(value, dict):
        return ["fields", {name: value[name] for name in fields if name in value}]
    return ["value", value]


def _memo_key(rule: Rule, fields: frozenset[str] | None, value: Any, old: Any) -> tuple[Rule, str] | None:
    try:
        text = json.dumps([_seen(value, fields), _seen(old, fields)], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None  # not plain JSON: evaluate every time
    return rule, text


@dataclass(frozen=True)
class _Compiled:
    program: Any  # celpy Runner, or None when the rule cannot be evaluated
    skip_reason: str
    message_program: Any = None
    fields: frozenset[str] | None = None  # see `self_fields`


class Engine:
    """Compiles each distinct rule once and evaluates it against JSON values.

    cel-python interprets the parse tree on every call (about half a millisecond for a one-line rule), and most
    writes present a rule with the same inputs again (an unchanged spec, a status update, a route whose host alone
    changed under a rule that reads `tls` and `httpHeaders`). A rule's outcome depends only on what it can see, so
    outcomes are kept (bounded, oldest dropped first) keyed by the rule and exactly the values it reads."""

    def __init__(self) -> None:
        self._cache: dict[Rule, _Compiled] = {}
        self._outcomes: dict[tuple[Rule, str], Outcome] = {}
        self._lock = threading.Lock()
        self._functions = dict(EXTENSIONS)

    def unsupported(self, rule: Rule) -> str | None:
        """Why this rule cannot be evaluated here, or None when it can."""
        return self._compiled(rule).skip_reason or None

    def _compiled(self, rule: Rule) -> _Compiled:
        with self._lock:
            found = self._cache.get(rule)
        if found is None:
            found = self._compile(rule)
            with self._lock:
                self._cache[rule] = found
        return found

    def _compile(self, rule: Rule) -> _Compiled:
        try:
            tree = _parse(rule.rule)
        except Exception as exc:
            return _Compiled(None, f"does not parse: {_first_line(exc)}")
        missing = sorted(called_functions(tree) - supported_functions())
        if missing:
            return _Compiled(None, "no implementation of " + ", ".join(missing))
        with _PARSE_LOCK:
            program = _environment().program(tree, functions=self._functions)
        message_tree = self._message_tree(rule)
        message_program = None
        if message_tree is not None:
            with _PARSE_LOCK:
                message_program = _environment().program(message_tree, functions=self._functions)
        trees = [tree] if message_tree is None else [tree, message_tree]
        return _Compiled(program, "", message_program, self_fields(*trees))

    @staticmethod
    def _message_tree(rule: Rule) -> lark.Tree[Any] | None:
        if not rule.message_expression:
            return None
        try:
            tree = _parse(rule.message_expression)
        except Exception:
            return None  # kube would refuse the CRD; here the static message is used instead
        if called_functions(tree) - supported_functions():
            return None
        return tree

    def evaluate(self, rule: Rule, value: Any, old: Any = MISSING) -> Outcome:
        """Run `rule` with `self` = value (and `oldSelf` = old when given). Transition rules without an old value
        pass, as in kube-apiserver (they are not run)."""
        if rule.transition and old is MISSING:
            return Outcome(Status.PASSED)
        compiled = self._compiled(rule)
        if compiled.program is None:
            return Outcome(Status.SKIPPED, compiled.skip_reason)
        key = _memo_key(rule, compiled.fields, value, old)
        with self._lock:
            found = self._outcomes.get(key) if key is not None else None
        if found is not None:
            return found
        outcome = self._run(rule, compiled, value, old)
        if key is not None:
            with self._lock:
                if len(self._outcomes) >= MEMO_SIZE:
                    del self._outcomes[next(iter(self._outcomes))]
                self._outcomes[key] = outcome
        return outcome

    def _run(self, rule: Rule, compiled: _Compiled, value: Any, old: Any) -> Outcome:
        activation = self._activation(value, old)
        try:
            result = compiled.program.evaluate(activation)
        except evaluation.CELEvalError as exc:
            return _runtime_error(rule, exc)
        except Exception as exc:  # a cel-python limitation, not a verdict on the object
            return Outcome(Status.SKIPPED, f"evaluation failed in cel-python: {_first_line(exc)}")
        return self._verdict(rule, result, activation)

    def _verdict(self, rule: Rule, result: Any, activation: dict[str, Any]) -> Outcome:
        if isinstance(result, evaluation.CELEvalError):
            return _runtime_error(rule, result)
        if not isinstance(result, bool | celtypes.BoolType):
            return Outcome(Status.SKIPPED, f"rule returned {type(result).__name__}, not bool")
        return Outcome(Status.PASSED) if bool(result) else Outcome(Status.FAILED, self._message(rule, activation))

    def _activation(self, value: Any, old: Any) -> dict[str, Any]:
        activation: dict[str, Any] = {"self": adapter.json_to_cel(value), "format": _FormatLibrary()}
        if old is not MISSING:
            activation["oldSelf"] = adapter.json_to_cel(old)
        return activation

    def _message(self, rule: Rule, activation: dict[str, Any]) -> str:
        program = self._compiled(rule).message_program
        if program is not None:
            try:
                text = program.evaluate(activation)
            except Exception:  # kube falls back to the static message when messageExpression fails
                text = None
            if isinstance(text, str) and text.strip():
                return text.strip()
        return rule.failure_message()


def _runtime_error(rule: Rule, exc: Exception) -> Outcome:
    text = _first_line(exc)
    if len(exc.args) > 1 and exc.args[1] is IndexError:
        text = "index out of bounds"
    if any(marker in text for marker in _KUBE_RUNTIME_ERRORS):
        text = re.sub(r"no such member in mapping: '([^']*)'", r"no such key: \1", text)
        return Outcome(Status.FAILED, f"{text} evaluating rule: {rule.error_string()}")
    return Outcome(Status.SKIPPED, f"evaluation failed in cel-python: {text}")


def _first_line(exc: Exception) -> str:
    args = getattr(exc, "args", ())
    text = str(args[0]) if args else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
