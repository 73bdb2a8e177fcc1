"""What every benchmark shares: the machine description, child-process measurement, statistics and result files.

The machine these run on is shared and noisy, so each benchmark measures its ratios side by side in one run, and
every result file records the machine and the command that produced it: a number without both cannot be compared
with anything. Child processes are measured with `os.wait4`, which hands back that one child's own resource usage
(peak RSS included) without the cumulative blur of `RUSAGE_CHILDREN`, from inside a small launcher (`launch.py`)
because Linux counts the spawning process's memory into a child's peak RSS.
"""

from __future__ import annotations

import compileall
import contextlib
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LAUNCHER = Path(__file__).resolve().parent / "launch.py"


@dataclass(frozen=True)
class ChildRun:
    """One finished child process: wall time, peak resident set size, exit status, when it started, CPU time."""

    wall_s: float
    peak_rss_kb: int
    exit_code: int
    started: float = 0.0  # time.monotonic() of the spawn (the clock is system-wide: comparable across processes)
    cpu_s: float = 0.0  # user + system time of the command itself (its children included once they were waited for)


def python() -> str:
    """The interpreter the benchmarks run under (the project venv's when started as documented)."""
    return sys.executable


def snoreloc_argv() -> list[str]:
    """How a user starts snoreloc: the console script next to this interpreter, else the module."""
    script = Path(sys.executable).parent / "snoreloc"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "snoreloc.cli.main"]


def compile_bytecode(*packages: ModuleType) -> None:
    """Write the packages' `.pyc` files, as installing their wheels does: a source tree run under
    PYTHONDONTWRITEBYTECODE=1 would compile every module of them at every start of a measured command."""
    for package in packages:
        compileall.compile_dir(Path(str(package.__file__)).parent, quiet=1)


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
    stderr: Path | None = None,
) -> ChildRun:
    """Run `argv` to completion through `launch.py` (see there why), stdout discarded, stderr to a file if given.

    Wall time, CPU time and peak RSS are the command's own, as `os.wait4` reported them to the launcher.
    """
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-") as scratch:
        result = Path(scratch) / "child.json"
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(result), *argv]
        with open(stderr or os.devnull, "wb") as errors:
            process = subprocess.Popen(launcher, stdout=subprocess.DEVNULL, stderr=errors, env=env)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
                raise TimeoutError(f"{list(argv)!r} still running after {timeout:.0f} s") from None
        measured = json.loads(result.read_text())
    return ChildRun(
        wall_s=measured["finished"] - measured["started"],
        peak_rss_kb=int(measured["maxrss_kb"]),
        exit_code=int(measured["exit_code"]),
        started=float(measured["started"]),
        cpu_s=float(measured["cpu_s"]),
    )


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Stop the launcher and the command it started (its only child)."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    pids = children.read_text().split() if children.exists() else []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    process.kill()
    process.wait()


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, minimum, maximum and count of a sample (the median is the figure we quote)."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def machine() -> dict[str, Any]:
    """The machine a result was measured on: cores, CPU model, memory, Python, OS."""
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_mb": _memory_mb(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _memory_mb() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def command_line() -> str:
    """The command that produced this result, relative to the repository root when it can be."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = str(script)
    return " ".join([".venv/bin/python", shown, *sys.argv[1:]])


def document(name: str, results: Mapping[str, Any], targets: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark's result file: what ran, where, when, the numbers and each target met or not."""
    return {
        "benchmark": name,
        "command": command_line(),
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "results": dict(results),
        "targets": dict(targets),
    }


def write_result(name: str, payload: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Write `<directory>/<name>.json` (default bench/results) atomically; the path written."""
    target_dir = directory or RESULTS
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{name}.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    temporary.replace(path)
    return path


def publish(name: str, payload: Mapping[str, Any], directory: Path | None, report: str) -> Path:
    """Write the result file, then print the report and where the result went: every benchmark's last step."""
    path = write_result(name, payload, directory)
    print(report)
    print(f"wrote {path}")
    return path


def target(measured: float, limit: float, *, at_most: bool) -> dict[str, Any]:
    """A target and whether the measured figure meets it (`at_most`: measured <= limit, else >= limit)."""
    met = measured <= limit if at_most else measured >= limit
    return {"measured": round(measured, 4), "limit": limit, "comparison": "<=" if at_most else ">=", "met": met}


def exactly(measured: float, expected: float) -> dict[str, Any]:
    """A target that is a count to hit, neither more nor less (one kube-apiserver revision)."""
    return {"measured": measured, "limit": expected, "comparison": "==", "met": measured == expected}


def print_json(payload: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


def verdict_lines(payload: Mapping[str, Any]) -> list[str]:
    """One line per target: `name: measured <= limit: met|MISSED`, as every benchmark prints them."""
    return [
        f"{name}: {judged['measured']} {judged['comparison']} {judged['limit']}: {'met' if judged['met'] else 'MISSED'}"
        for name, judged in payload["targets"].items()
    ]
