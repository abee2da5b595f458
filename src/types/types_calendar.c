/* types_calendar.c — proleptic Gregorian calendar arithmetic and 128-bit decimal helpers.
 *
 * The day conversions follow the well-known era-based method (400-year eras of 146097
 * days, years starting in March so the leap day ends the year); they are exact for every
 * int64 day count whose year fits, and need no tables. */
#include "types/types.h"

int64_t fr_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                      /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;    /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;              /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void fr_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                        /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;   /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                 /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                      /* [0, 11] */
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

fr_i128 fr_i128_pow10(int n)
{
    if (n < 0 || n > 38) return 0;
    fr_i128 v = 1;
    for (int i = 0; i < n; i++) v *= 10;
    return v;
}

bool fr_decimal_fits(fr_i128 unscaled, int precision)
{
    if (precision <= 0) return unscaled == 0;
    if (precision > 38) return true;
    fr_i128 lim = fr_i128_pow10(precision);
    return unscaled < lim && unscaled > -lim;
}

int fr_decimal_format(fr_i128 unscaled, int scale, char *out, size_t cap)
{
    if (scale < 0) scale = 0;
    if (scale > 38) scale = 38;
    unsigned __int128 mag = unscaled < 0 ? -(unsigned __int128)unscaled
                                         : (unsigned __int128)unscaled;
    char digits[48];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(mag % 10));
        mag /= 10;
    } while (mag);
    while (nd <= scale) digits[nd++] = '0'; /* at least one digit before the point */
    char tmp[96];
    size_t n = 0;
    if (unscaled < 0) tmp[n++] = '-';
    for (int i = nd - 1; i >= 0; i--) {
        tmp[n++] = digits[i];
        if (i == scale && scale > 0) tmp[n++] = '.';
    }
    if (cap > 0) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(out, tmp, c);
        out[c] = '\0';
    }
    return (int)n;
}
