"""Masking of secret values wherever text leaves the process: logs, status, plans, errors, reports.

Two defences, because either alone leaks. Patterns catch the shapes secrets have (PEM private keys, `auth`,
`password` and `token` fields of a dockerconfigjson, `Bearer` headers) even when nobody registered them. The
registry catches exact values the run has handled (a pull-secret auth, a token) in whatever shape they surface,
including base64 of them. Every secret the agent reads is registered the moment it is read.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Collection, Mapping

MASK = "<redacted>"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
    ),
    (
        re.compile(r'((?<!\w)"?(?:auth|password|identitytoken|registrytoken|token)"?\s*[:=]\s*)"[^"]*"', re.IGNORECASE),
        rf'\1"{MASK}"',
    ),
    (re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE), rf"\1{MASK}"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@\"']*:)[^/\s@\"']+@", re.IGNORECASE), rf"\1{MASK}@"),  # user:password@
    (re.compile(r'("?\.dockerconfigjson"?\s*:\s*)"[A-Za-z0-9+/=]{16,}"'), rf'\1"{MASK}"'),
    (re.compile(r'("?tls\.key"?\s*:\s*)"[A-Za-z0-9+/=]{16,}"'), rf'\1"{MASK}"'),
)

_MIN_SECRET_LEN = 6


class _Registry:
    """Exact secret values seen by this process, longest first so overlapping values mask fully."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: list[str] = []

    def add(self, value: str) -> None:
        forms = {value, base64.b64encode(value.encode()).decode()}
        with self._lock:
            for form in forms:
                if len(form) >= _MIN_SECRET_LEN and form not in self._values:
                    self._values.append(form)
            self._values.sort(key=len, reverse=True)

    def values(self) -> list[str]:
        with self._lock:
            return list(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


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


def redact(text: str) -> str:
    """Return `text` with every known and every recognisable secret masked."""
    for value in _REGISTRY.values():
        if value in text:
            text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
