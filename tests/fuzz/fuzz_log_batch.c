/* fuzz_log_batch.c — feeds arbitrary bytes to the record-batch decoder (fr_rb_decode, then
 * fr_rb_stats against two schemas and the IPC message against them), as they are and with
 * their CRCs made to match, and to the recovery of a log whose only segment file is the input
 * (the last byte chooses: index files cut from the input's tail, CRCs made to match). Whatever the log keeps after recovery is then read back every way a client can:
 * batches with projection and a filter, raw batches, offsets by time; and appended to. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log/log.h"

static fr_schema *fz_schema_a, *fz_schema_b;
static char fz_dir[256];
volatile uint8_t fz_sink; /* keeps reads of decoded bytes from being optimized away */

static fr_schema *fz_make(const fr_field *f, int n)
{
    fr_schema *s;
    fr_error err;
    if (fr_schema_new(f, n, 0, &s, &err) != 0) {
        fprintf(stderr, "fuzz_log_batch: schema: %s\n", err.msg);
        abort();
    }
    return s;
}

static void fz_cleanup(void)
{
    fr_error err;
    fr_remove_tree(fz_dir, &err);
}

static void fz_init(void)
{
    if (fz_schema_a) return;
    fr_log_set_level(FR_LOG_OFF);
    /* The schema the seed corpus was written with, and one with the other types. */
    fr_field a[6] = {
        { "id", fr_type_of(FR_T_BIGINT) },  { "name", fr_type_of(FR_T_STRING) },
        { "score", fr_type_of(FR_T_DOUBLE) }, { "flag", fr_type_of(FR_T_BOOLEAN) },
        { "amount", fr_type_decimal(12, 2) }, { "day", fr_type_of(FR_T_DATE) },
    };
    a[0].type.nullable = false;
    fz_schema_a = fz_make(a, 6);
    fr_type ch = fr_type_of(FR_T_CHAR);
    ch.length = 4;
    fr_field b[9] = {
        { "i8", fr_type_of(FR_T_TINYINT) },
        { "i16", fr_type_of(FR_T_SMALLINT) },
        { "i32", fr_type_of(FR_T_INT) },
        { "f32", fr_type_of(FR_T_FLOAT) },
        { "by", fr_type_of(FR_T_BYTES) },
        { "t3", fr_type_time_like(FR_T_TIME, 3) },
        { "t6", fr_type_time_like(FR_T_TIME, 6) },
        { "ltz", fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6) },
        { "ch", ch },
    };
    fz_schema_b = fz_make(b, 9);
    const char *tmp = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/fuzz_log_batch.%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    atexit(fz_cleanup);
}

/* Rewrites the CRC of every batch in a chain of plausible lengths, so that mutations reach
 * the decoders behind the CRC check. */
static void fz_fix_crcs(uint8_t *p, size_t n)
{
    for (size_t pos = 0; pos + 24 <= n;) {
        uint32_t len = fr_get_u32le(p + pos + 16);
        if (len < FR_RB_HEADER_BYTES || len % 8 != 0 || len > n - pos) break;
        fr_put_u32le(p + pos + 20, fr_crc32c(0, p + pos + 24, len - 24));
        pos += len;
    }
}

static void fz_decode(const uint8_t *data, size_t size)
{
    fr_rb_view v;
    fr_error err;
    if (fr_rb_decode(data, size, &v, &err) != 0) return;
    fr_schema *schemas[2] = { fz_schema_a, fz_schema_b };
    for (int k = 0; k < 2; k++) {
        fr_column_stats st[9];
        if (fr_rb_stats(&v, schemas[k], st, &err) == 0) {
            /* String bounds point into the batch: touch them so ASan checks the bounds. */
            uint8_t x = 0;
            for (int c = 0; c < fr_schema_num_fields(schemas[k]); c++)
                if (st[c].has_minmax && (st[c].min.type.id == FR_T_STRING ||
                                         st[c].min.type.id == FR_T_BYTES ||
                                         st[c].min.type.id == FR_T_CHAR)) {
                    for (size_t i = 0; i < st[c].min.v.s.len; i++) x ^= st[c].min.v.s.ptr[i];
                    for (size_t i = 0; i < st[c].max.v.s.len; i++) x ^= st[c].max.v.s.ptr[i];
                }
            fz_sink ^= x;
        }
        fr_batch *b = NULL;
        size_t used;
        if (fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, schemas[k], &b, &used, &err) == 0)
            fr_batch_free(b);
    }
}

static int fz_read_cb(void *ctx, fr_batch *b, const int64_t *offsets, const uint8_t *cts,
                      int64_t ts, fr_error *err)
{
    int64_t *rows = ctx;
    for (int64_t i = 0; i < fr_batch_num_rows(b); i++) {
        if (i > 0 && offsets[i] <= offsets[i - 1]) abort();
        if (cts && cts[i] > FR_CHANGE_DELETE) abort();
    }
    *rows += fr_batch_num_rows(b);
    fr_batch_free(b);
    return 0;
}

static void fz_write(const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fz_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n > 0 && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

/* Whether the batch that starts at offset off was committed at ts. */
static bool fz_committed_at(fr_log *log, int64_t off, int64_t ts)
{
    fr_error err;
    fr_buf raw;
    fr_buf_init(&raw);
    fr_rb_view v;
    bool at = fr_log_read_raw(log, off, 1, &raw, &err) == 0 &&
              fr_rb_decode(raw.data, raw.len, &v, &err) == 0 && v.base_offset == off &&
              v.commit_timestamp == ts;
    fr_buf_free(&raw);
    return at;
}

/* Reads what the recovered log holds, the ways clients do. */
static void fz_read_log(fr_log *log)
{
    fr_error err;
    int64_t start = fr_log_start_offset(log), end = fr_log_end_offset(log);
    if (start < 0 || end < start) abort();
    fr_arena *a = fr_arena_new(1024);
    fr_value v = fr_value_int(fr_type_of(FR_T_BIGINT), 3);
    fr_expr *f = fr_expr_binary(a, FR_OP_GT, fr_expr_column(a, "id"), fr_expr_literal(a, &v));
    if (fr_expr_bind(f, fz_schema_a, &err) != 0) abort();
    int cols[2] = { 4, 1 };
    for (int pass = 0; pass < 2; pass++) {
        fr_log_read r = { .from_offset = start, .schema = fz_schema_a,
                          .columns = pass ? cols : NULL, .ncolumns = pass ? 2 : 0,
                          .filter = pass ? f : NULL, .max_records = -1 };
        int64_t rows = 0, next;
        fr_log_read_batches(log, &r, fz_read_cb, &rows, &next, &err);
    }
    fr_arena_free(a);
    fr_buf raw;
    fr_buf_init(&raw);
    if (end > start && fr_log_read_raw(log, start, 1 << 20, &raw, &err) == 0) {
        /* What recovery kept must pass the full check. */
        for (size_t pos = 0; pos < raw.len;) {
            fr_rb_view rv;
            if (fr_rb_decode(raw.data + pos, raw.len - pos, &rv, &err) != 0) abort();
            pos += (size_t)rv.length;
        }
    }
    fr_buf_free(&raw);
    int64_t off;
    fr_log_offset_for_time(log, 0, &off, &err);
    /* The commit timestamp lies outside the CRC, so a recovered batch may carry any; the
     * first committed at or after INT64_MAX is the end unless one was committed at it. */
    fr_log_offset_for_time(log, INT64_MAX, &off, &err);
    if (off != end && !fz_committed_at(log, off, INT64_MAX)) abort();
}

static void fz_recover(const uint8_t *data, size_t size)
{
    fr_error err;
    fr_remove_tree(fz_dir, &err);
    if (fr_mkdirs(fz_dir, &err) != 0) abort();
    if (size > 0 && (data[size - 1] & 8)) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        fz_fix_crcs(fixed, size);
        fz_write("00000000000000000000.log", fixed, size);
        free(fixed);
    } else {
        fz_write("00000000000000000000.log", data, size);
    }
    /* The last byte chooses index files cut from the input's tail. */
    uint8_t sel = size > 0 ? data[size - 1] : 0;
    size_t tail = size < 96 ? size : 96;
    if (sel & 1) fz_write("00000000000000000000.index", data + size - tail, tail & ~(size_t)7);
    if (sel & 2) fz_write("00000000000000000000.timeindex", data + size - tail, tail / 12 * 12);
    fr_log_options o;
    fr_log_options_default(&o);
    o.flush = FR_FLUSH_NONE;
    o.segment_bytes = 1 << 20;
    o.index_interval_bytes = sel & 4 ? 0 : 512;
    fr_log *log;
    if (fr_log_open(fz_dir, &o, &log, &err) != 0) return;
    fz_read_log(log);
    /* Appends continue at the end. */
    int64_t end = fr_log_end_offset(log);
    if (size >= FR_RB_HEADER_BYTES && size <= 4096) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data, size);
        int64_t base;
        fr_rb_view v;
        if (fr_rb_decode(copy, size, &v, &err) == 0 && (size_t)v.length == size &&
            fr_log_append(log, copy, size, &base, &err) == 0 && base != end)
            abort();
        free(copy);
    }
    fr_log_close(log);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    fz_decode(data, size);
    if (size >= 24) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        fz_fix_crcs(fixed, size);
        fz_decode(fixed, size);
        free(fixed);
    }
    fz_recover(data, size);
    return 0;
}
