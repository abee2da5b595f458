/* expr_eval.c — evaluation of bound expressions over batches: the dispatcher, Kleene logic
 * on bitmaps, IS NULL, IN, BETWEEN, LIKE, CAST and ||, plus fr_expr_eval and
 * fr_expr_filter. CASE and the scalar functions are in expr_func.c.
 *
 * Every node turns into one vector of the node's type. Literals stay constants, so
 * `col op literal` never materializes the literal; comparisons of a fixed-width column with
 * a literal run straight over the column's buffer. The filter walks AND and OR itself and
 * combines TRUE-bitmaps word by word, which is exact: under Kleene's tables a AND b is TRUE
 * exactly where both are TRUE, and a OR b where either is. */
#include <assert.h>
#include <stdlib.h>

#include "expr/expr_internal.h"

#define EX_ALL ~(uint64_t)0
#define EX_CAST_ARENA_ROWS 1024

static int ex_column_of(const fr_expr *e, const fr_batch *b, const fr_column **out,
                        fr_error *err)
{
    FR_CHECK(e->column >= 0 && e->column < fr_batch_num_columns(b), FR_EINVAL, err,
             "column '%s' (index %d) is not in the batch, which has %d columns", e->name,
             e->column, fr_batch_num_columns(b));
    const fr_column *c = fr_batch_column(b, e->column);
    if (c->type.id != e->type.id || !ex_same_repr(&c->type, &e->type)) {
        char t1[64], t2[64];
        return fr_fail(err, FR_ETYPE, "column '%s' is %s in the batch but was bound as %s",
                       e->name, ex_type_name(&c->type, t1, sizeof t1),
                       ex_type_name(&e->type, t2, sizeof t2));
    }
    *out = c;
    return 0;
}

uint64_t *ex_words_new(int64_t n, fr_error *err)
{
    uint64_t *w = fr_calloc((size_t)EX_WORDS(n) + 1, 8);
    if (!w) fr_fail(err, FR_ENOMEM, "out of memory for a bitmap of %lld rows", (long long)n);
    return w;
}

uint64_t *ex_words_of_mask(const uint64_t *mask, int64_t n, fr_error *err)
{
    uint64_t *w = ex_words_new(n, err);
    if (!w) return NULL;
    for (int64_t k = 0; k < EX_WORDS(n); k++) w[k] = mask ? mask[k] : EX_ALL;
    if (n & 63) w[(n - 1) >> 6] &= ((uint64_t)1 << (n & 63)) - 1;
    return w;
}

static uint64_t *ex_words_from_arrow(const uint8_t *bits, int64_t n, fr_error *err)
{
    uint64_t *w = ex_words_new(n, err);
    if (w && n > 0) memcpy(w, bits, (size_t)(n + 7) / 8);
    return w;
}

static void ex_const_bool(ex_vec *out, int64_t n, bool is_null, bool b)
{
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    fr_value v = fr_value_null(bt);
    v.is_null = is_null;
    v.v.b = b;
    ex_vec_const(out, &v, &bt, n);
}

/* ---- logic ----------------------------------------------------------------------------- */

static void ex_not(ex_vec *v)
{
    if (v->is_const) {
        v->cval.v.b = !v->cval.v.b;
        return;
    }
    for (int64_t w = 0; w < EX_WORDS(v->n); w++) v->bits[w] = ~v->bits[w];
}

/* Kleene AND / OR, a word (64 rows) at a time:
 *   AND: value a & b, known where both are known or either is a known FALSE;
 *   OR:  value a | b, known where both are known or either is a known TRUE. */
static int ex_and_or(fr_expr_op op, const ex_vec *a, const ex_vec *b, ex_vec *out,
                     fr_error *err)
{
    int64_t n = a->n;
    if (a->is_const && b->is_const) {
        fr_value x = a->cval, y = b->cval;
        bool and = op == FR_OP_AND;
        bool decided_x = !x.is_null && x.v.b != and, decided_y = !y.is_null && y.v.b != and;
        if (decided_x || decided_y) ex_const_bool(out, n, false, !and);
        else if (x.is_null || y.is_null) ex_const_bool(out, n, true, false);
        else ex_const_bool(out, n, false, and);
        return 0;
    }
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    FR_TRY(ex_vec_alloc(out, &bt, n, err));
    int rc = ex_vec_alloc_valid(out, err);
    if (rc < 0) {
        ex_vec_free(out);
        return rc;
    }
    for (int64_t w = 0; w < EX_WORDS(n); w++) {
        uint64_t x = ex_word_val(a, w), y = ex_word_val(b, w);
        uint64_t vx = ex_word_valid(a, w), vy = ex_word_valid(b, w);
        if (op == FR_OP_AND) {
            out->bits[w] = x & y;
            out->valid[w] = (vx & vy) | (vx & ~x) | (vy & ~y);
        } else {
            out->bits[w] = x | y;
            out->valid[w] = (vx & vy) | (vx & x) | (vy & y);
        }
    }
    ex_vec_seal(out);
    return 0;
}

/* The rows of `mask` where b still matters after a: not FALSE for AND, not TRUE for OR. */
static int ex_mask_after(fr_expr_op op, const ex_vec *a, const uint64_t *mask,
                         uint64_t **out, fr_error *err)
{
    int64_t n = a->n;
    uint64_t *m = ex_words_new(n, err);
    if (!m) return FR_ENOMEM;
    for (int64_t w = 0; w < EX_WORDS(n); w++) {
        uint64_t x = ex_word_val(a, w), vx = ex_word_valid(a, w);
        uint64_t decided = op == FR_OP_AND ? (vx & ~x) : (vx & x);
        m[w] = (mask ? mask[w] : EX_ALL) & ~decided;
    }
    *out = m;
    return 0;
}

static int ex_eval_logic(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                         ex_vec *out, fr_error *err)
{
    ex_vec a, c;
    ex_vec_init(&c);
    FR_TRY(ex_eval(e->args[0], b, mask, &a, err));
    uint64_t *m = NULL;
    int rc = 0;
    FR_GOTO(ex_mask_after(e->op, &a, mask, &m, err));
    FR_GOTO(ex_eval(e->args[1], b, m, &c, err));
    FR_GOTO(ex_and_or(e->op, &a, &c, out, err));
fail:
    fr_free(m);
    ex_vec_free(&a);
    ex_vec_free(&c);
    return rc;
}

/* ---- comparisons, IN, BETWEEN ---------------------------------------------------------- */

/* `column op literal` (either order) straight over the column, when it applies. Returns 1
 * when done, 0 when the general path must run. */
static int ex_compare_direct(const fr_expr *e, const fr_batch *b, ex_vec *out, fr_error *err)
{
    const fr_expr *l = e->args[0], *r = e->args[1];
    fr_expr_op op = e->op;
    if (l->kind == FR_EX_LITERAL && r->kind == FR_EX_COLUMN) {
        const fr_expr *t = l;
        l = r;
        r = t;
        op = ex_op_flip(op);
    }
    if (l->kind != FR_EX_COLUMN || r->kind != FR_EX_LITERAL || r->value.is_null) return 0;
    if (!ex_column_compare_direct(&l->type, &e->operand_type)) return 0;
    const fr_column *c;
    FR_TRY(ex_column_of(l, b, &c, err));
    fr_value k;
    FR_TRY(ex_value_coerce(&r->value, &e->operand_type, false, &k, err));
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    FR_TRY(ex_vec_alloc(out, &bt, c->length, err));
    if (!ex_compare_column_const(c, op, &k, out->bits)) {
        ex_vec_free(out);
        return 0;
    }
    if (c->null_count > 0 && c->validity) {
        out->valid = ex_words_from_arrow(c->validity, c->length, err);
        if (!out->valid) {
            ex_vec_free(out);
            return FR_ENOMEM;
        }
    }
    ex_vec_seal(out);
    return 1;
}

/* Evaluates x and brings it to the node's operand type. */
static int ex_eval_operand(const fr_expr *e, const fr_expr *x, const fr_batch *b,
                           const uint64_t *mask, ex_vec *out, fr_error *err)
{
    FR_TRY(ex_eval(x, b, mask, out, err));
    int rc = ex_vec_coerce(out, &e->operand_type, false, err);
    if (rc < 0) ex_vec_free(out);
    return rc;
}

static int ex_eval_compare(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                           ex_vec *out, fr_error *err)
{
    int rc = ex_compare_direct(e, b, out, err);
    if (rc != 0) return rc < 0 ? rc : 0;
    ex_vec x, y;
    ex_vec_init(&y);
    FR_TRY(ex_eval_operand(e, e->args[0], b, mask, &x, err));
    FR_GOTO(ex_eval_operand(e, e->args[1], b, mask, &y, err));
    FR_GOTO(ex_compare(&x, &y, e->op, out, err));
fail:
    ex_vec_free(&x);
    ex_vec_free(&y);
    return rc;
}

static int ex_value_qsort_cmp(const void *a, const void *b)
{
    return ex_value_cmp(a, b);
}

/* Whether the sorted set[0..n) holds v. */
static bool ex_set_has(const fr_value *set, int n, const fr_value *v)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = ex_value_cmp(&set[mid], v);
        if (c == 0) return true;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

/* x IN (literals) for longer lists: a binary search in the sorted literals per row. A NULL
 * in the list turns every miss into NULL, as x = NULL would. Fills *out and returns 1, or
 * returns 0 when an item is not a literal. */
static int ex_eval_in_set(const fr_expr *e, const ex_vec *x, ex_vec *out, fr_error *err)
{
    int k = e->nargs - 1, n = 0;
    for (int i = 1; i < e->nargs; i++)
        if (e->args[i]->kind != FR_EX_LITERAL) return 0;
    fr_value *set = fr_malloc((size_t)k * sizeof *set);
    if (!set) return fr_fail(err, FR_ENOMEM, "out of memory for an IN list");
    bool has_null = false;
    int rc = 0;
    int64_t *ints = NULL;
    for (int i = 1; i < e->nargs; i++) {
        const fr_value *lit = &e->args[i]->value;
        if (lit->is_null) {
            has_null = true;
            continue;
        }
        FR_GOTO(ex_value_coerce(lit, &e->operand_type, false, &set[n], err));
        n++;
    }
    qsort(set, (size_t)n, sizeof *set, ex_value_qsort_cmp);
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    FR_GOTO(ex_vec_alloc(out, &bt, x->n, err));
    FR_GOTO(ex_vec_alloc_valid(out, err));
    if (x->phys == EX_P_I64) { /* the common case: integers, dates, times */
        ints = fr_malloc((size_t)(n ? n : 1) * sizeof *ints);
        if (!ints) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory for an IN list"));
        for (int i = 0; i < n; i++) ints[i] = set[i].v.i;
    }
    for (int64_t r = 0; r < x->n; r++) {
        if (ex_vec_is_null(x, r)) continue;
        bool found;
        if (ints) {
            int64_t v = x->i[r];
            int lo = 0, hi = n;
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2;
                if (ints[mid] < v) lo = mid + 1;
                else hi = mid;
            }
            found = lo < n && ints[lo] == v;
        } else {
            fr_value v;
            ex_vec_get(x, r, &v);
            found = ex_set_has(set, n, &v);
        }
        if (found) {
            ex_bit_set(out->bits, r);
            ex_bit_set(out->valid, r);
        } else if (!has_null) {
            ex_bit_set(out->valid, r);
        }
    }
    ex_vec_seal(out);
    if (e->negated) ex_not(out);
    rc = 1;
fail:
    if (rc < 0) ex_vec_free(out);
    fr_free(ints);
    fr_free(set);
    return rc;
}

#define EX_IN_SET_MIN 8

/* x IN (items) is x = i1 OR x = i2 OR ..., which gives SQL's answer with nulls for free. */
static int ex_eval_in(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
                      fr_error *err)
{
    ex_vec x, acc, y, eq, t;
    ex_vec_init(&y);
    ex_vec_init(&eq);
    ex_vec_init(&t);
    FR_TRY(ex_eval_operand(e, e->args[0], b, mask, &x, err));
    ex_const_bool(&acc, x.n, false, false);
    int rc = 0;
    if (e->nargs - 1 >= EX_IN_SET_MIN && !x.is_const) {
        rc = ex_eval_in_set(e, &x, out, err);
        if (rc != 0) {
            ex_vec_free(&x);
            return rc < 0 ? rc : 0;
        }
    }
    for (int k = 1; k < e->nargs; k++) {
        FR_GOTO(ex_eval_operand(e, e->args[k], b, mask, &y, err));
        FR_GOTO(ex_compare(&x, &y, FR_OP_EQ, &eq, err));
        FR_GOTO(ex_and_or(FR_OP_OR, &acc, &eq, &t, err));
        ex_vec_move(&acc, &t);
        ex_vec_free(&y);
        ex_vec_free(&eq);
    }
    if (e->negated) ex_not(&acc);
    ex_vec_move(out, &acc);
fail:
    ex_vec_free(&x);
    ex_vec_free(&acc);
    ex_vec_free(&y);
    ex_vec_free(&eq);
    ex_vec_free(&t);
    return rc;
}

static int ex_eval_between(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                           ex_vec *out, fr_error *err)
{
    ex_vec x, lo, hi, ge, le;
    ex_vec_init(&lo);
    ex_vec_init(&hi);
    ex_vec_init(&ge);
    ex_vec_init(&le);
    FR_TRY(ex_eval_operand(e, e->args[0], b, mask, &x, err));
    int rc = 0;
    FR_GOTO(ex_eval_operand(e, e->args[1], b, mask, &lo, err));
    FR_GOTO(ex_eval_operand(e, e->args[2], b, mask, &hi, err));
    FR_GOTO(ex_compare(&x, &lo, FR_OP_GE, &ge, err));
    FR_GOTO(ex_compare(&x, &hi, FR_OP_LE, &le, err));
    FR_GOTO(ex_and_or(FR_OP_AND, &ge, &le, out, err));
    if (e->negated) ex_not(out);
fail:
    ex_vec_free(&x);
    ex_vec_free(&lo);
    ex_vec_free(&hi);
    ex_vec_free(&ge);
    ex_vec_free(&le);
    return rc;
}

static int ex_eval_is_null(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                           ex_vec *out, fr_error *err)
{
    ex_vec x;
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    int64_t n = x.n;
    if (x.is_const) {
        ex_const_bool(out, n, false, (x.null_count > 0) != e->negated);
        ex_vec_free(&x);
        return 0;
    }
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    bt.nullable = false;
    int rc = ex_vec_alloc(out, &bt, n, err);
    if (rc == 0) {
        for (int64_t w = 0; w < EX_WORDS(n); w++) {
            uint64_t v = x.valid ? x.valid[w] : EX_ALL;
            out->bits[w] = e->negated ? v : ~v;
        }
    }
    ex_vec_free(&x);
    return rc;
}

/* ---- LIKE ------------------------------------------------------------------------------ */

typedef enum {
    EX_LIKE_EXACT,    /* 'abc' */
    EX_LIKE_PREFIX,   /* 'abc%' */
    EX_LIKE_SUFFIX,   /* '%abc' */
    EX_LIKE_CONTAINS, /* '%abc%' */
    EX_LIKE_ANY,      /* anything else: the general matcher */
} ex_like_kind;

/* Recognizes the patterns that need no general matcher: 'abc', 'abc%', '%abc', '%abc%'. */
static ex_like_kind ex_like_classify(const uint8_t *p, size_t m, const uint8_t **lit,
                                     size_t *len)
{
    size_t lead = 0, trail = 0;
    while (lead < m && p[lead] == '%') lead++;
    while (trail < m - lead && p[m - 1 - trail] == '%') trail++;
    *lit = p + lead;
    *len = m - lead - trail;
    for (size_t i = 0; i < *len; i++)
        if ((*lit)[i] == '%' || (*lit)[i] == '_') return EX_LIKE_ANY;
    if (lead == 0 && trail == 0) return EX_LIKE_EXACT;
    if (lead == 0) return EX_LIKE_PREFIX;
    if (trail == 0) return EX_LIKE_SUFFIX;
    return EX_LIKE_CONTAINS;
}

static bool ex_like_one(ex_like_kind kind, const uint8_t *s, size_t n, const uint8_t *lit,
                        size_t len, const uint8_t *p, size_t m)
{
    switch (kind) {
    case EX_LIKE_EXACT: return n == len && (len == 0 || memcmp(s, lit, len) == 0);
    case EX_LIKE_PREFIX: return n >= len && (len == 0 || memcmp(s, lit, len) == 0);
    case EX_LIKE_SUFFIX: return n >= len && (len == 0 || memcmp(s + n - len, lit, len) == 0);
    case EX_LIKE_CONTAINS: return len == 0 || (n > 0 && memmem(s, n, lit, len) != NULL);
    default: return ex_like_match(s, n, p, m);
    }
}

static int ex_eval_like(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                        ex_vec *out, fr_error *err)
{
    ex_vec x, p;
    ex_vec_init(&p);
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    int rc = 0;
    FR_GOTO(ex_eval(e->args[1], b, mask, &p, err));
    if ((x.is_const && x.null_count) || (p.is_const && p.null_count)) {
        ex_const_bool(out, x.n, true, false);
        goto fail;
    }
    FR_GOTO(ex_vec_materialize(&x, err));
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    FR_GOTO(ex_vec_alloc(out, &bt, x.n, err));
    FR_GOTO(ex_valid_and(&x, &p, &out->valid, err));
    const uint8_t *lit = NULL;
    size_t len = 0;
    ex_like_kind kind = EX_LIKE_ANY;
    if (p.is_const)
        kind = ex_like_classify(p.cval.v.s.ptr, p.cval.v.s.len, &lit, &len);
    for (int64_t r = 0; r < x.n; r++) {
        if (ex_vec_is_null(&x, r) || ex_vec_is_null(&p, r)) continue;
        fr_value s, pat;
        ex_vec_get(&x, r, &s);
        ex_vec_get(&p, r, &pat);
        ex_like_kind k = kind;
        if (!p.is_const) k = ex_like_classify(pat.v.s.ptr, pat.v.s.len, &lit, &len);
        if (ex_like_one(k, s.v.s.ptr, s.v.s.len, lit, len, pat.v.s.ptr, pat.v.s.len))
            ex_bit_set(out->bits, r);
    }
    ex_vec_seal(out);
    if (e->negated) ex_not(out);
fail:
    if (rc < 0) ex_vec_free(out);
    ex_vec_free(&x);
    ex_vec_free(&p);
    return rc;
}

/* ---- ||, CAST -------------------------------------------------------------------------- */

static int ex_eval_concat(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                          ex_vec *out, fr_error *err)
{
    ex_vec x, y;
    ex_vec_init(&y);
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    int rc = 0;
    FR_GOTO(ex_eval(e->args[1], b, mask, &y, err));
    ex_vecout o;
    FR_GOTO(ex_vecout_begin(&o, out, &e->type, x.n, err));
    for (int64_t r = 0; r < x.n; r++) {
        o.offs[r + 1] = o.offs[r];
        if (ex_vec_is_null(&x, r) || ex_vec_is_null(&y, r)) continue;
        fr_value s, t;
        ex_vec_get(&x, r, &s);
        ex_vec_get(&y, r, &t);
        if (s.v.s.len + t.v.s.len > (size_t)INT32_MAX - o.bytes.len) {
            ex_vecout_abort(&o);
            FR_GOTO(fr_fail(err, FR_ELIMIT, "string result exceeds the 2 GiB column limit"));
        }
        if ((s.v.s.len && fr_buf_append(&o.bytes, s.v.s.ptr, s.v.s.len, err) < 0) ||
            (t.v.s.len && fr_buf_append(&o.bytes, t.v.s.ptr, t.v.s.len, err) < 0)) {
            ex_vecout_abort(&o);
            FR_GOTO(FR_ENOMEM);
        }
        o.offs[r + 1] = (int32_t)o.bytes.len;
        ex_bit_set(out->valid, r);
    }
    FR_GOTO(ex_vecout_end(&o, err));
fail:
    ex_vec_free(&x);
    ex_vec_free(&y);
    return rc;
}

/* Casts that only relabel: the same type, or an integer into a wider integer. */
static bool ex_cast_is_relabel(const fr_type *from, const fr_type *to)
{
    if (fr_type_equal(from, to)) return true;
    if (fr_type_is_integer(from->id) && fr_type_is_integer(to->id))
        return fr_type_width(to) >= fr_type_width(from);
    if (from->id == FR_T_FLOAT && to->id == FR_T_DOUBLE) return true;
    if (fr_type_is_string(from->id) && to->id == FR_T_STRING) return true;
    return false;
}

static int ex_eval_cast(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                        ex_vec *out, fr_error *err)
{
    ex_vec x;
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    if (ex_cast_is_relabel(&x.type, &e->type)) {
        x.type = e->type;
        if (x.is_const) x.cval.type = e->type;
        ex_vec_move(out, &x);
        return 0;
    }
    int rc = 0;
    fr_arena *arena = NULL;
    if (x.is_const && (x.null_count || ex_phys_of(e->type.id) != EX_P_STR)) {
        /* One conversion stands for every row (a string result would need memory that
         * outlives this call, so strings take the row path below). */
        fr_value v = fr_value_null(e->type);
        if (!x.null_count) {
            arena = fr_arena_new(256);
            if (!arena) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory for a cast"));
            char where[64];
            fr_error cerr = {0};
            int crc = fr_value_cast(&x.cval, &e->type, arena, &v, &cerr);
            if (crc < 0)
                FR_GOTO(fr_fail(err, crc, "%s%s", ex_where(e, where, sizeof where), cerr.msg));
        }
        ex_vec_const(out, &v, &e->type, x.n);
        goto fail;
    }
    FR_GOTO(ex_vec_materialize(&x, err));
    ex_vecout o;
    FR_GOTO(ex_vecout_begin(&o, out, &e->type, x.n, err));
    for (int64_t r = 0; r < x.n; r++) {
        if (!arena || r % EX_CAST_ARENA_ROWS == 0) {
            fr_arena_free(arena);
            arena = fr_arena_new(16384);
            if (!arena) {
                ex_vecout_abort(&o);
                FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory for a cast"));
            }
        }
        fr_value v, c = fr_value_null(e->type);
        ex_vec_get(&x, r, &v);
        if (!v.is_null) {
            fr_error cerr = {0};
            int crc = fr_value_cast(&v, &e->type, arena, &c, &cerr);
            if (crc < 0) {
                if (mask && !ex_bit_get(mask, r)) {
                    c = fr_value_null(e->type);
                } else {
                    ex_vecout_abort(&o);
                    char where[64];
                    FR_GOTO(fr_fail(err, crc, "%s%s", ex_where(e, where, sizeof where),
                                    cerr.msg));
                }
            }
        }
        c.type = e->type;
        if (ex_vecout_put(&o, r, &c, err) < 0) {
            ex_vecout_abort(&o);
            FR_GOTO(err ? err->code : FR_ENOMEM);
        }
    }
    FR_GOTO(ex_vecout_end(&o, err));
fail:
    fr_arena_free(arena);
    ex_vec_free(&x);
    return rc;
}

/* ---- the dispatcher -------------------------------------------------------------------- */

int ex_eval(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
            fr_error *err)
{
    int64_t n = fr_batch_num_rows(b);
    ex_vec_init(out);
    switch (e->kind) {
    case FR_EX_LITERAL:
        ex_vec_const(out, &e->value, &e->type, n);
        return 0;
    case FR_EX_COLUMN: {
        const fr_column *c;
        FR_TRY(ex_column_of(e, b, &c, err));
        FR_TRY(ex_vec_from_column(out, c, err));
        out->type = e->type;
        return 0;
    }
    case FR_EX_UNARY: {
        ex_vec x;
        FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
        if (e->op == FR_OP_NOT) {
            ex_not(&x);
            ex_vec_move(out, &x);
            return 0;
        }
        int rc = ex_negate(e, &x, mask, out, err);
        ex_vec_free(&x);
        return rc;
    }
    case FR_EX_BINARY:
        if (e->op == FR_OP_AND || e->op == FR_OP_OR) return ex_eval_logic(e, b, mask, out, err);
        if (ex_op_is_compare(e->op)) return ex_eval_compare(e, b, mask, out, err);
        if (e->op == FR_OP_CONCAT) return ex_eval_concat(e, b, mask, out, err);
        if (ex_op_is_arith(e->op)) {
            ex_vec x, y;
            ex_vec_init(&y);
            FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
            int rc = ex_eval(e->args[1], b, mask, &y, err);
            if (rc == 0) rc = ex_arith(e, &x, &y, mask, out, err);
            ex_vec_free(&x);
            ex_vec_free(&y);
            return rc;
        }
        break;
    case FR_EX_IS_NULL: return ex_eval_is_null(e, b, mask, out, err);
    case FR_EX_IN: return ex_eval_in(e, b, mask, out, err);
    case FR_EX_BETWEEN: return ex_eval_between(e, b, mask, out, err);
    case FR_EX_LIKE: return ex_eval_like(e, b, mask, out, err);
    case FR_EX_CAST: return ex_eval_cast(e, b, mask, out, err);
    case FR_EX_CASE: return ex_eval_case(e, b, mask, out, err);
    case FR_EX_FUNC: return ex_eval_func(e, b, mask, out, err);
    case FR_EX_AGGREGATE: break; /* never bound */
    }
    return fr_fail(err, FR_EINVAL, "cannot evaluate an expression node of kind %d, op %d",
                   (int)e->kind, (int)e->op);
}

int fr_expr_eval(const fr_expr *e, const fr_batch *b, fr_batch **out, fr_error *err)
{
    FR_CHECK(e->type.id != 0, FR_ESTATE, err, "the expression is not bound to a schema");
    ex_vec v;
    FR_TRY(ex_eval(e, b, NULL, &v, err));
    const char *name = "expr";
    if (e->kind == FR_EX_COLUMN) name = fr_schema_field(fr_batch_schema(b), e->column)->name;
    return ex_vec_to_batch(&v, &e->type, name, out, err);
}

/* ---- filters --------------------------------------------------------------------------- */

/* Sets in `words` the rows of mask (NULL: all) where e is TRUE; other rows' bits are 0
 * inside the mask and unspecified outside it. */
static int ex_filter_words(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                           uint64_t *words, fr_error *err)
{
    int64_t n = fr_batch_num_rows(b), nw = EX_WORDS(n);
    if (e->kind == FR_EX_BINARY && (e->op == FR_OP_AND || e->op == FR_OP_OR)) {
        bool and = e->op == FR_OP_AND;
        FR_TRY(ex_filter_words(e->args[0], b, mask, words, err));
        uint64_t *other = ex_words_new(n, err);
        if (!other) return FR_ENOMEM;
        /* The right side matters where the left is TRUE (AND) or not TRUE (OR). */
        uint64_t any = 0;
        for (int64_t w = 0; w < nw; w++) {
            uint64_t m = mask ? mask[w] : EX_ALL;
            other[w] = m & (and ? words[w] : ~words[w]);
            any |= other[w];
        }
        int rc = 0;
        if (any) {
            uint64_t *right = ex_words_new(n, err);
            rc = right ? ex_filter_words(e->args[1], b, other, right, err) : FR_ENOMEM;
            for (int64_t w = 0; rc == 0 && w < nw; w++)
                words[w] = and ? (words[w] & right[w]) : (words[w] | (other[w] & right[w]));
            fr_free(right);
        } else if (and) {
            memset(words, 0, (size_t)nw * 8);
        }
        fr_free(other);
        return rc;
    }
    ex_vec v;
    FR_TRY(ex_eval(e, b, mask, &v, err));
    for (int64_t w = 0; w < nw; w++) words[w] = ex_word_val(&v, w) & ex_word_valid(&v, w);
    ex_vec_free(&v);
    return 0;
}

int fr_expr_filter(const fr_expr *e, const fr_batch *b, uint8_t *keep, int64_t *kept,
                   fr_error *err)
{
    FR_CHECK(e->type.id == FR_T_BOOLEAN, FR_ETYPE, err,
             "a filter must be a bound BOOLEAN expression");
    int64_t n = fr_batch_num_rows(b);
    uint64_t *words = ex_words_new(n, err);
    if (!words) return FR_ENOMEM;
    int rc = ex_filter_words(e, b, NULL, words, err);
    if (rc == 0) {
        if (n & 63) words[(n - 1) >> 6] &= ((uint64_t)1 << (n & 63)) - 1;
        int64_t count = 0;
        for (int64_t w = 0; w < EX_WORDS(n); w++) count += __builtin_popcountll(words[w]);
        if (n > 0) memcpy(keep, words, (size_t)(n + 7) / 8);
        if (kept) *kept = count;
    }
    fr_free(words);
    return rc;
}
