#!/usr/bin/env bash
# Runs firth's benchmarks: `bench/run.sh BUILD_DIR` (what `make bench` does).
#
# Configures BUILD_DIR (RelWithDebInfo) when it is not configured yet, builds the benchmark
# programs in it if needed, runs each with a scratch directory under BUILD_DIR/bench/tmp
# (removed at the end, whatever happens), writes the results as JSON to BUILD_DIR/bench/
# (append, projection, net_produce, redis_streams, net_fetch, postgres, net_pk, lake_tier,
# lake_read and summary)
# and prints the figures and each target's verdict. A target that is missed is reported as
# MISS and does not fail the run; a benchmark that cannot run (an error, a crash, a peer
# that cannot start) does, after the others have run.
#
# The network benchmarks start a `firth server` (log.flush = append) on an ephemeral
# loopback port with its data dir in the scratch dir, and the peers they compare it with,
# each only for its own benchmark: Redis (redis-server, no persistence) and PostgreSQL
# (initdb into the scratch dir, fsync and synchronous_commit on; as the postgres user when
# run as root). `scripts/install-deps.sh --bench` installs them.
#
# Environment: BENCH_APPEND_ARGS, BENCH_PROJECTION_ARGS, BENCH_NET_PRODUCE_ARGS,
# BENCH_NET_FETCH_ARGS, BENCH_NET_PK_ARGS, BENCH_LAKE_TIER_ARGS, BENCH_LAKE_READ_ARGS add
# options to the programs (e.g.
# BENCH_APPEND_ARGS="--mb 64 --reps 1" for a quick look); BENCH_FETCH_ROWS and BENCH_PK_KEYS
# size the data firth and its peer both hold; BENCH_PK_ROUNDS (3) is how many rounds of
# PostgreSQL then firth net_pk runs; BENCH_ONLY="net_fetch net_pk" runs only the
# benchmarks named (append projection net_produce net_fetch net_pk lake_tier lake_read). See
# docs/BENCHMARKS.md.
set -uo pipefail

BUILD=${1:-build}
BIN=$BUILD/bin
OUT=$BUILD/bench
TMP=$OUT/tmp
FETCH_ROWS=${BENCH_FETCH_ROWS:-131072}
PK_KEYS=${BENCH_PK_KEYS:-65536}
PK_ROUNDS=${BENCH_PK_ROUNDS:-3}
ONLY=${BENCH_ONLY:-append projection net_produce net_fetch net_pk lake_tier lake_read}
if ! [[ $PK_ROUNDS =~ ^[0-9]+$ ]] || [ "$PK_ROUNDS" -lt 1 ] || [ "$PK_ROUNDS" -gt 16 ]; then
    echo "bench: BENCH_PK_ROUNDS must be a number from 1 to 16, not '$PK_ROUNDS'" >&2
    exit 2
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null ||
        { echo "bench: cannot configure $BUILD" >&2; exit 1; }
fi
# Absolute paths: PostgreSQL resolves relative ones against its data dir.
BUILD=$(cd "$BUILD" && pwd)
BIN=$BUILD/bin
OUT=$BUILD/bench
TMP=$OUT/tmp
# A build dir configured before the peers' client libraries were installed looks again.
for lib in HIREDIS:hiredis LIBPQ:libpq; do
    if ! grep -q "^${lib%%:*}_FOUND:INTERNAL=1" "$BUILD/CMakeCache.txt" &&
        pkg-config --exists "${lib#*:}" 2>/dev/null; then
        cmake "$BUILD" >/dev/null || { echo "bench: cannot configure $BUILD" >&2; exit 1; }
        break
    fi
done
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
sanitize=$(sed -n 's/^FIRTH_SANITIZE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
case "$build_type:$sanitize" in
    Release:OFF | RelWithDebInfo:OFF | Release: | RelWithDebInfo:) ;;
    *) echo "bench: warning: $BUILD is a $build_type build (sanitizers: ${sanitize:-OFF});" \
        "its figures say little about firth's speed" >&2 ;;
esac

wanted() { case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

rm -rf "$TMP"
mkdir -p "$TMP"

# ---- processes started here, stopped at exit whatever happens ---------------------------
server_pid=""
redis_pid=""
pg_data=""
pg_as=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid"; fi
    if [ -n "$redis_pid" ]; then kill -TERM "$redis_pid" 2>/dev/null; wait "$redis_pid"; fi
    if [ -n "$pg_data" ]; then
        "${pg_as[@]}" "$PG_BIN/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null 2>&1
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

targets=(bench_append bench_projection bench_report bench_net_produce bench_net_fetch bench_net_pk
    bench_lake_tier bench_lake_read)
grep -q "^HIREDIS_FOUND:INTERNAL=1" "$BUILD/CMakeCache.txt" && targets+=(peer_redis_streams)
grep -q "^LIBPQ_FOUND:INTERNAL=1" "$BUILD/CMakeCache.txt" && targets+=(peer_postgres)
if ! cmake --build "$BUILD" --target firth "${targets[@]}" -j "${JOBS:-2}" >"$TMP/build.log" 2>&1
then
    cat "$TMP/build.log" >&2
    echo "bench: building the benchmarks in $BUILD failed" >&2
    exit 1
fi
results=(append projection net_produce redis_streams net_fetch postgres net_pk lake_tier
    lake_read)
for r in "${results[@]}"; do rm -f "$OUT/$r.json"; done
rm -f "$OUT"/postgres_r*.json "$OUT"/net_pk_r*.json
rm -f "$OUT/summary.json"

status=0
run() {
    local name=$1
    shift
    echo
    if ! "$BIN/bench_$name" --dir "$TMP/$name" --out "$OUT/$name.json" "$@"; then
        echo "bench: bench_$name failed" >&2
        status=1
    fi
    rm -rf "${TMP:?}/$name"
}

# A free TCP port on loopback (nothing answers there now).
free_port() {
    local p
    for _ in $(seq 50); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}

# Starts `firth server` on ephemeral ports; sets server_addr and server_http (its /metrics).
start_server() {
    mkdir -p "$TMP/server"
    "$BIN/firth" server --data-dir "$TMP/server/data" --listen 127.0.0.1:0 \
        --http-listen 127.0.0.1:0 \
        --ready-file "$TMP/server/ready" --log.level warn --log.flush append \
        2>"$TMP/server/log" &
    server_pid=$!
    for _ in $(seq 100); do
        [ -s "$TMP/server/ready" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    server_addr=$(sed -n 's/.*"native": *"\([^"]*\)".*/\1/p' "$TMP/server/ready" 2>/dev/null)
    server_http=$(sed -n 's/.*"http": *"\([^"]*\)".*/\1/p' "$TMP/server/ready" 2>/dev/null)
    if [ -z "$server_addr" ]; then
        echo "bench: firth server did not start:" >&2
        cat "$TMP/server/log" >&2
        server_pid=""
        return 1
    fi
}

# Starts redis-server without persistence on a free loopback port; sets redis_port.
start_redis() {
    command -v redis-server >/dev/null || { echo "bench: redis-server is not installed" \
        "(scripts/install-deps.sh --bench)" >&2; return 1; }
    redis_port=$(free_port) || return 1
    mkdir -p "$TMP/redis"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$TMP/redis" --daemonize no >"$TMP/redis/log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ] && return 0
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench: redis-server did not start:" >&2
    cat "$TMP/redis/log" >&2
    redis_pid=""
    return 1
}

stop_redis() {
    [ -n "$redis_pid" ] && kill -TERM "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    redis_pid=""
}

# initdb and pg_ctl start on a free loopback port, durable commits; sets pg_port. PostgreSQL
# refuses to run as root: then its dir belongs to the postgres user, which runs it.
start_postgres() {
    PG_BIN=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -1)
    if [ ! -x "$PG_BIN/initdb" ] && command -v initdb >/dev/null; then
        PG_BIN=$(dirname "$(readlink -f "$(command -v initdb)")")
    fi
    [ -x "$PG_BIN/initdb" ] || { echo "bench: PostgreSQL is not installed" \
        "(scripts/install-deps.sh --bench)" >&2; return 1; }
    pg_port=$(free_port) || return 1
    local dir=$TMP/pg
    mkdir -p "$dir"
    pg_as=()
    if [ "$(id -u)" -eq 0 ]; then
        if ! chown postgres "$dir"; then
            echo "bench: cannot hand $dir to the postgres user" >&2
            return 1
        fi
        pg_as=(runuser -u postgres --)
    fi
    if ! "${pg_as[@]}" "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync \
        >"$dir/initdb.log" 2>&1; then
        echo "bench: initdb failed:" >&2
        cat "$dir/initdb.log" >&2
        return 1
    fi
    pg_data=$dir/data
    if ! "${pg_as[@]}" "$PG_BIN/pg_ctl" -D "$pg_data" -l "$dir/log" -w -t 60 -o \
        "-p $pg_port -k $dir -c listen_addresses=127.0.0.1 -c synchronous_commit=on -c fsync=on" \
        start >/dev/null; then
        echo "bench: PostgreSQL did not start:" >&2
        cat "$dir/log" >&2
        pg_data=""
        return 1
    fi
}

# Stops PostgreSQL and removes its dir: the next start is a fresh instance.
stop_postgres() {
    [ -n "$pg_data" ] && "${pg_as[@]}" "$PG_BIN/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null
    pg_data=""
    rm -rf "${TMP:?}/pg"
}

# shellcheck disable=SC2086  # the extra arguments are meant to be split
wanted append && run append ${BENCH_APPEND_ARGS:-}
# shellcheck disable=SC2086
wanted projection && run projection ${BENCH_PROJECTION_ARGS:-}
# Tiering beside DuckDB (node and the interop tests' @duckdb/node-api: scripts/install-deps.sh).
# shellcheck disable=SC2086
wanted lake_tier && run lake_tier --peer-script "$ROOT/bench/peer_duckdb_write.mjs" \
    ${BENCH_LAKE_TIER_ARGS:-}
# Union reads beside DuckDB reading the same Parquet files (the same node install).
# shellcheck disable=SC2086
wanted lake_read && run lake_read --peer-script "$ROOT/bench/peer_duckdb_read.mjs" \
    ${BENCH_LAKE_READ_ARGS:-}

if wanted net_produce || wanted net_fetch || wanted net_pk; then
    if ! start_server; then
        status=1
    else
        echo
        echo "firth server on $server_addr (pid $server_pid, data in $TMP/server/data)"
        if wanted net_produce; then
            # The scratch dir of dd is beside the server's data dir: the same file system.
            # shellcheck disable=SC2086
            run net_produce --connect "$server_addr" --server-pid "$server_pid" \
                --server-http "$server_http" \
                ${BENCH_NET_PRODUCE_ARGS:-}
        fi
        if wanted net_fetch; then
            echo
            if start_redis; then
                "$BIN/peer_redis_streams" --port "$redis_port" --server-pid "$redis_pid" \
                    --rows "$FETCH_ROWS" --out "$OUT/redis_streams.json" ||
                    { echo "bench: peer_redis_streams failed" >&2; status=1; }
                stop_redis
            else
                status=1
            fi
            echo
            # shellcheck disable=SC2086
            "$BIN/bench_net_fetch" --connect "$server_addr" --server-pid "$server_pid" \
                --rows "$FETCH_ROWS" --peer "$OUT/redis_streams.json" \
                --out "$OUT/net_fetch.json" ${BENCH_NET_FETCH_ARGS:-} ||
                { echo "bench: bench_net_fetch failed" >&2; status=1; }
        fi
        if wanted net_pk; then
            # Rounds of PostgreSQL (a fresh instance) then firth; the verdicts take the
            # median of the rounds' ratios (bench_net_pk --combine).
            rounds=()
            for r in $(seq "$PK_ROUNDS"); do
                echo
                echo "net_pk round $r of $PK_ROUNDS"
                if start_postgres; then
                    "$BIN/peer_postgres" --keys "$PK_KEYS" --out "$OUT/postgres_r$r.json" \
                        --conninfo "host=127.0.0.1 port=$pg_port dbname=postgres user=postgres" ||
                        { echo "bench: peer_postgres failed" >&2; status=1; }
                    stop_postgres
                else
                    status=1
                fi
                echo
                # shellcheck disable=SC2086
                if "$BIN/bench_net_pk" --connect "$server_addr" --server-pid "$server_pid" \
                    --keys "$PK_KEYS" --peer "$OUT/postgres_r$r.json" \
                    --out "$OUT/net_pk_r$r.json" ${BENCH_NET_PK_ARGS:-}; then
                    rounds+=("$OUT/net_pk_r$r.json")
                else
                    echo "bench: bench_net_pk failed" >&2
                    status=1
                fi
            done
            if [ ${#rounds[@]} -gt 0 ]; then
                echo
                "$BIN/bench_net_pk" --combine --out "$OUT/net_pk.json" \
                    --peer-out "$OUT/postgres.json" "${rounds[@]}" || status=1
            fi
        fi
    fi
fi

files=()
for r in "${results[@]}"; do
    case $r in
        redis_streams) wanted net_fetch || continue ;;
        postgres) wanted net_pk || continue ;;
        *) wanted "$r" || continue ;;
    esac
    files+=("$OUT/$r.json")
done
"$BIN/bench_report" --out "$OUT/summary.json" "${files[@]}" || status=1
exit $status
