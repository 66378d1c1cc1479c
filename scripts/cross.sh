#!/bin/sh
# Cross builds and emulated tests for the boards rtlat runs on (issue 7).
#
#  1. release binaries for aarch64, armv7 and 32-bit PowerPC (glibc) and a
#     static x86_64 (musl), each checked with `file` for its architecture;
#  2. the unit and integration test suites for armv7 and powerpc under
#     qemu-user (`runner` in .cargo/config.toml; the integration tests start
#     the binary through a qemu wrapper named by RTLAT_TEST_BIN);
#  3. a 2 s `timer` run of the PowerPC build under qemu-ppc-static whose result
#     file the x86_64 build reads and compares (byte order and schema agree).
#
# Needs (Debian): gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-powerpc-linux-gnu
# libc6-dev-arm64-cross libc6-dev-armhf-cross libc6-dev-powerpc-cross qemu-user-static file,
# and rustup (it adds the four targets' rust-std). No binfmt_misc registration needed.
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
    qemu-arm-static qemu-ppc-static file cc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
for sysroot in /usr/arm-linux-gnueabihf /usr/powerpc-linux-gnu /usr/aarch64-linux-gnu; do
    [ -d "$sysroot/lib" ] || missing="$missing $sysroot"
done
if [ -n "$missing" ]; then
    fail "missing:$missing. Install: apt-get install gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf \
gcc-powerpc-linux-gnu libc6-dev-arm64-cross libc6-dev-armhf-cross libc6-dev-powerpc-cross \
qemu-user-static file (or skip the cross part: RTLAT_SKIP_CROSS=1 scripts/test.sh)"
fi

sysroot=$(rustc --print sysroot)
for t in $AARCH64 $ARMV7 $PPC $MUSL; do
    [ -d "$sysroot/lib/rustlib/$t" ] && continue
    command -v rustup >/dev/null 2>&1 || fail "no rust-std for $t and no rustup to add it"
    rustup target add "$t" >/dev/null
done

target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
[ -d "$target_dir" ] || mkdir -p "$target_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
step_done "tools and targets ready"

# Warnings are errors on every target, as natively: 32-bit, big-endian, musl and
# c_char = u8 show problems x86_64 glibc never does. (With --target, RUSTFLAGS
# does not touch the host's build scripts and proc macros.)
deny="${RUSTFLAGS:-} -D warnings"

# --- 1. release binaries, architecture checked ---------------------------------
# One cargo invocation: the four targets build in parallel on every core.
RUSTFLAGS="$deny" cargo build --release --locked --bin rtlat \
    --target $AARCH64 --target $ARMV7 --target $PPC --target $MUSL
check_arch() { # triple, then the phrases `file` must print
    bin="$target_dir/$1/release/rtlat"
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
check_arch $AARCH64 "ELF 64-bit LSB" "ARM aarch64"
check_arch $ARMV7 "ELF 32-bit LSB" "ARM, EABI5" "/lib/ld-linux-armhf.so.3"
check_arch $PPC "ELF 32-bit MSB" "PowerPC"
check_arch $MUSL "ELF 64-bit LSB" "x86-64" "static"
case "$(file -b "$target_dir/$MUSL/release/rtlat")" in
*"dynamically linked"*) fail "the musl build is not static" ;;
esac
"$target_dir/$MUSL/release/rtlat" --version >/dev/null || fail "the static x86_64 binary does not run"
step_done "built 4 targets"

# --- 2. unit and integration tests under qemu-user ------------------------------
cargo clippy --locked --all-targets --target $ARMV7 --target $PPC -- -D warnings
RUSTFLAGS="$deny" cargo test --locked --no-run --target $ARMV7 --target $PPC
emulated_tests() { # triple, emulator, sysroot
    wrapper="$target_dir/$1/debug/rtlat-qemu"
    printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$2" "$3" "$target_dir/$1/debug/rtlat" >"$wrapper"
    chmod 755 "$wrapper"
    say "tests for $1 under $2"
    RTLAT_TEST_BIN="$wrapper" RTLAT_TEST_EMULATOR="$2" RUSTFLAGS="$deny" \
        cargo test --locked --target "$1"
}
emulated_tests $ARMV7 qemu-arm-static /usr/arm-linux-gnueabihf
step_done "armv7 tests passed under qemu-arm-static"
emulated_tests $PPC qemu-ppc-static /usr/powerpc-linux-gnu
step_done "powerpc tests passed under qemu-ppc-static"

# --- 3. a PowerPC result read and compared by the x86_64 build --------------------
qemu-ppc-static -L /usr/powerpc-linux-gnu "$target_dir/$PPC/release/rtlat" timer \
    --policy other --no-mlock --dma-latency off --duration 2s --quiet --json "$work/ppc.json"
x86="$target_dir/$MUSL/release/rtlat"
"$x86" timer --policy other --no-mlock --dma-latency off --duration 2s --quiet \
    --json "$work/x86_64.json"
# The loader itself: RunResult::load on the big-endian 32-bit file, its invariants and schema.
RTLAT_FOREIGN_RESULT="$work/ppc.json" RTLAT_FOREIGN_MACHINE=ppc \
    cargo test --locked --test it -- --exact cross::a_result_from_a_big_endian_32_bit_build_loads
# The user's view, once `rtlat report`/`compare` exist in this build.
for cmd in "report $work/ppc.json" "compare $work/ppc.json $work/x86_64.json"; do
    # shellcheck disable=SC2086 # the paths come from mktemp: no spaces
    if "$x86" $cmd >"$work/out" 2>"$work/err"; then
        say "rtlat $cmd (x86_64) read the PowerPC result:"
        sed 's/^/    /' "$work/out"
    elif grep -q "not available in this build" "$work/err"; then
        say "rtlat ${cmd%% *} is not available in this build yet: checked through RunResult::load only"
    else
        cat "$work/err" >&2
        fail "rtlat $cmd on the x86_64 build"
    fi
done
step_done "x86_64 read the PowerPC result"

say "all passed in $(($(date +%s) - started)) s"
