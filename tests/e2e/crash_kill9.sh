#!/usr/bin/env bash
# Crash safety of produce: a generator feeds NDJSON slowly into `firth produce --verbose
# --batch-rows 100`, which is killed with SIGKILL at a random moment after some
# acknowledgements. Reopening the data dir must show every acknowledged line exactly once,
# each batch whole or not at all, and offsets that stay dense in every bucket as the next
# round appends more. Several rounds; FIRTH_SEED replays one run (the seed is printed).
source "$(dirname "$0")/lib/e2e_common.bash"

seed=${FIRTH_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "crash_kill9: seed $seed (rerun with FIRTH_SEED=$seed)"
rounds=${FIRTH_CRASH_ROUNDS:-6}
batch=100

d=$T/data
# Two buckets and no bucket key: each batch goes whole to one bucket, so a batch is either
# entirely in the log or not at all, even when the kill lands in the middle of an append.
firth_sql "$d" "CREATE DATABASE crash;
    CREATE TABLE crash.events (id BIGINT NOT NULL, round INT, pad STRING)
        WITH ('bucket.num' = '2')"

# Writes NDJSON lines for round $1 forever, 20 lines every 20 ms (a batch every ~0.1 s).
gen() {
    local r=$1 i=1 k
    local pad=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    while :; do
        for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            printf '{"id": %d, "round": %d, "pad": "%s"}\n' $((r * 1000000 + i)) "$r" "$pad" ||
                return 0
            i=$((i + 1))
        done
        sleep 0.02
    done
}

# Checks the table: consume succeeds; ids are unique; offsets dense from 0 in each bucket.
# Leaves "id" lines (one per row) in $T/ids.
check_table() {
    run 0 "$FIRTH" consume --data-dir "$d" --table crash.events --with-offsets --columns id --format csv
    printf '%s\n' "$OUT" | tail -n +2 >"$T/rows.csv"
    awk -F, '{ if ($2 != next_off[$1]) { print "bucket " $1 ": offset " $2 ", expected " next_off[$1]; bad = 1 }
               next_off[$1] = $2 + 1 }
         END { exit bad }' "$T/rows.csv" || fail "offsets are not dense ($1)"
    cut -d, -f3 "$T/rows.csv" | sort -n >"$T/ids"
    local dups
    dups=$(uniq -d "$T/ids" | head -5)
    [ -z "$dups" ] || fail "ids present twice ($1): $dups"
    E2E_CHECKS=$((E2E_CHECKS + 2))
}

total_acked=0
for r in $(seq 1 "$rounds"); do
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    gen "$r" >"$T/fifo" &
    genpid=$!
    "$FIRTH" produce --data-dir "$d" --table crash.events --batch-rows $batch --verbose \
        <"$T/fifo" 2>"$T/acks.$r" &
    pid=$!
    want=$((2 + RANDOM % 6))
    deadline=$((SECONDS + 60)) # generous: the machine may be busy with other tests
    while :; do
        n=$(grep -c '^acknowledged lines' "$T/acks.$r" || true)
        [ "$n" -ge "$want" ] || [ "$SECONDS" -ge "$deadline" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    [ "$n" -ge "$want" ] || fail "round $r: only $n acknowledgements: $(cat "$T/acks.$r")"
    # A random moment within the next batch: between two appends, or in the middle of one.
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    kill "$genpid" 2>/dev/null || true
    wait "$genpid" 2>/dev/null || true

    # What produce acknowledged: whole lines "acknowledged lines A-B (N rows)" only.
    grep -E '^acknowledged lines [0-9]+-[0-9]+ \([0-9]+ rows\)$' "$T/acks.$r" >"$T/acked.$r" || true
    acked=$(wc -l <"$T/acked.$r")
    [ "$acked" -ge "$want" ] || fail "round $r: the acknowledgements are garbled: $(cat "$T/acks.$r")"
    awk -v r="$r" '{ split($3, ab, "-"); for (i = ab[1]; i <= ab[2]; i++) print r * 1000000 + i }' \
        "$T/acked.$r" | sort -n >"$T/want.$r"
    total_acked=$((total_acked + $(wc -l <"$T/want.$r")))

    check_table "after the kill in round $r"
    # Every acknowledged line of this round is there (exactly once: ids are unique).
    missing=$(comm -23 "$T/want.$r" "$T/ids" | head -5)
    [ -z "$missing" ] || fail "round $r: acknowledged lines lost: $missing"
    E2E_CHECKS=$((E2E_CHECKS + 1))
    # Of this round, only whole batches: lines 100k+1 .. 100k+100 all or none.
    awk -v r="$r" -v b=$batch '$1 > r * 1000000 && $1 < (r + 1) * 1000000 {
            line = $1 - r * 1000000; n[int((line - 1) / b)]++ }
         END { for (k in n) if (n[k] != b) { print "batch " k ": " n[k] " of " b " rows"; bad = 1 }
               exit bad }' "$T/ids" || fail "round $r: a partial batch is visible"
    E2E_CHECKS=$((E2E_CHECKS + 1))
    present=$(awk -v r="$r" '$1 > r * 1000000 && $1 < (r + 1) * 1000000' "$T/ids" | wc -l)
    echo "round $r: killed after $acked acknowledged batches; $present rows of the round present"
done

# After the last crash, a clean produce appends after every bucket's end, densely.
awk 'BEGIN { for (i = 1; i <= 250; i++) printf "{\"id\": %d, \"round\": 99}\n", 99000000 + i }' >"$T/last.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table crash.events --batch-rows $batch <"$T/last.ndjson"
check_eq "$ERR" "250 rows written to crash.events" "a produce after the crashes"
check_table "after the final produce"
check_eq "$(grep -c '^990' "$T/ids")" "250" "the final rows are all there"
[ "$(wc -l <"$T/ids")" -ge $((total_acked + 250)) ] || fail "fewer rows than acknowledged"
