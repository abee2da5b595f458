#!/usr/bin/env bash
# Crash safety of upserts into primary-key tables: `firth produce --verbose --batch-rows 50`
# is fed a slow stream of upserts and deletes on a small key space (keys repeat) and killed
# with SIGKILL at a random moment after some acknowledgements, several rounds, over three
# tables: last_row, aggregation (sum, max, last_value, deletes allowed) and a partitioned
# last_row table. After each kill, reopening the data dir must show:
#   (a) every acknowledged change in the changelog (`firth consume`): per key, the
#       changelog is exactly what the key's operations produce through the merge engine,
#       every acknowledged operation included, and of the operations after the last
#       acknowledged line a prefix at most (each round per key);
#   (b) the current state (`SELECT *`) equal to the changelog replayed (+I/+U upsert the
#       row, -D removes the key), and to the model's state;
#   (c) nothing corrupt: the whole changelog reads back, offsets dense from 0 in every
#       bucket of every partition;
#   (d) producing goes on afterwards (a last round with no kill, checked the same way).
# FIRTH_SEED replays one run (the seed is printed); FIRTH_CRASH_ROUNDS sets the rounds.
source "$(dirname "$0")/lib/e2e_common.bash"

seed=${FIRTH_SEED:-$(($(date +%s) % 100000))}
RANDOM=$seed
echo "pk_crash_kill9: seed $seed (rerun with FIRTH_SEED=$seed)"
rounds=${FIRTH_CRASH_ROUNDS:-6}
batch=50
lines_per_round=3000

d=$T/data
firth_sql "$d" "CREATE DATABASE crash;
    CREATE TABLE crash.kv (id BIGINT, v BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED)
        WITH ('bucket.num' = '2');
    CREATE TABLE crash.agg (id BIGINT, cnt BIGINT, mx BIGINT, last_seq BIGINT,
        PRIMARY KEY (id) NOT ENFORCED)
        WITH ('bucket.num' = '2', 'table.merge-engine' = 'aggregation',
              'fields.cnt.agg' = 'sum', 'fields.mx.agg' = 'max',
              'fields.last_seq.agg' = 'last_value', 'table.delete.behavior' = 'allow');
    CREATE TABLE crash.part (dt STRING, id BIGINT, v BIGINT, s STRING,
        PRIMARY KEY (dt, id) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket.num' = '2')"

tables=(kv agg part)

# gen TABLE ROUND: writes the round's input as NDJSON to $T/in.TABLE.ROUND and the same
# operations as CSV (round,line,op,key,columns...) to $T/ops.TABLE.ROUND. Upserts carry a
# value unique to their line (seq), so that each one's changelog record is its own.
gen() {
    awk -v kind="$1" -v r="$2" -v n="$lines_per_round" -v seed="$seed" \
        -v json="$T/in.$1.$2" -v ops="$T/ops.$1.$2" 'BEGIN {
        srand(seed * 100 + r)
        split("a b c", dts, " ")
        for (i = 1; i <= n; i++) {
            seq = r * 1000000 + i
            id = 1 + int(rand() * (kind == "part" ? 8 : 24))
            dt = dts[1 + int(rand() * 3)]
            del = rand() < 0.3
            if (kind == "kv") {
                key = id
                if (del) { printf "{\"_change_type\": \"-D\", \"id\": %d}\n", id > json; row = "" }
                else {
                    row = id "," seq ",r" r "-" i
                    printf "{\"id\": %d, \"v\": %d, \"s\": \"r%d-%d\"}\n", id, seq, r, i > json
                }
            } else if (kind == "agg") {
                key = id
                if (del) { printf "{\"_delete\": true, \"id\": %d}\n", id > json; row = "" }
                else {
                    cnt = 1 + int(rand() * 5); mx = int(rand() * 1000)
                    row = id "," cnt "," mx "," seq
                    printf "{\"id\": %d, \"cnt\": %d, \"mx\": %d, \"last_seq\": %d}\n", id, cnt, mx, seq > json
                }
            } else {
                key = dt "|" id
                if (del) { printf "{\"_change_type\": \"-D\", \"dt\": \"%s\", \"id\": %d}\n", dt, id > json; row = "" }
                else {
                    row = dt "," id "," seq ",r" r "-" i
                    printf "{\"dt\": \"%s\", \"id\": %d, \"v\": %d, \"s\": \"r%d-%d\"}\n", dt, id, seq, r, i > json
                }
            }
            print r "," i "," (del ? "d" : "u") "," key "," row > ops
        }
    }'
}

# feed FILE: writes FILE 25 lines every 20 ms (a batch of 50 every ~40 ms).
feed() {
    local f=$1 i=1 n
    n=$(wc -l <"$f")
    while [ "$i" -le "$n" ]; do
        sed -n "${i},$((i + 24))p" "$f" || return 0
        i=$((i + 25))
        sleep 0.02
    done
}

# check TABLE: the checks (a), (b) and (c) over every round run so far on TABLE.
check() {
    local t=$1 what=$2
    run 0 "$FIRTH" consume --data-dir "$d" --table "crash.$t" --with-offsets --format csv
    printf '%s\n' "$OUT" | tail -n +2 >"$T/cl.$t"
    # (c) offsets dense from 0 per bucket of each partition (consume reads them in order).
    awk -F, -v part="$([ "$t" = part ] && echo 1 || echo 0)" '{
            b = (part ? $4 "/" : "") $2
            if ($3 != next_off[b] + 0) { print "bucket " b ": offset " $3 ", expected " next_off[b] + 0; bad = 1 }
            next_off[b] = $3 + 1 }
         END { exit bad }' "$T/cl.$t" || fail "crash.$t: offsets are not dense ($what)"
    E2E_CHECKS=$((E2E_CHECKS + 1))
    run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT * FROM crash.$t"
    printf '%s\n' "$OUT" | tail -n +2 | sort >"$T/state.$t"
    # (b) the state is the changelog replayed.
    awk -F, -v part="$([ "$t" = part ] && echo 1 || echo 0)" '{
            key = part ? $4 "|" $5 : $4
            row = $4; for (i = 5; i <= NF; i++) row = row "," $i
            if ($1 == "+I" || $1 == "+U") state[key] = row
            else if ($1 == "-D") delete state[key]
            else if ($1 != "-U") { print "bad change type " $1; exit 1 } }
         END { for (k in state) print state[k] }' "$T/cl.$t" | sort >"$T/replayed.$t"
    check_eq "$(cat "$T/state.$t")" "$(cat "$T/replayed.$t")" \
        "crash.$t: the state is the changelog replayed ($what)"
    # (a) per key, the changelog is what the operations make of it through the merge engine.
    cat "$T"/ops."$t".* | sort -t, -k1,1n -k2,2n >"$T/ops.$t"
    rm -f "$T/model.$t"
    awk -F, -v kind="$t" -v acks="$T/acks.all.$t" -v opsf="$T/ops.$t" -v out="$T/model.$t" '
        FILENAME == acks { acked[$1] = $2; next }
        FILENAME == opsf {
            k = $4; row = $5; for (i = 6; i <= NF; i++) row = row "," $i
            nops[k, $1]++; op[k, $1, nops[k, $1]] = $3; arg[k, $1, nops[k, $1]] = row
            line[k, $1, nops[k, $1]] = $2; keys[k] = 1; if ($1 > last) last = $1; next }
        {   k = kind == "part" ? $4 "|" $5 : $4
            row = $4; for (i = 5; i <= NF; i++) row = row "," $i
            nact[k]++; act[k, nact[k]] = $1 "," row; keys[k] = 1 }
        # The records an operation makes (into rec[1..n]) and the row it leaves (new_row).
        function effect(o, in_row,    a, b) {
            n = 0; new_row = cur
            if (o == "d") {
                if (cur != "") { rec[++n] = "-D," cur; new_row = "" }
                return n
            }
            if (cur == "") { rec[++n] = "+I," in_row; new_row = in_row; return n }
            if (kind == "agg") {
                split(cur, a, ","); split(in_row, b, ",")
                new_row = a[1] "," (a[2] + b[2]) "," (a[3] > b[3] ? a[3] : b[3]) + 0 "," b[4]
            } else new_row = in_row
            if (new_row == cur) return 0
            rec[++n] = "-U," cur; rec[++n] = "+U," new_row
            return n
        }
        function matches(k, p, n,    i) {
            for (i = 1; i <= n; i++) if (act[k, p + i - 1] != rec[i]) return 0
            return 1
        }
        END {
            for (k in keys) {
                cur = ""; p = 1
                for (r = 1; r <= last; r++) {
                    stopped = 0
                    for (j = 1; j <= nops[k, r]; j++) {
                        n = effect(op[k, r, j], arg[k, r, j])
                        if (stopped) continue
                        ok = matches(k, p, n)
                        if (line[k, r, j] <= acked[r] + 0 && !ok) {
                            printf "key %s: the acknowledged operation of round %d line %d (%s %s) should write [%s%s] at its record %d, the changelog has [%s]\n",
                                k, r, line[k, r, j], op[k, r, j], arg[k, r, j], rec[1], (n > 1 ? " " rec[2] : ""), p, act[k, p]
                            bad = 1; break
                        }
                        if (ok) { p += n; cur = new_row; if (n && line[k, r, j] > acked[r] + 0) extra[r]++ }
                        else stopped = 1
                    }
                }
                if (p - 1 != nact[k]) {
                    printf "key %s: the changelog has %d records, the operations explain %d; record %d is [%s]\n",
                        k, nact[k], p - 1, p, act[k, p]
                    bad = 1
                }
                if (cur != "") print cur > out
            }
            print extra[last] + 0 > (out ".extra")
            exit bad
        }' "$T/acks.all.$t" "$T/ops.$t" "$T/cl.$t" ||
        fail "crash.$t: the changelog does not follow the operations ($what)"
    E2E_CHECKS=$((E2E_CHECKS + 1))
    check_eq "$(cat "$T/state.$t")" "$(sort "$T/model.$t" 2>/dev/null)" \
        "crash.$t: the state is the model's ($what)"
}

touch "$T/acks.all.kv" "$T/acks.all.agg" "$T/acks.all.part"
for r in $(seq 1 "$rounds"); do
    t=${tables[$(((r - 1) % 3))]}
    gen "$t" "$r"
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    : >"$T/acks.$r"
    feed "$T/in.$t.$r" >"$T/fifo" &
    feedpid=$!
    "$FIRTH" produce --data-dir "$d" --table "crash.$t" --batch-rows $batch --verbose \
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
    # A random moment within the next batches: between two appends, or in one.
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    kill "$feedpid" 2>/dev/null || true
    wait "$feedpid" 2>/dev/null || true

    grep -E '^acknowledged lines [0-9]+-[0-9]+ \([0-9]+ rows\)$' "$T/acks.$r" >"$T/acked.$r" || true
    acked=$(wc -l <"$T/acked.$r")
    [ "$acked" -ge "$want" ] || fail "round $r: the acknowledgements are garbled: $(cat "$T/acks.$r")"
    # Acknowledgements cover lines 1..A densely; A is the round's last acknowledged line.
    last_line=$(awk '{ split($3, ab, "-"); if (ab[1] != prev + 1) exit 1; prev = ab[2] } END { print prev }' \
        "$T/acked.$r") || fail "round $r: acknowledged ranges are not dense: $(cat "$T/acked.$r")"
    echo "$r,$last_line" >>"$T/acks.all.$t"
    check "$t" "after the kill in round $r"
    changes=$(wc -l <"$T/cl.$t")
    echo "round $r (crash.$t): killed after $acked batches (lines 1-$last_line acknowledged);" \
        "$(cat "$T/model.$t.extra") operations past them applied; $changes changelog records"
done

# (d) Producing goes on: a last round into each table runs to its end.
for t in "${tables[@]}"; do
    r=$((rounds + 1))
    gen "$t" "$r"
    head -n 400 "$T/in.$t.$r" >"$T/last.$t"
    head -n 400 "$T/ops.$t.$r" >"$T/ops.$t.$r.tmp" && mv "$T/ops.$t.$r.tmp" "$T/ops.$t.$r"
    run 0 "$FIRTH" produce --data-dir "$d" --table "crash.$t" --batch-rows $batch <"$T/last.$t"
    check_contains "$ERR" "400 rows written to crash.$t" "crash.$t: a produce after the crashes"
    echo "$r,400" >>"$T/acks.all.$t"
    check "$t" "after the final produce"
done
