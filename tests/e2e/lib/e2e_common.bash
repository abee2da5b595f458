# e2e_common.bash — what the end-to-end tests of the `firth` command share. Sourced by each
# tests/e2e/*.sh (this file is not a test itself: CTest runs only tests/e2e/*.sh).
#
# Environment: FIRTH is the binary under test, FIRTH_TEST_TMP a scratch directory. Each test
# gets a fresh directory $T under it, removed on success and kept on failure for a look.
set -euo pipefail

: "${FIRTH:?set FIRTH to the firth binary}"
: "${FIRTH_TEST_TMP:?set FIRTH_TEST_TMP to a scratch directory}"
mkdir -p "$FIRTH_TEST_TMP"
T=$(mktemp -d "$FIRTH_TEST_TMP/$(basename "$0" .sh).XXXXXX")
E2E_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
E2E_NAME=$(basename "$0" .sh)
E2E_CHECKS=0

e2e_cleanup() {
    local rc=$?
    if [ "$rc" -eq 0 ]; then
        rm -rf "$T"
        echo "$E2E_NAME: ok ($E2E_CHECKS checks)"
    else
        echo "$E2E_NAME: FAILED (exit $rc); files kept in $T" >&2
    fi
}
trap e2e_cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# check_eq ACTUAL EXPECTED WHAT
check_eq() {
    E2E_CHECKS=$((E2E_CHECKS + 1))
    if [ "$1" != "$2" ]; then
        echo "FAIL: $3" >&2
        echo "--- expected:" >&2
        printf '%s\n' "$2" >&2
        echo "--- actual:" >&2
        printf '%s\n' "$1" >&2
        exit 1
    fi
}

# check_contains TEXT NEEDLE WHAT
check_contains() {
    E2E_CHECKS=$((E2E_CHECKS + 1))
    case "$1" in
    *"$2"*) ;;
    *)
        echo "FAIL: $3: expected to find [$2] in:" >&2
        printf '%s\n' "$1" >&2
        exit 1
        ;;
    esac
}

# check_not_contains TEXT NEEDLE WHAT
check_not_contains() {
    E2E_CHECKS=$((E2E_CHECKS + 1))
    case "$1" in
    *"$2"*)
        echo "FAIL: $3: did not expect [$2] in:" >&2
        printf '%s\n' "$1" >&2
        exit 1
        ;;
    esac
}

# run CODE CMD...: runs CMD (stdin is inherited), expects exit CODE, leaves its stdout in
# $OUT and its stderr in $ERR.
run() {
    local want=$1
    shift
    local rc=0
    "$@" >"$T/.out" 2>"$T/.err" || rc=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
    E2E_CHECKS=$((E2E_CHECKS + 1))
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: exit $rc, expected $want: $*" >&2
        echo "--- stdout:" >&2
        printf '%s\n' "$OUT" >&2
        echo "--- stderr:" >&2
        printf '%s\n' "$ERR" >&2
        exit 1
    fi
}

# firth_sql DIR SQL...: runs statements that must succeed, output in $OUT.
firth_sql() {
    local dir=$1
    shift
    run 0 "$FIRTH" sql --data-dir "$dir" -e "$*"
}
