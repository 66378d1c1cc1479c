#!/usr/bin/env python3
"""What the tail forecast costs on a result of 10^8 samples.

What it measures
----------------
A result file of one thread with --samples (default 10^8) samples is
written: its histogram (rtlat's log-linear buckets) holds a body and a
generalized Pareto tail (shape --shape, default 0.1), its series 4096
points. `rtlat report FILE --bound 200us --within 24h` (which forecasts the
thread: threshold rule, fit, checks, every prediction, and reads the file
and prints the text besides) is run --repeat times (default 10); its wall
time is an upper bound of the forecast's. The start of the process alone
(`rtlat report --help`) is timed beside it:

    COST 1e+08 samples: report with the forecast 41.2 ms (the process's start alone 2.1 ms; ...)

The time of a run is the best of the repeats.

How to run
----------
On a release build (no root needed):

    benches/forecast_cost.py
    benches/forecast_cost.py --samples 1e9 --shape -0.2

Python 3.11 standard library only. Exit status: 0 after a complete run, 2 on
bad usage or a missing prerequisite, 1 if rtlat failed.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lower_bound(i: int) -> int:
    """rtlat's bucket scheme (src/stats/histogram.rs): 256 exact values, then
    128 buckets per power of two."""
    if i < 256:
        return i
    k = i - 256
    e = k // 128 + 8
    return (k % 128 + 128) << (e - 7)


def histogram(n: float, shape: float) -> tuple[list[dict], int, int]:
    """Buckets of n samples: uniform 5-10 us, then from 10 us a GPD tail
    (scale 2 us) holding 1 % of them."""
    def sf(x: float) -> float:  # P(X >= x)
        if x < 5000:
            return 1.0
        if x < 10000:
            return 1.0 - 0.99 * (x - 5000) / 5000
        z = (x - 10000) / 2000
        return 0.01 * (math.exp(-z) if shape == 0 else max(0.0, 1 + shape * z) ** (-1 / shape))
    buckets, i = [], 0
    while lower_bound(i) < 5000:
        i += 1
    lo_seen, hi_seen = None, 0
    while True:
        lo, hi = lower_bound(i), lower_bound(i + 1) - 1
        c = round(n * (sf(lo) - sf(hi + 1)))
        if c > 0:
            buckets.append({"low_ns": lo, "high_ns": hi, "count": c})
            lo_seen = lo if lo_seen is None else lo_seen
            hi_seen = hi
        if n * sf(hi + 1) < 0.5:
            break
        i += 1
    return buckets, lo_seen, hi_seen


def result(n: float, shape: float) -> dict:
    buckets, lo, hi = histogram(n, shape)
    total = sum(b["count"] for b in buckets)
    points = 4096
    per = total // points
    interval = 1_000_000_000
    series = [{"t_ns": k * interval, "samples": per + (total - per * points if k == 0 else 0),
               "min_ns": lo, "avg_ns": 8000, "max_ns": 20000 + (k * 7919) % 15000,
               "overruns": 0} for k in range(points)]
    summary = {"samples": total, "min_ns": lo, "avg_ns": 8000, "max_ns": hi,
               "stddev_ns": None, "percentiles": [], "overruns": 0,
               "max_sample": None, "max_at_ns": None}
    return {
        "schema": "rtlat-result", "schema_version": 1,
        "tool": {"name": "rtlat", "version": "0"},
        "benchmark": "timer", "label": "cost", "command_line": ["rtlat", "timer"],
        "start_time_utc": "2026-01-01T00:00:00.000Z",
        "duration_ns": points * interval, "complete": True, "end_reason": "duration",
        "config": {}, "system": {"hostname": "cost", "kernel_release": "6.1"},
        "tuning": {"mlock": None, "policy": None, "priority": None,
                   "affinity": [], "phase_offsets_ns": []},
        "threads": [{"name": "cpu0", "cpu": 0, "summary": summary,
                     "histogram": {"scheme": "log-linear-ns-v1", "buckets": buckets},
                     "series": {"interval_ns": interval, "points": series}}],
        "total": summary,
    }


def best(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlat", default=str(ROOT / "target/release/rtlat"))
    ap.add_argument("--samples", type=float, default=1e8)
    ap.add_argument("--shape", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    if not Path(a.rtlat).is_file():
        print(f"forecast_cost: no {a.rtlat}: cargo build --release", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        bare = Path(d) / "run.json"
        bare.write_text(json.dumps(result(a.samples, a.shape)))
        forecast = [a.rtlat, "report", str(bare), "--bound", "200us", "--within", "24h"]
        try:
            out = subprocess.run(forecast, check=True, capture_output=True, text=True).stdout
            with_forecast = best(forecast, a.repeat)
            without = best([a.rtlat, "report", "--help"], a.repeat)
        except subprocess.CalledProcessError as err:
            print(f"forecast_cost: rtlat failed: {err}", file=sys.stderr)
            return 1
    print("\n".join(l for l in out.splitlines() if l.startswith(("forecast", "spikes"))))
    print(f"COST {a.samples:.0e} samples: report with the forecast {1e3 * with_forecast:.1f} ms "
          f"(the process's start alone {1e3 * without:.1f} ms; target <= 100 ms for the forecast)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
