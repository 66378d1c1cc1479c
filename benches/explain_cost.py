#!/usr/bin/env python3
"""What `rtlat timer --explain` costs: the same run with and without it.

What it measures
----------------
Rounds of runs on one CPU (--cpu, default the last), SCHED_FIFO 80, period
1 ms, --seconds each, --pairs rounds of four, interleaved (round k starts
with the (k mod 4)th kind):

    rtlat timer --cpus N --duration S            (plain)
    rtlat timer --cpus N --duration S --explain  (explain)
    rtlat timer --cpus N --duration S --explain --explain-stacks  (stacks)
    rtlat timer --cpus N --duration S            (traced: the plain run while
        a tracefs instance of the bench's own records the events --explain
        records on that CPU, and nothing reads them: the kernel's share)

For each run: the average latency (the result's total.avg_ns), the CPU time
of the whole process per sample (user + system time of wait4's rusage, to
the microsecond: the measuring thread, and with --explain its reader thread
and its set-up) and VmHWM (GNU time's %M). It prints
every run, then the means and the explain/plain ratios, e.g.

    COST avg latency plain 17.1 us explain 17.9 us ratio=1.05 (target <= 1.1)
    COST cpu per sample plain 4.1 us explain 6.0 us ratio=1.46 (target <= 1.1)
    COST VmHWM plain 4200 kB explain 6900 kB (target <= 8192 kB)
    COST stacks avg latency 18.0 us ratio=1.05 to plain, cpu per sample 6.1 us ratio=1.02 to explain, VmHWM 7000 kB

The stacks are recorded where a measuring thread is woken while a task
holds its CPU: --stacks-load N runs a SCHED_OTHER task on the measuring CPU
for N % of each 10 ms in every round (all four kinds alike), so that they
are recorded and their cost shows (0: an idle CPU, where none is).

Then one longer run with --explain (--flat-seconds, default 120) whose
VmRSS is read from /proc every --flat-every seconds: memory flat means the
last reading is the first one, give or take a few pages.

    FLAT VmRSS kB over 120 s: 6880 6880 ... 6880 (growth 0 kB)

How to run
----------
As root (tracefs, RT scheduling), with GNU time (package "time"):

    sudo benches/explain_cost.py                       # 3 pairs x 10 s, 2 min flat
    sudo benches/explain_cost.py --pairs 5 --seconds 30 --flat-seconds 600

The average latency of a shared VM moves with its neighbours more than with
--explain: read the ratio beside the spread of the plain runs it prints.
Python 3.11 standard library only. Exit status: 0 after a complete run, 2 on
bad usage or a missing prerequisite, 1 if a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# The events --explain records (src/explain/events.rs), by system or name.
EVENTS = ["sched/sched_switch", "sched/sched_wakeup", "sched/sched_stat_runtime", "irq",
          "irq_vectors", "power/cpu_idle", "nmi"]
TRACEFS = Path("/sys/kernel/tracing")


class Traced:
    """A tracefs instance recording EVENTS on one CPU, unread, while open."""

    def __init__(self, cpu: int):
        self.dir = TRACEFS / "instances" / f"rtlat-bench-{os.getpid()}"
        self.cpu = cpu

    def __enter__(self):
        self.dir.mkdir()
        (self.dir / "trace_clock").write_text("mono")
        (self.dir / "buffer_size_kb").write_text("2048")
        (self.dir / "tracing_cpumask").write_text(format(1 << self.cpu, "x"))
        for e in EVENTS:
            f = self.dir / "events" / e / "enable"
            if f.exists():
                f.write_text("1")
        return self

    def __exit__(self, *exc):
        self.dir.rmdir()


class Busy:
    """A SCHED_OTHER task on one CPU busy for `share` % of each 10 ms, while open."""

    def __init__(self, cpu: int, share: int):
        self.cpu, self.share, self.p = cpu, share, None

    def __enter__(self):
        if self.share > 0:
            busy = self.share / 10000
            code = (f"import os, time\nos.sched_setaffinity(0, {{{self.cpu}}})\n"
                    f"while True:\n    end = time.monotonic() + {busy}\n"
                    f"    while time.monotonic() < end: pass\n    time.sleep({0.01 - busy})\n")
            self.p = subprocess.Popen([sys.executable, "-c", code])
        return self

    def __exit__(self, *exc):
        if self.p:
            self.p.kill()
            self.p.wait()


def run(rtlat: str, cpu: int, seconds: int, explain: list[str], tmp: Path) -> dict:
    out = tmp / "r.json"
    # GNU time for VmHWM: a child forked from this (large) interpreter
    # would count its pre-exec size in rusage's maxrss.
    cmd = ["/usr/bin/time", "-f", "TIME %M", rtlat, "timer", "--cpus", str(cpu),
           "--duration", f"{seconds}s", "--json", str(out), "--quiet"]
    cmd += explain
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    # wait4's rusage: the scheduler's own accounting, to the microsecond
    # (rtlat's, and GNU time's own few hundred microseconds).
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"explain_cost: run failed ({p.returncode}): {' '.join(cmd)}\n{err}")
    r = json.loads(out.read_text())
    samples = max(1, r["total"]["samples"])
    return {
        "avg_us": r["total"]["avg_ns"] / 1000,
        "cpu_us_per_sample": (usage.ru_utime + usage.ru_stime) * 1e6 / samples,
        "hwm_kb": int([l for l in err.splitlines() if l.startswith("TIME ")][-1].split()[1]),
        "explained": len(r.get("explained", [])),
    }


def flat(rtlat: str, cpu: int, seconds: int, every: int, tmp: Path) -> list[int]:
    cmd = [rtlat, "timer", "--cpus", str(cpu), "--duration", f"{seconds}s", "--explain",
           "--json", str(tmp / "flat.json"), "--quiet"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    readings = []
    time.sleep(min(every, 2))
    while p.poll() is None:
        try:
            status = Path(f"/proc/{p.pid}/status").read_text()
        except OSError:
            break
        for l in status.splitlines():
            if l.startswith("VmRSS:"):
                readings.append(int(l.split()[1]))
        time.sleep(every)
    err = p.stderr.read() if p.stderr else ""
    if p.wait() != 0:
        sys.exit(f"explain_cost: the long run failed: {err}")
    return readings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlat", default=str(ROOT / "target/release/rtlat"))
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--flat-seconds", type=int, default=120)
    ap.add_argument("--flat-every", type=int, default=10)
    ap.add_argument("--stacks-load", type=int, default=0, metavar="PERCENT")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("explain_cost: run as root (tracefs, RT scheduling)", file=sys.stderr)
        sys.exit(2)
    if not Path(a.rtlat).is_file() or not Path("/usr/bin/time").is_file():
        print(f"explain_cost: needs {a.rtlat} (cargo build --release) and /usr/bin/time (apt-get install time)",
              file=sys.stderr)
        sys.exit(2)
    flags = {"plain": [], "traced": [], "explain": ["--explain"],
             "stacks": ["--explain", "--explain-stacks"]}
    got: dict[str, list[dict]] = {k: [] for k in flags}
    with tempfile.TemporaryDirectory() as d, Busy(a.cpu, a.stacks_load):
        tmp = Path(d)
        for k in range(a.pairs):
            order = ["plain", "explain", "stacks", "traced"]
            for kind in order[k % 4:] + order[:k % 4]:
                if kind == "traced":
                    with Traced(a.cpu):
                        r = run(a.rtlat, a.cpu, a.seconds, [], tmp)
                else:
                    r = run(a.rtlat, a.cpu, a.seconds, flags[kind], tmp)
                got[kind].append(r)
                print(f"RUN pair {k} {kind:7} avg {r['avg_us']:.2f} us, "
                      f"cpu/sample {r['cpu_us_per_sample']:.2f} us, VmHWM {r['hwm_kb']} kB, "
                      f"explained {r['explained']}", flush=True)
        mean = lambda kind, key: statistics.mean(x[key] for x in got[kind])
        p, e, t = (mean(k, "avg_us") for k in ("plain", "explain", "traced"))
        print(f"COST avg latency plain {p:.2f} us explain {e:.2f} us ratio={e / p:.2f} (target <= 1.1); "
              f"traced {t:.2f} us ratio={t / p:.2f}")
        p, e, t = (mean(k, "cpu_us_per_sample") for k in ("plain", "explain", "traced"))
        print(f"COST cpu per sample plain {p:.2f} us explain {e:.2f} us ratio={e / p:.2f} (target <= 1.1); "
              f"traced {t:.2f} us ratio={t / p:.2f}: the kernel's recording alone {t - p:.2f} us, "
              f"rtlat's reader and set-up {e - t:.2f} us")
        p, e = max(x["hwm_kb"] for x in got["plain"]), max(x["hwm_kb"] for x in got["explain"])
        print(f"COST VmHWM plain {p} kB explain {e} kB (target <= 8192 kB)")
        s_avg, p_avg = mean("stacks", "avg_us"), mean("plain", "avg_us")
        s_cpu, e_cpu = mean("stacks", "cpu_us_per_sample"), mean("explain", "cpu_us_per_sample")
        print(f"COST stacks avg latency {s_avg:.2f} us ratio={s_avg / p_avg:.2f} to plain "
              f"(explain {mean('explain', 'avg_us') / p_avg:.2f}), cpu per sample {s_cpu:.2f} us "
              f"ratio={s_cpu / e_cpu:.2f} to explain, VmHWM {max(x['hwm_kb'] for x in got['stacks'])} kB")
        if a.flat_seconds > 0:
            rss = flat(a.rtlat, a.cpu, a.flat_seconds, a.flat_every, tmp)
            growth = rss[-1] - rss[0] if rss else 0
            print(f"FLAT VmRSS kB over {a.flat_seconds} s: {' '.join(map(str, rss))} (growth {growth} kB)")


if __name__ == "__main__":
    main()
