/* expr_run_testkit.h — what the expression tests run text through: binding and evaluating
 * an expression given as text over rows given as text (expr_testkit.h's parsers), with
 * the results or the error as one string, and the checks every result must pass. Include
 * after <cmocka.h>. */
#ifndef FIRTH_EXPR_RUN_TESTKIT_H
#define FIRTH_EXPR_RUN_TESTKIT_H

#include "expr_testkit.h"

/* The last result as text; valid until the next call. */
static char g_out[8192];

/* Checks what every result batch must satisfy, and the filter against the values. */
TK_UNUSED static void check_result(const fr_expr *e, const fr_batch *b, const fr_batch *out)
{
    assert_int_equal(fr_batch_num_columns(out), 1);
    assert_int_equal(fr_batch_num_rows(out), fr_batch_num_rows(b));
    const fr_column *c = fr_batch_column(out, 0);
    assert_int_equal(c->type.id, e->type.id);
    if (!e->type.nullable) assert_int_equal(c->null_count, 0);
    int64_t nulls = 0;
    for (int64_t r = 0; r < c->length; r++) nulls += fr_column_is_null(c, r);
    assert_int_equal(nulls, c->null_count);
    if (e->type.id != FR_T_BOOLEAN) return;
    int64_t n = fr_batch_num_rows(b), kept = -1, expect = 0;
    uint8_t *keep = calloc((size_t)(n + 7) / 8 + 1, 1);
    fr_error err = {0};
    int rc = fr_expr_filter(e, b, keep, &kept, &err);
    if (rc < 0) fail_msg("filter failed where eval did not: %s", err.msg);
    for (int64_t r = 0; r < n; r++) {
        fr_value v;
        fr_column_get(c, r, &v);
        bool t = !v.is_null && v.v.b;
        bool k = (keep[r >> 3] >> (r & 7)) & 1;
        if (t != k) fail_msg("row %lld: eval says %s, filter %s", (long long)r, t ? "TRUE" : "not TRUE", k ? "keeps" : "drops");
        expect += t;
    }
    assert_int_equal(kept, expect);
    free(keep);
}

/* Binds text to the schema and evaluates it over rows; returns the values joined by ','
 * or "error <CODE>: <message>". */
TK_UNUSED static const char *run_on(fr_schema *s, fr_batch *b, const char *text)
{
    fr_arena *a = fr_arena_new(4096);
    fr_expr *e = tk_parse(a, text);
    fr_error err = {0};
    int rc = fr_expr_bind(e, s, &err);
    fr_batch *out = NULL;
    if (rc == 0) rc = fr_expr_eval(e, b, &out, &err);
    if (rc < 0) {
        snprintf(g_out, sizeof g_out, "error %s: %s", fr_strcode(rc), err.msg);
    } else {
        check_result(e, b, out);
        fr_buf text_out;
        fr_buf_init(&text_out);
        const fr_column *c = fr_batch_column(out, 0);
        for (int64_t r = 0; r < c->length; r++) {
            fr_value v;
            fr_column_get(c, r, &v);
            if (r > 0) fr_buf_append(&text_out, ",", 1, NULL);
            fr_value_format(&v, &text_out, NULL);
        }
        snprintf(g_out, sizeof g_out, "%.*s", (int)text_out.len, text_out.data ? (char *)text_out.data : "");
        fr_buf_free(&text_out);
        fr_batch_free(out);
    }
    fr_arena_free(a);
    return g_out;
}

TK_UNUSED static const char *run(const char *schema, const char *rows, const char *text)
{
    fr_schema *s = tk_schema(schema);
    fr_batch *b = tk_batch(s, rows);
    run_on(s, b, text);
    fr_batch_free(b);
    fr_schema_free(s);
    return g_out;
}

#define EXPECT(schema, rows, text, expected) assert_string_equal(run(schema, rows, text), expected)

/* Binds text and returns "<TYPE>" or the error. */
TK_UNUSED static const char *bind_type(const char *schema, const char *text)
{
    fr_schema *s = tk_schema(schema);
    fr_arena *a = fr_arena_new(4096);
    fr_expr *e = tk_parse(a, text);
    fr_error err = {0};
    int rc = fr_expr_bind(e, s, &err);
    if (rc < 0) {
        snprintf(g_out, sizeof g_out, "error %s: %s", fr_strcode(rc), err.msg);
    } else {
        fr_type_format(&e->type, true, g_out, sizeof g_out);
    }
    fr_arena_free(a);
    fr_schema_free(s);
    return g_out;
}

/* The expression given as text, parsed and written back by fr_expr_format (unbound). */
TK_UNUSED static const char *format_of(const char *text)
{
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, text);
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    assert_int_equal(fr_expr_format(e, &b, &err), 0);
    snprintf(g_out, sizeof g_out, "%.*s", (int)b.len, (char *)b.data);
    fr_buf_free(&b);
    fr_arena_free(a);
    return g_out;
}

/* Binds and evaluates (and filters, for BOOLEAN) each expression over the same rows with
 * the n-th allocation failing, for every n until one run needs no more: each run either
 * succeeds or fails with FR_ENOMEM, and the result afterwards is the same as before. */
TK_UNUSED static void check_allocation_failures(const char *const *exprs, size_t nexprs)
{
    fr_schema *s = tk_schema("a INT, s STRING, m DECIMAL(6, 2), d DOUBLE, dt DATE");
    fr_batch *b = tk_batch(s, "1|x1|1.50|0.5|2026-01-01; NULL|y|NULL|NaN|NULL; 3|NULL|-2.25|NULL|2026-01-02; 9|12|0.01|7.0|2025-01-01");
    for (size_t i = 0; i < nexprs; i++) {
        char want[4096];
        snprintf(want, sizeof want, "%s", run_on(s, b, exprs[i]));
        assert_null(strstr(want, "error"));
        int failures = 0;
        for (long n = 1; n < 200; n++) {
            fr_arena *a = fr_arena_new(4096);
            fr_expr *e = tk_parse(a, exprs[i]);
            fr_error err = {0};
            fr_batch *out = NULL;
            uint8_t keep[1];
            int64_t kept;
            fr_alloc_fail_after(n);
            int rc = fr_expr_bind(e, s, &err);
            if (rc == 0) rc = fr_expr_eval(e, b, &out, &err);
            if (rc == 0 && e->type.id == FR_T_BOOLEAN) rc = fr_expr_filter(e, b, keep, &kept, &err);
            fr_alloc_fail_after(0);
            if (rc < 0) {
                if (rc != FR_ENOMEM) fail_msg("%s, allocation %ld failing: %s %s", exprs[i], n, fr_strcode(rc), err.msg);
                failures++;
            }
            fr_batch_free(out);
            fr_arena_free(a);
        }
        assert_true(failures > 0);
        assert_string_equal(run_on(s, b, exprs[i]), want);
    }
    fr_batch_free(b);
    fr_schema_free(s);
}

#endif
