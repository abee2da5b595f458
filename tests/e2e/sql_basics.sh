#!/usr/bin/env bash
# `firth sql`: statements from -e, -f, -f - and piped stdin; the table, CSV and JSON output
# formats with their exact text; statement messages (stdout for tables, stderr otherwise);
# errors with line and column and exit 1; a script stops at its first error; the
# interactive prompt (through script(1), which gives it a terminal).
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data

# ---- DDL and its messages ----------------------------------------------------------------
firth_sql "$d" "CREATE DATABASE shop; CREATE DATABASE IF NOT EXISTS shop;
    CREATE TABLE shop.orders (id INT NOT NULL, item STRING, price DECIMAL(10, 2))
        WITH ('bucket.num' = '3');
    CREATE TABLE IF NOT EXISTS shop.orders (x INT)"
check_eq "$OUT" "database shop created
database shop already exists
table shop.orders created
table shop.orders already exists" "DDL messages in table format"

run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "CREATE DATABASE IF NOT EXISTS other"
check_eq "$OUT" "" "csv: no message on stdout"
check_eq "$ERR" "database other created" "csv: the message goes to stderr"
run 0 "$FIRTH" sql --data-dir "$d" --format json -e "DROP DATABASE other"
check_eq "$OUT" "" "json: no message on stdout"
check_eq "$ERR" "database other dropped" "json: the message goes to stderr"

firth_sql "$d" "SHOW DATABASES"
check_eq "$OUT" "+---------------+
| database name |
+---------------+
| default       |
| shop          |
+---------------+
2 rows" "SHOW DATABASES as a table"

firth_sql "$d" "DESCRIBE shop.orders"
check_contains "$OUT" "| id    | INT            | false |" "DESCRIBE names the columns"
check_contains "$OUT" "| price | DECIMAL(10, 2) | true  |" "DESCRIBE names the types"

# ---- INSERT and SELECT in three formats --------------------------------------------------
firth_sql "$d" "USE shop; INSERT INTO orders VALUES (1, 'tea', 3.50), (2, 'coffee', 4.20);
    INSERT INTO orders (item, id) VALUES ('water', 3)"
check_eq "$OUT" "database changed to shop
2 rows inserted
1 row inserted" "INSERT messages"

firth_sql "$d" "SELECT * FROM shop.orders WHERE id <= 3"
# Three buckets: the order of rows follows the buckets, so compare sorted body lines.
body=$(printf '%s\n' "$OUT" | sed -n '4,6p' | sort)
check_eq "$body" "|  1 | tea    |  3.50 |
|  2 | coffee |  4.20 |
|  3 | water  |  NULL |" "table body: numbers right-aligned, NULL shown"
check_eq "$(printf '%s\n' "$OUT" | sed -n '1,3p')" "+----+--------+-------+
| id | item   | price |
+----+--------+-------+" "table header"
check_eq "$(printf '%s\n' "$OUT" | tail -2)" "+----+--------+-------+
3 rows" "table footer"

run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT id, item, price FROM shop.orders"
check_eq "$(printf '%s\n' "$OUT" | head -1)" "id,item,price" "csv header"
check_eq "$(printf '%s\n' "$OUT" | tail -n +2 | sort)" "1,tea,3.50
2,coffee,4.20
3,water," "csv rows: NULL is an empty field"

run 0 "$FIRTH" sql --data-dir "$d" --format json -e "SELECT price, item, id FROM shop.orders"
check_eq "$(printf '%s\n' "$OUT" | sort)" '{"price":"3.50","item":"tea","id":1}
{"price":"4.20","item":"coffee","id":2}
{"price":null,"item":"water","id":3}' "json rows in projection order"

# Empty results: the header and a count, the CSV header, no JSON lines.
firth_sql "$d" "SELECT id FROM shop.orders WHERE id > 100"
check_eq "$OUT" "+----+
| id |
+----+
0 rows" "an empty table result"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT id, item FROM shop.orders WHERE id > 100"
check_eq "$OUT" "id,item" "an empty CSV result keeps its header"
run 0 "$FIRTH" sql --data-dir "$d" --format json -e "SELECT id FROM shop.orders WHERE id > 100"
check_eq "$OUT" "" "an empty JSON result prints nothing"

# Awkward strings: CSV quoting, JSON escapes, multi-line table cells, wide characters.
firth_sql "$d" "CREATE TABLE shop.notes (k INT, s STRING)"
firth_sql "$d" "INSERT INTO shop.notes VALUES (1, 'a,b'), (2, 'say \"hi\"'), (3, 'two
lines'), (4, ''), (5, NULL), (6, 'naïve 日本')"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT k, s FROM shop.notes"
check_eq "$OUT" 'k,s
1,"a,b"
2,"say ""hi"""
3,"two
lines"
4,""
5,
6,naïve 日本' "CSV quoting (RFC 4180), NULL vs empty string"
run 0 "$FIRTH" sql --data-dir "$d" --format json -e "SELECT k, s FROM shop.notes WHERE k <= 5"
check_eq "$OUT" '{"k":1,"s":"a,b"}
{"k":2,"s":"say \"hi\""}
{"k":3,"s":"two\nlines"}
{"k":4,"s":""}
{"k":5,"s":null}' "JSON escapes"
firth_sql "$d" "SELECT k, s FROM shop.notes WHERE k = 3 OR k = 6"
check_contains "$OUT" '| 3 | two       +|
|   | lines      |' "a cell with a line break takes two lines, marked with +"
check_contains "$OUT" '| 6 | naïve 日本 |' "wide characters"

# ---- scripts: -f, -f -, piped stdin ------------------------------------------------------
cat >"$T/script.sql" <<'EOF'
-- a comment; with a semicolon
CREATE TABLE shop.s (a INT, b STRING);
/* a block comment; with one too */
INSERT INTO shop.s VALUES (1, 'x;y'), (2, '--not a comment');
SELECT b FROM shop.s WHERE a = 2;
EOF
run 0 "$FIRTH" sql --data-dir "$d" -f "$T/script.sql" --format csv
check_eq "$OUT" $'b\n--not a comment' "-f runs every statement"
run 0 "$FIRTH" sql --data-dir "$d" -f - --format csv <<<"SELECT a, b FROM shop.s WHERE a = 1;"
check_eq "$OUT" $'a,b\n1,x;y' "-f - reads stdin"
run 0 "$FIRTH" sql --data-dir "$d" --format csv <<<"SELECT a FROM shop.s WHERE b = 'x;y'"
check_eq "$OUT" $'a\n1' "piped stdin is a script"
run 1 "$FIRTH" sql --data-dir "$d" -f "$T/nope.sql"
check_contains "$ERR" "firth: error: " "-f of a missing file"
check_contains "$ERR" "nope.sql" "-f of a missing file names it"

# ---- errors: position, exit 1, stop at the first ------------------------------------------
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT id FROM shop.orders WHER id = 1"
check_contains "$ERR" "firth: error: line 1, column " "a syntax error names line and column"
printf 'SHOW DATABASES;\n\nSELECT id\n  FROM shop.orders\n  WHERE nope = 1;\n' >"$T/bad.sql"
run 1 "$FIRTH" sql --data-dir "$d" -f "$T/bad.sql"
check_contains "$ERR" "firth: error: line 5, column 9: " "a -f error counts lines in the file"
check_contains "$ERR" "nope" "the error names the unknown column"
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT nope FROM shop.orders"
check_contains "$ERR" "line 1, column 8" "unknown column position"
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT * FROM shop.nope"
check_contains "$ERR" "firth: error: line 1, column 15" "unknown table position"
check_contains "$ERR" "nope" "unknown table named"

run 1 "$FIRTH" sql --data-dir "$d" -e "CREATE DATABASE first_one;
    INSERT INTO shop.nope VALUES (1);
    CREATE DATABASE second_one"
check_contains "$ERR" "firth: error: line 2, column " "a failing second statement"
firth_sql "$d" "SHOW DATABASES"
check_not_contains "$OUT" "second_one" "statements after an error do not run"

# USE lasts for one invocation: the next one starts in "default".
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT * FROM orders"
check_contains "$ERR" "default" "a new session starts in database default"

# ---- the interactive prompt ----------------------------------------------------------------
if command -v script >/dev/null 2>&1; then
    export HOME=$T/home
    mkdir -p "$HOME"
    printf '%s\n' 'SELECT id' '  FROM shop.orders WHERE id = 1;' 'SELEC 1;' 'help' \
        'USE shop;' 'SELECT item FROM orders WHERE id = 2;' '\q' 'SELECT 42;' |
        script -qec "'$FIRTH' sql --data-dir '$d'" /dev/null >"$T/prompt.out" 2>&1 ||
        fail "the prompt exited with an error"
    p=$(tr -d '\r' <"$T/prompt.out")
    check_contains "$p" "(embedded). Statements end with ';'" "the greeting"
    check_contains "$p" "firth> SELECT id" "the prompt"
    check_contains "$p" "    ->   FROM shop.orders" "the continuation prompt"
    check_contains "$p" "|  1 |" "a statement runs at its ';'"
    check_contains "$p" "firth: error: line 1, column 1:" "an error at the prompt"
    check_contains "$p" "Type SQL statements ending with ';'" "help at the prompt"
    check_contains "$p" "| coffee |" "the prompt goes on after an error, with USE"
    check_not_contains "$p" "firth> SELECT 42" "\\q leaves"
    check_contains "$(cat "$HOME/.firth_history")" "USE" "history is kept in ~/.firth_history"
    # Ctrl-D (end of input) leaves too.
    printf 'SHOW DATABASES;\n' | script -qec "'$FIRTH' sql --data-dir '$d'" /dev/null \
        >"$T/prompt2.out" 2>&1 || fail "Ctrl-D did not leave cleanly"
    check_contains "$(cat "$T/prompt2.out")" "shop" "a statement before Ctrl-D"
    # Ctrl-C drops the statement being typed and the prompt goes on. Each key is sent once
    # the prompt has shown what it answers to, so that no timing is assumed.
    wait_for() { # wait_for TEXT FILE
        local deadline=$((SECONDS + 30))
        until tr -d '\r' <"$2" | grep -qF -- "$1"; do
            [ "$SECONDS" -lt "$deadline" ] || fail "the prompt never showed [$1]: $(cat "$2")"
            sleep 0.05
        done
    }
    mkfifo "$T/keys"
    script -qec "'$FIRTH' sql --data-dir '$d'" /dev/null <"$T/keys" >"$T/prompt3.out" 2>&1 &
    prompt_pid=$!
    exec 4>"$T/keys"
    wait_for "firth> " "$T/prompt3.out"
    printf 'SELECT id FROM\n' >&4
    wait_for "    -> " "$T/prompt3.out"
    printf '\003' >&4
    wait_for "^C" "$T/prompt3.out"
    printf 'SELECT item FROM shop.orders WHERE id = 3;\n\\q\n' >&4
    exec 4>&-
    wait "$prompt_pid" || fail "the prompt did not survive Ctrl-C: $(cat "$T/prompt3.out")"
    p=$(tr -d '\r' <"$T/prompt3.out")
    check_contains "$p" "| water |" "after Ctrl-C the next statement runs alone"
else
    echo "sql_basics: script(1) not found; the prompt is not tested"
fi
