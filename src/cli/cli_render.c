/* cli_render.c — how the command shows values and results: the text form (tables, CSV),
 * the JSON form (one object per row), base64, and the row printers of `firth sql` and
 * `firth consume`.
 *
 * Invariants: a printer writes whole rows only (a row is formatted completely before any
 * of it is written), CSV output round-trips through `firth produce --format csv`, JSON
 * output through `firth produce`, and number text never depends on the locale. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "cli/cli.h"
#include "client/client_bridge.h"

/* ---- small writers --------------------------------------------------------------------- */

int cli_write(FILE *f, const fr_buf *buf, fr_error *err)
{
    if (buf->len && fwrite(buf->data, 1, buf->len, f) != buf->len)
        return fr_fail_errno(err, errno, "writing the output");
    return 0;
}

static const char CLI_B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int cli_base64_encode(const uint8_t *p, size_t n, fr_buf *out, fr_error *err)
{
    FR_TRY(fr_buf_reserve(out, (n + 2) / 3 * 4, err));
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        char q[4] = {CLI_B64[v >> 18 & 63], CLI_B64[v >> 12 & 63],
                     i + 1 < n ? CLI_B64[v >> 6 & 63] : '=', i + 2 < n ? CLI_B64[v & 63] : '='};
        FR_TRY(fr_buf_append(out, q, 4, err));
    }
    return 0;
}

static int cli_b64_digit(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int cli_base64_decode(const char *s, size_t n, fr_buf *out, fr_error *err)
{
    FR_CHECK(n % 4 == 0, FR_EINVAL, err, "base64 text must have a multiple of 4 characters");
    for (size_t i = 0; i < n; i += 4) {
        int pad = (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=');
        FR_CHECK(pad == 0 || i + 4 == n, FR_EINVAL, err, "base64 padding before the end");
        uint32_t v = 0;
        for (int k = 0; k < 4 - pad; k++) {
            int d = cli_b64_digit(s[i + k]);
            FR_CHECK(d >= 0, FR_EINVAL, err, "'%c' is not a base64 character", s[i + k]);
            v |= (uint32_t)d << (18 - 6 * k);
        }
        uint8_t b[3] = {(uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
        FR_TRY(fr_buf_append(out, b, (size_t)(3 - pad), err));
    }
    return 0;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not valid UTF-8. */
static size_t cli_utf8_len(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || len > n || c > 0xF4) return 0;
    uint32_t v = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

int cli_json_string(const uint8_t *s, size_t n, fr_buf *out, fr_error *err)
{
    FR_TRY(fr_buf_reserve(out, n + 2, err));
    FR_TRY(fr_buf_append(out, "\"", 1, err));
    size_t run = 0; /* bytes copied as they are, written in one go */
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        uint32_t cp;
        size_t len = cli_utf8_len(s + i, n - i, &cp);
        if (len && c >= 0x20 && c != '"' && c != '\\') {
            i += len;
            run += len;
            continue;
        }
        FR_TRY(fr_buf_append(out, s + i - run, run, err));
        run = 0;
        char esc[8];
        const char *e = esc;
        size_t elen = 2;
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (len == 0) { /* invalid UTF-8: one byte becomes U+FFFD */
                e = "\xEF\xBF\xBD";
                elen = 3;
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                elen = 6;
            }
        }
        FR_TRY(fr_buf_append(out, e, elen, err));
        i += len ? len : 1;
    }
    FR_TRY(fr_buf_append(out, s + n - run, run, err));
    return fr_buf_append(out, "\"", 1, err);
}

int cli_csv_field(const uint8_t *s, size_t n, fr_buf *out, fr_error *err)
{
    bool quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) return fr_buf_append(out, s, n, err);
    FR_TRY(fr_buf_append(out, "\"", 1, err));
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '"') continue;
        FR_TRY(fr_buf_append(out, s + from, i + 1 - from, err)); /* up to and with the quote */
        FR_TRY(fr_buf_append(out, "\"", 1, err));
        from = i + 1;
    }
    FR_TRY(fr_buf_append(out, s + from, n - from, err));
    return fr_buf_append(out, "\"", 1, err);
}

/* ---- values ---------------------------------------------------------------------------- */

int cli_render_text(const fr_value *v, fr_buf *out, fr_error *err)
{
    return fr_value_format(v, out, err);
}

/* The shortest %g text that reads back as the same number (as JavaScript prints numbers). */
static int cli_json_double(double f, bool single, fr_buf *out, fr_error *err)
{
    if (isnan(f)) return fr_buf_append(out, "\"NaN\"", 5, err);
    if (isinf(f))
        return f > 0 ? fr_buf_append(out, "\"Infinity\"", 10, err)
                     : fr_buf_append(out, "\"-Infinity\"", 11, err);
    char text[40];
    for (int prec = single ? 6 : 15; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, f);
        double back = strtod(text, NULL);
        if (single ? (float)back == (float)f : back == f) break;
    }
    return fr_buf_append(out, text, strlen(text), err);
}

int cli_render_json(const fr_value *v, fr_buf *out, fr_error *err)
{
    if (v->is_null) return fr_buf_append(out, "null", 4, err);
    switch (v->type.id) {
    case FR_T_BOOLEAN:
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT:
        /* The text form of booleans ("true", "false") and integers is valid JSON. */
        return fr_value_format(v, out, err);
    case FR_T_FLOAT:
        return cli_json_double(v->v.f, true, out, err);
    case FR_T_DOUBLE:
        return cli_json_double(v->v.f, false, out, err);
    case FR_T_DECIMAL: {
        char text[48];
        int n = fr_decimal_format(v->v.d, v->type.scale, text, sizeof text);
        return cli_json_string((const uint8_t *)text, (size_t)n, out, err);
    }
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
        return cli_json_string(v->v.s.ptr, v->v.s.len, out, err);
    case FR_T_BYTES:
        FR_TRY(fr_buf_append(out, "\"", 1, err));
        FR_TRY(cli_base64_encode(v->v.s.ptr, v->v.s.len, out, err));
        return fr_buf_append(out, "\"", 1, err);
    case FR_T_DATE:
    case FR_T_TIME:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ: {
        /* Temporal text is plain ASCII: format it in place, then quote it. */
        FR_TRY(fr_buf_append(out, "\"", 1, err));
        FR_TRY(fr_value_format(v, out, err));
        return fr_buf_append(out, "\"", 1, err);
    }
    }
    return fr_fail(err, FR_EUNSUPPORTED, "no JSON form for type id %d", (int)v->type.id);
}

/* ---- printers -------------------------------------------------------------------------- */

int cli_format_parse(const char *cmd, const char *text, unsigned allowed, cli_format *out)
{
    static const char *const names[] = {"table", "csv", "json", "arrow"};
    char list[64] = "";
    size_t used = 0;
    for (int f = 0; f < 4; f++) {
        if (!(allowed & (1u << f))) continue;
        if (strcmp(text, names[f]) == 0) {
            *out = (cli_format)f;
            return 0;
        }
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                 names[f]);
    }
    return cli_usage_error(cmd, "--format must be one of %s, not '%s'", list, text);
}

struct cli_printer {
    cli_format format;
    fr_schema *schema;
    FILE *out;
    bool with_offsets;
    bool header_done;
    int64_t rows;
    firth_batch **kept; /* table format: every batch until finish */
    int nkept, capkept;
    fr_buf line;     /* the text being built */
    fr_buf cell;     /* one cell's text */
};

int cli_printer_new(cli_format format, const fr_schema *schema, FILE *out, bool with_offsets,
                    cli_printer **p, fr_error *err)
{
    assert(format != CLI_FORMAT_ARROW);
    assert(!(with_offsets && format == CLI_FORMAT_TABLE));
    cli_printer *pr = fr_calloc(1, sizeof *pr);
    FR_CHECK(pr, FR_ENOMEM, err, "out of memory for the result printer");
    pr->format = format;
    pr->out = out;
    pr->with_offsets = with_offsets;
    pr->schema = fr_schema_clone(schema);
    fr_buf_init(&pr->line);
    fr_buf_init(&pr->cell);
    if (!pr->schema) {
        fr_free(pr);
        return fr_fail(err, FR_ENOMEM, "out of memory for the result schema");
    }
    *p = pr;
    return 0;
}

void cli_printer_free(cli_printer *p)
{
    if (!p) return;
    for (int i = 0; i < p->nkept; i++) firth_batch_free(p->kept[i]);
    fr_free(p->kept);
    fr_schema_free(p->schema);
    fr_buf_free(&p->line);
    fr_buf_free(&p->cell);
    fr_free(p);
}

int64_t cli_printer_num_rows(const cli_printer *p) { return p->rows; }

static int cli_csv_header(cli_printer *p, fr_error *err)
{
    fr_buf *l = &p->line;
    if (p->with_offsets) FR_TRY(fr_buf_append(l, "_bucket,_offset,", 16, err));
    int n = fr_schema_num_fields(p->schema);
    for (int i = 0; i < n; i++) {
        const char *name = fr_schema_field(p->schema, i)->name;
        if (i) FR_TRY(fr_buf_append(l, ",", 1, err));
        FR_TRY(cli_csv_field((const uint8_t *)name, strlen(name), l, err));
    }
    return fr_buf_append(l, "\n", 1, err);
}

static int cli_csv_row(cli_printer *p, const fr_batch *b, int64_t row, int bucket,
                       int64_t offset, fr_error *err)
{
    fr_buf *l = &p->line;
    if (p->with_offsets) FR_TRY(fr_buf_printf(l, err, "%d,%lld,", bucket, (long long)offset));
    for (int i = 0; i < fr_batch_num_columns(b); i++) {
        if (i) FR_TRY(fr_buf_append(l, ",", 1, err));
        fr_value v;
        fr_column_get(fr_batch_column(b, i), row, &v);
        if (v.is_null) continue;
        fr_buf_reset(&p->cell);
        FR_TRY(cli_render_text(&v, &p->cell, err));
        FR_TRY(cli_csv_field(p->cell.data, p->cell.len, l, err));
    }
    return fr_buf_append(l, "\n", 1, err);
}

static int cli_json_row(cli_printer *p, const fr_batch *b, int64_t row, int bucket,
                        int64_t offset, fr_error *err)
{
    fr_buf *l = &p->line;
    FR_TRY(fr_buf_append(l, "{", 1, err));
    if (p->with_offsets)
        FR_TRY(fr_buf_printf(l, err, "\"_bucket\":%d,\"_offset\":%lld%s", bucket,
                             (long long)offset, fr_batch_num_columns(b) ? "," : ""));
    for (int i = 0; i < fr_batch_num_columns(b); i++) {
        const char *name = fr_schema_field(p->schema, i)->name;
        if (i) FR_TRY(fr_buf_append(l, ",", 1, err));
        FR_TRY(cli_json_string((const uint8_t *)name, strlen(name), l, err));
        FR_TRY(fr_buf_append(l, ":", 1, err));
        fr_value v;
        fr_column_get(fr_batch_column(b, i), row, &v);
        FR_TRY(cli_render_json(&v, l, err));
    }
    return fr_buf_append(l, "}\n", 2, err);
}

/* Lines are written in chunks of about this size, so memory stays small for big batches. */
#define CLI_PRINT_CHUNK_BYTES (256 << 10)

static int cli_printer_stream(cli_printer *p, const fr_batch *b, int bucket,
                              const int64_t *offsets, fr_error *err)
{
    if (!p->header_done && p->format == CLI_FORMAT_CSV) FR_TRY(cli_csv_header(p, err));
    p->header_done = true;
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        int64_t off = offsets ? offsets[r] : -1;
        if (p->format == CLI_FORMAT_CSV)
            FR_TRY(cli_csv_row(p, b, r, bucket, off, err));
        else
            FR_TRY(cli_json_row(p, b, r, bucket, off, err));
        if (p->line.len >= CLI_PRINT_CHUNK_BYTES) {
            FR_TRY(cli_write(p->out, &p->line, err));
            fr_buf_reset(&p->line);
        }
    }
    FR_TRY(cli_write(p->out, &p->line, err));
    fr_buf_reset(&p->line);
    return 0;
}

int cli_printer_rows(cli_printer *p, firth_batch *b, int bucket, const int64_t *offsets,
                     fr_error *err)
{
    assert(!p->with_offsets || offsets);
    const fr_batch *fb = firth_batch_unwrap(b);
    if (fr_batch_num_columns(fb) != fr_schema_num_fields(p->schema)) {
        int have = fr_batch_num_columns(fb);
        firth_batch_free(b);
        return fr_fail(err, FR_ECORRUPT, "a result batch has %d columns where its schema has %d",
                       have, fr_schema_num_fields(p->schema));
    }
    p->rows += firth_batch_num_rows(b);
    if (p->format != CLI_FORMAT_TABLE) {
        int rc = cli_printer_stream(p, firth_batch_unwrap(b), bucket, offsets, err);
        firth_batch_free(b);
        return rc;
    }
    if (p->nkept == p->capkept) {
        int cap = p->capkept ? 2 * p->capkept : 16;
        firth_batch **k = fr_realloc(p->kept, (size_t)cap * sizeof *k);
        if (!k) {
            firth_batch_free(b);
            return fr_fail(err, FR_ENOMEM, "out of memory keeping result rows");
        }
        p->kept = k;
        p->capkept = cap;
    }
    p->kept[p->nkept++] = b;
    return 0;
}

/* ---- the table form -------------------------------------------------------------------- */

/* Appends a cell's text for a table to out. A line break stays one and the cell takes
 * several lines (marked with '+' as psql does); other control characters are shown
 * escaped, so that they cannot disturb the layout. */
static int cli_table_cell(const fr_column *c, int64_t row, fr_buf *out, fr_error *err)
{
    fr_value v;
    fr_column_get(c, row, &v);
    if (v.is_null) return fr_buf_append(out, "NULL", 4, err);
    fr_buf raw;
    fr_buf_init(&raw);
    int rc = cli_render_text(&v, &raw, err);
    for (size_t i = 0; rc == 0 && i < raw.len; i++) {
        uint8_t ch = raw.data[i];
        if ((ch >= 0x20 && ch != 0x7F) || ch == '\n') {
            rc = fr_buf_append(out, &ch, 1, err);
            continue;
        }
        const char *e = ch == '\r' ? "\\r" : ch == '\t' ? "\\t" : NULL;
        rc = e ? fr_buf_append(out, e, 2, err) : fr_buf_printf(out, err, "\\x%02x", ch);
    }
    fr_buf_free(&raw);
    return rc;
}

/* Columns a text takes on a terminal: one per character (two for wide ones when the
 * locale knows them). */
static size_t cli_display_width(const uint8_t *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = cli_utf8_len(s + i, n - i, &cp);
        if (!len) {
            w++;
            i++;
            continue;
        }
        int cw = cp < 0x80 ? 1 : wcwidth((wchar_t)cp);
        w += cw < 0 ? 1 : (size_t)cw;
        i += len;
    }
    return w;
}

/* The k-th line of a cell (lines end at '\n'); false when the cell has fewer lines. */
static bool cli_cell_line(const uint8_t *s, size_t n, int k, const uint8_t **line, size_t *len)
{
    size_t from = 0;
    for (int i = 0; i < k; i++) {
        const uint8_t *nl = memchr(s + from, '\n', n - from);
        if (!nl) return false;
        from = (size_t)(nl - s) + 1;
    }
    const uint8_t *nl = memchr(s + from, '\n', n - from);
    *line = s + from;
    *len = nl ? (size_t)(nl - s) - from : n - from;
    return true;
}

static int cli_cell_lines(const uint8_t *s, size_t n)
{
    int lines = 1;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    return lines;
}

static size_t cli_cell_width(const uint8_t *s, size_t n)
{
    size_t w = 0, len;
    const uint8_t *line;
    for (int k = 0; cli_cell_line(s, n, k, &line, &len); k++) {
        size_t lw = cli_display_width(line, len);
        if (lw > w) w = lw;
    }
    return w;
}

static int cli_table_rule(fr_buf *l, const size_t *width, int ncols, fr_error *err)
{
    for (int i = 0; i < ncols; i++) {
        FR_TRY(fr_buf_append(l, "+", 1, err));
        for (size_t k = 0; k < width[i] + 2; k++) FR_TRY(fr_buf_append(l, "-", 1, err));
    }
    return fr_buf_append(l, ncols ? "+\n" : "\n", ncols ? 2 : 1, err);
}

/* One line of one cell, padded to width; `more` marks a cell that goes on below. */
static int cli_table_put(fr_buf *l, const uint8_t *s, size_t n, size_t width, bool right,
                         bool more, fr_error *err)
{
    size_t w = cli_display_width(s, n);
    size_t pad = width > w ? width - w : 0;
    FR_TRY(fr_buf_append(l, "| ", 2, err));
    if (right)
        for (size_t k = 0; k < pad; k++) FR_TRY(fr_buf_append(l, " ", 1, err));
    FR_TRY(fr_buf_append(l, s, n, err));
    if (!right)
        for (size_t k = 0; k < pad; k++) FR_TRY(fr_buf_append(l, " ", 1, err));
    return fr_buf_append(l, more ? "+" : " ", 1, err);
}

/* Formats row r of b into p->cell: cell i at start[i], len[i] bytes. */
static int cli_table_row_text(cli_printer *p, const fr_batch *b, int64_t r, size_t *start,
                              size_t *len, fr_error *err)
{
    fr_buf_reset(&p->cell);
    for (int i = 0; i < fr_batch_num_columns(b); i++) {
        start[i] = p->cell.len;
        FR_TRY(cli_table_cell(fr_batch_column(b, i), r, &p->cell, err));
        len[i] = p->cell.len - start[i];
    }
    return 0;
}

/* Prints row r of b, on as many lines as its tallest cell needs. */
static int cli_table_row(cli_printer *p, const fr_batch *b, int64_t r, const size_t *width,
                         size_t *start, size_t *len, fr_error *err)
{
    int ncols = fr_batch_num_columns(b), height = 1;
    FR_TRY(cli_table_row_text(p, b, r, start, len, err));
    for (int i = 0; i < ncols; i++) {
        int h = cli_cell_lines(p->cell.data + start[i], len[i]);
        if (h > height) height = h;
    }
    for (int k = 0; k < height; k++) {
        for (int i = 0; i < ncols; i++) {
            const uint8_t *cell = p->cell.data + start[i], *line = NULL;
            size_t n = 0;
            cli_cell_line(cell, len[i], k, &line, &n);
            bool more = k + 1 < cli_cell_lines(cell, len[i]);
            bool right = fr_type_is_numeric(fr_schema_field(p->schema, i)->type.id);
            FR_TRY(cli_table_put(&p->line, line ? line : cell, n, width[i], right, more, err));
        }
        FR_TRY(fr_buf_append(&p->line, "|\n", 2, err));
    }
    return 0;
}

static int cli_table_print(cli_printer *p, size_t *width, size_t *start, size_t *len,
                           fr_error *err)
{
    int ncols = fr_schema_num_fields(p->schema);
    for (int i = 0; i < ncols; i++) {
        const char *name = fr_schema_field(p->schema, i)->name;
        width[i] = cli_display_width((const uint8_t *)name, strlen(name));
    }
    for (int k = 0; k < p->nkept; k++) {
        const fr_batch *b = firth_batch_unwrap(p->kept[k]);
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            FR_TRY(cli_table_row_text(p, b, r, start, len, err));
            for (int i = 0; i < ncols; i++) {
                size_t w = cli_cell_width(p->cell.data + start[i], len[i]);
                if (w > width[i]) width[i] = w;
            }
        }
    }
    fr_buf *l = &p->line;
    FR_TRY(cli_table_rule(l, width, ncols, err));
    for (int i = 0; i < ncols; i++) {
        const char *name = fr_schema_field(p->schema, i)->name;
        FR_TRY(cli_table_put(l, (const uint8_t *)name, strlen(name), width[i], false, false,
                             err));
    }
    FR_TRY(fr_buf_append(l, ncols ? "|\n" : "\n", ncols ? 2 : 1, err));
    FR_TRY(cli_table_rule(l, width, ncols, err));
    for (int k = 0; k < p->nkept && ncols > 0; k++) {
        const fr_batch *b = firth_batch_unwrap(p->kept[k]);
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            FR_TRY(cli_table_row(p, b, r, width, start, len, err));
            if (l->len >= CLI_PRINT_CHUNK_BYTES) {
                FR_TRY(cli_write(p->out, l, err));
                fr_buf_reset(l);
            }
        }
    }
    if (p->rows > 0) FR_TRY(cli_table_rule(l, width, ncols, err));
    FR_TRY(fr_buf_printf(l, err, "%lld row%s\n", (long long)p->rows, p->rows == 1 ? "" : "s"));
    FR_TRY(cli_write(p->out, l, err));
    fr_buf_reset(l);
    return 0;
}

int cli_printer_finish(cli_printer *p, fr_error *err)
{
    if (p->format == CLI_FORMAT_TABLE) {
        int ncols = fr_schema_num_fields(p->schema);
        /* Per column: its width, and the start and length of a row's cell text. */
        size_t *layout = fr_calloc(3 * (size_t)ncols + 1, sizeof *layout);
        FR_CHECK(layout, FR_ENOMEM, err, "out of memory for the table layout");
        int rc = cli_table_print(p, layout, layout + ncols, layout + 2 * ncols, err);
        fr_free(layout);
        FR_TRY(rc);
    } else if (p->format == CLI_FORMAT_CSV && !p->header_done) {
        /* A result without rows still names its columns. */
        FR_TRY(cli_csv_header(p, err));
        p->header_done = true;
        FR_TRY(cli_write(p->out, &p->line, err));
        fr_buf_reset(&p->line);
    }
    if (fflush(p->out) != 0) return fr_fail_errno(err, errno, "writing the output");
    return 0;
}
