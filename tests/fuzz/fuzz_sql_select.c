/* fuzz_sql_select.c — the SQL executor over arbitrary SELECT statements: the planner, the
 * expression binder and evaluator, grouping and aggregates, DISTINCT, HAVING and ORDER BY,
 * run against a real engine in a scratch data dir holding a log table of every type, a
 * primary-key table with a changelog, and their rows (NULLs, NaN, infinities, -0.0, empty
 * and long strings, extreme integers).
 *
 * Only texts whose statements are all SELECT (EXPLAIN included) run, so the data never
 * changes from one input to the next. Checks beyond "does not crash": a failure carries its
 * code in the error and a message that starts with the position ("line L, column C: "),
 * except out of memory; every batch a statement sends has its schema's columns, and every
 * cell of it is read (fuzz_touch), so ASan sees a result buffer that is too short. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_touch.h"
#include "sql/sql_int.h"

static const char *const fuzz_setup =
    "CREATE TABLE t (a INT, b BIGINT, s STRING, d DECIMAL(10, 2), f DOUBLE, ts TIMESTAMP(3),"
    " dt DATE, bo BOOLEAN, byt BYTES, ti TINYINT, vc VARCHAR(5), fl FLOAT)"
    " WITH ('bucket.num' = '3');"
    "INSERT INTO t VALUES"
    " (1, 10, 'a', 1.50, 0.5, '2026-01-01 00:00:00', '2026-01-01', TRUE, X'00', 1, 'x', 1.5),"
    " (2, -9223372036854775808, '', -0.01, CAST('NaN' AS DOUBLE), NULL, NULL, FALSE, X'',"
    "  -128, '', CAST('-Infinity' AS FLOAT)),"
    " (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (2, 9223372036854775807, 'abc', 99999999.99, -0.0, '1970-01-01 00:00:00.001',"
    "  '1970-01-01', TRUE, X'ff00', 127, 'abcde', 0.0),"
    " (3, 0, 'a much longer string value that repeats a much longer string value', 0, 1e300,"
    "  '2026-12-31 23:59:59.999', '2026-12-31', NULL, X'0102', 0, 'a', -1.0);"
    "CREATE TABLE p (k INT NOT NULL, v STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)"
    " WITH ('bucket.num' = '2');"
    "INSERT INTO p VALUES (1, 'one', 1), (2, 'two', 2), (3, NULL, NULL);"
    "INSERT INTO p VALUES (2, 'deux', 20);"
    "DELETE FROM p WHERE k = 3";

typedef struct fuzz_env {
    char dir[1024];
    fr_engine *engine;
    fr_sql_session *session;
} fuzz_env;

static fuzz_env env;

static void env_close(void)
{
    fr_sql_session_free(env.session);
    fr_engine_close(env.engine);
    fr_error err = {0};
    fr_remove_tree(env.dir, &err);
}

static void env_open(void)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error err = {0};
    if (fr_mkdirs(base, &err) < 0) abort();
    snprintf(env.dir, sizeof env.dir, "%s/fuzz_sql_select.XXXXXX", base);
    if (!mkdtemp(env.dir)) abort();
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = env.dir;
    o.flush = FR_FLUSH_NONE;
    if (fr_engine_open(&o, &env.engine, &err) < 0 ||
        fr_sql_session_new(env.engine, &env.session, &err) < 0 ||
        fr_sql_execute(env.session, fuzz_setup, strlen(fuzz_setup), NULL, &err) < 0) {
        fprintf(stderr, "fuzz_sql_select setup: %s\n", err.msg);
        abort();
    }
    atexit(env_close);
}

typedef struct fuzz_sink {
    int ncols; /* of the statement under way; -1 between statements */
} fuzz_sink;

static int on_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    (void)err;
    ((fuzz_sink *)ctx)->ncols = fr_schema_num_fields(schema);
    return 0;
}

static int on_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    fuzz_sink *s = ctx;
    if (s->ncols < 0 || fr_batch_num_columns(batch) != s->ncols) abort();
    fuzz_touch(batch);
    fr_batch_free(batch);
    return 0;
}

static int on_end(void *ctx, const char *message, fr_error *err)
{
    (void)message, (void)err;
    ((fuzz_sink *)ctx)->ncols = -1;
    return 0;
}

/* Whether every statement of the text is a SELECT (parse errors: no). */
static bool only_selects(const uint8_t *data, size_t size)
{
    fr_arena *arena = fr_arena_new(4096);
    if (!arena) return false;
    sql_script script = {0};
    fr_error err = {0};
    bool ok = sql_parse_script((const char *)data, size, arena, &script, &err) == 0;
    for (int i = 0; ok && i < script.nstmts; i++) ok = script.stmts[i]->kind == SQL_SELECT;
    fr_arena_free(arena);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!env.engine) env_open();
    if (!only_selects(data, size)) return 0;
    fuzz_sink s = {.ncols = -1};
    fr_sql_sink sink = {.ctx = &s, .begin = on_begin, .rows = on_rows, .end = on_end};
    fr_error err = {0};
    int rc = fr_sql_execute(env.session, (const char *)data, size, &sink, &err);
    if (rc < 0 && (err.code != rc || (rc != FR_ENOMEM && strncmp(err.msg, "line ", 5) != 0))) {
        fprintf(stderr, "error without its code or position: %d %s\n", rc, err.msg);
        abort();
    }
    return 0;
}
