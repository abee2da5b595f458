#!/usr/bin/env bash
# A damaged lake gives clear errors, never a crash, and the log keeps its data: with the
# current metadata JSON of a lake-enabled table corrupted, or one of its Parquet data files
# truncated, `SELECT ... FROM t$lake` and the union read `SELECT ... FROM t` fail with a
# message naming the file, `CALL sys.tier` fails clearly too, while `t$changelog` and
# `firth consume` still read every row from the log; once the file is repaired, reads work
# again. Also: $lake and CALL on tables without a lake, and a lake directory removed.
source "$(dirname "$0")/lib/e2e_common.bash"

# A relative data dir keeps the paths in messages short (messages hold 255 bytes).
cd "$T"
d=data
firth_sql "$d" "CREATE DATABASE lk;
    CREATE TABLE lk.events (id BIGINT NOT NULL, name STRING, at TIMESTAMP(3))
        WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2');
    CREATE TABLE lk.users (id INT PRIMARY KEY NOT ENFORCED, name STRING)
        WITH ('table.datalake.enabled' = 'true');
    CREATE TABLE lk.plain (id INT)"

values() { # values FROM TO: rows for lk.events
    local v="" i
    for ((i = $1; i < $2; i++)); do
        v+="${v:+, }($i, 'name $i', TIMESTAMP '2026-11-30 10:00:00.$((i % 10))00')"
    done
    printf '%s' "$v"
}
firth_sql "$d" "INSERT INTO lk.events VALUES $(values 0 40)"
firth_sql "$d" "INSERT INTO lk.users VALUES (1, 'a'), (2, 'b'), (3, 'c')"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "CALL sys.tier('lk.events')"
check_eq "$(printf '%s\n' "$OUT" | head -1)" "snapshot_id" "CALL sys.tier returns the snapshot id"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "CALL sys.tier('lk.users')"
firth_sql "$d" "INSERT INTO lk.events VALUES $(values 40 50)"
firth_sql "$d" "UPDATE lk.users SET name = 'bb' WHERE id = 2"

ids() { # ids QUERY: the sorted ids a query returns
    "$FIRTH" sql --data-dir "$d" --format csv -e "$1" | tail -n +2 | sort -n | tr '\n' ' '
}
all_ids="$(seq 0 49 | tr '\n' ' ')"
check_eq "$(ids "SELECT id FROM lk.events")" "$all_ids" "the union read holds every row"
check_eq "$(ids "SELECT id FROM lk.events\$lake")" "$(seq 0 39 | tr '\n' ' ')" \
    "the lake holds the tiered rows"

# The log alone, whatever the lake's state.
log_ok() { # log_ok WHAT
    check_eq "$(ids "SELECT id FROM lk.events\$changelog")" "$all_ids" "$1: \$changelog reads the log"
    run 0 "$FIRTH" consume --data-dir "$d" --table lk.events --format csv --columns id
    check_eq "$(printf '%s\n' "$OUT" | tail -n +2 | sort -n | tr '\n' ' ')" "$all_ids" \
        "$1: consume reads every row from the log"
}
# fails_clearly WHAT NEEDLE SQL: exit 1 (not a crash), the message names NEEDLE
fails_clearly() {
    run 1 "$FIRTH" sql --data-dir "$d" -e "$3"
    check_contains "$ERR" "firth: error: " "$1: a clear error"
    check_contains "$ERR" "$2" "$1: the message names the file"
}

lake=$d/lake/lk/events
hint=$(cat "$lake/metadata/version-hint.text")
meta=$lake/metadata/v$hint.metadata.json
[ -f "$meta" ] || fail "no current metadata file $meta"

# ---- corrupt metadata JSON -----------------------------------------------------------------
cp "$meta" "$T/meta.good"
printf '{"format-version": 2, "table-uuid": "x", "snapsh' >"$meta"
fails_clearly "corrupt metadata" "v$hint.metadata.json" "SELECT * FROM lk.events\$lake"
fails_clearly "corrupt metadata, union read" "v$hint.metadata.json" "SELECT id FROM lk.events"
fails_clearly "corrupt metadata, CALL" "v$hint.metadata.json" "CALL sys.tier('lk.events')"
log_ok "corrupt metadata"
printf 'not json at all\n' >"$meta"
fails_clearly "metadata that is not JSON" "v$hint.metadata.json" "SELECT * FROM lk.events\$lake"
cp "$T/meta.good" "$meta"
check_eq "$(ids "SELECT id FROM lk.events")" "$all_ids" "repaired metadata: the union read works"

# ---- a truncated Parquet data file ---------------------------------------------------------
pq=$(find "$lake/data" -name '*.parquet' | sort | head -1)
[ -n "$pq" ] || fail "no Parquet data file under $lake/data"
cp "$pq" "$T/pq.good"
size=$(stat -c %s "$pq")
truncate -s $((size / 2)) "$pq"
fails_clearly "truncated Parquet" "$(basename "$pq")" "SELECT * FROM lk.events\$lake"
fails_clearly "truncated Parquet, union read" "$(basename "$pq")" "SELECT name FROM lk.events"
log_ok "truncated Parquet"
truncate -s 7 "$pq"
fails_clearly "a Parquet file of 7 bytes" "$(basename "$pq")" "SELECT * FROM lk.events\$lake"
head -c "$size" /dev/zero >"$pq"
fails_clearly "a Parquet file of zeros" "$(basename "$pq")" "SELECT id FROM lk.events"
cp "$T/pq.good" "$pq"
check_eq "$(ids "SELECT id FROM lk.events")" "$all_ids" "repaired Parquet: the union read works"

# ---- a primary-key table's damaged data file ----------------------------------------------
upq=$(find "$d/lake/lk/users/data" -name '*.parquet' | sort | head -1)
[ -n "$upq" ] || fail "no Parquet file for lk.users"
truncate -s 20 "$upq"
fails_clearly "truncated Parquet of a primary-key table" "$(basename "$upq")" \
    "SELECT * FROM lk.users"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT name FROM lk.users WHERE id = 2"
check_eq "$OUT" "name
bb" "a point lookup still reads the KV store"

# ---- tables without a lake ----------------------------------------------------------------
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT * FROM lk.plain\$lake"
check_contains "$ERR" "table lk.plain has no lake" "\$lake of a table without a lake"
run 1 "$FIRTH" sql --data-dir "$d" -e "CALL sys.tier('lk.plain')"
check_contains "$ERR" "line 1, column 15: table lk.plain has no lake" "CALL on a table without a lake"
run 1 "$FIRTH" sql --data-dir "$d" -e "CALL sys.tier('lk.nope')"
check_contains "$ERR" "line 1, column 15: table lk.nope does not exist" "CALL on a missing table"
