/* expr_internal.h — what the files of the expression module share: the vector that carries
 * intermediate results through evaluation, scalar value helpers and the kernels.
 *
 * A vector (ex_vec) holds n rows of one logical type in one of five physical forms: BOOL
 * (bitmap), I64 (every integer and temporal type, in the type's own unit), F64 (FLOAT and
 * DOUBLE), I128 (DECIMAL, unscaled at the type's scale) and STR (Arrow offsets and bytes,
 * for strings and bytes). Bitmaps are 64-bit words padded to whole words, so the logic
 * kernels can work a word at a time; bits past n are zero in validity bitmaps. A constant
 * vector stands for n equal rows and keeps its one value in `cval` (arrays stay NULL). */
#ifndef FIRTH_EXPR_INTERNAL_H
#define FIRTH_EXPR_INTERNAL_H

#include "expr/expr.h"

typedef enum ex_phys { EX_P_BOOL, EX_P_I64, EX_P_F64, EX_P_I128, EX_P_STR } ex_phys;

typedef struct ex_vec {
    fr_type type;       /* logical type of the values */
    ex_phys phys;
    int64_t n;          /* rows */
    int64_t null_count; /* nulls among the n rows; a constant has 0 or n */
    bool is_const;      /* every row is cval */
    fr_value cval;      /* the constant (strings point at memory that outlives the vector) */
    uint64_t *valid;    /* validity, NULL when no row is null (and for constants) */
    uint64_t *bits;     /* EX_P_BOOL values (bits of null rows are unspecified) */
    int64_t *i;         /* EX_P_I64 */
    double *f;          /* EX_P_F64 */
    fr_i128 *d;         /* EX_P_I128 */
    const int32_t *offs; /* EX_P_STR: n + 1 offsets into bytes */
    const uint8_t *bytes;
    /* valid and bits are always the vector's own; values and strings may be borrowed from
     * a batch column, and then are never written. */
    bool own_vals;      /* i, f or d is ours to free */
    bool own_str;       /* offs and bytes are ours to free */
} ex_vec;

#define EX_WORDS(n) (((n) + 63) / 64)

/* ---- types and scalar values (expr_value.c) -------------------------------------------- */

ex_phys ex_phys_of(fr_type_id id);
/* "line 3, column 7: " when the node knows its position, "" otherwise. */
const char *ex_where(const fr_expr *e, char *buf, size_t cap);
/* The SQL name of a type without NOT NULL, into buf. */
const char *ex_type_name(const fr_type *t, char *buf, size_t cap);

/* Converts a non-null value between representations of comparable types (integer to
 * integer, DECIMAL or DOUBLE; DECIMAL to a larger scale or DOUBLE; DATE to TIMESTAMP; a
 * time unit to a finer one). With `checked` an overflow is FR_ERANGE; without, the result
 * saturates, which keeps comparisons exact. */
int ex_value_coerce(const fr_value *v, const fr_type *to, bool checked, fr_value *out,
                    fr_error *err);
/* Orders two non-null values of the same representation: <0, 0, >0. */
int ex_value_cmp(const fr_value *a, const fr_value *b);
/* Total order of doubles with NaN above everything and equal to itself. */
static inline int ex_fcmp(double a, double b)
{
    if (a < b) return -1;
    if (a > b) return 1;
    if (a == b) return 0;
    return (a != a) - (b != b);
}
/* Whether cmp (<0, 0, >0) satisfies op. */
static inline bool ex_cmp_holds(fr_expr_op op, int cmp)
{
    switch (op) {
    case FR_OP_EQ: return cmp == 0;
    case FR_OP_NE: return cmp != 0;
    case FR_OP_LT: return cmp < 0;
    case FR_OP_LE: return cmp <= 0;
    case FR_OP_GT: return cmp > 0;
    case FR_OP_GE: return cmp >= 0;
    default: return false;
    }
}
/* a op b == b flip(op) a. */
fr_expr_op ex_op_flip(fr_expr_op op);
bool ex_op_is_compare(fr_expr_op op);
bool ex_op_is_arith(fr_expr_op op);
const char *ex_op_text(fr_expr_op op);
/* What messages call a node: its operator ("+"), "LIKE", "CASE" or the function's name. */
const char *ex_node_name(const fr_expr *e);

/* Checked decimal helpers (FR_ERANGE on overflow). */
int ex_i128_mul(fr_i128 a, fr_i128 b, fr_i128 *out);       /* 0, or -1 on overflow */
fr_i128 ex_i128_div_round(fr_i128 num, fr_i128 den);       /* half away from zero */
int ex_i128_rescale(fr_i128 v, int from, int to, fr_i128 *out); /* rounds when to < from */

/* UTF-8 aware LIKE with % and _. */
bool ex_like_match(const uint8_t *s, size_t n, const uint8_t *p, size_t m);
/* Bytes in the UTF-8 character starting at s[i] of s[0..n): what LIKE's _ takes (a stray
 * byte counts as one character). */
size_t ex_utf8_len(const uint8_t *s, size_t i, size_t n);

/* ---- vectors (expr_vec.c) -------------------------------------------------------------- */

void ex_vec_init(ex_vec *v);
void ex_vec_free(ex_vec *v);
/* Moves src into dst (dst's old buffers are freed); src becomes empty. */
void ex_vec_move(ex_vec *dst, ex_vec *src);
/* A view of src that may be converted (ex_vec_coerce) without changing src: its bitmaps are
 * copies, its values and strings borrowed from src, so it must be freed before src. */
int ex_vec_view(ex_vec *out, const ex_vec *src, fr_error *err);
/* A constant vector of n rows; v must be null or in the representation of type. */
void ex_vec_const(ex_vec *out, const fr_value *v, const fr_type *type, int64_t n);
/* A view of a batch column (copies validity and booleans into word bitmaps and widens
 * narrow integers and FLOAT; borrows 64-bit values and strings). */
int ex_vec_from_column(ex_vec *out, const fr_column *c, fr_error *err);
/* Allocates arrays for n rows of a fixed-width type (all valid, values zero). STR vectors
 * are built with ex_strout instead. */
int ex_vec_alloc(ex_vec *out, const fr_type *type, int64_t n, fr_error *err);
/* Allocates a validity bitmap with every bit clear (the caller sets valid rows). */
int ex_vec_alloc_valid(ex_vec *v, fr_error *err);
/* Counts nulls from valid and drops the bitmap when there are none. */
void ex_vec_seal(ex_vec *v);
/* Turns a constant into n stored rows. */
int ex_vec_materialize(ex_vec *v, fr_error *err);
/* Converts in place to the representation of type `to` (see ex_value_coerce). */
int ex_vec_coerce(ex_vec *v, const fr_type *to, bool checked, fr_error *err);
/* Whether converting from a to b changes nothing but the type's label. */
bool ex_same_repr(const fr_type *a, const fr_type *b);
/* Reads row r (strings point into the vector's memory). */
void ex_vec_get(const ex_vec *v, int64_t r, fr_value *out);
static inline bool ex_vec_is_null(const ex_vec *v, int64_t r)
{
    if (v->is_const) return v->null_count > 0;
    return v->valid && !((v->valid[r >> 6] >> (r & 63)) & 1);
}
static inline void ex_bit_set(uint64_t *w, int64_t r) { w[r >> 6] |= (uint64_t)1 << (r & 63); }
static inline bool ex_bit_get(const uint64_t *w, int64_t r) { return (w[r >> 6] >> (r & 63)) & 1; }
/* Word w (rows 64w..64w+63) of a BOOLEAN vector's values, and of any vector's validity;
 * constants give all ones or all zeros. */
static inline uint64_t ex_word_val(const ex_vec *v, int64_t w)
{
    if (v->is_const) return v->cval.v.b ? ~(uint64_t)0 : 0;
    return v->bits[w];
}
static inline uint64_t ex_word_valid(const ex_vec *v, int64_t w)
{
    if (v->is_const) return v->null_count ? 0 : ~(uint64_t)0;
    return v->valid ? v->valid[w] : ~(uint64_t)0;
}
/* A zeroed word bitmap for n rows (one spare word); NULL with err set when out of memory. */
uint64_t *ex_words_new(int64_t n, fr_error *err);
/* A copy of mask (NULL: every row) for n rows, with the bits past n clear. */
uint64_t *ex_words_of_mask(const uint64_t *mask, int64_t n, fr_error *err);
/* Hands the vector's rows to a new one-column batch (type `type`, column `name`). */
int ex_vec_to_batch(ex_vec *v, const fr_type *type, const char *name, fr_batch **out,
                    fr_error *err);
/* Validity of a AND b (NULL when neither has nulls); constants count as all valid unless
 * null, in which case the result is all null. */
int ex_valid_and(const ex_vec *a, const ex_vec *b, uint64_t **out, fr_error *err);

/* Row-by-row writer of a vector, for the generic paths; rows are written in order. */
typedef struct ex_vecout {
    ex_vec *v;
    fr_buf bytes;      /* STR data */
    int32_t *offs;     /* STR offsets */
} ex_vecout;
int ex_vecout_begin(ex_vecout *o, ex_vec *v, const fr_type *type, int64_t n, fr_error *err);
/* Writes row r (val null or in the vector's representation). */
int ex_vecout_put(ex_vecout *o, int64_t r, const fr_value *val, fr_error *err);
int ex_vecout_end(ex_vecout *o, fr_error *err);
void ex_vecout_abort(ex_vecout *o);

/* ---- kernels --------------------------------------------------------------------------- */

/* expr_cmp.c: a op b into a BOOLEAN vector; a and b have the same representation. */
int ex_compare(const ex_vec *a, const ex_vec *b, fr_expr_op op, ex_vec *out, fr_error *err);
/* Column-with-constant comparisons straight over the column's own values, when the column's
 * representation already is k's: writes value bits (for every row, nulls included) into
 * bits and returns 1; returns 0 when this case is not covered. */
int ex_compare_column_const(const fr_column *c, fr_expr_op op, const fr_value *k,
                            uint64_t *bits);
/* Whether ex_compare_column_const can take column type ct compared in type `in`. */
bool ex_column_compare_direct(const fr_type *ct, const fr_type *in);

/* Evaluation takes a `mask` of the rows whose value matters (NULL: all). Rows outside it
 * may get any value, and errors (division by zero, overflow, failed casts) are raised for
 * rows inside it only: that is how `b <> 0 AND a / b > 1` stays free of errors, as the
 * right side of AND only matters where the left side is not FALSE. */
static inline bool ex_row_matters(const ex_vec *out, const uint64_t *mask, int64_t r)
{
    return (!out->valid || ex_bit_get(out->valid, r)) && (!mask || ex_bit_get(mask, r));
}

/* expr_arith.c: binary arithmetic of e (bound) over evaluated operands, which it may
 * convert in place. */
int ex_arith(const fr_expr *e, ex_vec *a, ex_vec *b, const uint64_t *mask, ex_vec *out,
             fr_error *err);
int ex_negate(const fr_expr *e, ex_vec *a, const uint64_t *mask, ex_vec *out, fr_error *err);
/* ABS (e is the FR_FN_ABS call): like ex_negate, on the negative values only. */
int ex_abs(const fr_expr *e, ex_vec *a, const uint64_t *mask, ex_vec *out, fr_error *err);

/* expr_func.c: CASE and the scalar functions (e is bound, of kind FR_EX_CASE or
 * FR_EX_FUNC). */
int ex_eval_case(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
                 fr_error *err);
int ex_eval_func(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
                 fr_error *err);

/* expr_eval.c */
int ex_eval(const fr_expr *e, const fr_batch *b, const uint64_t *mask, ex_vec *out,
            fr_error *err);

#endif
