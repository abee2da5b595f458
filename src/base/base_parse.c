/* base_parse.c — strict parsers for integers, durations and byte sizes as they appear in
 * configuration and table options. Whole-string matches only: trailing bytes are errors. */
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

int fr_parse_i64(const char *s, int64_t *out, fr_error *err)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    FR_CHECK(*p >= '0' && *p <= '9', FR_EINVAL, err, "'%s' is not an integer", s);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    FR_CHECK(errno != ERANGE, FR_ERANGE, err, "integer '%s' is out of the 64-bit range", s);
    FR_CHECK(*end == '\0', FR_EINVAL, err, "'%s' is not an integer", s);
    *out = v;
    return FR_OK;
}

/* Splits "<digits>[ ]<unit>" into a non-negative number and the unit text. */
static int fr_parse_number_unit(const char *s, const char *what, int64_t *num,
                                const char **unit, fr_error *err)
{
    const char *p = s;
    FR_CHECK(*p >= '0' && *p <= '9', FR_EINVAL, err,
             "'%s' is not a %s (expected a number and an optional unit)", s, what);
    int64_t v = 0;
    while (*p >= '0' && *p <= '9') {
        int d = *p - '0';
        FR_CHECK(v <= (INT64_MAX - d) / 10, FR_ERANGE, err, "%s '%s' is too large", what, s);
        v = v * 10 + d;
        p++;
    }
    while (*p == ' ' || *p == '\t') p++;
    *num = v;
    *unit = p;
    return FR_OK;
}

typedef struct fr_unit {
    const char *name;
    int64_t factor;
} fr_unit;

static int fr_parse_with_units(const char *s, const char *what, const fr_unit *units,
                               const char *expected, int64_t *out, fr_error *err)
{
    int64_t v = 0;
    const char *unit = "";
    FR_TRY(fr_parse_number_unit(s, what, &v, &unit, err));
    for (const fr_unit *u = units; u->name; u++) {
        if (strcasecmp(unit, u->name) != 0) continue;
        FR_CHECK(v <= INT64_MAX / u->factor, FR_ERANGE, err, "%s '%s' is too large", what, s);
        *out = v * u->factor;
        return FR_OK;
    }
    return fr_fail(err, FR_EINVAL, "'%s' is not a %s: unknown unit '%s' (use %s)", s, what,
                   unit, expected);
}

int fr_parse_duration_ms(const char *s, int64_t *out, fr_error *err)
{
    static const fr_unit units[] = {
        {"", 1},
        {"ms", 1},
        {"milli", 1},
        {"millis", 1},
        {"millisecond", 1},
        {"milliseconds", 1},
        {"s", 1000},
        {"sec", 1000},
        {"secs", 1000},
        {"second", 1000},
        {"seconds", 1000},
        {"m", 60000},
        {"min", 60000},
        {"mins", 60000},
        {"minute", 60000},
        {"minutes", 60000},
        {"h", 3600000},
        {"hour", 3600000},
        {"hours", 3600000},
        {"d", 86400000},
        {"day", 86400000},
        {"days", 86400000},
        {NULL, 0},
    };
    return fr_parse_with_units(s, "duration", units, "ms, s, min, h or d", out, err);
}

int fr_parse_bytes(const char *s, int64_t *out, fr_error *err)
{
    static const fr_unit units[] = {
        {"", 1},
        {"b", 1},
        {"k", 1LL << 10},
        {"kb", 1LL << 10},
        {"kib", 1LL << 10},
        {"m", 1LL << 20},
        {"mb", 1LL << 20},
        {"mib", 1LL << 20},
        {"g", 1LL << 30},
        {"gb", 1LL << 30},
        {"gib", 1LL << 30},
        {"t", 1LL << 40},
        {"tb", 1LL << 40},
        {"tib", 1LL << 40},
        {NULL, 0},
    };
    return fr_parse_with_units(s, "byte size", units, "b, kb, mb, gb or tb", out, err);
}
