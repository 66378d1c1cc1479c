#!/usr/bin/env python3
"""Does the tail forecast of a run's start bound the maximum of its rest?

What it measures
----------------
--runs (default 5) runs of `rtlat timer` on one CPU (--cpu, default the
last), period 1 ms, SCHED_FIFO 80, of --seconds (default 300), beside a
SCHED_FIFO 90 hog on the same CPU that every 50 ms busy-loops for a time
drawn at random between 0.2 and 2 ms (seeded per run): bursts of varying
length, so the run's tail has a shape to fit. `--no-hog` runs without it.

The result file is rewritten every second; the one on disk after --cut
seconds (default 30) is kept. Its forecast of the maximum of the rest of
the run (`rtlat report EARLY --within REST`) is then compared with the
maximum the rest of the run really had (the interval maxima of the final
file after the cut):

    run 1: forecast max of 4m30s 2010.9 us (1990.2 us to 2071.5 us), observed 2003.1 us: inside
    FORECAST 4 of 5 runs inside the interval (target >= 4)

A withheld forecast is counted as not inside, with its reason; an
interval printed as ending `beyond 1000 s` has no upper end. With
--explain the runs are made with `rtlat timer --explain`, and each line
ends with what the worst sample of the rest was made of (the hog, other
threads, preemption off in other tasks, the hypervisor), as `--explain`
splits it; this tells a miss that the hog made from one that stalls
beside it made.

How to run
----------
As root (real-time scheduling), on a release build:

    sudo benches/forecast_real.py
    sudo benches/forecast_real.py --runs 1 --seconds 120 --cut 20
    sudo benches/forecast_real.py --no-hog
    sudo benches/forecast_real.py --explain
    sudo benches/forecast_real.py --cpu 0 --keep /tmp/rtlat-forecast
    benches/forecast_real.py --evaluate /tmp/rtlat-forecast    # forecast the kept runs again

Python 3.11 standard library only. Exit status: 0 after complete runs, 2 on
bad usage or a missing prerequisite, 1 if a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A latency as rtlat prints it: `2010.9 us`, or `beyond 1000 s` past its range.
LAT = r"(\S+ us|beyond \S+ s)"
LINE = re.compile(
    rf"forecast (\S+): the maximum of (\S+): {LAT} \({LAT} to {LAT}\)"
)


def latency_us(text: str) -> float:
    """A latency of LINE in us; one beyond the printed range is infinite
    (it holds every maximum below it, and the bench asks no more)."""
    if text.startswith("beyond"):
        return float("inf")
    return float(text.removesuffix(" us"))


def hog(cpu: int, seconds: float, seed: int) -> subprocess.Popen:
    script = (
        "import os, random, time\n"
        "open('/proc/self/comm', 'w').write('bench-hog')\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(90))\n"
        f"rnd = random.Random({seed})\n"
        "mono = time.CLOCK_MONOTONIC\n"
        "now = time.clock_gettime_ns\n"
        "start = nxt = now(mono)\n"
        f"while now(mono) < start + {int(seconds * 1e9)}:\n"
        "    a = now(mono)\n"
        "    busy = int(rnd.uniform(0.2e6, 2e6))\n"
        "    while now(mono) < a + busy:\n"
        "        pass\n"
        "    nxt += 50_000_000\n"
        "    d = nxt - now(mono)\n"
        "    if d > 0:\n"
        "        time.sleep(d / 1e9)\n"
    )
    return subprocess.Popen([sys.executable, "-c", script])


def one_run(a: argparse.Namespace, n: int, d: Path) -> tuple[bool, str]:
    final = d / f"run{n}.json"
    early = d / f"run{n}-early.json"
    if not a.evaluate:
        measure(a, n, final, early)
    return evaluate(a, final, early)


def measure(a: argparse.Namespace, n: int, final: Path, early: Path) -> None:
    h = None if a.no_hog else hog(a.cpu, a.seconds + 5, 1000 + n)
    run = subprocess.Popen(
        [a.rtlat, "timer", "--cpus", str(a.cpu), "--priority", "80",
         "--duration", f"{a.seconds}s", "--quiet", "--json", str(final),
         "--save-every", "1s"] + (["--explain"] if a.explain else []),
        stdout=subprocess.DEVNULL,
    )
    time.sleep(a.cut + 0.5)
    shutil.copyfile(final, early)
    run.wait()
    if h is not None:
        h.kill()
        h.wait()
    if run.returncode not in (0, 1):
        raise RuntimeError(f"rtlat exited {run.returncode}")


def evaluate(a: argparse.Namespace, final: Path, early: Path) -> tuple[bool, str]:
    e = json.loads(early.read_text())
    cut_ns = e["duration_ns"]
    r = json.loads(final.read_text())
    rest_ns = r["duration_ns"] - cut_ns
    out = subprocess.run(
        [a.rtlat, "report", str(early), "--within", f"{rest_ns // 1_000_000}ms"],
        capture_output=True, text=True, check=True,
    ).stdout
    interval = r["threads"][0]["series"]["interval_ns"]
    rest = [p["max_ns"] for p in r["threads"][0]["series"]["points"]
            if p["t_ns"] >= cut_ns and p["samples"] > 0]
    seen = max(rest) / 1000 if rest else float("nan")
    cause = worst_cause(r, cut_ns, max(rest) if rest else 0)
    m = LINE.search(out)
    if not m:
        why = next((l for l in out.splitlines() if "WITHHELD" in l), "no forecast line")
        return False, f"withheld ({why.strip()}), observed {seen:.1f} us{cause}"
    low, high = (latency_us(m.group(i)) for i in (4, 5))
    inside = low <= seen <= high
    above = sum(1 for v in rest if v / 1000 > high)
    return inside, (
        f"forecast max of {m.group(2)} {shown(m.group(3))} ({shown(m.group(4))} to "
        f"{shown(m.group(5))}), "
        f"observed {seen:.1f} us (intervals of {interval // 1_000_000} ms): "
        f"{'inside' if inside else 'OUTSIDE'} ({above} of {len(rest)} intervals above it)"
        + f"; max of the first {cut_ns / 1e9:.0f} s {e['total']['max_ns'] / 1000:.1f} us"
        + f" ({e['total']['samples'] / (cut_ns / 1e9):.0f} samples/s, the whole run"
        + f" {r['total']['samples'] / (r['duration_ns'] / 1e9):.0f}){cause}"
    )


def shown(text: str) -> str:
    """A latency of LINE to 0.1 us, or as printed when beyond the range."""
    return text if text.startswith("beyond") else f"{latency_us(text):.1f} us"


def worst_cause(r: dict, cut_ns: int, worst_ns: int) -> str:
    """What `--explain` found in the rest's worst sample, its three largest parts."""
    found = [x for x in r.get("explained", [])
             if x["at_ns"] >= cut_ns and x["latency_ns"] == worst_ns]
    if not found:
        return ""
    parts = sorted(found[0]["parts"], key=lambda p: -p["ns"])[:3]
    return "; its worst: " + ", ".join(
        f"{p['kind']} {p['name']} {p['ns'] / 1000:.0f} us" for p in parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlat", default=str(ROOT / "target/release/rtlat"))
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--cut", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-hog", action="store_true")
    ap.add_argument("--explain", action="store_true",
                    help="run with --explain: name what the rest's worst sample was made of")
    ap.add_argument("--keep", metavar="DIR", help="keep the result files in DIR")
    ap.add_argument("--evaluate", metavar="DIR",
                    help="measure nothing: forecast again from the files --keep left in DIR")
    a = ap.parse_args()
    if os.geteuid() != 0 and not a.evaluate:
        print("forecast_real: needs root (real-time scheduling)", file=sys.stderr)
        return 2
    if not Path(a.rtlat).is_file():
        print(f"forecast_real: no {a.rtlat}: cargo build --release", file=sys.stderr)
        return 2
    if a.seconds < a.cut + 10:
        print("forecast_real: --seconds must be at least --cut + 10", file=sys.stderr)
        return 2
    hits = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(a.evaluate or a.keep or tmp)
        d.mkdir(parents=True, exist_ok=True)
        for n in range(1, a.runs + 1):
            try:
                inside, line = one_run(a, n, d)
            except (RuntimeError, subprocess.CalledProcessError, OSError, ValueError) as err:
                print(f"forecast_real: run {n}: {err}", file=sys.stderr)
                return 1
            hits += inside
            print(f"run {n}: {line}", flush=True)
    load = "no load" if a.no_hog else "hog 0.2-2 ms every 50 ms"
    print(f"FORECAST {hits} of {a.runs} runs inside the interval "
          f"({load}, first {a.cut} s of {a.seconds} s; target >= 4 of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
