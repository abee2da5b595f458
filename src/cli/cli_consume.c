/* cli_consume.c — `firth consume`: reads a table's records with firth_scan_changelog (start
 * position, projection, filter, limit) and prints them as NDJSON, CSV or an Arrow IPC
 * stream. A primary-key table's records are its changelog: each row gets its change type
 * (+I, -U, +U, -D) in a _change_type column in front; a log table's rows are printed as
 * they are.
 *
 * With --follow the records come from a firth_scanner instead, polled until SIGINT or SIGTERM
 * (or --max-records): new records are printed as they arrive, and the output is flushed
 * after each poll and ended properly (the Arrow end-of-stream marker) when interrupted.
 *
 * Invariants: the Arrow stream is schema message, record batches, end-of-stream marker, and
 * its schema is the projected table schema (with _change_type, then _bucket and _offset in
 * front when they apply), which every batch matches; CSV output always has its header line,
 * even with no rows. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/client_bridge.h"

typedef struct consume_state {
    cli_format format;
    bool with_offsets;
    bool change_type;     /* a primary-key table: _change_type goes in front */
    bool decorate;        /* columns are added in front of the rows (built here) */
    fr_compression codec;
    bool begun;           /* the header (CSV) or schema message (arrow) is out */
    cli_printer *printer; /* json, csv */
    fr_schema *schema;    /* what is printed when decorating: the added columns and the rows' */
    fr_builder *bld;      /* decorating: batches with the columns added */
    fr_buf out;
    bool failed;
    fr_error err;
} consume_state;

/* Parses --from: earliest, latest, offset:N, timestamp:MS. */
static int consume_parse_from(const char *text, firth_scan_options *o)
{
    fr_error err = {0};
    if (strcmp(text, "earliest") == 0) {
        o->start = FIRTH_START_EARLIEST;
        return 0;
    }
    if (strcmp(text, "latest") == 0) {
        o->start = FIRTH_START_LATEST;
        return 0;
    }
    if (strncmp(text, "offset:", 7) == 0 && fr_parse_i64(text + 7, &o->start_value, &err) == 0 &&
        o->start_value >= 0) {
        o->start = FIRTH_START_OFFSET;
        return 0;
    }
    if (strncmp(text, "timestamp:", 10) == 0 &&
        fr_parse_i64(text + 10, &o->start_value, &err) == 0 && o->start_value >= 0) {
        o->start = FIRTH_START_TIMESTAMP;
        return 0;
    }
    return cli_usage_error("consume", "--from must be earliest, latest, offset:N or "
                                      "timestamp:MS (N, MS >= 0), not '%s'", text);
}

/* The columns that --columns names, in its order, as a projection of the table schema. */
static int consume_project(const fr_schema *table, const char *columns, const char *name,
                           fr_schema **out, fr_error *err)
{
    if (!columns) {
        *out = fr_schema_clone(table);
        FR_CHECK(*out, FR_ENOMEM, err, "out of memory");
        return 0;
    }
    int cols[FR_SCHEMA_COLUMNS_MAX];
    int n = 0;
    for (const char *p = columns;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        char col[FR_NAME_BYTES_MAX + 1];
        FR_CHECK(len > 0, FR_EINVAL, err, "--columns: an empty column name in '%s'", columns);
        FR_CHECK(len <= FR_NAME_BYTES_MAX && n < FR_SCHEMA_COLUMNS_MAX, FR_EINVAL, err,
                 "--columns: '%.*s' is too long", (int)(len > 64 ? 64 : len), p);
        memcpy(col, p, len);
        col[len] = 0;
        int c = fr_schema_find(table, col);
        FR_CHECK(c >= 0, FR_EINVAL, err, "--columns: table %s has no column '%s'", name, col);
        for (int k = 0; k < n; k++)
            FR_CHECK(cols[k] != c, FR_EINVAL, err, "--columns: column '%s' is named twice", col);
        cols[n++] = c;
        if (!end) break;
        p = end + 1;
    }
    return fr_schema_project(table, cols, n, out, err);
}

/* The columns added in front of the rows: _change_type (STRING) for a primary-key table,
 * then _bucket (INT) and _offset (BIGINT) when asked. */
static int consume_lead(const consume_state *st)
{
    return (st->change_type ? 1 : 0) + (st->with_offsets ? 2 : 0);
}

static int consume_decorated_schema(const consume_state *st, const fr_schema *s, fr_schema **out,
                                    fr_error *err)
{
    int n = fr_schema_num_fields(s), lead = consume_lead(st), k = 0;
    FR_CHECK(n + lead <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err, "too many columns");
    fr_field *f = fr_calloc((size_t)(n + lead), sizeof *f);
    FR_CHECK(f, FR_ENOMEM, err, "out of memory");
    if (st->change_type)
        f[k++] = (fr_field){.name = "_change_type", .type = fr_type_of(FR_T_STRING)};
    if (st->with_offsets) {
        f[k++] = (fr_field){.name = "_bucket", .type = fr_type_of(FR_T_INT)};
        f[k++] = (fr_field){.name = "_offset", .type = fr_type_of(FR_T_BIGINT)};
    }
    for (int i = 0; i < lead; i++) f[i].type.nullable = false;
    for (int i = 0; i < n; i++) f[lead + i] = *fr_schema_field(s, i);
    int rc = fr_schema_new(f, n + lead, 0, out, err);
    fr_free(f);
    return rc;
}

/* b with the added columns in front (built cell by cell: this path is for inspection, not
 * throughput). */
static int consume_decorate(consume_state *st, const fr_batch *b, int bucket,
                            const int64_t *offsets, const uint8_t *changes, fr_batch **out,
                            fr_error *err)
{
    int lead = consume_lead(st);
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        int k = 0;
        if (st->change_type) {
            const char *name = firth_change_name(changes ? changes[r] : FIRTH_CHANGE_APPEND);
            FR_TRY(fr_builder_append_bytes(st->bld, k++, name, strlen(name), err));
        }
        if (st->with_offsets) {
            FR_TRY(fr_builder_append_i64(st->bld, k++, bucket, err));
            FR_TRY(fr_builder_append_i64(st->bld, k++, offsets[r], err));
        }
        for (int i = 0; i < fr_batch_num_columns(b); i++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, i), r, &v);
            FR_TRY(fr_builder_append(st->bld, lead + i, &v, err));
        }
    }
    return fr_builder_finish(st->bld, out, err);
}

/* Prints the rows of b (taken). */
static int consume_print(consume_state *st, firth_batch *batch, int bucket,
                         const int64_t *offsets, const uint8_t *changes, fr_error *err)
{
    const fr_batch *b = firth_batch_unwrap(batch);
    fr_batch *with = NULL;
    int rc = st->decorate ? consume_decorate(st, b, bucket, offsets, changes, &with, err) : 0;
    if (rc == 0 && st->format == CLI_FORMAT_ARROW) {
        fr_buf_reset(&st->out);
        rc = fr_ipc_write_batch(with ? with : b, st->codec, &st->out, err);
        if (rc == 0) rc = cli_write(stdout, &st->out, err);
    } else if (rc == 0 && with) {
        firth_batch *fw = firth_batch_wrap(with);
        if (!fw) rc = fr_fail(err, FR_ENOMEM, "out of memory");
        if (fw) rc = cli_printer_rows(st->printer, fw, bucket, NULL, err);
        with = fw ? NULL : with;
    } else if (rc == 0) {
        rc = cli_printer_rows(st->printer, batch, bucket, st->with_offsets ? offsets : NULL, err);
        batch = NULL;
    }
    fr_batch_free(with);
    firth_batch_free(batch);
    return rc;
}

static int consume_begin(consume_state *st, const fr_schema *projected, fr_error *err);

static int consume_on_batch(void *ctx, int bucket, firth_batch *batch, const int64_t *offsets,
                            const uint8_t *changes, int64_t commit_ms)
{
    (void)commit_ms;
    consume_state *st = ctx;
    const fr_batch *b = firth_batch_unwrap(batch);
    int rc = 0;
    /* The header comes from the first batch, so that a bad --columns or --where is reported
     * by the scan itself before anything is printed. */
    if (!st->begun) {
        rc = consume_begin(st, fr_batch_schema(b), &st->err);
        st->begun = rc == 0;
    }
    if (rc < 0 || fr_batch_num_rows(b) == 0)
        firth_batch_free(batch);
    else
        rc = consume_print(st, batch, bucket, offsets, changes, &st->err);
    if (rc < 0) st->failed = true;
    return rc < 0;
}

static int consume_begin(consume_state *st, const fr_schema *projected, fr_error *err)
{
    /* A log table's JSON and CSV rows get _bucket and _offset from the printer itself. */
    st->decorate = st->change_type || (st->with_offsets && st->format == CLI_FORMAT_ARROW);
    if (st->decorate) {
        FR_TRY(consume_decorated_schema(st, projected, &st->schema, err));
        FR_TRY(fr_builder_new(st->schema, &st->bld, err));
    } else {
        st->schema = fr_schema_clone(projected);
        FR_CHECK(st->schema, FR_ENOMEM, err, "out of memory");
    }
    if (st->format != CLI_FORMAT_ARROW)
        return cli_printer_new(st->format, st->schema, stdout,
                               st->with_offsets && !st->decorate, &st->printer, err);
    FR_TRY(fr_ipc_write_schema(st->schema, &st->out, err));
    return cli_write(stdout, &st->out, err);
}

static int consume_end(consume_state *st, fr_error *err)
{
    if (st->format != CLI_FORMAT_ARROW) return cli_printer_finish(st->printer, err);
    fr_buf_reset(&st->out);
    FR_TRY(fr_ipc_write_eos(&st->out, err));
    FR_TRY(cli_write(stdout, &st->out, err));
    if (fflush(stdout) != 0) return fr_fail_errno(err, errno, "writing the output");
    return 0;
}

/* Set by SIGINT and SIGTERM while following. */
static volatile sig_atomic_t consume_stop;

static void consume_on_signal(int sig)
{
    (void)sig;
    consume_stop = 1;
}

/* Hands the rows of one polled batch (at most *left of them; -1: all) to consume_on_batch. */
static int consume_polled(consume_state *st, const firth_scan_batch *sb, int64_t *left,
                          firth_error *ferr)
{
    const fr_batch *b = firth_batch_unwrap(sb->batch);
    int64_t n = fr_batch_num_rows(b);
    if (*left >= 0 && n > *left) n = *left;
    fr_batch *part = NULL;
    fr_error err = {0};
    firth_batch *fb = NULL;
    if (fr_batch_slice(b, 0, n, &part, &err) < 0 || !(fb = firth_batch_wrap(part))) {
        fr_batch_free(part);
        ferr->code = FIRTH_ENOMEM;
        snprintf(ferr->msg, sizeof ferr->msg, "%s", err.code ? err.msg : "out of memory");
        return -1;
    }
    if (*left > 0) *left -= n;
    if (consume_on_batch(st, sb->bucket, fb, sb->offsets, sb->changes, sb->commit_ms)) return -1;
    return 0;
}

/* Follows the table: polls a scanner until interrupted or max_records are printed. */
static int consume_follow(consume_state *st, firth_client *c, const char *table,
                          const firth_scan_options *o, firth_error *ferr)
{
    firth_scanner_options so = {.columns = o->columns, .where = o->where};
    firth_scanner *sc = NULL;
    if (firth_scanner_open(c, table, &so, &sc, ferr) < 0) return -1;
    int rc = firth_scanner_subscribe(sc, NULL, -1, o->start, o->start_value, ferr);
    struct sigaction sa = {.sa_handler = consume_on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int64_t left = o->max_records;
    bool polled_once = false; /* the table was there: a later "not found" is a drop */
    while (rc == 0 && !consume_stop && left != 0) {
        firth_scan_result *r = NULL;
        rc = firth_scanner_poll(sc, 200, &r, ferr);
        polled_once = polled_once || rc == 0;
        for (int i = 0; rc == 0 && i < firth_scan_result_count(r) && left != 0; i++)
            rc = consume_polled(st, firth_scan_result_get(r, i), &left, ferr);
        firth_scan_result_free(r);
        if (rc == 0 && fflush(stdout) != 0) {
            ferr->code = FIRTH_EIO;
            snprintf(ferr->msg, sizeof ferr->msg, "writing the output: %s", strerror(errno));
            rc = -1;
        }
    }
    if (rc < 0 && ferr->code == FIRTH_ENOTFOUND && polled_once) {
        char was[sizeof ferr->msg];
        snprintf(was, sizeof was, "%s", ferr->msg);
        snprintf(ferr->msg, sizeof ferr->msg, "%.200s (dropped while it was followed)", was);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    firth_scanner_close(sc);
    return rc;
}

static int consume_run(consume_state *st, firth_client *c, const char *table,
                       const firth_scan_options *o, bool follow)
{
    fr_schema *tschema = NULL, *projected = NULL;
    int rc = CLI_EXIT_FAILED;
    fr_error err = {0};
    firth_error ferr = {0};
    if (firth_table_is_pk(c, table, &st->change_type, &ferr) < 0) {
        cli_error("%s", ferr.msg);
        goto done;
    }
    int scanned = follow ? consume_follow(st, c, table, o, &ferr)
                         : firth_scan_changelog(c, table, o, consume_on_batch, st, &ferr);
    if (scanned < 0 && !st->failed) {
        /* A message with a position comes from parsing the predicate: say which text. */
        bool in_where = o->where && strncmp(ferr.msg, "line ", 5) == 0;
        cli_error("%s%s", in_where ? "--where: " : "", ferr.msg);
        goto done;
    }
    if (st->failed) {
        cli_error("%s", st->err.msg);
        goto done;
    }
    /* No batch came: the header or schema still describes the columns asked for. */
    if (!st->begun && (cli_table_schema(c, table, &tschema, &err) < 0 ||
                       consume_project(tschema, o->columns, table, &projected, &err) < 0 ||
                       consume_begin(st, projected, &err) < 0)) {
        cli_error("%s", err.msg);
        goto done;
    }
    if (consume_end(st, &err) < 0) {
        cli_error("%s", err.msg);
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    fr_schema_free(tschema);
    fr_schema_free(projected);
    return rc;
}

int cli_consume_main(int argc, char **argv)
{
    const char *data_dir = NULL, *connect = NULL, *table = NULL, *from = NULL, *columns = NULL,
               *where = NULL, *max_records = NULL, *format_text = NULL, *compression = NULL;
    bool with_offsets = false, follow = false, help = false;
    cli_config cfg = {0};
    const cli_opt opts[] = {
        {"data-dir", 0, &data_dir, NULL},        {"connect", 0, &connect, NULL},
        {"follow", 'F', NULL, &follow},          {"table", 't', &table, NULL},
        {"from", 0, &from, NULL},                {"columns", 0, &columns, NULL},
        {"where", 0, &where, NULL},              {"max-records", 0, &max_records, NULL},
        {"format", 0, &format_text, NULL},       {"arrow-compression", 0, &compression, NULL},
        {"with-offsets", 0, NULL, &with_offsets},
    };
    int rc = cli_parse_opts_config("consume", argc, argv, opts, sizeof opts / sizeof opts[0],
                                   &cfg, &help);
    if (rc || help) return rc;
    consume_state st = {.format = CLI_FORMAT_JSON, .with_offsets = with_offsets};
    firth_scan_options o = {.start = FIRTH_START_EARLIEST, .columns = columns, .where = where,
                            .max_records = -1};
    unsigned allowed = 1u << CLI_FORMAT_JSON | 1u << CLI_FORMAT_CSV | 1u << CLI_FORMAT_ARROW;
    if (format_text && (rc = cli_format_parse("consume", format_text, allowed, &st.format)))
        return rc;
    if (from && (rc = consume_parse_from(from, &o))) return rc;
    if (max_records &&
        (rc = cli_parse_count("consume", "--max-records", max_records, 0, INT64_MAX,
                              &o.max_records)))
        return rc;
    if (compression) {
        fr_error err = {0};
        if (st.format != CLI_FORMAT_ARROW)
            return cli_usage_error("consume", "--arrow-compression needs --format arrow");
        if (fr_compression_parse(compression, &st.codec, &err) < 0)
            return cli_usage_error("consume", "--arrow-compression must be none, zstd or "
                                              "lz4_frame, not '%s'", compression);
    }
    if (!data_dir && !connect)
        return cli_usage_error("consume", "--data-dir DIR or --connect HOST:PORT is required");
    if (!table) return cli_usage_error("consume", "--table DB.TABLE is required");
    if (st.format == CLI_FORMAT_ARROW && isatty(STDOUT_FILENO)) {
        cli_error("--format arrow writes binary data; redirect stdout to a file or a pipe");
        return CLI_EXIT_USAGE;
    }
    firth_client *c = NULL;
    rc = cli_open_target("consume", data_dir, connect, &cfg, &c);
    if (rc) return rc;
    fr_buf_init(&st.out);
    rc = consume_run(&st, c, table, &o, follow);
    cli_printer_free(st.printer);
    fr_builder_free(st.bld);
    fr_schema_free(st.schema);
    fr_buf_free(&st.out);
    firth_close(c);
    return rc;
}
