#!/usr/bin/env python3
"""Our loads against the anchors, interleaved, as ratios ours/theirs (higher: we push at least as hard).

hackbench: messages/s of `rtlat load hackbench:G:fds=F` vs rt-tests `hackbench -g G -f F -l L`
           (messages = G*F*F*L over its printed Time).
memory:    slowdown of a probe (one rtlat memory walker on CPU 1) while each load runs on CPU 0:
           ours `memory:1:32M` vs `stress-ng --vm 1 --vm-bytes 32M`; ratio of probe slowdowns.
cpu:       CPU seconds per second used by `cpu:1` vs `stress-ng --cpu 1` on CPU 0.
"""
import json, os, re, subprocess, sys, tempfile, time

RTLAT = sys.argv[1] if len(sys.argv) > 1 else "rtlat"
PAIRS = int(os.environ.get("PAIRS", "3"))
G, F, L = 4, 20, 500

def rtlat_load(spec, secs, cpus=None):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [RTLAT, "load", spec, "--duration", f"{secs}s", "-q", "--json", f.name]
        if cpus is not None:
            cmd += ["--load-cpus", cpus]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(f.name))["loads"]

def theirs_hackbench():
    out = subprocess.run(["hackbench", "-g", str(G), "-f", str(F), "-l", str(L)],
                         check=True, capture_output=True, text=True).stdout
    t = float(re.search(r"Time:\s*([\d.]+)", out).group(1))
    return G * F * F * L / t

def ours_hackbench():
    return rtlat_load(f"hackbench:{G}:fds={F}", 3)[0]["achieved_rate"]

def probe_with(load_cmd):
    """bytes/s of a memory probe on CPU 1 while load_cmd runs on CPU 0 (None: alone)."""
    p = subprocess.Popen(load_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if load_cmd else None
    try:
        time.sleep(0.5)
        return rtlat_load("memory:1:32M", 3, cpus="1")[0]["achieved_rate"]
    finally:
        if p:
            p.terminate(); p.wait()

def cpu_share(cmd):
    t0 = os.times()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = os.times()
    return (t1.children_user + t1.children_system - t0.children_user - t0.children_system) / 3.0

def main():
    hb, mem, cpu = [], [], []
    ours_mem = ["taskset", "-c", "0", RTLAT, "load", "memory:1:32M", "--load-cpus", "0", "-q"]
    theirs_mem = ["taskset", "-c", "0", "stress-ng", "--vm", "1", "--vm-bytes", "32M", "-q"]
    for i in range(PAIRS):
        o, t = ours_hackbench(), theirs_hackbench()
        hb.append(o / t)
        print(f"hackbench pair {i}: ours {o:,.0f} msg/s, rt-tests {t:,.0f} msg/s, ratio {o/t:.2f}")
        alone = probe_with(None)
        with_ours, with_theirs = probe_with(ours_mem), probe_with(theirs_mem)
        so, st = alone / with_ours, alone / with_theirs
        mem.append(so / st)
        print(f"memory pair {i}: probe alone {alone/1e6:.0f} MB/s, beside ours {with_ours/1e6:.0f}, "
              f"beside stress-ng {with_theirs/1e6:.0f}; slowdown ratio {so/st:.2f}")
        co = cpu_share(["taskset", "-c", "0", RTLAT, "load", "cpu:1", "--load-cpus", "0", "-d", "3s", "-q"])
        ct = cpu_share(["taskset", "-c", "0", "stress-ng", "--cpu", "1", "-t", "3", "-q"])
        cpu.append(co / ct)
        print(f"cpu pair {i}: ours {co:.2f} CPU-s/s, stress-ng {ct:.2f}; ratio {co/ct:.2f}")
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"ratios ours/theirs (median of {PAIRS}): hackbench {med(hb):.2f}, memory interference {med(mem):.2f}, cpu {med(cpu):.2f}")

main()
