/* cli_input.c — the readers of `firth produce`: lines from a stream, flat JSON objects
 * (one NDJSON record) and RFC 4180 CSV records.
 *
 * Everything here reads bytes from outside, so every length is checked against the named
 * limits (CLI_INPUT_LINE_BYTES_MAX, CLI_JSON_MEMBERS_MAX, FR_SCHEMA_COLUMNS_MAX) and bad
 * input is an FR_EINVAL message naming the byte or line, never a crash. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "cli/cli.h"

/* ---- lines ----------------------------------------------------------------------------- */

void cli_lines_init(cli_lines *r, FILE *in)
{
    memset(r, 0, sizeof *r);
    r->in = in;
    fr_buf_init(&r->line);
}

void cli_lines_free(cli_lines *r) { fr_buf_free(&r->line); }

int cli_lines_next(cli_lines *r, fr_error *err)
{
    fr_buf *l = &r->line;
    fr_buf_reset(l);
    bool any = false;
    int c;
    while ((c = getc_unlocked(r->in)) != EOF) {
        any = true;
        if (c == '\n') break;
        FR_CHECK(l->len < CLI_INPUT_LINE_BYTES_MAX, FR_ELIMIT, err,
                 "stdin line %lld is longer than the limit of %d bytes",
                 (long long)r->line_no + 1, CLI_INPUT_LINE_BYTES_MAX);
        if (l->len == l->cap) FR_TRY(fr_buf_reserve(l, l->cap ? l->cap : 256, err));
        l->data[l->len++] = (uint8_t)c;
    }
    if (ferror(r->in)) return fr_fail_errno(err, errno, "reading stdin");
    if (!any) return 0;
    r->line_no++;
    if (l->len && l->data[l->len - 1] == '\r') l->len--;
    if (!r->bom_checked) {
        r->bom_checked = true;
        if (l->len >= 3 && memcmp(l->data, "\xEF\xBB\xBF", 3) == 0) {
            memmove(l->data, l->data + 3, l->len - 3);
            l->len -= 3;
        }
    }
    return 1;
}

/* ---- flat JSON objects ----------------------------------------------------------------- */

typedef struct cli_json_in {
    const uint8_t *p;
    size_t n, i;
    fr_buf *text; /* reserved up front: appending never moves it */
    fr_error *err;
} cli_json_in;

static int cli_json_fail(cli_json_in *in, const char *what)
{
    if (in->i >= in->n)
        return fr_fail(in->err, FR_EINVAL, "invalid JSON: the line ends too early (%s)", what);
    return fr_fail(in->err, FR_EINVAL, "invalid JSON at byte %zu: %s", in->i + 1, what);
}

static void cli_json_ws(cli_json_in *in)
{
    while (in->i < in->n && (in->p[in->i] == ' ' || in->p[in->i] == '\t' ||
                             in->p[in->i] == '\r' || in->p[in->i] == '\n'))
        in->i++;
}

static void cli_json_put(cli_json_in *in, const void *s, size_t n)
{
    assert(in->text->len + n <= in->text->cap);
    memcpy(in->text->data + in->text->len, s, n);
    in->text->len += n;
}

static int cli_hex4(const uint8_t *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t c = p[k];
        int d = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

static void cli_put_utf8(cli_json_in *in, uint32_t cp)
{
    uint8_t b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | cp >> 6);
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | cp >> 18);
        b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    cli_json_put(in, b, n);
}

/* A \u escape at in->i (after the backslash and 'u'), with its low surrogate if any. */
static int cli_json_unicode(cli_json_in *in)
{
    uint32_t cp, lo;
    if (in->i + 4 > in->n || cli_hex4(in->p + in->i, &cp) < 0)
        return cli_json_fail(in, "\\u needs four hex digits");
    in->i += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return cli_json_fail(in, "a lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (in->i + 6 > in->n || in->p[in->i] != '\\' || in->p[in->i + 1] != 'u' ||
            cli_hex4(in->p + in->i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
            return cli_json_fail(in, "a high surrogate without its low surrogate");
        in->i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    cli_put_utf8(in, cp);
    return 0;
}

/* Checks that the UTF-8 sequence at in->i is valid and copies it. */
static int cli_json_utf8(cli_json_in *in)
{
    const uint8_t *p = in->p + in->i;
    size_t avail = in->n - in->i;
    uint8_t c = p[0];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || len > avail || c > 0xF4) return cli_json_fail(in, "invalid UTF-8");
    uint32_t v = c & (0x7F >> len);
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) return cli_json_fail(in, "invalid UTF-8");
        v = v << 6 | (p[k] & 0x3F);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return cli_json_fail(in, "invalid UTF-8");
    cli_json_put(in, p, len);
    in->i += len;
    return 0;
}

/* A string at in->i (on its opening quote), unescaped into text. */
static int cli_json_str(cli_json_in *in, const char **s, size_t *len)
{
    assert(in->p[in->i] == '"');
    in->i++;
    size_t start = in->text->len;
    for (;;) {
        if (in->i >= in->n) return cli_json_fail(in, "a string is not closed");
        uint8_t c = in->p[in->i];
        if (c == '"') break;
        if (c < 0x20) return cli_json_fail(in, "a control character inside a string");
        if (c >= 0x80) {
            FR_TRY(cli_json_utf8(in));
            continue;
        }
        if (c != '\\') {
            cli_json_put(in, &c, 1);
            in->i++;
            continue;
        }
        if (++in->i >= in->n) return cli_json_fail(in, "a string is not closed");
        char e = (char)in->p[in->i++];
        const char *plain = strchr("\"\\/bfnrt", e);
        if (e == 'u') {
            FR_TRY(cli_json_unicode(in));
        } else if (e && plain) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            cli_json_put(in, &out[plain - "\"\\/bfnrt"], 1);
        } else {
            in->i--;
            return cli_json_fail(in, "an unknown escape in a string");
        }
    }
    in->i++;
    *s = (const char *)in->text->data + start;
    *len = in->text->len - start;
    return 0;
}

static bool cli_is_digit(const cli_json_in *in)
{
    return in->i < in->n && in->p[in->i] >= '0' && in->p[in->i] <= '9';
}

/* A number in JSON's grammar, kept as written. */
static int cli_json_num(cli_json_in *in, const char **s, size_t *len)
{
    size_t from = in->i;
    if (in->p[in->i] == '-') in->i++;
    if (!cli_is_digit(in)) return cli_json_fail(in, "a number needs a digit");
    if (in->p[in->i] == '0')
        in->i++;
    else
        while (cli_is_digit(in)) in->i++;
    if (in->i < in->n && in->p[in->i] == '.') {
        in->i++;
        if (!cli_is_digit(in)) return cli_json_fail(in, "a digit must follow the '.'");
        while (cli_is_digit(in)) in->i++;
    }
    if (in->i < in->n && (in->p[in->i] == 'e' || in->p[in->i] == 'E')) {
        in->i++;
        if (in->i < in->n && (in->p[in->i] == '+' || in->p[in->i] == '-')) in->i++;
        if (!cli_is_digit(in)) return cli_json_fail(in, "an exponent needs a digit");
        while (cli_is_digit(in)) in->i++;
    }
    *s = (const char *)in->text->data + in->text->len;
    *len = in->i - from;
    cli_json_put(in, in->p + from, *len);
    return 0;
}

static int cli_json_word(cli_json_in *in, const char *word, cli_json_member *m,
                         cli_json_kind kind)
{
    size_t n = strlen(word);
    if (in->n - in->i < n || memcmp(in->p + in->i, word, n) != 0)
        return cli_json_fail(in, "expected a string, a number, true, false or null");
    in->i += n;
    m->kind = kind;
    m->text = word;
    m->len = n;
    return 0;
}

static int cli_json_value(cli_json_in *in, cli_json_member *m)
{
    if (in->i >= in->n) return cli_json_fail(in, "a value was expected");
    uint8_t c = in->p[in->i];
    if (c == '"') {
        m->kind = CLI_JSON_STRING;
        return cli_json_str(in, &m->text, &m->len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        m->kind = CLI_JSON_NUMBER;
        return cli_json_num(in, &m->text, &m->len);
    }
    if (c == 't') return cli_json_word(in, "true", m, CLI_JSON_TRUE);
    if (c == 'f') return cli_json_word(in, "false", m, CLI_JSON_FALSE);
    if (c == 'n') return cli_json_word(in, "null", m, CLI_JSON_NULL);
    if (c == '{' || c == '[')
        return cli_json_fail(in, "nested objects and arrays are not supported (a value must "
                                 "be a string, a number, true, false or null)");
    return cli_json_fail(in, "expected a string, a number, true, false or null");
}

static int cli_json_members(cli_json_in *in, cli_json_scratch *sc, int *count)
{
    *count = 0;
    cli_json_ws(in);
    if (in->i < in->n && in->p[in->i] == '}') {
        in->i++;
        return 0;
    }
    for (;;) {
        cli_json_ws(in);
        if (in->i >= in->n || in->p[in->i] != '"')
            return cli_json_fail(in, "expected a key in double quotes");
        if (*count == CLI_JSON_MEMBERS_MAX)
            return fr_fail(in->err, FR_ELIMIT, "the object has more than %d keys",
                           CLI_JSON_MEMBERS_MAX);
        if (*count == sc->cap) {
            int cap = sc->cap ? 2 * sc->cap : 16;
            cli_json_member *m = fr_realloc(sc->members, (size_t)cap * sizeof *m);
            FR_CHECK(m, FR_ENOMEM, in->err, "out of memory parsing JSON");
            sc->members = m;
            sc->cap = cap;
        }
        cli_json_member *m = &sc->members[*count];
        FR_TRY(cli_json_str(in, &m->key, &m->key_len));
        cli_json_ws(in);
        if (in->i >= in->n || in->p[in->i] != ':')
            return cli_json_fail(in, "expected ':' after the key");
        in->i++;
        cli_json_ws(in);
        FR_TRY(cli_json_value(in, m));
        (*count)++;
        cli_json_ws(in);
        if (in->i < in->n && in->p[in->i] == ',') {
            in->i++;
            continue;
        }
        if (in->i < in->n && in->p[in->i] == '}') {
            in->i++;
            return 0;
        }
        return cli_json_fail(in, "expected ',' or '}'");
    }
}

int cli_json_parse_object(const uint8_t *p, size_t n, cli_json_scratch *scratch,
                          cli_json_member **members, int *count, fr_error *err)
{
    /* Unescaped text is never longer than its source, so reserving n bytes once keeps every
     * pointer handed out stable. */
    fr_buf_reset(&scratch->text);
    FR_TRY(fr_buf_reserve(&scratch->text, n + 1, err));
    cli_json_in in = {.p = p, .n = n, .i = 0, .text = &scratch->text, .err = err};
    cli_json_ws(&in);
    if (in.i >= n || p[in.i] != '{')
        return cli_json_fail(&in, "a record must be a JSON object ({\"column\": value, ...})");
    in.i++;
    FR_TRY(cli_json_members(&in, scratch, count));
    cli_json_ws(&in);
    if (in.i < n) return cli_json_fail(&in, "text after the end of the object");
    *members = scratch->members;
    return 0;
}

void cli_json_scratch_free(cli_json_scratch *s)
{
    fr_buf_free(&s->text);
    fr_free(s->members);
    memset(s, 0, sizeof *s);
}

/* ---- CSV records ----------------------------------------------------------------------- */

void cli_csv_record_free(cli_csv_record *rec)
{
    fr_buf_free(&rec->text);
    fr_free(rec->start);
    fr_free(rec->len);
    fr_free(rec->quoted);
    memset(rec, 0, sizeof *rec);
}

static int cli_csv_push(cli_csv_record *rec, size_t start, bool quoted, fr_error *err)
{
    FR_CHECK(rec->count < FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "line %lld: more than %d fields", (long long)rec->line_no, FR_SCHEMA_COLUMNS_MAX);
    if (rec->count == rec->cap) {
        int cap = rec->cap ? 2 * rec->cap : 16;
        size_t *s = fr_realloc(rec->start, (size_t)cap * sizeof *s);
        if (s) rec->start = s;
        size_t *l = s ? fr_realloc(rec->len, (size_t)cap * sizeof *l) : NULL;
        if (l) rec->len = l;
        bool *q = l ? fr_realloc(rec->quoted, (size_t)cap * sizeof *q) : NULL;
        FR_CHECK(q, FR_ENOMEM, err, "out of memory reading CSV");
        rec->quoted = q;
        rec->cap = cap;
    }
    rec->start[rec->count] = start;
    rec->len[rec->count] = rec->text.len - start;
    rec->quoted[rec->count] = quoted;
    rec->count++;
    return 0;
}

static int cli_csv_byte(cli_csv_record *rec, int c, fr_error *err)
{
    fr_buf *t = &rec->text;
    FR_CHECK(t->len < CLI_INPUT_LINE_BYTES_MAX, FR_ELIMIT, err,
             "the record starting on line %lld is longer than the limit of %d bytes",
             (long long)rec->line_no, CLI_INPUT_LINE_BYTES_MAX);
    if (t->len == t->cap) FR_TRY(fr_buf_reserve(t, t->cap ? t->cap : 256, err));
    t->data[t->len++] = (uint8_t)c;
    return 0;
}

/* Reads a quoted field's content (after its opening quote); returns the character after
 * the closing quote. */
static int cli_csv_quoted(FILE *in, int64_t *line_no, cli_csv_record *rec, int *next,
                          fr_error *err)
{
    for (;;) {
        int c = getc_unlocked(in);
        if (c == EOF)
            return fr_fail(err, FR_EINVAL, "line %lld: a quoted field is not closed before "
                                           "the end of the input", (long long)rec->line_no);
        if (c == '"') {
            c = getc_unlocked(in);
            if (c != '"') {
                *next = c;
                return 0;
            }
        } else if (c == '\n') {
            (*line_no)++;
        }
        FR_TRY(cli_csv_byte(rec, c, err));
    }
}

int cli_csv_next(FILE *in, int64_t *line_no, cli_csv_record *rec, fr_error *err)
{
    fr_buf_reset(&rec->text);
    rec->count = 0;
    int c = getc_unlocked(in);
    if (c == EOF) return ferror(in) ? fr_fail_errno(err, errno, "reading stdin") : 0;
    (*line_no)++;
    rec->line_no = *line_no;
    if (rec->line_no == 1 && c == 0xEF) { /* a UTF-8 byte-order mark */
        int c2 = getc_unlocked(in), c3 = getc_unlocked(in);
        FR_CHECK(c2 == 0xBB && c3 == 0xBF, FR_EINVAL, err, "line 1: invalid UTF-8 at the start");
        c = getc_unlocked(in);
    }
    for (;;) {
        size_t start = rec->text.len;
        bool quoted = c == '"';
        if (quoted) {
            FR_TRY(cli_csv_quoted(in, line_no, rec, &c, err));
            if (c != ',' && c != '\n' && c != '\r' && c != EOF)
                return fr_fail(err, FR_EINVAL, "line %lld: text after a closing quote (a quote "
                                               "inside a field is written \"\")",
                               (long long)*line_no);
        } else {
            while (c != ',' && c != '\n' && c != '\r' && c != EOF) {
                if (c == '"')
                    return fr_fail(err, FR_EINVAL, "line %lld: a quote inside an unquoted "
                                                   "field (quote the field and write \"\")",
                                   (long long)*line_no);
                FR_TRY(cli_csv_byte(rec, c, err));
                c = getc_unlocked(in);
            }
        }
        if (c == '\r') {
            c = getc_unlocked(in);
            if (c != '\n' && c != EOF)
                return fr_fail(err, FR_EINVAL, "line %lld: a carriage return that does not end "
                                               "the line", (long long)*line_no);
        }
        FR_TRY(cli_csv_push(rec, start, quoted, err));
        if (c == ',') {
            c = getc_unlocked(in);
            continue;
        }
        if (ferror(in)) return fr_fail_errno(err, errno, "reading stdin");
        return 1; /* '\n' or the end of input */
    }
}
