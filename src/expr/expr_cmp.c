/* expr_cmp.c — comparison kernels: a op b over whole vectors into bitmaps.
 *
 * Both operands arrive in one representation (the bound operand type), so each kernel is a
 * tight loop over one element type and one operator, producing 64 result bits per word.
 * Result bits of rows where an operand is null are unspecified; validity says which rows
 * hold a value. Floating-point comparisons follow the total order of ex_fcmp (NaN above
 * everything, equal to itself); for a constant the operator is rewritten so that plain C
 * comparisons give exactly that order. */
#include <assert.h>

#include "expr/expr_internal.h"

/* Fills the word bitmap `bits` for rows [0, n) with EXPR, which reads row `r`. */
#define EX_BITS_LOOP(n, bits, EXPR)                                                          \
    do {                                                                                     \
        int64_t ex_n_ = (n), ex_full_ = ex_n_ / 64;                                          \
        for (int64_t ex_w_ = 0; ex_w_ < ex_full_; ex_w_++) {                                 \
            uint64_t ex_m_ = 0;                                                              \
            for (int ex_j_ = 0; ex_j_ < 64; ex_j_++) {                                       \
                int64_t r = ex_w_ * 64 + ex_j_;                                              \
                (void)r;                                                                     \
                ex_m_ |= (uint64_t)(EXPR) << ex_j_;                                          \
            }                                                                                \
            (bits)[ex_w_] = ex_m_;                                                           \
        }                                                                                    \
        if (ex_n_ & 63) {                                                                    \
            uint64_t ex_m_ = 0;                                                              \
            for (int ex_j_ = 0; ex_j_ < (ex_n_ & 63); ex_j_++) {                             \
                int64_t r = ex_full_ * 64 + ex_j_;                                           \
                (void)r;                                                                     \
                ex_m_ |= (uint64_t)(EXPR) << ex_j_;                                          \
            }                                                                                \
            (bits)[ex_full_] = ex_m_;                                                        \
        }                                                                                    \
    } while (0)

/* An array of integers against an integer constant. */
#define EX_CMP_INT_CONST(T, a, n, op, k, bits)                                               \
    do {                                                                                     \
        const T *ex_a_ = (const T *)(a);                                                     \
        int64_t ex_k_ = (k);                                                                 \
        switch (op) {                                                                        \
        case FR_OP_EQ: EX_BITS_LOOP(n, bits, ex_a_[r] == ex_k_); break;                      \
        case FR_OP_NE: EX_BITS_LOOP(n, bits, ex_a_[r] != ex_k_); break;                      \
        case FR_OP_LT: EX_BITS_LOOP(n, bits, ex_a_[r] < ex_k_); break;                       \
        case FR_OP_LE: EX_BITS_LOOP(n, bits, ex_a_[r] <= ex_k_); break;                      \
        case FR_OP_GT: EX_BITS_LOOP(n, bits, ex_a_[r] > ex_k_); break;                       \
        case FR_OP_GE: EX_BITS_LOOP(n, bits, ex_a_[r] >= ex_k_); break;                      \
        default: assert(!"not a comparison");                                                \
        }                                                                                    \
    } while (0)

/* An array of floats or doubles against a double constant, in the total order. */
#define EX_CMP_FLOAT_CONST(T, a, n, op, k, bits)                                             \
    do {                                                                                     \
        const T *ex_a_ = (const T *)(a);                                                     \
        double ex_k_ = (k);                                                                  \
        if (ex_k_ == ex_k_) {                                                                \
            switch (op) {                                                                    \
            case FR_OP_EQ: EX_BITS_LOOP(n, bits, ex_a_[r] == ex_k_); break;                  \
            case FR_OP_NE: EX_BITS_LOOP(n, bits, !(ex_a_[r] == ex_k_)); break;               \
            case FR_OP_LT: EX_BITS_LOOP(n, bits, ex_a_[r] < ex_k_); break;                   \
            case FR_OP_LE: EX_BITS_LOOP(n, bits, ex_a_[r] <= ex_k_); break;                  \
            case FR_OP_GT: EX_BITS_LOOP(n, bits, !(ex_a_[r] <= ex_k_)); break;               \
            case FR_OP_GE: EX_BITS_LOOP(n, bits, !(ex_a_[r] < ex_k_)); break;                \
            default: assert(!"not a comparison");                                            \
            }                                                                                \
        } else { /* k is NaN, the greatest value */                                          \
            switch (op) {                                                                    \
            case FR_OP_EQ:                                                                   \
            case FR_OP_GE: EX_BITS_LOOP(n, bits, ex_a_[r] != ex_a_[r]); break;               \
            case FR_OP_NE:                                                                   \
            case FR_OP_LT: EX_BITS_LOOP(n, bits, ex_a_[r] == ex_a_[r]); break;               \
            case FR_OP_LE: EX_BITS_LOOP(n, bits, 1); break;                                  \
            case FR_OP_GT: EX_BITS_LOOP(n, bits, 0); break;                                  \
            default: assert(!"not a comparison");                                            \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* Two arrays, element by element, with a comparison expression CMP(x, y) giving <0/0/>0
 * or a direct operator for plain types. */
#define EX_CMP_ARRAYS(a, b, n, op, bits)                                                     \
    do {                                                                                     \
        switch (op) {                                                                        \
        case FR_OP_EQ: EX_BITS_LOOP(n, bits, (a)[r] == (b)[r]); break;                       \
        case FR_OP_NE: EX_BITS_LOOP(n, bits, (a)[r] != (b)[r]); break;                       \
        case FR_OP_LT: EX_BITS_LOOP(n, bits, (a)[r] < (b)[r]); break;                        \
        case FR_OP_LE: EX_BITS_LOOP(n, bits, (a)[r] <= (b)[r]); break;                       \
        case FR_OP_GT: EX_BITS_LOOP(n, bits, (a)[r] > (b)[r]); break;                        \
        case FR_OP_GE: EX_BITS_LOOP(n, bits, (a)[r] >= (b)[r]); break;                       \
        default: assert(!"not a comparison");                                                \
        }                                                                                    \
    } while (0)

bool ex_column_compare_direct(const fr_type *ct, const fr_type *in)
{
    if (ex_phys_of(ct->id) == EX_P_I64)
        return ex_phys_of(in->id) == EX_P_I64 && ex_same_repr(ct, in);
    if (ct->id == FR_T_FLOAT || ct->id == FR_T_DOUBLE) return in->id == FR_T_DOUBLE;
    return false;
}

int ex_compare_column_const(const fr_column *c, fr_expr_op op, const fr_value *k,
                            uint64_t *bits)
{
    int width = fr_type_width(&c->type);
    int64_t n = c->length;
    if (n == 0) return 1;
    if (width <= 0 || ((uintptr_t)c->values % (uintptr_t)width) != 0) return 0;
    if (c->type.id == FR_T_FLOAT) {
        EX_CMP_FLOAT_CONST(float, c->values, n, op, k->v.f, bits);
        return 1;
    }
    if (c->type.id == FR_T_DOUBLE) {
        EX_CMP_FLOAT_CONST(double, c->values, n, op, k->v.f, bits);
        return 1;
    }
    if (ex_phys_of(c->type.id) != EX_P_I64) return 0;
    switch (width) {
    case 1: EX_CMP_INT_CONST(int8_t, c->values, n, op, k->v.i, bits); return 1;
    case 2: EX_CMP_INT_CONST(int16_t, c->values, n, op, k->v.i, bits); return 1;
    case 4: EX_CMP_INT_CONST(int32_t, c->values, n, op, k->v.i, bits); return 1;
    case 8: EX_CMP_INT_CONST(int64_t, c->values, n, op, k->v.i, bits); return 1;
    default: return 0;
    }
}

/* The rows of a non-constant vector against a non-null constant. */
static void ex_compare_const(const ex_vec *a, const fr_value *k, fr_expr_op op,
                             uint64_t *bits)
{
    int64_t n = a->n;
    switch (a->phys) {
    case EX_P_I64: EX_CMP_INT_CONST(int64_t, a->i, n, op, k->v.i, bits); return;
    case EX_P_F64: EX_CMP_FLOAT_CONST(double, a->f, n, op, k->v.f, bits); return;
    case EX_P_I128: {
        const fr_i128 *x = a->d;
        fr_i128 kd = k->v.d;
        switch (op) {
        case FR_OP_EQ: EX_BITS_LOOP(n, bits, x[r] == kd); break;
        case FR_OP_NE: EX_BITS_LOOP(n, bits, x[r] != kd); break;
        case FR_OP_LT: EX_BITS_LOOP(n, bits, x[r] < kd); break;
        case FR_OP_LE: EX_BITS_LOOP(n, bits, x[r] <= kd); break;
        case FR_OP_GT: EX_BITS_LOOP(n, bits, x[r] > kd); break;
        case FR_OP_GE: EX_BITS_LOOP(n, bits, x[r] >= kd); break;
        default: assert(!"not a comparison");
        }
        return;
    }
    default: {
        fr_value x;
        for (int64_t r = 0; r < n; r++) {
            if (ex_vec_is_null(a, r)) continue;
            ex_vec_get(a, r, &x);
            if (ex_cmp_holds(op, ex_value_cmp(&x, k))) ex_bit_set(bits, r);
        }
        return;
    }
    }
}

/* Two non-constant vectors row by row. */
static void ex_compare_arrays(const ex_vec *a, const ex_vec *b, fr_expr_op op,
                              uint64_t *bits)
{
    int64_t n = a->n;
    switch (a->phys) {
    case EX_P_I64: EX_CMP_ARRAYS(a->i, b->i, n, op, bits); return;
    case EX_P_I128: EX_CMP_ARRAYS(a->d, b->d, n, op, bits); return;
    case EX_P_F64: {
        const double *x = a->f, *y = b->f;
        EX_BITS_LOOP(n, bits, ex_cmp_holds(op, ex_fcmp(x[r], y[r])));
        return;
    }
    default: {
        fr_value x, y;
        for (int64_t r = 0; r < n; r++) {
            if (ex_vec_is_null(a, r) || ex_vec_is_null(b, r)) continue;
            ex_vec_get(a, r, &x);
            ex_vec_get(b, r, &y);
            if (ex_cmp_holds(op, ex_value_cmp(&x, &y))) ex_bit_set(bits, r);
        }
        return;
    }
    }
}

int ex_compare(const ex_vec *a, const ex_vec *b, fr_expr_op op, ex_vec *out, fr_error *err)
{
    assert(a->phys == b->phys && a->n == b->n);
    fr_type bt = fr_type_of(FR_T_BOOLEAN);
    if (a->is_const && b->is_const) {
        fr_value r = fr_value_null(bt);
        if (!a->cval.is_null && !b->cval.is_null) {
            r.is_null = false;
            r.v.b = ex_cmp_holds(op, ex_value_cmp(&a->cval, &b->cval));
        }
        ex_vec_const(out, &r, &bt, a->n);
        return 0;
    }
    if (a->is_const) {
        const ex_vec *t = a;
        a = b;
        b = t;
        op = ex_op_flip(op);
    }
    FR_TRY(ex_vec_alloc(out, &bt, a->n, err));
    int rc = ex_valid_and(a, b, &out->valid, err);
    if (rc < 0) {
        ex_vec_free(out);
        return rc;
    }
    if (b->is_const) {
        if (!b->cval.is_null) ex_compare_const(a, &b->cval, op, out->bits);
    } else {
        ex_compare_arrays(a, b, op, out->bits);
    }
    ex_vec_seal(out);
    return 0;
}
