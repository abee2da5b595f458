/* base_config.c — the flat configuration: `key: value` lines with '#' comments, as Flink
 * and Fluss write theirs.
 *
 * Entries keep insertion order; setting a key again replaces its value in place. Keys and
 * values are owned copies. Lookup is a linear scan: a configuration has tens of keys. A
 * '#' starts a comment at the start of a line or after whitespace, so that values such as
 * "a#b" survive. */
#include "base/base.h"

#define FR_CONFIG_LINE_BYTES_MAX 65536
#define FR_CONFIG_ENTRIES_MAX 100000

typedef struct fr_config_item {
    char *key;
    char *value;
} fr_config_item;

struct fr_config {
    fr_config_item *entries;
    size_t count;
    size_t cap;
};

fr_config *fr_config_new(void)
{
    return fr_calloc(1, sizeof(fr_config));
}

void fr_config_free(fr_config *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->count; i++) {
        fr_free(c->entries[i].key);
        fr_free(c->entries[i].value);
    }
    fr_free(c->entries);
    fr_free(c);
}

static fr_config_item *fr_config_lookup(const fr_config *c, const char *key)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->entries[i].key, key) == 0) return &c->entries[i];
    return NULL;
}

int fr_config_set(fr_config *c, const char *key, const char *value, fr_error *err)
{
    char *v = fr_strdup(value);
    FR_CHECK(v != NULL, FR_ENOMEM, err, "out of memory setting config key %s", key);
    fr_config_item *e = fr_config_lookup(c, key);
    if (e) {
        fr_free(e->value);
        e->value = v;
        return FR_OK;
    }
    if (c->count == c->cap) {
        if (c->cap >= FR_CONFIG_ENTRIES_MAX) {
            fr_free(v);
            return fr_fail(err, FR_ELIMIT, "configuration has more than %d keys",
                           FR_CONFIG_ENTRIES_MAX);
        }
        size_t cap = c->cap ? c->cap * 2 : 16;
        fr_config_item *n = fr_realloc(c->entries, cap * sizeof *n);
        if (!n) {
            fr_free(v);
            return fr_fail(err, FR_ENOMEM, "out of memory setting config key %s", key);
        }
        c->entries = n;
        c->cap = cap;
    }
    char *k = fr_strdup(key);
    if (!k) {
        fr_free(v);
        return fr_fail(err, FR_ENOMEM, "out of memory setting config key %s", key);
    }
    c->entries[c->count].key = k;
    c->entries[c->count].value = v;
    c->count++;
    return FR_OK;
}

const char *fr_config_get(const fr_config *c, const char *key)
{
    const fr_config_item *e = fr_config_lookup(c, key);
    return e ? e->value : NULL;
}

size_t fr_config_count(const fr_config *c)
{
    return c->count;
}

void fr_config_entry(const fr_config *c, size_t i, const char **key, const char **value)
{
    if (i >= c->count) {
        *key = NULL;
        *value = NULL;
        return;
    }
    *key = c->entries[i].key;
    *value = c->entries[i].value;
}

static bool fr_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* Trims [*b, *e) of surrounding whitespace. */
static void fr_trim(const char **b, const char **e)
{
    while (*b < *e && fr_is_space(**b)) (*b)++;
    while (*e > *b && fr_is_space((*e)[-1])) (*e)--;
}

/* Parses one line [b, e) (no newline) into the config. */
static int fr_config_parse_line(fr_config *c, const char *b, const char *e, const char *origin,
                                size_t lineno, fr_error *err)
{
    for (const char *p = b; p < e; p++) {
        if (*p == '#' && (p == b || fr_is_space(p[-1]))) {
            e = p;
            break;
        }
    }
    fr_trim(&b, &e);
    if (b == e) return FR_OK;
    FR_CHECK((size_t)(e - b) < FR_CONFIG_LINE_BYTES_MAX, FR_ELIMIT, err,
             "%s:%zu: line longer than %d bytes", origin, lineno, FR_CONFIG_LINE_BYTES_MAX);
    FR_CHECK(memchr(b, '\0', (size_t)(e - b)) == NULL, FR_EINVAL, err,
             "%s:%zu: line contains a NUL byte", origin, lineno);
    const char *colon = memchr(b, ':', (size_t)(e - b));
    FR_CHECK(colon != NULL, FR_EINVAL, err, "%s:%zu: expected 'key: value', got '%.*s'", origin,
             lineno, (int)(e - b > 60 ? 60 : e - b), b);
    const char *kb = b, *ke = colon, *vb = colon + 1, *ve = e;
    fr_trim(&kb, &ke);
    fr_trim(&vb, &ve);
    FR_CHECK(kb < ke, FR_EINVAL, err, "%s:%zu: empty key before ':'", origin, lineno);
    FR_CHECK(vb < ve, FR_EINVAL, err, "%s:%zu: key '%.*s' has no value", origin, lineno,
             (int)(ke - kb > 60 ? 60 : ke - kb), kb);
    char *key = fr_strndup(kb, (size_t)(ke - kb));
    char *value = fr_strndup(vb, (size_t)(ve - vb));
    int rc = FR_OK;
    if (!key || !value)
        rc = fr_fail(err, FR_ENOMEM, "%s:%zu: out of memory", origin, lineno);
    else if ((rc = fr_config_set(c, key, value, err)) < 0)
        fr_error_wrap(err, "%s:%zu", origin, lineno);
    fr_free(key);
    fr_free(value);
    return rc;
}

int fr_config_parse(fr_config *c, const char *text, size_t len, const char *origin, fr_error *err)
{
    if (!origin) origin = "config";
    const char *p = text, *end = text + len;
    size_t lineno = 0;
    while (p < end) {
        lineno++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        FR_TRY(fr_config_parse_line(c, p, le, origin, lineno, err));
        p = nl ? nl + 1 : end;
    }
    return FR_OK;
}
