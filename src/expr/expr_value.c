/* expr_value.c — scalar helpers of the expression module: physical forms of types, error
 * positions, conversion of single values between comparable representations, the total
 * order used by comparisons, checked 128-bit decimal arithmetic and LIKE matching.
 *
 * Conversions here only go "up" the promotion ladder (integer -> DECIMAL -> DOUBLE, DATE ->
 * TIMESTAMP, a coarse time unit -> a finer one), so the only failure is overflow. Saturating
 * on overflow keeps comparisons exact: the other operand always fits the target, so a
 * saturated value compares on the right side of it. */
#include <assert.h>
#include <stdio.h>

#include "expr/expr_internal.h"

#define EX_I128_MAX ((fr_i128)(((unsigned __int128)1 << 127) - 1))
#define EX_I128_MIN (-EX_I128_MAX - 1)

ex_phys ex_phys_of(fr_type_id id)
{
    switch (id) {
    case FR_T_BOOLEAN: return EX_P_BOOL;
    case FR_T_FLOAT:
    case FR_T_DOUBLE: return EX_P_F64;
    case FR_T_DECIMAL: return EX_P_I128;
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
    case FR_T_BYTES: return EX_P_STR;
    default: return EX_P_I64;
    }
}

const char *ex_where(const fr_expr *e, char *buf, size_t cap)
{
    /* An operator node built without a position borrows its first operand's. */
    for (int depth = 0; e && depth < 8; depth++) {
        if (e->line > 0) {
            snprintf(buf, cap, "line %d, column %d: ", e->line, e->col);
            return buf;
        }
        e = e->nargs > 0 ? e->args[0] : NULL;
    }
    if (cap) buf[0] = '\0';
    return buf;
}

const char *ex_type_name(const fr_type *t, char *buf, size_t cap)
{
    fr_type_format(t, false, buf, cap);
    return buf;
}

fr_expr_op ex_op_flip(fr_expr_op op)
{
    switch (op) {
    case FR_OP_LT: return FR_OP_GT;
    case FR_OP_LE: return FR_OP_GE;
    case FR_OP_GT: return FR_OP_LT;
    case FR_OP_GE: return FR_OP_LE;
    default: return op;
    }
}

bool ex_op_is_compare(fr_expr_op op) { return op >= FR_OP_EQ && op <= FR_OP_GE; }

bool ex_op_is_arith(fr_expr_op op) { return op >= FR_OP_ADD && op <= FR_OP_MOD; }

const char *ex_op_text(fr_expr_op op)
{
    static const char *const text[] = {
        [FR_OP_NONE] = "?", [FR_OP_EQ] = "=", [FR_OP_NE] = "<>", [FR_OP_LT] = "<",
        [FR_OP_LE] = "<=", [FR_OP_GT] = ">", [FR_OP_GE] = ">=", [FR_OP_AND] = "AND",
        [FR_OP_OR] = "OR", [FR_OP_NOT] = "NOT", [FR_OP_ADD] = "+", [FR_OP_SUB] = "-",
        [FR_OP_MUL] = "*", [FR_OP_DIV] = "/", [FR_OP_MOD] = "%", [FR_OP_NEG] = "-",
        [FR_OP_CONCAT] = "||",
    };
    if ((unsigned)op >= sizeof text / sizeof text[0]) return "?";
    return text[op];
}

const char *ex_node_name(const fr_expr *e)
{
    switch (e->kind) {
    case FR_EX_LIKE: return "LIKE";
    case FR_EX_CASE: return "CASE";
    case FR_EX_FUNC: return fr_expr_func_name(e->func);
    default: return ex_op_text(e->op);
    }
}

/* ---- 128-bit decimals ------------------------------------------------------------------ */

int ex_i128_mul(fr_i128 a, fr_i128 b, fr_i128 *out)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

fr_i128 ex_i128_div_round(fr_i128 num, fr_i128 den)
{
    assert(den != 0);
    if (num == EX_I128_MIN && den == -1) return EX_I128_MAX; /* cannot happen for decimals */
    fr_i128 q = num / den, r = num % den;
    /* |r| >= |den| - |r| is 2|r| >= |den| without overflowing. */
    fr_i128 ar = r < 0 ? -r : r, ad = den < 0 ? -den : den;
    if (r != 0 && ar >= ad - ar) q += ((num < 0) == (den < 0)) ? 1 : -1;
    return q;
}

int ex_i128_rescale(fr_i128 v, int from, int to, fr_i128 *out)
{
    if (to == from) {
        *out = v;
        return 0;
    }
    if (to > from) return ex_i128_mul(v, fr_i128_pow10(to - from), out);
    *out = ex_i128_div_round(v, fr_i128_pow10(from - to));
    return 0;
}

/* ---- conversions ----------------------------------------------------------------------- */

static int64_t ex_sat_mul64(int64_t a, int64_t k, bool *ovf)
{
    int64_t r;
    if (!__builtin_mul_overflow(a, k, &r)) return r;
    *ovf = true;
    return (a < 0) != (k < 0) ? INT64_MIN : INT64_MAX;
}

/* The factor from the unit of `from` to that of `to` for temporal types; 0 when `to` is
 * coarser (a division), which comparisons never ask for. */
static int64_t ex_time_factor(const fr_type *from, const fr_type *to)
{
    if (from->id == FR_T_DATE) {
        if (to->id == FR_T_DATE) return 1;
        return 86400 * fr_type_time_units(to->precision);
    }
    int64_t uf = fr_type_time_units(from->precision), ut = fr_type_time_units(to->precision);
    return ut >= uf ? ut / uf : 0;
}

static int64_t ex_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int ex_value_coerce(const fr_value *v, const fr_type *to, bool checked, fr_value *out,
                    fr_error *err)
{
    fr_value r = *v;
    r.type = *to;
    if (v->is_null) {
        *out = r;
        return 0;
    }
    bool ovf = false;
    fr_type_id from = v->type.id;
    switch (ex_phys_of(to->id)) {
    case EX_P_I64:
        if (fr_type_is_temporal(to->id) && fr_type_is_temporal(from)) {
            int64_t k = ex_time_factor(&v->type, to);
            if (k > 0) {
                r.v.i = ex_sat_mul64(v->v.i, k, &ovf);
            } else {
                int64_t div = fr_type_time_units(v->type.precision) /
                              fr_type_time_units(to->precision);
                r.v.i = ex_floor_div(v->v.i, div);
            }
        }
        break;
    case EX_P_F64:
        if (ex_phys_of(from) == EX_P_I64) {
            r.v.f = (double)v->v.i;
        } else if (from == FR_T_DECIMAL) {
            r.v.f = (double)v->v.d / (double)fr_i128_pow10(v->type.scale);
        }
        break;
    case EX_P_I128:
        if (ex_phys_of(from) == EX_P_I64) {
            if (ex_i128_mul(v->v.i, fr_i128_pow10(to->scale), &r.v.d) < 0) {
                ovf = true;
                r.v.d = v->v.i < 0 ? EX_I128_MIN : EX_I128_MAX;
            }
        } else if (from == FR_T_DECIMAL) {
            if (ex_i128_rescale(v->v.d, v->type.scale, to->scale, &r.v.d) < 0) {
                ovf = true;
                r.v.d = v->v.d < 0 ? EX_I128_MIN : EX_I128_MAX;
            }
        }
        if (checked && !ovf && !fr_decimal_fits(r.v.d, to->precision)) ovf = true;
        break;
    default:
        break;
    }
    if (ovf && checked) {
        char tn[64];
        return fr_fail(err, FR_ERANGE, "numeric overflow: value does not fit %s",
                       ex_type_name(to, tn, sizeof tn));
    }
    *out = r;
    return 0;
}

int ex_value_cmp(const fr_value *a, const fr_value *b)
{
    switch (ex_phys_of(a->type.id)) {
    case EX_P_BOOL: return (int)a->v.b - (int)b->v.b;
    case EX_P_I64: return (a->v.i > b->v.i) - (a->v.i < b->v.i);
    case EX_P_F64: return ex_fcmp(a->v.f, b->v.f);
    case EX_P_I128: return (a->v.d > b->v.d) - (a->v.d < b->v.d);
    case EX_P_STR: {
        size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
        int c = n ? memcmp(a->v.s.ptr, b->v.s.ptr, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return (a->v.s.len > b->v.s.len) - (a->v.s.len < b->v.s.len);
    }
    }
    return 0;
}

/* ---- LIKE ------------------------------------------------------------------------------ */

size_t ex_utf8_len(const uint8_t *s, size_t i, size_t n)
{
    uint8_t c = s[i];
    size_t len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1;
    return len > n - i ? n - i : len;
}

/* Wildcard matching with one backtrack point: on a mismatch, the last % swallows one more
 * character. That is linear for typical patterns and O(n * m) at worst, without recursion. */
bool ex_like_match(const uint8_t *s, size_t n, const uint8_t *p, size_t m)
{
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < n) {
        if (pi < m && p[pi] == '%') {
            star_p = pi++;
            star_s = si;
        } else if (pi < m && p[pi] == '_') {
            si += ex_utf8_len(s, si, n);
            pi++;
        } else if (pi < m && p[pi] == s[si]) {
            si++;
            pi++;
        } else if (star_p != SIZE_MAX) {
            pi = star_p + 1;
            star_s += ex_utf8_len(s, star_s, n);
            si = star_s;
        } else {
            return false;
        }
    }
    while (pi < m && p[pi] == '%') pi++;
    return pi == m;
}
