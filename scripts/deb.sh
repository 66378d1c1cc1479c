#!/bin/sh
# Debian packages of rtlat (issue 17): `scripts/deb.sh [amd64] [arm64] [armhf]`
# (all three without arguments) writes target/debian/rtlat_VERSION-1_ARCH.deb.
#
# The binary, the man pages (`rtlat man`), the bash completion (`rtlat
# completions bash`), README.Debian (the capabilities hint) and docs/fleet.md,
# as listed in Cargo.toml's [package.metadata.deb]. The pages and the
# completion do not depend on the architecture: the native build writes them.
# arm64 and armhf are cross-built as scripts/cross.sh does (linkers from
# .cargo/config.toml, Debian's cross toolchains of scripts/packages.txt).
# cargo-deb (the version pinned below, which scripts/setup.sh installs before
# the tests) is installed from crates.io when missing.
set -eu
cd "$(dirname "$0")/.."

say() { echo "deb: $*"; }
fail() {
    echo "deb: FAILED: $*" >&2
    exit 1
}

arches=${*:-amd64 arm64 armhf}
triple() {
    case "$1" in
    amd64) echo x86_64-unknown-linux-gnu ;;
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
out=$target_dir/debian

# The native build writes the architecture-independent assets.
cargo build --release --locked --quiet
rm -rf "$assets"
mkdir -p "$assets/man" "$out"
"$target_dir/release/rtlat" man "$assets/man" >/dev/null
"$target_dir/release/rtlat" completions bash >"$assets/rtlat.bash"
[ -s "$assets/man/rtlat-timer.1" ] && [ -s "$assets/rtlat.bash" ] || fail "no man pages or completion"

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
for a in $arches; do
    t=$(triple "$a")
    if [ "$t" != "$host" ]; then
        [ -d "$sysroot/lib/rustlib/$t" ] || rustup target add "$t" >/dev/null ||
            fail "no rust-std for $t (rustup target add $t)"
        command -v "$(strip_tool "$a")" >/dev/null ||
            fail "$(strip_tool "$a") missing: apt-get install the cross toolchain of scripts/packages.txt"
    fi
    say "building $a ($t)"
    # The native package reuses the build above; for the others cargo-deb
    # maps target/release/ in the assets to target/$t/release/.
    if [ "$t" = "$host" ]; then set --; else set -- --target "$t"; fi
    deb=$(cargo deb --locked --strip "$@" --output "$out" --quiet 2>&1 | tail -n 1)
    [ -f "$deb" ] || fail "cargo deb --target $t wrote no package ($deb)"
    got=$(dpkg-deb --field "$deb" Architecture)
    [ "$got" = "$a" ] || fail "$deb is for '$got', not $a"
    say "$deb"
done
