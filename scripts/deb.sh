#!/bin/sh
# Debian packages of rtlat:
#   scripts/deb.sh [--no-build] [--out DIR] [amd64] [arm64] [armhf]
# writes DIR/rtlat_VERSION-1_ARCH.deb (all three architectures without
# arguments; DIR defaults to target/debian).
#
# The amd64 package holds the static (musl) build, the one that meets the
# memory targets (benches/memory.py) and runs on any amd64 Debian or
# derivative; arm64 and armhf hold the glibc builds.
#
# The binary, the man pages (`rtlat man`), the bash completion (`rtlat
# completions bash`), README.Debian (the capabilities hint) and docs/fleet.md,
# as listed in Cargo.toml's [package.metadata.deb]. Each package takes the
# release binary of its target, target/TRIPLE/release/rtlat: built here
# (arm64 and armhf cross-built with the linkers of .cargo/config.toml and
# Debian's cross toolchains of scripts/packages.txt), or with --no-build the
# one scripts/cross.sh built. The pages and the completion do not depend on
# the architecture: the amd64 binary writes them.
# cargo-deb (the version pinned below, which scripts/setup.sh installs) is
# installed from crates.io when missing.
set -eu
cd "$(dirname "$0")/.."

say() { echo "deb: $*"; }
fail() {
    echo "deb: FAILED: $*" >&2
    exit 1
}

build=true
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --no-build) build=false ;;
    --out)
        [ $# -ge 2 ] || fail "--out needs a directory"
        out=$2
        shift
        ;;
    -*) fail "unknown option '$1': scripts/deb.sh [--no-build] [--out DIR] [amd64] [arm64] [armhf]" ;;
    *) break ;;
    esac
    shift
done
arches=${*:-amd64 arm64 armhf}
triple() {
    case "$1" in
    amd64) echo x86_64-unknown-linux-musl ;;
    arm64) echo aarch64-unknown-linux-gnu ;;
    armhf) echo armv7-unknown-linux-gnueabihf ;;
    *) fail "unknown architecture '$1': give amd64, arm64 or armhf" ;;
    esac
}
strip_tool() {
    case "$1" in
    amd64) echo strip ;;
    arm64) echo aarch64-linux-gnu-strip ;;
    armhf) echo arm-linux-gnueabihf-strip ;;
    esac
}
for a in $arches; do triple "$a" >/dev/null; done

CARGO_DEB_VERSION=3.8.0
if ! cargo deb --version >/dev/null 2>&1; then
    say "installing cargo-deb (cargo install cargo-deb --locked --version $CARGO_DEB_VERSION)"
    log=$(mktemp)
    cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" >"$log" 2>&1 || {
        tail -n 5 "$log" >&2
        fail "cargo install cargo-deb --locked --version $CARGO_DEB_VERSION"
    }
    rm -f "$log"
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
assets=target/deb-assets
out=${out:-$target_dir/debian}
mkdir -p "$out"

sysroot=$(rustc --print sysroot)
for a in $arches; do
    t=$(triple "$a")
    bin=$target_dir/$t/release/rtlat
    if [ $build = true ]; then
        [ -d "$sysroot/lib/rustlib/$t" ] || rustup target add "$t" >/dev/null ||
            fail "no rust-std for $t (rustup target add $t)"
        say "building $a ($t)"
        cargo build --release --locked --quiet --bin rtlat --target "$t"
    fi
    [ -x "$bin" ] || fail "$bin is missing: run scripts/cross.sh build, or scripts/deb.sh without --no-build"
    command -v "$(strip_tool "$a")" >/dev/null ||
        fail "$(strip_tool "$a") missing: apt-get install the cross toolchain of scripts/packages.txt"
done

# The architecture-independent assets, from the amd64 build (or, when only
# other architectures are packaged, a native build).
native=$target_dir/$(triple amd64)/release/rtlat
if [ ! -x "$native" ]; then
    cargo build --release --locked --quiet --bin rtlat --target "$(triple amd64)"
fi
rm -rf "$assets"
mkdir -p "$assets/man"
"$native" man "$assets/man" >/dev/null
"$native" completions bash >"$assets/rtlat.bash"
[ -s "$assets/man/rtlat-timer.1" ] && [ -s "$assets/rtlat.bash" ] || fail "no man pages or completion"

for a in $arches; do
    t=$(triple "$a")
    # cargo-deb maps target/release/ in the assets to target/$t/release/.
    # The static build depends on nothing (variant `static` of Cargo.toml).
    variant=""
    [ "$a" = amd64 ] && variant="--variant static"
    # shellcheck disable=SC2086
    deb=$(cargo deb --locked --no-build --strip --target "$t" $variant --output "$out" --quiet 2>&1 | tail -n 1)
    [ -f "$deb" ] || fail "cargo deb --target $t wrote no package ($deb)"
    got=$(dpkg-deb --field "$deb" Architecture)
    [ "$got" = "$a" ] || fail "$deb is for '$got', not $a"
    say "$deb"
done
