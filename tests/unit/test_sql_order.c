/* test_sql_order.c — the ORDER BY sort stage (sql_order.c) on batches built here, without an
 * engine: ascending and descending keys of every type, NULLS FIRST and LAST both ways,
 * several keys, stability across batches and across the compaction of a LIMIT, strings
 * with prefixes, empty strings and zero bytes, doubles with NaN, infinities and both zeros,
 * LIMIT 0 / small / large, hidden key columns, the sizes of the batches handed on, sinks
 * that stop or fail, the limits on key values and on the bytes held, and failing
 * allocations.
 *
 * Randomized sorts are checked against qsort over a row-at-a-time comparison of the values;
 * their seed is printed, and FIRTH_TEST_SEED replays one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include "sql/sql_int.h"
#include "test_rng.h"

/* The rows: tag (the row's number in the input, to see where each row went), then the
 * values sorted by. */
enum { C_TAG, C_I, C_S, C_D, C_M, NCOLS };

static fr_schema *schema;

static int setup(void **state)
{
    (void)state;
    fr_field f[NCOLS] = {
        {"tag", fr_type_of(FR_T_INT)},   {"i", fr_type_of(FR_T_INT)},
        {"s", fr_type_of(FR_T_STRING)},  {"d", fr_type_of(FR_T_DOUBLE)},
        {"m", fr_type_decimal(10, 2)},
    };
    f[C_TAG].type.nullable = false;
    fr_error err = {0};
    return fr_schema_new(f, NCOLS, 0, &schema, &err);
}

static int teardown(void **state)
{
    (void)state;
    fr_schema_free(schema);
    return 0;
}

#define KEY(col, desc, nulls_first) ((sql_sort_key){(col), (desc), (nulls_first)})

/* ---- input: batches from text ------------------------------------------------------------ */

/* Appends one cell given as text ("NULL" for a NULL); the builder parses it into the column's
 * type. */
static void append_text(fr_builder *bld, int col, const char *p, size_t n)
{
    fr_error err = {0};
    fr_value v = fr_value_str(fr_type_of(FR_T_STRING), p, n);
    if (n == 4 && memcmp(p, "NULL", 4) == 0) v = fr_value_null(fr_type_of(FR_T_STRING));
    if (fr_builder_append(bld, col, &v, &err) < 0) fail_msg("cell '%.*s': %s", (int)n, p, err.msg);
}

/* A batch of rows "i|s|d|m" separated by ';', tagged *tag, *tag + 1, ... Missing trailing
 * fields are NULL, and so are empty ones but s (where empty is the empty string). */
static fr_batch *make_batch(const char *text, size_t len, int *tag)
{
    fr_error err = {0};
    fr_builder *bld;
    assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *row_end = memchr(p, ';', (size_t)(end - p));
        if (!row_end) row_end = end;
        assert_int_equal(fr_builder_append_i64(bld, C_TAG, (*tag)++, &err), 0);
        const char *f = p;
        for (int col = C_I; col < NCOLS; col++) {
            const char *f_end = f <= row_end ? memchr(f, '|', (size_t)(row_end - f)) : NULL;
            if (!f_end) f_end = row_end;
            size_t n = f <= row_end ? (size_t)(f_end - f) : 0;
            if (f > row_end || (n == 0 && col != C_S)) append_text(bld, col, "NULL", 4);
            else append_text(bld, col, f, n);
            f = f_end + 1;
        }
        p = row_end + 1;
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    return b;
}

/* ---- output: a sink that records what it gets -------------------------------------------- */

typedef struct capture {
    fr_buf text;        /* rows "v|v|..." separated by ' ' (unless quiet) */
    bool quiet;         /* count only (no allocation: for the fault-injection test) */
    int64_t *tags;      /* with collect_tags: column 0 of every row */
    bool collect_tags;
    int64_t rows, tags_cap;
    int batches;
    int64_t max_batch_rows;
    int ncols;          /* columns of the last batch */
    char first_name[FR_NAME_BYTES_MAX + 1], last_name[FR_NAME_BYTES_MAX + 1];
    int stop_after;     /* rows() returns 1 after this many batches (0: never) */
    int fail_after;     /* rows() fails with FR_EIO after this many batches (0: never) */
} capture;

static void format_row(capture *c, const fr_batch *b, int64_t r)
{
    fr_error err = {0};
    if (c->text.len) assert_int_equal(fr_buf_append(&c->text, " ", 1, &err), 0);
    for (int col = 0; col < fr_batch_num_columns(b); col++) {
        fr_value v;
        fr_column_get(fr_batch_column(b, col), r, &v);
        if (col) assert_int_equal(fr_buf_append(&c->text, "|", 1, &err), 0);
        if (v.is_null) assert_int_equal(fr_buf_printf(&c->text, &err, "NULL"), 0);
        else assert_int_equal(fr_value_format(&v, &c->text, &err), 0);
    }
}

static int cap_rows(void *ctx, fr_batch *b, fr_error *err)
{
    capture *c = ctx;
    int64_t n = fr_batch_num_rows(b);
    const fr_schema *bs = fr_batch_schema(b);
    c->batches++;
    c->rows += n;
    if (n > c->max_batch_rows) c->max_batch_rows = n;
    c->ncols = fr_batch_num_columns(b);
    snprintf(c->first_name, sizeof c->first_name, "%s", fr_schema_field(bs, 0)->name);
    snprintf(c->last_name, sizeof c->last_name, "%s", fr_schema_field(bs, c->ncols - 1)->name);
    for (int64_t r = 0; r < n; r++) {
        if (c->collect_tags) {
            if (c->rows - n + r == c->tags_cap) {
                c->tags_cap = c->tags_cap ? 2 * c->tags_cap : 1024;
                c->tags = realloc(c->tags, (size_t)c->tags_cap * sizeof *c->tags);
                assert_non_null(c->tags);
            }
            fr_value v;
            fr_column_get(fr_batch_column(b, 0), r, &v);
            c->tags[c->rows - n + r] = v.v.i;
        }
        if (!c->quiet) format_row(c, b, r);
    }
    fr_batch_free(b);
    if (c->fail_after && c->batches >= c->fail_after)
        return fr_fail(err, FR_EIO, "the receiver went away");
    return c->stop_after && c->batches >= c->stop_after ? 1 : 0;
}

static void capture_free(capture *c)
{
    fr_buf_free(&c->text);
    free(c->tags);
}

/* ---- running a sort ---------------------------------------------------------------------- */

/* Sorts the rows of `input` (batches separated by '/', each as make_batch reads it) and
 * returns what was emitted (static storage), or "error CODE: message" for the first
 * failure. */
static const char *sort_with(capture *c, const char *input, const sql_sort_key *keys, int nkeys,
                             int64_t limit, int nvisible)
{
    static char result[1 << 16];
    fr_error err = {0};
    sql_sorter *s;
    int rc = sql_sorter_new(schema, keys, nkeys, limit, nvisible, &s, &err);
    assert_int_equal(rc, 0);
    int tag = 0;
    for (const char *p = input, *end = input + strlen(input); rc == 0 && p < end;) {
        const char *b_end = strchr(p, '/');
        if (!b_end) b_end = end;
        rc = sql_sorter_add(s, make_batch(p, (size_t)(b_end - p), &tag), &err);
        p = b_end + 1;
    }
    fr_sql_sink sink = {.ctx = c, .rows = cap_rows};
    if (rc == 0) rc = sql_sorter_emit(s, &sink, &err);
    sql_sorter_free(s);
    if (rc < 0) {
        assert_int_equal(err.code, rc);
        snprintf(result, sizeof result, "error %s: %s", fr_strcode(rc), err.msg);
    } else {
        snprintf(result, sizeof result, "%.*s", (int)c->text.len,
                 c->text.data ? (const char *)c->text.data : "");
    }
    return result;
}

static const char *sort(const char *input, const sql_sort_key *keys, int nkeys, int64_t limit,
                        int nvisible)
{
    capture c = {0};
    const char *r = sort_with(&c, input, keys, nkeys, limit, nvisible);
    capture_free(&c);
    return r;
}

/* One key, every row, tag and i shown. */
static const char *sort1(const char *input, int col, bool desc, bool nulls_first)
{
    sql_sort_key k = KEY(col, desc, nulls_first);
    return sort(input, &k, 1, -1, 2);
}

/* ---- orders ------------------------------------------------------------------------------ */

static void test_ints(void **state)
{
    (void)state;
    const char *in = "3;1;-1;2147483647;0/-2147483648;2";
    assert_string_equal(sort1(in, C_I, false, false),
                        "5|-2147483648 2|-1 4|0 1|1 6|2 0|3 3|2147483647");
    assert_string_equal(sort1(in, C_I, true, false),
                        "3|2147483647 0|3 6|2 1|1 4|0 2|-1 5|-2147483648");
    /* The rows come out whole: every column, in the schema's order. */
    sql_sort_key k = KEY(C_I, false, false);
    assert_string_equal(sort("2|b|1.5|3.25;1|a|NaN|-0.5", &k, 1, -1, NCOLS),
                        "1|1|a|NaN|-0.50 0|2|b|1.5|3.25");
}

static void test_nulls(void **state)
{
    (void)state;
    const char *in = "2;NULL;1;NULL";
    assert_string_equal(sort1(in, C_I, false, true), "1|NULL 3|NULL 2|1 0|2");
    assert_string_equal(sort1(in, C_I, false, false), "2|1 0|2 1|NULL 3|NULL");
    assert_string_equal(sort1(in, C_I, true, true), "1|NULL 3|NULL 0|2 2|1");
    assert_string_equal(sort1(in, C_I, true, false), "0|2 2|1 1|NULL 3|NULL");
    /* All NULL: the input order. */
    assert_string_equal(sort1("NULL;NULL;NULL", C_I, true, true), "0|NULL 1|NULL 2|NULL");
}

static void test_two_keys(void **state)
{
    (void)state;
    sql_sort_key k[2] = {KEY(C_I, false, false), KEY(C_S, true, false)};
    assert_string_equal(sort("1|b;2|a;1|c;2|b;1|a;1|NULL;2", k, 2, -1, 3),
                        "2|1|c 0|1|b 4|1|a 5|1|NULL 3|2|b 1|2|a 6|2|NULL");
    /* The second key with NULLs first, the first descending. */
    k[0].desc = true;
    k[1] = KEY(C_S, false, true);
    assert_string_equal(sort("1|b;2|a;1|c;2|b;1|a;1|NULL;2", k, 2, -1, 3),
                        "6|2|NULL 1|2|a 3|2|b 5|1|NULL 4|1|a 0|1|b 2|1|c");
}

static void test_stability(void **state)
{
    (void)state;
    /* Equal keys keep the order they were added in, across batches, in both directions. */
    const char *in = "1;0;1/0;1;0/1;0;1";
    assert_string_equal(sort1(in, C_I, false, false), "1|0 3|0 5|0 7|0 0|1 2|1 4|1 6|1 8|1");
    assert_string_equal(sort1(in, C_I, true, false), "0|1 2|1 4|1 6|1 8|1 1|0 3|0 5|0 7|0");
    /* Ties on the first key, broken by nothing else. */
    sql_sort_key k[2] = {KEY(C_I, false, false), KEY(C_S, false, false)};
    assert_string_equal(sort("1|x;0|y;1|x/0|y;1|w;1|x", k, 2, -1, 1), "1 3 4 0 2 5");
    /* No keys at all: the input order. */
    assert_string_equal(sort("5;4/3;2;1", NULL, 0, -1, 1), "0 1 2 3 4");
}

static void test_strings(void **state)
{
    (void)state;
    /* Bytewise: "" first, upper case before lower case, a prefix before what extends it,
     * and UTF-8 (é = C3 A9) after ASCII. */
    const char *in = "0|abc;0|ab;0|a;0|;0|b;0|B;0|é;0|ab";
    sql_sort_key k = KEY(C_S, false, false);
    assert_string_equal(sort(in, &k, 1, -1, 3),
                        "3|0| 5|0|B 2|0|a 1|0|ab 7|0|ab 0|0|abc 4|0|b 6|0|é");
    k.desc = true;
    assert_string_equal(sort(in, &k, 1, -1, 3),
                        "6|0|é 4|0|b 0|0|abc 1|0|ab 7|0|ab 2|0|a 5|0|B 3|0|");
}

/* Strings holding zero bytes, which the key encoding escapes. */
static void test_zero_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *p;
        size_t n;
    } v[] = {{"a\0b", 3}, {"a\x01", 2}, {"a", 1}, {"", 0}, {"a\0", 2}, {"\0", 1}, {"a\0\0", 3}};
    int n = (int)(sizeof v / sizeof v[0]);
    for (int desc = 0; desc <= 1; desc++) {
        fr_error err = {0};
        fr_builder *bld;
        assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
        for (int i = 0; i < n; i++) {
            assert_int_equal(fr_builder_append_i64(bld, C_TAG, i, &err), 0);
            assert_int_equal(fr_builder_append_null(bld, C_I, &err), 0);
            assert_int_equal(fr_builder_append_bytes(bld, C_S, v[i].p, v[i].n, &err), 0);
            assert_int_equal(fr_builder_append_null(bld, C_D, &err), 0);
            assert_int_equal(fr_builder_append_null(bld, C_M, &err), 0);
        }
        fr_batch *b;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        fr_builder_free(bld);
        sql_sort_key k = KEY(C_S, desc, false);
        sql_sorter *s;
        assert_int_equal(sql_sorter_new(schema, &k, 1, -1, 1, &s, &err), 0);
        assert_int_equal(sql_sorter_add(s, b, &err), 0);
        capture c = {0};
        fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
        assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
        sql_sorter_free(s);
        /* "" < "\0" < "a" < "a\0" < "a\0\0" < "a\0b" < "a\1" */
        assert_string_equal((const char *)c.text.data, desc ? "1 0 6 4 2 5 3" : "3 5 2 4 6 0 1");
        capture_free(&c);
    }
}

static void test_doubles(void **state)
{
    (void)state;
    /* NaN above +Infinity (and NaNs equal), -0.0 equal to 0.0 (so they keep their order). */
    const char *in = "0||1.5;0||NaN;0||-Infinity;0||Infinity;0||-0.0;0||0.0;0||-1.5;0||NaN;"
                     "0||0.0;0||NULL";
    sql_sort_key k = KEY(C_D, false, false);
    assert_string_equal(sort(in, &k, 1, -1, 4),
                        "2|0||-Infinity 6|0||-1.5 4|0||-0.0 5|0||0.0 8|0||0.0 0|0||1.5 "
                        "3|0||Infinity 1|0||NaN 7|0||NaN 9|0||NULL");
    k.desc = true;
    assert_string_equal(sort(in, &k, 1, -1, 4),
                        "1|0||NaN 7|0||NaN 3|0||Infinity 0|0||1.5 4|0||-0.0 5|0||0.0 8|0||0.0 "
                        "6|0||-1.5 2|0||-Infinity 9|0||NULL");
    /* Tiny and huge magnitudes of both signs. */
    const char *in2 = "0||1e-300;0||-1e-300;0||1e300;0||-1e300;0||5e-324;0||-5e-324";
    k.desc = false;
    assert_string_equal(sort(in2, &k, 1, -1, 1), "3 1 5 4 0 2");
}

static void test_decimals(void **state)
{
    (void)state;
    const char *in = "0|||1.50;0|||-2.25;0|||NULL;0|||0.01;0|||-0.01;0|||99999999.99;"
                     "0|||-99999999.99";
    sql_sort_key k = KEY(C_M, false, false);
    assert_string_equal(sort(in, &k, 1, -1, 1), "6 1 4 3 0 5 2");
    k = KEY(C_M, true, true);
    assert_string_equal(sort(in, &k, 1, -1, 1), "2 5 0 3 4 1 6");
}

/* Every other type, one key at a time: rows given as text per column. */
static void test_other_types(void **state)
{
    (void)state;
    enum { N = 12, ROWS = 4 };
    const char *types[N] = {"INT NOT NULL", "BOOLEAN", "TINYINT", "BIGINT", "FLOAT", "CHAR(3)",
                            "VARCHAR(5)", "BYTES", "DATE", "TIME(6)", "TIMESTAMP(3)",
                            "TIMESTAMP_LTZ(9)"};
    const char *names[N] = {"tag", "b", "t", "g", "f", "c", "v", "y", "dt", "tm", "ts", "lt"};
    const char *rows[ROWS][N] = {
        {"0", "true", "-128", "9223372036854775807", "1.5", "b", "ab", "zz", "2026-01-01",
         "10:00:00.000001", "2026-01-01 10:00:00.001", "1970-01-01 00:00:00Z"},
        {"1", "false", "127", "-9223372036854775808", "-Infinity", "a", "abc", "z",
         "1969-12-31", "00:00:00", "1900-01-01 00:00:00", "2262-01-01 00:00:00Z"},
        {"2", "true", "0", "0", "NaN", "", "", "", "2000-02-29", "23:59:59.999999",
         "2026-01-01 10:00:00", "1969-12-31 23:59:59.999999999Z"},
        {"3", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    };
    /* Per column: the tags ascending with NULLS LAST, then descending with NULLS FIRST. */
    const char *want[N][2] = {
        {NULL, NULL},           {"1 0 2 3", "3 0 2 1"}, {"0 2 1 3", "3 1 2 0"},
        {"1 2 0 3", "3 0 2 1"}, {"1 0 2 3", "3 2 0 1"}, {"2 1 0 3", "3 0 1 2"},
        {"2 0 1 3", "3 1 0 2"}, {"2 1 0 3", "3 0 1 2"}, {"1 2 0 3", "3 0 2 1"},
        {"1 0 2 3", "3 2 0 1"}, {"1 2 0 3", "3 0 2 1"}, {"2 0 1 3", "3 1 0 2"},
    };
    fr_error err = {0};
    fr_field f[N];
    for (int c = 0; c < N; c++) {
        f[c].name = (char *)names[c];
        assert_int_equal(fr_type_parse(types[c], &f[c].type, &err), 0);
    }
    fr_schema *sch;
    assert_int_equal(fr_schema_new(f, N, 0, &sch, &err), 0);
    for (int col = 1; col < N; col++) {
        for (int desc = 0; desc <= 1; desc++) {
            fr_builder *bld;
            assert_int_equal(fr_builder_new(sch, &bld, &err), 0);
            for (int r = 0; r < ROWS; r++) {
                for (int c = 0; c < N; c++) {
                    const char *t = rows[r][c];
                    fr_value v = t ? fr_value_str(fr_type_of(FR_T_STRING), t, strlen(t))
                                   : fr_value_null(fr_type_of(FR_T_STRING));
                    if (fr_builder_append(bld, c, &v, &err) < 0)
                        fail_msg("%s '%s': %s", names[c], t, err.msg);
                }
            }
            fr_batch *b;
            assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
            fr_builder_free(bld);
            sql_sort_key k = KEY(col, desc, desc);
            sql_sorter *s;
            assert_int_equal(sql_sorter_new(sch, &k, 1, -1, 1, &s, &err), 0);
            if (sql_sorter_add(s, b, &err) < 0) fail_msg("%s: %s", names[col], err.msg);
            capture c = {0};
            fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
            assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
            sql_sorter_free(s);
            if (strcmp((const char *)c.text.data, want[col][desc]) != 0)
                fail_msg("ORDER BY %s %s: %s, expected %s", names[col], desc ? "DESC" : "ASC",
                         (const char *)c.text.data, want[col][desc]);
            capture_free(&c);
        }
    }
    fr_schema_free(sch);
}

/* ---- LIMIT ------------------------------------------------------------------------------- */

static void test_limit(void **state)
{
    (void)state;
    sql_sort_key k = KEY(C_I, false, false);
    const char *in = "5;3;4/1;2";
    capture c = {0};
    assert_string_equal(sort_with(&c, in, &k, 1, 0, 2), "");
    assert_int_equal(c.batches, 0); /* LIMIT 0: the sink hears nothing */
    capture_free(&c);
    assert_string_equal(sort(in, &k, 1, 2, 2), "3|1 4|2");
    assert_string_equal(sort(in, &k, 1, 5, 2), "3|1 4|2 1|3 2|4 0|5");
    assert_string_equal(sort(in, &k, 1, 1000, 2), "3|1 4|2 1|3 2|4 0|5");
}

/* Many rows through a small LIMIT: compaction and the bar, with ties on the key. */
static void test_limit_ties(void **state)
{
    (void)state;
    /* 10,000 rows, i = row % 3, in batches of 1,000: the first five 0s, in order. */
    fr_buf in;
    fr_buf_init(&in);
    fr_error err = {0};
    for (int r = 0; r < 10000; r++)
        assert_int_equal(fr_buf_printf(&in, &err, "%s%d", r == 0 ? "" : r % 1000 ? ";" : "/",
                                       r % 3), 0);
    assert_int_equal(fr_buf_append(&in, "", 1, &err), 0);
    sql_sort_key k = KEY(C_I, false, false);
    assert_string_equal(sort((const char *)in.data, &k, 1, 5, 1), "0 3 6 9 12");
    k.desc = true;
    assert_string_equal(sort((const char *)in.data, &k, 1, 5, 1), "2 5 8 11 14");
    /* A limit past the compaction threshold (2 * 3000 rows held, then cut to 3000). */
    capture c = {0};
    c.collect_tags = true;
    c.quiet = true;
    sort_with(&c, (const char *)in.data, &k, 1, 3000, 1);
    assert_int_equal(c.rows, 3000);
    for (int i = 0; i < 3000; i++) assert_int_equal(c.tags[i], 2 + 3 * i);
    capture_free(&c);
    fr_buf_free(&in);
}

/* ---- randomized sorts against a reference ------------------------------------------------- */

typedef struct ref_row {
    int64_t tag;
    bool null[NCOLS];
    int32_t i;
    char s[4];
    size_t slen;
    double d;
    int64_t m;
} ref_row;

static ref_row rnd_row(int64_t tag)
{
    static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e300, -5e-324};
    ref_row r = {.tag = tag};
    for (int c = C_I; c < NCOLS; c++) r.null[c] = test_rng_int(0, 9) == 0;
    r.i = test_rng_int(-5, 5);
    r.slen = (size_t)test_rng_int(0, 3);
    for (size_t j = 0; j < r.slen; j++) r.s[j] = "ab\0"[test_rng_int(0, 2)];
    r.d = test_rng_int(0, 4) == 0 ? specials[test_rng_int(0, 6)] : test_rng_int(-20, 20) / 4.0;
    r.m = test_rng_int(-300, 300);
    return r;
}

static int cmp3(double a, double b)
{
    if (isnan(a) || isnan(b)) return (int)(bool)isnan(a) - (int)(bool)isnan(b);
    return (a > b) - (a < b);
}

static int ref_col_cmp(const ref_row *a, const ref_row *b, int col)
{
    switch (col) {
    case C_I: return (a->i > b->i) - (a->i < b->i);
    case C_D: return cmp3(a->d, b->d);
    case C_M: return (a->m > b->m) - (a->m < b->m);
    default: {
        size_t n = a->slen < b->slen ? a->slen : b->slen;
        int c = memcmp(a->s, b->s, n);
        if (c) return c < 0 ? -1 : 1;
        return (a->slen > b->slen) - (a->slen < b->slen);
    }
    }
}

static const sql_sort_key *g_keys;
static int g_nkeys;

static int ref_cmp(const void *pa, const void *pb)
{
    const ref_row *a = pa, *b = pb;
    for (int k = 0; k < g_nkeys; k++) {
        const sql_sort_key *key = &g_keys[k];
        bool na = a->null[key->column], nb = b->null[key->column];
        int c;
        if (na || nb) c = na && nb ? 0 : na == key->nulls_first ? -1 : 1;
        else c = key->desc ? -ref_col_cmp(a, b, key->column) : ref_col_cmp(a, b, key->column);
        if (c) return c;
    }
    return (a->tag > b->tag) - (a->tag < b->tag);
}

static fr_batch *ref_batch(const ref_row *rows, int n)
{
    fr_error err = {0};
    fr_builder *bld;
    assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
    for (int i = 0; i < n; i++) {
        const ref_row *r = &rows[i];
        assert_int_equal(fr_builder_append_i64(bld, C_TAG, r->tag, &err), 0);
        for (int c = C_I; c < NCOLS; c++) {
            int rc;
            if (r->null[c]) rc = fr_builder_append_null(bld, c, &err);
            else if (c == C_I) rc = fr_builder_append_i64(bld, c, r->i, &err);
            else if (c == C_S) rc = fr_builder_append_bytes(bld, c, r->s, r->slen, &err);
            else if (c == C_D) rc = fr_builder_append_f64(bld, c, r->d, &err);
            else rc = fr_builder_append_i128(bld, c, r->m, &err);
            assert_int_equal(rc, 0);
        }
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    return b;
}

/* Sorts nrows random rows added in batches of batch_rows, and checks the tags emitted
 * against qsort of the same rows. */
static void random_sort(uint64_t seed, int nrows, int batch_rows, const sql_sort_key *keys,
                        int nkeys, int64_t limit)
{
    test_rng_seed(seed);
    ref_row *rows = malloc((size_t)nrows * sizeof *rows);
    assert_non_null(rows);
    for (int i = 0; i < nrows; i++) rows[i] = rnd_row(i);
    fr_error err = {0};
    sql_sorter *s;
    assert_int_equal(sql_sorter_new(schema, keys, nkeys, limit, 1, &s, &err), 0);
    for (int at = 0; at < nrows; at += batch_rows) {
        int n = nrows - at < batch_rows ? nrows - at : batch_rows;
        if (sql_sorter_add(s, ref_batch(rows + at, n), &err) < 0) fail_msg("add: %s", err.msg);
    }
    capture c = {.quiet = true, .collect_tags = true};
    fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
    if (sql_sorter_emit(s, &sink, &err) < 0) fail_msg("emit: %s", err.msg);
    sql_sorter_free(s);

    g_keys = keys;
    g_nkeys = nkeys;
    qsort(rows, (size_t)nrows, sizeof *rows, ref_cmp);
    int64_t want = limit >= 0 && limit < nrows ? limit : nrows;
    if (c.rows != want) {
        print_error("seed %llu: %lld rows emitted, %lld expected\n", (unsigned long long)seed,
                    (long long)c.rows, (long long)want);
        fail();
    }
    for (int64_t i = 0; i < want; i++) {
        if (c.tags[i] != rows[i].tag) {
            print_error("seed %llu, %d rows, limit %lld: row %lld is tag %lld, expected %lld\n",
                        (unsigned long long)seed, nrows, (long long)limit, (long long)i,
                        (long long)c.tags[i], (long long)rows[i].tag);
            fail();
        }
    }
    assert_true(c.max_batch_rows <= 4096);
    capture_free(&c);
    free(rows);
}

static void test_random(void **state)
{
    (void)state;
    uint64_t seed = test_rng_seed_of_run("test_sql_order");
    sql_sort_key a[4] = {KEY(C_I, false, true), KEY(C_D, true, false), KEY(C_S, true, true),
                         KEY(C_M, false, false)};
    sql_sort_key b[3] = {KEY(C_S, false, false), KEY(C_D, false, true), KEY(C_M, true, true)};
    /* The LIMIT of the task: 100,000 rows in batches of 1,000, the best 10. */
    random_sort(seed, 100000, 1000, a, 4, 10);
    random_sort(seed + 1, 100000, 1000, b, 3, 10);
    /* Every row; a limit past the compaction threshold; a limit past the rows. */
    random_sort(seed + 2, 20000, 777, a, 4, -1);
    random_sort(seed + 3, 20000, 1000, b, 3, 5000);
    random_sort(seed + 4, 3000, 100, a, 2, 5000);
    random_sort(seed + 5, 5000, 5000, b, 1, 1);
}

/* ---- what is handed on ------------------------------------------------------------------- */

static void test_nvisible(void **state)
{
    (void)state;
    /* Sorted by m, which is not shown: the batches hold tag and i only. */
    sql_sort_key k = KEY(C_M, true, false);
    capture c = {0};
    assert_string_equal(sort_with(&c, "1|||0.5;2|||2.5/3|||1.5", &k, 1, -1, 2), "1|2 2|3 0|1");
    assert_int_equal(c.ncols, 2);
    assert_string_equal(c.first_name, "tag");
    assert_string_equal(c.last_name, "i");
    capture_free(&c);
    /* And with a limit. (The randomized sorts show only column 0 and sort by the others,
     * through compactions.) */
    assert_string_equal(sort("1|||0.5;2|||2.5/3|||1.5", &k, 1, 2, 2), "1|2 2|3");
}

/* Adds rows tagged 0..n-1 with i = n - tag (so the sort reverses them), strings of
 * str_bytes bytes, in batches of batch_rows. */
static void add_reversed(sql_sorter *s, int n, int batch_rows, size_t str_bytes)
{
    fr_error err = {0};
    char *str = calloc(1, str_bytes + 1);
    assert_non_null(str);
    memset(str, 'x', str_bytes);
    for (int at = 0; at < n; at += batch_rows) {
        fr_builder *bld;
        assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
        for (int r = at; r < n && r < at + batch_rows; r++) {
            assert_int_equal(fr_builder_append_i64(bld, C_TAG, r, &err), 0);
            assert_int_equal(fr_builder_append_i64(bld, C_I, n - r, &err), 0);
            assert_int_equal(fr_builder_append_bytes(bld, C_S, str, str_bytes, &err), 0);
            assert_int_equal(fr_builder_append_null(bld, C_D, &err), 0);
            assert_int_equal(fr_builder_append_null(bld, C_M, &err), 0);
        }
        fr_batch *b;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        fr_builder_free(bld);
        assert_int_equal(sql_sorter_add(s, b, &err), 0);
    }
    free(str);
}

static void test_batch_sizes(void **state)
{
    (void)state;
    fr_error err = {0};
    sql_sort_key k = KEY(C_I, false, false);
    fr_sql_sink sink;
    /* Small rows: 4,096 a batch. */
    sql_sorter *s;
    assert_int_equal(sql_sorter_new(schema, &k, 1, -1, NCOLS, &s, &err), 0);
    add_reversed(s, 10000, 999, 1);
    capture c = {.quiet = true, .collect_tags = true};
    sink = (fr_sql_sink){.ctx = &c, .rows = cap_rows};
    assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
    sql_sorter_free(s);
    assert_int_equal(c.rows, 10000);
    assert_int_equal(c.batches, 3);
    assert_int_equal(c.max_batch_rows, 4096);
    for (int i = 0; i < 10000; i++) assert_int_equal(c.tags[i], 9999 - i);
    capture_free(&c);
    /* Rows of 100 KB: about 1 MiB a batch. */
    assert_int_equal(sql_sorter_new(schema, &k, 1, -1, NCOLS, &s, &err), 0);
    add_reversed(s, 40, 7, 100000);
    capture big = {.quiet = true, .collect_tags = true};
    sink = (fr_sql_sink){.ctx = &big, .rows = cap_rows};
    assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
    sql_sorter_free(s);
    assert_int_equal(big.rows, 40);
    assert_true(big.batches >= 4);
    assert_true(big.max_batch_rows <= 11);
    for (int i = 0; i < 40; i++) assert_int_equal(big.tags[i], 39 - i);
    capture_free(&big);
}

static void test_sink_stops(void **state)
{
    (void)state;
    fr_error err = {0};
    sql_sort_key k = KEY(C_I, false, false);
    sql_sorter *s;
    assert_int_equal(sql_sorter_new(schema, &k, 1, -1, 1, &s, &err), 0);
    add_reversed(s, 10000, 1000, 0);
    capture c = {.quiet = true, .collect_tags = true, .stop_after = 1};
    fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
    assert_int_equal(sql_sorter_emit(s, &sink, &err), 1);
    assert_int_equal(c.batches, 1);
    assert_int_equal(c.rows, 4096);
    assert_int_equal(c.tags[0], 9999);
    assert_int_equal(c.tags[4095], 9999 - 4095);
    capture_free(&c);
    /* A receiver that fails: its error comes back as it set it. */
    capture f = {.quiet = true, .fail_after = 2};
    sink.ctx = &f;
    assert_int_equal(sql_sorter_emit(s, &sink, &err), FR_EIO);
    assert_string_equal(err.msg, "the receiver went away");
    assert_int_equal(f.batches, 2);
    capture_free(&f);
    sql_sorter_free(s);
    sql_sorter_free(NULL);
}

static void test_empty(void **state)
{
    (void)state;
    fr_error err = {0};
    sql_sort_key k = KEY(C_I, false, false);
    for (int64_t limit = -1; limit <= 1; limit++) {
        sql_sorter *s;
        assert_int_equal(sql_sorter_new(schema, &k, 1, limit, 2, &s, &err), 0);
        if (limit == 1) { /* batches without rows */
            int tag = 0;
            assert_int_equal(sql_sorter_add(s, make_batch("", 0, &tag), &err), 0);
            assert_int_equal(sql_sorter_add(s, make_batch("", 0, &tag), &err), 0);
        }
        capture c = {0};
        fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
        assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
        assert_int_equal(c.batches, 0);
        capture_free(&c);
        sql_sorter_free(s);
    }
}

/* ---- limits and failures ----------------------------------------------------------------- */

/* Appends a row (tag, NULL, s, NULL, NULL). */
static void append_tag_str(fr_builder *bld, int64_t tag, const char *p, size_t n)
{
    fr_error err = {0};
    assert_int_equal(fr_builder_append_i64(bld, C_TAG, tag, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, C_I, &err), 0);
    assert_int_equal(fr_builder_append_bytes(bld, C_S, p, n, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, C_D, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, C_M, &err), 0);
}

static void test_key_too_long(void **state)
{
    (void)state;
    fr_error err = {0};
    size_t big = FR_KEY_BYTES_MAX;
    char *str = malloc(big);
    assert_non_null(str);
    memset(str, 'y', big);
    for (int desc = 0; desc <= 1; desc++) {
        sql_sort_key k = KEY(C_S, desc, false);
        sql_sorter *s;
        assert_int_equal(sql_sorter_new(schema, &k, 1, -1, 1, &s, &err), 0);
        int tag = 0;
        assert_int_equal(sql_sorter_add(s, make_batch("1|b;2|a", 7, &tag), &err), 0);
        /* Batches of a short string and a long one: 65,534 bytes fit (with the terminator,
         * 65,536 bytes of key value), one more does not. */
        for (size_t len = big - 2; len <= big - 1; len++) {
            fr_builder *bld;
            assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
            append_tag_str(bld, (int64_t)len + 10, "c", 1);
            append_tag_str(bld, (int64_t)len, str, len);
            fr_batch *b;
            assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
            fr_builder_free(bld);
            int rc = sql_sorter_add(s, b, &err);
            if (len == big - 2) {
                assert_int_equal(rc, 0);
            } else {
                assert_int_equal(rc, FR_ELIMIT);
                assert_string_equal(err.msg, "ORDER BY s: a value is longer than the 65536 "
                                             "bytes a sort or group key may hold");
            }
        }
        /* The failed batch left nothing behind, not even its good row: the rows before it
         * come out, "a" "b" "c" "yyy...". */
        capture c = {.quiet = true, .collect_tags = true};
        fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
        assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
        assert_int_equal(c.rows, 4);
        int64_t want[4] = {1, 0, (int64_t)big - 2 + 10, (int64_t)big - 2};
        for (int i = 0; i < 4; i++) assert_int_equal(c.tags[desc ? 3 - i : i], want[i]);
        capture_free(&c);
        sql_sorter_free(s);
    }
    free(str);
}

/* FR_SQL_SORT_BYTES_MAX, reached cheaply: projections of one batch holding a 16 MiB string
 * share its memory, but each counts in full. */
static void test_bytes_limit(void **state)
{
    (void)state;
    fr_error err = {0};
    size_t big = 16 << 20;
    char *str = malloc(big);
    assert_non_null(str);
    memset(str, 'z', big);
    fr_builder *bld;
    assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
    assert_int_equal(fr_builder_append_i64(bld, C_TAG, 7, &err), 0);
    assert_int_equal(fr_builder_append_i64(bld, C_I, 1, &err), 0);
    assert_int_equal(fr_builder_append_bytes(bld, C_S, str, big, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, C_D, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, C_M, &err), 0);
    fr_batch *one;
    assert_int_equal(fr_builder_finish(bld, &one, &err), 0);
    fr_builder_free(bld);
    free(str);
    int all[NCOLS] = {0, 1, 2, 3, 4};
    int adds_max = (int)(FR_SQL_SORT_BYTES_MAX / (int64_t)big) + 2;

    static const struct {
        int64_t limit;
        int fails_at; /* the add that fails (0: none) */
        const char *msg;
    } cases[] = {
        {-1, 64, "ORDER BY holds at most 1073741824 bytes of rows: add a LIMIT, or select "
                 "fewer columns or rows"},
        {100, 64, "ORDER BY ... LIMIT 100: the best 100 rows take more than the 1073741824 "
                  "bytes a sort may hold: lower the LIMIT, or select fewer columns"},
        {1, 0, NULL}, /* cut back to one row as it goes */
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        sql_sort_key k = KEY(C_I, false, false);
        sql_sorter *s;
        assert_int_equal(sql_sorter_new(schema, &k, 1, cases[t].limit, 3, &s, &err), 0);
        int failed_at = 0;
        for (int i = 0; i < adds_max && !failed_at; i++) {
            fr_batch *p;
            assert_int_equal(fr_batch_project(one, all, NCOLS, &p, &err), 0);
            int rc = sql_sorter_add(s, p, &err);
            if (rc < 0) {
                assert_int_equal(rc, FR_ELIMIT);
                assert_string_equal(err.msg, cases[t].msg);
                failed_at = i + 1;
            }
        }
        assert_int_equal(failed_at, cases[t].fails_at);
        if (!failed_at) {
            capture c = {.quiet = true, .collect_tags = true};
            fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
            assert_int_equal(sql_sorter_emit(s, &sink, &err), 0);
            assert_int_equal(c.rows, 1);
            assert_int_equal(c.tags[0], 7);
            capture_free(&c);
        }
        sql_sorter_free(s);
    }
    fr_batch_free(one);
}

/* Every allocation of a sort with a LIMIT (adds, compactions, emit) fails in turn: each
 * failure is an error with a message, and nothing leaks (run under ASan). */
static void test_alloc_failures(void **state)
{
    (void)state;
    enum { NB = 8, ROWS = 1000 };
    int failures = 0;
    for (long n = 1;; n++) {
        fr_error err = {0};
        fr_batch *batches[NB];
        int tag = 0;
        for (int b = 0; b < NB; b++) {
            ref_row rows[ROWS];
            test_rng_seed((uint64_t)b + 1);
            for (int i = 0; i < ROWS; i++) rows[i] = rnd_row(tag++);
            batches[b] = ref_batch(rows, ROWS);
        }
        sql_sort_key k[2] = {KEY(C_S, false, false), KEY(C_M, true, true)};
        capture c = {.quiet = true};
        fr_sql_sink sink = {.ctx = &c, .rows = cap_rows};
        sql_sorter *s = NULL;
        int added = 0;
        fr_alloc_fail_after(n);
        int rc = sql_sorter_new(schema, k, 2, 5, 3, &s, &err);
        while (rc == 0 && added < NB) rc = sql_sorter_add(s, batches[added++], &err);
        if (rc == 0) rc = sql_sorter_emit(s, &sink, &err);
        fr_alloc_fail_after(0);
        sql_sorter_free(s);
        for (int b = added; b < NB; b++) fr_batch_free(batches[b]);
        capture_free(&c);
        if (rc == 0) {
            assert_int_equal(c.rows, 5);
            break;
        }
        assert_int_equal(rc, err.code);
        assert_true(err.msg[0] != '\0');
        failures++;
        assert_true(n < 100000);
    }
    assert_true(failures > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_nulls),
        cmocka_unit_test(test_two_keys),
        cmocka_unit_test(test_stability),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_zero_bytes),
        cmocka_unit_test(test_doubles),
        cmocka_unit_test(test_decimals),
        cmocka_unit_test(test_other_types),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_limit_ties),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_nvisible),
        cmocka_unit_test(test_batch_sizes),
        cmocka_unit_test(test_sink_stops),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_key_too_long),
        cmocka_unit_test(test_bytes_limit),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
