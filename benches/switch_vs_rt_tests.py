#!/usr/bin/env python3
"""Compare `rtlat switch` with rt-tests' wake-up latency tools, on this machine.

What it compares
----------------
Each case pairs one rt-tests program with the `rtlat switch --via` that uses
the same kernel mechanism:

    case                 rt-tests                    rtlat switch
    mutex   (threads)    ptsematest                  --via futex      (a pthread mutex is a futex)
    signal  (threads)    sigwaittest                 --via signal
    sysv    (threads)    svsematest                  --via sysv-sem
    mqueue  (threads)    pmqtest                     --via mqueue
    signal  (processes)  sigwaittest -f              --via signal   --processes
    sysv    (processes)  svsematest -f               --via sysv-sem --processes

and runs them interleaved, --pairs times (default 3): pair k runs rt-tests
then rtlat when k is even, rtlat then rt-tests when k is odd, so a drift in
machine noise does not favour one tool. For every case it prints the ratios
(mean rtlat value / mean rt-tests value over the pairs) of the average and of
the maximum latency, e.g.

    RATIO mutex (threads) avg_latency=0.71 (target <= 1.0) max_latency=0.55 (information only)

A single run's maximum is mostly noise on a shared machine; it is printed for
information only.

Matching settings
-----------------
rt-tests:  <tool> -p<prio> -i<interval_us> -d0 -D<seconds> -q --json=<tmp>  plus
           -a <cpu> -t 1   one pair, both threads pinned to <cpu>  (default), or
           -S              one pair per CPU, all threads at the same priority (--smp;
                           sigwaittest has no -S and is left out then)
rtlat:     rtlat switch --via <via> --priority <prio> --period <interval_us>us
           --duration <seconds>s --dma-latency off --quiet --json <tmp>  plus
           --cpus <cpu>    one pair on <cpu>, waker and wakee on it (default), or
           --cpus all      one pair per CPU (--smp)

* Priority: rt-tests runs sender and receiver of a pair at the same priority.
  rtlat's default runs the wakee at --priority and the waker one below, so
  the wake preempts the waker at once. Both variants are run by default:
  `rtlat` (defaults) and `rtlat=` (--waker-priority <prio>, equal priorities,
  the waker yields the CPU right after the wake). --variants picks them.
* Interval: rt-tests' receiver sleeps <interval> (relative nanosleep) between
  cycles, then hands over to the sender through a second object; rtlat's
  waker runs on an absolute timer at <interval>. Both see one wake per
  interval; rt-tests' cycle is a little longer (its sleep plus the hand-over).
* Warm caches: in rt-tests the receiver runs, hands over to the sender and
  blocks just before the measured wake. rtlat's default arming handshake does
  the same (a futex round trip before each wake; see `rtlat switch --help`).
* /dev/cpu_dma_latency: rt-tests' wake-up tools do not hold it; rtlat is run
  with --dma-latency off to match.
* Resolution: rt-tests measures with gettimeofday in whole microseconds (each
  sample's error averages out, but its minimum and maximum are whole us);
  rtlat measures CLOCK_MONOTONIC in nanoseconds.
* Samples: rt-tests' avg is per pair; for several pairs (--smp) the script
  weights them by their sample counts. rtlat's is the `total` of the result.

How to run
----------
As root (both need SCHED_FIFO and mlockall), with rt-tests installed
(apt-get install rt-tests):

    sudo benches/switch_vs_rt_tests.py                       # 6 cases x 3 pairs x 10 s x 3 tools (~9 min)
    sudo benches/switch_vs_rt_tests.py --seconds 5 --cases mutex,mqueue
    sudo benches/switch_vs_rt_tests.py --smp --json cmp.json --rtlat ./rtlat

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

# name, label, rt-tests program, extra rt-tests args, rtlat --via, extra rtlat args, has -S
CASES = [
    ("mutex", "mutex (threads)", "ptsematest", [], "futex", [], True),
    ("signal", "signal (threads)", "sigwaittest", [], "signal", [], False),
    ("sysv", "sysv (threads)", "svsematest", [], "sysv-sem", [], True),
    ("mqueue", "mqueue (threads)", "pmqtest", [], "mqueue", [], True),
    ("signal-f", "signal (processes)", "sigwaittest", ["-f"], "signal", ["--processes"], False),
    ("sysv-f", "sysv (processes)", "svsematest", ["-f"], "sysv-sem", ["--processes"], False),
]
VARIANTS = {"default": "rtlat", "equal": "rtlat="}


def die(msg: str, code: int = 2) -> NoReturn:
    print(f"switch_vs_rt_tests: error: {msg}", file=sys.stderr)
    sys.exit(code)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def name_list(allowed: list[str]):
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        bad = [n for n in names if n not in allowed]
        if not names or bad:
            raise argparse.ArgumentTypeError(
                f"'{text}': choose from {', '.join(allowed)}")
        return names
    return parse


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Compare `rtlat switch` with ptsematest, sigwaittest, svsematest and pmqtest "
        "at matching settings (interleaved pairs) and print rtlat/rt-tests latency ratios.",
        epilog="See the docstring at the top of this file for what is compared and how.",
    )
    ap.add_argument("--rtlat", type=Path, default=None,
                    help=f"rtlat binary [default: {DEFAULT_RTLAT}, built with cargo build --release if missing]")
    ap.add_argument("--pairs", type=positive_int, default=3,
                    help="interleaved rt-tests/rtlat pairs per case [default: 3]")
    ap.add_argument("--seconds", type=positive_int, default=10,
                    help="length of each run in whole seconds (rt-tests' -D) [default: 10]")
    ap.add_argument("--interval", type=positive_int, default=1000,
                    help="wake interval in us (rt-tests -i, rtlat --period) [default: 1000]")
    ap.add_argument("--priority", type=int, default=80, choices=range(2, 100), metavar="2-99",
                    help="real-time priority (rt-tests -p, rtlat --priority) [default: 80]")
    ap.add_argument("--cpu", type=int, default=0,
                    help="CPU of the single pair (rt-tests -a CPU -t 1, rtlat --cpus CPU) [default: 0]")
    ap.add_argument("--smp", action="store_true",
                    help="one pair per CPU, same priority (rt-tests -S, rtlat --cpus all) instead of one pair")
    ap.add_argument("--cases", type=name_list([c[0] for c in CASES]), default=[c[0] for c in CASES],
                    help="comma-separated cases [default: all: " + ",".join(c[0] for c in CASES) + "]")
    ap.add_argument("--variants", type=name_list(list(VARIANTS)), default=list(VARIANTS),
                    help="rtlat variants: default (waker one priority below the wakee), "
                    "equal (--waker-priority = --priority) [default: default,equal]")
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


class RunFailed(Exception):
    pass


def run_logged(cmd: list[str], timeout: float, log: Path) -> tuple[int, float, int]:
    """Run cmd to completion; return (exit code, wall s, peak RSS kB).

    The peak RSS is the command's VmHWM when it ended (kB), as GNU time reports it.
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
            timed_out = not killer.is_alive()
            killer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        if timed_out:
            raise RunFailed(f"{cmd[0]} did not finish within {timeout:.0f} s")
        return p.returncode, time.monotonic() - t0, peak_rss(rss_file)


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


def run_rt_tests(exe: str, extra: list[str], args: argparse.Namespace, tmp: Path, tag: str) -> dict:
    out, log = tmp / f"{tag}.json", tmp / f"{tag}.log"
    place = ["-S"] if args.smp else ["-a", str(args.cpu), "-t", "1"]
    cmd = [exe, f"-p{args.priority}", f"-i{args.interval}", "-d0", *place, *extra,
           "-D", str(args.seconds), "-q", f"--json={out}"]
    code, wall, rss = run_logged(cmd, timeout=args.seconds * 3 + 60, log=log)
    if code != 0:
        raise RunFailed(f"{Path(exe).name} exited {code}: {tail(log)}")
    try:
        threads = json.loads(out.read_text())["thread"]
        per = [{"pair": int(k), "samples": int(t["sender"]["samples"]),
                "avg_us": float(t["receiver"]["avg"]), "max_us": float(t["receiver"]["max"]),
                "min_us": float(t["receiver"]["min"])}
               for k, t in sorted(threads.items(), key=lambda kv: int(kv[0]))]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunFailed(f"{Path(exe).name} JSON {out} unreadable: {e}")
    samples = sum(p["samples"] for p in per)
    if samples == 0:
        raise RunFailed(f"{Path(exe).name} recorded no samples")
    avg = sum(p["avg_us"] * p["samples"] for p in per) / samples
    return {"cmd": cmd, "samples": samples, "avg_us": avg, "max_us": max(p["max_us"] for p in per),
            "min_us": min(p["min_us"] for p in per), "pairs": per, "lost": None, "wall_s": wall,
            "rss_kb": rss}


def run_rtlat(exe: Path, via: str, extra: list[str], variant: str, args: argparse.Namespace,
              tmp: Path, tag: str) -> dict:
    out, log = tmp / f"{tag}.json", tmp / f"{tag}.log"
    cmd = [str(exe), "switch", "--via", via, *extra, "--priority", str(args.priority),
           "--period", f"{args.interval}us", "--duration", f"{args.seconds}s",
           "--cpus", "all" if args.smp else str(args.cpu), "--dma-latency", "off",
           "--quiet", "--json", str(out)]
    if variant == "equal":
        cmd += ["--waker-priority", str(args.priority)]
    code, wall, rss = run_logged(cmd, timeout=args.seconds * 3 + 60, log=log)
    if code != 0:
        raise RunFailed(f"rtlat exited {code}: {tail(log)}")
    try:
        data = json.loads(out.read_text())
        total = data["total"]
        per = [{"pair": i, "samples": int(t["summary"]["samples"]),
                "avg_us": t["summary"]["avg_ns"] / 1000.0, "max_us": t["summary"]["max_ns"] / 1000.0,
                "min_us": t["summary"]["min_ns"] / 1000.0}
               for i, t in enumerate(data["threads"])]
        res = {"cmd": cmd, "samples": int(total["samples"]), "avg_us": total["avg_ns"] / 1000.0,
               "max_us": total["max_ns"] / 1000.0, "min_us": total["min_ns"] / 1000.0,
               "pairs": per, "lost": data.get("details", {}).get("lost"), "wall_s": wall, "rss_kb": rss,
               "warm": data.get("config", {}).get("warm")}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunFailed(f"rtlat JSON {out} unreadable: {e}")
    if data.get("complete") is False:
        raise RunFailed(f"rtlat result {out} is marked incomplete")
    if res["samples"] == 0:
        raise RunFailed("rtlat recorded no samples")
    return res


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}"


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        die("must run as root (both tools need SCHED_FIFO and mlockall)")
    cases = [c for c in CASES if c[0] in args.cases]
    if args.smp:
        skipped = [c[0] for c in cases if not c[6]]
        cases = [c for c in cases if c[6]]
        if skipped:
            print(f"# --smp: left out {', '.join(skipped)} (no -S in that rt-tests program, or forked mode)")
    if not cases:
        die("no case left to run")
    exes = {}
    for c in cases:
        exe = shutil.which(c[2])
        if exe is None:
            die(f"{c[2]} not found: apt-get install rt-tests")
        exes[c[2]] = exe
    if not args.smp and args.cpu not in os.sched_getaffinity(0):
        die(f"--cpu {args.cpu} is not available to this process")
    rtlat = resolve_rtlat(args.rtlat)

    def version(cmd: list[str]) -> str:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return "?"
        text = (r.stdout or r.stderr).strip()
        return text.splitlines()[0] if text else "?"

    env = {"kernel": platform.release(), "cpus_online": os.cpu_count(),
           "rt_tests_version": version([exes[cases[0][2]], "--help"]),
           "rtlat": str(rtlat), "rtlat_version": version([str(rtlat), "--version"])}
    place = "one pair per CPU (-S)" if args.smp else f"one pair on CPU {args.cpu}"
    print(f"# kernel {env['kernel']}, {env['cpus_online']} CPUs; {env['rt_tests_version']}; "
          f"{env['rtlat_version']} ({rtlat})")
    print(f"# priority {args.priority}, interval {args.interval} us, {place}, {args.pairs} pairs, "
          f"{args.seconds} s per run; rtlat variants: "
          + ", ".join(f"{VARIANTS[v]} ({'waker one below' if v == 'default' else 'equal priorities'})"
                      for v in args.variants))
    print(flush=True)

    header = f"{'case':<20} {'tool':<12} {'pair':>4} {'samples':>8} {'min us':>8} {'avg us':>8} {'max us':>9} {'lost':>6} {'VmHWM kB':>9}"
    runs: list[dict] = []
    failed = False
    tools_for = lambda c: [c[2]] + [VARIANTS[v] for v in args.variants]
    with tempfile.TemporaryDirectory(prefix="rtlat-vs-rt-tests-") as td:
        tmp = Path(td)
        print(header)
        print("-" * len(header), flush=True)
        for c in cases:
            name, label, prog, rt_extra, via, rtlat_extra, _ = c
            for k in range(args.pairs):
                tools = tools_for(c)
                order = tools if k % 2 == 0 else tools[::-1]
                for tool in order:
                    tag = f"{name}-{tool}-{k}".replace("=", "eq")
                    try:
                        if tool == prog:
                            r = run_rt_tests(exes[prog], rt_extra, args, tmp, tag)
                        else:
                            variant = next(v for v, t in VARIANTS.items() if t == tool)
                            r = run_rtlat(rtlat, via, rtlat_extra, variant, args, tmp, tag)
                    except RunFailed as e:
                        print(f"{label:<20} {tool:<12} {k:>4}  FAILED: {e}", flush=True)
                        failed = True
                        continue
                    r.update(case=name, tool=tool, pair=k)
                    runs.append(r)
                    lost = "-" if r["lost"] is None else str(r["lost"])
                    print(f"{label:<20} {tool:<12} {k:>4} {r['samples']:>8} {r['min_us']:>8.2f} "
                          f"{r['avg_us']:>8.2f} {r['max_us']:>9.1f} {lost:>6} {r['rss_kb']:>9}", flush=True)

    print()
    summary = []
    for c in cases:
        name, label, prog = c[0], c[1], c[2]
        base = [r for r in runs if r["case"] == name and r["tool"] == prog]
        if not base:
            print(f"RATIO {label} n/a ({prog} has no successful run)")
            continue
        b_avg = statistics.fmean(r["avg_us"] for r in base)
        b_max = statistics.fmean(r["max_us"] for r in base)
        b_rss = statistics.fmean(r["rss_kb"] for r in base)
        print(f"# mean {prog:<12} {label}: avg {b_avg:.2f} us, max {b_max:.1f} us, "
              f"VmHWM {b_rss:.0f} kB over {len(base)} runs")
        for v in args.variants:
            tool = VARIANTS[v]
            mine = [r for r in runs if r["case"] == name and r["tool"] == tool]
            if not mine:
                print(f"RATIO {label} {tool} n/a (no successful rtlat run)")
                continue
            m_avg = statistics.fmean(r["avg_us"] for r in mine)
            m_max = statistics.fmean(r["max_us"] for r in mine)
            m_rss = statistics.fmean(r["rss_kb"] for r in mine)
            ra, rm, rr = ratio(m_avg, b_avg), ratio(m_max, b_max), ratio(m_rss, b_rss)
            print(f"# mean {tool:<12} {label}: avg {m_avg:.2f} us, max {m_max:.1f} us, "
                  f"VmHWM {m_rss:.0f} kB over {len(mine)} runs")
            print(f"RATIO {label} {tool}/{prog} avg_latency={fmt_ratio(ra)} (target <= 1.0) "
                  f"max_latency={fmt_ratio(rm)} (information only) vmhwm={fmt_ratio(rr)}")
            summary.append({"case": name, "label": label, "rt_tests": prog, "rtlat_variant": v,
                            "rt_tests_mean": {"avg_us": b_avg, "max_us": b_max, "rss_kb": b_rss},
                            "rtlat_mean": {"avg_us": m_avg, "max_us": m_max, "rss_kb": m_rss},
                            "ratio_of_means": {"avg_latency": ra, "max_latency": rm, "vmhwm": rr}})

    if args.json is not None:
        doc = {"settings": {"pairs": args.pairs, "seconds": args.seconds, "interval_us": args.interval,
                            "priority": args.priority, "cpu": None if args.smp else args.cpu,
                            "smp": args.smp, "cases": args.cases, "variants": args.variants},
               "environment": env, "runs": runs, "summary": summary, "any_run_failed": failed}
        try:
            args.json.write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as e:
            die(f"cannot write {args.json}: {e}")
        print(f"# raw numbers written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
