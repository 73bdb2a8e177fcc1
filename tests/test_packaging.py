"""A plain install of the agent: its wheel carries no simulator code, its `--help` offers no simulator verb, and
asking for one anyway gets the one-line "install snoreloc-sim" answer with exit 69 (never "internal error").

The wheel is built offline from a copy of the sources (no build isolation: setuptools and wheel come from the dev
extras) and unpacked into a directory beside links to the dev venv's third-party packages; a Python without
site-packages (`-S`) imports those alone, so the dev venv's editable snoreloc, `snoreloc_sim` and their entry points
are out of sight."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*build, "-q", "-w", str(work / "dist")], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (found,) = (work / "dist").glob("snoreloc-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    target = wheel.parent.parent / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)  # a wheel is a zip of what an install puts in site-packages
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():  # the dependencies, without any snoreloc
        if not entry.name.lower().startswith(("snoreloc", "__editable__", "_snoreloc")) and entry.suffix != ".pth":
            (target / entry.name).symlink_to(entry)
    return target


def _snoreloc(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys; sys.path.insert(0, {str(site)!r}); from snoreloc.cli import main; sys.exit(main.main())"
    argv_ = [sys.executable, "-S", "-c", code, *argv]
    return subprocess.run(argv_, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.allow_subprocess
def test_the_wheel_holds_no_simulator_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(name.startswith("snoreloc/cli/") for name in names)
    assert not [name for name in names if "snoreloc_sim" in name or "/demo" in name or "simulator" in name]


@pytest.mark.allow_subprocess
def test_plain_help_lists_no_simulator_verb(installed: Path) -> None:
    done = _snoreloc(installed, "--help")
    assert done.returncode == 0, done.stderr
    verbs = done.stdout.split("positional arguments:")[1].split("options:")[0]
    assert "status" in verbs and "validate" in verbs
    assert not [line for line in verbs.splitlines() if line.strip().split(" ")[0] in ("sim", "demo")]


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("verb", ["demo", "sim"])
def test_a_simulator_verb_on_a_plain_install_says_what_to_install(installed: Path, verb: str) -> None:
    done = _snoreloc(installed, verb)
    assert done.returncode == 69
    assert done.stderr.count("\n") == 1 and "install the snoreloc-sim package" in done.stderr
    assert "internal error" not in done.stderr
