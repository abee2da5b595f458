/* expr_func.c — evaluation of CASE and of the scalar functions COALESCE, NULLIF, LOWER,
 * UPPER and CHAR_LENGTH (ABS is with the arithmetic, in expr_arith.c).
 *
 * CASE and COALESCE choose, row by row, the argument that gives the result. Each argument
 * is evaluated under the mask of the rows it can still matter for: a WHEN condition where
 * no earlier one was TRUE, a THEN or ELSE value where it is chosen, a COALESCE argument
 * where the ones before it are NULL. So an argument raises errors only for rows whose
 * result depends on it, and `CASE WHEN b <> 0 THEN a / b ELSE 0 END` never divides by zero.
 * The chosen values are gathered into the result as each argument is evaluated, converted
 * to the result type; a conversion that does not fit (a DECIMAL past 38 digits, a DATE far
 * beyond the nanosecond range of a TIMESTAMP(9)) is FR_ERANGE, for chosen rows only.
 *
 * Invariant: the rows still to decide (`left`) never have bits past n, and every chosen
 * set is a subset of it, so a row is written to the result at most once. */
#include <assert.h>

#include "expr/expr_internal.h"

/* ---- gathering chosen values ----------------------------------------------------------- */

/* The result of a CASE or COALESCE, filled by sets of chosen rows in any order. Fixed-width
 * values go straight into `out`; strings are appended to `heap` as they come and put in row
 * order at the end. */
typedef struct ex_gather {
    const fr_expr *e;
    ex_vec out;     /* fixed width: values and validity; strings: validity only */
    fr_buf heap;    /* strings: the bytes of the rows filled so far */
    int64_t *at;    /* strings: per row, where its bytes start in heap */
    int32_t *len;   /* strings: per row, how many */
} ex_gather;

static int ex_gather_begin(ex_gather *g, const fr_expr *e, int64_t n, fr_error *err)
{
    memset(g, 0, sizeof *g);
    g->e = e;
    fr_buf_init(&g->heap);
    ex_vec *v = &g->out;
    if (ex_phys_of(e->type.id) != EX_P_STR) {
        FR_TRY(ex_vec_alloc(v, &e->type, n, err));
    } else {
        ex_vec_init(v);
        v->type = e->type;
        v->phys = EX_P_STR;
        v->n = n;
        g->at = fr_calloc(n > 0 ? (size_t)n : 1, sizeof *g->at);
        g->len = fr_calloc(n > 0 ? (size_t)n : 1, sizeof *g->len);
        if (!g->at || !g->len) {
            fr_free(g->at);
            fr_free(g->len);
            return fr_fail(err, FR_ENOMEM, "out of memory for a CASE result of %lld rows",
                           (long long)n);
        }
    }
    if (ex_vec_alloc_valid(v, err) < 0) {
        ex_vec_free(v);
        fr_free(g->at);
        fr_free(g->len);
        return FR_ENOMEM;
    }
    return 0;
}

static void ex_gather_abort(ex_gather *g)
{
    ex_vec_free(&g->out);
    fr_buf_free(&g->heap);
    fr_free(g->at);
    fr_free(g->len);
    g->at = NULL;
    g->len = NULL;
}

/* Stores non-null value v (in the result's representation) as row r. */
static int ex_gather_put(ex_gather *g, int64_t r, const fr_value *v, fr_error *err)
{
    ex_vec *o = &g->out;
    switch (o->phys) {
    case EX_P_BOOL:
        if (v->v.b) ex_bit_set(o->bits, r);
        break;
    case EX_P_I64: o->i[r] = v->v.i; break;
    case EX_P_F64: o->f[r] = v->v.f; break;
    case EX_P_I128: o->d[r] = v->v.d; break;
    case EX_P_STR:
        if (v->v.s.len > (size_t)INT32_MAX - g->heap.len)
            return fr_fail(err, FR_ELIMIT, "string result exceeds the 2 GiB column limit");
        g->at[r] = (int64_t)g->heap.len;
        g->len[r] = (int32_t)v->v.s.len;
        if (v->v.s.len) FR_TRY(fr_buf_append(&g->heap, v->v.s.ptr, v->v.s.len, err));
        break;
    }
    ex_bit_set(o->valid, r);
    return 0;
}

/* Takes the rows set in `rows` from src, the value of argument `arg`. */
static int ex_gather_take(ex_gather *g, const fr_expr *arg, const ex_vec *src,
                          const uint64_t *rows, fr_error *err)
{
    const fr_type *to = &g->out.type;
    bool same = ex_same_repr(&src->type, to);
    for (int64_t w = 0; w < EX_WORDS(src->n); w++) {
        for (uint64_t bits = rows[w]; bits; bits &= bits - 1) {
            int64_t r = w * 64 + __builtin_ctzll(bits);
            if (ex_vec_is_null(src, r)) continue;
            fr_value v;
            ex_vec_get(src, r, &v);
            if (!same) {
                fr_error cerr = {0};
                if (ex_value_coerce(&v, to, true, &v, &cerr) < 0) {
                    char where[64];
                    return fr_fail(err, cerr.code, "%s%s", ex_where(arg, where, sizeof where),
                                   cerr.msg);
                }
            }
            FR_TRY(ex_gather_put(g, r, &v, err));
        }
    }
    return 0;
}

/* Hands the gathered result to out; g is left empty. */
static int ex_gather_end(ex_gather *g, ex_vec *out, fr_error *err)
{
    ex_vec *v = &g->out;
    if (v->phys != EX_P_STR) {
        ex_vec_seal(v);
        ex_vec_move(out, v);
        ex_gather_abort(g);
        return 0;
    }
    ex_vecout o;
    int rc = ex_vecout_begin(&o, out, &v->type, v->n, err);
    for (int64_t r = 0; rc == 0 && r < v->n; r++) {
        fr_value s = fr_value_null(v->type);
        if (ex_bit_get(v->valid, r))
            s = fr_value_str(v->type, g->heap.data ? g->heap.data + g->at[r] : NULL,
                             (size_t)g->len[r]);
        rc = ex_vecout_put(&o, r, &s, err);
    }
    if (rc == 0) rc = ex_vecout_end(&o, err);
    else ex_vecout_abort(&o);
    ex_gather_abort(g);
    return rc;
}

/* ---- choosing rows --------------------------------------------------------------------- */

/* Moves from `left` into `chosen` the rows of left where c (BOOLEAN) is TRUE; returns
 * whether there are any. */
static bool ex_choose_true(const ex_vec *c, uint64_t *left, uint64_t *chosen)
{
    uint64_t any = 0;
    for (int64_t w = 0; w < EX_WORDS(c->n); w++) {
        chosen[w] = left[w] & ex_word_val(c, w) & ex_word_valid(c, w);
        left[w] &= ~chosen[w];
        any |= chosen[w];
    }
    return any != 0;
}

/* Moves from `left` into `chosen` the rows of left where x is not NULL. */
static bool ex_choose_valid(const ex_vec *x, uint64_t *left, uint64_t *chosen)
{
    uint64_t any = 0;
    for (int64_t w = 0; w < EX_WORDS(x->n); w++) {
        chosen[w] = left[w] & ex_word_valid(x, w);
        left[w] &= ~chosen[w];
        any |= chosen[w];
    }
    return any != 0;
}

static bool ex_any(const uint64_t *rows, int64_t n)
{
    for (int64_t w = 0; w < EX_WORDS(n); w++)
        if (rows[w]) return true;
    return false;
}

/* Evaluates argument i of e where `rows` are set and gathers those rows of it. */
static int ex_take_arg(ex_gather *g, int i, const fr_batch *b, const uint64_t *rows,
                       fr_error *err)
{
    const fr_expr *arg = g->e->args[i];
    ex_vec x;
    FR_TRY(ex_eval(arg, b, rows, &x, err));
    int rc = ex_gather_take(g, arg, &x, rows, err);
    ex_vec_free(&x);
    return rc;
}

/* ---- CASE ------------------------------------------------------------------------------ */

/* The WHEN at args[i] as a BOOLEAN vector, evaluated for the rows of `left`: the condition
 * itself, or operand = value for the simple form (the operand evaluated and brought to the
 * compare type beforehand). */
static int ex_case_when(const fr_expr *e, int i, const ex_vec *operand, const fr_batch *b,
                        const uint64_t *left, ex_vec *out, fr_error *err)
{
    if (!e->case_operand) return ex_eval(e->args[i], b, left, out, err);
    ex_vec w;
    FR_TRY(ex_eval(e->args[i], b, left, &w, err));
    int rc = ex_vec_coerce(&w, &e->operand_type, false, err);
    if (rc == 0) rc = ex_compare(operand, &w, FR_OP_EQ, out, err);
    ex_vec_free(&w);
    return rc;
}

int ex_eval_case(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
                 fr_error *err)
{
    int64_t n = fr_batch_num_rows(b);
    int first = e->case_operand ? 1 : 0, end = e->nargs - (e->case_else ? 1 : 0);
    ex_vec operand, c;
    ex_vec_init(&operand);
    ex_vec_init(&c);
    ex_gather g;
    FR_TRY(ex_gather_begin(&g, e, n, err));
    uint64_t *left = ex_words_of_mask(mask, n, err), *chosen = ex_words_new(n, err);
    int rc = 0;
    if (!left || !chosen) FR_GOTO(FR_ENOMEM);
    if (e->case_operand) {
        FR_GOTO(ex_eval(e->args[0], b, left, &operand, err));
        FR_GOTO(ex_vec_coerce(&operand, &e->operand_type, false, err));
    }
    for (int i = first; i < end && ex_any(left, n); i += 2) {
        FR_GOTO(ex_case_when(e, i, &operand, b, left, &c, err));
        bool any = ex_choose_true(&c, left, chosen);
        ex_vec_free(&c);
        if (any) FR_GOTO(ex_take_arg(&g, i + 1, b, chosen, err));
    }
    /* Rows no WHEN took stay NULL without an ELSE. */
    if (e->case_else && ex_any(left, n)) FR_GOTO(ex_take_arg(&g, e->nargs - 1, b, left, err));
    FR_GOTO(ex_gather_end(&g, out, err));
fail:
    if (rc < 0) ex_gather_abort(&g);
    fr_free(left);
    fr_free(chosen);
    ex_vec_free(&operand);
    ex_vec_free(&c);
    return rc;
}

/* ---- COALESCE, NULLIF ------------------------------------------------------------------ */

static int ex_eval_coalesce(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                            ex_vec *out, fr_error *err)
{
    int64_t n = fr_batch_num_rows(b);
    ex_gather g;
    FR_TRY(ex_gather_begin(&g, e, n, err));
    uint64_t *left = ex_words_of_mask(mask, n, err), *chosen = ex_words_new(n, err);
    ex_vec x;
    ex_vec_init(&x);
    int rc = 0;
    if (!left || !chosen) FR_GOTO(FR_ENOMEM);
    for (int i = 0; i < e->nargs && ex_any(left, n); i++) {
        /* Argument i matters where every argument before it is NULL. */
        FR_GOTO(ex_eval(e->args[i], b, left, &x, err));
        if (ex_choose_valid(&x, left, chosen))
            FR_GOTO(ex_gather_take(&g, e->args[i], &x, chosen, err));
        ex_vec_free(&x);
    }
    FR_GOTO(ex_gather_end(&g, out, err));
fail:
    if (rc < 0) ex_gather_abort(&g);
    fr_free(left);
    fr_free(chosen);
    ex_vec_free(&x);
    return rc;
}

/* x with the rows where eq is TRUE made NULL. */
static int ex_null_where(ex_vec *x, const ex_vec *eq, fr_error *err)
{
    if (x->is_const && x->null_count) return 0;
    if (eq->is_const) {
        if (eq->null_count || !eq->cval.v.b) return 0;
        fr_value nv = fr_value_null(x->type);
        fr_type t = x->type;
        ex_vec_free(x);
        ex_vec_const(x, &nv, &t, eq->n);
        return 0;
    }
    FR_TRY(ex_vec_materialize(x, err));
    if (!x->valid) {
        FR_TRY(ex_vec_alloc_valid(x, err));
        for (int64_t w = 0; w < EX_WORDS(x->n); w++) x->valid[w] = ~(uint64_t)0;
    }
    for (int64_t w = 0; w < EX_WORDS(x->n); w++)
        x->valid[w] &= ~(ex_word_val(eq, w) & ex_word_valid(eq, w));
    ex_vec_seal(x);
    return 0;
}

static int ex_eval_nullif(const fr_expr *e, const fr_batch *b, const uint64_t *mask,
                          ex_vec *out, fr_error *err)
{
    int64_t n = fr_batch_num_rows(b);
    ex_vec x, xc, y, eq;
    ex_vec_init(&xc);
    ex_vec_init(&y);
    ex_vec_init(&eq);
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    int rc = 0;
    /* y matters only where x is not NULL. */
    uint64_t *m = ex_words_of_mask(mask, n, err);
    if (!m) FR_GOTO(FR_ENOMEM);
    for (int64_t w = 0; w < EX_WORDS(n); w++) m[w] &= ex_word_valid(&x, w);
    FR_GOTO(ex_eval(e->args[1], b, m, &y, err));
    /* Compared in the operand type, returned in x's own. */
    FR_GOTO(ex_vec_view(&xc, &x, err));
    FR_GOTO(ex_vec_coerce(&xc, &e->operand_type, false, err));
    FR_GOTO(ex_vec_coerce(&y, &e->operand_type, false, err));
    FR_GOTO(ex_compare(&xc, &y, FR_OP_EQ, &eq, err));
    ex_vec_free(&xc);
    FR_GOTO(ex_null_where(&x, &eq, err));
    x.type = e->type;
    if (x.is_const) x.cval.type = e->type;
    ex_vec_move(out, &x);
fail:
    fr_free(m);
    ex_vec_free(&xc);
    ex_vec_free(&x);
    ex_vec_free(&y);
    ex_vec_free(&eq);
    return rc;
}

/* ---- strings --------------------------------------------------------------------------- */

/* LOWER and UPPER: ASCII letters are mapped, every other byte (UTF-8 included) is kept, so
 * the result has the length of the argument. */
static int ex_eval_fold_case(const fr_expr *e, const ex_vec *x, ex_vec *out, fr_error *err)
{
    if (x->is_const && x->null_count) {
        fr_value nv = fr_value_null(e->type);
        ex_vec_const(out, &nv, &e->type, x->n);
        return 0;
    }
    bool upper = e->func == FR_FN_UPPER;
    ex_vecout o;
    FR_TRY(ex_vecout_begin(&o, out, &e->type, x->n, err));
    for (int64_t r = 0; r < x->n; r++) {
        fr_value s;
        ex_vec_get(x, r, &s);
        size_t start = o.bytes.len;
        int rc = ex_vecout_put(&o, r, &s, err);
        if (rc < 0) {
            ex_vecout_abort(&o);
            return rc;
        }
        for (size_t k = start; k < o.bytes.len; k++) {
            uint8_t ch = o.bytes.data[k];
            if (upper && ch >= 'a' && ch <= 'z') o.bytes.data[k] = (uint8_t)(ch - 'a' + 'A');
            if (!upper && ch >= 'A' && ch <= 'Z') o.bytes.data[k] = (uint8_t)(ch - 'A' + 'a');
        }
    }
    return ex_vecout_end(&o, err);
}

static int64_t ex_char_count(const fr_value *s)
{
    int64_t count = 0;
    for (size_t i = 0; i < s->v.s.len; i += ex_utf8_len(s->v.s.ptr, i, s->v.s.len)) count++;
    return count;
}

static int ex_eval_char_length(const fr_expr *e, const ex_vec *x, ex_vec *out, fr_error *err)
{
    if (x->is_const) {
        fr_value v = fr_value_null(e->type);
        if (!x->null_count) v = fr_value_int(e->type, ex_char_count(&x->cval));
        ex_vec_const(out, &v, &e->type, x->n);
        return 0;
    }
    FR_TRY(ex_vec_alloc(out, &e->type, x->n, err));
    if (x->valid) {
        if (ex_vec_alloc_valid(out, err) < 0) {
            ex_vec_free(out);
            return FR_ENOMEM;
        }
        memcpy(out->valid, x->valid, (size_t)EX_WORDS(x->n) * 8);
    }
    for (int64_t r = 0; r < x->n; r++) {
        if (ex_vec_is_null(x, r)) continue;
        fr_value s;
        ex_vec_get(x, r, &s);
        out->i[r] = ex_char_count(&s);
    }
    ex_vec_seal(out);
    return 0;
}

int ex_eval_func(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
                 fr_error *err)
{
    if (e->func == FR_FN_COALESCE) return ex_eval_coalesce(e, b, mask, out, err);
    if (e->func == FR_FN_NULLIF) return ex_eval_nullif(e, b, mask, out, err);
    ex_vec x;
    FR_TRY(ex_eval(e->args[0], b, mask, &x, err));
    int rc;
    switch (e->func) {
    case FR_FN_ABS: rc = ex_abs(e, &x, mask, out, err); break;
    case FR_FN_LOWER:
    case FR_FN_UPPER: rc = ex_eval_fold_case(e, &x, out, err); break;
    case FR_FN_CHAR_LENGTH: rc = ex_eval_char_length(e, &x, out, err); break;
    default:
        rc = fr_fail(err, FR_EINVAL, "cannot evaluate scalar function %d", (int)e->func);
        break;
    }
    ex_vec_free(&x);
    return rc;
}
