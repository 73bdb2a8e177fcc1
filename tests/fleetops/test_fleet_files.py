"""The fleet's files, by class (issue 30): every fleet verb that reads a file refuses one that is not a bounded
regular file, every fleet verb that writes refuses a hostile output path, `render` stays inside its inputs'
directories and `--out`, and an inventory built to hurt the parser is refused with its line.

Generated as `tests/reliability/test_safe_files.py` does for the agent's verbs: a list of hostile inputs (`ATTACKS`)
times every fleet verb that reads a file (`READERS`), a list of hostile output paths times every fleet verb that
writes one (`WRITERS`), and a list of hostile inventories (`INVENTORIES`). Each case runs the real command line
and checks the exit code (a documented one, never 70), that it finished within 5 s, and that nothing changed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import socket
import stat
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fleetinputs import HEADER, site_row, write_template
from snoreloc_fleet.render import inventory, tree
from snoreloc_fleet.verbs import controller as command
from snoreloc_fleet.verbs import import_report as importreport

from reliability import harness
from snoreloc import errors, safefile
from snoreloc.cli import main as cli

USAGE, BAD, UNAVAILABLE, DENIED = 64, 65, 69, 77


@pytest.fixture
def ws(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fleet owner's repository: template/base.yaml (+ shared files), sites.csv, a kubeconfig, an out/ dir."""
    write_template(tmp_path / "template")
    (tmp_path / "sites.csv").write_text(f"{HEADER}\n{site_row(1)}\n{site_row(2)}\n")
    (tmp_path / "kubeconfig").write_text(harness.UNREACHABLE_KUBECONFIG)
    (tmp_path / "out").mkdir(mode=0o700)
    return tmp_path


def _bounded(call: Callable[[], int], seconds: float = 5.0) -> int:
    """`call`'s exit code; fails when it does not finish in `seconds` (a FIFO opened, /dev/zero read)."""
    outcome: list[int | BaseException] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"did not finish in {seconds} s"
    assert isinstance(outcome[0], int), repr(outcome[0])
    return outcome[0]


def _fleet(*argv: object) -> int:
    return cli.main(["fleet", *map(str, argv)])


def _snapshot(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


# --- every fleet verb that reads a file x every hostile file ---------------------------------------------------------


def _fifo(path: pathlib.Path, _limit: int) -> None:
    os.mkfifo(path)


def _zero(path: pathlib.Path, _limit: int) -> None:
    path.symlink_to("/dev/zero")


def _socket(path: pathlib.Path, _limit: int) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def _directory(path: pathlib.Path, _limit: int) -> None:
    path.mkdir()


def _huge(path: pathlib.Path, limit: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(limit + 1)  # sparse: costs no disk


ATTACKS: dict[str, Callable[[pathlib.Path, int], None]] = {
    "fifo": _fifo,
    "dev-zero-link": _zero,
    "socket": _socket,
    "directory": _directory,
    "past-the-limit": _huge,
}


@dataclass(frozen=True)
class Reader:
    """A fleet verb reading one file: where the hostile file goes, the argv (workspace, that path), its limit."""

    name: str
    place: str
    argv: Callable[[pathlib.Path, pathlib.Path], list[object]]
    limit: int
    codes: frozenset[int] = frozenset({BAD})  # the documented exit codes for an unfit file


def _render(template: object, inventory_: object, ws: pathlib.Path) -> list[object]:
    return ["render", "--template", template, "--inventory", inventory_, "--out", ws / "out"]


READERS = (
    Reader(
        "render --template", "hostile.yaml", lambda ws, p: _render(p, ws / "sites.csv", ws), safefile.SITE_FILE.limit
    ),
    Reader(
        "render --inventory",
        "hostile.csv",
        lambda ws, p: _render(ws / "template/base.yaml", p, ws),
        inventory.KIND.limit,
    ),
    Reader(
        "render {file:}",
        "template/pull-secret.json",
        lambda ws, _p: _render(ws / "template/base.yaml", ws / "sites.csv", ws),
        safefile.SITE_FILE.limit,
    ),
    Reader(
        "validate INVENTORY",
        "hostile.csv",
        lambda ws, p: ["validate", p, "--template", ws / "template/base.yaml", "--jobs", 1],
        inventory.KIND.limit,
        frozenset({BAD, USAGE}),  # a directory given as the target is a DIR holding no site-config: 64
    ),
    Reader(
        "validate --template",
        "hostile.yaml",
        lambda ws, p: ["validate", ws / "sites.csv", "--template", p, "--jobs", 1],
        safefile.SITE_FILE.limit,
    ),
    Reader(
        "validate DIR",
        "sites/store-0001/site-config.yaml",
        lambda ws, _p: ["validate", ws / "sites", "--jobs", 1],
        safefile.SITE_FILE.limit,
    ),
    Reader(
        "import-report",
        "hostile.json",
        lambda ws, p: ["import-report", p, "--kubeconfig", ws / "kubeconfig"],
        importreport.MAX_BYTES,
    ),
    Reader(
        "install --hub-ca",
        "hostile.crt",
        lambda ws, p: [
            "install",
            "--hub-url",
            "https://hub.example:6443",
            "--hub-ca",
            p,
            "--kubeconfig",
            ws / "kubeconfig",
        ],
        safefile.CA_BUNDLE.limit,
    ),
)


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_fleet_reader_refuses_what_is_not_a_bounded_regular_file(
    reader: Reader, attack: str, ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ws / reader.place
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    ATTACKS[attack](path, reader.limit)
    before = _snapshot(ws)
    code = _bounded(lambda: _fleet(*reader.argv(ws, path)))
    out, err = capsys.readouterr()
    assert code in reader.codes, out + err
    assert "Traceback" not in err and "report the problem" not in err
    assert path.name in out + err, out + err
    assert _snapshot(ws) == before
    assert not list((ws / "out").iterdir())  # render wrote nothing


def test_the_controllers_hub_files_are_read_bounded(tmp_path: pathlib.Path) -> None:
    """`fleet controller --hub-ca` and the mounted hub ConfigMap (links, as the kubelet mounts them) are read by
    the bounded reader: a FIFO is refused at once with 65, a link to a real file is read."""
    os.mkfifo(tmp_path / "fifo.crt")
    args = argparse.Namespace(hub_url="https://hub.example:6443", hub_ca=str(tmp_path / "fifo.crt"), hub_config=None)
    with pytest.raises(errors.ConfigError, match="FIFO"):  # opened non-blocking: refused at once, never waits
        command.hub_address(args, "https://own:6443", b"own")
    mounted = tmp_path / "config"
    (mounted / "..data").mkdir(parents=True)
    (mounted / "..data/url").write_text("https://hub.example:6443\n")
    (mounted / "url").symlink_to("..data/url")
    args = argparse.Namespace(hub_url=None, hub_ca=None, hub_config=str(mounted))
    assert command.hub_address(args, "https://own:6443", b"own") == ("https://hub.example:6443", b"own")


# --- every fleet verb that writes x every hostile output path --------------------------------------------------------


@dataclass(frozen=True)
class Writer:
    """A fleet verb writing a path: the argv with the output last, whether it is a directory, its inputs."""

    name: str
    argv: Callable[[pathlib.Path], list[object]]
    directory: bool
    inputs: tuple[str, ...]


WRITERS = (
    Writer(
        "render --out",
        lambda ws: [*_render(ws / "template/base.yaml", ws / "sites.csv", ws)[:-2], "--out"],
        True,
        ("sites.csv",),
    ),
    Writer(
        "render --sites",
        lambda ws: ["render", "--template", ws / "template/base.yaml", "--inventory", ws / "sites.csv", "--sites"],
        True,
        ("sites.csv",),
    ),
    Writer(
        "render --git",
        lambda ws: [
            "render",
            "--template",
            ws / "template/base.yaml",
            "--inventory",
            ws / "sites.csv",
            "--secret-store",
            "vault",
            "--git",
        ],
        True,
        ("sites.csv",),
    ),
    Writer(
        "validate --junit",
        lambda ws: ["validate", ws / "sites.csv", "--template", ws / "template/base.yaml", "--jobs", 1, "--junit"],
        False,
        ("sites.csv", "template/base.yaml"),
    ),
    Writer("report --html", lambda ws: ["report", "--kubeconfig", ws / "kubeconfig", "--html"], False, ("kubeconfig",)),
    Writer(
        "admin-kubeconfig --output",
        lambda ws: ["admin-kubeconfig", "store-1", "--kubeconfig", ws / "kubeconfig", "--output"],
        False,
        ("kubeconfig",),
    ),
    Writer(
        "admin-kubeconfig --kubeadmin-password",
        lambda ws: [
            "admin-kubeconfig",
            "store-1",
            "--kubeconfig",
            ws / "kubeconfig",
            "--print",
            "--kubeadmin-password",
        ],
        False,
        ("kubeconfig",),
    ),
)


def _link_to_victim(ws: pathlib.Path) -> pathlib.Path:
    (ws / "victim").write_text("keep me\n")
    (ws / "out/link").symlink_to(ws / "victim")
    return ws / "out/link"


def _dangling(ws: pathlib.Path) -> pathlib.Path:
    (ws / "out/dangling").symlink_to(ws / "would-be-created")
    return ws / "out/dangling"


def _fifo_out(ws: pathlib.Path) -> pathlib.Path:
    os.mkfifo(ws / "out/fifo")
    return ws / "out/fifo"


def _shared(ws: pathlib.Path) -> pathlib.Path:
    (ws / "shared").mkdir()
    (ws / "shared").chmod(0o777)  # others may write, not sticky: refused even for a path the person named
    return ws / "shared/x"


def _file_at(ws: pathlib.Path) -> pathlib.Path:
    (ws / "out/file").write_text("a file, not a directory\n")
    return ws / "out/file"


def _directory_at(ws: pathlib.Path) -> pathlib.Path:
    (ws / "out/dir").mkdir()
    return ws / "out/dir"


# attack -> (build, exit code for a file output, exit code for a directory output)
OUTPUT_ATTACKS: dict[str, tuple[Callable[[pathlib.Path], pathlib.Path], int | None, int | None]] = {
    "symlink": (_link_to_victim, DENIED, USAGE),  # a link to a file given as --out: a file, not a directory
    "dangling-symlink": (_dangling, DENIED, DENIED),
    "fifo": (_fifo_out, DENIED, USAGE),
    "shared-directory": (_shared, DENIED, DENIED),
    "a-file": (_file_at, None, USAGE),  # a file output replaces a regular file: that is its job
    "a-directory": (_directory_at, DENIED, None),  # a directory output takes a directory: that is its job
}


@pytest.mark.parametrize("writer", WRITERS, ids=[w.name for w in WRITERS])
@pytest.mark.parametrize("attack", sorted(OUTPUT_ATTACKS))
def test_every_fleet_writer_refuses_a_hostile_output_path(
    writer: Writer, attack: str, ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build, file_code, dir_code = OUTPUT_ATTACKS[attack]
    expected = dir_code if writer.directory else file_code
    if expected is None:
        pytest.skip(f"{attack} is what {writer.name} writes")
    target = build(ws)
    before = _snapshot(ws)
    code = _bounded(lambda: _fleet(*writer.argv(ws), target))
    err = capsys.readouterr().err
    assert code == expected, err
    assert "Traceback" not in err
    assert _snapshot(ws) == before
    assert not (ws / "would-be-created").exists()


@pytest.mark.parametrize("writer", [w for w in WRITERS if not w.directory], ids=lambda w: w.name)
@pytest.mark.parametrize("alias", ["itself", "hard-link"])
def test_a_fleet_writer_never_writes_over_its_input(
    writer: Writer, alias: str, ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in writer.inputs:
        target = ws / name
        if alias == "hard-link":
            target = ws / "out" / f"link-{target.name}"
            os.link(ws / name, target)
        before = _snapshot(ws)
        code = _bounded(lambda: _fleet(*writer.argv(ws), target))  # noqa: B023 (called at once)
        err = capsys.readouterr().err
        assert code == USAGE and "same file as the input" in err, err
        assert _snapshot(ws) == before


def test_validate_never_writes_its_junit_into_a_sites_directory(
    ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rendered sites are inputs with their files: a --junit path among them (over a key) is refused before any work."""
    assert _fleet(*_render(ws / "template/base.yaml", ws / "sites.csv", ws)) == 0
    key = ws / "out/store-0001/pull-secret.json"
    before = key.read_bytes()
    assert _fleet("validate", ws / "out", "--jobs", 1, "--junit", key) == USAGE
    assert key.read_bytes() == before and "inside a site's directory" in capsys.readouterr().err


def test_a_ci_workspace_takes_the_named_outputs_and_a_site_directory_gets_0700_0600(
    ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared-directory rule (docs/reliability.md): a directory the caller owns that only its group may also
    write (a CI runner's workspace, umask 002) takes --out, --sites and --junit; the files are 0600 / 0644."""
    workspace = ws / "ci"
    workspace.mkdir()
    workspace.chmod(0o2775)  # group-writable, setgid, not others-writable: GitLab's and Jenkins' workspaces
    assert _fleet(*_render(ws / "template/base.yaml", ws / "sites.csv", ws)[:-1], workspace / "out") == 0
    site = workspace / "out/store-0001"
    assert site.stat().st_mode & 0o777 == 0o700  # (setgid inherited from the workspace, as mkdir does)
    modes = {stat.S_IMODE(p.stat().st_mode) for p in site.rglob("*") if p.is_file()}
    dirs = {p.stat().st_mode & 0o777 for p in site.rglob("*") if p.is_dir()}
    assert modes == {0o600} and dirs == {0o700}, (modes, dirs)
    argv = ["validate", workspace / "out", "--jobs", 1, "--junit", workspace / "report.xml"]
    assert _fleet(*argv) == 0, capsys.readouterr().err
    assert stat.S_IMODE((workspace / "report.xml").stat().st_mode) == 0o644
    assert (
        _fleet(
            "render",
            "--template",
            ws / "template/base.yaml",
            "--inventory",
            ws / "sites.csv",
            "--sites",
            workspace / "hub",
        )
        == 0
    )
    assert stat.S_IMODE((workspace / "hub/secrets.yaml").stat().st_mode) == 0o600
    assert sorted(p.name for p in workspace.iterdir()) == ["hub", "out", "report.xml"]  # no temporary left


# --- render stays inside its inputs' directories and --out ----------------------------------------------------------


def _reference(ws: pathlib.Path, cell: str, *, files: str = "") -> pathlib.Path:
    """A template whose registry CA comes from the `ca` cell, and the inventory giving `cell` to store-0001."""
    write_template(ws / "template", "  trustedCAExtra: {file: '${ca}'}\n")
    rows = [site_row(1, files=files) + f",{cell}", site_row(2) + ",registry-ca.crt"]
    (ws / "sites.csv").write_text("\n".join([f"{HEADER},ca", *rows]) + "\n")
    return ws / "template/base.yaml"


REFERENCES: dict[str, Callable[[pathlib.Path], str]] = {
    "absolute": lambda ws: str(ws / "victim"),
    "dot-dot": lambda _ws: "../victim",
    "link-out": lambda ws: (ws / "template/out-link").symlink_to(ws / "victim") or "out-link",
    "dot-dot-in-files": lambda _ws: "../../victim",
}


@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_a_file_cell_may_name_only_a_file_inside(
    case: str, ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "victim").write_text("-----BEGIN CERTIFICATE-----\nsecret of another\n")
    (ws / "store-0001").mkdir()
    template = _reference(ws, "", files="store-0001")
    cell = REFERENCES[case](ws)
    _reference(ws, cell, files="store-0001")
    out = ws / "out"
    code = _fleet(*_render(template, ws / "sites.csv", ws))
    err = capsys.readouterr().err
    assert code == BAD, err
    assert "sites.csv line 2" in err and "column ca" in err and "inside" in err, err
    assert not list(out.iterdir()) and "secret of another" not in err


def test_a_link_inside_is_read_as_its_target_and_written_as_a_file(ws: pathlib.Path) -> None:
    template = _reference(ws, "inner-link")
    (ws / "template/inner-link").symlink_to("registry-ca.crt")
    assert _fleet(*_render(template, ws / "sites.csv", ws)) == 0
    copied = ws / "out/store-0001/inner-link"
    assert not copied.is_symlink() and copied.read_bytes() == (ws / "template/registry-ca.crt").read_bytes()


def test_a_link_planted_at_a_site_directory_is_refused(ws: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = ws / "elsewhere"
    elsewhere.mkdir()
    (ws / "out/store-0001").symlink_to(elsewhere)
    assert _fleet(*_render(ws / "template/base.yaml", ws / "sites.csv", ws)) == DENIED
    assert "symlink" in capsys.readouterr().err and not list(elsewhere.iterdir())


def test_a_rerender_replaces_its_own_sites_whole(ws: pathlib.Path) -> None:
    argv = _render(ws / "template/base.yaml", ws / "sites.csv", ws)
    assert _fleet(*argv) == 0
    (ws / "out/store-0001/stale.txt").write_text("from an earlier render\n")
    assert _fleet(*argv) == 0
    assert not (ws / "out/store-0001/stale.txt").exists()
    assert sorted(p.name for p in (ws / "out").iterdir()) == ["inventory-trace.json", "store-0001", "store-0002"]


# --- inventories built to hurt, or silently wrong ---------------------------------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)
)


def _yaml_sites(*rows: str) -> str:
    return "sites:\n" + "".join(rows)


SITE_1 = "- {name: store-0001, domain: sno.store-0001.example.com, address: 10.0.1.10, prefix: 24, gateway: 10.0.1.1}\n"


@dataclass(frozen=True)
class Hostile:
    """An inventory (its file name and bytes) and what the refusal must say (the line)."""

    name: str
    text: bytes
    says: str


INVENTORIES = (
    Hostile("billion-laughs.yaml", (BOMB + _yaml_sites(SITE_1)).encode(), "line"),
    Hostile(
        "duplicate-key.yaml",
        _yaml_sites("- name: store-0001\n  domain: a.example.com\n  domain: b.example.com\n").encode(),
        "duplicate key",
    ),
    Hostile(
        "duplicate-column.csv", f"{HEADER},domain\n{site_row(1)},x.example.com\n".encode(), "line 1, column domain"
    ),
    Hostile(
        "latin-1.csv",
        f"{HEADER}\n{site_row(1)}\n{site_row(2, domain='caf')}\n".encode().replace(b"caf,", b"caf\xe9,"),
        "line 3",
    ),
    Hostile("huge-cell.csv", f"{HEADER}\n{site_row(1, domain='x' * 10_000_000)}\n".encode(), "line 2"),
    Hostile(
        "huge-cell.yaml", _yaml_sites(SITE_1.replace("sno.store-0001.example.com", "x" * 10_000_000)).encode(), "line 2"
    ),
    Hostile("bad-name.csv", f"{HEADER}\n{site_row(1, name='Store_0001')}\n".encode(), "line 2, column name"),
    Hostile("too-long-name.csv", f"{HEADER}\n{site_row(1, name='s' * 64)}\n".encode(), "line 2, column name"),
)


@pytest.mark.parametrize("hostile", INVENTORIES, ids=[h.name for h in INVENTORIES])
@pytest.mark.parametrize("verb", ["render", "validate"])
def test_a_hostile_inventory_is_refused_with_its_line(
    hostile: Hostile, verb: str, ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ws / hostile.name
    path.write_bytes(hostile.text)
    template = ws / "template/base.yaml"
    argv = _render(template, path, ws) if verb == "render" else ["validate", path, "--template", template, "--jobs", 1]
    code = _bounded(lambda: _fleet(*argv))
    err = capsys.readouterr().err
    assert code == BAD, err
    assert hostile.says in err and "Traceback" not in err, err
    assert "offset" not in err
    assert not list((ws / "out").iterdir())


def test_a_label_the_hub_would_refuse_is_refused_at_render(
    ws: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ws / "template/base.yaml").read_text().replace("    region: emea\n", "    region: ${region}\n")
    (ws / "template/base.yaml").write_text(text)
    assert "${region}" in text
    rows = [site_row(1) + ",emea west", site_row(2) + ",3"]  # a cell of digits is still a label's text
    (ws / "sites.csv").write_text("\n".join([f"{HEADER},region", *rows]) + "\n")
    assert _fleet(*_render(ws / "template/base.yaml", ws / "sites.csv", ws)) == BAD
    err = capsys.readouterr().err
    assert "sites.csv line 2, column region" in err and "label value" in err and "line 3" not in err, err
    (ws / "sites.csv").write_text("\n".join([f"{HEADER},region", site_row(1) + ",emea-west", rows[1]]) + "\n")
    assert _fleet(*_render(ws / "template/base.yaml", ws / "sites.csv", ws)) == 0, capsys.readouterr().err
    assert "region: '3'" in (ws / "out/store-0002/site-config.yaml").read_text()


def test_two_files_on_one_secret_key_are_refused(ws: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`a/b.pem` and `a.b.pem` would both be the Secret key `a.b.pem`: one would silently replace the other."""
    (ws / "template/a").mkdir()
    (ws / "template/a/b.pem").write_text("one\n")
    (ws / "template/a.b.pem").write_text("two\n")
    write_template(ws / "template", "  extraFiles: [{file: a/b.pem}, {file: a.b.pem}]\n")
    code = _fleet(
        "render", "--template", ws / "template/base.yaml", "--inventory", ws / "sites.csv", "--sites", ws / "out/hub"
    )
    err = capsys.readouterr().err
    assert code == BAD and "'a.b.pem'" in err and "a/b.pem" in err, err
    assert not (ws / "out/hub").exists() or not list((ws / "out/hub").iterdir())


# --- JUnit XML stays well-formed ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "site", [b"store-\x07bell", b"store-\x1b[2Jclear", "store-caf\u00e9".encode("latin-1"), b"store-\xff\xfe"], ids=repr
)
def test_junit_parses_whatever_a_site_is_called(site: bytes, ws: pathlib.Path) -> None:
    """A control character or a name that is not UTF-8 (a lone surrogate once decoded) in a site's directory: the
    JUnit file is still XML a CI system parses, and names the site readably."""
    sites = ws / "sites"
    directory = os.path.join(os.fsencode(sites), site)
    os.makedirs(directory)
    with open(os.path.join(directory, b"site-config.yaml"), "wb") as handle:
        handle.write(b"apiVersion: nope\n")
    report = ws / "report.xml"
    assert _fleet("validate", sites, "--jobs", 1, "--junit", report) == BAD
    case = ET.parse(report).getroot().find("testsuite/testcase")
    assert case is not None and case.find("failure") is not None
    assert "\\x" in str(case.get("name")) or "\\u" in str(case.get("name")), case.get("name")


def test_tree_reads_back_no_unbounded_trace(tmp_path: pathlib.Path) -> None:
    """`fleet validate DIR` reads DIR's trace: a FIFO there is no trace (bounded), not a hang."""
    os.mkfifo(tmp_path / tree.TRACE)
    holder: list[object] = []
    _bounded(lambda: holder.append(tree.read_trace(tmp_path)) or 0)
    assert holder == [{}]
