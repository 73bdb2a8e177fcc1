"""The support bundle `snoreloc collect-logs` writes: one tarball a technician can send, with everything needed for
triage and no secret.

It holds status.json, report.json, the run's timeline picture (timeline.svg), the debug log, journal excerpts of
snoreloc and kubelet for this boot, the
site-config with secret fields removed structurally (not only masked by pattern), the names and sizes of the files
it references, and the backups' metadata (kind, name, namespace, time), never their data. The site-config is the
one the last run used, wherever it came from: the copy from a stick in the state directory, and the file named in
status.json (`--site-config`, `/etc/snoreloc/site-config.yaml`) when that is elsewhere. Before any text goes in,
every secret found in the site-config, its referenced secret files and the backups is registered with `redact`,
so it is masked wherever it surfaces, in any log line. Every file is read through `safefile` (bounded, regular
files only; the log as its last part), and the site-config the journal names is taken only if it is a SiteConfig.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import pathlib
import tarfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from snoreloc import errors, redact, safefile
from snoreloc.siteconfig import discovery

LOG = logging.getLogger(__name__)
JOURNAL_UNITS: tuple[tuple[str, int], ...] = (("snoreloc", 5000), ("kubelet", 2000))
JOURNAL_TIMEOUT = 60.0


def collect(state: pathlib.Path, runner: Any, root: pathlib.Path = pathlib.Path("/")) -> dict[str, bytes]:
    """Every member of the tarball, by name, already redacted. `runner` is an `adapters.command.Runner`."""
    used = used_site_config(state, root)
    register_known_secrets(state, used)
    members = {name: _redacted_file(state / name) for name in ("status.json", "report.json", "snoreloc.log")}
    members.update(site_config_members(state / "site-config"))
    if used is not None:
        members.update(used_site_config_members(used))
    members["backups.json"] = _json(backup_metadata(state / "backups"))
    members["timeline.svg"] = timeline_svg(state / "status.json")
    for unit, lines in JOURNAL_UNITS:
        members[f"journal-{unit}.txt"] = journal(runner, unit, lines)
    return {name: data for name, data in members.items() if data is not None}


# --- secrets --------------------------------------------------------------------------------------------------------


def scrub(node: Any) -> Any:
    """A copy of the document with the value of every secret-looking field replaced by the mask."""
    if isinstance(node, dict):
        return {key: redact.MASK if redact.is_secret_field(key) else scrub(value) for key, value in node.items()}
    if isinstance(node, list):
        return [scrub(item) for item in node]
    return node


def _leaves(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _leaves(value)
    elif isinstance(node, list):
        for item in node:
            yield from _leaves(item)
    elif isinstance(node, str | bytes):
        yield node.decode("utf-8", "replace") if isinstance(node, bytes) else node


def _secret_values(node: Any) -> Iterator[Any]:
    """The values of secret-looking fields anywhere in a document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from ([value] if redact.is_secret_field(key) else _secret_values(value))
    elif isinstance(node, list):
        for item in node:
            yield from _secret_values(item)


def register_text_secrets(text: str) -> None:
    """Register a secret text, and when it is a JSON or base64 document, the secrets inside it too."""
    redact.register_secret(text)
    for inner in _decoded_forms(text):
        for value in _leaves(inner):
            redact.register_secret(value)
            for decoded in _decoded_forms(value):
                for leaf in _leaves(decoded):
                    redact.register_secret(leaf)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _decoded_forms(text: str) -> list[Any]:
    """JSON of the text, its base64 decoding and, for `user:password`, the password."""
    forms = [form for form in (_json_or_none(text),) if form is not None]
    try:
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except ValueError:
        return forms
    return [*forms, decoded, *decoded.split(":", 1)[1:]]


def _secret_leaves(value: Any, base: pathlib.Path) -> Iterator[str]:
    """The secret texts a secret field holds: inline values, and the contents of a file it references."""
    if not isinstance(value, dict):
        yield from _leaves(value)
        return
    for key, inner in value.items():
        if key == "file" and isinstance(inner, str):
            referenced = base / inner
            if referenced.is_file() and referenced.resolve().is_relative_to(base.resolve()):
                text = _text(referenced, safefile.SITE_FILE)
                if text:
                    yield text
        elif key != "mode":
            yield from _leaves(inner)


def register_known_secrets(state: pathlib.Path, used: pathlib.Path | None = None) -> None:
    documents = list(_site_config_documents(state / "site-config"))
    if used is not None:
        documents += [(document, used.parent) for document in _yaml_or_none(used)]
    for document, base in documents:
        for value in _secret_values(document):
            for text in _secret_leaves(value, base):
                register_text_secrets(text)
    for document in _backup_documents(state / "backups"):
        for value in _secret_values(document):
            for text in _leaves(value):
                register_text_secrets(text)


# --- members --------------------------------------------------------------------------------------------------------


def _text(path: pathlib.Path, kind: safefile.Kind) -> str | None:
    """A file's text through the bounded reader; None (and the reason in the log) when it is not fit to read."""
    try:
        return safefile.read_text(path, kind)
    except (OSError, safefile.Unfit) as exc:
        LOG.warning("not read for the bundle: %s: %s", path, exc)
        return None


def _redacted_file(path: pathlib.Path) -> bytes | None:
    """A state file or the log, redacted; a log larger than its limit is sent as its last part."""
    if not path.exists() and not path.is_symlink():
        return None
    if path.name == "snoreloc.log":
        try:
            data, skipped = safefile.read_tail(path, safefile.LOG)
        except (OSError, safefile.Unfit) as exc:
            return f"# not included: {exc}\n".encode()
        head = f"# the first {skipped} bytes are left out\n" if skipped else ""
        return redact.redact(head + data.decode("utf-8", "replace")).encode("utf-8")
    text = _text(path, safefile.STATE)
    return None if text is None else redact.redact(text).encode("utf-8")


def timeline_svg(status: pathlib.Path) -> bytes | None:
    """The run's timeline picture (the same as `analyze --svg` and the progress page draw)."""
    from snoreloc.engine import journal, timeline, view  # noqa: PLC0415 (lazy: only when a run left a journal)

    if not status.exists():
        return None
    try:
        run = view.facts(journal.read(status))
    except errors.SnorelocError:
        return None
    return redact.redact(timeline.svg(view.timeline_of(run))).encode()


def _json(value: Any) -> bytes:
    return redact.redact(json.dumps(value, indent=2, sort_keys=True, default=str)).encode("utf-8")


def _yaml_or_none(path: pathlib.Path) -> list[Any]:
    """The document in a YAML file, as a one-item list; empty when it does not parse."""
    try:
        text = _text(path, safefile.SITE_FILE)
        return [] if text is None else [yaml.safe_load(text)]
    except yaml.YAMLError:
        return []


def _site_config_documents(directory: pathlib.Path) -> Iterator[tuple[Any, pathlib.Path]]:
    for path in sorted(directory.glob("*.y*ml")) if directory.is_dir() else []:
        for document in _yaml_or_none(path):
            yield document, directory


def _recorded_site_config(status: pathlib.Path) -> pathlib.Path | None:
    """The site-config file the last run loaded, as the journal records it."""
    from snoreloc.engine import journal  # noqa: PLC0415 (kept off the import path of other commands)

    try:
        site = journal.read(status).site
    except errors.SnorelocError:
        return None
    return pathlib.Path(site.path) if site is not None and site.path else None


def used_site_config(state: pathlib.Path, root: pathlib.Path) -> pathlib.Path | None:
    """The site-config file the last run used when it is not the stick copy in the state directory: the recorded
    path, else (a run that recorded none) the host file under `root`."""
    candidate = _recorded_site_config(state / "status.json") or root / discovery.HOST_FILE.lstrip("/")
    copies = state / "site-config"
    if not candidate.is_file() or (copies.is_dir() and candidate.resolve().parent == copies.resolve()):
        return None
    return candidate if _is_site_config(candidate) else None


def _is_site_config(path: pathlib.Path) -> bool:
    """Whether the file a journal names is what it claims: a SiteConfig. A journal edited to name a kubeconfig or
    another file must not pull it (or the secret files it names) into the bundle."""
    documents = _yaml_or_none(path)
    document = documents[0] if documents else None
    if not isinstance(document, dict) or document.get("kind") != "SiteConfig":
        LOG.warning("%s, named in status.json, is not a site-config: left out of the bundle", path)
        return False
    return str(document.get("apiVersion", "")).startswith("snoreloc.io/")


def used_site_config_members(path: pathlib.Path) -> dict[str, bytes]:
    """The used site-config, scrubbed, under `site-config/used/`, with the path it was read from."""
    documents = _yaml_or_none(path)
    text = (
        yaml.safe_dump(scrub(documents[0]), sort_keys=False)
        if documents
        else "# did not parse as YAML; contents omitted (they may hold secrets)\n"
    )
    return {
        f"site-config/used/{path.name}": redact.redact(text).encode("utf-8"),
        "site-config/used/SOURCE.txt": redact.redact(f"{path}\n").encode("utf-8"),
    }


def site_config_members(directory: pathlib.Path) -> dict[str, bytes]:
    """The scrubbed site-config(s) and a listing of the other files; contents of unparsable YAML are omitted."""
    if not directory.is_dir():
        return {}
    members: dict[str, bytes] = {}
    for path in sorted(directory.glob("*.y*ml")):
        try:
            document = yaml.safe_load(_text(path, safefile.SITE_FILE) or "")
        except yaml.YAMLError:
            members[f"site-config/{path.name}"] = b"# did not parse as YAML; contents omitted (they may hold secrets)\n"
            continue
        text = yaml.safe_dump(scrub(document), sort_keys=False)
        members[f"site-config/{path.name}"] = redact.redact(text).encode("utf-8")
    listing = [
        f"{p.relative_to(directory)}\t{p.stat().st_size} bytes" for p in sorted(directory.rglob("*")) if p.is_file()
    ]
    members["site-config/FILES.txt"] = ("\n".join(listing) + "\n").encode("utf-8")
    return members


def _backup_documents(directory: pathlib.Path) -> Iterator[Any]:
    for path in sorted(directory.rglob("*")) if directory.is_dir() else []:
        if path.is_file():
            try:
                yield json.loads(_text(path, safefile.BACKUP) or "")
            except ValueError:
                continue


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    """Kubernetes objects (dicts with kind and metadata) anywhere in a backup document."""
    if isinstance(node, dict):
        if "kind" in node and isinstance(node.get("metadata"), dict):
            yield node
            return
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _objects(item)


def backup_metadata(directory: pathlib.Path) -> list[dict[str, Any]]:
    """Names, kinds and times of the saved originals; never their data."""
    entries = []
    for path in sorted(directory.rglob("*")) if directory.is_dir() else []:
        if not path.is_file():
            continue
        entry: dict[str, Any] = {"file": str(path.relative_to(directory)), "bytes": path.stat().st_size}
        entry["modified"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))
        try:
            document = json.loads(_text(path, safefile.BACKUP) or "")
        except ValueError:
            document = None
        entry["objects"] = [_identity(obj) for obj in _objects(document)]
        entries.append(entry)
    return entries


def _identity(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj["metadata"]
    fields = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
    fields |= {"name": meta.get("name"), "namespace": meta.get("namespace")}
    return {key: str(value) for key, value in fields.items() if value}


def journal(runner: Any, unit: str, lines: int) -> bytes:
    argv = ["journalctl", "-u", unit, "-b", "--no-pager", "-o", "short-iso", "-n", str(lines)]
    try:
        result = runner.run(argv, timeout=JOURNAL_TIMEOUT, check=False)
    except Exception as exc:  # a missing journal is a fact to report in the tarball, not a reason to fail
        return redact.redact(f"journalctl failed: {exc}\n").encode("utf-8")
    return redact.redact(result.stdout or result.stderr).encode("utf-8")


def write_tarball(output: pathlib.Path, members: dict[str, bytes], inputs: Sequence[pathlib.Path] = ()) -> None:
    """A gzip tarball, 0600 from creation (it holds logs), members 0600 under one top directory; written by the
    safe writer, so never through a link at `output` nor over one of `inputs`."""
    with (
        safefile.open_atomic(output, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT) as handle,
        tarfile.open(fileobj=handle, mode="w:gz") as tar,
    ):
        for name, data in sorted(members.items()):
            info = tarfile.TarInfo(f"snoreloc-logs/{name}")
            info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
            tar.addfile(info, io.BytesIO(data))
