#!/usr/bin/env python3
"""Record one CPU's raw trace pages with the kernel's own text rendering of
the same buffer, as a fixture for the `--explain` decoder's unit tests
(tests/fixtures/trace/).

Run as root: creates tracefs instance `rtlat-fixture-PID`, enables the
events `--explain` enables (src/explain/events.rs: REQUIRED, OPTIONAL and
every irq_vectors *_entry/*_exit), sets trace_clock mono and a CPU mask of
the one CPU, runs a small known workload pinned to that CPU, stops tracing,
then saves under OUT a tree shaped like tracefs:

  events/header_page, events/header_event, events/SYS/EVENT/format
  per_cpu/cpuN/trace          the kernel's text rendering (microseconds)
  per_cpu/cpuN/trace-raw      the same with options/raw: pid, cpu, time in
                              ns and event type id of every event
  per_cpu/cpuN/stats          entries and overrun
  per_cpu/cpuN/trace_pipe_raw the binary ring pages, read last (it consumes)

`trace` does not consume and tracing is off, so the text, the raw text and
the pages hold the same events: checked before the pages are read (the
text's entry count equals the stats' entries), and the line counts of the
two text views are equal. The instance is removed at the end.

  scripts/record-trace-fixture.py OUT [--cpu 1] [--buffer-kb 1024] [--workload quiet|flood]

`quiet`: a 1 ms sleep loop, a 300 ms sleep during which tracing is
off for 200 ms (the next event's time needs a time-extend record), a busy
spin, a written and fsynced file (a block-device IRQ where its queue's IRQ
is on the CPU), loopback UDP datagrams (NET_RX softirqs). `flood`: a 100 us
sleep loop long enough to overwrite a small buffer (pair with
--buffer-kb 8: the ring pages then carry the missed-events count).
"""

import argparse
import os
import shutil
import socket
import sys
import time

TRACEFS = "/sys/kernel/tracing"
REQUIRED = ["sched/sched_switch", "sched/sched_wakeup"]
OPTIONAL = [
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "power/cpu_idle",
    "nmi/nmi_handler",
    "sched/sched_stat_runtime",
]


def put(path, value):
    with open(path, "w") as f:
        f.write(value + "\n")


def get(path):
    with open(path) as f:
        return f.read()


def events(root):
    evs = [e for e in REQUIRED + OPTIONAL if os.path.exists(f"{root}/events/{e}/format")]
    vec = f"{root}/events/irq_vectors"
    if os.path.isdir(vec):
        evs += sorted(
            f"irq_vectors/{n}"
            for n in os.listdir(vec)
            if n.endswith("_entry") or n.endswith("_exit")
        )
    return evs


def workload(kind, scratch):
    if kind == "flood":
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            time.sleep(0.0001)
        return
    for _ in range(10):
        time.sleep(0.001)
    time.sleep(0.3)
    end = time.monotonic() + 0.005
    while time.monotonic() < end:
        pass
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, os.urandom(64 << 10))
    os.fsync(fd)
    os.close(fd)
    os.unlink(scratch)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(5):
        tx.sendto(b"x" * 64, rx.getsockname())
        rx.recv(64)
        time.sleep(0.001)
    rx.close()
    tx.close()


def body_lines(text):
    return [l for l in text.splitlines() if l and not l.startswith("#")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--buffer-kb", type=int, default=1024)
    ap.add_argument("--workload", choices=["quiet", "flood"], default="quiet")
    a = ap.parse_args()
    if not os.path.exists(f"{TRACEFS}/instances"):
        sys.exit(f"{TRACEFS} is not mounted: mount -t tracefs nodev {TRACEFS}")
    inst = f"{TRACEFS}/instances/rtlat-fixture-{os.getpid()}"
    os.mkdir(inst)
    try:
        put(f"{inst}/tracing_on", "0")
        put(f"{inst}/trace_clock", "mono")
        put(f"{inst}/buffer_size_kb", str(a.buffer_kb))
        words = a.cpu // 32 + 1
        mask = [0] * words
        mask[a.cpu // 32] = 1 << (a.cpu % 32)
        put(f"{inst}/tracing_cpumask", ",".join(f"{w:08x}" for w in reversed(mask)))
        evs = events(inst)
        for e in evs:
            put(f"{inst}/events/{e}/enable", "1")
        put(f"{inst}/trace", "")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.sched_setaffinity(0, {a.cpu})
                time.sleep(0.01)
                workload(a.workload, f"/var/tmp/rtlat-fixture-{os.getpid()}")
                code = 0
            finally:
                os._exit(code)
        put(f"{inst}/tracing_on", "1")
        if a.workload == "quiet":
            # 200 ms with tracing off: the first event after it is more
            # than 2^27 ns after the one before, a time-extend record.
            time.sleep(0.03)
            put(f"{inst}/tracing_on", "0")
            time.sleep(0.2)
            put(f"{inst}/tracing_on", "1")
        _, status = os.waitpid(pid, 0)
        time.sleep(0.01)
        put(f"{inst}/tracing_on", "0")
        if status != 0:
            sys.exit("the workload failed")

        if os.path.exists(a.out):
            shutil.rmtree(a.out)
        cpu_dir = f"per_cpu/cpu{a.cpu}"
        os.makedirs(f"{a.out}/{cpu_dir}")
        for rel in ["events/header_page", "events/header_event"] + [
            f"events/{e}/format" for e in evs
        ]:
            os.makedirs(os.path.dirname(f"{a.out}/{rel}"), exist_ok=True)
            shutil.copyfile(f"{inst}/{rel}", f"{a.out}/{rel}")
        stats = get(f"{inst}/{cpu_dir}/stats")
        text = get(f"{inst}/{cpu_dir}/trace")
        put(f"{inst}/options/raw", "1")
        raw = get(f"{inst}/{cpu_dir}/trace")
        put(f"{inst}/options/raw", "0")
        entries = int(stats.split("entries:")[1].split()[0])
        n, nraw = len(body_lines(text)), len(body_lines(raw))
        if not (n == nraw == entries):
            sys.exit(f"text {n}, raw text {nraw} and stats {entries} events differ")
        for name, t in [("trace", text), ("trace-raw", raw), ("stats", stats)]:
            with open(f"{a.out}/{cpu_dir}/{name}", "w") as f:
                f.write(t)
        pages = []
        fd = os.open(f"{inst}/{cpu_dir}/trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
        page = os.sysconf("SC_PAGE_SIZE")
        while True:
            try:
                b = os.read(fd, page)
            except BlockingIOError:
                break
            if not b:
                break
            if len(b) != page:
                sys.exit(f"trace_pipe_raw gave {len(b)} bytes, not a page of {page}")
            pages.append(b)
        os.close(fd)
        with open(f"{a.out}/{cpu_dir}/trace_pipe_raw", "wb") as f:
            f.write(b"".join(pages))
        print(
            f"{a.out}: {n} events in {len(pages)} pages, {len(evs)} event types, "
            f"overrun {stats.split('overrun:')[1].split()[0]}, kernel {os.uname().release}"
        )
    finally:
        put(f"{inst}/tracing_on", "0")
        for e in events(inst):
            try:
                put(f"{inst}/events/{e}/enable", "0")
            except OSError:
                pass
        os.rmdir(inst)


if __name__ == "__main__":
    main()
