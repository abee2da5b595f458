/* engine_tz.c — the UTC offset of a time zone at an instant, for auto-partitioning's
 * 'table.auto-partition.time-zone': the system's zone (no zone given), UTC and fixed offsets
 * ("UTC", "GMT+8", "+05:30"), and IANA names ("Asia/Shanghai", "Europe/Berlin") read from
 * the system's zoneinfo files (TZif, RFC 8536), including the POSIX TZ rule at their end
 * that covers the instants after the last listed transition.
 *
 * Every zoneinfo file is outside input: lengths and counts are checked against the file
 * before use, and anything inconsistent is FR_EINVAL naming the file. */
#include "engine/engine_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define FR_TZIF_BYTES_MAX (1 << 20)
#define FR_TZ_COUNT_MAX 100000

/* ---- fixed offsets --------------------------------------------------------------------- */

/* Reads "[+-]h[h][[:]mm[[:]ss]]" into seconds east of UTC; false when s is not that. */
static bool parse_offset(const char *s, int32_t *out)
{
    int sign = *s == '-' ? -1 : 1;
    if (*s != '+' && *s != '-') return false;
    s++;
    int parts[3] = {0, 0, 0}, n = 0;
    while (n < 3) {
        int digits = 0, v = 0;
        while (isdigit((unsigned char)*s) && digits < 2) {
            v = v * 10 + (*s++ - '0');
            digits++;
        }
        if (digits == 0 || (n > 0 && digits != 2)) return false;
        parts[n++] = v;
        if (*s == ':') s++;
        else if (!isdigit((unsigned char)*s)) break;
    }
    if (*s != '\0' || parts[0] > 18 || parts[1] > 59 || parts[2] > 59) return false;
    *out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
    return true;
}

static bool parse_fixed(const char *zone, int32_t *out)
{
    static const char *const utc_names[] = {"UTC", "GMT", "UT", "Z", "Etc/UTC", "Etc/GMT"};
    for (size_t i = 0; i < sizeof utc_names / sizeof *utc_names; i++) {
        size_t n = strlen(utc_names[i]);
        if (strncasecmp(zone, utc_names[i], n) != 0) continue;
        if (zone[n] == '\0') {
            *out = 0;
            return true;
        }
        if (i < 3 && parse_offset(zone + n, out)) return true;
    }
    return parse_offset(zone, out);
}

/* ---- POSIX TZ rules -------------------------------------------------------------------- */

typedef struct tz_rule {
    char kind;     /* 'J' (1..365, no leap day), 'D' (0..365), 'M' (month.week.day) */
    int n, m, w, d;
    int32_t time;  /* seconds after local midnight, may be negative or past a day */
} tz_rule;

typedef struct posix_tz {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    tz_rule start, end;
} posix_tz;

static bool tz_name(const char **s)
{
    const char *p = *s;
    if (*p == '<') {
        while (*p && *p != '>') p++;
        if (*p != '>') return false;
        *s = p + 1;
        return true;
    }
    while (isalpha((unsigned char)*p)) p++;
    if (p - *s < 3) return false;
    *s = p;
    return true;
}

/* "[+-]hh[:mm[:ss]]" with hours up to 167: seconds (sign as written). */
static bool tz_hms(const char **s, int32_t *out)
{
    const char *p = *s;
    int sign = 1;
    if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
    int32_t v[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (!isdigit((unsigned char)*p)) return false;
        int x = 0, digits = 0;
        while (isdigit((unsigned char)*p) && digits < 3) {
            x = x * 10 + (*p++ - '0');
            digits++;
        }
        v[i] = x;
        if (*p != ':' || i == 2) break;
        p++;
    }
    if (v[0] > 167 || v[1] > 59 || v[2] > 59) return false;
    *out = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
    *s = p;
    return true;
}

static bool tz_int(const char **s, int lo, int hi, int *out)
{
    const char *p = *s;
    int x = 0, digits = 0;
    while (isdigit((unsigned char)*p) && digits < 3) {
        x = x * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || x < lo || x > hi) return false;
    *s = p;
    *out = x;
    return true;
}

static bool tz_rule_parse(const char **s, tz_rule *r)
{
    const char *p = *s;
    r->time = 7200;
    if (*p == 'J') {
        p++;
        r->kind = 'J';
        if (!tz_int(&p, 1, 365, &r->n)) return false;
    } else if (*p == 'M') {
        p++;
        r->kind = 'M';
        if (!tz_int(&p, 1, 12, &r->m) || *p++ != '.' || !tz_int(&p, 1, 5, &r->w) ||
            *p++ != '.' || !tz_int(&p, 0, 6, &r->d))
            return false;
    } else {
        r->kind = 'D';
        if (!tz_int(&p, 0, 365, &r->n)) return false;
    }
    if (*p == '/') {
        p++;
        if (!tz_hms(&p, &r->time)) return false;
    }
    *s = p;
    return true;
}

static bool posix_parse(const char *s, posix_tz *z)
{
    memset(z, 0, sizeof *z);
    int32_t off;
    if (!tz_name(&s) || !tz_hms(&s, &off) || off < -25 * 3600 || off > 25 * 3600) return false;
    z->std_off = -off; /* POSIX offsets count hours west */
    z->dst_off = z->std_off;
    if (*s == '\0') return true;
    if (!tz_name(&s)) return false;
    z->has_dst = true;
    z->dst_off = z->std_off + 3600;
    if (*s && *s != ',') {
        if (!tz_hms(&s, &off)) return false;
        z->dst_off = -off;
    }
    /* POSIX offsets go up to 24 hours; rule times (below) may go further. */
    if (z->std_off < -25 * 3600 || z->std_off > 25 * 3600 || z->dst_off < -25 * 3600 ||
        z->dst_off > 25 * 3600)
        return false;
    const char *rules = *s == ',' ? s + 1 : "M3.2.0,M11.1.0";
    if (!tz_rule_parse(&rules, &z->start) || *rules++ != ',' || !tz_rule_parse(&rules, &z->end))
        return false;
    return *rules == '\0';
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The local seconds since the epoch at which rule r falls in year y. */
static int64_t rule_local(const tz_rule *r, int64_t y)
{
    int64_t day;
    if (r->kind == 'J') {
        day = fr_days_from_civil(y, 1, 1) + r->n - 1 + (is_leap(y) && r->n >= 60);
    } else if (r->kind == 'D') {
        day = fr_days_from_civil(y, 1, 1) + r->n;
    } else {
        int64_t first = fr_days_from_civil(y, (unsigned)r->m, 1);
        int dow = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
        int64_t dom = 1 + (r->d - dow + 7) % 7 + (int64_t)(r->w - 1) * 7;
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int last = mdays[r->m - 1] + (r->m == 2 && is_leap(y));
        while (dom > last) dom -= 7;
        day = first + dom - 1;
    }
    return day * 86400 + r->time;
}

static int32_t posix_offset(const posix_tz *z, int64_t utc_s)
{
    if (!z->has_dst) return z->std_off;
    int64_t local = utc_s + z->std_off;
    int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
    int64_t y;
    unsigned m, d;
    fr_civil_from_days(days, &y, &m, &d);
    int64_t start = rule_local(&z->start, y) - z->std_off;
    int64_t end = rule_local(&z->end, y) - z->dst_off;
    bool dst = start < end ? (utc_s >= start && utc_s < end) : !(utc_s >= end && utc_s < start);
    return dst ? z->dst_off : z->std_off;
}

/* ---- TZif files ------------------------------------------------------------------------ */

static bool zone_name_ok(const char *zone)
{
    if (!zone[0] || zone[0] == '/' || strlen(zone) > 128 || strstr(zone, "..")) return false;
    for (const char *p = zone; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_+-/", *p)) return false;
    return true;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
} tzif_counts;

static bool tzif_header(const uint8_t *p, size_t len, tzif_counts *c)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0) return false;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    return c->time <= FR_TZ_COUNT_MAX && c->type >= 1 && c->type <= 256 &&
           c->leap <= FR_TZ_COUNT_MAX && c->isut <= 256 && c->isstd <= 256 &&
           c->chars <= 65536;
}

static size_t tzif_block_len(const tzif_counts *c, int tsize)
{
    return (size_t)c->time * (size_t)(tsize + 1) + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (size_t)(tsize + 4) + c->isstd + c->isut;
}

/* The offset at utc_s from a TZif file's bytes; false when they are not a valid file. */
bool fr_tzif_offset(const uint8_t *p, size_t len, int64_t utc_s, int32_t *out)
{
    tzif_counts c;
    if (!tzif_header(p, len, &c)) return false;
    int tsize = 4;
    size_t at = 44;
    if (p[4] >= '2') { /* skip the 32-bit block: the 64-bit one follows with its header */
        size_t skip = tzif_block_len(&c, 4);
        if (skip > len - at) return false;
        at += skip;
        if (!tzif_header(p + at, len - at, &c)) return false;
        at += 44;
        tsize = 8;
    }
    size_t block = tzif_block_len(&c, tsize);
    if (block > len - at) return false;
    const uint8_t *times = p + at, *idx = times + (size_t)c.time * (size_t)tsize;
    const uint8_t *types = idx + c.time;
    for (uint32_t i = 0; i < c.time; i++)
        if (idx[i] >= c.type) return false;
    int64_t last = 0;
    uint32_t lo = 0, hi = c.time; /* first transition after utc_s */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t tm = tsize == 8 ? be64(times + 8 * (size_t)mid)
                                : (int32_t)be32(times + 4 * (size_t)mid);
        if (tm <= utc_s) lo = mid + 1;
        else hi = mid;
    }
    if (c.time > 0)
        last = tsize == 8 ? be64(times + 8 * (size_t)(c.time - 1))
                          : (int32_t)be32(times + 4 * (size_t)(c.time - 1));
    /* After the last transition the footer's POSIX rule, when there is one, decides. */
    if (tsize == 8 && (c.time == 0 || utc_s >= last)) {
        const uint8_t *f = p + at + block;
        size_t flen = len - at - block;
        if (flen >= 2 && f[0] == '\n') {
            const uint8_t *nl = memchr(f + 1, '\n', flen - 1);
            size_t n = nl ? (size_t)(nl - f - 1) : 0;
            char rule[128];
            posix_tz z;
            if (n > 0 && n < sizeof rule) {
                memcpy(rule, f + 1, n);
                rule[n] = '\0';
                if (!posix_parse(rule, &z)) return false;
                *out = posix_offset(&z, utc_s);
                return true;
            }
        }
    }
    uint32_t type = lo == 0 ? 0 : idx[lo - 1];
    *out = (int32_t)be32(types + 6 * (size_t)type);
    return *out > -26 * 3600 && *out < 26 * 3600;
}

static int zoneinfo_offset(const char *zone, int64_t utc_s, int32_t *out, fr_error *err)
{
    FR_CHECK(zone_name_ok(zone), FR_EINVAL, err, "'%.64s' is not a time zone: give a name such "
             "as 'Asia/Shanghai', 'UTC' or an offset such as '+08:00'", zone);
    const char *dir = getenv("TZDIR");
    char path[FR_ENGINE_PATH_BYTES_MAX];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zone);
    uint8_t *data = NULL;
    size_t len = 0;
    fr_error e2 = {0};
    if (!fr_path_exists(path) || fr_read_file(path, FR_TZIF_BYTES_MAX, &data, &len, &e2) < 0)
        return fr_fail(err, FR_EINVAL, "unknown time zone '%.64s' (no readable %s): give a "
                       "name such as 'Asia/Shanghai', 'UTC' or an offset such as '+08:00'",
                       zone, path);
    bool ok = fr_tzif_offset(data, len, utc_s, out);
    fr_free(data);
    FR_CHECK(ok, FR_EINVAL, err, "time zone '%.64s': %s is not a valid zoneinfo file", zone,
             path);
    return FR_OK;
}

int fr_tz_offset(const char *zone, int64_t utc_s, int32_t *offset_s, fr_error *err)
{
    if (!zone || !zone[0]) {
        time_t t = (time_t)utc_s;
        struct tm tm;
        FR_CHECK(localtime_r(&t, &tm), FR_ERANGE, err, "the time %lld is out of range",
                 (long long)utc_s);
        *offset_s = (int32_t)tm.tm_gmtoff;
        return FR_OK;
    }
    if (parse_fixed(zone, offset_s)) return FR_OK;
    return zoneinfo_offset(zone, utc_s, offset_s, err);
}

int fr_autop_check_zone(const char *zone, bool must_exist, fr_error *err)
{
    int32_t off = 0;
    if (parse_fixed(zone, &off)) return FR_OK;
    if (!must_exist) {
        FR_CHECK(zone_name_ok(zone), FR_EINVAL, err, "'%.64s' is not a time zone: give a name "
                 "such as 'Asia/Shanghai', 'UTC' or an offset such as '+08:00'", zone);
        return FR_OK;
    }
    return fr_tz_offset(zone, fr_now_ms() / 1000, &off, err);
}
