/* cli_produce.c — `firth produce`: its options, and the text inputs: NDJSON and CSV records
 * read from stdin, each value converted to its column's type, rows built into batches of
 * --batch-rows. Finished batches go to cli_writer.c, which appends and acknowledges them;
 * Arrow input is in cli_produce_arrow.c. Into a primary-key table each record is an
 * upsert, or a delete when its "_change_type" is "-D" or its "_delete" is true; a "-U"
 * record (the before-image of an update) is skipped, as the update's "+U" carries the row.
 *
 * Invariants: a batch is handed over only once every row of it converted, so the first bad
 * record stops the command and nothing of its batch is written; a bad row leaves the
 * builder at the end of the previous row; line ranges are dense: batch k covers the lines
 * after batch k-1's last line up to its own last line (blank lines included). */
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"

#define CLI_PRODUCE_BATCH_ROWS_DEFAULT 1000
#define CLI_PRODUCE_BATCH_ROWS_MAX 1000000
#define CLI_VALUE_SHOWN_BYTES_MAX 64

typedef struct produce_state {
    cli_writer w;             /* appends, acknowledges, counts lines */
    const char *table;
    fr_schema *schema;
    int ncols;
    fr_builder *bld;
    int64_t batch_rows;
    bool verbose;
    int64_t last_line;        /* the last line read into the batch being built */
    int *member_of;           /* per column: the input field holding it, or -1 */
    bool pk;                  /* a primary-key table: records are upserts and deletes */
    int op_member;            /* pk: the input field "_change_type" or "_delete", or -1 */
    bool op_is_delete_flag;   /* that field is "_delete" (else "_change_type") */
    fr_buf ops;               /* pk: one FIRTH_OP_* per row of the batch being built */
    bool any_delete;          /* the batch being built holds a delete */
    fr_buf bytes;             /* decoded BYTES values of the current row */
    fr_buf shown;             /* a value as quoted in a message */
} produce_state;

/* ---- values ---------------------------------------------------------------------------- */

/* "'abc'" for a message, cut at a readable length. */
static const char *produce_shown(produce_state *st, const char *text, size_t len)
{
    fr_buf_reset(&st->shown);
    fr_error ignored = {0};
    size_t n = len > CLI_VALUE_SHOWN_BYTES_MAX ? CLI_VALUE_SHOWN_BYTES_MAX : len;
    if (fr_buf_printf(&st->shown, &ignored, "'%.*s%s'", (int)n, text,
                      n < len ? "..." : "") < 0 ||
        fr_buf_append(&st->shown, "", 1, &ignored) < 0)
        return "the value";
    return (const char *)st->shown.data;
}

/* "column 'c': 'text' is not a valid TYPE: why", in the words of the types module. */
static int produce_bad_value(produce_state *st, const fr_field *f, const char *text,
                             size_t len, const char *why, fr_error *err)
{
    char tname[64];
    fr_type_format(&f->type, false, tname, sizeof tname);
    return fr_fail(err, FR_EINVAL, "column '%s': %s is not a valid %s%s%s", f->name,
                   produce_shown(st, text, len), tname, why ? ": " : "", why ? why : "");
}

/* Decodes "\x0a1b" hex into st->bytes. */
static int produce_hex(produce_state *st, const char *s, size_t n, fr_error *err)
{
    FR_CHECK(n % 2 == 0, FR_EINVAL, err, "odd number of hex digits");
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[i + (size_t)k];
            int d = c >= '0' && c <= '9' ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            FR_CHECK(d >= 0, FR_EINVAL, err, "'%c' is not a hex digit", c);
            v = v * 16 + d;
        }
        uint8_t b = (uint8_t)v;
        FR_TRY(fr_buf_append(&st->bytes, &b, 1, err));
    }
    return 0;
}

/* Converts one input value (text as read; kind says whether JSON saw a string, a number or
 * a boolean; CSV values come as strings) to column f's type. BYTES are base64 in JSON and
 * hex after "\x" in CSV (other CSV text is taken as the bytes themselves). */
static int produce_convert(produce_state *st, const fr_field *f, cli_json_kind kind,
                           bool csv, const char *text, size_t len, fr_value *out,
                           fr_error *err)
{
    fr_type_id id = f->type.id;
    fr_error perr = {0};
    if (fr_type_is_string(id)) {
        /* As a STRING value, so that the builder's cast checks CHAR(n) and VARCHAR(n)
         * lengths. */
        *out = fr_value_str(fr_type_of(FR_T_STRING), text, len);
        return 0;
    }
    if (id == FR_T_BYTES) {
        if (!csv && kind != CLI_JSON_STRING)
            return produce_bad_value(st, f, text, len, "give base64 text in a JSON string", err);
        size_t from = st->bytes.len;
        int rc;
        if (csv && len >= 2 && text[0] == '\\' && text[1] == 'x')
            rc = produce_hex(st, text + 2, len - 2, &perr);
        else if (csv)
            rc = fr_buf_append(&st->bytes, text, len, &perr);
        else
            rc = cli_base64_decode(text, len, &st->bytes, &perr);
        if (rc < 0) return produce_bad_value(st, f, text, len, perr.msg, err);
        /* The pointer is taken after the row's last append (see produce_row), so here only
         * the position is kept: the value's ptr is the offset until then. */
        *out = fr_value_str(f->type, (const void *)(uintptr_t)from, st->bytes.len - from);
        return 0;
    }
    if (id == FR_T_BOOLEAN && (kind == CLI_JSON_TRUE || kind == CLI_JSON_FALSE)) {
        *out = fr_value_null(f->type);
        out->is_null = false;
        out->v.b = kind == CLI_JSON_TRUE;
        return 0;
    }
    if (kind == CLI_JSON_TRUE || kind == CLI_JSON_FALSE ||
        (kind == CLI_JSON_NUMBER && (id == FR_T_BOOLEAN || fr_type_is_temporal(id))))
        return produce_bad_value(st, f, text, len,
                                 fr_type_is_temporal(id) ? "give it as a JSON string" : NULL,
                                 err);
    int rc = fr_value_parse(text, len, &f->type, out, &perr);
    if (rc < 0) return fr_fail(err, rc, "column '%s': %s", f->name, perr.msg);
    return 0;
}

/* ---- upserts and deletes --------------------------------------------------------------- */

/* The names of the field that makes a record a delete (a column of that name wins). */
#define CLI_CHANGE_TYPE_FIELD "_change_type"
#define CLI_DELETE_FIELD "_delete"

enum { PRODUCE_SKIP = -1 };

/* What a record into a primary-key table does: FIRTH_OP_UPSERT, FIRTH_OP_DELETE or
 * PRODUCE_SKIP, from its "_change_type" ("+I", "+U", "+A": upsert; "-D": delete; "-U":
 * skipped) or its "_delete" (true or false) field. */
static int produce_op(const produce_state *st, cli_json_kind kind, const char *text,
                      size_t len, int *op, fr_error *err)
{
    *op = FIRTH_OP_UPSERT;
    if (kind == CLI_JSON_NULL) return 0;
    if (st->op_is_delete_flag) {
        bool t = kind == CLI_JSON_TRUE || (kind == CLI_JSON_STRING && len == 4 &&
                                           strncasecmp(text, "true", 4) == 0);
        bool f = kind == CLI_JSON_FALSE || (kind == CLI_JSON_STRING && len == 5 &&
                                            strncasecmp(text, "false", 5) == 0);
        FR_CHECK(t || f, FR_EINVAL, err, "%s must be true or false", CLI_DELETE_FIELD);
        *op = t ? FIRTH_OP_DELETE : FIRTH_OP_UPSERT;
        return 0;
    }
    bool known = kind == CLI_JSON_STRING && len == 2;
    if (known && (memcmp(text, "+I", 2) == 0 || memcmp(text, "+U", 2) == 0 ||
                  memcmp(text, "+A", 2) == 0))
        return 0;
    if (known && memcmp(text, "-D", 2) == 0)
        *op = FIRTH_OP_DELETE;
    else if (known && memcmp(text, "-U", 2) == 0)
        *op = PRODUCE_SKIP;
    else
        return fr_fail(err, FR_EINVAL, "%s must be \"+I\", \"+U\", \"-D\" or \"-U\", not '%.*s'",
                       CLI_CHANGE_TYPE_FIELD, (int)(len > 16 ? 16 : len), text);
    return 0;
}

/* Whether an input field that names no column is the record's operation field; records
 * where it is. */
static bool produce_op_field(produce_state *st, const char *key, size_t n, int k)
{
    if (!st->pk) return false;
    bool ct = n == strlen(CLI_CHANGE_TYPE_FIELD) && memcmp(key, CLI_CHANGE_TYPE_FIELD, n) == 0;
    bool del = n == strlen(CLI_DELETE_FIELD) && memcmp(key, CLI_DELETE_FIELD, n) == 0;
    if (!ct && !del) return false;
    st->op_member = k;
    st->op_is_delete_flag = del;
    return true;
}

/* A placeholder for a NOT NULL column a delete does not give: a delete reads only the key. */
static fr_value produce_zero(const fr_type *t)
{
    if (fr_type_is_varwidth(t)) return fr_value_str(*t, "", 0);
    return fr_value_int(*t, 0);
}

/* ---- rows and batches ------------------------------------------------------------------ */

/* Appends one row whose field k (for column c, k = st->member_of[c]) has the given kind and
 * text. On error the builder is back at the end of the previous row. */
static int produce_row(produce_state *st, const cli_json_kind *kinds, const char *const *texts,
                       const size_t *lens, bool csv, fr_error *err)
{
    int op = FIRTH_OP_UPSERT;
    if (st->op_member >= 0) {
        int k = st->op_member;
        FR_TRY(produce_op(st, kinds[k], texts[k], lens[k], &op, err));
        if (op == PRODUCE_SKIP) return 0;
    }
    fr_value *vals = fr_calloc((size_t)st->ncols, sizeof *vals);
    FR_CHECK(vals, FR_ENOMEM, err, "out of memory for a row");
    fr_buf_reset(&st->bytes);
    int rc = 0;
    for (int c = 0; c < st->ncols && rc == 0; c++) {
        const fr_field *f = fr_schema_field(st->schema, c);
        int k = st->member_of[c];
        if ((k < 0 || kinds[k] == CLI_JSON_NULL) && op == FIRTH_OP_DELETE && !f->type.nullable)
            vals[c] = produce_zero(&f->type);
        else if (k < 0 || kinds[k] == CLI_JSON_NULL)
            vals[c] = fr_value_null(f->type);
        else
            rc = produce_convert(st, f, kinds[k], csv, texts[k], lens[k], &vals[c], err);
    }
    for (int c = 0; c < st->ncols && rc == 0; c++) {
        if (vals[c].type.id == FR_T_BYTES && !vals[c].is_null)
            vals[c].v.s.ptr = st->bytes.data + (uintptr_t)vals[c].v.s.ptr;
        rc = fr_builder_append(st->bld, c, &vals[c], err);
    }
    fr_free(vals);
    if (rc == 0 && st->pk) {
        uint8_t o = (uint8_t)op;
        rc = fr_buf_append(&st->ops, &o, 1, err);
        st->any_delete |= op == FIRTH_OP_DELETE;
    }
    if (rc < 0) fr_builder_rollback_row(st->bld);
    return rc;
}

/* Appends the batch built so far. */
static int produce_flush(produce_state *st)
{
    if (fr_builder_num_rows(st->bld) == 0) return 0;
    fr_error err = {0};
    fr_batch *b = NULL;
    if (fr_builder_finish(st->bld, &b, &err) < 0) {
        cli_error("%s", err.msg);
        return CLI_EXIT_FAILED;
    }
    const uint8_t *ops = st->any_delete ? st->ops.data : NULL;
    int rc = cli_writer_append_ops(&st->w, b, ops, st->last_line);
    fr_buf_reset(&st->ops);
    st->any_delete = false;
    return rc;
}

/* Counts a row into the batch and appends the batch once it is full. */
static int produce_row_done(produce_state *st, int64_t last_line)
{
    st->last_line = last_line;
    if (fr_builder_num_rows(st->bld) >= st->batch_rows) return produce_flush(st);
    return 0;
}

/* ---- NDJSON ---------------------------------------------------------------------------- */

static bool produce_blank(const fr_buf *l)
{
    for (size_t i = 0; i < l->len; i++)
        if (l->data[i] != ' ' && l->data[i] != '\t') return false;
    return true;
}

/* The schema's column names for a message ("a, b, c"), cut short when long. */
static void produce_columns(const fr_schema *s, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < fr_schema_num_fields(s) && used + 4 < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? ", " : "",
                         fr_schema_field(s, i)->name);
        if (n < 0 || (size_t)n >= cap - used) {
            snprintf(out + (cap > 4 ? cap - 4 : 0), 4, "...");
            break;
        }
        used += (size_t)n;
    }
}

/* Maps the members of one object to columns; unknown and repeated keys are errors. */
static int produce_map_members(produce_state *st, const cli_json_member *m, int count,
                               fr_error *err)
{
    for (int c = 0; c < st->ncols; c++) st->member_of[c] = -1;
    st->op_member = -1;
    for (int k = 0; k < count; k++) {
        char key[FR_NAME_BYTES_MAX + 1];
        int c = -1;
        if (m[k].key_len <= FR_NAME_BYTES_MAX && !memchr(m[k].key, 0, m[k].key_len)) {
            memcpy(key, m[k].key, m[k].key_len);
            key[m[k].key_len] = 0;
            c = fr_schema_find(st->schema, key);
        }
        if (c < 0 && st->op_member >= 0 && produce_op_field(st, m[k].key, m[k].key_len, k))
            return fr_fail(err, FR_EINVAL, "a record gives %s or %s, not both",
                           CLI_CHANGE_TYPE_FIELD, CLI_DELETE_FIELD);
        if (c < 0 && produce_op_field(st, m[k].key, m[k].key_len, k)) continue;
        if (c < 0) {
            char all[160];
            produce_columns(st->schema, all, sizeof all);
            return fr_fail(err, FR_EINVAL, "unknown column '%.*s' (the columns of %s: %s)",
                           (int)(m[k].key_len > 64 ? 64 : m[k].key_len), m[k].key, st->table,
                           all);
        }
        if (st->member_of[c] >= 0)
            return fr_fail(err, FR_EINVAL, "column '%s' is given twice",
                           fr_schema_field(st->schema, c)->name);
        st->member_of[c] = k;
    }
    return 0;
}

static int produce_json(produce_state *st, FILE *in)
{
    cli_lines lines;
    cli_lines_init(&lines, in);
    cli_json_scratch scratch = {0};
    cli_json_kind *kinds = fr_calloc(CLI_JSON_MEMBERS_MAX, sizeof *kinds);
    const char **texts = fr_calloc(CLI_JSON_MEMBERS_MAX, sizeof *texts);
    size_t *lens = fr_calloc(CLI_JSON_MEMBERS_MAX, sizeof *lens);
    int rc = 0;
    if (!kinds || !texts || !lens) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILED;
    }
    while (rc == 0) {
        fr_error err = {0};
        int got = cli_lines_next(&lines, &err);
        if (got < 0) {
            rc = cli_writer_stop(&st->w, lines.line_no + 1, err.msg);
            break;
        }
        if (got == 0) break;
        if (produce_blank(&lines.line)) continue;
        cli_json_member *m = NULL;
        int count = 0;
        if (cli_json_parse_object(lines.line.data, lines.line.len, &scratch, &m, &count,
                                  &err) < 0 ||
            produce_map_members(st, m, count, &err) < 0) {
            rc = cli_writer_stop(&st->w, lines.line_no, err.msg);
            break;
        }
        for (int k = 0; k < count; k++) {
            kinds[k] = m[k].kind;
            texts[k] = m[k].text;
            lens[k] = m[k].len;
        }
        if (produce_row(st, kinds, texts, lens, false, &err) < 0) {
            rc = cli_writer_stop(&st->w, lines.line_no, err.msg);
            break;
        }
        rc = produce_row_done(st, lines.line_no);
    }
    /* Blank lines at the end belong to no batch; the last batch ends at its last record. */
    if (rc == 0) rc = produce_flush(st);
    fr_free(kinds);
    fr_free(texts);
    fr_free(lens);
    cli_json_scratch_free(&scratch);
    cli_lines_free(&lines);
    return rc;
}

/* ---- CSV ------------------------------------------------------------------------------- */

/* The header names the columns: field k holds column col_of[k]. */
static int produce_csv_header(produce_state *st, const cli_csv_record *rec, int *col_of,
                              fr_error *err)
{
    for (int c = 0; c < st->ncols; c++) st->member_of[c] = -1;
    st->op_member = -1;
    for (int k = 0; k < rec->count; k++) {
        char key[FR_NAME_BYTES_MAX + 1];
        size_t n = rec->len[k];
        const char *name = (const char *)rec->text.data + rec->start[k];
        int c = -1;
        if (n <= FR_NAME_BYTES_MAX && !memchr(name, 0, n)) {
            memcpy(key, name, n);
            key[n] = 0;
            c = fr_schema_find(st->schema, key);
        }
        if (c < 0 && st->op_member >= 0 && produce_op_field(st, name, n, k))
            return fr_fail(err, FR_EINVAL, "the header names %s or %s, not both",
                           CLI_CHANGE_TYPE_FIELD, CLI_DELETE_FIELD);
        if (c < 0 && produce_op_field(st, name, n, k)) {
            col_of[k] = -1;
            continue;
        }
        if (c < 0) {
            char all[160];
            produce_columns(st->schema, all, sizeof all);
            return fr_fail(err, FR_EINVAL, "the header names an unknown column '%.*s' (the "
                                           "columns of %s: %s)",
                           (int)(n > 64 ? 64 : n), name, st->table, all);
        }
        if (st->member_of[c] >= 0)
            return fr_fail(err, FR_EINVAL, "the header names column '%s' twice",
                           fr_schema_field(st->schema, c)->name);
        st->member_of[c] = k;
        col_of[k] = c;
    }
    return 0;
}

static int produce_csv_row(produce_state *st, const cli_csv_record *rec, int nheader,
                           cli_json_kind *kinds, const char **texts, size_t *lens,
                           fr_error *err)
{
    FR_CHECK(rec->count == nheader, FR_EINVAL, err, "%d fields where the header has %d",
             rec->count, nheader);
    for (int k = 0; k < rec->count; k++) {
        /* An empty unquoted field is NULL; "" is the empty string. */
        kinds[k] = rec->len[k] == 0 && !rec->quoted[k] ? CLI_JSON_NULL : CLI_JSON_STRING;
        texts[k] = (const char *)rec->text.data + rec->start[k];
        lens[k] = rec->len[k];
    }
    return produce_row(st, kinds, texts, lens, true, err);
}

static int produce_csv(produce_state *st, FILE *in)
{
    cli_csv_record rec = {0};
    int64_t line_no = 0;
    int nheader = 0, rc = 0;
    int *col_of = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *col_of);
    cli_json_kind *kinds = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *kinds);
    const char **texts = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *texts);
    size_t *lens = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *lens);
    if (!col_of || !kinds || !texts || !lens) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILED;
    }
    fr_error err = {0};
    int got = rc ? 0 : cli_csv_next(in, &line_no, &rec, &err);
    if (got < 0) rc = cli_writer_stop(&st->w, line_no, err.msg);
    else if (got == 0 && rc == 0) {
        cli_error("stdin is empty: CSV input starts with a header line naming the columns");
        rc = CLI_EXIT_FAILED;
    } else if (rc == 0 && produce_csv_header(st, &rec, col_of, &err) < 0) {
        rc = cli_writer_stop(&st->w, 1, err.msg);
    }
    nheader = rec.count;
    st->w.next_first = line_no + 1;
    while (rc == 0) {
        got = cli_csv_next(in, &line_no, &rec, &err);
        if (got < 0) {
            rc = cli_writer_stop(&st->w, rec.line_no, err.msg);
            break;
        }
        if (got == 0) break;
        if (rec.count == 1 && rec.len[0] == 0 && !rec.quoted[0]) continue; /* a blank line */
        if (produce_csv_row(st, &rec, nheader, kinds, texts, lens, &err) < 0) {
            rc = cli_writer_stop(&st->w, rec.line_no, err.msg);
            break;
        }
        rc = produce_row_done(st, line_no);
    }
    if (rc == 0) rc = produce_flush(st);
    fr_free(col_of);
    fr_free(kinds);
    fr_free(texts);
    fr_free(lens);
    cli_csv_record_free(&rec);
    return rc;
}

/* ---- the command ----------------------------------------------------------------------- */

static int produce_run(produce_state *st, const char *data_dir, const char *connect,
                       const cli_config *cfg, cli_format format)
{
    firth_client *c = NULL;
    int rc = cli_open_target("produce", data_dir, connect, cfg, &c);
    if (rc) return rc;
    cli_writer_init(&st->w, c, st->table, format == CLI_FORMAT_ARROW ? "record" : "line",
                    st->verbose);
    fr_error err = {0};
    if (cli_table_schema(c, st->table, &st->schema, &err) < 0) {
        cli_error("%s", err.msg);
        return CLI_EXIT_FAILED;
    }
    firth_error ferr = {0};
    if (firth_table_is_pk(c, st->table, &st->pk, &ferr) < 0) {
        cli_error("%s", ferr.msg);
        return CLI_EXIT_FAILED;
    }
    st->w.pk = st->pk;
    if (format == CLI_FORMAT_ARROW) {
        if (isatty(STDIN_FILENO)) {
            cli_error("--format arrow reads a binary Arrow IPC stream: redirect stdin from a "
                      "file or a pipe");
            return CLI_EXIT_USAGE;
        }
        return cli_produce_arrow(&st->w, st->schema, st->batch_rows, stdin);
    }
    st->ncols = fr_schema_num_fields(st->schema);
    st->member_of = fr_calloc((size_t)st->ncols + 1, sizeof *st->member_of);
    if (!st->member_of || fr_builder_new(st->schema, &st->bld, &err) < 0) {
        cli_error("%s", st->member_of ? err.msg : "out of memory");
        return CLI_EXIT_FAILED;
    }
    /* Typed records wait for a full batch; say so, or the terminal seems to do nothing. */
    if (isatty(STDIN_FILENO))
        fprintf(stderr, "firth produce: reading %s records for %s from the terminal; they are "
                        "appended every %lld records and at the end (Ctrl-D)\n",
                format == CLI_FORMAT_CSV ? "CSV" : "NDJSON", st->table,
                (long long)st->batch_rows);
    rc = format == CLI_FORMAT_CSV ? produce_csv(st, stdin) : produce_json(st, stdin);
    if (rc == 0) cli_writer_summary(&st->w);
    return rc;
}

int cli_produce_main(int argc, char **argv)
{
    const char *data_dir = NULL, *connect = NULL, *table = NULL, *format_text = NULL,
               *batch_rows = NULL;
    bool verbose = false, help = false;
    cli_config cfg = {0};
    const cli_opt opts[] = {
        {"data-dir", 0, &data_dir, NULL},      {"connect", 0, &connect, NULL},
        {"table", 't', &table, NULL},
        {"format", 0, &format_text, NULL},     {"batch-rows", 0, &batch_rows, NULL},
        {"verbose", 'v', NULL, &verbose},
    };
    int rc = cli_parse_opts_config("produce", argc, argv, opts, sizeof opts / sizeof opts[0],
                                   &cfg, &help);
    if (rc || help) return rc;
    cli_format format = CLI_FORMAT_JSON;
    unsigned allowed = 1u << CLI_FORMAT_JSON | 1u << CLI_FORMAT_CSV | 1u << CLI_FORMAT_ARROW;
    if (format_text && (rc = cli_format_parse("produce", format_text, allowed, &format)))
        return rc;
    produce_state st = {.table = table, .verbose = verbose, .op_member = -1,
                        .batch_rows = CLI_PRODUCE_BATCH_ROWS_DEFAULT};
    if (batch_rows && (rc = cli_parse_count("produce", "--batch-rows", batch_rows, 1,
                                            CLI_PRODUCE_BATCH_ROWS_MAX, &st.batch_rows)))
        return rc;
    if (!data_dir && !connect)
        return cli_usage_error("produce", "--data-dir DIR or --connect HOST:PORT is required");
    if (!table) return cli_usage_error("produce", "--table DB.TABLE is required");
    fr_buf_init(&st.bytes);
    fr_buf_init(&st.shown);
    fr_buf_init(&st.ops);
    rc = produce_run(&st, data_dir, connect, &cfg, format);
    fr_builder_free(st.bld);
    fr_schema_free(st.schema);
    fr_free(st.member_of);
    fr_buf_free(&st.bytes);
    fr_buf_free(&st.shown);
    fr_buf_free(&st.ops);
    if (st.w.client) firth_close(st.w.client);
    return rc;
}
