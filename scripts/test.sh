#!/bin/sh
# The whole test suite: formatting, lints, unit and integration tests.
# Tests that need root (RT scheduling, mlock, signals, privilege drops) run when
# this is run as root and are reported as skipped otherwise (they fail under CI=true).
set -eu
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
# Cross builds and the armv7/powerpc suites under qemu-user (scripts/cross.sh, minutes):
# RTLAT_SKIP_CROSS=1 skips them on a developer's machine; CI always runs them.
if [ "${RTLAT_SKIP_CROSS:-0}" != 1 ] || [ "${CI:-false}" = true ]; then scripts/cross.sh; else echo "skipped scripts/cross.sh (RTLAT_SKIP_CROSS=1)"; fi
# The GPIO benchmark against a real kernel: Debian's generic and PREEMPT_RT kernels
# booted in QEMU with gpio-sim (scripts/gpio-e2e.sh; downloads cached in
# RTLAT_E2E_CACHE, several minutes cold). RTLAT_SKIP_E2E=1 skips it on a
# developer's machine; CI always runs it.
if [ "${RTLAT_SKIP_E2E:-0}" != 1 ] || [ "${CI:-false}" = true ]; then scripts/gpio-e2e.sh; else echo "skipped scripts/gpio-e2e.sh (RTLAT_SKIP_E2E=1)"; fi
