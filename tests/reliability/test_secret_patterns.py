"""Secrets in site-configs that do not parse, or sit under keys nobody registered: `validate` and `validate
--annotate` must not print them, whatever else is wrong with the file.

Each case is a document a technician could plausibly produce (a typo, a half-pasted block, a misspelt key), with
one secret in it. The secret is never registered: masking must come from the shapes alone. Every output of both
forms of `validate` (stdout and stderr) is scanned for the secret, its base64 and its password part.
"""

from __future__ import annotations

import base64
import pathlib
import time

import pytest

from snoreloc import redact
from snoreloc.cli import main

from . import figures

HEAD = (
    "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n  domain: sno1.example.com\n"
)
USER_PASS = "factory:Pa55w0rd-s3cret"
AUTH = base64.b64encode(USER_PASS.encode()).decode()
TOKEN = "sha256~Zx9kQ2mVbT7rWc4uNp8Ls"
PROXY_PASS = "Pr0xyP4ss-word"
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

AUTHS = "      auths:\n        r.example.com:\n"
INLINE = "  pullSecret:\n    inline:\n" + AUTHS
MISSPELT = "  pullSecrets:\n    inline:\n" + AUTHS
JSON_DOC = f'{{"auths": {{"r.example.com": {{"auth": "{AUTH}"}}}}}}'
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n        {KEY_BODY}\n"

CASES: dict[str, str] = {
    "misspelt-pullsecrets-inline": MISSPELT + f"          auth: {AUTH}\n",
    "misspelt-pullsecrets-flow": f"  pullSecrets: {{inline: {{auths: {{r: {{auth: {AUTH}}}}}}}}}\n",
    "misspelt-pullsecrets-json": f"  pullSecrets:\n    json: '{JSON_DOC}'\n",
    "syntax-error-after-auth": INLINE + f"          auth: {AUTH}\n  bad: [\n",
    "syntax-error-before-auth": "  bad: : :\n" + INLINE + f"          auth: {AUTH}\n",
    "tab-indent-auth": f"  pullSecret:\n\tinline:\n      auths: {{r: {{auth: {AUTH}}}}}\n",
    "unterminated-quoted-auth": INLINE + f'          auth: "{AUTH}\n',
    "single-quoted-auth": INLINE + f"          'auth': '{AUTH}'\n  x: [\n",
    "password-plain-misspelt-key": INLINE + f"          username: factory\n          passwrd: {PROXY_PASS}\n",
    "password-block-scalar": f"  registryPassword: |\n    {PROXY_PASS}\n  oops: [\n",
    "token-unknown-field": f"  apiToken: {TOKEN}\n  oops: {{\n",
    "token-key-value-in-comment": f"  # token={TOKEN}\n  oops: [\n",
    "proxy-url-with-password": f"  httpProxy: http://proxy-user:{PROXY_PASS}@proxy.example.com:3128\n  oops: [\n",
    # spec.proxy is a real field since issue 15: the document is broken further down instead
    "proxy-url-in-a-broken-document": f"  proxy:\n    httpsProxy: https://u:{PROXY_PASS}@10.0.0.1:8443\n  oops: [\n",
    "private-key-broken-pem": f"  certificates:\n    api:\n      key: |\n        {PEM}  bad: [\n",
    "dockerconfigjson-misplaced": f'  extra:\n    .dockerconfigjson: "{AUTH}{AUTH}"\n  bad: [\n',
    "auths-in-flow-sequence": f"  pullSecret:\n    inline: {{auths: [{{auth: {AUTH}}}]}}\n",
    "control-character-after-secret": f'  secretKey: {PROXY_PASS}\n  domain2: "a\x07b"\n',
}
SECRETS = (AUTH, USER_PASS, USER_PASS.split(":", 1)[1], TOKEN, PROXY_PASS, KEY_BODY)


def _forms() -> list[str]:
    return [*SECRETS, *(base64.b64encode(s.encode()).decode() for s in SECRETS)]


@pytest.mark.parametrize("annotate", [False, True], ids=["plain", "annotate"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_no_secret_in_validate_output(
    name: str, annotate: bool, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    redact.forget_secrets()
    site = tmp_path / "site-config.yaml"
    site.write_text(HEAD + CASES[name])
    code = main.main(["validate", *(["--annotate"] if annotate else []), str(site)])
    out = capsys.readouterr()
    leaked = [form for form in _forms() if form in out.out or form in out.err]
    figures.record("secret-patterns", f"{name}-{'annotate' if annotate else 'plain'}", not leaked and code == 65)
    assert code == 65, out.err
    assert not leaked, (leaked, out.out, out.err)
    assert "Traceback" not in out.err


def test_annotate_keeps_tags_on_their_lines_after_masking(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A masked block scalar leaves its lines in place: the tag of a problem below it stays on the right line."""
    site = tmp_path / "site-config.yaml"
    site.write_text(HEAD + f"  registryPassword: |\n    {PROXY_PASS}\n    second-line\n  oops: [\n")
    assert main.main(["validate", "--annotate", str(site)]) == 65
    lines = capsys.readouterr().out.splitlines()
    tagged = [number for number, line in enumerate(lines, start=1) if "\t\t# E1" in line]
    assert tagged and tagged[0] >= 10, lines  # the error is reported at or after the unclosed `[` (line 10)
    assert PROXY_PASS not in "\n".join(lines)


def test_registry_masks_15000_secrets_in_linear_time() -> None:
    """Registering and masking scale with the number of secrets: 30,000 values (15,000 and their base64)."""
    redact.forget_secrets()
    values = [f"user{i}:pw{i:08d}" for i in range(15_000)]
    started = time.perf_counter()
    for value in values:
        redact.register_secret(value)
    text = " ".join(values[::100])
    masked = redact.redact(text)
    long_text = "x" * 200_000 + values[-1]
    masked_long = redact.redact(long_text)
    seconds = time.perf_counter() - started
    redact.forget_secrets()
    figures.record("bounded", "redaction-registry-15000", seconds < 2.0, seconds=seconds)
    assert not any(v in masked for v in values[::100])
    assert values[-1] not in masked_long and masked_long.endswith(redact.MASK)
    assert seconds < 2.0, f"{seconds:.2f} s"
