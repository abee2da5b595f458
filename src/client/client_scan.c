/* client_scan.c — firth_scan and firth_scan_changelog: turn the public scan options
 * (column names as text, a SQL predicate as text) into an engine scan over the table's log,
 * and hand each batch on as a firth_batch (with its change types for the changelog).
 *
 * The predicate is parsed and bound against the table's schema into an arena that lives
 * for the scan; the projection is the listed columns, in the order given. */
#include "client/client_int.h"

#include <stdio.h>

#define FIRTH_SCAN_COLUMNS_TEXT_MAX (1 << 20)

/* Appends the table's column names, for messages ("a, b, c"), cut short when long. */
static void list_columns(const fr_schema *s, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < fr_schema_num_fields(s) && used + 1 < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? ", " : "",
                         fr_schema_field(s, i)->name);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* Parses "a, b" into column indexes of schema (*cols has room for every column). */
static int parse_columns(const char *table, const fr_schema *s, const char *text, int *cols,
                         int *ncols, fr_error *err)
{
    size_t len = strlen(text);
    FR_CHECK(len <= FIRTH_SCAN_COLUMNS_TEXT_MAX, FR_ELIMIT, err,
             "the column list of %zu bytes is too long", len);
    int nf = fr_schema_num_fields(s), n = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        FR_CHECK(e > p, FR_EINVAL, err, "the column list '%.100s' has an empty name", text);
        char name[FR_NAME_BYTES_MAX + 1];
        FR_CHECK((size_t)(e - p) <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
                 "a column name in '%.100s' is longer than %d bytes", text, FR_NAME_BYTES_MAX);
        memcpy(name, p, (size_t)(e - p));
        name[e - p] = '\0';
        int col = fr_schema_find(s, name);
        if (col < 0) {
            char all[160];
            list_columns(s, all, sizeof all);
            return fr_fail(err, FR_EINVAL, "table %s has no column '%s' (its columns: %s)",
                           table, name, all);
        }
        for (int i = 0; i < n; i++)
            FR_CHECK(cols[i] != col, FR_EINVAL, err, "column '%s' is listed twice", name);
        FR_CHECK(n < nf, FR_EINVAL, err, "too many columns listed");
        cols[n++] = col;
        if (!comma) break;
        p = comma + 1;
    }
    *ncols = n;
    return FR_OK;
}

/* One of fn and changes_fn is set. */
typedef struct scan_ctx {
    firth_scan_fn fn;
    firth_changelog_fn changes_fn;
    void *ctx;
    int user_rc;
} scan_ctx;

static int on_batch(void *arg, int bucket, fr_batch *batch, const int64_t *offsets,
                    const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    scan_ctx *s = arg;
    firth_batch *fb = firth_batch_wrap(batch);
    if (!fb) {
        fr_batch_free(batch);
        return fr_fail(err, FR_ENOMEM, "out of memory passing a batch");
    }
    int rc = s->fn ? s->fn(s->ctx, bucket, fb, offsets)
                   : s->changes_fn(s->ctx, bucket, fb, offsets, change_types, commit_ts);
    if (rc != 0) s->user_rc = rc;
    return rc < 0 ? fr_fail(err, rc, "the scan was stopped by its callback (%d)", rc) : rc;
}

static fr_start_kind start_kind(firth_start s)
{
    switch (s) {
    case FIRTH_START_LATEST: return FR_START_LATEST;
    case FIRTH_START_OFFSET: return FR_START_OFFSET;
    case FIRTH_START_TIMESTAMP: return FR_START_TIMESTAMP;
    default: return FR_START_EARLIEST;
    }
}

static int scan_table(fr_table *t, const char *name, const firth_scan_options *o,
                      scan_ctx *sc, fr_error *err)
{
    const fr_schema *schema = fr_table_schema(t);
    int nf = fr_schema_num_fields(schema);
    FR_CHECK(o->start >= FIRTH_START_EARLIEST && o->start <= FIRTH_START_TIMESTAMP, FR_EINVAL,
             err, "unknown scan start %d", (int)o->start);
    int *cols = fr_calloc((size_t)nf, sizeof *cols);
    fr_arena *arena = fr_arena_new(4096);
    int rc = FR_OK;
    if (!cols || !arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory starting a scan");
        goto fail;
    }
    fr_scan_spec spec = {
        .start = start_kind(o->start),
        .start_value = o->start_value,
        .max_records = o->max_records < 0 ? -1 : o->max_records,
        .bucket = -1,
    };
    if (o->columns) {
        FR_GOTO(parse_columns(name, schema, o->columns, cols, &spec.ncolumns, err));
        spec.columns = cols;
    }
    if (o->where && *o->where) {
        fr_expr *filter = NULL;
        FR_GOTO(fr_sql_parse_expr(o->where, strlen(o->where), schema, arena, &filter, err));
        if (filter->type.id != FR_T_BOOLEAN) {
            rc = fr_fail(err, FR_ETYPE, "where '%.100s' is not a condition (true or false)",
                         o->where);
            goto fail;
        }
        spec.filter = filter;
    }
    FR_GOTO(fr_table_scan(t, &spec, on_batch, sc, err));
fail:
    fr_free(cols);
    fr_arena_free(arena);
    return rc;
}

static int scan(firth_client *c, const char *table, const firth_scan_options *opts,
                scan_ctx *sc, firth_error *err)
{
    if (!c || !table || (!sc->fn && !sc->changes_fn)) {
        if (err) {
            err->code = FIRTH_EINVAL;
            snprintf(err->msg, sizeof err->msg, "scan: no client, table or callback");
        }
        return FIRTH_EINVAL;
    }
    if (c->remote) return fr_remote_scan(c, table, opts, sc->fn, sc->changes_fn, sc->ctx, err);
    firth_scan_options defaults = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    const firth_scan_options *o = opts ? opts : &defaults;
    fr_error e = {0};
    char db[FR_NAME_BYTES_MAX + 1], name[FR_NAME_BYTES_MAX + 1];
    fr_table *t = NULL;
    if (fr_sql_resolve_table(firth_client_session(c), table, db, sizeof db, name, sizeof name,
                             &e) < 0 ||
        fr_engine_get_table(firth_client_engine(c), db, name, &t, &e) < 0)
        return firth_error_from(&e, err);
    char qname[2 * FR_NAME_BYTES_MAX + 2];
    snprintf(qname, sizeof qname, "%s.%s", db, name);
    int rc = scan_table(t, qname, o, sc, &e);
    fr_table_release(t);
    if (sc->user_rc > 0) return FIRTH_OK;
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

int firth_scan(firth_client *c, const char *table, const firth_scan_options *opts,
               firth_scan_fn fn, void *ctx, firth_error *err)
{
    scan_ctx sc = {.fn = fn, .ctx = ctx};
    return scan(c, table, opts, &sc, err);
}

int firth_scan_changelog(firth_client *c, const char *table, const firth_scan_options *opts,
                         firth_changelog_fn fn, void *ctx, firth_error *err)
{
    scan_ctx sc = {.changes_fn = fn, .ctx = ctx};
    return scan(c, table, opts, &sc, err);
}
