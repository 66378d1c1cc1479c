#!/bin/bash
# The whole test suite, and what CI runs (.ci/run): set-up, Markdown links,
# formatting, lints, unit and integration tests, then the cross builds and the
# real-kernel GPIO test. Ends with a summary: tests passed, failed and skipped
# (with why), and the stages that did not run; the very last line is
# `N passed, N failed, N skipped`.
#
# Tests that need root (RT scheduling, mlock, signals, privilege drops, network
# namespaces) run when this is run as root and are reported as skipped
# otherwise (they fail under CI=true).
#
# Environment:
#   RTLAT_SKIP_CROSS=1  skip scripts/cross.sh (minutes) on a developer's machine
#   RTLAT_SKIP_E2E=1    skip scripts/gpio-e2e.sh (minutes) on a developer's machine
#   CI=true             never skip either; a missing package or root is an error
set -eu -o pipefail
cd "$(dirname "$0")/.."

ci=false
case "${CI:-}" in "" | false | 0) ;; *) ci=true ;; esac
work=$(mktemp -d)
touch "$work/skips-native" "$work/skips-cross" "$work/tests-native.out" "$work/tests-cross.out"
stage="set-up"
stages_done=""
stages_skipped=""
say() { echo "test.sh: $*"; }
done_stage() { stages_done="$stages_done${stages_done:+, }$stage"; }
skip_stage() { stages_skipped="$stages_skipped${stages_skipped:+, }$1"; }

# Sums the `test result: ok. N passed; M failed; K ignored; …` lines of cargo test output.
count_results() { # file -> "passed failed ignored"
    awk '/^test result:/ {
        for (i = 2; i <= NF; i++) {
            w = $i; sub(/[;,.]$/, "", w)
            if (w == "passed") p += $(i - 1)
            else if (w == "failed") f += $(i - 1)
            else if (w == "ignored") g += $(i - 1)
        }
    } END { print p + 0, f + 0, g + 0 }' "$1"
}

# Skip logs (tests/it/util.rs): one line per skip, `test<TAB>NAME<TAB>REASON`
# for a test that skipped itself, `check<TAB>NAME<TAB>REASON` for a check
# skipped inside a test that otherwise ran.
skipped_tests() { # log -> number of distinct tests that skipped themselves
    awk -F '\t' '$1 == "test" { print $2 }' "$1" | sort -u | wc -l | tr -d ' '
}
reasons() { # log kind -> "reason: n; reason: n"
    awk -F '\t' -v k="$2" '$1 == k { print $2 "\t" $3 }' "$1" | sort -u | cut -f 2 | sort | uniq -c |
        sort -rn | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "%s%s: %d", (NR > 1 ? "; " : ""), $0, n }'
}

summary() {
    rc=$?
    set +e
    total_p=0 total_f=0 total_s=0
    echo
    for kind in native cross; do
        [ -s "$work/tests-$kind.out" ] || continue
        read -r p f g < <(count_results "$work/tests-$kind.out")
        s=$(skipped_tests "$work/skips-$kind")
        p=$((p - s))
        [ "$p" -lt 0 ] && p=0
        what="tests"
        [ "$kind" = cross ] && what="tests in scripts/cross.sh (armv7 and powerpc under qemu-user)"
        # scripts/cross.sh runs a test that failed under qemu-user once more:
        # one that then passed is counted once, as passed, and named.
        again=$(grep -c 'passed on its second run' "$work/tests-$kind.out" || true)
        f=$((f - again))
        [ "$f" -lt 0 ] && f=0
        line="$what: $p passed, $f failed, $g ignored; $s skipped"
        [ "$again" -gt 0 ] && line="$line; $again of the passed failed once first and passed when run again"
        [ "$s" -gt 0 ] && line="$line ($(reasons "$work/skips-$kind" test))"
        say "$line"
        awk -F '\t' '$1 == "test" { print "  skipped " $2 ": " $3 }' "$work/skips-$kind" | sort -u
        checks=$(awk -F '\t' '$1 == "check"' "$work/skips-$kind" | sort -u | wc -l | tr -d ' ')
        [ "$checks" -gt 0 ] && say "  checks skipped inside tests that ran: $checks ($(reasons "$work/skips-$kind" check))"
        total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
    done
    [ -n "$stages_done" ] && say "stages passed: $stages_done"
    [ -n "$stages_skipped" ] && say "stages skipped: $stages_skipped"
    if [ "$rc" != 0 ]; then
        say "FAILED in stage $stage (exit $rc)"
    fi
    rm -rf "$work"
    echo "$total_p passed, $total_f failed, $total_s skipped"
    exit "$rc"
}
trap summary EXIT
trap 'exit 130' INT TERM

# --- set-up: packages (scripts/packages.txt), rustfmt, clippy ----------------------
if scripts/setup.sh; then
    done_stage
elif [ "$ci" = true ]; then
    exit 1
else
    say "set-up incomplete (see above): carrying on"
    skip_stage "part of set-up (not root)"
fi

# --- Markdown links; the house rules of src/ (clap at the edge, no module cycle, no
# --- file over 700 lines) ----------------------------------------------------------------
for check in links house; do
    stage="$check"
    if command -v python3 >/dev/null 2>&1; then
        python3 "scripts/check-$check.py"
        done_stage
    elif [ "$ci" = true ]; then
        say "python3 is missing" && exit 1
    else
        skip_stage "$check (no python3)"
    fi
done

# --- formatting and lints -------------------------------------------------------------
stage="fmt"
cargo fmt --check
done_stage
stage="clippy"
cargo clippy --all-targets --locked -- -D warnings
# The board build (Cargo.toml [features]: without host-tools) is linted too.
cargo clippy --all-targets --locked --no-default-features -- -D warnings
done_stage

# --- unit and integration tests ---------------------------------------------------------
stage="tests"
RTLAT_SKIP_LOG="$work/skips-native" cargo test --locked 2>&1 | tee "$work/tests-native.out"
done_stage

# --- the option lists in docs/ are what the binary prints (scripts/docs-help.py) ----------
stage="docs"
python3 scripts/docs-help.py --check "${CARGO_TARGET_DIR:-target}/debug/rtlat"
done_stage

# --- cross builds and the armv7/powerpc suites under qemu-user (scripts/cross.sh, minutes) ---
# RTLAT_SKIP_CROSS=1 skips them on a developer's machine; CI always runs them.
stage="cross"
if [ "${RTLAT_SKIP_CROSS:-0}" != 1 ] || [ "$ci" = true ]; then
    RTLAT_SKIP_LOG="$work/skips-cross" scripts/cross.sh 2>&1 | tee "$work/tests-cross.out"
    done_stage
else
    say "skipped scripts/cross.sh (RTLAT_SKIP_CROSS=1)"
    skip_stage "cross (RTLAT_SKIP_CROSS=1)"
fi

# --- the GPIO benchmark against a real kernel (scripts/gpio-e2e.sh) --------------------
# Debian's generic and PREEMPT_RT kernels booted in QEMU with gpio-sim (downloads
# cached in RTLAT_E2E_CACHE, several minutes cold). RTLAT_SKIP_E2E=1 skips it on a
# developer's machine; CI always runs it.
stage="e2e"
if [ "${RTLAT_SKIP_E2E:-0}" != 1 ] || [ "$ci" = true ]; then
    scripts/gpio-e2e.sh
    done_stage
else
    say "skipped scripts/gpio-e2e.sh (RTLAT_SKIP_E2E=1)"
    skip_stage "e2e (RTLAT_SKIP_E2E=1)"
fi
stage="summary"
