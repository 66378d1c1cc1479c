#!/usr/bin/env python3
"""Time and peak resident memory (VmHWM) of `rtlat trend` over 3 000 results.

What it measures
----------------
It writes --results real result files (default 3000: three boards, 1000
nights each, a kernel update half-way) into a temporary tree, each a copy of
one real result file (--template, default: a fresh `rtlat timer --synthetic 1
--cpus 0 --loops 20000` run, histogram and series included, so each file is
the size of a real one) with its board, kernel and start time changed; then
runs `rtlat trend TREE --svg ... --html ...` through GNU time (/usr/bin/time,
%e wall seconds, %M ru_maxrss: VmHWM in kB) --repeat times and prints

    TREND 3000 results 142 MB: 1.84 s (max 1.90) VmHWM 9876 kB (max 9900) (targets: <= 5 s, <= 65536 kB)

and exits 1 when a target is missed.

How to run
----------
    cargo build --release && python3 benches/trend.py [--rtlat target/release/rtlat]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtlat", default="target/release/rtlat")
    ap.add_argument("--results", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--template")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        template = a.template or os.path.join(d, "template.json")
        if not a.template:
            subprocess.run([a.rtlat, "timer", "--synthetic", "1", "--cpus", "0", "--loops",
                            "20000", "--quiet", "--json", template], check=True, stdout=subprocess.DEVNULL)
        with open(template) as f:
            r = json.load(f)
        tree = os.path.join(d, "tree")
        start = datetime(2024, 1, 1, 2, 0, tzinfo=timezone.utc)
        per_board = a.results // 3
        size = 0
        for b in range(3):
            board = f"board-{b}"
            os.makedirs(os.path.join(tree, board))
            for n in range(per_board):
                r["system"]["hostname"] = board
                r["system"]["kernel_release"] = "6.6.21-rt26" if n < per_board // 2 else "6.6.30-rt30"
                t = start + timedelta(days=n)
                r["start_time_utc"] = t.strftime("%Y-%m-%dT%H:%M:%S.000Z")
                path = os.path.join(tree, board, f"{n:04}.json")
                with open(path, "w") as f:
                    json.dump(r, f)
                size += os.path.getsize(path)
        times, peaks = [], []
        for _ in range(a.repeat):
            out = subprocess.run(
                ["/usr/bin/time", "-f", "%e %M", a.rtlat, "trend", tree,
                 "--svg", os.path.join(d, "t.svg"), "--html", os.path.join(d, "t.html")],
                capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"rtlat trend failed: {out.stderr}")
            e, m = out.stderr.strip().splitlines()[-1].split()
            times.append(float(e))
            peaks.append(int(m))
        mean = lambda v: sum(v) / len(v)
        print(f"TREND {per_board * 3} results {size >> 20} MB: {mean(times):.2f} s (max {max(times):.2f}) "
              f"VmHWM {mean(peaks):.0f} kB (max {max(peaks)}) (targets: <= 5 s, <= 65536 kB)")
        sys.exit(0 if max(times) <= 5 and max(peaks) <= 65536 else 1)


if __name__ == "__main__":
    main()
