#!/usr/bin/env bash
# Every type, with its extreme and awkward values and NULL, through every text path:
# INSERT then SELECT (JSON), produce NDJSON then consume JSON, consume CSV then produce CSV
# then consume JSON. All must give the same, exactly expected, JSON lines. Then the input
# forms that produce accepts besides the canonical ones.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
cols="k INT NOT NULL, b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, f FLOAT,
    d DOUBLE, dc DECIMAL(38, 10), dm DECIMAL(5, 2), c CHAR(5), vc VARCHAR(10), s STRING,
    y BYTES, dt DATE, t0 TIME(0), t3 TIME(3), t6 TIME(6), t9 TIME(9), ts0 TIMESTAMP(0),
    ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), ltz TIMESTAMP_LTZ(3)"
firth_sql "$d" "CREATE DATABASE t;
    CREATE TABLE t.by_sql ($cols); CREATE TABLE t.by_json ($cols); CREATE TABLE t.by_csv ($cols);
    CREATE TABLE t.by_arrow ($cols); CREATE TABLE t.by_arrow_z ($cols)"

firth_sql "$d" "INSERT INTO t.by_sql VALUES
  (1, true, -128, -32768, -2147483648, -9223372036854775808, 1.5, 0.1,
   1234567890123456789012345678.0123456789, -999.99, 'ab', 'hello', 'ünï ☃ \"q\", x',
   X'00ff10', DATE '1969-12-31', TIME '00:00:00', TIME '23:59:59.999',
   TIME '12:34:56.123456', TIME '12:34:56.123456789', TIMESTAMP '1900-01-01 00:00:00',
   TIMESTAMP '2026-01-31 10:00:00.123', TIMESTAMP '2026-01-31 10:00:00.123456',
   TIMESTAMP '2262-04-11 23:47:16.854775807', TIMESTAMP_LTZ '2026-01-31 10:00:00.5Z'),
  (2, false, 127, 32767, 2147483647, 9223372036854775807, -3.4028235e38, 1e308,
   -0.0000000001, 0, 'abcde', '', 'two
lines', X'', DATE '9999-12-31', TIME '23:59:59', NULL, NULL, NULL,
   TIMESTAMP '1970-01-01 00:00:00', NULL, NULL, NULL, TIMESTAMP_LTZ '1969-12-31 23:59:59.999Z'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
check_eq "$OUT" "3 rows inserted" "insert of every type"

expected='{"k":1,"b":true,"ti":-128,"si":-32768,"i":-2147483648,"bi":-9223372036854775808,"f":1.5,"d":0.1,"dc":"1234567890123456789012345678.0123456789","dm":"-999.99","c":"ab","vc":"hello","s":"ünï ☃ \"q\", x","y":"AP8Q","dt":"1969-12-31","t0":"00:00:00","t3":"23:59:59.999","t6":"12:34:56.123456","t9":"12:34:56.123456789","ts0":"1900-01-01 00:00:00","ts3":"2026-01-31 10:00:00.123","ts6":"2026-01-31 10:00:00.123456","ts9":"2262-04-11 23:47:16.854775807","ltz":"2026-01-31 10:00:00.500Z"}
{"k":2,"b":false,"ti":127,"si":32767,"i":2147483647,"bi":9223372036854775807,"f":-3.4028235e+38,"d":1e+308,"dc":"-0.0000000001","dm":"0.00","c":"abcde","vc":"","s":"two\nlines","y":"","dt":"9999-12-31","t0":"23:59:59","t3":null,"t6":null,"t9":null,"ts0":"1970-01-01 00:00:00","ts3":null,"ts6":null,"ts9":null,"ltz":"1969-12-31 23:59:59.999Z"}
{"k":3,"b":null,"ti":null,"si":null,"i":null,"bi":null,"f":null,"d":null,"dc":null,"dm":null,"c":null,"vc":null,"s":null,"y":null,"dt":null,"t0":null,"t3":null,"t6":null,"t9":null,"ts0":null,"ts3":null,"ts6":null,"ts9":null,"ltz":null}'

run 0 "$FIRTH" sql --data-dir "$d" --format json -e "SELECT * FROM t.by_sql"
check_eq "$OUT" "$expected" "INSERT then SELECT as JSON"
run 0 "$FIRTH" consume --data-dir "$d" --table t.by_sql
check_eq "$OUT" "$expected" "INSERT then consume as JSON"

# What consume prints, produce reads back unchanged.
run 0 "$FIRTH" produce --data-dir "$d" --table t.by_json <<<"$expected"
check_eq "$ERR" "3 rows written to t.by_json" "produce the JSON lines"
run 0 "$FIRTH" consume --data-dir "$d" --table t.by_json
check_eq "$OUT" "$expected" "produce NDJSON then consume JSON"

run 0 "$FIRTH" consume --data-dir "$d" --table t.by_sql --format csv
csv=$OUT
check_eq "$(printf '%s\n' "$csv" | head -1)" \
    "k,b,ti,si,i,bi,f,d,dc,dm,c,vc,s,y,dt,t0,t3,t6,t9,ts0,ts3,ts6,ts9,ltz" "CSV header"
check_contains "$csv" ',ab,hello,"ünï ☃ ""q"", x",\x00ff10,1969-12-31,' "CSV quoting and bytes"
check_contains "$csv" ',abcde,"","two
lines",\x,9999-12-31,' "CSV: empty string, newline, empty bytes"
check_contains "$csv" "
3,,,,,,,,,,,,,,,,,,,,,,," "CSV: NULLs are empty fields"
run 0 "$FIRTH" produce --data-dir "$d" --table t.by_csv --format csv <<<"$csv"
check_eq "$ERR" "3 rows written to t.by_csv" "produce the CSV"
run 0 "$FIRTH" consume --data-dir "$d" --table t.by_csv
check_eq "$OUT" "$expected" "consume CSV, produce CSV, consume JSON"

# And through Arrow: consume --format arrow, produce --format arrow, uncompressed and ZSTD.
"$FIRTH" consume --data-dir "$d" --table t.by_sql --format arrow >"$T/types.arrows"
run 0 "$FIRTH" produce --data-dir "$d" --table t.by_arrow --format arrow --verbose <"$T/types.arrows"
check_eq "$ERR" "acknowledged records 1-3 (3 rows)
3 rows written to t.by_arrow" "produce an Arrow stream"
run 0 "$FIRTH" consume --data-dir "$d" --table t.by_arrow
check_eq "$OUT" "$expected" "consume Arrow, produce Arrow, consume JSON"
"$FIRTH" consume --data-dir "$d" --table t.by_sql --format arrow --arrow-compression zstd >"$T/types.z.arrows"
run 0 "$FIRTH" produce --data-dir "$d" --table t.by_arrow_z --format arrow --batch-rows 2 --verbose <"$T/types.z.arrows"
check_eq "$ERR" "acknowledged records 1-2 (2 rows)
acknowledged records 3-3 (1 row)
3 rows written to t.by_arrow_z" "a compressed Arrow stream in batches of 2"
run 0 "$FIRTH" consume --data-dir "$d" --table t.by_arrow_z
check_eq "$OUT" "$expected" "the same through a ZSTD stream"

# Columns matched by name, in any order, with conversion where types differ.
firth_sql "$d" "CREATE TABLE t.wide (s STRING, k BIGINT, dm DECIMAL(20, 4), ts3 TIMESTAMP(6));
    CREATE TABLE t.narrow (K INT NOT NULL, TS3 TIMESTAMP(3), DM DECIMAL(6, 2), S VARCHAR(12))"
firth_sql "$d" "INSERT INTO t.wide VALUES ('a', 1, 12.5, TIMESTAMP '2026-01-31 10:00:00.123456'),
    (NULL, 2, NULL, NULL)"
"$FIRTH" consume --data-dir "$d" --table t.wide --format arrow >"$T/wide.arrows"
run 0 "$FIRTH" produce --data-dir "$d" --table t.narrow --format arrow <"$T/wide.arrows"
run 0 "$FIRTH" consume --data-dir "$d" --table t.narrow
check_eq "$OUT" '{"K":1,"TS3":"2026-01-31 10:00:00.123","DM":"12.50","S":"a"}
{"K":2,"TS3":null,"DM":null,"S":null}' "Arrow columns by name, converted to the table's types"

# The table form of the same values.
run 0 "$FIRTH" sql --data-dir "$d" -e "SELECT k, dc, y, ltz FROM t.by_sql WHERE k = 1"
check_contains "$OUT" "| 1 | 1234567890123456789012345678.0123456789 | \\x00ff10 | 2026-01-31 10:00:00.500Z |" \
    "table form"

# ---- other input forms produce accepts ----------------------------------------------------
firth_sql "$d" "CREATE TABLE t.forms (k INT, b BOOLEAN, i INT, d DOUBLE, dm DECIMAL(5, 2),
    s STRING, ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3))"
run 0 "$FIRTH" produce --data-dir "$d" --table t.forms <<'EOF'
{"k": 1, "b": "true", "i": "42", "d": "NaN", "dm": "1.5", "s": "\u00fc\ud83d\ude00\t\/", "ts": "2026-01-31T10:00:00.1", "ltz": "2026-01-31 10:00:00Z"}
  {"K": 2, "B": false, "I": -0, "D": "Infinity", "DM": 12, "S": 7, "TS": "2026-01-31 10:00:00"}  
{"k": 3, "d": "-Infinity", "s": true, "dm": 1e2}
{"k": 4, "d": 1.25e-3, "dm": "-0.005", "s": null}

{}
EOF
check_eq "$ERR" "5 rows written to t.forms" "produce of alternative forms"
run 0 "$FIRTH" consume --data-dir "$d" --table t.forms
check_eq "$OUT" '{"k":1,"b":true,"i":42,"d":"NaN","dm":"1.50","s":"ü😀\t/","ts":"2026-01-31 10:00:00.100","ltz":"2026-01-31 10:00:00.000Z"}
{"k":2,"b":false,"i":0,"d":"Infinity","dm":"12.00","s":"7","ts":"2026-01-31 10:00:00.000","ltz":null}
{"k":3,"b":null,"i":null,"d":"-Infinity","dm":"100.00","s":"true","ts":null,"ltz":null}
{"k":4,"b":null,"i":null,"d":0.00125,"dm":"-0.01","s":null,"ts":null,"ltz":null}
{"k":null,"b":null,"i":null,"d":null,"dm":null,"s":null,"ts":null,"ltz":null}' \
    "strings parsed by type, case-insensitive keys, missing keys NULL, blank lines skipped"
