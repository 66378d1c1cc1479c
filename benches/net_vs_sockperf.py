#!/usr/bin/env python3
"""Compare `rtlat net ping` with sockperf across a veth pair, on this machine.

What it measures
----------------
Two network namespaces joined by a veth pair (10.202.0.1 server side,
10.202.0.2 client side; nothing leaves them) carry UDP ping-pong traffic
of one message size at one rate. For --pairs rounds (default 3) it runs,
interleaved (the order alternates each round so machine drift favours no
tool):

* rtlat:     `rtlat net serve` in the server namespace,
             `rtlat net ping --rate R --size S --count R*T` in the client one;
* pingpong:  `sockperf server` / `sockperf ping-pong --mps R -m S -t T --full-rtt`;
* underload: `sockperf server` / `sockperf under-load --mps R -m S -t T --full-rtt`
             (sockperf answers 1 message in 100 then; its latency is of those;
             skipped with --cpu-client: its busy-waiting sender thread starves its
             receiver thread when both are pinned to one CPU at SCHED_FIFO).

and prints the round-trip median and p99 of each run, then the ratios
rtlat / sockperf of the median and p99 (ratio of the per-tool medians over
the rounds), e.g.

    RATIO vs pingpong  p50=0.91 p99=0.88 (target <= 1.0)

Equivalent settings
-------------------
Both sides of both tools run at SCHED_FIFO 80 (sockperf under `chrt -f 80`,
rtlat by default), unpinned unless --cpu-server/--cpu-client pin both tools
(taskset for sockperf, --cpu for rtlat). sockperf measures the full round
trip (--full-rtt) with the TSC; rtlat with CLOCK_REALTIME around send() and
recvmsg(). sockperf drops its first 400 ms (warm-up) and its last messages
from the statistics; rtlat keeps every packet. rtlat additionally reads a
kernel TX timestamp per packet from the socket's error queue and an RX
timestamp per datagram (both sides): the cost of splitting TX and RX is part
of what is compared.

How to run
----------
    sudo apt-get install sockperf iproute2
    cargo build --release
    sudo benches/net_vs_sockperf.py [--pairs 3] [--rate 10000] [--size 64] [--seconds 3]
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


def run_rtlat(pair, a, tmp):
    srv = start(pair.cmd(pair.a, [RTLAT, "net", "serve", "--listen", f"{pair.ip_a}:7357",
                                  "--quiet", "--no-sink"]
                         + (["--cpu", str(a.cpu_server)] if a.cpu_server is not None else [])))
    out = os.path.join(tmp, "ping.json")
    try:
        args = [RTLAT, "net", "ping", f"{pair.ip_a}:7357", "--rate", f"{a.rate}/s",
                "--size", str(a.size), "--count", str(a.rate * a.seconds), "--quiet",
                "--json", out]
        if a.cpu_client is not None:
            args += ["--cpu", str(a.cpu_client)]
        r = subprocess.run(pair.cmd(pair.b, args), capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"rtlat ping failed ({r.returncode}): {r.stderr}")
    finally:
        stop(srv)
    res = json.load(open(out))
    rtt = next(t for t in res["threads"] if t["name"] == "rtt")["summary"]
    pct = {p["p"]: p["ns"] / 1000.0 for p in rtt["percentiles"]}
    lost = res["details"]["lost"]
    return pct[50.0], pct[99.0], rtt["avg_ns"] / 1000.0, f"lost={lost}"


PCT = re.compile(r"percentile (\d+\.\d+) =\s+([\d.]+)")
AVG = re.compile(r"avg-rtt=([\d.]+)")
DROP = re.compile(r"# dropped messages = (\d+)")


def run_sockperf(pair, a, mode):
    srv = start(pair.cmd(pair.a, ["sockperf", "server", "-i", pair.ip_a, "-p", "11111"],
                         cpu=a.cpu_server, fifo=True))
    try:
        r = subprocess.run(pair.cmd(pair.b, ["sockperf", mode, "-i", pair.ip_a, "-p", "11111",
                                             "-m", str(a.size), "--mps", str(a.rate),
                                             "-t", str(a.seconds), "--full-rtt"],
                                    cpu=a.cpu_client, fifo=True),
                           capture_output=True, text=True)
    finally:
        stop(srv)
    text = r.stdout + r.stderr
    pct = {float(p): float(v) for p, v in PCT.findall(text)}
    avg = AVG.search(text)
    if 50.0 not in pct or 99.0 not in pct or not avg:
        sys.exit(f"cannot read sockperf {mode} output:\n{text}")
    drop = DROP.search(text)
    return pct[50.0], pct[99.0], float(avg.group(1)), f"dropped={drop.group(1) if drop else '?'}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10000, help="packets per second")
    ap.add_argument("--size", type=int, default=64, help="message size in bytes (>= 48)")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--cpu-server", type=int, default=None)
    ap.add_argument("--cpu-client", type=int, default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (network namespaces, SCHED_FIFO)")
    for tool in ("sockperf", "ip", "chrt", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install sockperf iproute2 util-linux")
    if not os.path.exists(RTLAT):
        sys.exit(f"{RTLAT} is missing: cargo build --release")
    tools = ["rtlat", "pingpong", "underload"]
    if a.cpu_client is not None:
        # sockperf under-load busy-waits in its sender thread: pinned at SCHED_FIFO
        # beside its receiver thread on one CPU, the receiver never runs.
        tools.remove("underload")
    rows = {t: [] for t in tools}
    print(f"# rate={a.rate}/s size={a.size}B seconds={a.seconds} pairs={a.pairs} "
          f"cpu_server={a.cpu_server} cpu_client={a.cpu_client}")
    print(f"{'round':>5} {'tool':<10} {'p50_us':>9} {'p99_us':>9} {'avg_us':>9}  notes")
    with Pair() as pair, tempfile.TemporaryDirectory() as tmp:
        for k in range(a.pairs):
            order = tools if k % 2 == 0 else list(reversed(tools))
            for t in order:
                if t == "rtlat":
                    r = run_rtlat(pair, a, tmp)
                else:
                    r = run_sockperf(pair, a, "ping-pong" if t == "pingpong" else "under-load")
                rows[t].append(r)
                print(f"{k:>5} {t:<10} {r[0]:>9.3f} {r[1]:>9.3f} {r[2]:>9.3f}  {r[3]}", flush=True)
    med = {t: (statistics.median(x[0] for x in rows[t]), statistics.median(x[1] for x in rows[t]))
           for t in tools}
    for t in tools[1:]:
        p50 = med["rtlat"][0] / med[t][0]
        p99 = med["rtlat"][1] / med[t][1]
        print(f"RATIO vs {t:<9} p50={p50:.2f} p99={p99:.2f} (target <= 1.0)")


if __name__ == "__main__":
    main()
