"""A small fleet's inputs: the example site-config made a template, its files, inventory rows, site certificates.

Imported by the fleet tests by this module's own name (a `conftest` import would find another directory's).
"""

from __future__ import annotations

import datetime as dt
import pathlib
import shutil

from snoreloc.pki import certs

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
SHARED_FILES = ("pull-secret.json", "registry-ca.crt", "proxy-ca.crt")
# The example's per-site values become placeholders; everything else is the fleet's common template.
PLACEHOLDERS = (
    ("name: store-0412\n", "name: ${name}\n"),
    ("domain: sno1.store-0412.example.com", "domain: ${domain}"),
    ("- ip: 10.41.20.10\n", "- ip: ${address}\n"),
    ("prefix-length: 24", "prefix-length: ${prefix}"),
    ("next-hop-address: 10.41.20.1\n", "next-hop-address: ${gateway}\n"),
)
HEADER = "name,domain,address,prefix,gateway,files"


def site_row(number: int, **overrides: str) -> str:
    values = {
        "name": f"store-{number:04d}",
        "domain": f"sno.store-{number:04d}.example.com",
        "address": f"10.{number // 250}.{number % 250}.10",
        "prefix": "24",
        "gateway": f"10.{number // 250}.{number % 250}.1",
        "files": "",
    }
    values.update(overrides)
    return ",".join(values[c] for c in HEADER.split(","))


def write_template(directory: pathlib.Path, extra: str = "") -> pathlib.Path:
    text = (EXAMPLES / "site-config.yaml").read_text()
    for before, after in PLACEHOLDERS:
        assert before in text, before
        text = text.replace(before, after)
    directory.mkdir(parents=True, exist_ok=True)
    for name in SHARED_FILES:
        shutil.copy(EXAMPLES / name, directory / name)
        (directory / name).chmod(0o600)
    shutil.copytree(EXAMPLES / "manifests", directory / "manifests", dirs_exist_ok=True)
    path = directory / "base.yaml"
    path.write_text(text + extra)
    return path


def serving_pair(signer: tuple[bytes, bytes], domain: str, *, days: int = 365) -> dict[str, bytes]:
    """api and ingress certificate files for `domain`, as a site's files directory holds them."""
    now = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    api_cert, api_key = certs.issue_serving(*signer, [f"api.{domain}"], days=days, now=now)
    apps_cert, apps_key = certs.issue_serving(*signer, [f"*.apps.{domain}"], days=days, now=now)
    return {"api.crt": api_cert, "api.key": api_key, "ingress.crt": apps_cert, "ingress.key": apps_key}


def write_site_files(directory: pathlib.Path, files: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
        (directory / name).chmod(0o600)


CERTIFICATES_BLOCK = """
  certificates:
    api:
      certificate: {file: api.crt}
      key: {file: api.key}
    ingress:
      certificate: {file: ingress.crt}
      key: {file: ingress.key}
"""
