#!/bin/bash
# Build the rtlat-responder kernel module (kmod/).
#
#   scripts/kmod-build.sh                       against the running kernel (/lib/modules/$(uname -r)/build)
#   scripts/kmod-build.sh --kdir DIR [--arch A] against a prepared headers tree
#   scripts/kmod-build.sh --debian A            against Debian 12's 6.1 headers for A = amd64, rt-amd64,
#                                               arm64 or armhf, unpacked with dpkg -x (cross-compiled for
#                                               arm64/armhf with the host tools of the amd64 kbuild package)
# Options: --out DIR (where the .ko goes [target/kmod/<arch>]), --kabi 6.1.0-N, --kver 6.1.x-y.
# Environment: RTLAT_KMOD_CACHE (downloads and unpacked headers) [~/.cache/rtlat-e2e].
# Fails on any compiler warning. Prints the path of the built module.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

KABI=
KVER=
KSERIES=6.1
ARCH_NAME=native
KDIR=
OUT=
CACHE=${RTLAT_KMOD_CACHE:-$HOME/.cache/rtlat-e2e}

die() {
    echo "kmod-build: $*" >&2
    exit 1
}
while [ $# -gt 0 ]; do
    case "$1" in
    --kdir) KDIR=$2; shift 2 ;;
    --arch | --debian) ARCH_NAME=$2; [ "$1" = --debian ] && KDIR=debian; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --kabi) KABI=$2; shift 2 ;;
    --kver) KVER=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done

# Debian architecture, header flavour, kernel ARCH and cross prefix.
case "$ARCH_NAME" in
native | amd64) DARCH=amd64 FLAVOUR=amd64 KARCH= CROSS= ;;
rt-amd64) DARCH=amd64 FLAVOUR=rt-amd64 KARCH= CROSS= ;;
arm64) DARCH=arm64 FLAVOUR=arm64 KARCH=arm64 CROSS=aarch64-linux-gnu- ;;
armhf) DARCH=armhf FLAVOUR=armmp KARCH=arm CROSS=arm-linux-gnueabihf- ;;
*) die "--arch must be amd64, rt-amd64, arm64 or armhf" ;;
esac
# Debian's 6.1.0-57 (6.1.192-3) has no armhf headers in bookworm-security
# (no linux-headers-6.1.0-57-armmp_6.1.192-3_armhf.deb on deb.debian.org), so
# armhf takes bookworm's own 6.1.0-50 (6.1.176-1). Pass --kabi/--kver for another.
if [ -z "$KABI" ]; then
    if [ "$DARCH" = armhf ]; then KABI=6.1.0-50 KVER=${KVER:-6.1.176-1}; else KABI=6.1.0-57 KVER=${KVER:-6.1.192-3}; fi
fi
[ -n "$KVER" ] || die "--kabi needs --kver too (the Debian package version, e.g. 6.1.192-3)"
[ -z "$CROSS" ] || command -v "${CROSS}gcc" > /dev/null ||
    die "${CROSS}gcc is missing (apt-get install gcc-${CROSS%-})"

debs=$CACHE/debs
# Download one package of $KVER for architecture $2 unless cached. apt-get
# only knows the host's architectures, so a foreign package's address is the
# amd64 one's (same pool directory, same version) with the architecture swapped.
fetch() { # package arch
    local f="$debs/${1}_${KVER}_$2.deb" url
    [ -s "$f" ] && return 0
    mkdir -p "$debs"
    if [ "$2" = amd64 ] || [ "$2" = all ]; then
        url=$(apt-get download --print-uris "$1=$KVER" 2> /dev/null | sed -n "s/^'\([^']*\)'.*/\1/p" | head -1)
    else
        local probe="linux-headers-$KABI-amd64"
        url=$(apt-get download --print-uris "$probe=$KVER" 2> /dev/null | sed -n "s/^'\([^']*\)'.*/\1/p" | head -1)
        url=${url%/*}/${1}_${KVER}_$2.deb
    fi
    [ -n "$url" ] || die "cannot find $1=$KVER with apt-get (run apt-get update; is $KVER still in Debian?)"
    echo "kmod-build: downloading $url" >&2
    if command -v curl > /dev/null; then
        curl -fsSL -o "$f.part" "$url" || die "download failed: $url"
    else
        wget -q -O "$f.part" "$url" || die "download failed: $url"
    fi
    mv "$f.part" "$f"
}

if [ "$KDIR" = debian ]; then
    common=linux-headers-$KABI-common
    [ "$FLAVOUR" = rt-amd64 ] && common=$common-rt
    fetch "linux-headers-$KABI-$FLAVOUR" "$DARCH"
    fetch "$common" all
    fetch "linux-kbuild-$KSERIES" amd64 # host tools (fixdep, modpost) run on this machine
    T=$CACHE/headers/$KVER/$FLAVOUR
    if [ ! -f "$T/.done" ]; then
        rm -rf "$T"
        mkdir -p "$T"
        for p in "$debs/linux-headers-${KABI}-${FLAVOUR}_${KVER}_$DARCH.deb" \
            "$debs/${common}_${KVER}_all.deb" "$debs/linux-kbuild-${KSERIES}_${KVER}_amd64.deb"; do
            dpkg-deb -x "$p" "$T"
        done
        # Debian's flavour Makefile includes the -common one by absolute path.
        sed -i "s#include /usr/src/#include $T/usr/src/#" "$T/usr/src/linux-headers-$KABI-$FLAVOUR/Makefile"
        touch "$T/.done"
    fi
    KDIR=$T/usr/src/linux-headers-$KABI-$FLAVOUR
elif [ -z "$KDIR" ]; then
    KDIR=/lib/modules/$(uname -r)/build
    [ -d "$KDIR" ] || die "no headers for the running kernel in $KDIR: apt-get install linux-headers-$(uname -r), or pass --kdir/--debian"
fi
[ -f "$KDIR/Makefile" ] || die "$KDIR is not a kernel headers tree (no Makefile)"

OUT=${OUT:-${CARGO_TARGET_DIR:-$REPO/target}/kmod/$ARCH_NAME}
mkdir -p "$OUT"
B=$(mktemp -d)
trap 'rm -rf "$B"' EXIT
cp "$REPO"/kmod/Makefile "$REPO"/kmod/Kbuild "$REPO"/kmod/rtlat_responder.[ch] "$B/"
args=(-C "$KDIR" M="$B" modules CONFIG_DEBUG_INFO_BTF_MODULES=)
[ -n "$KARCH" ] && args+=(ARCH="$KARCH" CROSS_COMPILE="$CROSS")
if ! make "${args[@]}" > "$B/build.log" 2>&1; then
    cat "$B/build.log" >&2
    die "the module did not build against $KDIR"
fi
if grep -q 'warning:' "$B/build.log"; then
    grep -A3 'warning:' "$B/build.log" >&2
    die "the module built with warnings against $KDIR"
fi
cp "$B/rtlat_responder.ko" "$OUT/"
echo "kmod-build: built for $ARCH_NAME against $KDIR (no warnings)" >&2
echo "$OUT/rtlat_responder.ko"
