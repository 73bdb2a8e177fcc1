"""Masking of secret values wherever text leaves the process: logs, status, plans, errors, reports.

Two defences, because either alone leaks. Patterns catch the shapes secrets have (PEM private keys, the value of
any key that looks like a secret field, quoted or not, in YAML, JSON or `key=value` form, `Bearer` headers, the
`user:password` of a URL) even when nobody registered them and even in a document that does not parse. The
registry catches exact values the run has handled (a pull-secret auth, a token) in whatever shape they surface,
including base64 of them. Every secret the agent reads is registered the moment it is read.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import threading
from collections.abc import Callable, Collection, Mapping

MASK = "<redacted>"

# A key that names a secret, however it is spelt or prefixed: `auth`, `pullSecrets`, `proxyPassword`, `api_key`.
_SENSITIVE_NAME = (
    r"(?:\.dockerconfigjson|tls\.key|[\w-]*(?:(?<!o)auth(?!entication|or)|passw|pwd|passphrase|secret|token|credential|psk"
    r"|private[_-]?key|api[_-]?key|access[_-]?key)[\w-]*)"
)  # no dots otherwise (`spec.pullSecret.file:` in a problem is a path); `oauth`, `authentication` name operators
# Where a YAML key can start: the start of a line (after list dashes) or inside a flow collection.
_KEY_START = r"(?:^[ \t]*(?:-[ \t]+)*|[{,][ \t]*)"
_QUOTED_KEY = rf"""(?:"{_SENSITIVE_NAME}"|'{_SENSITIVE_NAME}'|{_SENSITIVE_NAME})"""

# Which fields of a parsed document hold secrets, for code that walks documents rather than text: the support
# bundle's scrub (any field whose name looks secret) and the kubeconfig's credentials. The site-config's own secret
# fields are marked `x-secret` in its schema (`siteconfig.schema.SECRET_PATHS`).
KUBECONFIG_SECRET_FIELDS = ("token", "client-key-data", "password")
_SECRET_FIELD_NAMES = frozenset({"key", "pullsecret", "auth", "auths", "dockerconfigjson", "data", "stringdata"})
_SECRET_FIELD_PARTS = ("password", "secret", "token", "psk", "privatekey")


def is_secret_field(name: object) -> bool:
    """Whether a document's field of this name holds a secret, however it is spelt (`pullSecret`, `private_key`)."""
    normal = "".join(char for char in str(name).lower() if char.isalnum())
    return normal in _SECRET_FIELD_NAMES or any(part in normal for part in _SECRET_FIELD_PARTS)


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """The patterns, compiled at the first redaction rather than at import (`--version` and `--help` never redact)."""
    return (
        (
            re.compile(
                r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
                re.DOTALL,
            ),
            f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
        ),
        # A block scalar under a secret key: every more-indented line after `key: |` is the value.
        (
            re.compile(
                rf"^([ \t]*(?:-[ \t]+)*{_QUOTED_KEY}[ \t]*:[ \t]*[|>][-+0-9]*[ \t]*(?:#[^\n]*)?\n)"
                r"(?:(?:[ \t]*\n)*[ \t]+[^\n]*(?:\n|\Z))+",
                re.IGNORECASE | re.MULTILINE,
            ),
            rf"\1  {MASK}\n",
        ),
        # A quoted value, anywhere (JSON, YAML flow or block, a log line): "auth": "..." or token='...'.
        (
            re.compile(
                rf"""((?<![\w.-]){_QUOTED_KEY}[ \t]*[:=][ \t]*)(?!["']<redacted>)(?:"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?)""",
                re.IGNORECASE,
            ),
            rf'\1"{MASK}"',
        ),
        # A plain YAML value where a key can start: the rest of the line (a flow collection's inner keys match alone).
        (
            re.compile(
                rf"""({_KEY_START}{_QUOTED_KEY}[ \t]*:[ \t]+)(?![ \t]*(?:[{{\[|>&*!#"']|<redacted>|$))[^\n]*""",
                re.IGNORECASE | re.MULTILINE,
            ),
            rf"\1{MASK}",
        ),
        # key=value outside YAML (a log line, a command line): up to the next space, comma or ampersand.
        (re.compile(rf"((?<![\w.-]){_SENSITIVE_NAME}=)(?![\"'])[^\s,&]+", re.IGNORECASE), rf"\1{MASK}"),
        (re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE), rf"\1{MASK}"),
        # user:password in a URL (a proxy, a registry mirror).
        (re.compile(r"((?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:]*:[^\s/@]*@"), rf"\1{MASK}@"),
        # user:password@host without a scheme (a pull secret's auth decoded, a proxy written short).
        (re.compile(r"(?<![^\s\"'(\[{=,;<])[^\s/@:\"'<>]+:[^\s/@\"'<>]+@(?=[\w\[])"), f"{MASK}@"),
        # a JSON Web Token (a service-account token, an OIDC token): three base64url parts, the first `{"`.
        (re.compile(r"(?<![\w-])eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*"), MASK),
    )


_MIN_SECRET_LEN = 6
_FEW = 64  # up to this many values, one C-speed search per value beats a scan of the text in Python


class _Registry:
    """Exact secret values seen by this process: adding is O(1), masking is linear in the text or in the values.

    Values are indexed by their first `_MIN_SECRET_LEN` characters, so a text is scanned once whatever the number
    of secrets (a 1 MiB pull secret registers some 30,000 values); with a few values, searching for each is faster.
    Longest value first at each place, so overlapping values mask fully.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, None] = {}
        self._sorted: list[str] | None = None
        self._by_prefix: dict[str, list[str]] | None = None

    def add(self, value: str) -> None:
        with self._lock:
            for form in (value, base64.b64encode(value.encode()).decode()):
                if len(form) >= _MIN_SECRET_LEN and form not in self._values:
                    self._values[form] = None
                    self._sorted = self._by_prefix = None

    def _index(self) -> tuple[list[str], dict[str, list[str]]]:
        with self._lock:
            if self._sorted is None or self._by_prefix is None:
                self._sorted = sorted(self._values, key=len, reverse=True)
                self._by_prefix = {}
                for value in self._sorted:
                    self._by_prefix.setdefault(value[:_MIN_SECRET_LEN], []).append(value)
            return self._sorted, self._by_prefix

    def mask(self, text: str) -> str:
        ordered, by_prefix = self._index()
        if len(ordered) <= _FEW:
            for value in ordered:
                if value in text:
                    text = text.replace(value, MASK)
            return text
        return _scan(text, by_prefix)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._sorted = self._by_prefix = None


def _scan(text: str, by_prefix: dict[str, list[str]]) -> str:
    out: list[str] = []
    start = index = 0
    while index <= len(text) - _MIN_SECRET_LEN:
        found = next(
            (v for v in by_prefix.get(text[index : index + _MIN_SECRET_LEN], ()) if text.startswith(v, index)), None
        )
        if found is None:
            index += 1
            continue
        out += [text[start:index], MASK]
        index = start = index + len(found)
    out.append(text[start:])
    return "".join(out)


_REGISTRY = _Registry()


def register_secret(value: str | bytes) -> None:
    """Remember a secret value (and its base64) so that `redact` masks it anywhere it appears."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    text = text.strip()
    if len(text) >= _MIN_SECRET_LEN:
        _REGISTRY.add(text)


def register_fields(document: object, fields: Collection[str]) -> None:
    """Register the string values of the keys named in `fields`, anywhere in a parsed JSON/YAML `document`.

    A value that is base64 of text (a registry `auth` is base64 of `user:password`) is registered decoded as well,
    and so is the part after its first colon, the password alone.
    """
    if isinstance(document, Mapping):
        for key, value in document.items():
            if key in fields and isinstance(value, str):
                _register_with_decoded(value)
            else:
                register_fields(value, fields)
    elif isinstance(document, list):
        for item in document:
            register_fields(item, fields)


def _register_with_decoded(value: str) -> None:
    register_secret(value)
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return
    register_secret(decoded)
    register_secret(decoded.partition(":")[2])


def forget_secrets() -> None:
    """Drop every registered value (tests use this to keep runs independent)."""
    _REGISTRY.clear()


def _same_lines(replacement: str) -> Callable[[re.Match[str]], str]:
    """A substitution that leaves as many line breaks as the match had, so line numbers stay true."""

    def substitute(match: re.Match[str]) -> str:
        masked = match.expand(replacement)
        return masked + "\n" * max(0, match.group(0).count("\n") - masked.count("\n"))

    return substitute


def redact(text: str, *, keep_lines: bool = False) -> str:
    """Return `text` with every known and every recognisable secret masked.

    `keep_lines` keeps every line break (a masked multi-line value leaves empty lines), for a reprinted file whose
    lines are tagged by number.
    """
    text = _REGISTRY.mask(text)
    for pattern, replacement in _patterns():
        text = pattern.sub(_same_lines(replacement) if keep_lines else replacement, text)
    return text
