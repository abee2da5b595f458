#!/usr/bin/env bash
# What sql, produce and consume log to stderr: by default only warnings and errors, so the
# engine's INFO lines (a partition created as rows arrived) do not clutter the output;
# FIRTH_LOG_LEVEL in the environment and --log.level (which wins) choose another level, and
# a bad --log.level is a usage error.
source "$(dirname "$0")/lib/e2e_common.bash"

unset FIRTH_LOG_LEVEL
d=$T/data
partition_info="INFO  created (as rows arrived) partition"

run 0 "$FIRTH" sql --data-dir "$d" -e "CREATE TABLE logs (id INT, dt STRING)
    PARTITIONED BY (dt); INSERT INTO logs VALUES (1, '2026-03-01')"
check_not_contains "$ERR" " INFO " "sql logs no INFO lines by default"
check_eq "$ERR" "" "sql prints nothing on stderr by default"
check_contains "$OUT" "1 row inserted" "the statement's own message"

printf '{"id": 2, "dt": "2026-03-02"}\n' >"$T/one.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table logs <"$T/one.ndjson"
check_eq "$ERR" "1 row written to logs" "produce prints only its summary by default"

run 0 "$FIRTH" consume --data-dir "$d" --table logs --columns id
check_eq "$ERR" "" "consume prints nothing on stderr by default"

# FIRTH_LOG_LEVEL=info brings the INFO lines back.
run 0 env FIRTH_LOG_LEVEL=info "$FIRTH" sql --data-dir "$d" \
    -e "INSERT INTO logs VALUES (3, '2026-03-03')"
check_contains "$ERR" "$partition_info dt=2026-03-03" "FIRTH_LOG_LEVEL=info"

# --log.level, in both forms, and over the environment.
run 0 "$FIRTH" sql --data-dir "$d" --log.level info \
    -e "INSERT INTO logs VALUES (4, '2026-03-04')"
check_contains "$ERR" "$partition_info dt=2026-03-04" "--log.level info"
printf '{"id": 5, "dt": "2026-03-05"}\n' >"$T/five.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table logs --log.level=INFO <"$T/five.ndjson"
check_contains "$ERR" "$partition_info dt=2026-03-05" "produce --log.level=INFO"
run 0 env FIRTH_LOG_LEVEL=info "$FIRTH" sql --data-dir "$d" --log.level warn \
    -e "INSERT INTO logs VALUES (6, '2026-03-06')"
check_not_contains "$ERR" " INFO " "--log.level wins over FIRTH_LOG_LEVEL"
run 0 env FIRTH_LOG_LEVEL=bogus "$FIRTH" sql --data-dir "$d" \
    -e "INSERT INTO logs VALUES (7, '2026-03-07')"
check_not_contains "$ERR" " INFO " "an unknown FIRTH_LOG_LEVEL leaves the default"
run 0 "$FIRTH" consume --data-dir "$d" --table logs --columns id --log.level off
check_eq "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" "7" "consume --log.level off reads"

# Bad values and a missing one are usage errors naming the option.
for cmd in sql produce consume; do
    run 2 "$FIRTH" "$cmd" --data-dir "$d" --log.level loud
    check_contains "$ERR" "firth $cmd: --log.level must be debug, info, warn, error or off, not 'loud'" \
        "$cmd: a bad --log.level"
    run 2 "$FIRTH" "$cmd" --data-dir "$d" --log.level
    check_contains "$ERR" "option '--log.level' needs a value" "$cmd: --log.level without a value"
    run 0 "$FIRTH" "$cmd" --help
    check_contains "$OUT" "--log.level LEVEL" "$cmd help documents --log.level"
done
