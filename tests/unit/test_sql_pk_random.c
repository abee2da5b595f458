/* test_sql_pk_random.c — randomized sequences of SQL writes into primary-key tables, one
 * table per merge engine (and last_row with the WAL changelog image), checked against a
 * model written here: after every few statements the table's state (SELECT *) and its
 * exact changelog (t$changelog) must equal the model's. The writes mix whole-row inserts
 * (several rows, repeated keys), partial inserts, NULLs, point and scanning UPDATEs and
 * DELETEs. FIRTH_TEST_SEED replays a run; the seed is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sql_testkit.h"

#define KEYS 8
#define OPS 240
#define CHECK_EVERY 20

/* ---- the engine under test ------------------------------------------------------------ */

static char dir[1024];
static fr_engine *engine;
static fr_sql_session *session;
static uint64_t rng;
static uint64_t run_seed; /* the seed of the whole run (FIRTH_TEST_SEED), for messages */

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int pick(int n) { return (int)(next_rand() % (uint32_t)n); }

static int setup(void **state)
{
    (void)state;
    return sql_tk_open(dir, sizeof dir, "test_sql_pk_random", &engine, &session);
}

static int teardown(void **state)
{
    (void)state;
    sql_tk_close(dir, engine, session);
    return 0;
}

/* Rows of a result as "v1|v2|...\n" lines into out. */
static int collect(void *ctx, fr_batch *batch, fr_error *err)
{
    fr_buf *out = ctx;
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        for (int c = 0; c < fr_batch_num_columns(batch); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(batch, c), r, &v);
            if (c) fr_buf_printf(out, err, "|");
            if (v.is_null)
                fr_buf_printf(out, err, "NULL");
            else
                fr_value_format(&v, out, err);
        }
        fr_buf_printf(out, err, "\n");
    }
    fr_batch_free(batch);
    return 0;
}

static void exec(const char *text, fr_buf *out)
{
    fr_sql_sink sink = {.ctx = out, .rows = collect};
    fr_error err = {0};
    if (fr_sql_execute(session, text, strlen(text), out ? &sink : NULL, &err) < 0)
        fail_msg("seed %llu: %s: %s", (unsigned long long)run_seed, text, err.msg);
}

/* ---- the model ------------------------------------------------------------------------ */

typedef enum engine_kind {
    E_LAST_ROW,
    E_LAST_ROW_WAL,
    E_FIRST_ROW,
    E_VERSIONED,
    E_AGG,
} engine_kind;

/* A row (k, a, b): a BIGINT (the version column for versioned; summed for aggregation), b a
 * short STRING (last non-null value for aggregation). */
typedef struct row {
    bool present;
    bool a_null, b_null;
    int64_t a;
    char b[4];
} row;

typedef struct model {
    engine_kind kind;
    row rows[KEYS];
    fr_buf changelog; /* "+I|k|a|b\n" lines */
} model;

static bool same(const row *x, const row *y)
{
    return x->a_null == y->a_null && (x->a_null || x->a == y->a) && x->b_null == y->b_null &&
           (x->b_null || strcmp(x->b, y->b) == 0);
}

static void emit(model *m, const char *type, int k, const row *r)
{
    char a[32];
    snprintf(a, sizeof a, "%lld", (long long)r->a);
    fr_buf_printf(&m->changelog, NULL, "%s|%d|%s|%s\n", type, k, r->a_null ? "NULL" : a,
                  r->b_null ? "NULL" : r->b);
}

/* old -> new for key k: the changelog records of an update, nothing when unchanged. */
static void update_to(model *m, int k, const row *nw)
{
    row *old = &m->rows[k];
    if (same(old, nw)) return;
    if (m->kind != E_LAST_ROW_WAL) emit(m, "-U", k, old);
    emit(m, "+U", k, nw);
    *old = *nw;
    old->present = true;
}

/* An upsert of r; targets_b/targets_a false leaves that column out (a partial update). */
static void model_upsert(model *m, int k, row r, bool target_a, bool target_b)
{
    row *old = &m->rows[k];
    if (!target_a) r.a_null = true;
    if (!target_b) r.b_null = true;
    bool partial = !target_a || !target_b;
    if (m->kind == E_LAST_ROW_WAL && !partial) { /* written without a lookup */
        emit(m, "+U", k, &r);
        *old = r;
        old->present = true;
        return;
    }
    if (!old->present) {
        emit(m, "+I", k, &r);
        *old = r;
        old->present = true;
        return;
    }
    row nw = *old;
    switch (m->kind) {
    case E_LAST_ROW:
    case E_LAST_ROW_WAL:
        if (target_a) nw.a_null = r.a_null, nw.a = r.a;
        if (target_b) nw.b_null = r.b_null, memcpy(nw.b, r.b, sizeof nw.b);
        break;
    case E_FIRST_ROW: return;
    case E_VERSIONED:
        if (r.a < old->a) return;
        nw = r;
        break;
    case E_AGG:
        if (target_a && !r.a_null) nw.a = old->a_null ? r.a : old->a + r.a, nw.a_null = false;
        if (target_b && !r.b_null) nw.b_null = false, memcpy(nw.b, r.b, sizeof nw.b);
        break;
    }
    update_to(m, k, &nw);
}

static void model_delete(model *m, int k)
{
    if (m->kind != E_LAST_ROW && m->kind != E_LAST_ROW_WAL) return; /* ignored by default */
    if (!m->rows[k].present) return;
    emit(m, "-D", k, &m->rows[k]);
    m->rows[k].present = false;
}

static void model_state(const model *m, fr_buf *out)
{
    for (int k = 0; k < KEYS; k++) {
        const row *r = &m->rows[k];
        if (!r->present) continue;
        char a[32];
        snprintf(a, sizeof a, "%lld", (long long)r->a);
        fr_buf_printf(out, NULL, "%d|%s|%s\n", k, r->a_null ? "NULL" : a,
                      r->b_null ? "NULL" : r->b);
    }
}

/* ---- operations: the SQL and the model side by side ----------------------------------- */

static row random_row(const model *m)
{
    static const char *const bs[] = {"p", "q", "r"};
    row r = {.present = true};
    r.a_null = m->kind != E_VERSIONED && pick(5) == 0;
    r.a = pick(6);
    r.b_null = pick(5) == 0;
    snprintf(r.b, sizeof r.b, "%s", bs[pick(3)]);
    return r;
}

static void value_sql(char *out, size_t cap, const row *r, bool a, bool b)
{
    char av[32];
    snprintf(av, sizeof av, "%lld", (long long)r->a);
    snprintf(out, cap, "%s%s%s%s%s%s", a ? (r->a_null ? "NULL" : av) : "", a && b ? ", " : "",
             b && !r->b_null ? "'" : "", b ? (r->b_null ? "NULL" : r->b) : "",
             b && !r->b_null ? "'" : "", "");
}

static void op_insert(model *m)
{
    fr_buf sql;
    fr_buf_init(&sql);
    bool partial = (m->kind == E_LAST_ROW || m->kind == E_LAST_ROW_WAL || m->kind == E_AGG) &&
                   pick(3) == 0;
    bool ta = !partial || pick(2) == 0, tb = !partial || !ta;
    fr_buf_printf(&sql, NULL, "INSERT INTO t %s VALUES ",
                  !partial ? "" : ta ? "(k, a)" : "(b, k)");
    int n = 1 + pick(3);
    for (int i = 0; i < n; i++) {
        int k = pick(KEYS);
        row r = random_row(m);
        char v[64];
        value_sql(v, sizeof v, &r, ta, tb);
        if (partial && tb)
            fr_buf_printf(&sql, NULL, "%s(%s, %d)", i ? ", " : "", v, k);
        else
            fr_buf_printf(&sql, NULL, "%s(%d, %s)", i ? ", " : "", k, v);
        model_upsert(m, k, r, ta, tb);
    }
    fr_buf_append(&sql, "", 1, NULL);
    exec((const char *)sql.data, NULL);
    fr_buf_free(&sql);
}

static void op_delete_key(model *m)
{
    int k = pick(KEYS);
    char sql[64];
    snprintf(sql, sizeof sql, "DELETE FROM t WHERE k = %d", k);
    exec(sql, NULL);
    model_delete(m, k);
}

/* DELETE by a condition on a value column: a scan; rows go in key order. */
static void op_delete_scan(model *m)
{
    int64_t limit = 3 + pick(3);
    char sql[64];
    snprintf(sql, sizeof sql, "DELETE FROM t WHERE a >= %lld", (long long)limit);
    exec(sql, NULL);
    for (int k = 0; k < KEYS; k++)
        if (m->rows[k].present && !m->rows[k].a_null && m->rows[k].a >= limit) model_delete(m, k);
}

/* UPDATE of one key: last_row and aggregation write (k, a) or (k, b) partially; versioned
 * and first_row whole rows. */
static void op_update_key(model *m)
{
    int k = pick(KEYS);
    char sql[96];
    row *old = &m->rows[k];
    switch (m->kind) {
    case E_LAST_ROW:
    case E_LAST_ROW_WAL:
        snprintf(sql, sizeof sql, "UPDATE t SET a = a + 1 WHERE k = %d", k);
        exec(sql, NULL);
        if (old->present) {
            row nw = *old;
            if (!nw.a_null) nw.a++;
            update_to(m, k, &nw);
        }
        return;
    case E_AGG:
        snprintf(sql, sizeof sql, "UPDATE t SET a = 1 WHERE k = %d", k);
        exec(sql, NULL);
        if (old->present) model_upsert(m, k, (row){.present = true, .a = 1, .b_null = true}, true,
                                       false);
        return;
    case E_VERSIONED:
    case E_FIRST_ROW:
        snprintf(sql, sizeof sql, "UPDATE t SET b = 'u' WHERE k = %d", k);
        exec(sql, NULL);
        if (old->present) {
            row nw = *old;
            nw.b_null = false;
            snprintf(nw.b, sizeof nw.b, "u");
            model_upsert(m, k, nw, true, true);
        }
        return;
    }
}

/* UPDATE by a condition on a value column: a scan, rows in key order. */
static void op_update_scan(model *m)
{
    int64_t a = pick(6);
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE t SET b = 'z' WHERE a = %lld", (long long)a);
    exec(sql, NULL);
    for (int k = 0; k < KEYS; k++) {
        row *old = &m->rows[k];
        if (!old->present || old->a_null || old->a != a) continue;
        row nw = *old;
        nw.b_null = false;
        snprintf(nw.b, sizeof nw.b, "z");
        bool partial = m->kind == E_LAST_ROW || m->kind == E_LAST_ROW_WAL || m->kind == E_AGG;
        if (partial && m->kind != E_AGG)
            update_to(m, k, &nw);
        else
            model_upsert(m, k, nw, !partial, true);
    }
}

static void check(const model *m, int step)
{
    fr_buf got, want;
    fr_buf_init(&got);
    fr_buf_init(&want);
    exec("SELECT k, a, b FROM t", &got);
    model_state(m, &want);
    if (got.len != want.len || (got.len && memcmp(got.data, want.data, got.len) != 0))
        fail_msg("seed %llu step %d: state\n--- got:\n%.*s--- want:\n%.*s",
                 (unsigned long long)run_seed, step, (int)got.len, (const char *)got.data,
                 (int)want.len, (const char *)want.data);
    fr_buf_reset(&got);
    exec("SELECT _change_type, k, a, b FROM t$changelog", &got);
    const fr_buf *cl = &m->changelog;
    if (got.len != cl->len || (got.len && memcmp(got.data, cl->data, got.len) != 0))
        fail_msg("seed %llu step %d: changelog\n--- got:\n%.*s--- want:\n%.*s",
                 (unsigned long long)run_seed, step, (int)got.len, (const char *)got.data,
                 (int)cl->len, (const char *)cl->data);
    fr_buf_free(&got);
    fr_buf_free(&want);
}

static void run_engine(engine_kind kind, const char *with, uint64_t seed)
{
    rng = seed ? seed : 1;
    model m = {.kind = kind};
    fr_buf_init(&m.changelog);
    char sql[512];
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS t; CREATE TABLE t (k INT, a BIGINT%s, "
                              "b STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket.num' = '1'%s)",
             kind == E_VERSIONED ? " NOT NULL" : "", with);
    exec(sql, NULL);
    for (int step = 1; step <= OPS; step++) {
        int op = pick(10);
        if (op < 5)
            op_insert(&m);
        else if (op < 6)
            op_delete_key(&m);
        else if (op < 7)
            op_delete_scan(&m);
        else if (op < 9)
            op_update_key(&m);
        else
            op_update_scan(&m);
        if (step % CHECK_EVERY == 0) check(&m, step);
    }
    /* Every engine's sequence writes something (a test that sees nothing checks nothing). */
    assert_true(m.changelog.len > 0);
    fr_buf_free(&m.changelog);
}

static uint64_t seed_of_run(void)
{
    const char *s = getenv("FIRTH_TEST_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    fprintf(stderr, "test_sql_pk_random: seed %llu (FIRTH_TEST_SEED=%llu replays it)\n",
            (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

static uint64_t seed;

static void test_last_row(void **state)
{
    (void)state;
    run_engine(E_LAST_ROW, "", seed);
}

static void test_last_row_wal(void **state)
{
    (void)state;
    run_engine(E_LAST_ROW_WAL, ", 'table.changelog.image' = 'WAL'", seed + 1);
}

static void test_first_row(void **state)
{
    (void)state;
    run_engine(E_FIRST_ROW, ", 'table.merge-engine' = 'first_row'", seed + 2);
}

static void test_versioned(void **state)
{
    (void)state;
    run_engine(E_VERSIONED, ", 'table.merge-engine' = 'versioned', "
                            "'table.merge-engine.versioned.ver-column' = 'a'", seed + 3);
}

static void test_aggregation(void **state)
{
    (void)state;
    run_engine(E_AGG, ", 'table.merge-engine' = 'aggregation', 'fields.a.agg' = 'sum'",
               seed + 4);
}

int main(void)
{
    seed = seed_of_run();
    run_seed = seed;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_last_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_row_wal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_versioned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aggregation, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
