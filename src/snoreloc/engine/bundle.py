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

What support asks for first is in it too: the route table (`routes.jsonl`), the journals of NetworkManager, nmstate
and CRI-O, the node's network state before and after the network step (from the journal) and now (`nmstatectl
show`), and a read of the cluster at collection time (`engine.cluster_read`: its operators, pool, Node and CSRs,
and its current configuration and recent Events). For the node's own DNS (`host.node_dns`, what docs/access.md's
troubleshooting asks for): the dnsmasq journal and `systemctl status`, the overrides file, every file of
`/etc/dnsmasq.d`, `/etc/resolv.conf`, the originals snoreloc kept of the files it changed (`host-backups/`, their
content decoded), and what the node resolves the site's names to now (`getent hosts`), all under `dns/`. Every
member is bounded in size (`MAX_MEMBER_BYTES`; a cut says so) and every command or read in time. `MANIFEST.txt`
lists what is in the bundle with its size, and what could not be read and why, so a missing item is a fact rather
than a question.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import pathlib
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from snoreloc import errors, redact, safefile
from snoreloc.siteconfig import discovery

LOG = logging.getLogger(__name__)
if TYPE_CHECKING:
    from snoreloc.engine import cluster_read

JOURNAL_UNITS: tuple[tuple[str, int], ...] = (
    ("snoreloc", 5000),
    ("kubelet", 2000),
    ("NetworkManager", 3000),
    ("nmstate", 1000),
    ("crio", 3000),
    ("dnsmasq", 2000),
)
JOURNAL_TIMEOUT = 60.0
NMSTATE_TIMEOUT = 30.0
MAX_MEMBER_BYTES = 16 * 1024 * 1024  # a member; more is cut, with a last line saying so
MANIFEST = "MANIFEST.txt"
STATE_FILES = ("status.json", "report.json", "snoreloc.log", "routes.jsonl")
ClusterRead = Callable[[], "cluster_read.Read"]


def collect(
    state: pathlib.Path,
    runner: Any,
    root: pathlib.Path = pathlib.Path("/"),
    cluster: ClusterRead | None = None,
) -> dict[str, bytes]:
    """Every member of the tarball, by name, already redacted, with `MANIFEST.txt`. `runner` is an
    `adapters.command.Runner`; `cluster` reads the cluster (`cluster_read.read`), None when there is no API to ask."""
    used = used_site_config(state, root)
    register_known_secrets(state, used)
    unread: dict[str, str] = {}
    members: dict[str, bytes | None] = {name: _redacted_file(state / name) for name in STATE_FILES}
    unread |= {name: f"no {state / name} (no run has written it)" for name, data in members.items() if data is None}
    members.update(site_config_members(state / "site-config"))
    if used is not None:
        members.update(used_site_config_members(used))
    members["backups.json"] = _json(backup_metadata(state / "backups"))
    members["timeline.svg"] = timeline_svg(state / "status.json")
    for unit, lines in JOURNAL_UNITS:
        members[f"journal-{unit}.txt"], why = journal_of(runner, unit, lines)
        if why:
            unread[f"journal-{unit}.txt"] = why
    found, missing = network_members(state / "status.json", runner)
    members |= found
    unread |= missing
    found, missing = dns_members(state, root, runner, site_domain(state, used))
    members |= found
    unread |= missing
    if cluster is None:
        unread["cluster/"] = "not asked: no kubeconfig for the API"
    else:
        read = cluster()
        members |= read.members
        unread |= read.unread
    kept = {name: _bounded(data) for name, data in members.items() if data is not None}
    kept[MANIFEST] = manifest(kept, unread)
    return kept


def _bounded(data: bytes) -> bytes:
    limit = MAX_MEMBER_BYTES
    if len(data) <= limit:
        return data
    return data[:limit] + f"\n... cut at {limit} bytes of {len(data)}\n".encode()


def manifest(members: dict[str, bytes], unread: dict[str, str]) -> bytes:
    """What the bundle holds (name and size) and what it could not read, and why."""
    lines = ["# snoreloc collect-logs bundle: what is in it, and what could not be read", "", "in the bundle:"]
    lines += [f"  {name}\t{len(data)} bytes" for name, data in sorted(members.items())]
    lines += ["", "could not be read:" if unread else "could not be read: nothing"]
    lines += [f"  {name}: {why}" for name, why in sorted(unread.items())]
    return redact.redact("\n".join(lines) + "\n").encode("utf-8")


def network_members(status: pathlib.Path, runner: Any) -> tuple[dict[str, bytes], dict[str, str]]:
    """The node's network before and after the network step (as the journal keeps them) and now (nmstate)."""
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy: only when a run left a journal)
    from snoreloc.steps.host import site_network  # noqa: PLC0415 (as above)

    found: dict[str, bytes] = {}
    unread: dict[str, str] = {}
    try:
        details = journal.read(status).record(site_network.SiteNetwork.name).details if status.exists() else {}
    except errors.SnorelocError as exc:
        details, unread["network/before.json"] = {}, exc.message
    for key, name in (
        (site_network.NETWORK_BEFORE, "network/before.json"),
        (site_network.NETWORK_AFTER, "network/after.json"),
    ):
        if key in details:
            found[name] = _json(details[key])
        else:
            unread.setdefault(name, "the last run's network step did not apply a change (or no run reached it)")
    try:
        result = runner.run(["nmstatectl", "show", "--json"], timeout=NMSTATE_TIMEOUT, check=False)
    except Exception as exc:  # a missing nmstatectl is a fact for the manifest, not a reason to fail
        unread["network/now.json"] = f"nmstatectl show failed: {exc}"
        return found, unread
    if result.returncode == 0 and result.stdout:
        found["network/now.json"] = redact.redact(result.stdout).encode("utf-8")
    else:
        unread["network/now.json"] = f"nmstatectl show exited {result.returncode}: {result.stderr.strip()[:200]}"
    return found, unread


# --- the node's own DNS ---------------------------------------------------------------------------------------------

DNS_DIR = "/etc/dnsmasq.d"
RESOLV_CONF = "/etc/resolv.conf"
MAX_DNS_FILES = 64  # files of /etc/dnsmasq.d taken at most (an SNO has two or three)
GETENT_TIMEOUT = 10.0


def dns_members(
    state: pathlib.Path, root: pathlib.Path, runner: Any, domain: str | None
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The node's DNS as it is now and as it was before snoreloc changed it, under `dns/`: the overrides file,
    `/etc/dnsmasq.d/*`, `/etc/resolv.conf` (read under `root`, the host's root), the kept originals, dnsmasq's unit
    status and, with the site's domain, what the node resolves its names to."""
    from snoreloc.host import node_dns  # noqa: PLC0415 (lazy, as the other readers of node files)

    found: dict[str, bytes] = {}
    unread: dict[str, str] = {}
    names = [(node_dns.OVERRIDES, "dns/" + pathlib.PurePath(node_dns.OVERRIDES).name), (RESOLV_CONF, "dns/resolv.conf")]
    names += _dns_dir_files(root, unread)
    for host_path, name in names:
        data, why = host_file(root, host_path)
        if data is not None:
            found[name] = data
        if why:
            unread[name] = why
    found |= host_backups(state / node_dns.BACKUP_DIR)
    for name, argv in _dns_commands(node_dns.UNIT, node_dns.names(domain) if domain else ()):
        found[name], why = _command(runner, argv, GETENT_TIMEOUT)
        if why:
            unread[name] = why
    if not domain:
        unread["dns/getent-hosts.txt"] = "no site-config at hand: the site's names are not known"
    return found, unread


def _dns_dir_files(root: pathlib.Path, unread: dict[str, str]) -> list[tuple[str, str]]:
    directory = root / DNS_DIR.lstrip("/")
    if not directory.is_dir() or directory.is_symlink():
        unread["dns/dnsmasq.d/"] = f"no directory {DNS_DIR} on this node"
        return []
    entries = sorted(directory.iterdir())
    if len(entries) > MAX_DNS_FILES:
        unread["dns/dnsmasq.d/"] = f"{len(entries)} entries in {DNS_DIR}: the first {MAX_DNS_FILES} are taken"
    return [(f"{DNS_DIR}/{entry.name}", f"dns/dnsmasq.d/{entry.name}") for entry in entries[:MAX_DNS_FILES]]


def host_file(root: pathlib.Path, host_path: str) -> tuple[bytes | None, str]:
    """A node file under `root`, redacted, and a note ("" when there is none). A symlink (resolv.conf often is one)
    is followed once, inside `root` (an absolute target is the host's path): the member says where it pointed."""
    local = root / host_path.lstrip("/")
    head = ""
    if local.is_symlink():
        target = os.readlink(local)
        head = f"# {host_path} is a symlink to {target}\n"
        local = root / target.lstrip("/") if target.startswith("/") else local.parent / target
        if not local.resolve().is_relative_to(root.resolve()):
            return redact.redact(head).encode(), f"a symlink to {target}, outside the host's root: not followed"
    if not local.exists() and not local.is_symlink():
        return None, f"no {host_path} on this node"
    try:
        text = safefile.read_text(local, safefile.HOST_FILE)
    except (OSError, safefile.Unfit) as exc:
        return None, redact.redact(f"{host_path}: not read: {exc}")
    return redact.redact(head + text).encode("utf-8"), ""


def host_backups(directory: pathlib.Path) -> dict[str, bytes]:
    """The originals snoreloc kept of the node files it changed, with their content decoded (no secret: DNS names
    and addresses; redacted all the same)."""
    members: dict[str, bytes] = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        text = _text(path, safefile.BACKUP)
        try:
            doc = json.loads(text or "")
            content = doc.get("content")
            doc["content"] = None if content is None else base64.b64decode(content).decode("utf-8", "replace")
        except (ValueError, TypeError, AttributeError):
            doc = {"unreadable": f"{path.name} is not a backup snoreloc wrote"}
        members[f"dns/host-backups/{path.name}"] = _json(doc)
    return members


def _dns_commands(unit: str, names: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`systemctl status` of dnsmasq, and `getent hosts` of the site's names (exit 2 when one does not resolve)."""
    commands = [("dns/dnsmasq-status.txt", ["systemctl", "status", unit, "--no-pager", "--lines", "0"])]
    return commands + ([("dns/getent-hosts.txt", ["getent", "hosts", *names])] if names else [])


def _command(runner: Any, argv: list[str], timeout: float) -> tuple[bytes, str]:
    """A command's output (bounded in time) and why it failed ("" when it exited 0)."""
    try:
        result = runner.run(argv, timeout=timeout, check=False)
    except Exception as exc:  # a missing program is a fact for the manifest
        why = redact.redact(f"{argv[0]} failed: {exc}")
        return (why + "\n").encode(), why
    why = "" if result.returncode == 0 else redact.redact(f"{' '.join(argv)} exited {result.returncode}")
    return redact.redact(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}").encode("utf-8"), why


def site_domain(state: pathlib.Path, used: pathlib.Path | None) -> str | None:
    """The site's domain, from the site-config the last run used (or the stick's copy): for `getent`."""
    documents = [document for document, _base in _site_config_documents(state / "site-config")]
    documents += _yaml_or_none(used) if used is not None else []
    for document in reversed(documents):
        spec = document.get("spec") if isinstance(document, dict) else None
        domain = spec.get("domain") if isinstance(spec, dict) else None
        if isinstance(domain, str) and domain:
            return domain
    return None


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
        run = view.facts(view.pick_run(journal.read(status))[1])  # the last run that did work, as `analyze` shows
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
    return journal_of(runner, unit, lines)[0]


def journal_of(runner: Any, unit: str, lines: int) -> tuple[bytes, str]:
    """This boot's last `lines` of `unit`'s journal (bounded in time), and why it could not be read ("" if it was)."""
    argv = ["journalctl", "-u", unit, "-b", "--no-pager", "-o", "short-iso", "-n", str(lines)]
    try:
        result = runner.run(argv, timeout=JOURNAL_TIMEOUT, check=False)
    except Exception as exc:  # a missing journal is a fact to report in the tarball, not a reason to fail
        why = redact.redact(f"journalctl failed: {exc}")
        return (why + "\n").encode("utf-8"), why
    why = "" if result.returncode == 0 else redact.redact(f"journalctl exited {result.returncode}")
    return redact.redact(result.stdout or result.stderr).encode("utf-8"), why


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
