#!/usr/bin/env python3
"""What `--explain`'s reader costs once the worst cases are behind it.

What it measures
----------------
One `rtlat timer --explain` run on one CPU (--cpu, default the last) of
--seconds (default 60), period 1 ms, SCHED_FIFO 80, beside a SCHED_FIFO 90
hog on the same CPU that busy-loops 2 ms every 100 ms for the first
--hog-seconds (default 10) only: its bursts make the run's worst samples,
and nothing after it comes near them. The reader thread (`rtlat-explain`)
reads the trace only while an interval waits to be explained, so once the
hog stops it should have next to nothing to do.

Its CPU time (the scheduler's count, /proc/PID/task/TID/schedstat) is read
every --every seconds; the script prints the reader's share of one CPU in
each stretch, and over the whole time after the hog stopped (from 5 s after
it, so that the last burst's intervals are explained):

    IDLE reader 0.031 % of one CPU from 15 s to 60 s (target <= 0.2 %)

and the result's `details.explain` (intervals taken, explained, pages
skipped, events lost).

How to run
----------
As root (tracefs, RT scheduling), on a release build:

    sudo benches/explain_idle.py
    sudo benches/explain_idle.py --seconds 120 --hog-seconds 20

Python 3.11 standard library only. Exit status: 0 after a complete run, 2 on
bad usage or a missing prerequisite, 1 if the run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def hog(cpu: int, seconds: float) -> subprocess.Popen:
    script = (
        "import os, time\n"
        "open('/proc/self/comm', 'w').write('bench-hog')\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(90))\n"
        f"stop = time.monotonic() + {seconds}\n"
        "while time.monotonic() < stop:\n"
        "    end = time.monotonic() + 0.002\n"
        "    while time.monotonic() < end:\n"
        "        pass\n"
        "    time.sleep(0.098)\n"
    )
    return subprocess.Popen([sys.executable, "-c", script])


def reader_ns(pid: int) -> int | None:
    """The CPU time of the run's rtlat-explain thread so far (ns)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            comm = Path(f"/proc/{pid}/task/{t}/comm").read_text().strip()
            if comm == "rtlat-explain":
                return int(Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlat", default=str(ROOT / "target/release/rtlat"))
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--hog-seconds", type=int, default=10)
    ap.add_argument("--every", type=int, default=5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("explain_idle: needs root (tracefs, real-time scheduling)", file=sys.stderr)
        return 2
    if not Path(a.rtlat).is_file():
        print(f"explain_idle: no {a.rtlat}: cargo build --release", file=sys.stderr)
        return 2
    if a.seconds < a.hog_seconds + 10:
        print("explain_idle: --seconds must be at least --hog-seconds + 10", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "run.json"
        h = hog(a.cpu, a.hog_seconds)
        run = subprocess.Popen(
            [a.rtlat, "timer", "--explain", "--cpus", str(a.cpu), "--priority", "80",
             "--duration", f"{a.seconds}s", "--quiet", "--json", str(out)],
            stdout=subprocess.DEVNULL,
        )
        t0 = time.monotonic()
        readings: list[tuple[float, int]] = []
        while run.poll() is None:
            ns = reader_ns(run.pid)
            if ns is not None:
                readings.append((time.monotonic() - t0, ns))
            time.sleep(a.every)
        h.wait()
        if run.returncode != 0:
            print(f"explain_idle: rtlat exited {run.returncode}", file=sys.stderr)
            return 1
        r = json.loads(out.read_text())
    for (t1, n1), (t2, n2) in zip(readings, readings[1:]):
        print(f"  {t1:5.1f}-{t2:5.1f} s: reader {100 * (n2 - n1) / ((t2 - t1) * 1e9):.3f} % of one CPU")
    after = [(t, n) for t, n in readings if t >= a.hog_seconds + 5]
    if len(after) < 2:
        print("explain_idle: too few readings after the hog stopped", file=sys.stderr)
        return 1
    (t1, n1), (t2, n2) = after[0], after[-1]
    share = 100 * (n2 - n1) / ((t2 - t1) * 1e9)
    print(f"IDLE reader {share:.3f} % of one CPU from {t1:.0f} s to {t2:.0f} s (target <= 0.2 %)")
    d = r["details"]["explain"]
    print("IDLE details.explain: " + ", ".join(
        f"{k} {d.get(k, 0)}" for k in ("intervals", "explained", "pages_skipped", "lost_events")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
