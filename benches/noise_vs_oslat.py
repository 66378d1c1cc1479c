#!/usr/bin/env python3
"""Compare `rtlat noise` with oslat on the same CPU and duration, on this machine.

What it measures
----------------
Interleaved pairs (default 3) of one oslat run and one rtlat noise run, each
on the same CPU (default 1) for the same length (default 10 s), and per run:

* the shortest loop gap (min): oslat truncates each gap to whole us and
  prints that plus one (a gap of 14 ns is "1 us"); rtlat keeps ns, shown here
  also the oslat way (ns // 1000 + 1), the only resolution both share;
* the median loop gap: oslat's bucket holding the middle sample, rtlat's p50
  (ns, and the oslat way);
* the longest gap (max): of the same order, not equal (one run's max is the
  machine's noise at that moment);
* loops per second: samples / duration. Both loops take their whole CPU, so
  this is the CPU overhead of the measuring loop inverted: the cost of one
  loop (clock read and bookkeeping) is 1e9 / loops-per-second ns. rtlat's
  must be no lower than oslat's (its clock read no dearer).

Equivalent settings
-------------------
oslat -D <seconds> -c <cpu> [-f <prio>]
    one busy loop pinned to <cpu>, its main thread on CPU 0, SCHED_OTHER by
    default (-f: SCHED_FIFO at <prio>); rdtsc on x86 (calibrated against
    the wall clock), 1 us buckets; it pre-heats the CPU for 1 s first.
rtlat noise --cpus <cpu> --duration <seconds>s [--policy other | --priority <prio>] --quiet --json <tmp>
    the same loop: the TSC where invariant, gaps in ns in rtlat's lossless
    histogram; --dma-latency 0 and mlockall as rtlat's default (oslat
    locks its memory too).

Interleaving: pair k runs oslat first when k is even, rtlat first when odd.

How to run
----------
As root with oslat installed (apt-get install rt-tests), on a machine with at
least two CPUs:

    sudo benches/noise_vs_oslat.py                       # 3 pairs x 10 s (~1 min)
    sudo benches/noise_vs_oslat.py --pairs 5 --seconds 30 --fifo 80 --json cmp.json
    sudo benches/noise_vs_oslat.py --fifo 80 --explain   # rtlat with --explain
    sudo benches/noise_vs_oslat.py --counter monotonic     # rtlat reading clock_gettime

--rtlat defaults to target/release/rtlat (built with cargo build --release if
missing). Python 3.11 standard library only. Exit status: 0 after a complete
comparison, 2 on bad usage or a missing prerequisite, 1 if a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RTLAT = REPO_ROOT / "target" / "release" / "rtlat"


def die(msg: str, code: int = 2) -> NoReturn:
    print(f"noise_vs_oslat: error: {msg}", file=sys.stderr)
    sys.exit(code)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Compare `rtlat noise` with oslat (interleaved pairs).")
    ap.add_argument("--rtlat", type=Path, default=None, help=f"rtlat binary [default: {DEFAULT_RTLAT}]")
    ap.add_argument("--pairs", type=positive_int, default=3, help="interleaved pairs [default: 3]")
    ap.add_argument("--seconds", type=positive_int, default=10, help="length of each run [default: 10]")
    ap.add_argument("--cpu", type=int, default=1, help="the measured CPU [default: 1]")
    ap.add_argument("--fifo", type=int, default=None, metavar="PRIO",
                    help="both loops at SCHED_FIFO PRIO [default: SCHED_OTHER]")
    ap.add_argument("--counter", choices=("auto", "tsc", "monotonic"), default="auto",
                    help="the clock rtlat's loop reads (rtlat noise --counter) [default: auto]")
    ap.add_argument("--explain", action="store_true",
                    help="rtlat noise --explain: every gap above the threshold handed to the explain reader")
    ap.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write every number to OUT")
    return ap.parse_args()


def resolve_rtlat(arg: Path | None) -> Path:
    if arg is not None:
        if not (arg.is_file() and os.access(arg, os.X_OK)):
            die(f"--rtlat {arg}: not an executable file")
        return arg.resolve()
    if not DEFAULT_RTLAT.is_file():
        cargo = shutil.which("cargo") or die("target/release/rtlat is missing and cargo is not in PATH")
        if subprocess.run([cargo, "build", "--release"], cwd=REPO_ROOT).returncode != 0:
            die("cargo build --release failed; build rtlat or pass --rtlat PATH")
    return DEFAULT_RTLAT


def run_oslat(a: argparse.Namespace) -> dict:
    cmd = ["oslat", "-D", str(a.seconds), "-c", str(a.cpu)]
    if a.fifo is not None:
        cmd += ["-f", str(a.fifo)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.seconds * 3 + 30)
    if p.returncode != 0:
        print(p.stdout + p.stderr, file=sys.stderr)
        die(f"{' '.join(cmd)} failed (exit {p.returncode})", 1)
    buckets = [(int(m.group(1)), int(m.group(2)))
               for m in re.finditer(r"^\s*(\d+) \(us\):\s+(\d+)", p.stdout, re.M)]
    field = lambda name: float(re.search(rf"^\s*{name}:\s+([\d.]+)", p.stdout, re.M).group(1))
    total = sum(c for _, c in buckets)
    seen, median = 0, None
    for us, c in buckets:
        seen += c
        if seen * 2 >= total:
            median = us
            break
    duration = field("Duration")
    return {"tool": "oslat", "min_us": field("Minimum"), "median_us": median,
            "max_us": field("Maximum"), "loops": total, "duration_s": duration,
            "loops_per_s": total / duration}


def oslat_us(ns: int) -> int:
    """A gap in ns as oslat prints it: truncated to whole us, plus one."""
    return ns // 1000 + 1


def run_rtlat(a: argparse.Namespace, rtlat: Path, tmp: Path) -> dict:
    out = tmp / "noise.json"
    cmd = [str(rtlat), "noise", "--cpus", str(a.cpu), "--duration", f"{a.seconds}s", "--quiet",
           "--json", str(out)]
    cmd += ["--counter", a.counter]
    cmd += ["--explain"] if a.explain else []
    cmd += ["--policy", "other"] if a.fifo is None else ["--priority", str(a.fifo)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.seconds * 3 + 30)
    if p.returncode != 0:
        print(p.stdout + p.stderr, file=sys.stderr)
        die(f"{' '.join(cmd)} failed (exit {p.returncode})", 1)
    r = json.loads(out.read_text())
    s = r["threads"][0]["summary"]
    p50 = next(x["ns"] for x in s["percentiles"] if x["p"] == 50)
    c = r["details"]["cpus"][0]
    span = (c["last_ns"] - c["first_ns"]) / 1e9
    return {"tool": "rtlat", "min_ns": s["min_ns"], "min_us": oslat_us(s["min_ns"]),
            "median_ns": p50, "median_us": oslat_us(p50), "max_us": s["max_ns"] / 1000,
            "loops": s["samples"], "duration_s": span, "loops_per_s": s["samples"] / span,
            "read_cost_ns": c["read_cost_ns"], "counter": r["details"]["counter"]}


def main() -> None:
    a = parse_args()
    if shutil.which("oslat") is None:
        die("oslat is not installed (apt-get install rt-tests)")
    if os.geteuid() != 0:
        die("run as root (oslat and rtlat lock memory; --fifo needs real-time scheduling)")
    if a.cpu not in os.sched_getaffinity(0) or a.cpu == 0:
        die(f"--cpu {a.cpu}: give an online CPU other than 0 (both tools keep their main thread on CPU 0)")
    rtlat = resolve_rtlat(a.rtlat)
    runs = []
    with tempfile.TemporaryDirectory() as t:
        for k in range(a.pairs):
            order = ("oslat", "rtlat") if k % 2 == 0 else ("rtlat", "oslat")
            for tool in order:
                r = run_oslat(a) if tool == "oslat" else run_rtlat(a, rtlat, Path(t))
                r["pair"] = k
                runs.append(r)
                extra = f" min {r['min_ns']} ns, p50 {r['median_ns']} ns, read {r['read_cost_ns']} ns ({r['counter']})" \
                    if tool == "rtlat" else ""
                print(f"pair {k} {tool:5}: min {r['min_us']:.0f} us, median {r['median_us']} us, max {r['max_us']:.0f} us, "
                      f"{r['loops_per_s'] / 1e6:.2f} M loops/s ({1e9 / r['loops_per_s']:.2f} ns/loop){extra}", flush=True)
    by = lambda tool, key: [r[key] for r in runs if r["tool"] == tool]
    lps = {t: statistics.mean(by(t, "loops_per_s")) for t in ("oslat", "rtlat")}
    print(f"RESULT min_us equal={[int(v) for v in by('oslat', 'min_us')] == by('rtlat', 'min_us')} "
          f"median_us equal={by('oslat', 'median_us') == by('rtlat', 'median_us')} "
          f"max_us oslat={statistics.median(by('oslat', 'max_us')):.0f} rtlat={statistics.median(by('rtlat', 'max_us')):.0f} "
          f"loops_per_s ratio rtlat/oslat={lps['rtlat'] / lps['oslat']:.3f} (target >= 1.0)")
    if a.json:
        a.json.write_text(json.dumps({"settings": vars(a) | {"json": str(a.json), "rtlat": str(rtlat)},
                                      "runs": runs}, indent=2, default=str))


if __name__ == "__main__":
    main()
