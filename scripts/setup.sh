#!/bin/bash
# Set-up for the test suite on Debian 12 (run by scripts/test.sh and .ci/run):
#  - the packages of scripts/packages.txt (the one list) that are missing:
#    installed as root (apt-get update first, non-interactive); otherwise the
#    exact command to run is printed and the tests carry on without them;
#  - rustfmt and clippy, through rustup, if cargo lacks them;
#  - cargo-nextest (the test runner) and cargo-deb (scripts/deb.sh), from
#    crates.io, if missing.
# Exit status: 0 when everything is there (or cannot be installed without root
# outside CI), 1 when an installation failed, or something is missing under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*" >&2; }
in_ci() { [ "${CI:-false}" != false ] && [ "${CI:-false}" != 0 ] && [ -n "${CI:-}" ]; }
status=0

# --- Debian packages ------------------------------------------------------------
packages=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' scripts/packages.txt | grep -v '^$')
if ! command -v dpkg-query >/dev/null 2>&1; then
    say "not a Debian system (no dpkg-query): make sure the equivalents of scripts/packages.txt are installed"
else
    missing=""
    for p in $packages; do
        case "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)" in
        ii*) ;;
        *) missing="$missing $p" ;;
        esac
    done
    if [ -n "$missing" ]; then
        if [ "$(id -u)" = 0 ]; then
            say "installing:$missing"
            export DEBIAN_FRONTEND=noninteractive
            # A machine may come with a newer qemu-utils than Debian 12's
            # (a backport), which Breaks the qemu-system-common that
            # qemu-system-x86 needs: take Debian 12's own with it, the QEMU
            # the e2e boots are checked against.
            pin=""
            case " $missing " in *" qemu-system-x86 "*)
                case "$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)" in
                *bpo*) pin="qemu-utils/bookworm" ;;
                esac
                ;;
            esac
            if apt-get update -qq && apt-get install -y -qq --no-install-recommends --allow-downgrades \
                $missing $pin </dev/null >/dev/null; then
                say "installed$missing"
                # lava-dispatcher enables its worker service, which would keep
                # calling a LAVA server that does not exist here: lava-run
                # alone runs the jobs of scripts/lava-e2e.sh.
                if [ -d /run/systemd/system ]; then
                    systemctl disable --now lava-worker.service >/dev/null 2>&1 || true
                fi
            else
                say "FAILED: apt-get install$missing"
                status=1
            fi
        else
            say "missing packages:$missing"
            say "to install them, run: sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing"
            say "carrying on: the tests that need them are skipped (or fail under CI=true)"
            in_ci && status=1
        fi
    fi
fi

# --- Rust components ----------------------------------------------------------------
need=""
cargo fmt --version >/dev/null 2>&1 || need="$need rustfmt"
cargo clippy --version >/dev/null 2>&1 || need="$need clippy"
if [ -n "$need" ]; then
    if command -v rustup >/dev/null 2>&1 && rustup component add $need >/dev/null 2>&1; then
        say "added rust components:$need"
    else
        say "missing rust components:$need (run: rustup component add$need)"
        status=1
    fi
fi

# --- cargo tools ----------------------------------------------------------------------
# cargo-nextest runs the tests (.config/nextest.toml) and cargo-deb makes the
# packages. Neither has a prebuilt binary in the registries this machine
# reaches, so a missing one is built from crates.io once, into cargo's bin
# directory, where later runs find it.
tool() { # cargo subcommand, crate, version ("" for the newest)
    cargo "$1" --version >/dev/null 2>&1 && return 0
    say "installing $2${3:+ $3} from crates.io (once)"
    if cargo install "$2" --locked ${3:+--version "$3"} >/dev/null 2>&1; then
        say "installed $2"
    else
        say "FAILED: cargo install $2 --locked${3:+ --version $3}"
        status=1
    fi
}
tool nextest cargo-nextest ""
tool deb cargo-deb "$(sed -n 's/^CARGO_DEB_VERSION=//p' scripts/deb.sh)"

exit $status
