"""Start one command and report its own wall time, CPU time and peak RSS: the measuring process must be small.

Linux carries a process's peak RSS across `exec`, so a child spawned straight from a benchmark that holds a
simulator (tens of MB) reports at least the benchmark's size. This launcher, a bare interpreter with nothing
imported, stands in between: the measured command's peak RSS starts from the launcher's few MB, and the launcher
writes what `os.wait4` says about it to a JSON file. Usage: `python -I -S launch.py RESULT.json COMMAND [ARG...]`.
"""

import json
import os
import sys
import time


def main() -> int:
    result, argv = sys.argv[1], sys.argv[2:]
    started = time.monotonic()
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    _pid, status, usage = os.wait4(pid, 0)
    finished = time.monotonic()
    code = os.waitstatus_to_exitcode(status)
    with open(result, "w") as handle:
        cpu_s = usage.ru_utime + usage.ru_stime
        json.dump(
            {"started": started, "finished": finished, "maxrss_kb": usage.ru_maxrss, "cpu_s": cpu_s, "exit_code": code},
            handle,
        )
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
