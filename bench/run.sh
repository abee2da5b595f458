#!/usr/bin/env bash
# Runs firth's benchmarks: `bench/run.sh BUILD_DIR` (what `make bench` does).
#
# Configures BUILD_DIR (RelWithDebInfo) when it is not configured yet, builds the benchmark
# programs in it if needed, runs each with a scratch directory under BUILD_DIR/bench/tmp
# (removed at the end, whatever happens), writes the results as JSON to
# BUILD_DIR/bench/{append,projection,summary}.json and prints the figures and each target's
# verdict. A target that is missed is reported as MISS and does not fail the run;
# a benchmark that cannot run (an error, a crash) does, after the others have run.
#
# Environment: BENCH_APPEND_ARGS and BENCH_PROJECTION_ARGS add options to the programs
# (e.g. BENCH_APPEND_ARGS="--mb 64 --reps 1" for a quick look); see docs/BENCHMARKS.md.
set -uo pipefail

BUILD=${1:-build}
BIN=$BUILD/bin
OUT=$BUILD/bench
TMP=$OUT/tmp

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null ||
        { echo "bench: cannot configure $BUILD" >&2; exit 1; }
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
sanitize=$(sed -n 's/^FIRTH_SANITIZE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
case "$build_type:$sanitize" in
    Release:OFF | RelWithDebInfo:OFF | Release: | RelWithDebInfo:) ;;
    *) echo "bench: warning: $BUILD is a $build_type build (sanitizers: ${sanitize:-OFF});" \
        "its figures say little about firth's speed" >&2 ;;
esac

rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
if ! cmake --build "$BUILD" --target bench_append bench_projection bench_report \
    -j "${JOBS:-2}" >"$TMP/build.log" 2>&1; then
    cat "$TMP/build.log" >&2
    echo "bench: building the benchmarks in $BUILD failed" >&2
    exit 1
fi
rm -f "$OUT/append.json" "$OUT/projection.json" "$OUT/summary.json"

status=0
run() {
    local name=$1
    shift
    echo
    if ! "$BIN/bench_$name" --dir "$TMP/$name" --out "$OUT/$name.json" "$@"; then
        echo "bench: bench_$name failed" >&2
        status=1
    fi
    rm -rf "${TMP:?}/$name"
}

# shellcheck disable=SC2086  # the extra arguments are meant to be split
run append ${BENCH_APPEND_ARGS:-}
# shellcheck disable=SC2086
run projection ${BENCH_PROJECTION_ARGS:-}

"$BIN/bench_report" --out "$OUT/summary.json" "$OUT/append.json" "$OUT/projection.json" ||
    status=1
exit $status
