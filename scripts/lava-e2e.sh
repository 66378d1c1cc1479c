#!/bin/bash
# A real LAVA job (docs/fleet.md): Debian's dispatcher (lava-run) deploys a
# kernel and a busybox ramdisk, boots them in QEMU (TCG) and runs rtlat's test
# definition, contrib/lava/rtlat.yaml, with the static rtlat put in by the
# ramdisk's overlay; then the job's results are checked
# (tests/fixtures/lava/check-job.py).
#
# Two jobs, both contrib/lava/qemu-job.yaml on the device of
# contrib/lava/qemu-device.jinja2 (rendered with lava-server's own device-type
# templates, from Debian's lava-server package, unpacked only):
#   pass  MAX_LATENCY as in the job (5s): every test case passes;
#   fail  MAX_LATENCY=1us, which no guest meets: the maxima fail, the other
#         cases pass, and the job still ends Complete.
# Each job must end Complete with the deploy, boot and test actions in the
# dispatcher's log and every test case of `rtlat report --format lava` with
# its measurement.
#
# Skipped, with the reason printed (and logged for scripts/test.sh), when not
# run as root or where lava-run, qemu-system-x86_64 or a static busybox is
# missing; under CI=true that is an error.
#
# Environment:
#   RTLAT_LAVA_BIN   a static x86_64 rtlat (else RTLAT_E2E_BIN, else built:
#                    cargo build --release --target x86_64-unknown-linux-musl)
#   RTLAT_E2E_CACHE  downloads kept between runs, shared with gpio-e2e.sh
#                    [~/.cache/rtlat-e2e]
#   RTLAT_LAVA_OUT   images, jobs, logs [${CARGO_TARGET_DIR:-target}/lava-e2e]
# Needs: lava-dispatcher, qemu-system-x86, busybox-static, cpio, apt-get (for
# `apt-get download` of a Debian kernel and lava-server), python3-jinja2 and
# python3-yaml (lava-dispatcher's dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=${RTLAT_E2E_CACHE:-$HOME/.cache/rtlat-e2e}
OUT=${RTLAT_LAVA_OUT:-${CARGO_TARGET_DIR:-$REPO/target}/lava-e2e}
JOB_TIMEOUT=600
T0=$(date +%s)

log() { echo "lava-e2e: [$(($(date +%s) - T0))s] $*" >&2; }
die() {
    echo "lava-e2e: FAIL: $*" >&2
    exit 1
}
skip() {
    case "${CI:-}" in "" | false | 0) ;; *) die "$1 (CI=true skips nothing)" ;; esac
    echo "lava-e2e: SKIPPED: $1" >&2
    if [ -n "${RTLAT_SKIP_LOG:-}" ]; then
        printf 'check\tlava-e2e\t%s\n' "$1" >>"$RTLAT_SKIP_LOG" || true
    fi
    exit 0
}

[ "$(id -u)" = 0 ] || skip "lava-run needs root (it works in /var/lib/lava/dispatcher): run as root"
command -v lava-run >/dev/null || skip "lava-run is missing (apt-get install lava-dispatcher)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
case "$(ldd /bin/busybox 2>&1 || true)" in
*"not a dynamic"* | *"statically linked"*) ;;
*) skip "a static /bin/busybox is missing (apt-get install busybox-static)" ;;
esac
for tool in apt-get apt-cache dpkg-deb cpio gzip tar git python3; do
    command -v $tool >/dev/null || die "$tool is missing"
done
python3 -c 'import jinja2, yaml' 2>/dev/null || die "python3-jinja2 and python3-yaml are missing (lava-dispatcher depends on both)"

mkdir -p "$CACHE/debs" "$CACHE/lava" "$OUT"
APT_OPTS=()
[ "$(id -u)" = 0 ] && APT_OPTS=(-o APT::Sandbox::User=root)
# One package from the cache, downloaded once: `cached PACKAGE` prints its path.
cached() {
    local f
    f=$(compgen -G "$CACHE/debs/${1}_*.deb" | sort -V | tail -1 || true)
    if [ -z "$f" ]; then
        log "downloading $1"
        (cd "$CACHE/debs" && apt-get download -q "${APT_OPTS[@]}" "$1" >/dev/null) || return 1
        f=$(compgen -G "$CACHE/debs/${1}_*.deb" | sort -V | tail -1)
    fi
    echo "$f"
}

# --- the device: lava-server's qemu device type renders the dictionary ---------
TEMPLATES=$CACHE/lava/device-types
if [ ! -f "$TEMPLATES/qemu.jinja2" ]; then
    server=$(cached lava-server) || die "cannot download lava-server (run apt-get update)"
    rm -rf "$CACHE/lava/x" && mkdir -p "$CACHE/lava/x"
    dpkg-deb --fsys-tarfile "$server" | tar -x -C "$CACHE/lava/x" './usr/share/lava-server/device-types/'
    rm -rf "$TEMPLATES" && mv "$CACHE/lava/x/usr/share/lava-server/device-types" "$TEMPLATES"
    rm -rf "$CACHE/lava/x"
fi
python3 - "$REPO/contrib/lava" "$TEMPLATES" "$OUT/device.yaml" <<'PY'
import sys, jinja2, yaml
contrib, templates, out = sys.argv[1:4]
# As lava-server renders device dictionaries (lava_scheduler_app's jinja2 set-up).
env = jinja2.Environment(loader=jinja2.FileSystemLoader([contrib, templates]),
                         trim_blocks=True, autoescape=False)
text = env.get_template("qemu-device.jinja2").render()
yaml.safe_load(text)
open(out, "w").write(text)
PY

# --- the images: a Debian kernel, the ramdisk, rtlat's overlay, the definitions ---
IMG=$OUT/images
rm -rf "$IMG" && mkdir -p "$IMG"
# The kernel: gpio-e2e.sh's when it has unpacked one, else Debian's current one.
kernel=$(compgen -G "$CACHE/build/*/amd64/vmlinuz" | sort -V | tail -1 || true)
if [ -z "$kernel" ]; then
    kernel=$CACHE/lava/vmlinuz
    if [ ! -f "$kernel" ]; then
        pkg=$(apt-cache depends linux-image-amd64 | grep -o 'linux-image-[0-9.]*-[0-9]*-amd64' | head -1)
        [ -n "$pkg" ] || die "cannot find Debian's amd64 kernel package (run apt-get update)"
        deb=$(cached "$pkg") || die "cannot download $pkg"
        rm -rf "$CACHE/lava/k" && mkdir -p "$CACHE/lava/k"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$CACHE/lava/k" --wildcards './boot/vmlinuz-*'
        cp "$CACHE"/lava/k/boot/vmlinuz-* "$kernel" && rm -rf "$CACHE/lava/k"
    fi
fi
cp "$kernel" "$IMG/vmlinuz"

R=$(mktemp -d)
trap 'rm -rf "$R"' EXIT
chmod 755 "$R"
mkdir -p "$R"/{bin,etc,proc,sys,dev,tmp,root,usr/bin}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
install -m 755 "$REPO/tests/fixtures/lava/guest-init.sh" "$R/init"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$IMG/rootfs.cpio.gz"

# rtlat: the static build, as /usr/bin/rtlat in a tar (tar keeps the mode).
BIN=${RTLAT_LAVA_BIN:-${RTLAT_E2E_BIN:-}}
if [ -z "$BIN" ]; then
    log "building the static rtlat (x86_64 musl, release)"
    cargo build --release --locked --target x86_64-unknown-linux-musl --bin rtlat >"$OUT/cargo.log" 2>&1 ||
        { cat "$OUT/cargo.log" >&2; die "cannot build the static rtlat"; }
    BIN=${CARGO_TARGET_DIR:-$REPO/target}/x86_64-unknown-linux-musl/release/rtlat
fi
case "$(ldd "$BIN" 2>&1 || true)" in
*"not a dynamic"* | *"statically linked"*) ;;
*) die "$BIN is not a statically linked executable" ;;
esac
rm -rf "$R" && mkdir -p "$R/usr/bin"
install -m 755 "$BIN" "$R/usr/bin/rtlat"
tar -C "$R" --owner=0 --group=0 -czf "$IMG/rtlat-overlay.tar.gz" usr

# The test definition from a git repository, as labs take it: this tree's
# contrib/lava/rtlat.yaml, committed as it is now.
git init -q "$IMG/rtlat.git"
mkdir -p "$IMG/rtlat.git/contrib/lava"
cp "$REPO/contrib/lava/rtlat.yaml" "$IMG/rtlat.git/contrib/lava/"
git -C "$IMG/rtlat.git" add contrib
git -C "$IMG/rtlat.git" -c user.name=lava-e2e -c user.email=lava-e2e@localhost commit -q -m "rtlat test definition"

# --- the jobs ------------------------------------------------------------------
JOB=$REPO/contrib/lava/qemu-job.yaml
grep -q 'file:///srv/lava/rtlat/' "$JOB" || die "$JOB has no file:///srv/lava/rtlat/ to substitute"
budget=$(sed -n 's/^ *MAX_LATENCY: *//p' "$JOB")
[ -n "$budget" ] || die "$JOB sets no MAX_LATENCY"
status=0
run_job() { # name, max latency, expect (pass|fail)
    local name=$1 dir=$OUT/$1 rc=0 t0
    rm -rf "$dir" && mkdir -p "$dir"
    sed -e "s|file:///srv/lava/rtlat/|file://$IMG/|" -e "s|^\( *MAX_LATENCY:\).*|\1 $2|" "$JOB" >"$dir/job.yaml"
    log "$name: lava-run (MAX_LATENCY $2)"
    t0=$(date +%s)
    # A job id of its own: the dispatcher works in /var/lib/lava/dispatcher/tmp/ID.
    # The job's log (one YAML mapping a line) goes to stderr.
    timeout $JOB_TIMEOUT lava-run --job-id "rtlat-e2e-$$-$name" --output-dir "$dir/output" \
        --device "$OUT/device.yaml" "$dir/job.yaml" >"$dir/lava-run.out" 2>"$dir/job.log" || rc=$?
    log "$name: lava-run ended in $(($(date +%s) - t0))s (exit $rc); log: $dir/job.log"
    if [ $rc != 0 ] || ! python3 "$REPO/tests/fixtures/lava/check-job.py" "$dir/job.log" \
        "$dir/output/result.yaml" "$2" "$3"; then
        tail -n 40 "$dir/job.log" "$dir/lava-run.out" >&2 || true
        log "$name: FAILED (lava-run exit $rc): see $dir/job.log"
        status=1
    fi
}
run_job pass "$budget" pass
run_job fail 1us fail
[ $status = 0 ] || die "see the lines above"
log "both jobs Complete, every test case as --max-latency decides"
