#!/usr/bin/env bash
# The engine's configuration keys on the command line (--log.flush none, ...): accepted by
# every command that opens a data dir, in both --key value and --key=value forms, applied
# to the engine, documented in each help text and in docs/CONFIGURATION.md, and a bad
# value, a missing one or a misspelt key is a usage error (exit 2) naming the key.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
keys=$(grep -o '{"[a-z.-]*", set_' "$E2E_SRC/src/engine/engine_config.c" |
    sed 's/{"\([a-z.-]*\)", set_/\1/')
[ -n "$keys" ] || fail "found no configuration keys in src/engine/engine_config.c"
for cmd in sql produce consume; do
    run 0 "$FIRTH" "$cmd" --help
    for k in $keys; do
        check_contains "$OUT" "--$k " "$cmd help documents --$k"
    done
done
config_doc=$(cat "$E2E_SRC/docs/CONFIGURATION.md")
cli_doc=$(cat "$E2E_SRC/docs/CLI.md")
for k in $keys; do
    check_contains "$config_doc" "\`$k\`" "docs/CONFIGURATION.md lists $k"
    check_contains "$cli_doc" "--$k" "docs/CLI.md mentions --$k"
done

# --log.flush none: the records are written and read back.
run 0 "$FIRTH" sql --data-dir "$d" --log.flush none \
    -e "CREATE TABLE t (id BIGINT, s STRING) WITH ('table.log.arrow.compression.type' = 'NONE')"
seq 1 50 | sed 's/.*/{"id": &, "s": "record number &"}/' >"$T/in.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table default.t --batch-rows 5 --log.flush none \
    <"$T/in.ndjson"
check_contains "$ERR" "50 rows written to default.t" "produce with --log.flush none"
run 0 "$FIRTH" consume --data-dir "$d" --table default.t --columns id --log.flush=none
check_eq "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" "50" "all records read back"
check_contains "$OUT" '{"id":50}' "the last record"
run 0 "$FIRTH" sql --data-dir "$d" --log.flush interval --log.flush.interval 10ms \
    --format csv -e "INSERT INTO t VALUES (51, 'by sql'); SELECT s FROM t WHERE id = 51"
check_eq "$OUT" "$(printf 's\nby sql')" "sql with --log.flush interval"

# The policy decides the fsyncs (seen with strace where it is installed): one per batch
# under append, none of the log's under none.
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true >/dev/null 2>&1; then
    fsyncs() {
        # LeakSanitizer cannot run under ptrace: an ASan build is traced without it.
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
            strace -f -e trace=fdatasync -o "$T/trace" "$FIRTH" produce --data-dir "$d" \
            --table default.t --batch-rows 5 "$@" <"$T/in.ndjson" >/dev/null 2>&1 ||
            fail "produce $* under strace"
        grep -c 'fdatasync(' "$T/trace" || true
    }
    with_append=$(fsyncs --log.flush append)
    with_none=$(fsyncs --log.flush none)
    E2E_CHECKS=$((E2E_CHECKS + 1))
    [ "$with_append" -ge 10 ] || fail "--log.flush append made $with_append fdatasyncs for 10 batches"
    E2E_CHECKS=$((E2E_CHECKS + 1))
    [ "$with_none" -lt 3 ] || fail "--log.flush none made $with_none fdatasyncs"
else
    echo "config: strace not installed or not allowed here; fsync counts not checked"
fi

# --log.segment.bytes reaches the engine: small segments roll.
d2=$T/small
run 0 "$FIRTH" sql --data-dir "$d2" --log.segment.bytes 1kb --log.segment.bytes=2kb \
    -e "CREATE TABLE t (id BIGINT, s STRING) WITH ('table.log.arrow.compression.type' = 'NONE')"
run 0 "$FIRTH" produce --data-dir "$d2" --table default.t --batch-rows 5 \
    --log.segment.bytes 2kb <"$T/in.ndjson"
segments=$(find "$d2/log" -name '*.log' | wc -l | tr -d ' ')
E2E_CHECKS=$((E2E_CHECKS + 1))
[ "$segments" -ge 3 ] || fail "10 batches in 2kb segments made $segments segment files"
run 0 "$FIRTH" produce --data-dir "$d2" --table default.t --batch-rows 5 <"$T/in.ndjson"
segments_after=$(find "$d2/log" -name '*.log' | wc -l | tr -d ' ')
check_eq "$segments_after" "$segments" "the default segment size (1gb) holds the next 10 batches"

# Usage errors: exit 2, the key named, where to look; nothing is opened.
for cmd in sql produce consume; do
    table=(--table default.t)
    [ "$cmd" != sql ] || table=()
    run 2 "$FIRTH" "$cmd" --data-dir "$T/never" "${table[@]}" --log.flush sometimes
    check_contains "$ERR" "firth $cmd: --log.flush: 'sometimes' is not a flush policy; use append, interval or none" \
        "$cmd: bad --log.flush"
    check_contains "$ERR" "see firth $cmd --help" "$cmd: bad value says where to look"
    run 2 "$FIRTH" "$cmd" --data-dir "$T/never" "${table[@]}" --log.flush.interval soon
    check_contains "$ERR" "--log.flush.interval" "$cmd: bad --log.flush.interval"
    run 2 "$FIRTH" "$cmd" --data-dir "$T/never" "${table[@]}" --log.segment.bytes 5gb
    check_contains "$ERR" "--log.segment.bytes: 5gb is outside" "$cmd: --log.segment.bytes too big"
    run 2 "$FIRTH" "$cmd" --data-dir "$T/never" --log.retention.check-interval
    check_contains "$ERR" "option '--log.retention.check-interval' needs a value" \
        "$cmd: a key without a value"
    run 2 "$FIRTH" "$cmd" --data-dir "$T/never" --log.flushes none
    check_contains "$ERR" "unknown option '--log.flushes'" "$cmd: a misspelt key"
done
E2E_CHECKS=$((E2E_CHECKS + 1))
[ ! -e "$T/never" ] || fail "a usage error created the data dir"
