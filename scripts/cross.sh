#!/bin/sh
# Cross builds and emulated tests for the boards rtlat runs on (issue 7).
#
#  1. release binaries for aarch64, armv7 and 32-bit PowerPC (glibc) and a
#     static x86_64 (musl), each checked with `file` for its architecture and
#     for being stripped, their sizes printed (armv7 and PowerPC held to a
#     ceiling); the board build (`--no-default-features`: no host-tools, no
#     kernel-trace) of aarch64, armv7 and PowerPC, sizes printed, armv7 and
#     PowerPC held to the boards' 2 MB; aarch64 (under qemu), the PowerPC
#     board build and musl (natively, real-time settings) run once, the
#     PowerPC board build refusing `import` and `timer --context`;
#  2. the unit and integration test suites for armv7 and powerpc under
#     qemu-user: cargo starts the test binaries through the `runner` of
#     .cargo/config.toml; what the tests start (the rtlat binary, and the load
#     host rtlat re-executes) runs through binfmt_misc, registered here;
#  3. a 2 s `timer` run of the PowerPC release build under qemu-ppc-static whose result
#     file the x86_64 build reads, reports and compares (byte order and schema agree).
#
# Needs (Debian): gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-powerpc-linux-gnu
# libc6-dev-arm64-cross libc6-dev-armhf-cross libc6-dev-powerpc-cross qemu-user-static
# binfmt-support file, rustup (it adds the four targets' rust-std), and root unless
# qemu-arm and qemu-ppc are already registered with binfmt_misc.
# scripts/test.sh runs this unless RTLAT_SKIP_CROSS=1 (CI always runs it).
set -eu
cd "$(dirname "$0")/.."

AARCH64=aarch64-unknown-linux-gnu
ARMV7=armv7-unknown-linux-gnueabihf
PPC=powerpc-unknown-linux-gnu
MUSL=x86_64-unknown-linux-musl

started=$(date +%s)
step_started=$started
say() { echo "cross: $*"; }
step_done() {
    now=$(date +%s)
    say "$1 ($((now - step_started)) s)"
    step_started=$now
}
fail() {
    echo "cross: FAILED: $*" >&2
    exit 1
}

# --- tools -------------------------------------------------------------------
missing=""
for tool in aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc powerpc-linux-gnu-gcc \
    qemu-aarch64-static qemu-arm-static qemu-ppc-static file cc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
for sysroot in /usr/arm-linux-gnueabihf /usr/powerpc-linux-gnu /usr/aarch64-linux-gnu; do
    [ -d "$sysroot/lib" ] || missing="$missing $sysroot"
done
if [ -n "$missing" ]; then
    fail "missing:$missing. Install: apt-get install gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf \
gcc-powerpc-linux-gnu libc6-dev-arm64-cross libc6-dev-armhf-cross libc6-dev-powerpc-cross \
qemu-user-static binfmt-support file (or skip the cross part: RTLAT_SKIP_CROSS=1 scripts/test.sh)"
fi

sysroot=$(rustc --print sysroot)
for t in $AARCH64 $ARMV7 $PPC $MUSL; do
    [ -d "$sysroot/lib/rustlib/$t" ] && continue
    command -v rustup >/dev/null 2>&1 || fail "no rust-std for $t and no rustup to add it"
    rustup target add "$t" >/dev/null
done

# The tests start foreign binaries themselves (rtlat, and rtlat re-executing
# itself as the load host): the kernel hands them to qemu through binfmt_misc.
# Registered as Debian's binfmt-support does on a normal install, and left so.
binfmt=/proc/sys/fs/binfmt_misc
registered() { [ "$(head -n 1 "$binfmt/$1" 2>/dev/null)" = enabled ]; }
for q in qemu-arm qemu-ppc; do
    registered $q && continue
    [ -e "$binfmt/status" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
    update-binfmts --enable $q >/dev/null 2>&1 || true
    registered $q || fail "cannot register $q with binfmt_misc: run as root with binfmt-support \
installed (or skip the cross part: RTLAT_SKIP_CROSS=1 scripts/test.sh)"
done

target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
step_done "tools, targets and binfmt_misc ready"

# Warnings are errors on every target, as natively: 32-bit, big-endian, musl and
# c_char = u8 show problems x86_64 glibc never does. (With --target, RUSTFLAGS
# does not touch the host's build scripts and proc macros.)
deny="${RUSTFLAGS:-} -D warnings"

# --- 1. every target built, architecture checked, sizes printed -------------------
# All four in release, as shipped (Cargo.toml: LTO, one codegen unit, stripped).
# armv7 and PowerPC also build the test suites and the binary they test in the
# `emulated` profile (.cargo/config.toml: dev checks, light optimisation).
# PowerPC as .cargo/config.toml builds it (not PIE), which RUSTFLAGS would replace.
ppc_flags="$deny -C relocation-model=static"
RUSTFLAGS="$deny" cargo build --release --locked --bin rtlat \
    --target $AARCH64 --target $ARMV7 --target $MUSL
RUSTFLAGS="$ppc_flags" cargo build --release --locked --bin rtlat --target $PPC
step_done "release builds of 4 targets"
# The board build (Cargo.toml [features]: without host-tools and kernel-trace) of the three board
# targets, in a target directory of its own: the full binaries stay where they are.
board_dir="$target_dir/board"
RUSTFLAGS="$deny" cargo build --release --locked --bin rtlat --no-default-features \
    --target-dir "$board_dir" --target $AARCH64 --target $ARMV7
RUSTFLAGS="$ppc_flags" cargo build --release --locked --bin rtlat --no-default-features \
    --target-dir "$board_dir" --target $PPC
step_done "board builds (no host-tools, no kernel-trace) of 3 targets"
RUSTFLAGS="$deny" cargo test --locked --no-run --profile emulated --target $ARMV7 --target $PPC
check_arch() { # binary, then the phrases `file` must print
    bin=$1
    desc=$(file -b "$bin")
    shift
    for want in "$@"; do
        case "$desc" in
        *"$want"*) ;;
        *) fail "$bin: expected '$want' in: $desc" ;;
        esac
    done
    say "$bin: $desc"
}
check_arch "$target_dir/$AARCH64/release/rtlat" "ELF 64-bit LSB" "ARM aarch64"
check_arch "$target_dir/$ARMV7/release/rtlat" "ELF 32-bit LSB" "ARM, EABI5" "/lib/ld-linux-armhf.so.3"
check_arch "$target_dir/$ARMV7/emulated/rtlat" "ELF 32-bit LSB" "ARM, EABI5" "/lib/ld-linux-armhf.so.3"
check_arch "$target_dir/$PPC/release/rtlat" "ELF 32-bit MSB executable" "PowerPC"
check_arch "$board_dir/$PPC/release/rtlat" "ELF 32-bit MSB executable" "PowerPC"
check_arch "$target_dir/$PPC/emulated/rtlat" "ELF 32-bit MSB" "PowerPC"
check_arch "$target_dir/$MUSL/release/rtlat" "ELF 64-bit LSB" "x86-64" "static"
case "$(file -b "$target_dir/$MUSL/release/rtlat")" in
*"dynamically linked"*) fail "the musl build is not static" ;;
esac
# The shipped binaries: stripped by the release profile. Issue 13 wants armv7
# and PowerPC within 2 MB (2 000 000 bytes) for a small board's flash: their
# board builds are held to it. The full builds are over it (docs/boards.md#build
# says what is big), each held to a ceiling (its size when the ceiling was last
# set, plus 4 %) so that it grows no further unnoticed: lower the ceilings as
# code is trimmed. Set again when `timer --context/--split` (the kernel-trace
# feature) came in: armv7 2 497 760, PowerPC 2 886 840 (not PIE). Checked at
# the end, so that one run also shows whether the tests pass.
BOARD_TARGET=2000000
ARMV7_CEILING=2598000
PPC_CEILING=3002000
oversize=""
# Prints a stripped binary's size and holds it to a limit (none: printed only).
check_size() { # binary, target, limit in bytes or "", what the limit is
    case "$(file -b "$1")" in
    *"not stripped"* | *"with debug_info"*) fail "$1 is not stripped (Cargo.toml [profile.release] strip)" ;;
    esac
    size=$(wc -c <"$1")
    printf 'cross:   %-32s %9d bytes (%s MB)\n' "$2" "$size" \
        "$(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1e6 }')"
    [ -z "$3" ] || [ "$size" -le "$3" ] || oversize="$oversize $2 $4 ($size > $3 bytes)"
}
say "release binary sizes (stripped):"
for t in $AARCH64 $ARMV7 $PPC $MUSL; do
    ceiling=""
    case $t in
    "$ARMV7") ceiling=$ARMV7_CEILING ;;
    "$PPC") ceiling=$PPC_CEILING ;;
    esac
    check_size "$target_dir/$t/release/rtlat" "$t" "$ceiling" "full build"
done
say "board build sizes (stripped, --no-default-features):"
for t in $AARCH64 $ARMV7 $PPC; do
    limit=""
    case $t in "$ARMV7" | "$PPC") limit=$BOARD_TARGET ;; esac
    check_size "$board_dir/$t/release/rtlat" "$t" "$limit" "board build (issue 13)"
done
step_done "built 4 targets and the armv7/powerpc test suites"

# aarch64 is built, not tested: one short run shows it starts and measures.
qemu-aarch64-static -L /usr/aarch64-linux-gnu "$target_dir/$AARCH64/release/rtlat" timer \
    --policy other --no-mlock --dma-latency off --duration 1s --cpus 0 --quiet --json "$work/aarch64.json"
# The PowerPC board build measures, reports as text, and names the full build
# for what it leaves out.
board_ppc() { qemu-ppc-static -L /usr/powerpc-linux-gnu "$board_dir/$PPC/release/rtlat" "$@"; }
board_ppc timer --policy other --no-mlock --dma-latency off --duration 1s --cpus 0 --quiet \
    --json "$work/ppc-board.json"
board_ppc report "$work/ppc-board.json" | grep -q "rtlat timer" ||
    fail "the PowerPC board build's report printed no summary"
if board_ppc import "$work/ppc-board.json" 2>"$work/board-import.err"; then
    fail "the PowerPC board build ran 'import', which it should not have"
fi
grep -q "not in this board build" "$work/board-import.err" ||
    fail "the PowerPC board build's 'import' said: $(cat "$work/board-import.err")"
# timer --context/--split read the kernel's trace (the kernel-trace feature):
# refused with exit 3 (as on a kernel without the tracer) naming the feature,
# before anything is measured.
st=0
board_ppc timer --context irq --duration 1s 2>"$work/board-context.err" || st=$?
[ "$st" = 3 ] && grep -q "features kernel-trace" "$work/board-context.err" ||
    fail "the PowerPC board build's 'timer --context irq' exited $st: $(cat "$work/board-context.err")"
# The static x86_64 build measures with the real-time defaults where it may
# (musl's own scheduling wrappers are ENOSYS stubs: this run would catch their use).
x86="$target_dir/$MUSL/release/rtlat"
if [ "$(id -u)" = 0 ]; then
    # One CPU, real-time settings, memory locked: what benches/memory.py
    # compares with cyclictest -t1 -m. mlockall makes every mapped page
    # resident, so the static build (no libc.so, ld.so or libgcc_s mapped,
    # musl's small heap) is the one held to issue 13's 4 MiB.
    "$x86" timer --cpus 0 --duration 2s --quiet --json "$work/x86_64.json" &
    pid=$!
    sleep 1.5
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    wait "$pid" || fail "the static x86_64 timer run failed"
    [ "${hwm:-0}" -gt 0 ] || fail "could not read the static x86_64 run's VmHWM"
    [ "$hwm" -le 4096 ] || fail "the static x86_64 build held $hwm kB resident (VmHWM) \
in a one-CPU timer run; at most 4096 kB (benches/memory.py shows where it goes)"
    say "static x86_64 timer --cpus 0: VmHWM $hwm kB (at most 4096 kB)"
    # Its resident memory stays flat (the short form of issue 13's ten
    # minutes, as tests/it/timer.rs asserts for the native build): 100 us on
    # every CPU, a save every second; VmRSS at 22 s within 64 kB of 10 s.
    # musl's own allocator failed this by 256 kB; the TLSF one (src/main.rs)
    # keeps what it mapped.
    "$x86" timer --period 100us --duration 24s --save-every 1s --quiet --json "$work/flat.json" &
    pid=$!
    sleep 10
    rss10=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    sleep 12
    rss22=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    wait "$pid" || fail "the static x86_64 flat-memory run failed"
    [ "${rss10:-0}" -gt 0 ] && [ "${rss22:-0}" -gt 0 ] ||
        fail "could not read the static x86_64 run's VmRSS"
    [ $((rss22 - rss10)) -le 64 ] && [ $((rss10 - rss22)) -le 64 ] ||
        fail "the static x86_64 build's VmRSS moved from $rss10 kB at 10 s to $rss22 kB at 22 s \
(at most 64 kB either way)"
    say "static x86_64 timer, 100 us on every CPU: VmRSS $rss10 kB at 10 s, $rss22 kB at 22 s"
else
    "$x86" timer --policy other --no-mlock --dma-latency off --duration 2s --quiet \
        --json "$work/x86_64.json"
fi
step_done "aarch64 and PowerPC board (qemu) and static x86_64 binaries ran"

# --- 2. unit and integration tests under qemu-user ------------------------------
cargo clippy --locked --all-targets --target $PPC -- -D warnings
step_done "clippy clean for powerpc"
emulated_tests() { # triple, emulator, sysroot
    say "tests for $1 under $2"
    log="$work/tests-$1.log"
    # A test that hangs in the emulator fails this stage after 25 minutes
    # instead of holding CI to its limit.
    if QEMU_LD_PREFIX="$3" RTLAT_TEST_EMULATOR="$2" RUSTFLAGS="$deny" \
        timeout --kill-after=30 1500 cargo test --locked --no-fail-fast --profile emulated \
        --target "$1" >"$log" 2>&1; then
        cat "$log"
        return 0
    fi
    cat "$log"
    # qemu-user now and then hangs a child that a multi-threaded process
    # forks before it reaches exec (CI saw a test's `rtlat import` killed by
    # its 60 s timeout, and a load's pre-exec child outlive its parent; each
    # takes under a second otherwise). A test that failed is run once more,
    # alone; one that fails again fails the stage. At most 3: more failures
    # than that are not the emulator's.
    failed=$(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log" | sort -u)
    n=$(printf '%s\n' "$failed" | grep -c . || true)
    [ "$n" -ge 1 ] && [ "$n" -le 3 ] ||
        fail "tests for $1 under $2 failed ($n failed tests) or did not end within 25 minutes"
    for t in $failed; do
        say "under $2, $t failed: running it once more, alone"
        QEMU_LD_PREFIX="$3" RTLAT_TEST_EMULATOR="$2" RUSTFLAGS="$deny" \
            timeout --kill-after=30 300 cargo test --locked --profile emulated --target "$1" \
            -- --exact "$t" || fail "under $2, $t failed twice"
        say "under $2, $t passed on its second run (counted as passed; see above for the first)"
    done
}
emulated_tests $ARMV7 qemu-arm-static /usr/arm-linux-gnueabihf
step_done "armv7 tests passed under qemu-arm-static"
emulated_tests $PPC qemu-ppc-static /usr/powerpc-linux-gnu
step_done "powerpc tests passed under qemu-ppc-static"

# --- 3. a PowerPC result read by the x86_64 build ---------------------------------
qemu-ppc-static -L /usr/powerpc-linux-gnu "$target_dir/$PPC/release/rtlat" timer \
    --policy other --no-mlock --dma-latency off --duration 2s --quiet --json "$work/ppc.json"
# The loader: RunResult::load on the big-endian 32-bit file, its invariants and schema,
# and a lossless round trip.
RTLAT_FOREIGN_RESULT="$work/ppc.json" RTLAT_FOREIGN_MACHINE=ppc \
    cargo test --locked --test it -- --exact cross::a_result_from_a_big_endian_32_bit_build_loads
# The user's view: the x86_64 build reports the PowerPC file and compares it with its own.
"$x86" report "$work/ppc.json" >"$work/report.txt" || fail "rtlat report of the PowerPC result"
"$x86" compare "$work/ppc.json" "$work/x86_64.json" >"$work/compare.txt" ||
    fail "rtlat compare of the PowerPC and x86_64 results"
grep -q . "$work/report.txt" || fail "rtlat report printed nothing"
say "rtlat compare (x86_64 build) of the PowerPC and x86_64 results:"
sed 's/^/    /' "$work/compare.txt"
step_done "x86_64 read, reported and compared the PowerPC result"

[ -z "$oversize" ] ||
    fail "stripped release binaries too big:$oversize (Cargo.toml [profile.release] and [features]; docs/boards.md#build)"
say "all passed in $(($(date +%s) - started)) s"
