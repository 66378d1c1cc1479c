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
# Then the small board: the first flavour boots once more with little memory
# ($RTLAT_E2E_SMALL_MEM MiB, no modules) and runs `rtlat timer` and `rtlat
# switch` for 5 s each with their defaults; both results must be complete,
# with samples.
#
# Then, in the same boots, the kernel responder of kmod/ (tests/fixtures/irq/
# guest-kmod.sh): built against each flavour's headers (and cross-built for
# arm64 and armhf, without warnings), installed by DKMS, loaded with insmod,
# `irq target --reply-from thread` and `kthread` answer every edge, `irq` is
# refused on gpio-sim (its chip can sleep) with exit 3, rmmod after each;
# its kspin load's sections named by `timer --explain` and, on PREEMPT_RT,
# by `timer --context irq,thread --explain` and by Debian's `rtla timerlat
# top -a` (staged into that boot).
#
# And per flavour a timerlat boot (no modules, $RTLAT_E2E_TLAT_SMP CPUs,
# tests/fixtures/irq/guest-timerlat.sh): on PREEMPT_RT `rtlat timer --context
# irq,thread --duration 20s` with a busy loop on the last CPU; per CPU both
# series, every period a sample or a counted overrun (+-1 %), irq <= thread
# for every matched pair, schema-valid, tracefs settings identical before and
# after (also after a SIGKILLed run followed by a new one). On the generic
# kernel `--context irq` must exit 3 naming CONFIG_TIMERLAT_TRACER. Then one
# more timerlat boot of Debian 12's 6.12 PREEMPT_RT kernel (timerlat_fd):
# `--context irq,thread,user`, all three series, thread <= user per pair.
# Both kernels of each boot run `timer --split` (>= 99 % of samples matched).
# And one host-stall boot of the first flavour (two CPUs, multi-threaded TCG,
# tests/fixtures/irq/guest-stall.sh): while the guest runs `timer --explain`
# on both CPUs, this script stops QEMU (SIGSTOP/SIGCONT) for 20-30 ms every
# 200-300 ms; of the explained cases over 10 ms, >= 90 % must be led by the
# hypervisor part and at most 10 % may give a stop's time to an idle-state
# exit, the thread's own path or interrupts off
# (tests/fixtures/irq/check-stall.py).
# The 6.1 PREEMPT_RT boot also runs `net ping --spin off` (with and without
# `--pace spin`) and sockperf's ping-pong over loopback, interleaved, and
# prints their medians side by side (every request answered and measured).
#
# Environment:
#   RTLAT_E2E_PARTS     what runs: irq (the user-space GPIO scenarios), kmod
#                       (the kernel responder; both in the GPIO boot), timerlat
#                       (its own boot), small (the small board's boot),
#                       stall (the host-stall boot)
#                       ["irq kmod timerlat small stall"]
#   RTLAT_E2E_KMOD_EDGES edges per responder mode [200]
#   RTLAT_E2E_CACHE     downloads and builds kept between runs [~/.cache/rtlat-e2e]
#   RTLAT_E2E_FLAVOURS  kernel flavours to boot ["amd64 rt-amd64"]
#   RTLAT_E2E_EDGES     edges per scenario (at least 100) [120]
#   RTLAT_E2E_SMALL_MEM the small board's memory in MiB, 0 to skip that boot [92]
#   RTLAT_E2E_TLAT_SMP  CPUs of the timerlat boots [2]
#   RTLAT_E2E_RT612     boot the 6.12 PREEMPT_RT kernel for `--context user` [1]
#   RTLAT_E2E_BIN       a static x86_64 rtlat to use instead of building one
#   RTLAT_E2E_OUT       where console logs and results go [${CARGO_TARGET_DIR:-target}/gpio-e2e]
# `scripts/gpio-e2e.sh --check NAME` only re-checks $RTLAT_E2E_OUT/console-NAME.log
# (NAME: a flavour, tlat-FLAVOUR or small); `scripts/gpio-e2e.sh --prepare` only
# downloads and builds what the boots need (scripts/test.sh does it while the
# static binary is being built).
# Needs: qemu-system-x86, busybox-static, cpio, xz-utils, make, gcc, python3,
# apt-get (for `apt-get download`), cargo (rtlat is linked statically against glibc);
# for the responder also dkms, curl, file, gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf.
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
PARTS=${RTLAT_E2E_PARTS:-irq kmod timerlat small stall}
KMOD_EDGES=${RTLAT_E2E_KMOD_EDGES:-200}
# The least Debian's generic kernel boots with and runs both in, found by
# trying in 4 MiB steps (docs/kernel-e2e.md): at 88 MiB it boots but the OOM
# killer ends timer or switch, at 84 MiB and below the kernel itself runs out.
SMALL_MEM=${RTLAT_E2E_SMALL_MEM:-92}
PERIOD=20ms
OUT=${RTLAT_E2E_OUT:-${CARGO_TARGET_DIR:-$REPO/target}/gpio-e2e}
# A guest's limit: under TCG, beside the other lanes of the CI run, a boot
# can take three times as long as alone.
BOOT_TIMEOUT=900
T0=$(date +%s)

log() { echo "gpio-e2e: [$(($(date +%s) - T0))s] $*" >&2; }
die() {
    echo "gpio-e2e: FAIL: $*" >&2
    exit 1
}

has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# Check one flavour's console log; prints the figures; fails on any problem.
check() {
    E2E_PARTS=$PARTS python3 "$REPO/tests/fixtures/irq/check-gpio.py" "$1" "$OUT/console-$1.log" "$EDGES" \
        "$REPO/docs/result-schema.json" "$OUT"
}

# The kernel responder (kmod/) for one flavour: build, into the initramfs, checks.
. "$REPO/scripts/gpio-e2e-kmod.sh"

# ---- timer --context (timerlat): tests/fixtures/irq/guest-timerlat.sh ----
# Per flavour one more boot, without modules, with RTLAT_E2E_TLAT_SMP CPUs
# [2] (a busy loop takes the last): console-tlat-FLAVOUR.log.
TLAT_SMP=${RTLAT_E2E_TLAT_SMP:-2}
# Debian's rtla (the kernel's own timerlat front end) and its libraries,
# unpacked once into the cache, for the timerlat boots.
RTLA=$CACHE/build/rtla
prepare_rtla() {
    [ -f "$RTLA/.done" ] && return 0
    local p pkgs=(rtla libtracefs1 libtraceevent1) missing=()
    for p in "${pkgs[@]}"; do compgen -G "$CACHE/debs/${p}_*.deb" > /dev/null || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then
        log "downloading ${missing[*]}"
        (cd "$CACHE/debs" && apt-get download -q "${APT_OPTS[@]}" "${missing[@]}" > /dev/null) || return 1
    fi
    rm -rf "$RTLA"
    mkdir -p "$RTLA/x"
    for p in "${pkgs[@]}"; do dpkg-deb -x "$(compgen -G "$CACHE/debs/${p}_*.deb" | head -1)" "$RTLA/x"; done
    [ -x "$RTLA/x/usr/bin/rtla" ] && touch "$RTLA/.done"
}
# Debian 12's 6.12 PREEMPT_RT kernel (timerlat_fd, Linux 6.5+) for the
# `--context user` boot: only its vmlinuz (the boot loads no module), as
# flavour rt612 ($CACHE/build/$KVER/rt612/vmlinuz).
prepare_rt612() {
    local W=$CACHE/build/$KVER/rt612 pkg f
    [ -f "$W/vmlinuz" ] && return 0
    pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-rt-amd64-unsigned$' |
        cut -d' ' -f1 | sort -V | tail -1)
    [ -n "$pkg" ] || return 1
    f=$(compgen -G "$CACHE/debs/${pkg}_*.deb" | head -1)
    if [ -z "$f" ]; then
        log "downloading $pkg"
        (cd "$CACHE/debs" && apt-get download -q "${APT_OPTS[@]}" "$pkg" > /dev/null) || return 1
        f=$(compgen -G "$CACHE/debs/${pkg}_*.deb" | head -1)
    fi
    mkdir -p "$W/tree"
    dpkg-deb --fsys-tarfile "$f" | tar -x -C "$W/tree" --wildcards './boot/vmlinuz-*' || return 1
    cp "$W"/tree/boot/vmlinuz-* "$W/vmlinuz" && rm -rf "$W/tree"
}
# Put the executable EXE, every library ldd lists (looked up in LIBDIR
# first) and the dynamic loader into ROOT's /bin and /lib.
stage_exe() { # root exe [libdir]
    local a b c rest
    mkdir -p "$1/lib/x86_64-linux-gnu" "$1/lib64"
    cp "$2" "$1/bin/"
    LD_LIBRARY_PATH=${3:-} ldd "$2" | while read -r a b c rest; do
        case "$a" in /*) cp -L "$a" "$1/lib64/" ;; esac
        case "$c" in /*) cp -L "$c" "$1/lib/x86_64-linux-gnu/" ;; esac
    done
}
# Put rtla with its libraries into ROOT.
stage_rtla() { # root
    stage_exe "$1" "$RTLA/x/usr/bin/rtla" "$RTLA/x/usr/lib/x86_64-linux-gnu"
}
# The host's sockperf (scripts/packages.txt) and chrt (busybox has none),
# for the blocking round trip beside `rtlat net ping`, when it has them.
stage_sockperf() { # root
    if command -v sockperf > /dev/null && command -v chrt > /dev/null; then
        stage_exe "$1" "$(command -v sockperf)"
        stage_exe "$1" "$(command -v chrt)"
    fi
}

# Check the timerlat results of one flavour's console log.
check_timerlat() {
    python3 "$REPO/tests/fixtures/irq/check-timerlat.py" "$1" "$OUT/console-tlat-$1.log" \
        "$REPO/docs/result-schema.json" "$OUT"
}
# ---- end of timer --context ----

# The host-stall boot's console log and the count of stops.
check_stall() {
    python3 "$REPO/tests/fixtures/irq/check-stall.py" "$OUT/console-stall.log" \
        "$REPO/docs/result-schema.json" "$OUT" "$(cat "$OUT/stall-stops" 2> /dev/null || echo 0)"
}

if [ "${1:-}" = --check ]; then
    st=0
    case "${2:?--check FLAVOUR}" in
    tlat-*) { check "$2" && check_timerlat "${2#tlat-}"; } || st=1 ;;
    stall) check_stall || st=1 ;;
    *)
        check "$2" || st=1
        if [ "$2" != small ] && has_part kmod; then check_responder "$2" || st=1; fi
        ;;
    esac
    exit $st
fi

[ "$EDGES" -ge 100 ] || die "RTLAT_E2E_EDGES must be at least 100"
case "$SMALL_MEM" in
'' | *[!0-9]*) die "RTLAT_E2E_SMALL_MEM must be a number of MiB (0 skips the small board)" ;;
esac
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
if has_part kmod; then
    for f in $FLAVOURS; do build_responder "$f"; done
    cross_responder
fi
if has_part timerlat || has_part kmod; then prepare_rtla || die "cannot download rtla, libtracefs1, libtraceevent1 (run apt-get update)"; fi
RT612=${RTLAT_E2E_RT612:-1}
if has_part timerlat && [ "$RT612" = 1 ]; then
    prepare_rt612 || die "cannot download Debian 12's 6.12 PREEMPT_RT kernel (linux-image-6.12.*+deb12-rt-amd64-unsigned; run apt-get update, or RTLAT_E2E_RT612=0)"
fi

if [ "${1:-}" = --prepare ]; then
    log "prepared: downloads and module builds in $CACHE, $OUT"
    exit 0
fi

# A static rtlat for the guest.
if [ -n "${RTLAT_E2E_BIN:-}" ]; then
    BIN=$RTLAT_E2E_BIN
else
    # Static glibc (crt-static on the host's own target): the guest has no
    # shared libraries, and this build needs no other rustup target.
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

# Boot one flavour as NAME with MEM MiB; the console goes to $OUT/console-NAME.log.
# MODE gpio: the GPIO tests with the modules; small: the small board (no
# modules; timer and switch only); tlat: timer --context (no modules,
# $TLAT_SMP CPUs).
boot() { # flavour name mem mode
    local f=$1 name=$2 mem=$3 mode=$4 W=$CACHE/build/$KVER/$1
    local R
    R=$(mktemp -d)
    chmod 755 "$R"
    mkdir -p "$R"/{bin,lib,etc,proc,sys,dev,tmp,root}
    cp "$BUSYBOX" "$R/bin/busybox"
    ln -s busybox "$R/bin/sh"
    if command -v strip > /dev/null; then strip -o "$R/bin/rtlat" "$BIN"; else cp "$BIN" "$R/bin/rtlat"; fi
    if [ "$mode" = gpio ]; then
        cp "$W/mod/irq_sim.ko" "$W/mod/gpio-sim.ko" "$R/lib/"
        [ -f "$W/configfs.ko" ] && cp "$W/configfs.ko" "$R/lib/"
        # rtla beside the kspin load (guest-kmod.sh), where timerlat is.
        has_part kmod && responder_into "$f" "$R" && [ "$f" = rt-amd64 ] && stage_rtla "$R"
    fi
    cp "$REPO/tests/fixtures/irq/guest-init.sh" "$R/init"
    chmod 755 "$R/init"
    if [ "$mode" = tlat ]; then
        cp "$REPO/tests/fixtures/irq/guest-timerlat.sh" "$R/etc/timerlat.sh"
        stage_rtla "$R"
        stage_sockperf "$R"
    fi
    [ "$mode" = stall ] && cp "$REPO/tests/fixtures/irq/guest-stall.sh" "$R/etc/stall.sh"
    printf 'EDGES=%s\nPERIOD=%s\nSMALL=%s\nTLAT=%s\nSTALL=%s\nPARTS="%s"\nKMOD_EDGES=%s\n' "$EDGES" "$PERIOD" \
        "$([ "$mode" = small ] && echo 1 || echo 0)" "$([ "$mode" = tlat ] && echo 1 || echo 0)" \
        "$([ "$mode" = stall ] && echo 1 || echo 0)" "$PARTS" "$KMOD_EDGES" > "$R/etc/e2e.conf"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$R/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
    (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT/initrd-$name.cpio.gz"
    rm -rf "$R"
    local cpu="-accel tcg -smp 1"
    # The timerlat boot: more CPUs, one of them busy (multi-threaded TCG).
    [ "$mode" = tlat ] && cpu="-accel tcg,thread=multi -cpu max -smp $TLAT_SMP"
    [ "$mode" = stall ] && cpu="-accel tcg,thread=multi -cpu max -smp 2"
    local kernel="Linux $KABI-$f"
    [ "$f" = rt612 ] && kernel="Debian 12's 6.12 PREEMPT_RT kernel"
    log "$name: booting $kernel under qemu (${cpu#-accel }, $mem MiB)"
    local rc=0 t0
    t0=$(date +%s)
    timeout $BOOT_TIMEOUT qemu-system-x86_64 $cpu -m "$mem" -display none -monitor none \
        -serial stdio -serial null -no-reboot -kernel "$W/vmlinuz" -initrd "$OUT/initrd-$name.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3 noirqdebug" < /dev/null > "$OUT/console-$name.log" 2>&1 &
    local qemu=$!
    [ "$mode" = stall ] && stall_guest $qemu "$OUT/console-$name.log"
    wait $qemu || rc=$?
    [ $rc = 124 ] && log "$name: the guest did not finish within ${BOOT_TIMEOUT}s"
    log "$name: guest done in $(($(date +%s) - t0))s (qemu rc=$rc)"
}

# The host-stall boot: once the guest says E2E-STALL-BEGIN, stop QEMU (every
# thread of it: SIGSTOP stops the whole process) for 20-30 ms every 200-300
# ms until it says E2E-STALL-END; the count goes to $OUT/stall-stops.
stall_guest() { # pid of the `timeout` running qemu, console log
    local n=0 q=""
    until grep -q E2E-STALL-BEGIN "$2" 2> /dev/null; do
        kill -0 "$1" 2> /dev/null || return 0
        sleep 0.2
    done
    q=$(pgrep -P "$1" qemu-system) || return 0
    while kill -0 "$q" 2> /dev/null && ! grep -q E2E-STALL-END "$2"; do
        kill -STOP "$q"
        sleep "0.0$((20 + RANDOM % 11))"
        kill -CONT "$q"
        n=$((n + 1))
        sleep "0.$((200 + RANDOM % 101))"
    done
    echo $n > "$OUT/stall-stops"
    log "stall: stopped the guest $n times"
}

status=0
for f in $FLAVOURS; do
    if has_part irq || has_part kmod; then
        boot "$f" "$f" 512 gpio
        check "$f" || status=1
        if has_part kmod; then check_responder "$f" || status=1; fi
    fi
    if has_part timerlat; then
        boot "$f" "tlat-$f" 512 tlat
        { check "tlat-$f" && check_timerlat "$f"; } || status=1
    fi
done
if has_part timerlat && [ "$RT612" = 1 ]; then
    boot rt612 tlat-rt612 512 tlat
    { check tlat-rt612 && check_timerlat rt612; } || status=1
fi
if has_part stall; then
    set -- $FLAVOURS
    boot "$1" stall 512 stall
    check_stall || status=1
fi
if has_part small && [ "$SMALL_MEM" != 0 ]; then
    set -- $FLAVOURS
    boot "$1" small "$SMALL_MEM" small
    check small || status=1
fi
log "done in $(($(date +%s) - T0))s; logs and results in $OUT"
[ $status = 0 ] || die "see the lines above and $OUT/console-*.log"
echo "gpio-e2e: PASS"
