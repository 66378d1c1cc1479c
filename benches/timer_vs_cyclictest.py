#!/usr/bin/env python3
"""Compare `rtlat timer` with cyclictest at equivalent settings, on this machine.

What it measures
----------------
For each period (default 1000 us and 100 us) it runs both tools back to back,
--pairs times (default 3), and compares:

* average wake-up latency (cycle-weighted over all threads),
* maximum wake-up latency (for information only: one run's max is noise),
* CPU time per sample: the child's user+system CPU time, taken from os.wait4()
  when the child is reaped, divided by the total number of samples of all
  threads. This includes each tool's process start-up and tear-down (exec,
  dynamic loading, mlockall page faulting, thread creation, writing the JSON)
  and the work of its non-measuring main thread (cyclictest's main thread
  wakes every 10 ms even with -q; rtlat rewrites its result file every 5 s).
  The fixed start-up cost is amortised over seconds*1e6/period*ncpu samples,
  so short runs (--seconds 2) inflate it for both tools.
* peak resident memory (VmHWM): GNU time's %M for the command (its ru_maxrss;
  not this script's os.wait4, which would carry the Python parent's peak).
  It includes the code the kernel maps for each binary (rtlat's is larger
  than cyclictest's); benches/memory.py compares it on one CPU.

It prints one row per run, then per period the ratio of means
(mean rtlat value / mean cyclictest value over the pairs) and the per-pair
ratios, e.g.:

    RATIO period=1000us avg_latency=0.97 cpu_per_sample=0.85 (target <= 1.0)

Equivalent settings
-------------------
cyclictest -m -p80 -i<period_us> -t -a -q -d0 -l <loops> --json=<tmp>
    -m    mlockall               -p80  SCHED_FIFO priority 80
    -t    one thread per CPU     -a    thread N pinned to CPU N
    -q    summary only           -l    loops per thread
    -d0   every thread uses the same period. Without it cyclictest staggers
          the intervals: thread N runs with period i + N*500 us (default
          -d500), so its threads would not run at the requested period and the
          settings would not be equivalent.
    cyclictest holds /dev/cpu_dma_latency at 0 by default (as rtlat does) and
    sleeps with absolute clock_nanosleep on CLOCK_MONOTONIC (as rtlat does).

rtlat timer --period <period>us --loops <loops> --quiet --json <tmp>
    defaults: every online CPU, one pinned thread each, SCHED_FIFO 80,
    mlockall, /dev/cpu_dma_latency=0, absolute clock_nanosleep on
    CLOCK_MONOTONIC. --loops is per thread, as cyclictest's -l.

loops = seconds * 1e6 / period_us, so each run lasts about --seconds.

Known differences that remain:
* rtlat offsets thread i of n by i*period/n so threads never wake together;
  cyclictest -d0 starts its threads at about the same moment. Each thread is on
  its own CPU, so this matters little.
* cyclictest (without -N) measures in whole microseconds and truncates each
  sample towards zero, so its average is biased low by about 0.5 us compared
  with rtlat's exact nanoseconds. With average latencies of a few tens of us
  this favours cyclictest by a few percent. --cyclictest-ns adds -N so
  cyclictest measures in nanoseconds too (values are then converted to us).

Interleaving: pair k runs cyclictest then rtlat when k is even, rtlat then
cyclictest when k is odd, so a drift in machine noise does not favour one tool.

How to run
----------
As root (both tools need SCHED_FIFO, mlockall and /dev/cpu_dma_latency), with
cyclictest installed (apt-get install rt-tests):

    sudo benches/timer_vs_cyclictest.py                     # 2 periods x 3 pairs x 10 s each (~2 min)
    sudo benches/timer_vs_cyclictest.py --pairs 5 --seconds 30 --json cmp.json
    sudo benches/timer_vs_cyclictest.py --periods 100 --rtlat ./rtlat

--rtlat defaults to target/release/rtlat in the repository (this script's
parent's parent); if that is missing, `cargo build --release` is run first.
Python 3.11 standard library only. Exit status: 0 after a complete comparison,
2 on bad usage or a missing prerequisite, 1 if a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
# The peak RSS of a run is GNU time's %M (the command's ru_maxrss): a
# process's ru_maxrss keeps the peak of the process it was forked from, so the
# os.wait4 of this script (a Python interpreter, ~15 MB) would hide it.
GNU_TIME = "/usr/bin/time"
DEFAULT_RTLAT = REPO_ROOT / "target" / "release" / "rtlat"
TOOLS = ("cyclictest", "rtlat")


def die(msg: str, code: int = 2) -> NoReturn:
    print(f"timer_vs_cyclictest: error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_periods(text: str) -> list[int]:
    try:
        periods = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of periods in us")
    if not periods or any(p <= 0 for p in periods):
        raise argparse.ArgumentTypeError(f"'{text}': periods must be positive integers (us)")
    return periods


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be positive")
    return v


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Compare `rtlat timer` with cyclictest at equivalent settings "
        "(interleaved pairs) and print rtlat/cyclictest ratios.",
        epilog="See the docstring at the top of this file for what is measured.",
    )
    ap.add_argument("--rtlat", type=Path, default=None,
                    help=f"rtlat binary [default: {DEFAULT_RTLAT}, built with cargo build --release if missing]")
    ap.add_argument("--pairs", type=positive_int, default=3,
                    help="interleaved cyclictest/rtlat pairs per period [default: 3]")
    ap.add_argument("--seconds", type=positive_float, default=10.0,
                    help="length of each run; loops = seconds*1e6/period_us [default: 10]")
    ap.add_argument("--periods", type=parse_periods, default=[1000, 100],
                    help="comma-separated periods in us [default: 1000,100]")
    ap.add_argument("--cyclictest-ns", action="store_true",
                    help="run cyclictest with -N (nanosecond samples) to remove its ~0.5 us truncation bias")
    ap.add_argument("--json", type=Path, default=None, metavar="OUT",
                    help="also write every raw number to OUT")
    return ap.parse_args()


def resolve_rtlat(arg: Path | None) -> Path:
    if arg is not None:
        if not (arg.is_file() and os.access(arg, os.X_OK)):
            die(f"--rtlat {arg}: not an executable file")
        return arg.resolve()
    if not DEFAULT_RTLAT.is_file():
        cargo = shutil.which("cargo")
        if cargo is None:
            die(f"{DEFAULT_RTLAT} is missing and cargo is not in PATH to build it")
        print(f"# {DEFAULT_RTLAT} missing: running cargo build --release in {REPO_ROOT}", flush=True)
        r = subprocess.run([cargo, "build", "--release"], cwd=REPO_ROOT)
        if r.returncode != 0 or not DEFAULT_RTLAT.is_file():
            die(f"cargo build --release failed (exit {r.returncode}); build rtlat or pass --rtlat PATH")
    return DEFAULT_RTLAT


def run_measured(cmd: list[str], timeout: float, log: Path) -> tuple[int, float, float, float, int]:
    """Run cmd to completion; return (exit code, user s, system s, wall s, peak RSS kB).

    The peak RSS is the command's VmHWM when it ended (kB), as GNU time reports it.

    The child is reaped with os.wait4 so its rusage (all of its threads, and any
    children it waited for) is exactly this run's CPU time.
    """
    with open(log, "wb") as out:
        t0 = time.monotonic()
        rss_file = log.with_suffix(".rss")
        timed = [GNU_TIME, "-f", "%M", "-o", str(rss_file), *cmd] if os.access(GNU_TIME, os.X_OK) else cmd
        p = subprocess.Popen(timed, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    p.returncode = code  # reaped here; keep Popen from waiting again
    return code, ru.ru_utime, ru.ru_stime, wall, peak_rss(rss_file)


def peak_rss(path: Path) -> int:
    """The command's VmHWM (kB) as GNU time wrote it; 0 without GNU time."""
    try:
        return int(path.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def tail(path: Path, n: int = 5) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])


class RunFailed(Exception):
    pass


def run_cyclictest(exe: str, period_us: int, loops: int, tmp: Path, tag: str, nsecs: bool) -> dict:
    out = tmp / f"{tag}.json"
    log = tmp / f"{tag}.log"
    cmd = [exe, "-m", "-p80", f"-i{period_us}", "-t", "-a", "-q", "-d0"]
    if nsecs:
        cmd.append("-N")
    cmd += ["-l", str(loops), f"--json={out}"]
    code, ut, st, wall, rss = run_measured(cmd, timeout=loops * period_us / 1e6 * 3 + 60, log=log)
    if code != 0:
        raise RunFailed(f"cyclictest exited {code}: {tail(log)}")
    try:
        data = json.loads(out.read_text())
        threads = data["thread"]
    except (OSError, ValueError, KeyError) as e:
        raise RunFailed(f"cyclictest JSON {out} unreadable: {e}")
    scale = 1000.0 if nsecs else 1.0  # to us
    per = []
    for tid in sorted(threads, key=int):
        t = threads[tid]
        per.append({"thread": int(tid), "cpu": t.get("cpu"), "samples": int(t["cycles"]),
                    "avg_us": float(t["avg"]) / scale, "max_us": float(t["max"]) / scale,
                    "min_us": float(t["min"]) / scale})
    samples = sum(t["samples"] for t in per)
    if samples == 0:
        raise RunFailed("cyclictest recorded no samples")
    avg = sum(t["avg_us"] * t["samples"] for t in per) / samples
    return {"cmd": cmd, "samples": samples, "avg_us": avg, "max_us": max(t["max_us"] for t in per),
            "threads": per, "user_s": ut, "sys_s": st, "wall_s": wall, "rss_kb": rss}


def run_rtlat(exe: Path, period_us: int, loops: int, tmp: Path, tag: str) -> dict:
    out = tmp / f"{tag}.json"
    log = tmp / f"{tag}.log"
    cmd = [str(exe), "timer", "--period", f"{period_us}us", "--loops", str(loops),
           "--quiet", "--json", str(out)]
    code, ut, st, wall, rss = run_measured(cmd, timeout=loops * period_us / 1e6 * 3 + 60, log=log)
    if code != 0:
        raise RunFailed(f"rtlat exited {code}: {tail(log)}")
    try:
        data = json.loads(out.read_text())
        total = data["total"]
        per = [{"thread": i, "cpu": t.get("cpu"), "samples": int(t["summary"]["samples"]),
                "avg_us": t["summary"]["avg_ns"] / 1000.0, "max_us": t["summary"]["max_ns"] / 1000.0,
                "min_us": t["summary"].get("min_ns", 0) / 1000.0}
               for i, t in enumerate(data["threads"])]
        samples = int(total["samples"])
        avg = total["avg_ns"] / 1000.0
        mx = total["max_ns"] / 1000.0
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunFailed(f"rtlat JSON {out} unreadable: {e}")
    if data.get("complete") is False:
        raise RunFailed(f"rtlat result {out} is marked incomplete (end_reason={data.get('end_reason')})")
    if samples == 0:
        raise RunFailed("rtlat recorded no samples")
    return {"cmd": cmd, "samples": samples, "avg_us": avg, "max_us": mx, "threads": per,
            "user_s": ut, "sys_s": st, "wall_s": wall, "rss_kb": rss,
            "self_reported_measuring_cpu_time_ns": data.get("measuring_cpu_time_ns"),
            "overruns": total.get("overruns")}


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}"


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        die("must run as root (both tools need SCHED_FIFO, mlockall and /dev/cpu_dma_latency)")
    ct = shutil.which("cyclictest") or ("/usr/bin/cyclictest" if os.access("/usr/bin/cyclictest", os.X_OK) else None)
    if ct is None:
        die("cyclictest not found: apt-get install rt-tests")
    rtlat = resolve_rtlat(args.rtlat)

    def version(cmd: list[str]) -> str:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return "?"
        text = (r.stdout or r.stderr).strip()
        return text.splitlines()[0] if r.returncode == 0 and text else "?"

    ncpu = len(os.sched_getaffinity(0))
    env = {"kernel": platform.release(), "cpus_online": os.cpu_count(), "cpus_allowed": ncpu,
           "cyclictest": ct, "cyclictest_version": version([ct, "--help"]),
           "rtlat": str(rtlat), "rtlat_version": version([str(rtlat), "--version"])}
    print(f"# kernel {env['kernel']}, {env['cpus_online']} CPUs; {env['cyclictest_version']} ({ct}); "
          f"{env['rtlat_version']} ({rtlat})")
    print(f"# periods {','.join(map(str, args.periods))} us, {args.pairs} pairs each, ~{args.seconds:g} s per run"
          f"{', cyclictest -N' if args.cyclictest_ns else ''}")
    print("# cpu ns/sample = child user+sys CPU time (os.wait4, includes start-up) / samples of all threads")
    print(flush=True)

    header = (f"{'tool':<10} {'period':>7} {'pair':>4} {'samples':>9} {'avg us':>8} {'max us':>8} "
              f"{'cpu ns/sample':>13} {'VmHWM kB':>9} {'wall s':>7}")
    runs: list[dict] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="rtlat-vs-ct-") as td:
        tmp = Path(td)
        print(header)
        print("-" * len(header), flush=True)
        for period in args.periods:
            loops = max(1, round(args.seconds * 1e6 / period))
            for k in range(args.pairs):
                order = TOOLS if k % 2 == 0 else TOOLS[::-1]
                for tool in order:
                    tag = f"{tool}-{period}-{k}"
                    try:
                        if tool == "cyclictest":
                            r = run_cyclictest(ct, period, loops, tmp, tag, args.cyclictest_ns)
                        else:
                            r = run_rtlat(rtlat, period, loops, tmp, tag)
                    except RunFailed as e:
                        print(f"{tool:<10} {period:>5}us {k:>4}  FAILED: {e}", flush=True)
                        failed = True
                        continue
                    r.update(tool=tool, period_us=period, pair=k, loops=loops)
                    r["cpu_ns_per_sample"] = (r["user_s"] + r["sys_s"]) * 1e9 / r["samples"]
                    expected = loops * len(r["threads"])
                    note = "" if r["samples"] == expected else f"  (expected {expected} samples)"
                    runs.append(r)
                    print(f"{tool:<10} {period:>5}us {k:>4} {r['samples']:>9} {r['avg_us']:>8.2f} "
                          f"{r['max_us']:>8.1f} {r['cpu_ns_per_sample']:>13.0f} {r['rss_kb']:>9} "
                          f"{r['wall_s']:>7.2f}{note}",
                          flush=True)

    print()
    summary = []
    for period in args.periods:
        by = {t: {r["pair"]: r for r in runs if r["tool"] == t and r["period_us"] == period} for t in TOOLS}
        if not by["cyclictest"] or not by["rtlat"]:
            print(f"RATIO period={period}us n/a (a tool has no successful run)")
            continue
        means = {t: {m: statistics.fmean(r[m] for r in by[t].values())
                     for m in ("avg_us", "max_us", "cpu_ns_per_sample", "rss_kb")} for t in TOOLS}
        rat = {m: ratio(means["rtlat"][m], means["cyclictest"][m]) for m in means["rtlat"]}
        pairs = sorted(set(by["rtlat"]) & set(by["cyclictest"]))
        per_pair = [{"pair": k, **{m: ratio(by["rtlat"][k][m], by["cyclictest"][k][m])
                                   for m in ("avg_us", "max_us", "cpu_ns_per_sample", "rss_kb")}} for k in pairs]
        for t in TOOLS:
            m = means[t]
            print(f"# mean {t:<10} period={period}us over {len(by[t])} runs: avg {m['avg_us']:.2f} us, "
                  f"max {m['max_us']:.1f} us, cpu {m['cpu_ns_per_sample']:.0f} ns/sample, "
                  f"VmHWM {m['rss_kb']:.0f} kB")
        print("# per-pair rtlat/cyclictest: " + "; ".join(
            f"pair {p['pair']}: avg {fmt_ratio(p['avg_us'])} cpu {fmt_ratio(p['cpu_ns_per_sample'])} "
            f"max {fmt_ratio(p['max_us'])} VmHWM {fmt_ratio(p['rss_kb'])}" for p in per_pair))
        print(f"RATIO period={period}us avg_latency={fmt_ratio(rat['avg_us'])} "
              f"cpu_per_sample={fmt_ratio(rat['cpu_ns_per_sample'])} (target <= 1.0) "
              f"max_latency={fmt_ratio(rat['max_us'])} (information only) "
              f"vmhwm={fmt_ratio(rat['rss_kb'])} (target <= 1.5 on one CPU, see benches/memory.py)")
        summary.append({"period_us": period, "means": means,
                        "ratio_of_means": {"avg_latency": rat["avg_us"],
                                           "cpu_per_sample": rat["cpu_ns_per_sample"],
                                           "max_latency": rat["max_us"],
                                           "vmhwm": rat["rss_kb"]},
                        "per_pair": per_pair})

    if args.json is not None:
        doc = {"settings": {"periods_us": args.periods, "pairs": args.pairs, "seconds": args.seconds,
                            "cyclictest_ns": args.cyclictest_ns},
               "environment": env, "runs": runs, "summary": summary, "any_run_failed": failed}
        try:
            args.json.write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as e:
            die(f"cannot write {args.json}: {e}")
        print(f"# raw numbers written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
