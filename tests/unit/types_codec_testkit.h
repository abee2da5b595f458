/* types_codec_testkit.h — random values of every type for the tests of the key and row
 * encodings (test_types_key.c, test_types_row.c): edge values (type minimum and maximum,
 * zero, -0.0, infinities, NaNs, zero bytes in text) mixed with random ones, and a seed that
 * is printed and can be replayed with FIRTH_TEST_SEED. */
#ifndef FIRTH_TYPES_CODEC_TESTKIT_H
#define FIRTH_TYPES_CODEC_TESTKIT_H

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "types/types.h"

static uint64_t tk_rng = 1;

static uint64_t tk_rnd(void)
{
    tk_rng ^= tk_rng >> 12;
    tk_rng ^= tk_rng << 25;
    tk_rng ^= tk_rng >> 27;
    return tk_rng * 0x2545F4914F6CDD1DULL;
}

static int tk_int(int lo, int hi) /* inclusive */
{
    return lo + (int)(tk_rnd() % (uint64_t)(hi - lo + 1));
}

/* Seeds the generator from FIRTH_TEST_SEED or the clock, and prints the seed. */
static uint64_t tk_seed(const char *test)
{
    const char *s = getenv("FIRTH_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    if (seed == 0) seed = 1;
    tk_rng = seed;
    printf("%s: seed %llu (set FIRTH_TEST_SEED to replay)\n", test, (unsigned long long)seed);
    fflush(stdout);
    return seed;
}

static const char *const tk_type_names[] = {
    "BOOLEAN",       "TINYINT",       "SMALLINT",      "INT",          "BIGINT",
    "FLOAT",         "DOUBLE",        "DECIMAL(10,2)", "DECIMAL(18,0)", "DECIMAL(19,3)",
    "DECIMAL(38,10)", "DECIMAL(1,1)", "CHAR(4)",       "VARCHAR(6)",   "STRING",
    "BYTES",         "DATE",          "TIME(0)",       "TIME(3)",      "TIME(6)",
    "TIME(9)",       "TIMESTAMP(0)",  "TIMESTAMP(3)",  "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)",
    "TIMESTAMP_LTZ(6)",
};
#define TK_NTYPES ((int)(sizeof tk_type_names / sizeof tk_type_names[0]))

static fr_type tk_type(const char *name)
{
    fr_type t;
    fr_error err;
    if (fr_type_parse(name, &t, &err) < 0) {
        fprintf(stderr, "bad type %s: %s\n", name, err.msg);
        abort();
    }
    return t;
}

static int64_t tk_random_int(int width)
{
    int bits = 8 * width;
    int64_t lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    switch (tk_int(0, 7)) {
    case 0: return lo;
    case 1: return hi;
    case 2: return tk_int(-3, 3);
    case 3: return tk_int(0, 1) ? lo + tk_int(0, 2) : hi - tk_int(0, 2);
    case 4: { /* a random magnitude, so varints of every length occur */
        int shift = tk_int(0, bits - 1);
        int64_t m = (int64_t)(tk_rnd() >> (65 - bits) >> shift);
        return tk_int(0, 1) ? m : -m - 1;
    }
    default: {
        uint64_t u = tk_rnd();
        if (bits < 64) {
            u &= ((uint64_t)1 << bits) - 1;
            uint64_t sign = (uint64_t)1 << (bits - 1);
            return (int64_t)((u ^ sign) - sign);
        }
        return (int64_t)u;
    }
    }
}

static double tk_random_float(bool is_float)
{
    static const double pool[] = {-INFINITY, -1.5, -1.0, -0.0, 0.0, 1.0, 1.5, INFINITY, NAN};
    int k = tk_int(0, 11);
    if (k < 9) return pool[k];
    if (k == 9) return -NAN;
    if (is_float) {
        static const float fpool[] = {FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f};
        if (k == 10) return fpool[tk_int(0, 5)];
        uint32_t bits = (uint32_t)tk_rnd();
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    static const double dpool[] = {DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN, 5e-324, -5e-324};
    if (k == 10) return dpool[tk_int(0, 5)];
    uint64_t bits = tk_rnd();
    double f;
    memcpy(&f, &bits, 8);
    return f;
}

static fr_i128 tk_random_decimal(int precision)
{
    fr_i128 max = fr_i128_pow10(precision) - 1;
    fr_i128 v;
    switch (tk_int(0, 4)) {
    case 0: v = max; break;
    case 1: v = tk_int(0, 3); break;
    case 2: v = fr_i128_pow10(tk_int(0, precision - 1)); break;
    default: {
        unsigned __int128 u = ((unsigned __int128)tk_rnd() << 64) | tk_rnd();
        fr_i128 m = fr_i128_pow10(tk_int(1, precision));
        v = (fr_i128)(u % (unsigned __int128)m);
    }
    }
    return tk_int(0, 1) ? v : -v;
}

/* Text of up to max_len bytes from a small alphabet (so equal prefixes and ties are common)
 * that includes the zero byte and 0xFF, copied into the arena. */
static fr_value tk_random_text(const fr_type *t, size_t max_len, fr_arena *a)
{
    static const uint8_t alphabet[] = {0x00, 0x01, 'a', 'b', 0x7f, 0xff};
    size_t n = (size_t)tk_int(0, 4) == 0 ? (size_t)tk_int(0, 300) : (size_t)tk_int(0, 5);
    if (n > max_len) n = max_len;
    uint8_t *p = fr_arena_alloc(a, n + 1);
    if (!p) abort();
    for (size_t i = 0; i < n; i++) p[i] = alphabet[tk_int(0, (int)sizeof alphabet - 1)];
    return fr_value_str(*t, p, n);
}

/* A random non-null value of type t; text lives in the arena. */
static fr_value tk_random_value(const fr_type *t, fr_arena *a)
{
    switch (t->id) {
    case FR_T_BOOLEAN: return fr_value_bool(*t, tk_int(0, 1));
    case FR_T_FLOAT: return fr_value_double(*t, tk_random_float(true));
    case FR_T_DOUBLE: return fr_value_double(*t, tk_random_float(false));
    case FR_T_DECIMAL: return fr_value_decimal(*t, tk_random_decimal(t->precision));
    case FR_T_CHAR:
    case FR_T_VARCHAR: return tk_random_text(t, (size_t)t->length, a);
    case FR_T_STRING:
    case FR_T_BYTES: return tk_random_text(t, 100000, a);
    default: return fr_value_int(*t, tk_random_int(fr_type_width(t)));
    }
}

/* Whether two values are the same: both NULL, or equal by fr_value_compare, NaN with NaN;
 * with exact_zero, -0.0 differs from 0.0. */
static bool tk_same_value(const fr_value *a, const fr_value *b, bool exact_zero)
{
    if (a->is_null || b->is_null) return a->is_null == b->is_null;
    if (a->type.id == FR_T_FLOAT || a->type.id == FR_T_DOUBLE) {
        if (isnan(a->v.f) || isnan(b->v.f)) return isnan(a->v.f) && isnan(b->v.f);
        if (exact_zero && signbit(a->v.f) != signbit(b->v.f)) return false;
    }
    int c = 1;
    fr_error err;
    if (fr_value_compare(a, b, &c, &err) < 0) return false;
    return c == 0;
}

#endif
