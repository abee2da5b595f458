#!/usr/bin/env bash
# A full disk under produce: the append that hits ENOSPC is retried, then produce stops
# with exit 1 and says what was written; every acknowledged line is there, nothing of the
# failed batch is, and once there is room again the offsets go on densely. Then the file
# system turns read-only. Needs root to mount a small tmpfs; elsewhere the test says it is
# skipped.
source "$(dirname "$0")/lib/e2e_common.bash"

mnt=$T/mnt
mkdir -p "$mnt"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=2m tmpfs "$mnt" 2>/dev/null; then
    echo "disk_full: skipped (mounting a tmpfs needs root)"
    exit 0
fi
trap 'rc=$?; umount "$mnt" 2>/dev/null || true; (exit $rc); e2e_cleanup' EXIT

d=$mnt/data
firth_sql "$d" "CREATE TABLE t (id BIGINT NOT NULL, s STRING)
    WITH ('table.log.arrow.compression.type' = 'NONE')"
awk 'BEGIN { for (i = 1; i <= 100000; i++)
    printf "{\"id\": %d, \"s\": \"%d-abcdefghijklmnopqrstuvwxyz\"}\n", i, i * 7919 }' >"$T/in.ndjson"
run 1 "$FIRTH" produce --data-dir "$d" --table t --batch-rows 5000 --verbose <"$T/in.ndjson"
check_contains "$ERR" "No space left on device" "produce reports the full disk"
acked=$(printf '%s\n' "$ERR" | grep -c '^acknowledged lines' || true)
[ "$acked" -gt 0 ] || fail "nothing was acknowledged before the disk filled up"
last=$((acked * 5000))
check_contains "$ERR" "firth: error: writing lines $((last + 1))-$((last + 5000)): " "the failed batch's lines"
check_contains "$ERR" "firth: lines 1-$last were written to t" "what was written"

run 0 "$FIRTH" consume --data-dir "$d" --table t --columns id --format csv
check_eq "$(printf '%s\n' "$OUT" | tail -n +2)" "$(seq 1 "$last")" \
    "every acknowledged row, once, in order, and nothing of the failed batch"

mount -o remount,size=16m "$mnt"
run 0 "$FIRTH" produce --data-dir "$d" --table t <<<'{"id": 0}'
run 0 "$FIRTH" consume --data-dir "$d" --table t --columns id --with-offsets --format csv --from "offset:$last"
check_eq "$OUT" "_bucket,_offset,id
0,$last,0" "with room again, the next record gets the next offset"

# A data dir on a file system that became read-only: every command fails and says why.
mount -o remount,ro "$mnt"
run 1 "$FIRTH" consume --data-dir "$d" --table t --max-records 1
check_contains "$ERR" "firth: error: " "a read-only data dir"
check_contains "$ERR" "Read-only file system" "a read-only data dir says why"
run 1 "$FIRTH" sql --data-dir "$mnt/new" -e "SHOW DATABASES"
check_contains "$ERR" "Read-only file system" "a data dir that cannot be created"
