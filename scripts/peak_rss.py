"""Run a command and print the peak of its process tree's summed resident memory.

Usage:
    .venv/bin/python scripts/peak_rss.py COMMAND [ARG ...]

``/usr/bin/time -v`` reports the largest single process; an ingest of a PDF runs a JVM beside
Python, so the tree is summed here: every 0.1 s, the RSS (``/proc/<pid>/status``, Linux only)
of the command and all its descendants. Prints one line: exit status, wall seconds, the
tree's peak and the command process's own peak, in GiB. A benchmark, not a test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

#: Seconds between samples: a JVM's heap grows over seconds, not milliseconds.
INTERVAL_S = 0.1


def _tree(pid: int) -> list[int]:
    """The process and its descendants (``/proc/<pid>/task/*/children``)."""
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += _tree(int(child))
    except OSError:
        pass  # the process ended between two reads
    return out


def _rss(pid: int) -> int:
    """Resident bytes of one process (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    start = time.perf_counter()
    proc = subprocess.Popen(argv)
    peak = own = 0
    while proc.poll() is None:
        peak = max(peak, sum(_rss(p) for p in _tree(proc.pid)))
        own = max(own, _rss(proc.pid))
        time.sleep(INTERVAL_S)
    gib = 2**30
    print(f"rc {proc.returncode} wall {time.perf_counter() - start:.1f} s peak tree RSS {peak / gib:.2f} GiB "
          f"(the command's own process {own / gib:.2f} GiB)")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
