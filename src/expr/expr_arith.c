/* expr_arith.c — arithmetic kernels: + - * / %, unary minus and ABS over whole vectors.
 *
 * Binding fixed the result type: BIGINT for integers (and INT days for DATE - DATE, DATE for
 * DATE +/- days), DOUBLE, or DECIMAL(p, s). Integer and decimal overflow and division by
 * zero are errors, but only on rows that hold a value: a null row computes nothing. */
#include <assert.h>
#include <math.h>

#include "expr/expr_internal.h"

#define EX_ROW_VALID(v, r) ex_row_matters((v), mask, (r))

/* Loops over rows with xv and yv bound to the operands' values (arrays or constants). */
#define EX_PAIR_LOOP(T, xa, ya, xc, yc, n, BODY)                                             \
    do {                                                                                     \
        if ((xa) && (ya)) {                                                                  \
            for (int64_t r = 0; r < (n); r++) {                                              \
                T xv = (xa)[r], yv = (ya)[r];                                                \
                BODY                                                                         \
            }                                                                                \
        } else if (xa) {                                                                     \
            for (int64_t r = 0; r < (n); r++) {                                              \
                T xv = (xa)[r], yv = (yc);                                                   \
                BODY                                                                         \
            }                                                                                \
        } else if (ya) {                                                                     \
            for (int64_t r = 0; r < (n); r++) {                                              \
                T xv = (xc), yv = (ya)[r];                                                   \
                BODY                                                                         \
            }                                                                                \
        } else {                                                                             \
            for (int64_t r = 0; r < (n); r++) {                                              \
                T xv = (xc), yv = (yc);                                                      \
                BODY                                                                         \
            }                                                                                \
        }                                                                                    \
    } while (0)

static int ex_div_zero(const fr_expr *e, fr_error *err)
{
    char where[64];
    return fr_fail(err, FR_EINVAL, "%sdivision by zero", ex_where(e, where, sizeof where));
}

static int ex_overflow(const fr_expr *e, const char *type, fr_error *err)
{
    char where[64];
    return fr_fail(err, FR_ERANGE, "%s%s overflow in %s", ex_where(e, where, sizeof where),
                   type, ex_node_name(e));
}

static int ex_arith_i64(const fr_expr *e, const ex_vec *a, const ex_vec *b,
                        const uint64_t *mask, ex_vec *out, fr_error *err)
{
    const int64_t *x = a->is_const ? NULL : a->i, *y = b->is_const ? NULL : b->i;
    int64_t xc = a->cval.v.i, yc = b->cval.v.i, n = out->n, *o = out->i;
    int64_t bad = -1;
    bool zero = false;
    switch (e->op) {
    case FR_OP_ADD:
        EX_PAIR_LOOP(int64_t, x, y, xc, yc, n, {
            if (__builtin_add_overflow(xv, yv, &o[r]) && EX_ROW_VALID(out, r) && bad < 0)
                bad = r;
        });
        break;
    case FR_OP_SUB:
        EX_PAIR_LOOP(int64_t, x, y, xc, yc, n, {
            if (__builtin_sub_overflow(xv, yv, &o[r]) && EX_ROW_VALID(out, r) && bad < 0)
                bad = r;
        });
        break;
    case FR_OP_MUL:
        EX_PAIR_LOOP(int64_t, x, y, xc, yc, n, {
            if (__builtin_mul_overflow(xv, yv, &o[r]) && EX_ROW_VALID(out, r) && bad < 0)
                bad = r;
        });
        break;
    case FR_OP_DIV:
    case FR_OP_MOD: {
        bool mod = e->op == FR_OP_MOD;
        EX_PAIR_LOOP(int64_t, x, y, xc, yc, n, {
            if (yv == 0 || (yv == -1 && xv == INT64_MIN && !mod)) {
                o[r] = 0;
                if (EX_ROW_VALID(out, r) && bad < 0) {
                    bad = r;
                    zero = yv == 0;
                }
            } else if (yv == -1) {
                o[r] = mod ? 0 : -xv;
            } else {
                o[r] = mod ? xv % yv : xv / yv;
            }
        });
        break;
    }
    default: assert(!"not arithmetic");
    }
    if (bad >= 0) return zero ? ex_div_zero(e, err) : ex_overflow(e, "BIGINT", err);
    return 0;
}

static int ex_arith_f64(const fr_expr *e, const ex_vec *a, const ex_vec *b,
                        const uint64_t *mask, ex_vec *out, fr_error *err)
{
    const double *x = a->is_const ? NULL : a->f, *y = b->is_const ? NULL : b->f;
    double xc = a->cval.v.f, yc = b->cval.v.f, *o = out->f;
    int64_t n = out->n;
    bool zero = false;
    switch (e->op) {
    case FR_OP_ADD: EX_PAIR_LOOP(double, x, y, xc, yc, n, { o[r] = xv + yv; }); break;
    case FR_OP_SUB: EX_PAIR_LOOP(double, x, y, xc, yc, n, { o[r] = xv - yv; }); break;
    case FR_OP_MUL: EX_PAIR_LOOP(double, x, y, xc, yc, n, { o[r] = xv * yv; }); break;
    case FR_OP_DIV:
    case FR_OP_MOD: {
        bool mod = e->op == FR_OP_MOD;
        EX_PAIR_LOOP(double, x, y, xc, yc, n, {
            if (yv == 0) {
                o[r] = 0;
                if (EX_ROW_VALID(out, r)) zero = true;
            } else {
                o[r] = mod ? fmod(xv, yv) : xv / yv;
            }
        });
        break;
    }
    default: assert(!"not arithmetic");
    }
    return zero ? ex_div_zero(e, err) : 0;
}

/* The decimal type an integer or decimal operand is computed in. */
static fr_type ex_decimal_of(const fr_type *t)
{
    if (t->id == FR_T_DECIMAL) return *t;
    int p = t->id == FR_T_TINYINT ? 3 : t->id == FR_T_SMALLINT ? 5 : t->id == FR_T_INT ? 10 : 19;
    return fr_type_decimal(p, 0);
}

/* One decimal operation on unscaled values x (scale sx) and y (scale sy) into scale rt.scale.
 * Returns 0, -1 on overflow, -2 on division by zero. */
static int ex_decimal_op(fr_expr_op op, fr_i128 x, int sx, fr_i128 y, int sy,
                         const fr_type *rt, fr_i128 *out)
{
    int s = rt->scale;
    fr_i128 r;
    switch (op) {
    case FR_OP_ADD:
    case FR_OP_SUB:
    case FR_OP_MOD:
        /* Operands were brought to the result scale beforehand. */
        assert(sx == s && sy == s);
        if (op == FR_OP_MOD) {
            if (y == 0) return -2;
            r = x % y;
        } else if (op == FR_OP_ADD ? __builtin_add_overflow(x, y, &r)
                                   : __builtin_sub_overflow(x, y, &r)) {
            return -1;
        }
        break;
    case FR_OP_MUL:
        if (ex_i128_mul(x, y, &r) < 0) return -1;
        if (ex_i128_rescale(r, sx + sy, s, &r) < 0) return -1;
        break;
    case FR_OP_DIV: {
        if (y == 0) return -2;
        int k = s - sx + sy;
        if (k >= 0) {
            if (ex_i128_mul(x, fr_i128_pow10(k), &x) < 0) return -1;
        } else if (ex_i128_mul(y, fr_i128_pow10(-k), &y) < 0) {
            return -1;
        }
        r = ex_i128_div_round(x, y);
        break;
    }
    default: assert(!"not arithmetic"); return -1;
    }
    if (!fr_decimal_fits(r, rt->precision)) return -1;
    *out = r;
    return 0;
}

static int ex_arith_decimal(const fr_expr *e, ex_vec *a, ex_vec *b, const uint64_t *mask,
                            ex_vec *out, fr_error *err)
{
    const fr_type *rt = &e->type;
    if (e->op == FR_OP_ADD || e->op == FR_OP_SUB || e->op == FR_OP_MOD) {
        fr_type common = fr_type_decimal(FR_DECIMAL_PRECISION_MAX, rt->scale);
        FR_TRY(ex_vec_coerce(a, &common, true, err));
        FR_TRY(ex_vec_coerce(b, &common, true, err));
    } else {
        fr_type ta = ex_decimal_of(&a->type), tb = ex_decimal_of(&b->type);
        FR_TRY(ex_vec_coerce(a, &ta, true, err));
        FR_TRY(ex_vec_coerce(b, &tb, true, err));
    }
    int sx = a->type.scale, sy = b->type.scale;
    for (int64_t r = 0; r < out->n; r++) {
        if (!EX_ROW_VALID(out, r)) continue;
        fr_i128 x = a->is_const ? a->cval.v.d : a->d[r];
        fr_i128 y = b->is_const ? b->cval.v.d : b->d[r];
        int rc = ex_decimal_op(e->op, x, sx, y, sy, rt, &out->d[r]);
        if (rc == -2) return ex_div_zero(e, err);
        if (rc < 0) {
            char tn[64];
            return ex_overflow(e, ex_type_name(rt, tn, sizeof tn), err);
        }
    }
    return 0;
}

/* The result when an operand is the NULL constant: NULL in all n rows. */
static void ex_null_result(const fr_expr *e, int64_t n, ex_vec *out)
{
    fr_value nv = fr_value_null(e->type);
    ex_vec_const(out, &nv, &e->type, n);
}

/* Ends a result computed over `rows` rows: computed once from constant operands (rows is 1,
 * n is not), it becomes a constant of n rows; otherwise it is sealed as it is. */
static void ex_arith_finish(const fr_expr *e, int64_t rows, int64_t n, ex_vec *out)
{
    if (rows != n) {
        fr_value c;
        ex_vec_get(out, 0, &c);
        ex_vec_free(out);
        ex_vec_const(out, &c, &e->type, n);
        return;
    }
    ex_vec_seal(out);
}

int ex_arith(const fr_expr *e, ex_vec *a, ex_vec *b, const uint64_t *mask, ex_vec *out,
             fr_error *err)
{
    int64_t n = a->n;
    if ((a->is_const && a->null_count > 0) || (b->is_const && b->null_count > 0)) {
        ex_null_result(e, n, out);
        return 0;
    }
    /* Two constants: compute the one row once, as a constant. */
    int64_t rows = (a->is_const && b->is_const) ? 1 : n;
    ex_phys rp = ex_phys_of(e->type.id);
    if (rp == EX_P_F64) {
        fr_type dt = fr_type_of(FR_T_DOUBLE);
        FR_TRY(ex_vec_coerce(a, &dt, false, err));
        FR_TRY(ex_vec_coerce(b, &dt, false, err));
    }
    FR_TRY(ex_vec_alloc(out, &e->type, rows, err));
    int rc = 0;
    if (rows == n) FR_GOTO(ex_valid_and(a, b, &out->valid, err));
    /* A constant result is computed whatever the mask says. */
    const uint64_t *m = rows == n ? mask : NULL;
    switch (rp) {
    case EX_P_I64: FR_GOTO(ex_arith_i64(e, a, b, m, out, err)); break;
    case EX_P_F64: FR_GOTO(ex_arith_f64(e, a, b, m, out, err)); break;
    case EX_P_I128: FR_GOTO(ex_arith_decimal(e, a, b, m, out, err)); break;
    default: assert(!"arithmetic result of an unexpected type");
    }
    ex_arith_finish(e, rows, n, out);
    return 0;
fail:
    ex_vec_free(out);
    return rc;
}

/* -x, or with `absolute` |x| (only negative values are negated). */
static int ex_sign(const fr_expr *e, ex_vec *a, bool absolute, const uint64_t *mask,
                   ex_vec *out, fr_error *err)
{
    int64_t n = a->n;
    if (a->is_const && a->null_count > 0) {
        ex_null_result(e, n, out);
        return 0;
    }
    if (ex_phys_of(e->type.id) == EX_P_F64) {
        fr_type dt = fr_type_of(FR_T_DOUBLE);
        FR_TRY(ex_vec_coerce(a, &dt, false, err));
    }
    int64_t rows = a->is_const ? 1 : n;
    FR_TRY(ex_vec_alloc(out, &e->type, rows, err));
    if (!a->is_const && a->valid) {
        out->valid = fr_malloc((size_t)EX_WORDS(n) * 8 + 8);
        if (!out->valid) {
            ex_vec_free(out);
            return fr_fail(err, FR_ENOMEM, "out of memory for a bitmap");
        }
        memcpy(out->valid, a->valid, (size_t)EX_WORDS(n) * 8);
    }
    bool bad = false;
    if (rows != n) mask = NULL;
    for (int64_t r = 0; r < rows; r++) {
        switch (out->phys) {
        case EX_P_I64: {
            int64_t x = a->is_const ? a->cval.v.i : a->i[r];
            if (absolute && x >= 0) {
                out->i[r] = x;
            } else if (x == INT64_MIN) {
                bad = bad || EX_ROW_VALID(out, r);
                out->i[r] = 0;
            } else {
                out->i[r] = -x;
            }
            break;
        }
        case EX_P_F64: {
            double x = a->is_const ? a->cval.v.f : a->f[r];
            out->f[r] = absolute ? fabs(x) : -x;
            break;
        }
        case EX_P_I128: {
            /* Decimals hold at most 38 digits: negating one cannot overflow. */
            fr_i128 x = a->is_const ? a->cval.v.d : a->d[r];
            out->d[r] = absolute && x >= 0 ? x : -x;
            break;
        }
        default: assert(!"negation of an unexpected type");
        }
    }
    if (bad) {
        ex_vec_free(out);
        return ex_overflow(e, "BIGINT", err);
    }
    ex_arith_finish(e, rows, n, out);
    return 0;
}

int ex_negate(const fr_expr *e, ex_vec *a, const uint64_t *mask, ex_vec *out, fr_error *err)
{
    return ex_sign(e, a, false, mask, out, err);
}

int ex_abs(const fr_expr *e, ex_vec *a, const uint64_t *mask, ex_vec *out, fr_error *err)
{
    return ex_sign(e, a, true, mask, out, err);
}
