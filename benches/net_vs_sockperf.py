#!/usr/bin/env python3
"""Compare `rtlat net ping` with `sockperf ping-pong --full-rtt` across a veth pair.

What it measures
----------------
Two network namespaces joined by a veth pair (10.202.0.1 server side,
10.202.0.2 client side; not loopback, nothing leaves them) carry UDP
ping-pong traffic of one message size. For each rate (--rates, default
10000 and 1000 per second), without and with background bulk UDP (--bulk,
default 4MB/s; `rtlat load net` from the client namespace to a socat sink in
the server one, running beside every tool alike), it runs --pairs rounds
(default 5) of, interleaved (the order alternates each round so machine
drift favours no tool):

* rtlat:     `rtlat net serve` / `rtlat net ping --rate R --size S --count R*T`
             as it runs by default (TX/RX split on: kernel timestamps on both
             sides; on a kernel that is not PREEMPT_RT the one thread polls
             for each reply up to 50us before it blocks);
* nosplit:   the same with `--no-split` (round trip only, as sockperf);
* block, nosplit+block: both again with `--spin off` (the thread blocks for
             each reply at once, and sleeps to each send slot; for reference,
             no target; --no-block leaves these out);
* block+pace, nosplit+block+pace: the same with `--pace spin` (the thread
             reads the clock until each send slot instead of sleeping, as
             sockperf's --mps pacing does, so the two wait for the reply the
             same way and reach the send alike);
* sockperf:  `sockperf server` / `sockperf ping-pong --mps R -m S -t T --full-rtt`.

Per run it prints the round trip's median and p99, the client's peak
resident memory (VmHWM, read from /proc while it runs) and its CPU time (user +
system) per sample; then the ratios rtlat / sockperf of the median and p99
(ratio of the per-tool medians over the rounds):

    RATIO rate=10000 bulk=- rtlat/sockperf   p50=1.02 p99=0.97 (target <= 1.05)
    RATIO rate=10000 bulk=- nosplit/sockperf p50=0.98 p99=0.95 (target <= 1.0)
    RATIO rate=10000 bulk=- block/sockperf   p50=1.16 p99=1.44 (for reference)
    RATIO rate=10000 bulk=- block+pace/sockperf p50=1.05 p99=0.88 (target p50 <= 1.0, p99 <= 1.05)

Equivalent settings
-------------------
Both sides of both tools run at SCHED_FIFO 80 (sockperf under `chrt -f 80`,
rtlat by default), unpinned unless --cpu-server/--cpu-client pin both tools.
Both run under the same PM QoS request: rtlat holds /dev/cpu_dma_latency at
0 by default and sockperf does not, so this script holds it at 0 itself for
the whole run (every tool alike); with --dma-latency off it holds nothing and
passes `--dma-latency off` to rtlat. This matters more than anything else
here: on a VM with the haltpoll idle driver an idle vCPU halts without the
request and polls with it, and the wake-up of a halted vCPU then outweighs
the veth round trip being measured.
sockperf measures the full round trip (--full-rtt) with the TSC; rtlat with
CLOCK_REALTIME around send() and recvmsg() on its one-thread path (one thread
sends and takes each reply, as sockperf). sockperf drops its first 400 ms
(warm-up) from the statistics; rtlat keeps every packet. sockperf
busy-waits between sends (its CPU time per sample shows it); rtlat sleeps,
except with `--pace spin`.

How to run
----------
    sudo apt-get install sockperf socat iproute2
    cargo build --release
    sudo benches/net_vs_sockperf.py [--pairs 5] [--rates 10000,1000] [--size 64] [--seconds 3]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RTLAT = os.environ.get("RTLAT_BIN", os.path.join(HERE, "..", "target", "release", "rtlat"))


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


class Pair:
    """Two namespaces joined by a veth pair; deleted on exit, even on failure."""

    def __init__(self):
        tag = f"{os.getpid()}"
        self.a, self.b = f"rtlat-bench-{tag}-a", f"rtlat-bench-{tag}-b"
        self.ip_a, self.ip_b = "10.202.0.1", "10.202.0.2"

    def __enter__(self):
        sh("ip", "netns", "add", self.a)
        sh("ip", "netns", "add", self.b)
        va, vb = f"rlb{os.getpid()}a", f"rlb{os.getpid()}b"
        sh("ip", "link", "add", va, "netns", self.a, "type", "veth",
           "peer", "name", vb, "netns", self.b)
        for ns, dev, ip in ((self.a, va, self.ip_a), (self.b, vb, self.ip_b)):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        return self

    def __exit__(self, *exc):
        for ns in (self.a, self.b):
            sh("ip", "netns", "del", ns, check=False)

    def cmd(self, ns, args, cpu=None, fifo=False):
        pre = ["ip", "netns", "exec", ns]
        if fifo:
            pre += ["chrt", "-f", "80"]
        if cpu is not None:
            pre += ["taskset", "-c", str(cpu)]
        return pre + args


def start(args):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    if p.poll() is not None:
        sys.exit(f"server ended at once: {' '.join(args)}\n{p.stderr.read()}")
    return p


def stop(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def vm_hwm(pid):
    """VmHWM of a running process in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measured(args):
    """Run `args` to its end; (stdout+stderr, exit code, peak RSS KiB, CPU seconds).

    The peak RSS is VmHWM read from /proc while the tool runs (wait4's
    ru_maxrss would count the forked copy of this Python process too)."""
    out = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True)
    hwm = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        hwm = max(hwm, vm_hwm(p.pid))
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    return out.read(), p.returncode, hwm, ru.ru_utime + ru.ru_stime


class DmaLatency:
    """Hold /dev/cpu_dma_latency at `value` us while open (None: hold nothing)."""

    def __init__(self, value):
        self.value, self.fd = value, None

    def __enter__(self):
        if self.value is not None:
            self.fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
            os.write(self.fd, self.value.to_bytes(4, sys.byteorder, signed=True))
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)


def run_rtlat(pair, a, rate, tmp, extra):
    srv = start(pair.cmd(pair.a, [RTLAT, "net", "serve", "--listen", f"{pair.ip_a}:7357",
                                  "--quiet", "--no-sink"]
                         + (["--cpu", str(a.cpu_server)] if a.cpu_server is not None else [])))
    out = os.path.join(tmp, "ping.json")
    try:
        args = [RTLAT, "net", "ping", f"{pair.ip_a}:7357", "--rate", f"{rate}/s",
                "--size", str(a.size), "--count", str(rate * a.seconds), "--quiet",
                "--json", out] + extra
        if a.dma_latency == "off":
            args += ["--dma-latency", "off"]
        if a.cpu_client is not None:
            args += ["--cpu", str(a.cpu_client)]
        text, code, rss, cpu = measured(pair.cmd(pair.b, args))
        if code != 0:
            sys.exit(f"rtlat ping failed ({code}): {text}")
    finally:
        stop(srv)
    res = json.load(open(out))
    rtt = next(t for t in res["threads"] if t["name"] == "rtt")["summary"]
    pct = {p["p"]: p["ns"] / 1000.0 for p in rtt["percentiles"]}
    d = res["details"]
    samples = rtt["samples"]
    return (pct[50.0], pct[99.0], rss, cpu / max(samples, 1) * 1e6,
            f"lost={d['lost']} path={d['path']} skipped={d['send_overruns']}")


PCT = re.compile(r"percentile (\d+\.\d+) =\s+([\d.]+)")
RECEIVED = re.compile(r"ReceivedMessages=(\d+)")
DROP = re.compile(r"# dropped messages = (\d+)")


def run_sockperf(pair, a, rate):
    srv = start(pair.cmd(pair.a, ["sockperf", "server", "-i", pair.ip_a, "-p", "11111"],
                         cpu=a.cpu_server, fifo=True))
    try:
        text, _, rss, cpu = measured(pair.cmd(pair.b, [
            "sockperf", "ping-pong", "-i", pair.ip_a, "-p", "11111", "-m", str(a.size),
            "--mps", str(rate), "-t", str(a.seconds), "--full-rtt"],
            cpu=a.cpu_client, fifo=True))
    finally:
        stop(srv)
    pct = {float(p): float(v) for p, v in PCT.findall(text)}
    got = RECEIVED.findall(text)
    if 50.0 not in pct or 99.0 not in pct or not got:
        sys.exit(f"cannot read sockperf output:\n{text}")
    drop = DROP.search(text)
    samples = int(got[-1])
    return (pct[50.0], pct[99.0], rss, cpu / max(samples, 1) * 1e6,
            f"dropped={drop.group(1) if drop else '?'} received={samples}")


class Bulk:
    """Background UDP from the client namespace to a sink in the server one."""

    def __init__(self, pair, rate):
        self.pair, self.rate, self.procs = pair, rate, []

    def __enter__(self):
        if self.rate:
            self.procs.append(start(self.pair.cmd(self.pair.a, [
                "socat", "-u", f"UDP-RECV:7358,bind={self.pair.ip_a}", "/dev/null"])))
            self.procs.append(start(self.pair.cmd(self.pair.b, [
                RTLAT, "load", f"net:{self.rate}:payload=1400",
                "--load-target", f"{self.pair.ip_a}:7358", "--quiet"])))
        return self

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            stop(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--rates", default="10000,1000", help="packets per second, comma-separated")
    ap.add_argument("--size", type=int, default=64, help="message size in bytes (>= 48)")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--bulk", default="4MB/s", help="background UDP rate ('' for none)")
    ap.add_argument("--cpu-server", type=int, default=None)
    ap.add_argument("--cpu-client", type=int, default=None)
    ap.add_argument("--no-block", action="store_true",
                    help="leave out the runs with --spin off")
    ap.add_argument("--dma-latency", default="0",
                    help="PM QoS held for every tool alike: N us (default 0, rtlat's default) or off")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (network namespaces, SCHED_FIFO)")
    for tool in ("sockperf", "socat", "ip", "chrt", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install sockperf socat iproute2 util-linux")
    if not os.path.exists(RTLAT):
        sys.exit(f"{RTLAT} is missing: cargo build --release")
    blocking = ["block", "nosplit+block", "block+pace", "nosplit+block+pace"]
    tools = ["rtlat", "nosplit"] + ([] if a.no_block else blocking) + ["sockperf"]
    print(f"# size={a.size}B seconds={a.seconds} pairs={a.pairs} "
          f"cpu_server={a.cpu_server} cpu_client={a.cpu_client} dma_latency={a.dma_latency}")
    summary = []
    dma = None if a.dma_latency == "off" else int(a.dma_latency)
    with Pair() as pair, tempfile.TemporaryDirectory() as tmp, DmaLatency(dma):
        for rate in (int(r) for r in a.rates.split(",")):
            for bulk in [None] + ([a.bulk] if a.bulk else []):
                print(f"## rate={rate}/s bulk={bulk or '-'}")
                print(f"{'round':>5} {'tool':<12} {'p50_us':>9} {'p99_us':>9} {'VmHWM_KiB':>9} "
                      f"{'cpu_us/sample':>13}  notes")
                rows = {t: [] for t in tools}
                with Bulk(pair, bulk):
                    for k in range(a.pairs):
                        order = tools if k % 2 == 0 else list(reversed(tools))
                        for t in order:
                            if t == "sockperf":
                                r = run_sockperf(pair, a, rate)
                            else:
                                extra = (["--no-split"] if t.startswith("nosplit") else []) + \
                                    (["--spin", "off"] if "block" in t else []) + \
                                    (["--pace", "spin"] if t.endswith("pace") else [])
                                r = run_rtlat(pair, a, rate, tmp, extra)
                            rows[t].append(r)
                            print(f"{k:>5} {t:<12} {r[0]:>9.3f} {r[1]:>9.3f} {r[2]:>9} "
                                  f"{r[3]:>13.3f}  {r[4]}", flush=True)
                med = {t: [statistics.median(x[i] for x in rows[t]) for i in range(4)]
                       for t in tools}
                for t in tools[:-1]:
                    target = 1.0 if t.startswith("nosplit") else 1.05
                    goal = "for reference" if t.endswith("block") else f"target <= {target}"
                    if t == "block+pace":
                        goal = "target p50 <= 1.0, p99 <= 1.05"
                    line = (f"RATIO rate={rate} bulk={bulk or '-'} {t + '/sockperf':<27} "
                            f"p50={med[t][0] / med['sockperf'][0]:.2f} "
                            f"p99={med[t][1] / med['sockperf'][1]:.2f} ({goal})")
                    print(line)
                    summary.append(line)
                line = (f"MEMCPU rate={rate} bulk={bulk or '-'} VmHWM KiB "
                        + " ".join(f"{t}={med[t][2]:.0f}" for t in tools)
                        + "; cpu us/sample "
                        + " ".join(f"{t}={med[t][3]:.3f}" for t in tools))
                print(line, flush=True)
                summary.append(line)
    print("# summary")
    for line in summary:
        print(line)


if __name__ == "__main__":
    main()
