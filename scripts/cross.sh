#!/bin/bash
# The release binaries of every target, built once each, and the tests that
# need them: what scripts/test.sh runs as its artifacts lane.
#
#   scripts/cross.sh build     each binary once per target, checked and run
#   scripts/cross.sh emulated  the armv7 and PowerPC test suites under qemu-user
#   scripts/cross.sh           both
#   scripts/cross.sh sizes     docs/boards.md's size table from the binaries of `build`
#
# build:
#  - release binaries (Cargo.toml's shipped profile: fat LTO, one codegen unit,
#    stripped) of x86_64 static (musl: the amd64 package, the e2e guests),
#    aarch64, armv7 and 32-bit PowerPC; the board build (--no-default-features:
#    no host-tools, no kernel-trace) of aarch64, armv7 and PowerPC, as
#    target/TRIPLE/release/rtlat-board. Each is checked with `file` for its
#    architecture and for being stripped; armv7 and PowerPC are held to size
#    ceilings (the board builds to a small board's 2 MB);
#  - aarch64 (under qemu) and the PowerPC board build run once, the latter
#    refusing `import` and `timer --context` and leaving them out of its help;
#    docs/boards.md's qemu-user recipe runs with a load (a child process
#    started through binfmt_misc) and its result is marked emulated; the
#    size table of docs/boards.md is compared with the builds (`sizes`
#    rewrites it); the static x86_64 build runs with
#    real-time settings and is held to 4 MiB resident and to a flat RSS;
#  - a PowerPC run's result file, read, reported and compared by the x86_64
#    build ($CROSS_OUT/ppc.json; scripts/test.sh hands it to the test
#    cross::a_result_from_a_big_endian_32_bit_build_loads);
#  - the Debian packages of amd64, arm64 and armhf from these binaries
#    (scripts/deb.sh --no-build), in $CROSS_OUT/debs.
#  Files named in $CROSS_READY (a directory, when set) tell scripts/test.sh's
#  other lanes what is ready: `static` (the musl binary), `foreign` (ppc.json),
#  `debs`.
#
# emulated: the unit and integration tests of armv7 and PowerPC under qemu-user
# (cargo-nextest, profile `emulated` of .config/nextest.toml: where byte order
# and word size matter, plus one smoke run of each benchmark; a test that fails
# is run once more and reported as flaky when it then passes). What the tests
# start (rtlat, and the load host rtlat re-executes) runs through binfmt_misc,
# registered here.
# RTLAT_FORCE_FAIL=emulated makes one of them, harness::fails_when_asked,
# fail on purpose (tests/it/harness.rs): the tier must then fail.
#
# Needs (Debian, scripts/packages.txt): the cross toolchains, qemu-user-static,
# binfmt-support, file, musl-tools; rustup (it adds the targets' rust-std); root
# unless qemu-arm and qemu-ppc are already registered with binfmt_misc.
set -eu -o pipefail
cd "$(dirname "$0")/.."

AARCH64=aarch64-unknown-linux-gnu
ARMV7=armv7-unknown-linux-gnueabihf
PPC=powerpc-unknown-linux-gnu
MUSL=x86_64-unknown-linux-musl

what=${1:-all}
case "$what" in build | emulated | sizes | all) ;; *)
    echo "usage: scripts/cross.sh [build|emulated|sizes]" >&2
    exit 2
    ;;
esac

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
ready() { [ -z "${CROSS_READY:-}" ] || touch "$CROSS_READY/$1"; }

# --- tools -------------------------------------------------------------------
missing=""
for tool in aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc powerpc-linux-gnu-gcc \
    qemu-aarch64-static qemu-arm-static qemu-ppc-static file cc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
for sysroot in /usr/arm-linux-gnueabihf /usr/powerpc-linux-gnu /usr/aarch64-linux-gnu; do
    [ -d "$sysroot/lib" ] || missing="$missing $sysroot"
done
[ -z "$missing" ] || fail "missing:$missing. Install the cross part of scripts/packages.txt \
(scripts/setup.sh as root does), or skip it on a developer's machine: RTLAT_SKIP_CROSS=1 scripts/test.sh"
sysroot=$(rustc --print sysroot)
for t in $AARCH64 $ARMV7 $PPC $MUSL; do
    [ -d "$sysroot/lib/rustlib/$t" ] && continue
    command -v rustup >/dev/null 2>&1 || fail "no rust-std for $t and no rustup to add it"
    rustup target add "$t" >/dev/null
done

target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
CROSS_OUT=${CROSS_OUT:-$target_dir/cross-out}
mkdir -p "$CROSS_OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# Warnings are errors on every target, as natively: 32-bit, big-endian, musl
# and c_char = u8 show problems x86_64 glibc never does. Per target, so that
# PowerPC keeps .cargo/config.toml's flags (not PIE) and every cargo call here
# has the same flags (nothing rebuilt between them); RUSTFLAGS would replace them.
# PowerPC's are .cargo/config.toml's (not PIE, no RELRO) with warnings denied.
unset RUSTFLAGS
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-D warnings"
export CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUSTFLAGS="-D warnings"
export CARGO_TARGET_POWERPC_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C relocation-model=static -C link-arg=-Wl,-z,norelro -D warnings"
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-D warnings"

release() { cargo build --release --locked --bin rtlat "$@"; }
targets() { for t in "$@"; do printf -- '--target %s ' "$t"; done; }

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

# The full builds of armv7 and PowerPC are over a small board's 2 MB
# (docs/boards.md#build says what is big): each is held to a ceiling so that it
# grows no further unnoticed; lower the ceilings as code is trimmed. Every
# board build is held to the 2 MB. Checked at the end of `build`, so that one
# run also shows whether the rest passes.
BOARD_TARGET=2000000
ARMV7_CEILING=3450000
PPC_CEILING=3930000
oversize=""
check_size() { # binary, name, limit in bytes or "", what the limit is
    case "$(file -b "$1")" in
    *"not stripped"* | *"with debug_info"*) fail "$1 is not stripped (Cargo.toml [profile.release] strip)" ;;
    esac
    size=$(wc -c <"$1")
    printf 'cross:   %-40s %9d bytes (%s MB)\n' "$2" "$size" \
        "$(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1e6 }')"
    [ -z "$3" ] || [ "$size" -le "$3" ] || oversize="$oversize $2 $4 ($size > $3 bytes)"
}

# docs/boards.md's size table, between its markers, from the binaries
# `build` made: the board build and the full build of armv7 and PowerPC.
SIZES_DOC=docs/boards.md
size_table() {
    local t note
    printf '| target (rustc %s) | board build | full build |\n|---|---:|---:|\n' \
        "$(rustc --version | awk '{ print $2 }')"
    for t in $ARMV7 $PPC; do
        note=""
        [ "$t" = "$PPC" ] && note=" (not PIE, no RELRO)"
        # shellcheck disable=SC2016 # Markdown's backquotes
        printf '| `%s`%s | %s | %s |\n' "$t" "$note" \
            "$(wc -c <"$target_dir/$t/release/rtlat-board" | sed ':a;s/\B[0-9]\{3\}\>/ &/;ta')" \
            "$(wc -c <"$target_dir/$t/release/rtlat" | sed ':a;s/\B[0-9]\{3\}\>/ &/;ta')"
    done
}
# The document with `table` (a file) between the markers, on stdout.
with_table() {
    awk -v table="$1" '
        /^<!-- \/sizes -->$/ { while ((getline line < table) > 0) print line; skip = 0 }
        !skip { print }
        /^<!-- sizes: / { skip = 1 }' "$SIZES_DOC"
}
sizes() {
    local t
    for t in $ARMV7 $PPC; do
        if [ ! -f "$target_dir/$t/release/rtlat-board" ] || [ ! -f "$target_dir/$t/release/rtlat" ]; then
            fail "no release builds of $t: run scripts/cross.sh build first"
        fi
    done
    size_table >"$work/sizes.md"
    with_table "$work/sizes.md" >"$work/boards.md"
    cp "$work/boards.md" "$SIZES_DOC"
    say "wrote the size table of $SIZES_DOC:"
    sed 's/^/    /' "$work/sizes.md"
}

# docs/boards.md's qemu-user recipe (its `$ QEMU_LD_PREFIX=…` command, with
# continuation lines), run as written from a scratch directory whose
# target/ is this one: the run and the load host it starts (a child process,
# through binfmt_misc) both work, and the result says it was emulated.
boards_recipe() {
    local dir=$work/recipe cmd
    mkdir -p "$dir"
    ln -s "$target_dir" "$dir/target"
    cmd=$(awk '/^\$ QEMU_LD_PREFIX=/ { on = 1; sub(/^\$ /, "") }
        on { print; if ($0 !~ /\\$/) exit }' docs/boards.md)
    case "$cmd" in *--load*) ;; *) fail "docs/boards.md's qemu-user recipe has no --load: $cmd" ;; esac
    (cd "$dir" && eval "$cmd") >"$dir/out.txt" 2>&1 ||
        fail "docs/boards.md's qemu-user recipe failed: $(tail -n 5 "$dir/out.txt")"
    python3 - "$dir/board.json" <<'PY' || fail "docs/boards.md's qemu-user recipe: $(cat "$dir/out.txt")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["complete"], "the run did not finish"
loads = [l for l in r["loads"] if not l.get("declared")]
assert loads and all(l.get("workers", 0) > 0 and l.get("achieved_rate", 0) > 0 and not l.get("failed") for l in loads), r["loads"]
assert r["system"].get("emulation", "").startswith("qemu-user"), r["system"]
assert any(n.startswith("emulated: ") for n in r["notes"]), r["notes"]
PY
    say "docs/boards.md's qemu-user recipe ran, with its load: $(grep -c '^load ' "$dir/out.txt") load line(s)"
}

build() {
    local t x86 board_ppc st pid hwm rss10 rss22
    # The static build first: the e2e lane boots it, and it measures here.
    # shellcheck disable=SC2046
    release --target $MUSL
    ready static
    step_done "static x86_64 release build"
    # The board builds, copied aside before the full builds of the same
    # targets replace release/rtlat (the dependencies are built once for both).
    # shellcheck disable=SC2046
    release --no-default-features $(targets $AARCH64 $ARMV7 $PPC)
    for t in $AARCH64 $ARMV7 $PPC; do
        cp "$target_dir/$t/release/rtlat" "$target_dir/$t/release/rtlat-board"
    done
    step_done "board builds (no host-tools, no kernel-trace) of 3 targets"
    # shellcheck disable=SC2046
    release $(targets $AARCH64 $ARMV7 $PPC)
    step_done "release builds of 3 more targets"

    check_arch "$target_dir/$AARCH64/release/rtlat" "ELF 64-bit LSB" "ARM aarch64"
    check_arch "$target_dir/$ARMV7/release/rtlat" "ELF 32-bit LSB" "ARM, EABI5" "/lib/ld-linux-armhf.so.3"
    check_arch "$target_dir/$PPC/release/rtlat" "ELF 32-bit MSB executable" "PowerPC"
    check_arch "$target_dir/$PPC/release/rtlat-board" "ELF 32-bit MSB executable" "PowerPC"
    check_arch "$target_dir/$MUSL/release/rtlat" "ELF 64-bit LSB" "x86-64" "static"
    case "$(file -b "$target_dir/$MUSL/release/rtlat")" in
    *"dynamically linked"*) fail "the musl build is not static" ;;
    esac
    say "release binary sizes (stripped):"
    for t in $MUSL $AARCH64 $ARMV7 $PPC; do
        case $t in
        "$ARMV7") check_size "$target_dir/$t/release/rtlat" "$t" $ARMV7_CEILING "full build" ;;
        "$PPC") check_size "$target_dir/$t/release/rtlat" "$t" $PPC_CEILING "full build" ;;
        *) check_size "$target_dir/$t/release/rtlat" "$t" "" "" ;;
        esac
    done
    say "board build sizes (stripped, --no-default-features):"
    for t in $AARCH64 $ARMV7 $PPC; do
        check_size "$target_dir/$t/release/rtlat-board" "$t" $BOARD_TARGET "board build"
    done

    # A PowerPC run's result, for the x86_64 build to read (byte order and
    # word size of the result file): here, and by the test in scripts/test.sh.
    qemu-ppc-static -L /usr/powerpc-linux-gnu "$target_dir/$PPC/release/rtlat" timer \
        --policy other --no-mlock --dma-latency off --duration 2s --quiet --json "$CROSS_OUT/ppc.json"
    ready foreign
    # aarch64 is built, not tested: one short run shows it starts and measures.
    qemu-aarch64-static -L /usr/aarch64-linux-gnu "$target_dir/$AARCH64/release/rtlat" timer \
        --policy other --no-mlock --dma-latency off --duration 1s --cpus 0 --quiet --json "$work/aarch64.json"
    # The PowerPC board build measures, prints the run's summary, writes its
    # result, and names the full build for what it leaves out (reading
    # result files: report, import).
    board_ppc() { qemu-ppc-static -L /usr/powerpc-linux-gnu "$target_dir/$PPC/release/rtlat-board" "$@"; }
    # Through a file, not a pipe: grep -q leaves at the first match, and a
    # run still writing would fail the pipeline (pipefail) for nothing.
    board_ppc timer --policy other --no-mlock --dma-latency off --duration 1s --cpus 0 \
        --json "$work/ppc-board.json" >"$work/ppc-board.txt" ||
        fail "the PowerPC board build's run failed"
    grep -q "rtlat timer" "$work/ppc-board.txt" ||
        fail "the PowerPC board build's run printed no summary"
    "$target_dir/$MUSL/release/rtlat" report "$work/ppc-board.json" >"$work/ppc-board-report.txt" ||
        fail "the full build's report of the PowerPC board build's result failed"
    for cmd in report import; do
        if board_ppc $cmd "$work/ppc-board.json" 2>"$work/board-$cmd.err"; then
            fail "the PowerPC board build ran '$cmd', which it should not have"
        fi
        grep -q "not in this board build" "$work/board-$cmd.err" ||
            fail "the PowerPC board build's '$cmd' said: $(cat "$work/board-$cmd.err")"
    done
    # timer --context/--split and watch read the kernel's trace (the
    # kernel-trace feature): refused with exit 3 (as on a kernel without the
    # tracer) naming the feature, before anything is measured.
    for args in "timer --context irq --duration 1s" "watch --duration 1s"; do
        st=0
        # shellcheck disable=SC2086
        board_ppc $args 2>"$work/board-trace.err" || st=$?
        [ "$st" = 3 ] && grep -q "features kernel-trace" "$work/board-trace.err" ||
            fail "the PowerPC board build's '$args' exited $st: $(cat "$work/board-trace.err")"
    done
    # Its help leaves out what it refuses (src/cli/mod.rs's unit test checks
    # every subcommand in both builds; here the binary that ships).
    board_ppc timer --help >"$work/board-help.txt"
    board_ppc noise --help >>"$work/board-help.txt"
    ! grep -qwE -- '--context|--split|--explain|--osnoise|--bound|--max-forecast' "$work/board-help.txt" ||
        fail "the PowerPC board build's help names what it refuses: $(grep -wE -- '--context|--split|--explain|--osnoise|--bound|--max-forecast' "$work/board-help.txt")"
    boards_recipe
    step_done "aarch64 and PowerPC (qemu) ran"

    # The static x86_64 build measures with the real-time defaults where it may
    # (musl's own scheduling wrappers are ENOSYS stubs: this run would catch
    # their use).
    x86="$target_dir/$MUSL/release/rtlat"
    if [ "$(id -u)" = 0 ]; then
        # One CPU, real-time settings, memory locked: what benches/memory.py
        # compares with cyclictest -t1 -m. mlockall makes every mapped page
        # resident; the static build (no libc.so, ld.so or libgcc_s mapped)
        # is the one held to 4 MiB.
        "$x86" timer --cpus 0 --duration 2s --quiet --json "$work/x86_64.json" &
        pid=$!
        sleep 1.5
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
        wait "$pid" || fail "the static x86_64 timer run failed"
        [ "${hwm:-0}" -gt 0 ] || fail "could not read the static x86_64 run's VmHWM"
        [ "$hwm" -le 4096 ] || fail "the static x86_64 build held $hwm kB resident (VmHWM) \
in a one-CPU timer run; at most 4096 kB (benches/memory.py shows where it goes)"
        say "static x86_64 timer --cpus 0: VmHWM $hwm kB (at most 4096 kB)"
        # Its resident memory stays flat, as tests/it/timer.rs asserts for
        # the native build: 100 us on every CPU, a save every second; VmRSS
        # at 22 s within 64 kB of 10 s (the allocator of src/main.rs keeps
        # what it mapped).
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
    # The user's view of the PowerPC file: the x86_64 build reports it and
    # compares it with its own.
    "$x86" report "$CROSS_OUT/ppc.json" >"$work/report.txt" || fail "rtlat report of the PowerPC result"
    grep -q . "$work/report.txt" || fail "rtlat report printed nothing"
    "$x86" compare "$CROSS_OUT/ppc.json" "$work/x86_64.json" >"$work/compare.txt" ||
        fail "rtlat compare of the PowerPC and x86_64 results"
    say "rtlat compare (x86_64 build) of the PowerPC and x86_64 results:"
    sed 's/^/    /' "$work/compare.txt"
    step_done "static x86_64 ran, read and compared the PowerPC result"

    scripts/deb.sh --no-build --out "$CROSS_OUT/debs" amd64 arm64 armhf
    ready debs
    step_done "Debian packages of amd64, arm64 and armhf"

    size_table >"$work/sizes.md"
    with_table "$work/sizes.md" | cmp -s - "$SIZES_DOC" ||
        say "docs/boards.md's size table is not these builds': scripts/cross.sh sizes rewrites it"

    [ -z "$oversize" ] ||
        fail "stripped release binaries too big:$oversize (Cargo.toml [profile.release] and [features]; docs/boards.md#build)"
}

# The tests start foreign binaries themselves (rtlat, and rtlat re-executing
# itself as the load host): the kernel hands them to qemu through binfmt_misc.
# Registered as Debian's binfmt-support does on a normal install, and left so.
binfmt_ready() {
    local binfmt=/proc/sys/fs/binfmt_misc q
    for q in qemu-arm qemu-ppc; do
        [ "$(head -n 1 "$binfmt/$q" 2>/dev/null)" = enabled ] && continue
        [ -e "$binfmt/status" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
        update-binfmts --enable $q >/dev/null 2>&1 || true
        [ "$(head -n 1 "$binfmt/$q" 2>/dev/null)" = enabled ] || fail "cannot register $q with \
binfmt_misc: run as root with binfmt-support installed (or RTLAT_SKIP_CROSS=1 scripts/test.sh)"
    done
}

emulated() {
    binfmt_ready
    local t emu root
    # Each suite in the `emulated` profile of Cargo.toml (debug checks, light
    # optimisation: qemu-user runs unoptimised code many times slower), built
    # by nextest for one target at a time: a build of both in one cargo call
    # does not leave the dependencies fresh for the one-target runs.
    for t in $ARMV7 $PPC; do
        case $t in
        "$ARMV7") emu=qemu-arm-static root=/usr/arm-linux-gnueabihf ;;
        *) emu=qemu-ppc-static root=/usr/powerpc-linux-gnu ;;
        esac
        QEMU_LD_PREFIX=$root RTLAT_TEST_EMULATOR=$emu \
            cargo nextest run --locked --profile emulated --cargo-profile emulated --target $t \
            --no-tests fail || fail "tests for $t under $emu"
        check_arch "$target_dir/$t/emulated/rtlat" "ELF 32-bit" "$([ $t = $PPC ] && echo "MSB" || echo "LSB")" \
            "$([ $t = $PPC ] && echo "PowerPC" || echo "ARM, EABI5")"
        cp target/nextest/emulated/junit.xml "$CROSS_OUT/junit-$t.xml" 2>/dev/null || true
        step_done "$t tests under $emu"
    done
}

case "$what" in
build) build ;;
emulated) emulated ;;
sizes) sizes ;;
all)
    build
    emulated
    ;;
esac
say "$what: all passed in $(($(date +%s) - started)) s"
