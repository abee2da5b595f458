#!/usr/bin/env bash
# `firth produce` and `firth consume` on a table with several buckets: batching and its
# acknowledgements, NDJSON and CSV input, JSON/CSV/Arrow output, --columns, --where,
# --max-records, --with-offsets, and every --from (earliest, latest, offset:N,
# timestamp:MS).
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
firth_sql "$d" "CREATE DATABASE app;
    CREATE TABLE app.events (id BIGINT NOT NULL, name STRING, score DOUBLE, day DATE)
        WITH ('bucket.num' = '3', 'bucket.key' = 'id')"

gen() { # gen FROM TO: NDJSON events
    awk -v a="$1" -v b="$2" 'BEGIN { for (i = a; i <= b; i++)
        printf "{\"id\": %d, \"name\": \"n%d\", \"score\": %d.5, \"day\": \"2026-01-%02d\"}\n",
               i, i, i % 7, i % 28 + 1 }'
}

# ---- batching and acknowledgements -------------------------------------------------------
gen 1 1000 >"$T/a.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table app.events --batch-rows 300 --verbose <"$T/a.ndjson"
check_eq "$ERR" "acknowledged lines 1-300 (300 rows)
acknowledged lines 301-600 (300 rows)
acknowledged lines 601-900 (300 rows)
acknowledged lines 901-1000 (100 rows)
1000 rows written to app.events" "acknowledgements per batch and the summary"
check_eq "$OUT" "" "produce prints nothing on stdout"

run 0 "$FIRTH" produce --data-dir "$d" --table app.events </dev/null
check_eq "$ERR" "0 rows written to app.events" "empty input"

run 0 "$FIRTH" consume --data-dir "$d" --table app.events
check_eq "$(printf '%s\n' "$OUT" | wc -l)" "1000" "consume reads every row"
check_eq "$(printf '%s\n' "$OUT" | sed 's/{"id":\([0-9]*\),.*/\1/' | sort -n | uniq | wc -l)" \
    "1000" "every id once"
check_contains "$OUT" '{"id":7,"name":"n7","score":0.5,"day":"2026-01-08"}' "a row as JSON"

# ---- offsets: dense per bucket, each row once ----------------------------------------------
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --with-offsets --format csv
check_eq "$(printf '%s\n' "$OUT" | head -1)" "_bucket,_offset,id,name,score,day" "CSV header with offsets"
printf '%s\n' "$OUT" | tail -n +2 >"$T/offsets.csv"
awk -F, '{ if ($2 != next_off[$1]) { print "bucket " $1 ": offset " $2 " where " next_off[$1] " was next"; bad = 1 }
           next_off[$1] = $2 + 1; n[$1]++ }
     END { if (length(n) != 3) { print "expected 3 buckets, got " length(n); bad = 1 }
           exit bad }' "$T/offsets.csv" || fail "offsets are not dense from 0 in every bucket"
# The bucket of an id does not change: the same id always lands in the same bucket.
gen 1 20 | "$FIRTH" produce --data-dir "$d" --table app.events 2>/dev/null
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --with-offsets --format csv --columns id
printf '%s\n' "$OUT" | tail -n +2 | awk -F, '{ if (($3 in b) && b[$3] != $1) bad = 1; b[$3] = $1 }
    END { exit bad }' || fail "an id landed in two buckets"

run 0 "$FIRTH" consume --data-dir "$d" --table app.events --with-offsets --max-records 1
check_contains "$OUT" '{"_bucket":' "JSON with offsets"
check_contains "$OUT" ',"_offset":0,"id":' "JSON offsets come first"

# ---- projection, filter, limit ---------------------------------------------------------------
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --columns "name, id" --where "id = 42"
check_eq "$OUT" '{"name":"n42","id":42}' "--columns in the order given, with --where"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --columns id --where "id > 990"
check_eq "$(printf '%s\n' "$OUT" | sed 's/[^0-9]//g' | sort -n)" "$(seq 991 1000)" \
    "--where on a column that is also projected"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --columns name --where "id > 995"
check_eq "$(printf '%s\n' "$OUT" | sort)" "$(printf '{"name":"n%d"}\n' 1000 996 997 998 999)" \
    "--where on a column that is not projected"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --columns score \
    --where "id % 2 = 0 AND name LIKE 'n1%' AND day >= DATE '2026-01-02'"
want=$( (gen 1 1000; gen 1 20) | awk -F'[:,]' '{ id = $2 + 0; d = substr($0, index($0, "2026-01-") + 8, 2) + 0
    if (id % 2 == 0 && substr("n" id, 1, 2) == "n1" && d >= 2) n++ } END { print n }')
check_eq "$(printf '%s\n' "$OUT" | grep -c score)" "$want" "--where with AND, %, LIKE and a DATE"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --max-records 25
check_eq "$(printf '%s\n' "$OUT" | wc -l)" "25" "--max-records"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --max-records 0 --format csv
check_eq "$OUT" "id,name,score,day" "--max-records 0: only the header"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --where "id < 0" --format csv --columns day,id
check_eq "$OUT" "day,id" "no match: the projected header"

# ---- --from ----------------------------------------------------------------------------------
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --from latest --format csv
check_eq "$OUT" "id,name,score,day" "--from latest reads nothing that is there"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --from earliest --format csv
check_eq "$(printf '%s\n' "$OUT" | wc -l)" "1021" "--from earliest"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --with-offsets --format csv
all=$(printf '%s\n' "$OUT" | tail -n +2)
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --from offset:300 --with-offsets --format csv
got=$(printf '%s\n' "$OUT" | tail -n +2 | sort)
check_eq "$got" "$(printf '%s\n' "$all" | awk -F, '$2 >= 300' | sort)" \
    "--from offset:300 starts at offset 300 in every bucket"
run 0 "$FIRTH" consume --data-dir "$d" --table app.events --from offset:1000000 --format csv
check_eq "$OUT" "id,name,score,day" "--from past the end"

# timestamp: the first record committed at or after MS. Batches committed before a
# moment and after it, with pauses so that no clock tick is shared.
firth_sql "$d" "CREATE TABLE app.ticks (n INT)"
echo '{"n": 1}' | "$FIRTH" produce --data-dir "$d" --table app.ticks 2>/dev/null
sleep 0.05
mid=$(date +%s%3N)
sleep 0.05
printf '{"n": 2}\n{"n": 3}\n' | "$FIRTH" produce --data-dir "$d" --table app.ticks 2>/dev/null
run 0 "$FIRTH" consume --data-dir "$d" --table app.ticks --from "timestamp:$mid"
check_eq "$OUT" $'{"n":2}\n{"n":3}' "--from timestamp:MS reads the later batch only"
run 0 "$FIRTH" consume --data-dir "$d" --table app.ticks --from timestamp:0
check_eq "$OUT" $'{"n":1}\n{"n":2}\n{"n":3}' "--from timestamp:0 reads all"
run 0 "$FIRTH" consume --data-dir "$d" --table app.ticks --from "timestamp:$((mid + 86400000))"
check_eq "$OUT" "" "--from a future timestamp reads nothing"

# ---- CSV input -------------------------------------------------------------------------------
firth_sql "$d" "CREATE TABLE app.people (id INT NOT NULL, name STRING, born DATE, note STRING)"
printf 'NOTE,id,name\r\n"a, ""quoted"" note",1,ann\r\n,2,\r\n"",3,"multi\nline"\r\n\r\n' >"$T/p.csv"
run 0 "$FIRTH" produce --data-dir "$d" --table app.people --format csv --verbose <"$T/p.csv"
check_eq "$ERR" "acknowledged lines 2-5 (3 rows)
3 rows written to app.people" "CSV with CRLF, quotes, a missing column, a blank line"
run 0 "$FIRTH" consume --data-dir "$d" --table app.people
check_eq "$OUT" '{"id":1,"name":"ann","born":null,"note":"a, \"quoted\" note"}
{"id":2,"name":null,"born":null,"note":null}
{"id":3,"name":"multi\nline","born":null,"note":""}' "CSV values"

# ---- one bucket: offsets continue across runs -------------------------------------------------
run 0 "$FIRTH" consume --data-dir "$d" --table app.ticks --with-offsets --columns n --format csv
check_eq "$OUT" $'_bucket,_offset,n\n0,0,1\n0,1,2\n0,2,3' "offsets continue densely across runs"

# ---- Arrow: the stream's frame (the interop test reads it with apache-arrow) ------------------
"$FIRTH" consume --data-dir "$d" --table app.ticks --format arrow >"$T/t.arrows"
check_eq "$(head -c 4 "$T/t.arrows" | od -An -tx1 | tr -d ' ')" "ffffffff" "an Arrow stream starts with a continuation marker"
check_eq "$(tail -c 8 "$T/t.arrows" | od -An -tx1 | tr -d ' ')" "ffffffff00000000" "and ends with the end-of-stream marker"
"$FIRTH" consume --data-dir "$d" --table app.ticks --format arrow --max-records 0 >"$T/e.arrows"
check_eq "$(tail -c 8 "$T/e.arrows" | od -An -tx1 | tr -d ' ')" "ffffffff00000000" "an empty Arrow stream still has schema and end"
[ "$(stat -c %s "$T/e.arrows")" -gt 8 ] || fail "an empty Arrow stream has its schema message"
