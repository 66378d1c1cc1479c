#!/bin/sh
# The whole test suite: formatting, lints, unit and integration tests.
# Tests that need root (RT scheduling, mlock, signals, privilege drops) run when
# this is run as root and are reported as skipped otherwise (they fail under CI=true).
set -eu
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
