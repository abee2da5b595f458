/* server_metrics.c — the server's counters and their Prometheus text exposition (format
 * 0.0.4): requests, errors and latency per api, bytes in and out, connections, parked
 * fetches, per-table append and fetch counters, and, read from the engine at scrape time,
 * every bucket's log offsets and size, each table's log fsync durations, every open KV
 * store's size, and the tiering lag of every lake-enabled table.
 *
 * Every counter is an atomic updated without a lock by whichever thread does the work; a
 * table's counters live in a slot claimed once (by compare-and-swap) and never freed, so
 * the hot path finds them with a few loads. A scrape reads the counters one by one: the
 * exposition is not a snapshot of one instant, which Prometheus does not need. */
#include "server/server_int.h"

#include <inttypes.h>
#include <sched.h>

static const int64_t LATENCY_BOUNDS_US[SRV_LATENCY_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000,
};

void srv_metrics_init(srv_metrics *m)
{
    /* The struct is zeroed by calloc: atomics of integer type start at 0 that way. */
    m->started_ms = fr_now_ms();
}

void srv_metrics_request(srv_metrics *m, int api, bool failed, int64_t latency_ns)
{
    srv_api_metrics *a = &m->api[api];
    atomic_fetch_add_explicit(&a->requests, 1, memory_order_relaxed);
    if (failed) atomic_fetch_add_explicit(&a->errors, 1, memory_order_relaxed);
    int64_t us = latency_ns > 0 ? latency_ns / 1000 : 0;
    atomic_fetch_add_explicit(&a->latency_us_sum, (uint64_t)us, memory_order_relaxed);
    int b = 0;
    while (b < SRV_LATENCY_BUCKETS && us > LATENCY_BOUNDS_US[b]) b++;
    atomic_fetch_add_explicit(&a->latency[b], 1, memory_order_relaxed);
}

srv_table_metrics *srv_metrics_table(srv_metrics *m, fr_table *t)
{
    int64_t id = fr_table_id(t);
    size_t h = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 32) % SRV_TABLE_SLOTS;
    for (size_t probe = 0; probe < SRV_TABLE_SLOTS; probe++) {
        srv_table_metrics *s = &m->tables[(h + probe) % SRV_TABLE_SLOTS];
        for (;;) {
            int st = atomic_load_explicit(&s->state, memory_order_acquire);
            if (st == 2) {
                if (s->table_id == id) return s;
                break;
            }
            if (st == 1) { /* another thread fills it in: a few instructions away */
                sched_yield();
                continue;
            }
            int expected = 0;
            if (atomic_compare_exchange_strong(&s->state, &expected, 1)) {
                s->table_id = id;
                snprintf(s->name, sizeof s->name, "%s\"%s", fr_table_db(t), fr_table_name(t));
                atomic_store_explicit(&s->state, 2, memory_order_release);
                return s;
            }
        }
    }
    return NULL;
}

/* ---- exposition ------------------------------------------------------------------------ */

#define P(...) FR_TRY(fr_buf_printf(out, err, __VA_ARGS__))

static int header(fr_buf *out, const char *name, const char *type, const char *help,
                  fr_error *err)
{
    P("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    return FR_OK;
}

static uint64_t load(atomic_uint_fast64_t *a)
{
    return (uint64_t)atomic_load_explicit(a, memory_order_relaxed);
}

static int render_apis(const srv_metrics *cm, fr_buf *out, fr_error *err)
{
    srv_metrics *m = (srv_metrics *)cm;
    FR_TRY(header(out, "firth_requests_total", "counter", "Requests answered, per api.", err));
    for (int k = 0; k <= FR_RPC_API_COUNT; k++) {
        const char *name = k < FR_RPC_API_COUNT ? fr_rpc_api_name(k) : "unknown";
        P("firth_requests_total{api=\"%s\"} %" PRIu64 "\n", name, load(&m->api[k].requests));
    }
    FR_TRY(header(out, "firth_request_errors_total", "counter",
                  "Requests answered with an ERROR frame, per api.", err));
    for (int k = 0; k <= FR_RPC_API_COUNT; k++) {
        const char *name = k < FR_RPC_API_COUNT ? fr_rpc_api_name(k) : "unknown";
        P("firth_request_errors_total{api=\"%s\"} %" PRIu64 "\n", name, load(&m->api[k].errors));
    }
    FR_TRY(header(out, "firth_request_duration_seconds", "histogram",
                  "Time from reading a request to handing its response to the socket.", err));
    for (int k = 0; k <= FR_RPC_API_COUNT; k++) {
        const char *name = k < FR_RPC_API_COUNT ? fr_rpc_api_name(k) : "unknown";
        srv_api_metrics *a = &m->api[k];
        uint64_t cum = 0;
        for (int b = 0; b < SRV_LATENCY_BUCKETS; b++) {
            cum += load(&a->latency[b]);
            P("firth_request_duration_seconds_bucket{api=\"%s\",le=\"%g\"} %" PRIu64 "\n",
              name, (double)LATENCY_BOUNDS_US[b] / 1e6, cum);
        }
        cum += load(&a->latency[SRV_LATENCY_BUCKETS]);
        P("firth_request_duration_seconds_bucket{api=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name,
          cum);
        P("firth_request_duration_seconds_sum{api=\"%s\"} %.6f\n", name,
          (double)load(&a->latency_us_sum) / 1e6);
        P("firth_request_duration_seconds_count{api=\"%s\"} %" PRIu64 "\n", name, cum);
    }
    return FR_OK;
}

static int render_server(const srv_metrics *cm, fr_buf *out, fr_error *err)
{
    srv_metrics *m = (srv_metrics *)cm;
    FR_TRY(header(out, "firth_uptime_seconds", "gauge", "Seconds since the server started.",
                  err));
    P("firth_uptime_seconds %.3f\n", (double)(fr_now_ms() - m->started_ms) / 1e3);
    FR_TRY(header(out, "firth_received_bytes_total", "counter",
                  "Bytes read from native protocol connections.", err));
    P("firth_received_bytes_total %" PRIu64 "\n", load(&m->bytes_in));
    FR_TRY(header(out, "firth_sent_bytes_total", "counter",
                  "Bytes written to native protocol connections.", err));
    P("firth_sent_bytes_total %" PRIu64 "\n", load(&m->bytes_out));
    FR_TRY(header(out, "firth_connections", "gauge", "Open native protocol connections.", err));
    P("firth_connections %" PRId64 "\n", (int64_t)atomic_load(&m->connections_open));
    FR_TRY(header(out, "firth_connections_accepted_total", "counter",
                  "Connections accepted.", err));
    P("firth_connections_accepted_total %" PRIu64 "\n", load(&m->connections_accepted));
    FR_TRY(header(out, "firth_connections_refused_total", "counter",
                  "Connections refused at server.connections.max.", err));
    P("firth_connections_refused_total %" PRIu64 "\n", load(&m->connections_refused));
    FR_TRY(header(out, "firth_bad_frames_total", "counter",
                  "Frames or bodies that could not be read (bad length, unknown api, "
                  "malformed protobuf).", err));
    P("firth_bad_frames_total %" PRIu64 "\n", load(&m->bad_frames));
    FR_TRY(header(out, "firth_produce_out_of_order_total", "counter",
                  "Batches refused because a writer's earlier batch to the bucket had not "
                  "been appended yet (the writer sends them again in order).", err));
    P("firth_produce_out_of_order_total %" PRIu64 "\n", load(&m->produce_out_of_order));
    FR_TRY(header(out, "firth_requests_in_flight", "gauge",
                  "Requests being worked on (parked fetches included).", err));
    P("firth_requests_in_flight %" PRId64 "\n", (int64_t)atomic_load(&m->requests_in_flight));
    FR_TRY(header(out, "firth_fetches_parked", "gauge",
                  "Fetches waiting for records (long polling).", err));
    P("firth_fetches_parked %" PRId64 "\n", (int64_t)atomic_load(&m->fetches_parked));
    return FR_OK;
}

typedef struct table_counter {
    const char *name, *help;
    size_t offset;
} table_counter;

static const table_counter TABLE_COUNTERS[] = {
    {"firth_table_appended_records_total", "Records appended to a table's logs (produce and "
     "the changelog of puts).", offsetof(srv_table_metrics, appended_records)},
    {"firth_table_appended_bytes_total", "Record batch bytes received for a table.",
     offsetof(srv_table_metrics, appended_bytes)},
    {"firth_table_appended_batches_total", "Record batches appended to a table's logs.",
     offsetof(srv_table_metrics, appended_batches)},
    {"firth_table_fetched_records_total", "Records returned by fetches of a table.",
     offsetof(srv_table_metrics, fetched_records)},
    {"firth_table_fetched_bytes_total", "Record batch bytes returned by fetches of a table.",
     offsetof(srv_table_metrics, fetched_bytes)},
    {"firth_table_kv_rows_written_total", "Rows upserted or deleted in a primary-key table.",
     offsetof(srv_table_metrics, kv_rows_written)},
};

static int render_tables(const srv_metrics *cm, fr_buf *out, fr_error *err)
{
    srv_metrics *m = (srv_metrics *)cm;
    for (size_t c = 0; c < sizeof TABLE_COUNTERS / sizeof TABLE_COUNTERS[0]; c++) {
        FR_TRY(header(out, TABLE_COUNTERS[c].name, "counter", TABLE_COUNTERS[c].help, err));
        for (int i = 0; i < SRV_TABLE_SLOTS; i++) {
            srv_table_metrics *s = &m->tables[i];
            if (atomic_load_explicit(&s->state, memory_order_acquire) != 2) continue;
            const char *q = strchr(s->name, '"');
            atomic_uint_fast64_t *v =
                (atomic_uint_fast64_t *)((char *)s + TABLE_COUNTERS[c].offset);
            P("%s{database=\"%.*s\",table=\"%s\",table_id=\"%" PRId64 "\"} %" PRIu64 "\n",
              TABLE_COUNTERS[c].name, (int)(q - s->name), s->name, q + 1, s->table_id, load(v));
        }
    }
    return FR_OK;
}

/* ---- from the engine ------------------------------------------------------------------- */

/* Appends a label value with Prometheus' escapes (backslash, quote, newline). */
static int label_value(fr_buf *out, const char *s, fr_error *err)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') FR_TRY(fr_buf_printf(out, err, "\\%c", *s));
        else if (*s == '\n') FR_TRY(fr_buf_append(out, "\\n", 2, err));
        else FR_TRY(fr_buf_append(out, s, 1, err));
    }
    return FR_OK;
}

typedef struct bucket_lines {
    fr_buf offsets_end, offsets_start, log_bytes, kv_bytes, kv_keys;
    fr_buf lake_records, lake_seconds;
    fr_buf fsync;              /* the histogram's lines, a table after another */
    fr_log_fsync_stats tfsync; /* the table being read: its buckets' fsyncs summed */
    bool tlog;                 /* the table being read has a log */
} bucket_lines;

static int bucket_labels(fr_buf *b, const char *metric, fr_table *t, const char *part,
                         int bucket, fr_error *err)
{
    FR_TRY(fr_buf_printf(b, err, "%s{database=\"%s\",table=\"%s\",partition=\"", metric,
                         fr_table_db(t), fr_table_name(t)));
    FR_TRY(label_value(b, part, err));
    return fr_buf_printf(b, err, "\",bucket=\"%d\"}", bucket);
}

static int table_buckets(fr_table *t, int64_t pid, const char *part, bucket_lines *l,
                         fr_error *err)
{
    for (int b = 0; b < fr_table_num_buckets(t); b++) {
        fr_bucket_stats st;
        fr_error serr = {0};
        if (fr_table_bucket_stats(t, pid, b, &st, &serr) < 0) continue; /* dropped meanwhile */
        if (st.has_log) {
            FR_TRY(bucket_labels(&l->offsets_end, "firth_log_end_offset", t, part, b, err));
            FR_TRY(fr_buf_printf(&l->offsets_end, err, " %" PRId64 "\n", st.log_end_offset));
            FR_TRY(bucket_labels(&l->offsets_start, "firth_log_start_offset", t, part, b, err));
            FR_TRY(fr_buf_printf(&l->offsets_start, err, " %" PRId64 "\n", st.log_start_offset));
            FR_TRY(bucket_labels(&l->log_bytes, "firth_log_size_bytes", t, part, b, err));
            FR_TRY(fr_buf_printf(&l->log_bytes, err, " %" PRId64 "\n", st.log_bytes));
            l->tlog = true;
            fr_log_fsync_stats_sum(&l->tfsync, &st.fsync);
        }
        if (st.has_kv) {
            FR_TRY(bucket_labels(&l->kv_bytes, "firth_kv_size_bytes", t, part, b, err));
            FR_TRY(fr_buf_printf(&l->kv_bytes, err, " %" PRId64 "\n", st.kv_bytes));
            FR_TRY(bucket_labels(&l->kv_keys, "firth_kv_keys", t, part, b, err));
            FR_TRY(fr_buf_printf(&l->kv_keys, err, " %" PRId64 "\n", st.kv_keys));
        }
    }
    return FR_OK;
}

/* How far a lake-enabled table's lake is behind its logs (a table whose status cannot be
 * read is left out). */
static int table_lake(fr_table *t, bucket_lines *l, fr_error *err)
{
    fr_lake_status st;
    fr_error serr = {0};
    if (fr_table_lake_status(t, &st, &serr) < 0) return FR_OK;
    FR_TRY(fr_buf_printf(&l->lake_records, err,
                         "firth_lake_tiering_lag_records{database=\"%s\",table=\"%s\"} %" PRId64
                         "\n", fr_table_db(t), fr_table_name(t), st.lag_records));
    return fr_buf_printf(&l->lake_seconds, err,
                         "firth_lake_tiering_lag_seconds{database=\"%s\",table=\"%s\"} %.3f\n",
                         fr_table_db(t), fr_table_name(t), (double)st.lag_ms / 1e3);
}

/* The fsyncs of a table's logs (every bucket of every partition) as one histogram. */
static int table_fsync(fr_table *t, const fr_log_fsync_stats *f, fr_buf *out, fr_error *err)
{
    const char *m = "firth_log_fsync_duration_seconds";
    int64_t cum = 0;
    for (int k = 0; k < FR_LOG_FSYNC_BUCKETS; k++) {
        cum += f->buckets[k];
        FR_TRY(fr_buf_printf(out, err, "%s_bucket{database=\"%s\",table=\"%s\",le=\"", m,
                             fr_table_db(t), fr_table_name(t)));
        if (k < FR_LOG_FSYNC_BUCKETS - 1)
            FR_TRY(fr_buf_printf(out, err, "%g", (double)fr_log_fsync_bounds_us[k] / 1e6));
        else FR_TRY(fr_buf_printf(out, err, "+Inf"));
        FR_TRY(fr_buf_printf(out, err, "\"} %" PRId64 "\n", cum));
    }
    FR_TRY(fr_buf_printf(out, err, "%s_sum{database=\"%s\",table=\"%s\"} %.6f\n", m,
                         fr_table_db(t), fr_table_name(t), (double)f->sum_us / 1e6));
    return fr_buf_printf(out, err, "%s_count{database=\"%s\",table=\"%s\"} %" PRId64 "\n", m,
                         fr_table_db(t), fr_table_name(t), f->count);
}

static int one_table(fr_engine *e, const char *db, const char *name, bucket_lines *l,
                     fr_error *err)
{
    fr_table *t = NULL;
    fr_error terr = {0};
    if (fr_engine_get_table(e, db, name, &t, &terr) < 0) return FR_OK; /* dropped meanwhile */
    int npart = 0;
    fr_table_partition_keys(t, &npart);
    l->tfsync = (fr_log_fsync_stats){0};
    l->tlog = false;
    int rc = FR_OK;
    if (npart == 0) {
        rc = table_buckets(t, -1, "", l, err);
    } else {
        fr_partition *parts = NULL;
        int n = 0;
        rc = fr_table_list_partitions(t, &parts, &n, err);
        for (int i = 0; rc == FR_OK && i < n; i++)
            rc = table_buckets(t, parts[i].id, parts[i].name, l, err);
        fr_partitions_free(parts, n);
    }
    if (rc == FR_OK && l->tlog) rc = table_fsync(t, &l->tfsync, &l->fsync, err);
    if (rc == FR_OK && fr_table_lake_enabled(t)) rc = table_lake(t, l, err);
    fr_table_release(t);
    return rc;
}

static int render_engine(fr_engine *e, fr_buf *out, fr_error *err)
{
    bucket_lines l;
    fr_buf_init(&l.offsets_end);
    fr_buf_init(&l.offsets_start);
    fr_buf_init(&l.log_bytes);
    fr_buf_init(&l.kv_bytes);
    fr_buf_init(&l.kv_keys);
    fr_buf_init(&l.lake_records);
    fr_buf_init(&l.lake_seconds);
    fr_buf_init(&l.fsync);
    char **dbs = NULL;
    int ndbs = 0;
    int rc = fr_engine_list_databases(e, &dbs, &ndbs, err);
    for (int d = 0; rc == FR_OK && d < ndbs; d++) {
        char **names = NULL;
        int n = 0;
        fr_error lerr = {0};
        if (fr_engine_list_tables(e, dbs[d], &names, &n, &lerr) < 0) continue;
        for (int i = 0; rc == FR_OK && i < n; i++) rc = one_table(e, dbs[d], names[i], &l, err);
        fr_names_free(names, n);
    }
    fr_names_free(dbs, ndbs);
    struct {
        const char *name, *help;
        fr_buf *lines;
    } groups[] = {
        {"firth_log_end_offset", "The next offset of a bucket's log (records below it are "
         "readable).", &l.offsets_end},
        {"firth_log_start_offset", "The earliest offset a bucket's log keeps.", &l.offsets_start},
        {"firth_log_size_bytes", "Bytes of a bucket's log segments.", &l.log_bytes},
        {"firth_kv_size_bytes", "Estimated bytes of an open KV store (RocksDB) of a primary-key "
         "bucket.", &l.kv_bytes},
        {"firth_kv_keys", "Keys of an open KV store of a primary-key bucket (estimated for WAL "
         "changelog images).", &l.kv_keys},
        {"firth_lake_tiering_lag_records", "Records of a lake-enabled table's logs not yet "
         "tiered into its lake.", &l.lake_records},
        {"firth_lake_tiering_lag_seconds", "Age of the oldest record of a lake-enabled table "
         "not yet tiered into its lake (0 when none).", &l.lake_seconds},
    };
    for (size_t g = 0; rc == FR_OK && g < sizeof groups / sizeof groups[0]; g++) {
        rc = header(out, groups[g].name, "gauge", groups[g].help, err);
        if (rc == FR_OK && groups[g].lines->len > 0)
            rc = fr_buf_append(out, groups[g].lines->data, groups[g].lines->len, err);
    }
    if (rc == FR_OK)
        rc = header(out, "firth_log_fsync_duration_seconds", "histogram",
                    "How long the fdatasyncs of a table's log segments took, every bucket "
                    "together, since their logs were opened.", err);
    if (rc == FR_OK && l.fsync.len > 0) rc = fr_buf_append(out, l.fsync.data, l.fsync.len, err);
    fr_buf_free(&l.fsync);
    fr_buf_free(&l.offsets_end);
    fr_buf_free(&l.offsets_start);
    fr_buf_free(&l.log_bytes);
    fr_buf_free(&l.kv_bytes);
    fr_buf_free(&l.kv_keys);
    fr_buf_free(&l.lake_records);
    fr_buf_free(&l.lake_seconds);
    return rc;
}

static int render_kv_memory(fr_engine *e, fr_buf *out, fr_error *err)
{
    fr_engine_kv_memory m;
    fr_engine_kv_memory_get(e, &m);
    FR_TRY(header(out, "firth_kv_memtable_bytes", "gauge", "Bytes in the active memtables of "
                  "every KV store (kv.write-buffer.bytes bounds them).", err));
    P("firth_kv_memtable_bytes %" PRId64 "\n", m.memtable_bytes);
    FR_TRY(header(out, "firth_kv_block_cache_bytes", "gauge", "Bytes in the block cache every "
                  "KV store shares (kv.block-cache.bytes).", err));
    P("firth_kv_block_cache_bytes %" PRId64 "\n", m.block_cache_bytes);
    FR_TRY(header(out, "firth_kv_row_cache_bytes", "gauge", "Bytes in the row cache of point "
                  "lookups every KV store shares (kv.row-cache.bytes).", err));
    P("firth_kv_row_cache_bytes %" PRId64 "\n", m.row_cache_bytes);
    return FR_OK;
}

int srv_metrics_render(fr_server *s, fr_buf *out, fr_error *err)
{
    FR_TRY(render_server(s->metrics, out, err));
    FR_TRY(render_apis(s->metrics, out, err));
    FR_TRY(render_tables(s->metrics, out, err));
    FR_TRY(render_kv_memory(s->engine, out, err));
    return render_engine(s->engine, out, err);
}
