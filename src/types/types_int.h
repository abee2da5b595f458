/* types_int.h — internals shared by the value files of the types module. */
#ifndef FIRTH_TYPES_INT_H
#define FIRTH_TYPES_INT_H

#include "types/types.h"

#define FR_SECONDS_PER_DAY 86400
/* Longest text accepted for a number or temporal literal; longer input is an error. */
#define FR_LITERAL_BYTES_MAX 400

/* Floor division and modulo (the remainder has the sign of the divisor, d > 0). */
static inline int64_t fr_floor_div(int64_t a, int64_t d)
{
    int64_t q = a / d;
    return (a % d != 0 && a < 0) ? q - 1 : q;
}
static inline int64_t fr_floor_mod(int64_t a, int64_t d)
{
    int64_t r = a % d;
    return r < 0 ? r + d : r;
}

/* Range of an integer type. */
void fr_int_range(fr_type_id id, int64_t *lo, int64_t *hi);
/* The SQL name of a type into a small buffer, for messages. */
const char *fr_type_name_buf(const fr_type *t, char *buf, size_t cap);
/* Converts a value of TIME/TIMESTAMP precision from_p to to_p (floor when coarser). */
int fr_time_rescale(int64_t v, int from_p, int to_p, int64_t *out);
/* FR_ERANGE ("value 'abcdef' is longer than VARCHAR(3)") when text exceeds the length of a
 * CHAR(n) or VARCHAR(n) type; other types pass. */
int fr_text_check_length(const uint8_t *p, size_t n, const fr_type *t, fr_error *err);
/* Exact-as-possible double of an unscaled decimal. */
double fr_decimal_to_double(fr_i128 unscaled, int scale);

#endif
