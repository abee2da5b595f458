#!/usr/bin/env bash
# Column names that need backquotes (reserved words, spaces, a backquote) survive the round
# trip through the expression writer: EXPLAIN prints the filter with the names quoted, and
# that text given back as consume --where parses, binds and selects the same rows.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
run 0 "$FIRTH" sql --data-dir "$d" -e 'CREATE TABLE t (`select` INT, `unit price` DOUBLE,
    `we``ird` STRING, `From` INT, plain INT);
    INSERT INTO t VALUES (1, 2.5, '\''a'\'', 3, 10), (5, 1.0, '\''b'\'', 4, 20), (7, 1.5, '\''c'\'', 4, 30)'
where='`select` > 1 AND `unit price` < 2 AND `we``ird` <> '\''c'\'' AND `from` = 4 AND plain IS NOT NULL'
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "EXPLAIN SELECT plain FROM t WHERE $where"
filter=$(printf '%s\n' "$OUT" | sed -n 's/^"\{0,1\}filter pushed down: \(.*\)$/\1/p' | sed 's/"$//; s/""/"/g')
[ -n "$filter" ] || fail "EXPLAIN printed no pushed-down filter: $OUT"
for part in '(`select` > 1)' '(`unit price` < 2)' "(\`we\`\`ird\` <> 'c')" '(`from` = 4)' \
    '(plain IS NOT NULL)'; do
    check_contains "$filter" "$part" "EXPLAIN writes $part"
done
run 0 "$FIRTH" consume --data-dir "$d" --table default.t --columns plain --where "$filter"
check_eq "$OUT" '{"plain":20}' "the written filter selects the same row"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT plain FROM t WHERE $filter"
check_eq "$OUT" "$(printf 'plain\n20')" "and parses again in SQL"
