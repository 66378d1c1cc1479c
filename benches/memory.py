#!/usr/bin/env python3
"""Peak resident memory (VmHWM) of rtlat's local benchmarks on one CPU, beside
the rt-tests tool that measures the same thing, on this machine.

What it measures
----------------
Each run is started through GNU time (/usr/bin/time, package "time"), whose
%M is the command's ru_maxrss: its VmHWM (kB) when it ended, everything it
ever held resident at once, locked memory included (all these runs lock
their memory). (Not from this script's own os.wait4: a process's ru_maxrss
keeps the peak of the process it was forked from, here a Python interpreter.) The pairs, each on CPU 0, SCHED_FIFO
80, at a period of 1 ms, for --seconds:

    rtlat timer --cpus 0                 cyclictest -t1 -a0 -m -p80 -i1000 -d0 -q
    rtlat switch --cpus 0 --via futex    ptsematest -t1 -a0 -p80 -i1000 -d0 -q
    rtlat cruncher --cpu 0               (no rt-tests anchor: beside cyclictest)

Runs are interleaved, --pairs times (default 3): pair k runs the anchor first
when k is even, rtlat first when k is odd. It prints every run, then per case
the mean VmHWM of each tool and their ratio, e.g.

    MEMORY timer rtlat 4625 kB (max 4972) cyclictest 2592 kB ratio=1.78 (targets: <= 4096 kB MET, ratio <= 1.5 MISSED)
    MEMORY timer rtlat-static 2521 kB (max 2536) cyclictest 2604 kB ratio=0.97 (targets: <= 4096 kB MET, ratio <= 1.15 MET)

The ratio targets (timer only): the glibc build at most 1.5 times
cyclictest's VmHWM, the static build at most 1.15 times (it maps no
shared library, so it is held to nearly the anchor's figure).

The figure includes the code the kernel maps for each binary: a fault in a
file's mapping maps the cached pages around it as well (fault-around, 64 KiB
by default; on kernels that map whole large folios of the page cache, the
whole folio), so once a run has touched a little of most 64 KiB stretches of
a binary's text, nearly all of it is resident: a larger binary costs more
whatever it does. (rtlat timer on Linux 6.18, order-0 page cache: 2.2-2.5 MB
of the glibc build's 2.7 MB of text resident, 2.3 MB of the static build's
2.8 MB; cyclictest's own text is 28 kB, and libc's is resident for both.)

How to run
----------
As root, with rt-tests installed (apt-get install rt-tests):

    sudo benches/memory.py                 # 3 cases x 3 pairs x 5 s (~1.5 min)
    sudo benches/memory.py --pairs 5 --seconds 10 --rtlat ./rtlat

--rtlat (or --binary) may be given more than once: each binary is measured
in the same interleaved pairs. Without it: target/release/rtlat (the glibc
build) and, when it has been built (`cargo build --release --target
x86_64-unknown-linux-musl`, as scripts/cross.sh does), the static musl build
beside it. The board build (`cargo build --release --no-default-features`,
docs/boards.md) is measured the same way: pass its binary with --binary PATH.

Why two builds: mlockall(MCL_CURRENT) makes every page of every mapping
resident, so the glibc build holds all of libc.so.6 (~1.4 MB), ld.so
(~0.2 MB), libgcc_s (~0.1 MB) and glibc's heap (~0.5 MB, grown by the command
line parser before the run) besides its own code; the static musl build maps
only its own file and a small heap. Python 3.11 standard library only.

Page faults after the warm-up (--faults)
----------------------------------------
Memory is locked as it is touched (MCL_ONFAULT), so a page the measuring
path first touches mid-run would fault there. With --faults, each case runs
once per binary for --seconds (60 makes the acceptance run) and the script
reads the minor faults (field 10 of /proc/PID/task/TID/stat) of every
real-time thread of rtlat (the measuring threads: the only ones not
SCHED_OTHER) once the warm-up is over (WARMUP_S after start) and again a
second before the run ends, and prints

    FAULTS timer rtlat threads=1 minor=0 major=0 (from +3s to +59s; target: 0)

    sudo benches/memory.py --faults --seconds 60

Exit status: 0 after a complete comparison (with --faults: and no fault
after the warm-up), 2 on bad usage or a missing prerequisite, 1 if a run
failed or a measuring thread faulted.
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
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RTLAT = REPO_ROOT / "target" / "release" / "rtlat"
STATIC_RTLAT = REPO_ROOT / "target" / "x86_64-unknown-linux-musl" / "release" / "rtlat"
TARGET_KB = {"timer": 4096, "switch": 8192, "cruncher": 8192}
# Per case, per build ("rtlat": a glibc build, "rtlat-static": a musl one).
TARGET_RATIO = {"timer": {"rtlat": 1.5, "rtlat-static": 1.15}}


def die(msg: str, code: int = 2) -> NoReturn:
    print(f"memory: error: {msg}", file=sys.stderr)
    sys.exit(code)


def positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


GNU_TIME = "/usr/bin/time"


def peak_kb(cmd: list[str], timeout: float) -> int:
    """Run cmd to completion and return its VmHWM (kB).

    Through GNU time (its %M is the command's ru_maxrss): a process's
    ru_maxrss keeps the peak of the process it was forked from, so this
    script's own (a Python interpreter, ~15 MB) would hide the figure if the
    command were started from here directly; time's is ~0.5 MB.
    """
    with tempfile.TemporaryDirectory() as td:
        out, err = Path(td) / "rss", Path(td) / "err"
        with open(err, "wb") as e:
            p = subprocess.run([GNU_TIME, "-f", "%M", "-o", str(out), *cmd], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=e, timeout=timeout)
        if p.returncode != 0:
            text = err.read_text(errors="replace").strip()[-300:]
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {text}")
        return int(out.read_text().split()[-1])


WARMUP_S = 3.0


def task_faults(pid: int) -> dict[int, tuple[int, int]]:
    """(minor, major) faults of each thread of pid not under SCHED_OTHER."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        # Fields after the command, whose parentheses may hold anything:
        # field 3 is rest[0], so field n is rest[n - 3].
        rest = stat[stat.rindex(")") + 2:].split()
        if int(rest[41 - 3]) != 0:
            out[int(tid)] = (int(rest[10 - 3]), int(rest[12 - 3]))
    return out


def faults_after_warmup(cmd: list[str], seconds: int) -> tuple[int, int, int]:
    """Run cmd (a run of `seconds`) and return how many real-time threads it
    had and their minor and major faults from WARMUP_S after start to a
    second before its end (the threads' own set-up and end are outside)."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(WARMUP_S)
        first = task_faults(p.pid)
        time.sleep(max(seconds - 1 - WARMUP_S, 0))
        last = task_faults(p.pid)
        _, err = p.communicate(timeout=seconds + 60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {err.decode(errors='replace')[-300:]}")
    threads = sorted(set(first) & set(last))
    if not threads:
        raise RuntimeError(f"{' '.join(cmd)}: no real-time thread seen from +{WARMUP_S:.0f}s to the end")
    minor = sum(last[t][0] - first[t][0] for t in threads)
    major = sum(last[t][1] - first[t][1] for t in threads)
    return len(threads), minor, major


def verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def label_binaries(binaries: list[Path]) -> list[str]:
    """Names for the report: "rtlat" for a glibc build, "rtlat-static" for a
    static one (`file` is not needed: the musl target's directory says it),
    numbered when two binaries would get the same name."""
    base = ["rtlat-static" if "musl" in str(b) else "rtlat" for b in binaries]
    return [f"{n}#{i}" if base.count(n) > 1 else n for i, n in enumerate(base)]


def main() -> int:
    ap = argparse.ArgumentParser(description="VmHWM of rtlat timer/switch/cruncher on one CPU beside "
                                 "cyclictest and ptsematest (interleaved pairs).")
    ap.add_argument("--rtlat", "--binary", type=Path, action="append", default=None,
                    help=f"an rtlat binary; repeat to measure several [default: {DEFAULT_RTLAT}, and "
                    f"{STATIC_RTLAT} when it exists]")
    ap.add_argument("--pairs", type=positive, default=3, help="interleaved pairs per case [default: 3]")
    ap.add_argument("--seconds", type=positive, default=5, help="length of each run [default: 5]")
    ap.add_argument("--faults", action="store_true",
                    help="instead: each case once per binary, the measuring threads' page faults after the "
                    "warm-up (use --seconds 60)")
    args = ap.parse_args()
    if args.faults and args.seconds <= WARMUP_S + 1:
        die(f"--faults needs --seconds above {WARMUP_S + 1:.0f}")
    if os.geteuid() != 0:
        die("must run as root (SCHED_FIFO and mlockall)")
    binaries = args.rtlat or [DEFAULT_RTLAT] + ([STATIC_RTLAT] if STATIC_RTLAT.is_file() else [])
    for b in binaries:
        if not (b.is_file() and os.access(b, os.X_OK)):
            die(f"{b}: not an executable file (cargo build --release, or pass --rtlat)")
    labels = label_binaries(binaries)
    if not os.access(GNU_TIME, os.X_OK):
        die(f"{GNU_TIME} not found: apt-get install time")
    tools = {t: shutil.which(t) for t in ("cyclictest", "ptsematest")}
    for t, exe in tools.items():
        if exe is None:
            die(f"{t} not found: apt-get install rt-tests")
    s = str(args.seconds)
    cyclictest = [tools["cyclictest"], "-t1", "-a0", "-m", "-p80", "-i1000", "-d0", "-q", "-D", s]
    # (case, rtlat's arguments, anchor, anchor's command)
    cases = [
        ("timer", ["timer", "--cpus", "0", "--period", "1ms", "--duration", f"{s}s", "--quiet"],
         "cyclictest", cyclictest),
        ("switch", ["switch", "--cpus", "0", "--via", "futex", "--period", "1ms", "--duration", f"{s}s",
                    "--quiet"],
         "ptsematest", [tools["ptsematest"], "-t1", "-a0", "-p80", "-i1000", "-d0", "-q", "-D", s]),
        ("cruncher", ["cruncher", "--cpu", "0", "--work", "1ms", "--period", "10ms", "--duration", f"{s}s",
                      "--quiet"],
         "cyclictest", cyclictest),
    ]
    if args.faults:
        return faults(cases, labels, binaries, args.seconds)
    print(f"# {args.pairs} interleaved pairs per case, {args.seconds} s per run, CPU 0; VmHWM = ru_maxrss (kB)")
    for label, b in zip(labels, binaries):
        print(f"# {label}: {b}")
    width = max(11, *(len(label) for label in labels))
    print(f"{'case':<9} {'tool':<{width}} {'pair':>4} {'VmHWM kB':>9}", flush=True)
    failed = False
    results: dict[tuple[str, str], list[int]] = {}
    for name, mine, anchor_name, anchor in cases:
        for k in range(args.pairs):
            order = [(label, [str(b), *mine]) for label, b in zip(labels, binaries)]
            order.append((anchor_name, anchor))
            if k % 2 == 0:
                order.reverse()
            for tool, cmd in order:
                try:
                    kb = peak_kb(cmd, timeout=args.seconds * 3 + 60)
                except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                    print(f"{name:<9} {tool:<{width}} {k:>4}  FAILED: {e}", flush=True)
                    failed = True
                    continue
                results.setdefault((name, tool), []).append(kb)
                print(f"{name:<9} {tool:<{width}} {k:>4} {kb:>9}", flush=True)
    print()
    for name, _, anchor_name, _ in cases:
        for label in labels:
            mine, base = results.get((name, label)), results.get((name, anchor_name))
            if not mine or not base:
                print(f"MEMORY {name} {label} n/a (a tool has no successful run)")
                continue
            m, b = statistics.fmean(mine), statistics.fmean(base)
            targets = [f"<= {TARGET_KB[name]} kB {verdict(m <= TARGET_KB[name])}"]
            ratio = TARGET_RATIO.get(name, {}).get(label.split("#")[0])
            if ratio is not None:
                targets.append(f"ratio <= {ratio} {verdict(m / b <= ratio)}")
            print(f"MEMORY {name} {label} {m:.0f} kB (max {max(mine)}) {anchor_name} {b:.0f} kB "
                  f"ratio={m / b:.2f} (targets: {', '.join(targets)})")
    return 1 if failed else 0


def faults(cases: list, labels: list[str], binaries: list[Path], seconds: int) -> int:
    """--faults: each case once per binary; 1 if a run failed or faulted."""
    bad = False
    for name, mine, _, _ in cases:
        for label, b in zip(labels, binaries):
            try:
                n, minor, major = faults_after_warmup([str(b), *mine], seconds)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                print(f"FAULTS {name} {label} FAILED: {e}", flush=True)
                bad = True
                continue
            bad |= minor + major > 0
            print(f"FAULTS {name} {label} threads={n} minor={minor} major={major} "
                  f"(from +{WARMUP_S:.0f}s to +{seconds - 1}s; target: 0)", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
