/* fuzz_sql_parser.c — the SQL parser over arbitrary text: whole scripts (fr_sql_parse_only)
 * and single expressions bound to a fixed schema of every type (fr_sql_parse_expr).
 *
 * Checks beyond "does not crash": every failure carries its code in the error and a message
 * that starts with the position ("line L, column C: "); a bound expression has a type; and
 * an expression that binds, once written back as SQL (fr_expr_format), parses and binds
 * again to the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql.h"

static fr_schema *fuzz_schema(void)
{
    static fr_schema *schema;
    if (schema) return schema;
    static const char *const cols[][2] = {
        {"a", "INT"},         {"b", "BIGINT"},    {"s", "STRING"},
        {"d", "DECIMAL(10,2)"}, {"f", "DOUBLE"},  {"ts", "TIMESTAMP(3)"},
        {"dt", "DATE"},       {"bo", "BOOLEAN"},  {"byt", "BYTES"},
        {"tm", "TIME(3)"},    {"lt", "TIMESTAMP_LTZ(6)"}, {"ti", "TINYINT"},
        {"vc", "VARCHAR(5)"}, {"fl", "FLOAT"},    {"Mixed Case", "SMALLINT"},
    };
    enum { N = sizeof cols / sizeof cols[0] };
    fr_field fields[N];
    fr_error err;
    for (int i = 0; i < N; i++) {
        fields[i].name = (char *)cols[i][0];
        if (fr_type_parse(cols[i][1], &fields[i].type, &err) < 0) abort();
    }
    if (fr_schema_new(fields, N, 0, &schema, &err) < 0) abort();
    return schema;
}

static void check_error(int rc, const fr_error *err)
{
    if (rc >= 0) return;
    if (err->code != rc) abort();
    if (rc != FR_ENOMEM && strncmp(err->msg, "line ", 5) != 0) abort();
}

/* Formats a bound expression, parses and binds the text again, and checks that it formats
 * the same. */
static void check_roundtrip(const fr_expr *e, fr_arena *arena)
{
    fr_buf a, b;
    fr_buf_init(&a);
    fr_buf_init(&b);
    fr_error err;
    if (fr_expr_format(e, &a, &err) < 0) abort();
    fr_expr *again = NULL;
    int rc = fr_sql_parse_expr((const char *)a.data, a.len, fuzz_schema(), arena, &again, &err);
    if (rc == FR_ELIMIT || rc == FR_ENOMEM) goto done; /* parentheses add nesting */
    if (rc < 0) {
        fprintf(stderr, "formatted expression does not parse back: %.*s\n%s\n", (int)a.len,
                (const char *)a.data, err.msg);
        abort();
    }
    if (fr_expr_format(again, &b, &err) < 0) abort();
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
        fprintf(stderr, "round trip differs:\n%.*s\n%.*s\n", (int)a.len, (const char *)a.data,
                (int)b.len, (const char *)b.data);
        abort();
    }
done:
    fr_buf_free(&a);
    fr_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    fr_error err = {0};
    check_error(fr_sql_parse_only(text, size, &err), &err);

    fr_arena *arena = fr_arena_new(4096);
    if (!arena) return 0;
    fr_expr *e = NULL;
    fr_error_clear(&err);
    int rc = fr_sql_parse_expr(text, size, fuzz_schema(), arena, &e, &err);
    check_error(rc, &err);
    if (rc == 0) {
        if (!e || e->type.id < FR_T_BOOLEAN || e->type.id > FR_T_TIMESTAMP_LTZ) abort();
        check_roundtrip(e, arena);
    }
    fr_arena_free(arena);
    return 0;
}
