#!/usr/bin/env python3
"""What `rtlat watch --explain` costs the thread it watches, and its memory
over a long watch.

What it measures
----------------
Rounds of cyclictest runs on one CPU (--cpu, default the last), the
acceptance's command line `cyclictest -m -p80 -i1000 -t1 -a CPU -h2000 -q
-D S`, --pairs rounds of two, interleaved (round k starts with the (k mod
2)th kind):

    cyclictest alone                                            (plain)
    cyclictest with `rtlat watch --comm cyclictest --explain`   (watched)
        started a second before it and ending after it

From cyclictest's own histogram (1 us buckets, each read as its middle):
its average and its p99. It prints every run, then the means and the
watched/plain ratios, e.g.

    COST cyclictest avg plain 30.1 us watched 31.0 us ratio=1.03 (target <= 1.1)
    COST cyclictest p99 plain 60.5 us watched 63.5 us ratio=1.05 (target <= 1.1)

Then one long watch (--flat-seconds, default 600) beside a cyclictest of the
same length, whose VmRSS is read from /proc every --flat-every seconds
(default 60). The first reading is taken as the watch starts, before its
set-up; the growth that counts is from the third reading (its second
interval) on: memory flat means the last reading is that one, give or take
a few pages.

    FLAT VmRSS kB over 600 s: 11064 11832 11920 ... 11948 (growth 884 kB, 28 kB after the first 120 s)

How to run
----------
As root (tracefs, RT scheduling), with cyclictest (package rt-tests), after
`cargo build --release` (else --rtlat PATH):

    sudo benches/watch_cost.py                           # 3 pairs x 20 s, 10 min flat
    sudo benches/watch_cost.py --pairs 2 --seconds 10 --flat-seconds 120

The latency of a shared VM moves with its neighbours more than with a watch:
read the ratios beside the spread of the plain runs it prints. Python 3.11
standard library only. Exit status: 0 after a complete run, 2 on bad usage
or a missing prerequisite, 1 if a run failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def histogram(text: str) -> list[tuple[int, int]]:
    """cyclictest -h rows: (us, count), the first thread's column."""
    rows = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        w = line.split()
        if len(w) >= 2 and w[0].isdigit() and w[1].isdigit():
            rows.append((int(w[0]), int(w[1])))
    return rows


def avg_p99(rows: list[tuple[int, int]]) -> tuple[float, float]:
    """The average and the p99 of a histogram, each bucket at its middle (us)."""
    total = sum(c for _, c in rows)
    if total == 0:
        raise ValueError("an empty histogram")
    avg = sum((us + 0.5) * c for us, c in rows) / total
    want, seen = 0.99 * total, 0
    for us, c in rows:
        seen += c
        if seen >= want:
            return avg, us + 0.5
    return avg, rows[-1][0] + 0.5


def cyclictest(cpu: int, seconds: int) -> list[str]:
    return ["cyclictest", "-m", "-p80", "-i1000", "-t1", f"-a{cpu}", "-h2000", "-q", "-D", str(seconds)]


def watch(rtlat: str, seconds: int, out: Path) -> subprocess.Popen:
    args = [rtlat, "watch", "--comm", "cyclictest", "--explain", "--duration", f"{seconds}s"]
    return subprocess.Popen(args + ["--quiet", "--json", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run(kind: str, rtlat: str, cpu: int, seconds: int, tmp: Path) -> tuple[float, float]:
    w = watch(rtlat, seconds + 3, tmp / "w.json") if kind == "watched" else None
    if w:
        time.sleep(1)
    ct = subprocess.run(cyclictest(cpu, seconds), capture_output=True, text=True)
    if w:
        _, err = w.communicate()
        if w.returncode != 0:
            sys.exit(f"watch_cost: rtlat watch failed ({w.returncode}): {err.decode(errors='replace')}")
    if ct.returncode != 0:
        sys.exit(f"watch_cost: cyclictest failed: {ct.stderr}")
    return avg_p99(histogram(ct.stdout))


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def flat(rtlat: str, cpu: int, seconds: int, every: int, tmp: Path) -> list[int]:
    w = watch(rtlat, seconds + 3, tmp / "flat.json")
    time.sleep(1)
    ct = subprocess.Popen(cyclictest(cpu, seconds), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    readings = []
    start = time.monotonic()
    while ct.poll() is None:
        kb = rss_kb(w.pid)
        if kb is not None:
            readings.append(kb)
            print(f"  +{time.monotonic() - start:5.0f} s VmRSS {kb} kB", flush=True)
        deadline = start + len(readings) * every
        while ct.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
    kb = rss_kb(w.pid)
    if kb is not None:
        readings.append(kb)
    w.communicate()
    return readings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--flat-seconds", type=int, default=600)
    ap.add_argument("--flat-every", type=int, default=60)
    ap.add_argument("--rtlat", default=str(ROOT / "target/release/rtlat"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("watch_cost: run as root (tracefs, SCHED_FIFO)", file=sys.stderr)
        return 2
    for need in ("cyclictest", a.rtlat):
        if not shutil.which(need):
            print(f"watch_cost: {need} not found (rt-tests; cargo build --release or --rtlat)", file=sys.stderr)
            return 2
    kinds = ["plain", "watched"]
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for k in range(a.pairs):
            for kind in kinds[k % 2 :] + kinds[: k % 2]:
                avg, p99 = run(kind, a.rtlat, a.cpu, a.seconds, tmp)
                got[kind].append((avg, p99))
                print(f"run {k} {kind:8} avg {avg:.1f} us p99 {p99:.1f} us", flush=True)
        for i, name in enumerate(["avg", "p99"] if a.pairs > 0 else []):
            plain = statistics.mean(x[i] for x in got["plain"])
            watched = statistics.mean(x[i] for x in got["watched"])
            spread = max(x[i] for x in got["plain"]) - min(x[i] for x in got["plain"])
            print(
                f"COST cyclictest {name} plain {plain:.1f} us watched {watched:.1f} us "
                f"ratio={watched / plain:.2f} (target <= 1.1; plain runs spread {spread:.1f} us)"
            )
        if a.flat_seconds > 0:
            r = flat(a.rtlat, a.cpu, a.flat_seconds, a.flat_every, tmp)
            if not r:
                print("watch_cost: no VmRSS reading", file=sys.stderr)
                return 1
            settled = r[min(2, len(r) - 1)]
            print(
                f"FLAT VmRSS kB over {a.flat_seconds} s: {' '.join(map(str, r))} "
                f"(growth {r[-1] - r[0]} kB, {r[-1] - settled} kB after the first "
                f"{2 * a.flat_every} s)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
