/* engine_autopart.c — auto-partitioning: the time values of partitions (formats such as
 * yyyyMMdd, time units, the zone they are read in), the checks a new partition of an
 * auto-partitioned table passes, and the pass that creates the partitions of the current
 * and coming time units and drops those past the retention, as Apache Fluss does:
 *
 *   - the value of the partition `k` units from now is now moved by k units in the table's
 *     zone (HOUR moves the instant; DAY, MONTH, QUARTER and YEAR move the local date),
 *     formatted with the table's pattern;
 *   - num-precreate = N creates the values for k = 0 .. N-1 (the current unit and the next
 *     N-1) when missing;
 *   - num-retention = R drops every partition whose time value sorts before the value of
 *     k = -R (so R past units are kept besides the current one); a negative R drops none.
 *
 * Invariants: values of one pattern sort as text in time order (every field has a fixed
 * width and fields go from the largest unit to the smallest), which the retention relies
 * on; a pass changes the catalog only through fr_engine_add_part_locked and
 * fr_engine_drop_part_locked, one partition at a time. */
#include "engine/engine_int.h"

#include <inttypes.h>
#include <strings.h>

static const char *const unit_names[] = {"HOUR", "DAY", "MONTH", "QUARTER", "YEAR"};
static const char *const unit_formats[] = {"yyyyMMddHH", "yyyyMMdd", "yyyyMM", "yyyyQ", "yyyy"};

int fr_autop_parse_unit(const char *s, fr_time_unit *out)
{
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, unit_names[i]) == 0) {
            *out = (fr_time_unit)i;
            return FR_OK;
        }
    }
    return FR_EINVAL;
}

const char *fr_autop_unit_name(fr_time_unit u) { return unit_names[u]; }
const char *fr_autop_default_format(fr_time_unit u) { return unit_formats[u]; }

/* ---- patterns -------------------------------------------------------------------------- */

typedef enum field_kind { F_YEAR, F_QUARTER, F_MONTH, F_DAY, F_HOUR, F_LITERAL, F_END } field_kind;

static const char *const field_names[] = {"year", "quarter", "month", "day", "hour"};
static const int field_widths[] = {4, 1, 2, 2, 2};

/* One step through a pattern: a field (with its width in letters) or one literal byte.
 * Returns FR_EINVAL with a message for what Fluss refuses: optional sections, unknown
 * letters, an unterminated quote. */
typedef struct pat_cursor {
    const char *p;
    bool quoted;
} pat_cursor;

static int pat_next(pat_cursor *c, field_kind *kind, int *width, char *lit, fr_error *err)
{
    for (;;) {
        char ch = *c->p;
        if (ch == '\0') {
            FR_CHECK(!c->quoted, FR_EINVAL, err, "a quote is not closed");
            *kind = F_END;
            return FR_OK;
        }
        if (ch == '\'') {
            if (c->p[1] == '\'') { /* '' is a literal quote, inside quotes or out */
                c->p += 2;
                *kind = F_LITERAL;
                *lit = '\'';
                return FR_OK;
            }
            c->quoted = !c->quoted;
            c->p++;
            continue;
        }
        c->p++;
        bool letter = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
        if (c->quoted || !letter) {
            FR_CHECK(c->quoted || (ch != '[' && ch != ']'), FR_EINVAL, err,
                     "optional sections ('[' or ']') are not supported");
            *kind = F_LITERAL;
            *lit = ch;
            return FR_OK;
        }
        int n = 1;
        while (*c->p == ch) {
            c->p++;
            n++;
        }
        switch (ch) {
        case 'y': case 'u': *kind = F_YEAR; break;
        case 'Q': case 'q': *kind = F_QUARTER; break;
        case 'M': case 'L': *kind = F_MONTH; break;
        case 'd': *kind = F_DAY; break;
        case 'H': *kind = F_HOUR; break;
        default: return fr_fail(err, FR_EINVAL, "the time field '%c' is not supported", ch);
        }
        FR_CHECK(n == field_widths[*kind], FR_EINVAL, err,
                 "the %s field has a fixed width of %d letters, not %d", field_names[*kind],
                 field_widths[*kind], n);
        *width = n;
        return FR_OK;
    }
}

int fr_autop_check_format(const char *format, fr_time_unit unit, fr_error *err)
{
    static const field_kind expected[5][4] = {
        {F_YEAR, F_MONTH, F_DAY, F_HOUR}, {F_YEAR, F_MONTH, F_DAY, F_END},
        {F_YEAR, F_MONTH, F_END, F_END},  {F_YEAR, F_QUARTER, F_END, F_END},
        {F_YEAR, F_END, F_END, F_END},
    };
    pat_cursor c = {.p = format};
    int nfields = 0;
    for (;;) {
        field_kind k;
        int width = 0;
        char lit = 0;
        fr_error e2 = {0};
        if (pat_next(&c, &k, &width, &lit, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "time format '%s': %s", format, e2.msg);
        if (k == F_END) break;
        if (k == F_LITERAL) continue;
        FR_CHECK(nfields < 4 && expected[unit][nfields] == k, FR_EINVAL, err,
                 "time format '%s' must hold the fields of %s in order from the year down "
                 "(the default is '%s')", format, unit_names[unit], unit_formats[unit]);
        nfields++;
    }
    FR_CHECK(nfields == 4 || expected[unit][nfields] == F_END, FR_EINVAL, err,
             "time format '%s' lacks fields of %s (the default is '%s')", format,
             unit_names[unit], unit_formats[unit]);
    return FR_OK;
}

/* A moment as local calendar fields. */
typedef struct civil {
    int64_t year;
    unsigned month, day, hour;
} civil;

static int format_civil(const char *format, const civil *t, fr_buf *out, fr_error *err)
{
    pat_cursor c = {.p = format};
    for (;;) {
        field_kind k;
        int width = 0;
        char lit = 0;
        FR_TRY(pat_next(&c, &k, &width, &lit, err));
        if (k == F_END) return FR_OK;
        switch (k) {
        case F_LITERAL: FR_TRY(fr_buf_append(out, &lit, 1, err)); break;
        case F_YEAR: FR_TRY(fr_buf_printf(out, err, "%04" PRId64, t->year)); break;
        case F_QUARTER: FR_TRY(fr_buf_printf(out, err, "%u", (t->month - 1) / 3 + 1)); break;
        case F_MONTH: FR_TRY(fr_buf_printf(out, err, "%02u", t->month)); break;
        case F_DAY: FR_TRY(fr_buf_printf(out, err, "%02u", t->day)); break;
        case F_HOUR: FR_TRY(fr_buf_printf(out, err, "%02u", t->hour)); break;
        default: break;
        }
    }
}

/* Reads `width` digits from *s into *v, within [lo, hi]. */
static bool take_digits(const char **s, int width, int lo, int hi, int *v)
{
    int x = 0;
    for (int i = 0; i < width; i++) {
        char ch = (*s)[i];
        if (ch < '0' || ch > '9') return false;
        x = x * 10 + (ch - '0');
    }
    *s += width;
    *v = x;
    return x >= lo && x <= hi;
}

bool fr_autop_matches(const fr_auto_partition *a, const char *text)
{
    pat_cursor c = {.p = a->format};
    const char *s = text;
    for (;;) {
        field_kind k = F_END;
        int width = 0, v = 0;
        char lit = 0;
        if (pat_next(&c, &k, &width, &lit, NULL) < 0) return false;
        bool ok = true;
        switch (k) {
        case F_END: return *s == '\0';
        case F_LITERAL: ok = *s == lit; s += ok; break;
        case F_YEAR: ok = take_digits(&s, 4, 0, 9999, &v); break;
        case F_QUARTER: ok = take_digits(&s, 1, 1, 4, &v); break;
        case F_MONTH: ok = take_digits(&s, 2, 1, 12, &v); break;
        case F_DAY: ok = take_digits(&s, 2, 1, 31, &v); break;
        case F_HOUR: ok = take_digits(&s, 2, 0, 23, &v); break;
        }
        if (!ok) return false;
    }
}

/* ---- time values ----------------------------------------------------------------------- */

static int local_civil(const char *zone, int64_t utc_s, civil *out, fr_error *err)
{
    int32_t off = 0;
    FR_TRY(fr_tz_offset(zone, utc_s, &off, err));
    int64_t local = utc_s + off;
    int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
    int64_t secs = local - days * 86400;
    fr_civil_from_days(days, &out->year, &out->month, &out->day);
    out->hour = (unsigned)(secs / 3600);
    return FR_OK;
}

static void add_months(civil *t, int64_t months)
{
    int64_t m = t->year * 12 + (int64_t)(t->month - 1) + months;
    t->year = m >= 0 ? m / 12 : -((-m + 11) / 12);
    t->month = (unsigned)(m - t->year * 12) + 1;
}

int fr_autop_value_at(const fr_auto_partition *a, int64_t now_ms, int offset, fr_buf *out,
                      fr_error *err)
{
    int64_t now_s = now_ms >= 0 ? now_ms / 1000 : -((-now_ms + 999) / 1000);
    civil t;
    if (a->unit == FR_UNIT_HOUR) { /* an hour later is an instant later */
        FR_TRY(local_civil(a->zone, now_s + (int64_t)offset * 3600, &t, err));
    } else {
        FR_TRY(local_civil(a->zone, now_s, &t, err));
        switch (a->unit) {
        case FR_UNIT_DAY:
            fr_civil_from_days(fr_days_from_civil(t.year, t.month, t.day) + offset, &t.year,
                               &t.month, &t.day);
            break;
        case FR_UNIT_MONTH: add_months(&t, offset); break;
        case FR_UNIT_QUARTER: add_months(&t, 3 * (int64_t)offset); break;
        case FR_UNIT_YEAR: t.year += offset; break;
        default: break;
        }
    }
    FR_CHECK(t.year >= 0 && t.year <= 9999, FR_ERANGE, err,
             "auto-partitioning reached the year %" PRId64, t.year);
    return format_civil(a->format, &t, out, err);
}

/* ---- checks on new partitions ---------------------------------------------------------- */

static int key_position(const fr_table_conf *c)
{
    for (int i = 0; i < c->npart; i++)
        if (c->part[i] == c->autop.key) return i;
    return 0;
}

int fr_autop_check_new(const fr_table *t, char *const *values, int64_t now_ms, fr_error *err)
{
    const fr_auto_partition *a = &t->conf.autop;
    if (t->conf.npart == 0 || (!a->enabled && !a->format_given)) return FR_OK;
    const char *v = values[key_position(&t->conf)];
    FR_CHECK(fr_autop_matches(a, v), FR_EINVAL, err,
             "table %s: partition value '%.64s' does not match the format '%s' of "
             "auto-partitioning by %s", t->qname, v, a->format, unit_names[a->unit]);
    if (!a->enabled || a->num_retention < 0) return FR_OK;
    fr_buf first;
    fr_buf_init(&first);
    int rc = fr_autop_value_at(a, now_ms, -a->num_retention, &first, err);
    if (rc == FR_OK) rc = fr_buf_append(&first, "", 1, err);
    if (rc == FR_OK && strcmp((const char *)first.data, v) > 0)
        rc = fr_fail(err, FR_EINVAL, "table %s: partition value '%.64s' is out of date; the "
                     "earliest partition kept is '%s'", t->qname, v, (const char *)first.data);
    fr_buf_free(&first);
    return rc;
}

/* ---- the pass -------------------------------------------------------------------------- */

static int drop_expired(fr_engine *e, fr_table *t, int64_t now_ms, fr_error *err)
{
    const fr_auto_partition *a = &t->conf.autop;
    if (a->num_retention < 0) return FR_OK;
    fr_buf first;
    fr_buf_init(&first);
    int rc = fr_autop_value_at(a, now_ms, -a->num_retention, &first, err);
    if (rc == FR_OK) rc = fr_buf_append(&first, "", 1, err);
    int pos = key_position(&t->conf);
    for (int i = 0; rc == FR_OK && i < t->nparts;) {
        fr_tpart *p = t->parts[i];
        if (strcmp(p->info.values[pos], (const char *)first.data) >= 0) {
            i++;
            continue;
        }
        /* The list shrinks by one: the next partition moves to i. */
        rc = fr_engine_drop_part_locked(e, t, p->info.id, "auto-partitioning dropped", err);
    }
    fr_buf_free(&first);
    return rc;
}

static int create_coming(fr_engine *e, fr_table *t, int64_t now_ms, fr_error *err)
{
    const fr_auto_partition *a = &t->conf.autop;
    if (t->conf.npart != 1) return FR_OK; /* pre-creating needs one partition key */
    fr_buf v;
    fr_buf_init(&v);
    int rc = FR_OK;
    for (int k = 0; rc == FR_OK && k < a->num_precreate; k++) {
        fr_buf_reset(&v);
        rc = fr_autop_value_at(a, now_ms, k, &v, err);
        if (rc == FR_OK) rc = fr_buf_append(&v, "", 1, err);
        char *values[1] = {(char *)v.data};
        if (rc == FR_OK)
            rc = fr_engine_add_part_locked(e, t, values, true, "auto-partitioning created", err);
    }
    fr_buf_free(&v);
    return rc;
}

int fr_autop_table_locked(fr_engine *e, fr_table *t, int64_t now_ms, fr_error *err)
{
    if (!t->conf.autop.enabled) return FR_OK;
    int rc = drop_expired(e, t, now_ms, err);
    if (rc == FR_OK) rc = create_coming(e, t, now_ms, err);
    if (rc < 0) FR_WARN("auto-partitioning of table %s: %s", t->qname, err ? err->msg : "");
    return rc;
}

int fr_engine_auto_partition_pass(fr_engine *e, int64_t now_ms, fr_error *err)
{
    int rc = FR_OK;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->ntables; i++) {
        fr_error e2 = {0};
        int r = fr_autop_table_locked(e, e->tables[i], now_ms, &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fr_engine_run_auto_partition_at(fr_engine *e, int64_t now_ms, fr_error *err)
{
    return fr_engine_auto_partition_pass(e, now_ms, err);
}
