#!/usr/bin/env bash
# The command line itself: --help, --version, `firth help CMD`, `firth CMD --help`, that the
# help texts name every subcommand and every option the parser knows (read from the
# sources, so a new flag without help fails here), and usage errors (exit 2, "see firth").
source "$(dirname "$0")/lib/e2e_common.bash"

run 0 "$FIRTH" --version
check_eq "$OUT" "firth 0.1.0" "--version"
run 0 "$FIRTH" -V
check_eq "$OUT" "firth 0.1.0" "-V"

run 0 "$FIRTH" --help
overview=$OUT
for cmd in sql produce consume server help; do
    check_contains "$overview" "  $cmd " "the overview lists $cmd"
done
check_contains "$overview" "--data-dir" "the overview explains --data-dir"
check_contains "$overview" "Exit status: 0 success, 1 the operation failed, 2 a usage error" \
    "the overview documents the exit codes"
run 0 "$FIRTH" help
check_eq "$OUT" "$overview" "firth help is the overview"
run 0 "$FIRTH" -h
check_eq "$OUT" "$overview" "-h is the overview"

# Every long option of every subcommand, as declared in its cli_opt table, is in its help,
# and `firth help CMD` and `firth CMD --help` print the same text.
for cmd in sql produce consume server; do
    run 0 "$FIRTH" "$cmd" --help
    text=$OUT
    run 0 "$FIRTH" help "$cmd"
    check_eq "$OUT" "$text" "firth help $cmd equals firth $cmd --help"
    run 0 "$FIRTH" "$cmd" -h
    check_eq "$OUT" "$text" "firth $cmd -h"
    check_contains "$text" "Usage: firth $cmd" "$cmd help has a usage line"
    check_contains "$text" "Examples:" "$cmd help has examples"
    check_contains "$text" "-h, --help" "$cmd help documents --help"
    opts=$(grep -o '{"[a-z-]*", ' "$E2E_SRC/src/cli/cli_$cmd.c" | sed 's/{"\([a-z-]*\)", /\1/')
    [ -n "$opts" ] || fail "found no options of $cmd in src/cli/cli_$cmd.c"
    for o in $opts; do
        check_contains "$text" "--$o" "$cmd help documents --$o"
    done
done
run 0 "$FIRTH" help help
check_contains "$OUT" "Usage: firth help [COMMAND]" "help of help"

# Formats and positions named in the help texts.
run 0 "$FIRTH" sql --help
for w in table csv json "~/.firth_history" "\\q" "line 1, column"; do
    check_contains "$OUT" "$w" "sql help mentions $w"
done
run 0 "$FIRTH" consume --help
for w in earliest latest "offset:N" "timestamp:MS" arrow zstd lz4_frame none _bucket _offset; do
    check_contains "$OUT" "$w" "consume help mentions $w"
done
run 0 "$FIRTH" produce --help
for w in "acknowledged lines A-B (N rows)" "stdin line 17" base64 "1000"; do
    check_contains "$OUT" "$w" "produce help mentions $w"
done

# Usage errors: exit 2, a clear message, and where to look.
run 2 "$FIRTH"
check_contains "$ERR" "Usage: firth COMMAND" "no arguments prints the usage to stderr"
run 2 "$FIRTH" frobnicate
check_contains "$ERR" "firth: error: unknown command 'frobnicate'" "unknown command"
check_contains "$ERR" "see firth --help" "unknown command says where to look"
run 2 "$FIRTH" --frobnicate
check_contains "$ERR" "unknown option '--frobnicate'" "unknown global option"
check_contains "$ERR" "see firth --help" "unknown global option says where to look"
run 2 "$FIRTH" help frobnicate
check_contains "$ERR" "unknown command 'frobnicate'" "help of an unknown command"
run 2 "$FIRTH" server --frobnicate x
check_contains "$ERR" "firth: error: firth server: unknown option '--frobnicate'" \
    "server: unknown option"
run 2 "$FIRTH" server --server.inflight.max lots
check_contains "$ERR" "server.inflight.max" "server: a bad value names its key"

d=$T/data
for cmd in sql produce consume; do
    run 2 "$FIRTH" "$cmd" --data-dir "$d" --frobnicate
    check_contains "$ERR" "firth: error: firth $cmd: unknown option '--frobnicate'" \
        "$cmd: unknown option"
    check_contains "$ERR" "see firth $cmd --help" "$cmd: unknown option says where to look"
    check_contains "$ERR" "firth --help" "$cmd: unknown option names firth --help"
    run 2 "$FIRTH" "$cmd" --data-dir "$d" stray
    check_contains "$ERR" "unexpected argument 'stray'" "$cmd: positional argument"
    run 2 "$FIRTH" "$cmd" --data-dir
    check_contains "$ERR" "option '--data-dir' needs a value" "$cmd: missing value"
    run 2 "$FIRTH" "$cmd" --table db.t -e x
    check_contains "$ERR" "firth $cmd:" "$cmd: a usage error names the command"
done
run 2 "$FIRTH" sql -e "SHOW DATABASES"
check_contains "$ERR" "--data-dir DIR or --connect HOST:PORT is required" "sql without --data-dir"
run 2 "$FIRTH" sql --data-dir "$d" --connect 127.0.0.1:9123 -e "SHOW DATABASES"
check_contains "$ERR" "not both" "sql with --data-dir and --connect"
run 2 "$FIRTH" consume --connect "firth://127.0.0.1:9123" --table a.b
check_contains "$ERR" "--connect takes HOST:PORT" "consume --connect with a URL"
run 2 "$FIRTH" produce --connect 127.0.0.1:9123 --table a.b --log.flush none
check_contains "$ERR" "a server reads its own configuration" "produce --connect with a config key"
run 1 "$FIRTH" consume --connect 127.0.0.1:1 --table a.b
check_contains "$ERR" "cannot connect to 127.0.0.1:1" "consume --connect to nothing"
run 2 "$FIRTH" sql --data-dir "$d" -e "SHOW DATABASES" -f x.sql
check_contains "$ERR" "give -e or -f, not both" "-e with -f"
run 2 "$FIRTH" sql --data-dir "$d" --format xml -e "SHOW DATABASES"
check_contains "$ERR" "--format must be one of table, csv, json, not 'xml'" "sql --format"
run 2 "$FIRTH" produce --data-dir "$d"
check_contains "$ERR" "--table DB.TABLE is required" "produce without --table"
run 2 "$FIRTH" produce --data-dir "$d" --table a.b --format table
check_contains "$ERR" "--format must be one of csv, json, arrow, not 'table'" "produce --format"
run 2 "$FIRTH" produce --data-dir "$d" --table a.b --batch-rows 0
check_contains "$ERR" "--batch-rows must be an integer from 1 to 1000000, not '0'" \
    "produce --batch-rows 0"
run 2 "$FIRTH" produce --data-dir "$d" --table a.b --batch-rows 12x
check_contains "$ERR" "not '12x'" "produce --batch-rows 12x"
run 2 "$FIRTH" produce --data-dir "$d" --table a.b --verbose=yes
check_contains "$ERR" "option '--verbose' takes no value" "a flag with a value"
run 2 "$FIRTH" consume --data-dir "$d"
check_contains "$ERR" "--table DB.TABLE is required" "consume without --table"
for bad in first offset: offset:-1 offset:x timestamp: timestamp:1.5; do
    run 2 "$FIRTH" consume --data-dir "$d" --table a.b --from "$bad"
    check_contains "$ERR" "--from must be earliest, latest, offset:N or timestamp:MS" \
        "consume --from $bad"
done
run 2 "$FIRTH" consume --data-dir "$d" --table a.b --max-records -1
check_contains "$ERR" "--max-records must be an integer" "consume --max-records -1"
run 2 "$FIRTH" consume --data-dir "$d" --table a.b --format parquet
check_contains "$ERR" "--format must be one of csv, json, arrow, not 'parquet'" "consume --format"
run 2 "$FIRTH" consume --data-dir "$d" --table a.b --arrow-compression zstd
check_contains "$ERR" "--arrow-compression needs --format arrow" "compression without arrow"
run 2 "$FIRTH" consume --data-dir "$d" --table a.b --format arrow --arrow-compression gzip
check_contains "$ERR" "--arrow-compression must be none, zstd or lz4_frame" "bad compression"

# Usage errors are found before anything is created.
[ ! -e "$d" ] || fail "a usage error created the data dir $d"

# Options as --name=value and -eSQL.
run 0 "$FIRTH" sql --data-dir="$d" --format=csv -e "SHOW DATABASES"
check_eq "$OUT" $'database name\ndefault' "--name=value options"
run 0 "$FIRTH" sql --data-dir "$d" "-eSHOW DATABASES" --format csv
check_eq "$OUT" $'database name\ndefault' "-eSQL"
