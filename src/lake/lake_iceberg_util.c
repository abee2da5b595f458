/* lake_iceberg_util.c — small pieces the Iceberg files share: Iceberg's binary single-value
 * serialization of bounds (spec Appendix D), the partition grouping key, random UUIDs and
 * snapshot ids, local paths of file URIs, and a hash map from byte strings to int64.
 *
 * Invariants: a bound decoded here was checked to have exactly the width its type needs;
 * the map never holds two equal keys. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <sys/random.h>

#include "lake/lake_iceberg_int.h"

/* ---- bounds ---------------------------------------------------------------------------- */

static int put_le(fr_buf *out, uint64_t v, int width, fr_error *err)
{
    uint8_t b[8];
    for (int i = 0; i < width; i++) b[i] = (uint8_t)(v >> (8 * i));
    return fr_buf_append(out, b, (size_t)width, err);
}

/* The minimum two's-complement big-endian bytes of an unscaled decimal. */
static int put_decimal(fr_buf *out, fr_i128 d, fr_error *err)
{
    uint8_t b[16];
    unsigned __int128 u = (unsigned __int128)d;
    for (int i = 0; i < 16; i++) b[15 - i] = (uint8_t)(u >> (8 * i));
    int start = 0;
    /* Drop a leading byte while the next byte's sign bit still says the same sign. */
    while (start < 15 && ((b[start] == 0x00 && !(b[start + 1] & 0x80)) ||
                          (b[start] == 0xff && (b[start + 1] & 0x80))))
        start++;
    return fr_buf_append(out, b + start, (size_t)(16 - start), err);
}

/* The length of the longest UTF-8 prefix of p that has at most max bytes. */
static size_t utf8_prefix(const uint8_t *p, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t k = max;
    while (k > 0 && (p[k] & 0xc0) == 0x80) k--;
    return k;
}

int fr_ice_bound_encode(const fr_value *v, bool upper, fr_buf *out, bool *skip, fr_error *err)
{
    assert(!v->is_null);
    *skip = false;
    switch (v->type.id) {
    case FR_T_BOOLEAN: {
        uint8_t b = v->v.b ? 1 : 0;
        return fr_buf_append(out, &b, 1, err);
    }
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_DATE:
        return put_le(out, (uint64_t)(uint32_t)(int32_t)v->v.i, 4, err);
    case FR_T_BIGINT: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        return put_le(out, (uint64_t)v->v.i, 8, err);
    case FR_T_FLOAT: {
        float f = (float)v->v.f;
        if (isnan(f)) { *skip = true; return 0; } /* NaN is never a bound */
        uint32_t u;
        memcpy(&u, &f, 4);
        return put_le(out, u, 4, err);
    }
    case FR_T_DOUBLE: {
        double f = v->v.f;
        if (isnan(f)) { *skip = true; return 0; }
        uint64_t u;
        memcpy(&u, &f, 8);
        return put_le(out, u, 8, err);
    }
    case FR_T_DECIMAL:
        return put_decimal(out, v->v.d, err);
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: {
        size_t n = v->v.s.len;
        if (n > FR_ICE_BOUND_BYTES_MAX) {
            if (upper) { *skip = true; return 0; }
            n = v->type.id == FR_T_BYTES ? FR_ICE_BOUND_BYTES_MAX
                                         : utf8_prefix(v->v.s.ptr, n, FR_ICE_BOUND_BYTES_MAX);
        }
        return fr_buf_append(out, v->v.s.ptr, n, err);
    }
    }
    return fr_fail(err, FR_EINVAL, "no Iceberg bound for type %d", (int)v->type.id);
}

static int64_t get_le(const uint8_t *p, int width)
{
    uint64_t v = 0;
    for (int i = 0; i < width; i++) v |= (uint64_t)p[i] << (8 * i);
    if (width == 4) return (int32_t)(uint32_t)v;
    return (int64_t)v;
}

int fr_ice_bound_decode(const uint8_t *p, size_t n, const fr_type *t, fr_value *out,
                        fr_error *err)
{
    fr_type vt = *t;
    switch (t->id) {
    case FR_T_BOOLEAN:
        FR_CHECK(n == 1, FR_ECORRUPT, err, "a boolean bound of %zu bytes", n);
        *out = fr_value_bool(vt, p[0] != 0);
        return 0;
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_DATE: {
        FR_CHECK(n == 4, FR_ECORRUPT, err, "an int bound of %zu bytes", n);
        int64_t i = get_le(p, 4);
        int64_t lim = t->id == FR_T_TINYINT ? 128 : t->id == FR_T_SMALLINT ? 32768 : 0;
        /* A bound beyond a narrow column's range still orders right: clamp it. */
        if (lim && i >= lim) i = lim - 1;
        if (lim && i < -lim) i = -lim;
        *out = fr_value_int(vt, i);
        return 0;
    }
    case FR_T_BIGINT: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        FR_CHECK(n == 8, FR_ECORRUPT, err, "a long bound of %zu bytes", n);
        *out = fr_value_int(vt, get_le(p, 8));
        return 0;
    case FR_T_FLOAT: {
        FR_CHECK(n == 4, FR_ECORRUPT, err, "a float bound of %zu bytes", n);
        uint32_t u = (uint32_t)get_le(p, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = fr_value_double(vt, f);
        return 0;
    }
    case FR_T_DOUBLE: {
        FR_CHECK(n == 8, FR_ECORRUPT, err, "a double bound of %zu bytes", n);
        uint64_t u = (uint64_t)get_le(p, 8);
        double f;
        memcpy(&f, &u, 8);
        *out = fr_value_double(vt, f);
        return 0;
    }
    case FR_T_DECIMAL: {
        FR_CHECK(n >= 1 && n <= 16, FR_ECORRUPT, err, "a decimal bound of %zu bytes", n);
        unsigned __int128 u = (p[0] & 0x80) ? ~(unsigned __int128)0 : 0;
        for (size_t i = 0; i < n; i++) u = (u << 8) | p[i];
        *out = fr_value_decimal(vt, (fr_i128)u);
        return 0;
    }
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES:
        *out = fr_value_str(vt, p, n);
        return 0;
    }
    return fr_fail(err, FR_ECORRUPT, "no Iceberg bound for type %d", (int)t->id);
}

/* ---- partition keys -------------------------------------------------------------------- */

int fr_ice_part_key(const fr_value *vals, int n, fr_buf *out, fr_error *err)
{
    for (int i = 0; i < n; i++) {
        const fr_value *v = &vals[i];
        uint8_t tag = v->is_null ? 0 : 1;
        FR_TRY(fr_buf_append(out, &tag, 1, err));
        if (v->is_null) continue;
        switch (v->type.id) {
        case FR_T_BOOLEAN: {
            uint8_t b = v->v.b;
            FR_TRY(fr_buf_append(out, &b, 1, err));
            break;
        }
        case FR_T_FLOAT: case FR_T_DOUBLE:
            FR_TRY(fr_buf_append(out, &v->v.f, sizeof v->v.f, err));
            break;
        case FR_T_DECIMAL:
            FR_TRY(fr_buf_append(out, &v->v.d, sizeof v->v.d, err));
            break;
        case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: {
            uint8_t len[10];
            size_t k = fr_varint_put(len, v->v.s.len);
            FR_TRY(fr_buf_append(out, len, k, err));
            FR_TRY(fr_buf_append(out, v->v.s.ptr, v->v.s.len, err));
            break;
        }
        default:
            FR_TRY(fr_buf_append(out, &v->v.i, sizeof v->v.i, err));
        }
    }
    return 0;
}

/* ---- ids ------------------------------------------------------------------------------- */

static int random_bytes(void *p, size_t n, fr_error *err)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = getrandom(b, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "getrandom");
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

int fr_ice_uuid(char *out, fr_error *err)
{
    uint8_t b[16];
    FR_TRY(random_bytes(b, sizeof b, err));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[k++] = '-';
        out[k++] = hex[b[i] >> 4];
        out[k++] = hex[b[i] & 15];
    }
    out[k] = 0;
    return 0;
}

int fr_ice_random_id(int64_t *out, fr_error *err)
{
    uint64_t v;
    do {
        FR_TRY(random_bytes(&v, sizeof v, err));
        v &= INT64_MAX;
    } while (v == 0);
    *out = (int64_t)v;
    return 0;
}

const char *fr_ice_local_path(const char *uri)
{
    if (strncmp(uri, "file://", 7) == 0) return uri[7] == '/' ? uri + 7 : NULL;
    if (strncmp(uri, "file:", 5) == 0) return uri[5] == '/' ? uri + 5 : NULL;
    if (uri[0] == '/') return uri;
    return NULL;
}

/* ---- the byte-key map ------------------------------------------------------------------ */

typedef struct ice_slot {
    const uint8_t *key; /* NULL: empty */
    size_t len;
    uint32_t hash;
    int64_t value;
} ice_slot;

struct fr_ice_map {
    fr_arena *arena;
    ice_slot *slots;
    size_t cap; /* a power of two */
    size_t count;
};

fr_ice_map *fr_ice_map_new(void)
{
    fr_ice_map *m = fr_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->arena = fr_arena_new(64 << 10);
    m->cap = 64;
    m->slots = fr_calloc(m->cap, sizeof *m->slots);
    if (!m->arena || !m->slots) {
        fr_ice_map_free(m);
        return NULL;
    }
    return m;
}

void fr_ice_map_free(fr_ice_map *m)
{
    if (!m) return;
    fr_arena_free(m->arena);
    fr_free(m->slots);
    fr_free(m);
}

static ice_slot *map_find(ice_slot *slots, size_t cap, const void *key, size_t len,
                          uint32_t h)
{
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        ice_slot *s = &slots[i];
        if (!s->key) return s;
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
    }
}

static int map_grow(fr_ice_map *m, fr_error *err)
{
    size_t cap = m->cap * 2;
    ice_slot *slots = fr_calloc(cap, sizeof *slots);
    if (!slots) return fr_fail(err, FR_ENOMEM, "out of memory growing a key map");
    for (size_t i = 0; i < m->cap; i++) {
        ice_slot *s = &m->slots[i];
        if (s->key) *map_find(slots, cap, s->key, s->len, s->hash) = *s;
    }
    fr_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int fr_ice_map_put(fr_ice_map *m, const void *key, size_t len, int64_t init, int64_t **slot,
                   fr_error *err)
{
    static const uint8_t empty[1];
    if (!key) key = empty; /* an empty fr_buf has no data */
    if ((m->count + 1) * 4 > m->cap * 3) FR_TRY(map_grow(m, err));
    uint32_t h = fr_murmur3_32(key, len, 0x1ce);
    ice_slot *s = map_find(m->slots, m->cap, key, len, h);
    if (!s->key) {
        uint8_t *k = fr_arena_alloc(m->arena, len ? len : 1);
        if (!k) return fr_fail(err, FR_ENOMEM, "out of memory in a key map");
        if (len) memcpy(k, key, len);
        s->key = k;
        s->len = len;
        s->hash = h;
        s->value = init;
        m->count++;
    }
    *slot = &s->value;
    return 0;
}

int64_t *fr_ice_map_get(const fr_ice_map *m, const void *key, size_t len)
{
    static const uint8_t empty[1];
    if (!key) key = empty;
    uint32_t h = fr_murmur3_32(key, len, 0x1ce);
    ice_slot *s = map_find(m->slots, m->cap, key, len, h);
    return s->key ? &s->value : NULL;
}

size_t fr_ice_map_count(const fr_ice_map *m) { return m->count; }
