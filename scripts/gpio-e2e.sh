#!/bin/bash
# Real-kernel end-to-end test of `rtlat irq` (docs/kernel-e2e.md).
#
# Boots Debian 12's generic and PREEMPT_RT kernels in QEMU (TCG, no KVM) with
# gpio-sim and irq_sim built out of tree against Debian's headers, and runs
# the guest script tests/fixtures/irq/guest-init.sh as /init: rtlat's target,
# host and loopback roles against the kernel's GPIO character device, with the
# script playing the other side through gpio-sim's sysfs files. The host then
# checks every result file (every edge answered and measured, none lost,
# sequence numbers continuous, irq <= user), the in-guest error checks, and a
# kernel log free of WARNING/BUG/Oops.
#
# Environment:
#   RTLAT_E2E_CACHE     downloads and builds kept between runs [~/.cache/rtlat-e2e]
#   RTLAT_E2E_FLAVOURS  kernel flavours to boot ["amd64 rt-amd64"]
#   RTLAT_E2E_EDGES     edges per scenario (at least 100) [120]
#   RTLAT_E2E_BIN       a static x86_64 rtlat to use instead of building one
#   RTLAT_E2E_OUT       where console logs and results go [${CARGO_TARGET_DIR:-target}/gpio-e2e]
# `scripts/gpio-e2e.sh --check FLAVOUR` only re-checks $RTLAT_E2E_OUT/console-FLAVOUR.log.
# Needs: qemu-system-x86, busybox-static, cpio, xz-utils, make, gcc, python3,
# apt-get (for `apt-get download`), cargo (rtlat is linked statically against glibc).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

# One Debian version for every package: gpio-sim reads the internal
# drivers/gpio/gpiolib.h, which must match the running kernel exactly.
KSERIES=6.1
KABI=6.1.0-57
KVER=6.1.192-3

CACHE=${RTLAT_E2E_CACHE:-$HOME/.cache/rtlat-e2e}
FLAVOURS=${RTLAT_E2E_FLAVOURS:-amd64 rt-amd64}
EDGES=${RTLAT_E2E_EDGES:-120}
PERIOD=20ms
OUT=${RTLAT_E2E_OUT:-${CARGO_TARGET_DIR:-$REPO/target}/gpio-e2e}
BOOT_TIMEOUT=600
T0=$(date +%s)

log() { echo "gpio-e2e: [$(($(date +%s) - T0))s] $*" >&2; }
die() {
    echo "gpio-e2e: FAIL: $*" >&2
    exit 1
}

# Check one flavour's console log; prints the figures; fails on any problem.
check() {
    python3 - "$1" "$OUT/console-$1.log" "$EDGES" "$REPO/docs/result-schema.json" "$OUT" << 'PY'
import json, re, sys
flavour, path, edges, schema_path, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
text = open(path, encoding="utf-8", errors="replace").read().replace("\r", "")
problems = []
def bad(msg):
    problems.append(msg)

files, cur, buf, dmesg, in_dmesg = {}, None, [], [], False
for line in text.split("\n"):
    if line.startswith("E2E-FILE-BEGIN "):
        cur, buf = line.split(" ", 1)[1].strip(), []
    elif line.startswith("E2E-FILE-END "):
        files[cur], cur = "\n".join(buf), None
    elif cur is not None:
        buf.append(line)
    elif line.startswith("E2E-DMESG-BEGIN"):
        in_dmesg = True
    elif line.startswith("E2E-DMESG-END"):
        in_dmesg = False
    elif in_dmesg:
        dmesg.append(line)
    elif line.startswith("E2E-CHECK ") and " FAIL " in line:
        bad(line[len("E2E-CHECK "):])

results = [l for l in text.split("\n") if l.startswith("E2E-RESULT")]
if not results:
    bad("no E2E-RESULT marker: the guest did not finish (see %s)" % path)
elif results[-1].strip() != "E2E-RESULT PASS":
    bad(results[-1].strip())
if not dmesg:
    bad("no kernel log captured")
for l in dmesg:
    if re.search(r"WARNING:|BUG[: ]|Oops|Call Trace|general protection", l):
        bad("kernel log: " + l.strip())

try:
    import jsonschema
    schema = json.load(open(schema_path))
except Exception:
    jsonschema = None

def load(name):
    if name not in files:
        bad(name + " missing")
        return None
    try:
        r = json.loads(files[name])
    except ValueError as e:
        bad("%s is not JSON: %s" % (name, e))
        return None
    open("%s/%s-%s" % (out, flavour, name), "w").write(files[name])
    if jsonschema is not None:
        try:
            jsonschema.Draft202012Validator(schema).validate(r)
        except jsonschema.ValidationError as e:
            bad("%s does not match the schema: %s" % (name, e.message))
    if not r.get("complete"):
        bad(name + " is incomplete")
    return r

def series(r, name):
    for t in r["threads"]:
        if t["name"] == name:
            return t["summary"]
    bad("no series " + name)
    return {"samples": 0, "min_ns": 0, "avg_ns": 0, "max_ns": 0, "percentiles": []}

def expect(name, what, got, want):
    if got != want:
        bad("%s: %s is %r, expected %r" % (name, what, got, want))

def clean(name, d):
    for k in ("missed", "missed_idle", "lost_events", "repeated_edges", "unexpected_edges", "timestamp_errors"):
        expect(name, k, d.get(k), 0)
    expect(name, "seqno_continuous", d.get("seqno_continuous"), True)
    if d.get("first_seqno") is not None and d.get("last_seqno") is not None:
        expect(name, "seqno span", d["last_seqno"] - d["first_seqno"] + 1, d["edges_seen"])

figures = []
def fig(role, s):
    p = {q["p"]: q["ns"] for q in s.get("percentiles", [])}
    figures.append("  %-9s %-15s n=%-4d min %9.1f  p50 %9.1f  avg %9.1f  max %9.1f us" % (
        role, s_name, s["samples"], s["min_ns"] / 1e3, p.get(50.0, 0) / 1e3, s["avg_ns"] / 1e3, s["max_ns"] / 1e3))

t = load("target.json")
if t:
    d = t["details"]
    expect("target", "answered", d.get("answered"), edges)
    expect("target", "edges_seen", d.get("edges_seen"), edges)
    clean("target", d)
    for s_name in ("kernel_to_user", "user_to_reply"):
        s = series(t, s_name)
        expect("target", s_name + " samples", s["samples"], edges)
        fig("target", s)
    share = d.get("own_share_of_response")
    if isinstance(share, (int, float)):
        figures.append("  target    rtlat's own share of the response (event read -> reply written): %.1f %%" % (share * 100))
h = load("host.json")
if h:
    d = h["details"]
    expect("host", "edges_driven", d.get("edges_driven"), edges)
    expect("host", "edges_seen", d.get("edges_seen"), edges)
    clean("host", d)
    s_name = "roundtrip"
    s = series(h, s_name)
    expect("host", "roundtrip samples", s["samples"], edges)
    fig("host", s)
for name, n, seen in (("loopback.json", edges, edges), ("rising.json", edges // 2, edges)):
    lb = load(name)
    if not lb:
        continue
    d = lb["details"]
    role = name[:-5]
    expect(role, "edges_driven", d.get("edges_driven"), n)
    expect(role, "edges_seen", d.get("edges_seen"), seen)
    clean(role, d)
    irq, user = series(lb, "irq"), series(lb, "user")
    for s_name in ("irq", "user", "wake"):
        s = series(lb, s_name)
        expect(role, s_name + " samples", s["samples"], n)
        fig(role, s)
    # irq <= user per edge (timestamp_errors counts violations); so for every order statistic too.
    for k in ("min_ns", "max_ns"):
        if irq[k] > user[k]:
            bad("%s: irq %s %d > user %d" % (role, k, irq[k], user[k]))
    for a, b in zip(irq["percentiles"], user["percentiles"]):
        if a["ns"] > b["ns"]:
            bad("%s: irq p%s > user" % (role, a["p"]))

sr = load("serial.json")
if sr:
    d = sr["details"]
    expect("serial", "edges_driven", d.get("edges_driven"), 5)
    expect("serial", "missed", d.get("missed"), 5)
    expect("serial", "edges_seen", d.get("edges_seen"), 0)
    expect("serial", "series", [t["name"] for t in sr["threads"]], ["user"])

print("gpio-e2e: %s: figures (emulated guest: compare relatively, not absolutely)" % flavour)
print("\n".join(figures))
if problems:
    for p in problems:
        print("gpio-e2e: %s: FAIL: %s" % (flavour, p))
    sys.exit(1)
print("gpio-e2e: %s: PASS (%d edges per role, kernel log clean)" % (flavour, edges))
PY
}

if [ "${1:-}" = --check ]; then
    check "${2:?--check FLAVOUR}"
    exit
fi

[ "$EDGES" -ge 100 ] || die "RTLAT_E2E_EDGES must be at least 100"
for tool in qemu-system-x86_64 dpkg-deb apt-get make gcc cpio gzip xz python3; do
    command -v $tool > /dev/null || die "$tool is missing (apt-get install qemu-system-x86 busybox-static cpio xz-utils make gcc python3)"
done
BUSYBOX=/bin/busybox
is_static() {
    [ -x "$1" ] || return 1
    case "$(ldd "$1" 2>&1 || true)" in *"not a dynamic"* | *"statically linked"*) return 0 ;; esac
    return 1
}
is_static $BUSYBOX || die "a static busybox is needed: apt-get install busybox-static"

mkdir -p "$CACHE/debs" "$OUT"
APT_OPTS=()
[ "$(id -u)" = 0 ] && APT_OPTS=(-o APT::Sandbox::User=root)

common_of() { [ "$1" = rt-amd64 ] && echo "linux-headers-$KABI-common-rt" || echo "linux-headers-$KABI-common"; }

deb() { compgen -G "$CACHE/debs/${1}_${KVER}_*.deb" | head -1; }

# Download every package of $KVER the cache lacks, in one apt-get call.
fetch_all() {
    local p f want=("linux-source-$KSERIES" "linux-kbuild-$KSERIES") missing=()
    for f in $FLAVOURS; do
        want+=("linux-image-$KABI-$f" "linux-headers-$KABI-$f" "$(common_of "$f")")
    done
    for p in "${want[@]}"; do
        [ -n "$(deb "$p")" ] || missing+=("$p=$KVER")
    done
    [ ${#missing[@]} = 0 ] && return 0
    log "downloading ${missing[*]}"
    (cd "$CACHE/debs" && apt-get download -q "${APT_OPTS[@]}" "${missing[@]}" > /dev/null)
}

if ! fetch_all; then
    # The pinned version left the mirror: take the current one, consistently.
    log "pinned $KVER not downloadable; falling back to the current Debian $KSERIES kernel"
    KVER=$(apt-cache policy linux-image-amd64 | sed -n 's/ *Candidate: //p')
    KABI=$(apt-cache depends "linux-image-amd64=$KVER" | grep -o 'linux-image-[0-9.]*-[0-9]*-amd64' | head -1 |
        sed 's/^linux-image-//; s/-amd64$//')
    [ -n "$KVER" ] && [ -n "$KABI" ] || die "cannot find a Debian kernel to download (run apt-get update)"
    log "using linux-image-$KABI-* $KVER"
    fetch_all || die "cannot download the kernel packages $KVER (check the network and run apt-get update)"
fi
log "packages ready (Debian $KVER, $KABI)"

# The four source files gpio-sim and irq_sim need.
SRC=$CACHE/build/$KVER/src
if [ ! -f "$SRC/.done" ]; then
    log "extracting gpio-sim.c, gpiolib.h, irq_sim.c from linux-source-$KSERIES"
    rm -rf "$SRC"
    mkdir -p "$SRC"
    dpkg-deb --fsys-tarfile "$(deb "linux-source-$KSERIES")" |
        tar -xO "./usr/src/linux-source-$KSERIES.tar.xz" |
        tar -xJ -C "$SRC" --strip-components=3 --wildcards \
            '*/drivers/gpio/gpio-sim.c' '*/drivers/gpio/gpiolib.h' '*/kernel/irq/irq_sim.c'
    for f in gpio-sim.c gpiolib.h irq_sim.c; do [ -f "$SRC/$f" ] || die "$f not found in linux-source-$KSERIES"; done
    touch "$SRC/.done"
fi

# Per flavour: kernel, configfs.ko, headers tree, and the two modules.
build_flavour() {
    local f=$1 W=$CACHE/build/$KVER/$f
    if [ ! -f "$W/.done" ]; then
        log "$f: unpacking kernel and headers"
        rm -rf "$W"
        mkdir -p "$W/tree" "$W/mod"
        dpkg-deb --fsys-tarfile "$(deb "linux-image-$KABI-$f")" |
            tar -x -C "$W/tree" --wildcards './boot/vmlinuz-*' '*/kernel/fs/configfs/configfs.ko*'
        for p in "linux-headers-$KABI-$f" "$(common_of "$f")" "linux-kbuild-$KSERIES"; do
            dpkg-deb -x "$(deb "$p")" "$W/tree"
        done
        cp "$W"/tree/boot/vmlinuz-* "$W/vmlinuz"
        local cfs
        cfs=$(find "$W/tree" -name 'configfs.ko*' | head -1)
        case "$cfs" in
            *.xz) xz -dc "$cfs" > "$W/configfs.ko" ;;
            *.ko) cp "$cfs" "$W/configfs.ko" ;;
            *) : ;; # built in
        esac
        local H=$W/tree/usr/src/linux-headers-$KABI-$f
        # Fix 1: the flavour Makefile includes the -common one by absolute path.
        sed -i "s#include /usr/src/#include $W/tree/usr/src/#" "$H/Makefile"
        cp "$SRC/gpio-sim.c" "$SRC/gpiolib.h" "$SRC/irq_sim.c" "$W/mod/"
        # Fix 2: irq_to_desc is not exported; generic_handle_irq runs the same
        # flow handler (handle_simple_irq) for the simulator's domain.
        sed -i 's/handle_simple_irq(irq_to_desc(\([a-z_]*\)))/generic_handle_irq(\1)/' "$W/mod/irq_sim.c"
        grep -q 'generic_handle_irq' "$W/mod/irq_sim.c" || die "irq_sim.c: the irq_to_desc fix did not apply"
        echo 'MODULE_LICENSE("GPL");' >> "$W/mod/irq_sim.c"
        echo 'obj-m := irq_sim.o gpio-sim.o' > "$W/mod/Kbuild"
        log "$f: building irq_sim.ko and gpio-sim.ko"
        # Fix 3: no BTF for out-of-tree modules (6.12 headers would want pahole).
        make -s -C "$H" M="$W/mod" modules CONFIG_DEBUG_INFO_BTF_MODULES= > "$W/build.log" 2>&1 ||
            die "$f: module build failed, see $W/build.log"
        touch "$W/.done"
    fi
}

for f in $FLAVOURS; do build_flavour "$f"; done

# A static rtlat for the guest.
if [ -n "${RTLAT_E2E_BIN:-}" ]; then
    BIN=$RTLAT_E2E_BIN
else
    # Static glibc rather than musl: musl's sched_setscheduler() is a stub
    # that fails with ENOSYS, and rtlat's real-time setup needs it.
    TD=${CARGO_TARGET_DIR:-$REPO/target}
    log "building a static rtlat (x86_64 glibc, crt-static, release)"
    if ! RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked \
        --target x86_64-unknown-linux-gnu --bin rtlat > "$OUT/cargo.log" 2>&1; then
        cat "$OUT/cargo.log" >&2
        die "cannot build a static rtlat"
    fi
    BIN=$TD/x86_64-unknown-linux-gnu/release/rtlat
fi
is_static "$BIN" || die "$BIN is not a statically linked executable"

# Boot one flavour; the console goes to $OUT/console-$f.log.
boot() {
    local f=$1 W=$CACHE/build/$KVER/$f
    local R
    R=$(mktemp -d)
    chmod 755 "$R"
    mkdir -p "$R"/{bin,lib,etc,proc,sys,dev,tmp,root}
    cp "$BUSYBOX" "$R/bin/busybox"
    ln -s busybox "$R/bin/sh"
    if command -v strip > /dev/null; then strip -o "$R/bin/rtlat" "$BIN"; else cp "$BIN" "$R/bin/rtlat"; fi
    cp "$W/mod/irq_sim.ko" "$W/mod/gpio-sim.ko" "$R/lib/"
    [ -f "$W/configfs.ko" ] && cp "$W/configfs.ko" "$R/lib/"
    cp "$REPO/tests/fixtures/irq/guest-init.sh" "$R/init"
    chmod 755 "$R/init"
    printf 'EDGES=%s\nPERIOD=%s\n' "$EDGES" "$PERIOD" > "$R/etc/e2e.conf"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$R/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
    (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT/initrd-$f.cpio.gz"
    rm -rf "$R"
    log "$f: booting Linux $KABI-$f under qemu (tcg)"
    local rc=0
    timeout $BOOT_TIMEOUT qemu-system-x86_64 -accel tcg -m 512 -smp 1 -display none -monitor none \
        -serial stdio -serial null -no-reboot -kernel "$W/vmlinuz" -initrd "$OUT/initrd-$f.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3" < /dev/null > "$OUT/console-$f.log" 2>&1 || rc=$?
    [ $rc = 124 ] && log "$f: the guest did not finish within ${BOOT_TIMEOUT}s"
    log "$f: guest done (qemu rc=$rc)"
}


status=0
for f in $FLAVOURS; do
    boot "$f"
    check "$f" || status=1
done
log "done in $(($(date +%s) - T0))s; logs and results in $OUT"
[ $status = 0 ] || die "see the lines above and $OUT/console-*.log"
echo "gpio-e2e: PASS"
