"""Files, by class: every write goes through the safe writer, every read-back through the bounded reader.

Three kinds of test, each generated from a list the code itself keeps, so a new verb or a new file is covered
without a new test:

* **The source.** An AST scan of `src/snoreloc`, the fleet (`fleet/src/snoreloc_fleet`) and the simulator's demo
  (`sim/src/snoreloc_sim/demo`) finds every call that opens, reads, writes, renames, copies or makes a temporary
  file. Each must go through `snoreloc.safefile` (or `HostFS`, which is built on it) or be named in `ALLOWED`
  with the reason; a new `open()` or `write_text` anywhere else fails `test_no_file_access_bypasses_safefile`,
  and an allow-list entry nothing needs any more fails too. The rest of the simulator is out of the scan: it is
  the independent oracle the tests run against (import-linter forbids it the agent's modules, safefile included),
  it runs only in tests and the demo, and it writes only inside the private directory it is given.
* **Every verb in `snoreloc --help`.** Each verb module declares the options it writes (`OUTPUTS`) and the files it
  reads (`INPUTS`); an option that looks like an output path and is not declared fails. For every declared output
  the variants run through the real command line: a symlink, a FIFO or a directory at the path, the path being one
  of the verb's inputs (itself or a hard link), a directory others may write. Each is refused with its exit code
  and leaves every file as it was.
* **Every kind of file read back.** For every reader (`READERS`: the state files, backups, the page note, a step
  table, kubeconfigs and the files they name, a CA file, the site-config and its files, host files) the variants
  run: a FIFO (would hang), a symlink to `/dev/zero` (would never end), a socket, a directory, a file past its
  kind's limit (sparse). Each is refused, quickly, naming the file.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import os
import pathlib
import shutil
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from snoreloc import errors, safefile
from snoreloc.adapters import clock, command, fs
from snoreloc.cli import main
from snoreloc.engine import admin_kubeconfig, backups, bundle, journal, owner_access, report, view
from snoreloc.siteconfig import files, loader

from . import harness

SOURCE = pathlib.Path(main.__file__).resolve().parents[1]
REPOSITORY = SOURCE.parents[1]
# The trees scanned, each with the directory its module names start from.
SCANNED = (
    (SOURCE, SOURCE.parent),
    (REPOSITORY / "fleet/src/snoreloc_fleet", REPOSITORY / "fleet/src"),
    (REPOSITORY / "sim/src/snoreloc_sim/demo", REPOSITORY / "sim/src"),
)

# --- the source: no file access outside safefile --------------------------------------------------------------------

# Calls that open, read, write, rename or make temporary files (by the called name).
FILE_CALLS = frozenset(
    {
        "open",
        "fdopen",
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "mkstemp",
        "mkdtemp",
        "TemporaryDirectory",
        "NamedTemporaryFile",
        "TemporaryFile",
        "copyfile",
        "copy2",
        "copyfileobj",
        "copytree",
        "touch",
        "mkfifo",
        "rename",
        "addfile",
        "extractall",
    }
)
QUALIFIED_CALLS = frozenset(
    {"os.replace", "os.rename", "shutil.copy", "shutil.move", "os.link", "os.symlink", "ET.parse", "ElementTree.parse"}
)
# Receivers whose file methods are safe by construction: the safe module itself, and HostFS (built on it).
SAFE_RECEIVERS = frozenset({"safefile", "host", "self.host", "node.host", "self.host.fs"})  # HostFS reads via safefile

# (module, called name) -> why it may touch a file without safefile.
ALLOWED: dict[tuple[str, str], str] = {
    ("snoreloc.safefile", "open"): "the safe reader and writer themselves",
    ("snoreloc.safefile", "fdopen"): "the safe writer's temporary file",
    ("snoreloc.safefile", "mkstemp"): "the safe writer's temporary file (O_EXCL, 0600, same directory)",
    ("snoreloc.safefile", "os.replace"): "the safe writer's atomic rename",
    ("snoreloc.adapters.fs", "read_bytes"): "HostFS.read_text calls its own read_bytes (safefile.read)",
    ("snoreloc.adapters.fs", "write_bytes"): "HostFS.write_text calls its own write_bytes (safefile.write)",
    ("snoreloc.engine.lock", "open"): "the lock file: opened O_NOFOLLOW|O_NONBLOCK 0600 for flock, never written",
    ("snoreloc.logs", "open"): "snoreloc.log is appended line by line (O_APPEND|O_NOFOLLOW|O_NONBLOCK, 0600, "
    "refused unless a regular file of ours): an atomic replace per line would lose lines at a crash",
    ("snoreloc.logs", "fdopen"): "the same log file's stream",
    ("snoreloc.sanitize", "open"): "/dev/null, opened write-only to replace stdout's descriptor once its reader "
    "has gone (`analyze | head -1`): no file a person or a past run controls",
    ("snoreloc.factory.machineconfig", "read_text"): "package data of the wheel (importlib.resources), not a file "
    "a person or a past run controls",
    ("snoreloc.factory.media", "TemporaryDirectory"): "a private 0700 directory for the image tools; each image "
    "reaches its path through safefile.write",
    ("snoreloc.siteconfig.discovery", "mkdtemp"): "a private 0700 mount point under /run/snoreloc",
    ("snoreloc.siteconfig.discovery", "rename"): "the staged copy directory becomes the saved copy, both inside "
    "the trusted state directory",
    ("snoreloc.engine.bundle", "open"): "tarfile.open over a safefile.open_atomic handle (fileobj=)",
    ("snoreloc.engine.bundle", "addfile"): "a member from memory into that tarball",
    # The fleet (issue 30): package data, and private directories of its own whose files go through safefile.
    ("snoreloc_fleet.verbs.install", "read_text"): "deploy/ of the installed fleet distribution (package data)",
    ("snoreloc_fleet.verbs.make_media", "TemporaryDirectory"): "a private 0700 directory for the image tools; the tree "
    "in it is written by makemedia.write_dir (safefile)",
    ("snoreloc_fleet.hub.sitemedium", "TemporaryDirectory"): "a private 0700 directory where a Site's medium is laid "
    "out (by safefile) for the agent's validation, removed after",
    ("snoreloc_fleet.verbs.validate", "TemporaryDirectory"): "a private 0700 scratch directory an inventory is "
    "rendered into (tree.write_site, safefile) to be validated",
    ("snoreloc_fleet.render.tree", "mkdtemp"): "a site staged in a fresh private directory (0700, a name nobody could "
    "plant) inside --out; its files written by safefile",
    ("snoreloc_fleet.render.tree", "os.rename"): "the staged site directory renamed whole over its place (and an "
    "earlier render's moved aside into another fresh private directory)",
    ("snoreloc_fleet.render.gitops", "mkdtemp"): "a site of the Git tree staged in a fresh private directory inside "
    "--git (its files written by safefile), or a gone site's directory moved aside into one before it is removed",
    ("snoreloc_fleet.render.gitops", "os.rename"): "a gone site's directory (proven written by render --git) moved "
    "whole into that fresh private directory",
    ("snoreloc_fleet.controller.bmccycle", "TemporaryDirectory"): "a private 0700 directory for the BMC's CA file "
    "during one Redfish pass (requests verifies by path), written by safefile, removed after",
    ("snoreloc_fleet.render.gitdiff", "TemporaryDirectory"): "a private 0700 directory that `git archive` writes a "
    "revision's tree into, removed after",
    ("snoreloc_fleet.render.gitdiff", "open"): "that archive, written by git inside the private directory; "
    "its members read into memory with a size bound, never extracted",
    ("snoreloc_sim.demo.flow", "TemporaryDirectory"): "the demo's private 0700 working directory",
    ("snoreloc_sim.demo.bmc", "open"): "the emulated BMC's log, appended by the sushy-emulator child (its stdout) in "
    "the demo's own directory or a test's tmp_path: a stream, not a file a person or a past run controls",
    ("snoreloc_sim.demo.flow", "read_text"): "the demo's manifests (package data of the simulator distribution)",
    ("snoreloc_sim.demo.fleet", "TemporaryDirectory"): "a private 0700 directory for the simulators' files",
    ("snoreloc_sim.demo.fleet", "mkdtemp"): "the demo's private 0700 working directory (without --keep)",
}


@dataclass(frozen=True)
class Access:
    module: str
    name: str
    text: str
    line: int


def _called(call: ast.Call) -> tuple[str, str] | None:
    """(the called name, the call's text) of a file-touching call not made on a safe receiver, else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and ast.unparse(func.value) in SAFE_RECEIVERS:
        return None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name is None:
        return None
    text = ast.unparse(func)
    if text in QUALIFIED_CALLS:
        return text, text
    return (name, text) if name in FILE_CALLS else None


def file_accesses(scanned: tuple[tuple[pathlib.Path, pathlib.Path], ...] = SCANNED) -> Iterator[Access]:
    for tree, base in scanned:
        yield from _accesses(tree, base)


def _accesses(tree: pathlib.Path, base: pathlib.Path) -> Iterator[Access]:
    for path in sorted(tree.rglob("*.py")):
        module = ".".join(path.relative_to(base).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found = _called(node) if isinstance(node, ast.Call) else None
            if found is not None and isinstance(node, ast.Call):
                yield Access(module, found[0], found[1], node.lineno)


def test_no_file_access_bypasses_safefile() -> None:
    found = list(file_accesses())
    bypasses = [f"{a.module}:{a.line}: {a.text}(...)" for a in found if (a.module, a.name) not in ALLOWED]
    assert not bypasses, "use snoreloc.safefile (or name the exception in ALLOWED, with why):\n" + "\n".join(bypasses)
    stale = set(ALLOWED) - {(a.module, a.name) for a in found}
    assert not stale, f"allow-list entries nothing needs any more: {sorted(stale)}"


def test_the_scan_catches_a_new_bypass(tmp_path: pathlib.Path) -> None:
    """The control: each shape of bypass is found (an open, a Path method, a rename, a temporary file)."""
    code = (
        "open('x', 'w')\npathlib.Path('x').write_text('y')\nos.replace('a', 'b')\ntempfile.mkstemp()\n"
        "p.read_bytes()\nsafefile.write('x', 'y')\nself.host.write_text('/etc/x', 'y')\n"
    )
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)]
    found = [f for f in map(_called, calls) if f is not None]
    assert sorted(name for name, _text in found) == ["mkstemp", "open", "os.replace", "read_bytes", "write_text"]


@pytest.mark.parametrize("package", ["snoreloc_fleet/render", "snoreloc_sim/demo"])
def test_the_scan_catches_a_new_bypass_in_the_fleet_and_the_demo(package: str, tmp_path: pathlib.Path) -> None:
    """The control for the fleet's and the demo's trees: a module like theirs with a bypass fails the rule (the
    module allowed a temporary directory is not allowed an open), and a copy through a link is caught too."""
    module = tmp_path / package / "tree.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "import shutil, tempfile\nimport xml.etree.ElementTree as ET\n"
        "tempfile.mkdtemp()\nopen('x', 'w')\nshutil.copytree('a', 'b')\nET.parse('r.xml')\n"
    )
    found = list(file_accesses(((tmp_path / package, tmp_path),)))
    dotted = package.replace("/", ".") + ".tree"
    bypasses = sorted(a.name for a in found if (a.module, a.name) not in ALLOWED)
    expected = ["ET.parse", "copytree", "open"] + (["mkdtemp"] if package.startswith("snoreloc_sim") else [])
    assert {a.module for a in found} == {dotted} and bypasses == sorted(expected)


# --- every verb that writes: the output path's variants -------------------------------------------------------------

SITE = (SOURCE.parents[1] / "examples" / "minimal.yaml").read_text()  # the smallest valid site-config
KUBECONFIG = harness.UNREACHABLE_KUBECONFIG
OUTPUT_WORDS = ("output", "svg", "iso", "fat", "out")


def _verbs() -> list[tuple[str, object]]:
    return [(name, main._load(module)) for name, module in main.BUILTIN_COMMANDS]


def _path_options(module: object) -> dict[str, str]:
    """The options of a verb that take a path to write (by dest): free-text options named like an output."""
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    module.add_arguments(parser)  # type: ignore[attr-defined]
    found = {}
    for action in parser._actions:
        words = set(action.dest.split("_"))
        if action.choices is None and action.nargs != 0 and words & set(OUTPUT_WORDS):
            found[action.dest] = action.option_strings[-1] if action.option_strings else action.dest
    return found


@pytest.mark.parametrize(("verb", "module"), _verbs(), ids=[name for name, _ in _verbs()])
def test_every_verb_declares_what_it_writes_and_reads(verb: str, module: object) -> None:
    outputs = getattr(module, "OUTPUTS", None)
    assert outputs is not None and getattr(module, "INPUTS", None) is not None, f"{verb}: declare OUTPUTS and INPUTS"
    undeclared = set(_path_options(module)) - set(outputs)
    assert not undeclared, f"{verb}: options that write a path must be in OUTPUTS: {sorted(undeclared)}"


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """A state directory with a finished run's journal, a site-config, a kubeconfig and a CA file."""
    state = tmp_path / "root/var/lib/snoreloc"
    state.mkdir(parents=True, mode=0o700)
    run = journal.Journal(state / "status.json", clock.SystemClock())
    run.begin_run(site_name="store-042", site_fingerprint="fp", order=["preflight"], mode="cluster")
    (tmp_path / "site-config.yaml").write_text(SITE)
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "out").mkdir(mode=0o700)
    owner_access.init(tmp_path / "owner", name="store-042", now=dt.datetime.now(dt.UTC))  # the owner's admin files
    return tmp_path


# The least argv that reaches each writing verb's output check, with {ws} the workspace; a new verb that writes
# must be added here (the test says so).
VERB_ARGS: dict[str, list[str]] = {
    "analyze": ["--root", "{ws}/root"],
    "collect-logs": ["--root", "{ws}/root"],
    "kubeconfig": [
        "--site-config",
        "{ws}/site-config.yaml",
        "--from",
        "{ws}/kubeconfig",
        "--kubeconfig",
        "{ws}/kubeconfig",
        "--ca-file",
        "{ws}/ca.pem",
        "--address",
        "127.0.0.1:9",
    ],
    "make-media": ["{ws}/site-config.yaml"],
    "admin-access": [
        "kubeconfig",
        "--dir",
        "{ws}/owner",
        "--server",
        "https://api.store-042.example.com:6443",
        "--api-ca",
        "{ws}/owner/admin-ca.crt",
    ],
}


def _writing_verbs() -> list[tuple[str, str, str]]:
    cases = []
    for verb, module in _verbs():
        for dest in getattr(module, "OUTPUTS", ()):
            cases.append((verb, dest, _path_options(module).get(dest, f"--{dest}")))
    return cases


def _inputs_of(verb: str, ws: pathlib.Path) -> list[pathlib.Path]:
    """The files a verb's argv reads: every workspace file named in it."""
    named = dict.fromkeys(pathlib.Path(arg.format(ws=ws)) for arg in VERB_ARGS[verb])
    return [path for path in named if path.is_file()] or [ws / "root/var/lib/snoreloc/status.json"]


def _snapshot(ws: pathlib.Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in ws.rglob("*") if p.is_file() and not p.is_symlink()}


def _run(verb: str, option: str, target: pathlib.Path, ws: pathlib.Path) -> int:
    argv = [verb, *(arg.format(ws=ws) for arg in VERB_ARGS[verb]), option, str(target)]
    return main.main(argv)


def _symlink(ws: pathlib.Path) -> pathlib.Path:
    victim = ws / "victim"
    victim.write_text("keep me\n")
    (ws / "out/link").symlink_to(victim)
    return ws / "out/link"


def _dangling(ws: pathlib.Path) -> pathlib.Path:
    (ws / "out/dangling").symlink_to(ws / "would-be-created")
    return ws / "out/dangling"


def _fifo(ws: pathlib.Path) -> pathlib.Path:
    os.mkfifo(ws / "out/fifo")
    return ws / "out/fifo"


def _directory(ws: pathlib.Path) -> pathlib.Path:
    (ws / "out/dir").mkdir()
    return ws / "out/dir"


def _shared_directory(ws: pathlib.Path) -> pathlib.Path:
    (ws / "shared").mkdir()
    (ws / "shared").chmod(0o777)  # others may write, and not sticky: they could swap the file after we write it
    return ws / "shared/out"


OUTPUT_ATTACKS: dict[str, tuple[Callable[[pathlib.Path], pathlib.Path], int]] = {
    "symlink": (_symlink, errors.ExitCode.NO_PERMISSION),
    "dangling-symlink": (_dangling, errors.ExitCode.NO_PERMISSION),
    "fifo": (_fifo, errors.ExitCode.NO_PERMISSION),
    "directory": (_directory, errors.ExitCode.NO_PERMISSION),
    "shared-directory": (_shared_directory, errors.ExitCode.NO_PERMISSION),
}


@pytest.mark.parametrize(("verb", "dest", "option"), _writing_verbs())
@pytest.mark.parametrize("attack", sorted(OUTPUT_ATTACKS))
def test_a_verb_refuses_a_hostile_output_path(
    verb: str, dest: str, option: str, attack: str, workspace: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verb in VERB_ARGS, f"{verb} writes {option}: add its least argv to VERB_ARGS"
    build, expected = OUTPUT_ATTACKS[attack]
    target = build(workspace)
    before = _snapshot(workspace)
    code = _run(verb, option, target, workspace)
    err = capsys.readouterr().err
    assert code == expected, err
    assert "refusing" in err and "Traceback" not in err
    assert _snapshot(workspace) == before
    assert not (workspace / "would-be-created").exists()


@pytest.mark.parametrize(("verb", "dest", "option"), _writing_verbs())
@pytest.mark.parametrize("alias", ["itself", "hard-link"])
def test_a_verb_never_writes_over_its_input(
    verb: str, dest: str, option: str, alias: str, workspace: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for source in _inputs_of(verb, workspace):
        target = source
        if alias == "hard-link":
            target = workspace / "out" / f"link-{source.name}"
            os.link(source, target)
        before = _snapshot(workspace)
        code = _run(verb, option, target, workspace)
        err = capsys.readouterr().err
        assert code == errors.ExitCode.USAGE, f"{verb} {option} {target}: {err}"
        assert "same file as the input" in err
        assert _snapshot(workspace) == before


def test_analyze_writes_its_picture_0600_and_never_over_status(
    workspace: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The positive control of the variants above, and the input the command line does not name (status.json)."""
    out = workspace / "out/timeline.svg"
    assert main.main(["analyze", "--root", f"{workspace}/root", "--svg", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text().startswith("<svg")
    status = workspace / "root/var/lib/snoreloc/status.json"
    before = status.read_bytes()
    assert main.main(["analyze", "--root", f"{workspace}/root", "--svg", str(status)]) == errors.ExitCode.USAGE
    assert status.read_bytes() == before and "same file as the input" in capsys.readouterr().err


# Where each writing verb's successful write is shown to be 0600: here (with the extra argv it needs), or the test
# that does it against a cluster. A new output must be added to one or the other.
WRITES_CHECKED_ELSEWHERE = {("kubeconfig", "output"): "tests/cluster/test_kubeconfig.py (needs a served API)"}


@pytest.mark.allow_subprocess  # make-media runs the image tools; collect-logs runs journalctl (absent here is fine)
@pytest.mark.parametrize(("verb", "dest", "option"), _writing_verbs())
def test_every_writing_verb_creates_its_output_0600(
    verb: str, dest: str, option: str, workspace: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if (verb, dest) in WRITES_CHECKED_ELSEWHERE:
        pytest.skip(f"shown in {WRITES_CHECKED_ELSEWHERE[(verb, dest)]}")
    if verb == "make-media" and not all(shutil.which(t) for t in ("genisoimage", "mkfs.vfat", "mcopy")):
        pytest.skip("needs genisoimage, mkfs.vfat and mcopy")
    target = workspace / "out" / f"written-{dest}"
    code = _run(verb, option, target, workspace)
    assert code == 0, capsys.readouterr().err
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o600 and stat.S_ISREG(os.lstat(target).st_mode)


def test_a_sticky_shared_directory_takes_a_named_output(workspace: pathlib.Path) -> None:
    """/tmp-like: others may write the directory, but only the owner may rename or remove the file."""
    shared = workspace / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    assert main.main(["analyze", "--root", f"{workspace}/root", "--svg", str(shared / "t.svg")]) == 0
    assert stat.S_IMODE((shared / "t.svg").stat().st_mode) == 0o600
    with pytest.raises(errors.PermissionDenied, match="group or others may write"):
        safefile.write(shared / "state.json", "{}")  # the agent's own files never go there


# The shared-directory rule (issue 30): (directory mode, owned by the caller, a path the person named) -> accepted.
SHARED_DIRECTORIES = [
    (0o700, True, False, True),
    (0o770, True, True, True),  # a CI workspace (umask 002): the caller's, only its group may also write
    (0o2775, True, True, True),  # the same with setgid, as GitLab and Jenkins make them
    (0o770, True, False, False),  # the agent's own files never go there: only a path the person named
    (0o770, False, True, False),  # someone else's group-writable directory: they could swap the file
    (0o777, True, True, False),  # others may write, not sticky: anyone could swap the file
    (0o1777, True, True, True),  # /tmp-like: sticky
    (0o1777, True, False, False),
]


@pytest.mark.parametrize(("mode", "mine", "named", "accepted"), SHARED_DIRECTORIES, ids=str)
def test_the_shared_directory_rule(mode: int, mine: bool, named: bool, accepted: bool, tmp_path: pathlib.Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    if not mine:
        if os.geteuid() != 0:
            pytest.skip("giving the directory to another user needs root")
        os.chown(directory, 4242, 4242)
    directory.chmod(mode)
    shared = safefile.NAMED_OUTPUT if named else None
    if accepted:
        safefile.write(directory / "out", "x", shared_dir=shared)
        assert stat.S_IMODE((directory / "out").stat().st_mode) == 0o600
        return
    with pytest.raises(errors.PermissionDenied, match="group or others may write"):
        safefile.write(directory / "out", "x", shared_dir=shared)
    with pytest.raises(errors.PermissionDenied):
        safefile.check_directory(directory, shared_dir=shared)
    assert os.listdir(directory) == []


def test_create_makes_a_new_private_file_and_never_follows(tmp_path: pathlib.Path) -> None:
    safefile.create(tmp_path / "new", b"data", mode=0o600)
    assert (tmp_path / "new").read_bytes() == b"data" and stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o600
    (tmp_path / "victim").write_text("keep")
    (tmp_path / "link").symlink_to(tmp_path / "victim")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for existing in ("new", "link", "dangling"):
        with pytest.raises(errors.PermissionDenied):
            safefile.create(tmp_path / existing, b"other")
    assert (tmp_path / "victim").read_text() == "keep" and not (tmp_path / "nowhere").exists()
    assert (tmp_path / "new").read_bytes() == b"data"


# --- the safe writer itself: atomic, 0600, nothing left behind ------------------------------------------------------


def test_the_writer_is_atomic_private_and_leaves_nothing_on_failure(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "file"
    safefile.write(target, "old")
    with pytest.raises(RuntimeError), safefile.open_atomic(target) as handle:
        handle.write(b"half")
        raise RuntimeError("cut off")
    assert target.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["file"]
    safefile.write(target, "public", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    safefile.write(target, "secret")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_link_planted_while_writing_is_replaced_not_followed(tmp_path: pathlib.Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "file"
    with pytest.raises(errors.PermissionDenied), safefile.open_atomic(target) as handle:
        handle.write(b"ours")
        target.symlink_to(victim)  # the race: a link appears between the first check and the rename
    assert victim.read_text() == "keep" and sorted(os.listdir(tmp_path)) == ["file", "victim"]


# --- every kind of file read back: FIFO, /dev/zero, socket, directory, past the limit -------------------------------


def _fifo_at(path: pathlib.Path) -> None:
    os.mkfifo(path)


def _zero_at(path: pathlib.Path) -> None:
    path.symlink_to("/dev/zero")


def _socket_at(path: pathlib.Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def _directory_at(path: pathlib.Path) -> None:
    path.mkdir()


def _huge_at(limit: int) -> Callable[[pathlib.Path], None]:
    def build(path: pathlib.Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(limit + 1)  # sparse: costs no disk

    return build


def _read_state(path: pathlib.Path) -> object:
    return journal.read(path)


def _read_report(path: pathlib.Path) -> object:
    return report.read(path)


def _read_backup(path: pathlib.Path) -> object:
    store = backups.Store(path.parent, clock.SystemClock())
    store.entries()
    return store.usable()


def _read_note(path: pathlib.Path) -> object:
    address = view.page_address(path.parent)
    if address:
        raise AssertionError(f"a hostile page note was read: {address[:40]!r}")
    raise errors.UnavailableError(f"{path}: not read")  # page_address shrugs: an unfit note is no address


def _read_table(path: pathlib.Path) -> object:
    return journal._read_table(path)


def _read_kubeconfig(path: pathlib.Path) -> object:
    return admin_kubeconfig._read_kubeconfig(path)


def _read_site_config(path: pathlib.Path) -> object:
    report_ = loader.validate(str(path))
    if not report_.valid:
        raise errors.ConfigError(f"{path}: {report_.problems[0].render()}")
    return report_


def _read_site_file(path: pathlib.Path) -> object:
    try:
        return files.read(str(path.parent), path.name)
    except files.RefError as exc:
        raise errors.ConfigError(str(exc)) from None


def _read_host_file(path: pathlib.Path) -> object:
    return fs.HostFS(path.parent).read_text(path.name)


@dataclass(frozen=True)
class Reader:
    """One reader of a file a person or a past run controls: where the file goes, the read, its kind."""

    name: str
    read: Callable[[pathlib.Path], object]
    kind: safefile.Kind
    follows_links: bool = False  # reads through a symlink (its target is judged)


READERS = (
    Reader("status.json", _read_state, safefile.STATE),
    Reader("report.json", _read_report, safefile.STATE),
    Reader("backups/x.json", _read_backup, safefile.BACKUP),
    Reader("page.url", _read_note, safefile.NOTE),
    Reader("routes.jsonl", _read_table, safefile.TABLE),
    Reader("kubeconfig", _read_kubeconfig, safefile.KUBECONFIG),
    Reader("site-config.yaml", _read_site_config, safefile.SITE_FILE, follows_links=True),
    Reader("referenced.pem", _read_site_file, safefile.SITE_FILE, follows_links=True),  # only inside its directory
    Reader("etc-file.conf", _read_host_file, safefile.HOST_FILE, follows_links=True),
)
READ_ATTACKS: dict[str, Callable[[Reader], Callable[[pathlib.Path], None]]] = {
    "fifo": lambda _r: _fifo_at,
    "dev-zero-link": lambda _r: _zero_at,
    "socket": lambda _r: _socket_at,
    "directory": lambda _r: _directory_at,
    "past-the-limit": lambda r: _huge_at(r.kind.limit),
}


def _bounded(call: Callable[[], object], seconds: float = 5.0) -> BaseException | None:
    """Run `call` in a thread; the exception it raised, None when it returned; fails when it hangs."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"the read did not finish in {seconds} s (a FIFO or an endless device was opened)"
    return outcome[0]


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
@pytest.mark.parametrize("attack", sorted(READ_ATTACKS))
def test_every_reader_refuses_what_is_not_a_bounded_regular_file(
    reader: Reader, attack: str, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / reader.name
    path.parent.mkdir(parents=True, exist_ok=True)
    READ_ATTACKS[attack](reader)(path)
    raised = _bounded(lambda: reader.read(path))
    assert isinstance(raised, errors.SnorelocError | safefile.Unfit | OSError), repr(raised)
    assert path.name in str(raised) or isinstance(raised, safefile.Unfit), str(raised)


@pytest.mark.parametrize("reader", [r for r in READERS if not r.follows_links], ids=lambda r: r.name)
def test_readers_of_state_do_not_follow_a_symlink(reader: Reader, tmp_path: pathlib.Path) -> None:
    """A path in the state directory or one the journal names is read only if it is the regular file it claims."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("{}\n")
    path = tmp_path / reader.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(elsewhere)
    raised = _bounded(lambda: reader.read(path))
    assert raised is not None and ("symlink" in str(raised) or "not read" in str(raised)), repr(raised)


# --- collect-logs: what the journal names, and a log of any shape ---------------------------------------------------

CLIENT_KEY = "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCmNsaWVudC1rZXktYnl0ZXMK"


def _state_naming(tmp_path: pathlib.Path, named: pathlib.Path) -> pathlib.Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    run = journal.Journal(state / "status.json", clock.SystemClock())
    run.begin_run(site_name="s", site_fingerprint="f", order=["preflight"], mode="cluster", site_path=str(named))
    return state


def test_collect_logs_takes_from_the_journal_only_a_site_config(tmp_path: pathlib.Path) -> None:
    """status.json edited to name a kubeconfig: its client key must not reach the bundle, masked or not."""
    kubeconfig = tmp_path / "admin.kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("token: not-used-here", f"client-key-data: {CLIENT_KEY}"))
    state = _state_naming(tmp_path, kubeconfig)
    members = bundle.collect(state, command.FakeRunner().on(["journalctl"], command.Result(0, "")))
    assert not [name for name in members if name.startswith("site-config/used")]
    assert not any(CLIENT_KEY.encode() in data for data in members.values())


@pytest.mark.parametrize("attack", ["fifo", "dev-zero-link", "past-the-limit"])
def test_collect_logs_reads_a_log_of_any_shape_in_bounds(attack: str, tmp_path: pathlib.Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    log = state / "snoreloc.log"
    {"fifo": _fifo_at, "dev-zero-link": _zero_at, "past-the-limit": _huge_at(safefile.LOG.limit + 4096)}[attack](log)
    runner = command.FakeRunner().on(["journalctl"], command.Result(0, ""))
    members: dict[str, bytes] = {}
    raised = _bounded(lambda: members.update(bundle.collect(state, runner)), seconds=30.0)
    assert raised is None, repr(raised)
    shown = members.get("snoreloc.log", b"")
    assert len(shown) <= safefile.LOG.limit + 100
    if attack == "past-the-limit":
        assert shown.startswith(b"# the first 4097 bytes are left out")  # limit + 4096, + the 1 `_huge_at` adds
    else:
        assert shown.startswith(b"# not included: it is")


def test_a_file_replaced_by_an_atomic_writer_while_read_is_read_whole(tmp_path: pathlib.Path) -> None:
    """The page and `status` read status.json while the run replaces it (write to a temp file, rename): every read
    gets one whole version, never "replaced while being opened" (seen as a 500 on the page's /metrics)."""
    target = tmp_path / "status.json"
    versions = [json.dumps({"n": n, "pad": "x" * 4096}) for n in range(2)]
    safefile.write(target, versions[0])
    stop = threading.Event()

    def writer() -> None:
        turn = 0
        while not stop.is_set():
            turn += 1
            safefile.write(target, versions[turn % 2])

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        reads = [safefile.read_text(target, safefile.STATE) for _ in range(3000)]
    finally:
        stop.set()
        thread.join(timeout=10)
    assert set(reads) <= set(versions)
