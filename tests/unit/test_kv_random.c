/* test_kv_random.c — randomized write sequences against a model written here, for every
 * merge engine with random changelog images, delete behaviors and aggregate functions:
 * upserts, deletes, partial updates and partial deletes, keys repeated inside a batch and
 * across batches, NULLs, idempotent retries, and crashes, clean restarts and lost RocksDB
 * directories between batches. After every batch the exact changelog (change types and
 * rows) must equal the model's; the state (scan, point and prefix lookups, key count) is
 * compared regularly and after every reopen.
 *
 * The seed is printed; FIRTH_TEST_SEED=<n> replays a run, FIRTH_TEST_BATCHES=<n> sets the
 * number of batches per configuration. */
#include "kv_testkit.h"
#include "test_rng.h"

enum { C_K1, C_K2, C_V1, C_V2, C_V3, C_V4, NCOLS };
#define NK1 6
#define NK2 3
#define NKEYS (NK1 * NK2)
static const char *const k2_names[NK2] = { "", "a", "b" };

/* ---- the model ---------------------------------------------------------------------------- */

typedef struct mcell {
    bool null;
    int64_t i;
    char *s; /* strings, malloc'd */
} mcell;

typedef struct mrow {
    mcell c[NCOLS];
} mrow;

typedef struct model {
    bool present[NKEYS];
    mrow rows[NKEYS];
    fr_merge_engine merge;
    fr_changelog_image image;
    fr_delete_behavior del;
    fr_agg_fn aggs[NCOLS];
    const char *delims[NCOLS];
} model;

static void mcell_free(mcell *c)
{
    free(c->s);
    c->s = NULL;
}

static mcell mcell_copy(const mcell *c)
{
    mcell r = *c;
    if (c->s) r.s = strdup(c->s);
    return r;
}

static void mrow_free(mrow *r)
{
    for (int c = 0; c < NCOLS; c++) mcell_free(&r->c[c]);
}

static mrow mrow_copy(const mrow *r)
{
    mrow o;
    for (int c = 0; c < NCOLS; c++) o.c[c] = mcell_copy(&r->c[c]);
    return o;
}

static bool is_string_col(int c) { return c == C_K2 || c == C_V2; }

static bool mcell_equal(int col, const mcell *a, const mcell *b)
{
    if (a->null || b->null) return a->null == b->null;
    return is_string_col(col) ? strcmp(a->s, b->s) == 0 : a->i == b->i;
}

static bool mrow_equal(const mrow *a, const mrow *b)
{
    for (int c = 0; c < NCOLS; c++)
        if (!mcell_equal(c, &a->c[c], &b->c[c])) return false;
    return true;
}

static void mrow_format(const mrow *r, char *out, size_t cap)
{
    size_t len = 0;
    for (int c = 0; c < NCOLS && len < cap; c++) {
        const mcell *m = &r->c[c];
        const char *sep = c ? "|" : "";
        int w;
        if (m->null) w = snprintf(out + len, cap - len, "%sNULL", sep);
        else if (is_string_col(c)) w = snprintf(out + len, cap - len, "%s%s", sep, m->s);
        else if (c == C_V4) w = snprintf(out + len, cap - len, "%s%s", sep, m->i ? "true" : "false");
        else w = snprintf(out + len, cap - len, "%s%" PRId64, sep, m->i);
        assert_true(w >= 0 && (size_t)w < cap - len); /* rows stay far below cap */
        len += (size_t)w;
    }
}

static int key_index(const mrow *r)
{
    int k2 = 0;
    while (strcmp(k2_names[k2], r->c[C_K2].s) != 0) k2++;
    return (int)r->c[C_K1].i * NK2 + k2;
}

/* The model's changelog of one batch, as text lines. */
typedef struct mlog {
    kt_lines lines;
} mlog;

static void mlog_add(mlog *l, const char *ct, const mrow *r)
{
    char text[40000];
    char row[32768];
    mrow_format(r, row, sizeof row);
    snprintf(text, sizeof text, "%s %s", ct, row);
    kt_lines_add(&l->lines, text);
}

/* One aggregate, as the documentation states it. */
static mcell model_agg(const model *m, int col, const mcell *acc, const mcell *in)
{
    fr_agg_fn fn = m->aggs[col];
    switch (fn) {
    case FR_AGG_LAST_VALUE: return mcell_copy(in);
    case FR_AGG_LAST_VALUE_IGNORE_NULLS: return mcell_copy(in->null ? acc : in);
    case FR_AGG_FIRST_VALUE: return mcell_copy(acc);
    case FR_AGG_FIRST_VALUE_IGNORE_NULLS: return mcell_copy(acc->null ? in : acc);
    default: break;
    }
    if (acc->null) return mcell_copy(in);
    if (in->null) return mcell_copy(acc);
    mcell r = { 0 };
    bool is_int = col == C_V3;
    switch (fn) {
    case FR_AGG_SUM:
        r.i = is_int ? (int32_t)(uint32_t)((uint64_t)acc->i + (uint64_t)in->i)
                     : (int64_t)((uint64_t)acc->i + (uint64_t)in->i);
        break;
    case FR_AGG_PRODUCT:
        r.i = is_int ? (int32_t)(uint32_t)((uint64_t)acc->i * (uint64_t)in->i)
                     : (int64_t)((uint64_t)acc->i * (uint64_t)in->i);
        break;
    case FR_AGG_MAX:
    case FR_AGG_MIN: {
        int cmp = is_string_col(col) ? strcmp(acc->s, in->s)
                                     : (acc->i > in->i) - (acc->i < in->i);
        bool take_acc = fn == FR_AGG_MAX ? cmp >= 0 : cmp < 0;
        return mcell_copy(take_acc ? acc : in);
    }
    case FR_AGG_LISTAGG: {
        const char *d = m->delims[col] ? m->delims[col] : ",";
        size_t n = strlen(acc->s) + strlen(d) + strlen(in->s) + 1;
        r.s = malloc(n);
        snprintf(r.s, n, "%s%s%s", acc->s, d, in->s);
        break;
    }
    case FR_AGG_BOOL_AND: r.i = acc->i && in->i; break;
    case FR_AGG_BOOL_OR: r.i = acc->i || in->i; break;
    default: fail_msg("model: aggregate %d", (int)fn);
    }
    return r;
}

/* The row an upsert leaves on an existing row (new memory). */
static mrow model_merge(const model *m, const mrow *old, const mrow *in, const bool *targets)
{
    mrow out;
    switch (m->merge) {
    case FR_MERGE_LAST_ROW:
        for (int c = 0; c < NCOLS; c++)
            out.c[c] = mcell_copy(targets && !targets[c] ? &old->c[c] : &in->c[c]);
        return out;
    case FR_MERGE_FIRST_ROW: return mrow_copy(old);
    case FR_MERGE_VERSIONED: {
        int64_t vo = old->c[C_V3].null ? INT32_MIN : old->c[C_V3].i;
        int64_t vi = in->c[C_V3].null ? INT32_MIN : in->c[C_V3].i;
        return mrow_copy(vo <= vi ? in : old);
    }
    case FR_MERGE_AGGREGATION:
        for (int c = 0; c < NCOLS; c++) {
            if (c == C_K1 || c == C_K2) out.c[c] = mcell_copy(&in->c[c]);
            else if (targets && !targets[c]) out.c[c] = mcell_copy(&old->c[c]);
            else out.c[c] = model_agg(m, c, &old->c[c], &in->c[c]);
        }
        return out;
    }
    fail_msg("model: engine");
    return out;
}

/* Replaces the stored row of k with r (taken), with its records. */
static void model_update(model *m, int k, mrow *r, mlog *l)
{
    if (mrow_equal(&m->rows[k], r)) {
        mrow_free(r);
        return;
    }
    if (m->image == FR_CHANGELOG_FULL) mlog_add(l, "-U", &m->rows[k]);
    mlog_add(l, "+U", r);
    mrow_free(&m->rows[k]);
    m->rows[k] = *r;
}

static void model_upsert(model *m, const mrow *given, const bool *targets, mlog *l)
{
    mrow in = mrow_copy(given);
    for (int c = 0; targets && c < NCOLS; c++)
        if (!targets[c]) {
            mcell_free(&in.c[c]);
            in.c[c].null = true;
        }
    int k = key_index(&in);
    if (m->image == FR_CHANGELOG_WAL && m->merge == FR_MERGE_LAST_ROW && !targets) {
        mlog_add(l, "+U", &in);
        if (m->present[k]) mrow_free(&m->rows[k]);
        m->rows[k] = in;
        m->present[k] = true;
        return;
    }
    if (!m->present[k]) {
        mlog_add(l, "+I", &in);
        m->rows[k] = in;
        m->present[k] = true;
        return;
    }
    mrow out = model_merge(m, &m->rows[k], &in, targets);
    mrow_free(&in);
    model_update(m, k, &out, l);
}

static void model_delete(model *m, const mrow *given, const bool *targets, mlog *l)
{
    if (m->del == FR_DELETE_IGNORE) return;
    int k = key_index(given);
    if (!m->present[k]) return;
    mrow *old = &m->rows[k];
    if (targets) {
        bool others_null = true;
        for (int c = 0; c < NCOLS; c++)
            if (!targets[c] && !old->c[c].null) others_null = false;
        if (!others_null) {
            mrow out = mrow_copy(old);
            for (int c = C_V1; c < NCOLS; c++)
                if (targets[c]) {
                    mcell_free(&out.c[c]);
                    out.c[c].null = true;
                }
            model_update(m, k, &out, l);
            return;
        }
    }
    mlog_add(l, "-D", old);
    mrow_free(old);
    m->present[k] = false;
}

static void model_free(model *m)
{
    for (int k = 0; k < NKEYS; k++)
        if (m->present[k]) mrow_free(&m->rows[k]);
}

/* ---- random batches --------------------------------------------------------------------- */

typedef struct rbatch {
    int n;
    mrow rows[16];
    uint8_t ops[16];
    bool has_targets;
    bool targets[NCOLS];
    int target_list[NCOLS];
    int ntargets;
} rbatch;

static mcell rnd_string_cell(void)
{
    static const char *const words[] = { "x", "y", "zz", "", "abc" };
    mcell c = { 0 };
    if (test_rng_chance(25)) c.null = true;
    else c.s = strdup(words[test_rng_below(5)]);
    return c;
}

static mcell rnd_int_cell(int col)
{
    mcell c = { 0 };
    if (test_rng_chance(25)) {
        c.null = true;
    } else if (col == C_V4) {
        c.i = test_rng_below(2);
    } else if (test_rng_chance(10)) {
        c.i = col == C_V3 ? (int32_t)test_rng_next() : (int64_t)test_rng_next();
    } else {
        c.i = test_rng_below(9) - 4;
    }
    return c;
}

static void rnd_batch(const model *m, rbatch *b)
{
    memset(b, 0, sizeof *b);
    b->n = 1 + test_rng_below(12);
    int delete_percent = m->del == FR_DELETE_DISABLE ? (test_rng_chance(10) ? 50 : 0) : 30;
    for (int i = 0; i < b->n; i++) {
        mrow *r = &b->rows[i];
        r->c[C_K1].i = test_rng_below(NK1);
        r->c[C_K2].s = strdup(k2_names[test_rng_below(NK2)]);
        r->c[C_V1] = rnd_int_cell(C_V1);
        r->c[C_V2] = rnd_string_cell();
        r->c[C_V3] = rnd_int_cell(C_V3);
        r->c[C_V4] = rnd_int_cell(C_V4);
        b->ops[i] = test_rng_chance(delete_percent) ? FR_KV_DELETE : FR_KV_UPSERT;
    }
    bool partial_ok = m->merge == FR_MERGE_LAST_ROW || m->merge == FR_MERGE_AGGREGATION;
    if (partial_ok && test_rng_chance(35)) {
        int count = 0;
        for (int c = 0; c < NCOLS; c++) {
            b->targets[c] = c == C_K1 || c == C_K2 || test_rng_chance(50);
            if (b->targets[c]) b->target_list[b->ntargets++] = c;
            count += b->targets[c];
        }
        /* listing every column is a full write, for the model too */
        b->has_targets = count < NCOLS;
        if (!b->has_targets && test_rng_chance(50)) b->ntargets = 0; /* sometimes pass NULL */
    }
}

static void rbatch_free(rbatch *b)
{
    for (int i = 0; i < b->n; i++) mrow_free(&b->rows[i]);
}

static fr_batch *rbatch_encode(const fr_schema *s, const rbatch *b)
{
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int i = 0; i < b->n; i++) {
        for (int c = 0; c < NCOLS; c++) {
            const mcell *m = &b->rows[i].c[c];
            fr_type t = fr_schema_field(s, c)->type;
            fr_value v;
            if (m->null) v = fr_value_null(t);
            else if (is_string_col(c)) v = fr_value_str(t, m->s, strlen(m->s));
            else if (c == C_V4) v = fr_value_bool(t, m->i != 0);
            else v = fr_value_int(t, m->i);
            assert_int_equal(fr_builder_append(bld, c, &v, &err), 0);
        }
    }
    fr_batch *out;
    assert_int_equal(fr_builder_finish(bld, &out, &err), 0);
    fr_builder_free(bld);
    return out;
}

/* ---- checks ------------------------------------------------------------------------------- */

static void check_state(kt_bucket *bk, const model *m)
{
    kt_lines want = { 0 };
    char text[32768];
    for (int k = 0; k < NKEYS; k++) { /* k1 then k2 ascending: the key order */
        if (!m->present[k]) continue;
        mrow_format(&m->rows[k], text, sizeof text);
        kt_lines_add(&want, text);
    }
    kt_lines got = kt_state(bk);
    kt_expect_lines("state", &got, want.n, (const char *const *)want.v);
    if (m->image == FR_CHANGELOG_FULL) assert_int_equal(fr_kv_num_keys(bk->kv), want.n);
    kt_lines_free(&want);
}

static void check_lookups(kt_bucket *bk, const model *m)
{
    /* every key, present or not, in a random order */
    fr_schema *ks = kt_schema(2, (const char *[]){ "k1 INT", "k2 STRING" });
    int order[NKEYS];
    for (int k = 0; k < NKEYS; k++) order[k] = k;
    for (int k = NKEYS - 1; k > 0; k--) {
        int j = test_rng_below(k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    char texts[NKEYS][16];
    const char *rows[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(texts[i], sizeof texts[i], "%d|%s", order[i] / NK2, k2_names[order[i] % NK2]);
        rows[i] = texts[i];
    }
    fr_batch *keys = kt_batch(ks, NKEYS, rows);
    bool found[NKEYS];
    fr_batch *out;
    fr_error err;
    assert_int_equal(fr_kv_lookup(bk->kv, keys, found, &out, &err), 0);
    kt_lines got = { 0 }, want = { 0 };
    kt_lines_of_batch(&got, out, NULL);
    char text[32768];
    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(found[i], m->present[order[i]]);
        if (!m->present[order[i]]) continue;
        mrow_format(&m->rows[order[i]], text, sizeof text);
        kt_lines_add(&want, text);
    }
    kt_expect_lines("lookup", &got, want.n, (const char *const *)want.v);
    kt_lines_free(&want);
    fr_batch_free(out);
    fr_batch_free(keys);
    fr_schema_free(ks);

    /* a prefix: one k1 */
    int k1 = test_rng_below(NK1);
    fr_value p = fr_value_int(fr_type_of(FR_T_INT), k1);
    assert_int_equal(fr_kv_prefix_lookup(bk->kv, &p, 1, NULL, 0, kt_collect_rows, &got, &err), 0);
    for (int k2 = 0; k2 < NK2; k2++) {
        if (!m->present[k1 * NK2 + k2]) continue;
        mrow_format(&m->rows[k1 * NK2 + k2], text, sizeof text);
        kt_lines_add(&want, text);
    }
    kt_expect_lines("prefix lookup", &got, want.n, (const char *const *)want.v);
    kt_lines_free(&want);
}

/* ---- one configuration -------------------------------------------------------------------- */

static void random_config(model *m)
{
    static const fr_agg_fn v1_fns[] = { FR_AGG_SUM, FR_AGG_PRODUCT, FR_AGG_MAX, FR_AGG_MIN,
                                        FR_AGG_LAST_VALUE, FR_AGG_LAST_VALUE_IGNORE_NULLS,
                                        FR_AGG_FIRST_VALUE, FR_AGG_FIRST_VALUE_IGNORE_NULLS };
    static const fr_agg_fn v2_fns[] = { FR_AGG_LISTAGG, FR_AGG_MAX, FR_AGG_MIN,
                                        FR_AGG_LAST_VALUE, FR_AGG_LAST_VALUE_IGNORE_NULLS,
                                        FR_AGG_FIRST_VALUE, FR_AGG_FIRST_VALUE_IGNORE_NULLS };
    static const fr_agg_fn v4_fns[] = { FR_AGG_BOOL_AND, FR_AGG_BOOL_OR, FR_AGG_LAST_VALUE,
                                        FR_AGG_LAST_VALUE_IGNORE_NULLS, FR_AGG_FIRST_VALUE,
                                        FR_AGG_FIRST_VALUE_IGNORE_NULLS };
    static const char *const delims[] = { NULL, ";", "--" };
    m->image = test_rng_chance(50) ? FR_CHANGELOG_WAL : FR_CHANGELOG_FULL;
    if (m->merge == FR_MERGE_FIRST_ROW || m->merge == FR_MERGE_VERSIONED)
        m->del = test_rng_chance(80) ? FR_DELETE_IGNORE : FR_DELETE_DISABLE;
    else
        m->del = test_rng_chance(60)   ? FR_DELETE_ALLOW
                 : test_rng_chance(50) ? FR_DELETE_IGNORE
                                  : FR_DELETE_DISABLE;
    m->aggs[C_V1] = v1_fns[test_rng_below(8)];
    m->aggs[C_V2] = v2_fns[test_rng_below(7)];
    m->aggs[C_V3] = v1_fns[test_rng_below(8)];
    m->aggs[C_V4] = v4_fns[test_rng_below(6)];
    m->delims[C_V2] = delims[test_rng_below(3)];
}

static void reopen(kt_bucket *bk, int how)
{
    fr_error err;
    kt_close(bk, how == 0);
    if (how == 2) assert_int_equal(fr_remove_tree(bk->kvdir, &err), 0);
    kt_open(bk);
}

static void run_engine(fr_merge_engine merge, int batches)
{
    model m = { .merge = merge };
    random_config(&m);
    fr_schema *s = kt_schema(NCOLS, (const char *[]){ "k1 INT NOT NULL", "k2 STRING NOT NULL",
                                                      "v1 BIGINT", "v2 STRING", "v3 INT",
                                                      "v4 BOOLEAN" });
    kt_bucket *bk = kt_bucket_new("kv-random", s, (const int[]){ C_K1, C_K2 }, 2);
    bk->spec.merge = merge;
    bk->spec.version_column = C_V3;
    bk->spec.image = m.image;
    bk->spec.delete_behavior = m.del;
    bk->spec.compression = (fr_compression)test_rng_below(3);
    for (int c = 0; c < NCOLS; c++) {
        bk->aggs[c] = m.aggs[c];
        bk->delims[c] = m.delims[c];
    }
    print_message("  %s, %s image, deletes %d, aggs v1=%s v2=%s(%s) v3=%s v4=%s\n",
                  fr_merge_engine_name(merge), m.image == FR_CHANGELOG_FULL ? "FULL" : "WAL",
                  (int)m.del, fr_agg_fn_name(m.aggs[C_V1]), fr_agg_fn_name(m.aggs[C_V2]),
                  m.delims[C_V2] ? m.delims[C_V2] : ",", fr_agg_fn_name(m.aggs[C_V3]),
                  fr_agg_fn_name(m.aggs[C_V4]));
    kt_open(bk);
    int32_t seq = 0;
    for (int i = 0; i < batches; i++) {
        rbatch b;
        rnd_batch(&m, &b);
        fr_batch *rows = rbatch_encode(s, &b);
        bool has_delete = false;
        for (int r = 0; r < b.n; r++) has_delete |= b.ops[r] == FR_KV_DELETE;
        int64_t writer = test_rng_chance(90) ? 1 : FR_NO_WRITER;
        int64_t end = fr_log_end_offset(bk->log);
        fr_kv_write_result res;
        fr_error err;
        int rc = fr_kv_write(bk->kv, rows, b.ops, b.ntargets ? b.target_list : NULL,
                             b.ntargets, writer, writer == 1 ? seq : -1, &res, &err);
        if (has_delete && m.del == FR_DELETE_DISABLE) {
            assert_int_equal(rc, FR_EINVAL);
            assert_int_equal(fr_log_end_offset(bk->log), end);
        } else {
            if (rc != 0) fail_msg("batch %d: %s", i, err.msg);
            mlog want = { 0 };
            for (int r = 0; r < b.n; r++) {
                const bool *t = b.has_targets ? b.targets : NULL;
                if (b.ops[r] == FR_KV_DELETE) model_delete(&m, &b.rows[r], t, &want);
                else model_upsert(&m, &b.rows[r], t, &want);
            }
            kt_lines got = kt_changes(bk, end);
            kt_expect_lines("changelog", &got, want.lines.n, (const char *const *)want.lines.v);
            assert_int_equal(res.changelog_records, want.lines.n);
            assert_int_equal(res.base_offset, want.lines.n ? end : -1);
            kt_lines_free(&want.lines);
            if (writer == 1 && test_rng_chance(10)) { /* a retry of the same batch */
                int64_t end2 = fr_log_end_offset(bk->log);
                rc = fr_kv_write(bk->kv, rows, b.ops, b.ntargets ? b.target_list : NULL,
                                 b.ntargets, writer, seq, &res, &err);
                assert_int_equal(rc, FR_EDUPLICATE);
                assert_int_equal(fr_log_end_offset(bk->log), end2);
            }
        }
        if (writer == 1) seq++;
        fr_batch_free(rows);
        rbatch_free(&b);
        assert_int_equal(fr_kv_applied_offset(bk->kv), fr_log_end_offset(bk->log));
        if (test_rng_chance(6)) {
            reopen(bk, test_rng_below(3));
            check_state(bk, &m);
        }
        if (test_rng_chance(15)) check_state(bk, &m);
        if (test_rng_chance(10)) check_lookups(bk, &m);
    }
    check_state(bk, &m);
    check_lookups(bk, &m);
    /* the state equals the changelog replayed from offset 0 */
    reopen(bk, 2);
    check_state(bk, &m);
    model_free(&m);
    kt_bucket_free(bk);
}

static int batches_per_config(void)
{
    const char *e = getenv("FIRTH_TEST_BATCHES");
    return e && atoi(e) > 0 ? atoi(e) : 300;
}

static void test_random_engines(void **state)
{
    (void)state;
    test_rng_seed(test_rng_seed_of_run("test_kv_random"));
    int batches = batches_per_config();
    for (int round = 0; round < 2; round++) {
        run_engine(FR_MERGE_LAST_ROW, batches);
        run_engine(FR_MERGE_FIRST_ROW, batches);
        run_engine(FR_MERGE_VERSIONED, batches);
        run_engine(FR_MERGE_AGGREGATION, batches);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_engines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
