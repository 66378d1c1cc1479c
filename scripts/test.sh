#!/bin/bash
# The test suite, in two tiers.
#
#   scripts/test.sh --fast   the edit loop: the harness self-check, the house
#                            checks, fmt, one clippy, and the unit and
#                            integration tests that need neither root nor QEMU
#                            (RTLAT_TIER=fast: the tests that do skip
#                            themselves, naming the full tier)
#   scripts/test.sh          everything; what CI runs (.ci/run), as root
#
# The harness self-check (stage `harness` of both tiers, a few seconds;
# alone: scripts/test.sh --self-check) runs this script's full tier with
# --stand-ins: every command a stage runs is replaced by a stand-in that
# prints a nextest summary line, and everything around it (stages, lanes,
# pipes, tee, the count, the summary) is the real thing. A failure forced in
# each lane must fail the tier and be counted in its last line; with none
# forced the tier must pass. A real test fails on purpose too:
# harness::fails_when_asked (tests/it/harness.rs) fails in the lane that
# RTLAT_FORCE_FAIL names (native, emulated).
#
# The full tier: set-up (scripts/setup.sh), the harness self-check, the house
# checks, fmt, clippy of both feature sets, then three lanes side by side:
#   native     every native test (cargo-nextest, profile `ci`), the option
#              lists of docs/ against the binary, then the tests that need the
#              artifacts lane's files (the Debian packages, a PowerPC result)
#   artifacts  scripts/cross.sh: each release binary built once per target
#              and checked, the packages made from them, then the armv7 and
#              PowerPC tests under qemu-user
#   e2e        scripts/gpio-e2e.sh: real kernels in QEMU (downloads and module
#              builds first, then the boots, with the artifacts lane's static
#              binary; all but the responder's), then scripts/lava-e2e.sh: a
#              real LAVA job on that binary
# and, once every lane has ended (also when one failed), the quiet stage
# `attribution`: the integration tests that assert which cause leads the
# worst cases (modules explain, explain_wakes and noise_explain of binary
# it), that a known source's share is found among the noise, that a
# watch's tail matches cyclictest's own and its wake-ups perf's, that a
# watch names the hog of a FIFO application's worst wake-ups or serves a
# maximum's culprit as an exemplar, alone on the
# machine, then the host-stall boot of scripts/gpio-e2e.sh (part `stall`) and
# its responder boots (part `kmod`, whose kspin checks name the section that
# held the CPU and its kernel stack). Beside the lanes they would lose to
# other work on its CPUs (the compiler's preempt-off sections, QEMU guests,
# a host that delays the emulated CPUs' timer interrupts), so the lanes leave
# them out. A host stall can still land in one of the few cases they count:
# a test there that fails is run again (twice at most), a boot part once,
# and one that then passes is named as flaky at the end.
# Ends with a table of stage times, the tests passed, failed and skipped
# (each skip with its reason), a digest of what failed (each panic's first
# line, each check that printed FAIL); the very last line is
# `N passed, N failed, N skipped`.
#
# Tests that need root (real-time scheduling, mlock, signals, privilege drops,
# network namespaces) run when this runs as root; otherwise they skip, naming
# why, and under CI=true they fail.
#
# Environment:
#   RTLAT_FORCE_FAIL    lanes whose tests fail on purpose (above)
#   RTLAT_SKIP_CROSS=1  leave out the artifacts lane on a developer's machine
#   RTLAT_SKIP_E2E=1    leave out the e2e lane on a developer's machine
#   CI=true             never leave anything out; a missing package or root is an error
set -eu -o pipefail
cd "$(dirname "$0")/.."

fast=false
stand_ins=false
case "${1:-}" in
"") ;;
--fast) fast=true ;;
--self-check) ;;
--stand-ins) stand_ins=true ;;
*)
    echo "usage: scripts/test.sh [--fast | --self-check]" >&2
    exit 2
    ;;
esac
ci=false
case "${CI:-}" in "" | false | 0) ;; *) ci=true ;; esac
[ $ci = true ] && [ $fast = true ] && {
    echo "test.sh: CI runs the full tier: scripts/test.sh without --fast" >&2
    exit 2
}

say() { echo "test.sh: $*"; }

# --- the harness self-check ---------------------------------------------------
# The full tier with stand-ins (--stand-ins), run once with nothing forced
# to fail and once per lane with RTLAT_FORCE_FAIL naming it; in parallel,
# each in its own work directory, a few seconds in all. A forced failure must
# reach its stage's outcome and fail the tier, whose last line counts a failed
# test; nothing forced, the tier passes with every stand-in's tests counted.
# `emulated:swallowed` prints a failed test and exits 0, as a pipe that loses
# the status would: the summary's count alone must fail the tier. A failed
# lane must not keep the attribution stage from running and failing.
self_check() {
    local dir i rc last force want stage out bad=0
    local -a cases runs=()
    # RTLAT_FORCE_FAIL/the stages that must report FAILED (- for none).
    cases=(/- native/native-tests emulated/emulated-tests e2e/e2e-boots
        attribution/attribution "native,attribution/native-tests,attribution"
        host-stall/host-stall,host-stall-again emulated:swallowed/-)
    dir=$(mktemp -d)
    for i in "${!cases[@]}"; do
        IFS=/ read -r force want <<<"${cases[$i]}"
        env -u RTLAT_SKIP_CROSS -u RTLAT_SKIP_E2E RTLAT_FORCE_FAIL="$force" \
            scripts/test.sh --stand-ins >"$dir/$i.log" 2>&1 </dev/null &
        runs+=($!)
    done
    for i in "${!cases[@]}"; do
        IFS=/ read -r force want <<<"${cases[$i]}"
        rc=0
        wait "${runs[$i]}" || rc=$?
        last=$(tail -n 1 "$dir/$i.log")
        out="exit $rc, last line \"$last\""
        if [ -z "$force" ]; then
            # Four counted runs of two tests each: native, artifacts,
            # emulated, attribution.
            [ $rc = 0 ] && [ "$last" = "8 passed, 0 failed, 0 skipped" ] ||
                out="$out; wanted exit 0 and \"8 passed, 0 failed, 0 skipped\""
        else
            [ $rc != 0 ] && [[ "$last" =~ ^[0-9]+\ passed,\ [1-9][0-9]*\ failed,\ [0-9]+\ skipped$ ]] ||
                out="$out; wanted a non-zero exit and a last line \"N passed, M failed, N skipped\" with M >= 1"
            for stage in ${want//,/ }; do
                [ "$stage" = - ] || grep -q "^test.sh: -- $stage FAILED" "$dir/$i.log" ||
                    out="$out; wanted stage $stage to report FAILED"
            done
        fi
        case "$out" in
        *wanted*)
            bad=1
            say "self-check: RTLAT_FORCE_FAIL=$force: $out. Its output:"
            sed 's/^/    /' "$dir/$i.log"
            ;;
        *) say "self-check: RTLAT_FORCE_FAIL=$force: $out: right" ;;
        esac
    done
    rm -rf "$dir"
    return $bad
}
if [ "${1:-}" = --self-check ]; then
    self_check
    exit
fi

work=$(mktemp -d)
mkdir -p "$work/ready"
touch "$work/stages" "$work/skips"
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
cross_dir=$target_dir/cross
export RTLAT_SKIP_LOG="$work/skips"
T0=$(date +%s)

# Every command a stage runs goes through here: `run LABEL COMMAND...`. Under
# --stand-ins (the self-check) a stand-in takes the command's place, so that
# everything around it (stages, lanes, pipes, tee, the count) is the real
# thing. The stand-in prints a nextest summary line of two tests; when
# RTLAT_FORCE_FAIL (words separated by commas or spaces) names its LABEL,
# one of them fails and it exits 1, and for LABEL:swallowed it exits 0.
run() {
    local label=$1 force word
    shift
    [ $stand_ins = true ] || {
        "$@"
        return
    }
    echo "stand-in for: $*"
    force=${RTLAT_FORCE_FAIL:-}
    for word in ${force//,/ }; do
        case "$word" in
        "$label" | "$label:swallowed")
            echo "Summary [   0.1s] 2 tests run: 1 passed, 1 failed, 0 skipped"
            [ "$word" = "$label" ] && return 1
            return 0
            ;;
        esac
    done
    # What cross.sh build tells the other lanes.
    [ "$label" != cross-build ] || [ -z "${CROSS_READY:-}" ] ||
        touch "$CROSS_READY/static" "$CROSS_READY/foreign" "$CROSS_READY/debs"
    echo "Summary [   0.1s] 2 tests run: 2 passed, 0 skipped"
}

# Runs one stage: `stage NAME COMMAND...`; its time and outcome go to the
# table at the end. Lanes run stages side by side, each in its own shell.
stage() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s)
    say "-- $name (at $((t0 - T0)) s)"
    "$@" || rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$((t0 - T0))" "$(($(date +%s) - t0))" "$rc" >>"$work/stages"
    [ $rc = 0 ] || say "-- $name FAILED (exit $rc)"
    return $rc
}
skipped_stage() { # name, why
    printf '%s\t-\t-\t%s\n' "$1" "$2" >>"$work/stages"
}

# nextest's summary line: `Summary [ 1.2s] 12 tests run: 11 passed (1 flaky), 1 failed, 3 skipped`
# (skipped here: left out by the profile's filter). Prints "run passed flaky failed".
count_nextest() { # log
    awk '/Summary \[/ && / tests? run:/ {
        sub(/.*tests? run: /, "")
        n = split($0, w, /[ ,()]+/)
        for (i = 2; i <= n; i++) {
            if (w[i] == "passed") p += w[i - 1]
            else if (w[i] == "flaky") k += w[i - 1]
            else if (w[i] == "failed") f += w[i - 1]
            else if (w[i] == "timed") f += w[i - 1]
        }
    } END { print p + 0, k + 0, f + 0 }' "$1"
}

# What failed, in a few lines above the count, so that the end of the log
# says what went wrong: each failed test's panic message (its first line),
# each flaky test, and each check of a lane or quiet stage that printed FAIL.
digest() {
    local log
    for log in "$work"/tests-*.log; do
        [ -f "$log" ] || continue
        awk '/^ *thread .* panicked at / {
                n = $0; sub(/^ *thread \047/, "", n); sub(/\047.*/, "", n)
                if ((getline m) > 0) { sub(/^ */, "", m); print "  " n ": " substr(m, 1, 300) }
            }
            /^ *FLAKY / { sub(/^ */, ""); print "  flaky: " $0 }' "$log"
    done | sort -u
    for log in "$work"/lane-*.log "$work"/run-*.log; do
        [ -f "$log" ] || continue
        grep -E ': FAIL(ED)?[: ]' "$log" | grep -v 'FAIL: see the lines above' |
            sed "s|^|  $(basename "$log" .log): |" | head -n 20
    done
}

summary() {
    local rc=$? p=0 k=0 f=0 s log pp kk ff out
    set +e
    trap - EXIT
    echo
    say "stage times (s):"
    printf '  %-22s %8s %8s  %s\n' stage "start" took outcome
    while IFS=$'\t' read -r name start took st; do
        case "$st" in
        0) st=passed ;;
        [0-9]*) st="FAILED (exit $st)" ;;
        esac
        printf '  %-22s %8s %8s  %s\n' "$name" "$start" "$took" "$st"
    done <"$work/stages"
    printf '  %-22s %8s %8s\n' total 0 "$(($(date +%s) - T0))"
    for log in "$work"/tests-*.log; do
        [ -f "$log" ] || continue
        read -r pp kk ff < <(count_nextest "$log")
        p=$((p + pp)) k=$((k + kk)) f=$((f + ff))
    done
    # A test that skipped itself ran and passed for nextest: counted here
    # as skipped, with its reason (tests/it/util.rs writes the log).
    s=$(awk -F "\t" '$1 == "test" { print $2 "\t" $3 }' "$work/skips" | sort -u | wc -l | tr -d " ")
    p=$((p - s))
    [ $p -lt 0 ] && p=0
    say "tests: $p passed, $f failed, $s skipped$([ $k -gt 0 ] && echo "; $k of the passed were flaky (failed, then passed when run again)")"
    awk -F '\t' '$1 == "test" { print "  skipped " $2 ": " $3 }' "$work/skips" | sort -u
    awk -F '\t' '$1 == "check" { print "  check skipped in " $2 ": " $3 }' "$work/skips" | sort -u
    out=$(digest)
    [ -z "$out" ] || {
        say "what failed (in a stage that then passed when run again: flaky):"
        echo "$out"
    }
    # A failed test fails the tier even if its stage's exit status was lost
    # on the way; a failed stage counts as a failed test even if its log
    # counted none (a build that failed, a lane that stopped before its tests).
    [ $f -gt 0 ] && [ $rc = 0 ] && rc=1
    if [ $rc != 0 ]; then
        say "FAILED: see the stages above"
        [ $f = 0 ] && f=1
    fi
    rm -rf "$work"
    echo "$p passed, $f failed, $s skipped"
    exit $rc
}
trap summary EXIT
trap 'exit 130' INT TERM

# A quiet stage of scripts/gpio-e2e.sh's checks that assert which cause
# leads, run once more when it fails, for the reason the attribution profile
# retries its tests: `again NAME COMMAND...`. Only the kernel flavours that
# printed FAIL boot again, when the failure names any. The table lists both
# runs; the digest at the end names what failed in the first.
again() {
    local name=$1 only
    shift
    stage "$name" run "$name" "$@" 2>&1 | tee "$work/run-$name.log" && return 0
    only=$(sed -n 's/^gpio-e2e: \([a-z0-9-]*\): FAIL.*/\1/p' "$work/run-$name.log" |
        grep -xF -f <(tr ' ' '\n' <<<"${RTLAT_E2E_FLAVOURS:-amd64 rt-amd64}") | sort -u | tr '\n' ' ' || true)
    say "-- $name: run once more${only:+ (${only% })}: a host stall can land in any one run; a broken check fails both"
    RTLAT_E2E_FLAVOURS=${only:-${RTLAT_E2E_FLAVOURS:-amd64 rt-amd64}} \
        stage "$name-again" run "$name" "$@" 2>&1 | tee "$work/run-$name-again.log"
}

# One nextest run, its output kept for the count: `tests NAME ARGS...`.
tests() {
    local name=$1
    shift
    run "$name" cargo nextest run --locked "$@" 2>&1 | tee "$work/tests-$name.log"
}

checks() {
    stage harness run harness scripts/test.sh --self-check
    stage links run links python3 scripts/check-links.py
    stage house run house python3 scripts/check-house.py
    stage fmt run fmt cargo fmt --check
}

if [ $fast = true ]; then
    checks
    stage clippy run clippy cargo clippy --all-targets --locked -- -D warnings
    RTLAT_TIER=fast stage tests tests fast --profile fast
    exit 0
fi

# --- the full tier ----------------------------------------------------------------
if [ $stand_ins = true ]; then
    say "stand-ins in place of every command: the harness self-check (scripts/test.sh --self-check)"
fi
if ! stage set-up run set-up scripts/setup.sh; then
    [ $ci = true ] && exit 1
    say "set-up incomplete (see above): carrying on"
fi
checks
# The board build (Cargo.toml [features]: without host-tools) is linted too,
# and the full build with the replay bench (the `replay` feature).
stage clippy run clippy sh -c 'cargo clippy --all-targets --locked -- -D warnings &&
    cargo clippy --all-targets --locked --no-default-features -- -D warnings &&
    cargo clippy --benches --locked --features replay -- -D warnings'
# The board build's own unit tests: what it reads and skips of a result.
stage board-unit run board-unit cargo test --lib --locked --no-default-features

# The lanes. Each writes its log to a file, printed whole when it ends, and
# marks in $work/ready what the others wait for.
wait_for() { # what, seconds: true once the artifacts lane made it
    local i
    for ((i = 0; i < $2; i++)); do
        [ -e "$work/ready/$1" ] && return 0
        [ -e "$work/ready/failed" ] && return 1
        sleep 1
    done
    return 1
}
# The attribution tests, left to the quiet stage after the lanes.
attribution='binary(it) & test(/^(explain|explain_wakes|noise_explain)::|^noise::a_known_noise_source_is_found|^watch::watch_of_cyclictest_agrees|^watch::watch_finds_the_period_overruns_and_culprit|^watch::watch_wake_ups_agree_with_perf|^metrics::a_watch_serves_the_culprit/)'
lane_native() {
    stage native-tests tests native --profile ci -E "not test(/^(deb|cross)::/) & not ($attribution)"
    stage docs-help run docs-help python3 scripts/docs-help.py --check "$target_dir/debug/rtlat"
    if [ "$cross" = true ]; then
        wait_for debs 3600 || {
            say "the artifacts lane made no packages: the deb and cross tests cannot run"
            return 1
        }
        RTLAT_DEBS="$cross_dir/cross-out/debs" RTLAT_FOREIGN_RESULT="$cross_dir/cross-out/ppc.json" \
            RTLAT_FOREIGN_MACHINE=ppc stage artifact-tests tests artifacts --profile ci -E 'test(/^(deb|cross)::/)'
    fi
}
lane_artifacts() {
    local rc=0
    CARGO_TARGET_DIR=$cross_dir CROSS_READY=$work/ready stage cross-build run cross-build scripts/cross.sh build || rc=$?
    [ $rc = 0 ] || {
        touch "$work/ready/failed"
        return $rc
    }
    CARGO_TARGET_DIR=$cross_dir RTLAT_SKIP_LOG="$work/skips" stage emulated-tests emulated_tests
}
# In this shell, not `sh -c`: pipefail (dash has none) gives the pipeline
# cross.sh's exit status, not tee's.
emulated_tests() {
    run emulated scripts/cross.sh emulated 2>&1 | tee "$work/tests-emulated.log"
}
lane_e2e() {
    stage e2e-prepare run e2e-prepare scripts/gpio-e2e.sh --prepare
    wait_for static 3600 || {
        say "the artifacts lane built no static binary: no e2e boots"
        return 1
    }
    RTLAT_E2E_PARTS="irq timerlat small" RTLAT_E2E_BIN="$cross_dir/x86_64-unknown-linux-musl/release/rtlat" \
        stage e2e-boots run e2e scripts/gpio-e2e.sh
    RTLAT_LAVA_BIN="$cross_dir/x86_64-unknown-linux-musl/release/rtlat" stage lava-e2e run lava-e2e scripts/lava-e2e.sh
}

cross=true
e2e=true
if [ $ci = false ] && [ "${RTLAT_SKIP_CROSS:-0}" = 1 ]; then
    cross=false
    skipped_stage artifacts "left out (RTLAT_SKIP_CROSS=1)"
fi
if [ $ci = false ] && [ "${RTLAT_SKIP_E2E:-0}" = 1 ]; then
    e2e=false
    skipped_stage e2e "left out (RTLAT_SKIP_E2E=1)"
fi
[ $cross = true ] || [ $e2e = false ] || {
    say "the e2e lane boots the artifacts lane's static binary: RTLAT_SKIP_CROSS=1 needs RTLAT_SKIP_E2E=1"
    exit 2
}

pids=""
names=""
start_lane() { # name
    (set -e; "lane_$1") >"$work/lane-$1.log" 2>&1 &
    pids="$pids $!"
    names="$names $1"
    say "lane $1 started (log printed when it ends)"
}
start_lane native
[ $cross = true ] && start_lane artifacts
[ $e2e = true ] && start_lane e2e

# Print each lane's log as it ends, in the order they end.
failed=""
set -- $pids
lanes=($names)
left=$#
declare -A done_lane=()
while [ $left -gt 0 ]; do
    for i in "${!lanes[@]}"; do
        [ -n "${done_lane[$i]:-}" ] && continue
        pid=$(echo $pids | cut -d' ' -f$((i + 1)))
        kill -0 "$pid" 2>/dev/null && continue
        rc=0
        wait "$pid" || rc=$?
        done_lane[$i]=1
        left=$((left - 1))
        echo
        say "==== lane ${lanes[$i]} ($([ $rc = 0 ] && echo passed || echo "FAILED, exit $rc")) ===="
        cat "$work/lane-${lanes[$i]}.log"
        [ $rc = 0 ] || failed="$failed ${lanes[$i]}"
    done
    [ $left -gt 0 ] && sleep 2
done

# The quiet stage: nothing else runs now. After a failed lane too, so that
# one failure does not hide another.
rc=0
# Its tests are run up to three times each (.config/nextest.toml says why).
stage attribution tests attribution --profile attribution --no-tests fail -E "$attribution" || rc=$?
# The host-stall boot asserts which cause leads as well: a loaded host
# preempts one virtual CPU's thread alone, which is no stop of the guest.
if [ $e2e = true ] && { [ $stand_ins = true ] || [ -x "$cross_dir/x86_64-unknown-linux-musl/release/rtlat" ]; }; then
    RTLAT_E2E_PARTS=stall RTLAT_E2E_BIN="$cross_dir/x86_64-unknown-linux-musl/release/rtlat" \
        again host-stall scripts/gpio-e2e.sh || rc=$?
    # The responder's kspin load: which section led, and its stack.
    RTLAT_E2E_PARTS=kmod RTLAT_E2E_BIN="$cross_dir/x86_64-unknown-linux-musl/release/rtlat" \
        again kmod-boots scripts/gpio-e2e.sh || rc=$?
fi
[ -z "$failed" ] || {
    say "lanes that failed:$failed"
    exit 1
}
[ $rc = 0 ] || exit $rc
