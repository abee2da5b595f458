/* rpc_wire.c — the hand-written protobuf wire reading shared by rpc_requests.c and
 * rpc_fetch.c (rpc_wire.h). */
#include "rpc/rpc_wire.h"

fr_wire fr_wire_start(const uint8_t *p, size_t n, const char *what, fr_wire_budget *b)
{
    b->used = 0;
    b->limit = fr_rpc_unpack_limit(n);
    return (fr_wire){p, n, 0, what, b};
}

/* Counts size more bytes against the budget. */
static int charge(const fr_wire *w, size_t size, fr_error *err)
{
    fr_wire_budget *b = w->budget;
    FR_CHECK(size <= b->limit - b->used, FR_ELIMIT, err,
             "%s: unpacking needs more than %zu bytes of memory", w->what, b->limit);
    b->used += size;
    return 0;
}

int fr_wire_alloc(const fr_wire *w, size_t size, void *out, fr_error *err)
{
    FR_TRY(charge(w, size, err));
    void *p = fr_malloc(size ? size : 1);
    FR_CHECK(p, FR_ENOMEM, err, "%s: out of memory", w->what);
    memcpy(out, &p, sizeof p); /* out is the address of some pointer */
    return 0;
}

int fr_wire_corrupt(const fr_wire *w, const char *why, fr_error *err)
{
    return fr_fail(err, FR_ECORRUPT, "%s: malformed protobuf body (%s at byte %zu of %zu)",
                   w->what, why, w->at, w->n);
}

int fr_wire_varint(fr_wire *w, uint64_t *v, fr_error *err)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (w->at >= w->n) return fr_wire_corrupt(w, "truncated varint", err);
        uint8_t b = w->p[w->at++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return fr_wire_corrupt(w, "varint over 10 bytes", err);
}

/* As protobuf-c does (and the two must agree on what they take), a key has at most 5 bytes
 * and its field number keeps the low 32 bits; numbers above the specification's 2^29 - 1
 * are unknown fields, skipped like any other. */
int fr_wire_key(fr_wire *w, uint32_t *field, int *type, fr_error *err)
{
    size_t start = w->at;
    uint64_t key;
    FR_TRY(fr_wire_varint(w, &key, err));
    if (w->at - start > 5) return fr_wire_corrupt(w, "field key over 5 bytes", err);
    *type = (int)(key & 7);
    FR_CHECK((uint32_t)(key >> 3) != 0, FR_ECORRUPT, err,
             "%s: malformed protobuf body (field number 0 at byte %zu)", w->what, start);
    *field = (uint32_t)(key >> 3);
    return 0;
}

/* As protobuf-c reads it: a length prefix of at most 5 bytes, its value kept to 32 bits. */
int fr_wire_len(fr_wire *w, fr_wire *sub, fr_error *err)
{
    size_t start = w->at;
    uint64_t v;
    FR_TRY(fr_wire_varint(w, &v, err));
    if (w->at - start > 5) return fr_wire_corrupt(w, "length prefix over 5 bytes", err);
    /* protobuf-c refuses lengths over INT_MAX (a 5-byte prefix holds up to 2^35 - 1). */
    if (v > INT32_MAX) return fr_wire_corrupt(w, "length over 2 GiB", err);
    size_t len = (size_t)v;
    if (len > w->n - w->at) return fr_wire_corrupt(w, "length past the end", err);
    *sub = (fr_wire){w->p + w->at, len, 0, w->what, w->budget};
    w->at += len;
    return 0;
}

int fr_wire_skip(fr_wire *w, int type, fr_error *err)
{
    uint64_t v;
    fr_wire sub;
    switch (type) {
    case FR_WT_VARINT: return fr_wire_varint(w, &v, err);
    case FR_WT_LEN: return fr_wire_len(w, &sub, err);
    case FR_WT_I64:
    case FR_WT_I32: {
        size_t k = type == FR_WT_I64 ? 8 : 4;
        if (k > w->n - w->at) return fr_wire_corrupt(w, "truncated fixed-width value", err);
        w->at += k;
        return 0;
    }
    default: return fr_wire_corrupt(w, "unsupported wire type", err);
    }
}

int fr_wire_want(const fr_wire *w, int type, int want, fr_error *err)
{
    return type == want ? 0 : fr_wire_corrupt(w, "a field with the wrong wire type", err);
}

int fr_wire_int64(fr_wire *w, int type, int64_t *v, fr_error *err)
{
    uint64_t u;
    FR_TRY(fr_wire_want(w, type, FR_WT_VARINT, err));
    FR_TRY(fr_wire_varint(w, &u, err));
    *v = (int64_t)u;
    return 0;
}

int fr_wire_int32(fr_wire *w, int type, int32_t *v, fr_error *err)
{
    uint64_t u;
    FR_TRY(fr_wire_want(w, type, FR_WT_VARINT, err));
    FR_TRY(fr_wire_varint(w, &u, err));
    *v = (int32_t)(uint32_t)u;
    return 0;
}

/* Room for one more element of elem bytes in the repeated field's array *items of n
 * (capacity *cap), doubling it and counting the growth against the budget. */
static int grow_array(const fr_wire *w, void *items, size_t n, size_t *cap, size_t elem,
                      fr_error *err)
{
    if (n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 4;
    FR_TRY(charge(w, (ncap - *cap) * elem, err));
    void *old;
    memcpy(&old, items, sizeof old); /* items is the address of some pointer */
    void *na = fr_realloc(old, ncap * elem);
    FR_CHECK(na, FR_ENOMEM, err, "%s: out of memory", w->what);
    memcpy(items, &na, sizeof na);
    *cap = ncap;
    return 0;
}

/* Appends one element to a repeated int32 array, as protobuf-c keeps it (the low 32 bits). */
static int push_int32(const fr_wire *w, uint64_t u, int32_t **items, size_t *n, size_t *cap,
                      fr_error *err)
{
    FR_TRY(grow_array(w, items, *n, cap, sizeof **items, err));
    (*items)[(*n)++] = (int32_t)(uint32_t)u;
    return 0;
}

int fr_wire_int32s(fr_wire *w, int type, int32_t **items, size_t *n, size_t *cap,
                   fr_error *err)
{
    uint64_t u;
    if (type == FR_WT_VARINT) {
        FR_TRY(fr_wire_varint(w, &u, err));
        return push_int32(w, u, items, n, cap, err);
    }
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    while (sub.at < sub.n) {
        FR_TRY(fr_wire_varint(&sub, &u, err));
        FR_TRY(push_int32(&sub, u, items, n, cap, err));
    }
    return 0;
}

/* A bool as protobuf-c reads it from the bytes of its value [from, w->at), whatever their
 * wire type (a varint, 4 or 8 fixed bytes, or for a single bool even a length prefix and
 * what follows it): true when any byte has a bit set below its top one. */
static bool bool_of(const fr_wire *w, size_t from)
{
    bool v = false;
    for (size_t i = from; i < w->at; i++) v |= (w->p[i] & 0x7f) != 0;
    return v;
}

static int push_bool(const fr_wire *w, size_t from, protobuf_c_boolean **items, size_t *n,
                     size_t *cap, fr_error *err)
{
    FR_TRY(grow_array(w, items, *n, cap, sizeof **items, err));
    (*items)[(*n)++] = bool_of(w, from);
    return 0;
}

int fr_wire_bool(fr_wire *w, int type, protobuf_c_boolean *v, fr_error *err)
{
    size_t from = w->at;
    FR_TRY(fr_wire_skip(w, type, err));
    *v = bool_of(w, from);
    return 0;
}

int fr_wire_bools(fr_wire *w, int type, protobuf_c_boolean **items, size_t *n, size_t *cap,
                  fr_error *err)
{
    uint64_t u;
    size_t from = w->at;
    if (type != FR_WT_LEN) {
        FR_TRY(fr_wire_skip(w, type, err));
        return push_bool(w, from, items, n, cap, err);
    }
    fr_wire sub;
    FR_TRY(fr_wire_len(w, &sub, err));
    while (sub.at < sub.n) {
        from = sub.at;
        FR_TRY(fr_wire_varint(&sub, &u, err));
        FR_TRY(push_bool(&sub, from, items, n, cap, err));
    }
    return 0;
}

int fr_wire_string(fr_wire *w, int type, char **s, fr_error *err)
{
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    char *copy;
    FR_TRY(fr_wire_alloc(w, sub.n + 1, &copy, err));
    memcpy(copy, sub.p, sub.n);
    copy[sub.n] = '\0';
    /* An unset string is protobuf-c's shared empty string, not ours to free. */
    if (*s != protobuf_c_empty_string) fr_free(*s);
    *s = copy;
    return 0;
}

int fr_wire_bytes_in_place(fr_wire *w, int type, ProtobufCBinaryData *out, fr_error *err)
{
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    out->data = sub.n ? (uint8_t *)sub.p : NULL;
    out->len = sub.n;
    return 0;
}

static int path_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    Firth__TablePath *path = m;
    if (field == 1) return fr_wire_string(w, type, &path->database, err);
    if (field == 2) return fr_wire_string(w, type, &path->table, err);
    return FR_WIRE_UNKNOWN;
}

int fr_wire_path(fr_wire *w, int type, Firth__TablePath **path, fr_error *err)
{
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    if (!*path) {
        FR_TRY(fr_wire_alloc(w, sizeof **path, path, err));
        firth__table_path__init(*path);
    }
    return fr_wire_fields(sub, path_field, *path, err);
}

int fr_wire_element(fr_wire *w, int type, const ProtobufCMessageDescriptor *d, void ***items,
                    size_t *n, size_t *cap, fr_wire *sub, void **out, fr_error *err)
{
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, sub, err));
    FR_TRY(grow_array(w, items, *n, cap, sizeof(void *), err));
    void *m;
    FR_TRY(fr_wire_alloc(w, d->sizeof_message, &m, err));
    protobuf_c_message_init(d, m);
    (*items)[(*n)++] = m;
    *out = m;
    return 0;
}

int fr_wire_fields(fr_wire w, fr_wire_field_fn fn, void *m, fr_error *err)
{
    while (w.at < w.n) {
        uint32_t field;
        int type;
        FR_TRY(fr_wire_key(&w, &field, &type, err));
        int rc = fn(&w, field, type, m, err);
        if (rc == FR_WIRE_UNKNOWN) rc = fr_wire_skip(&w, type, err);
        if (rc < 0) return rc;
    }
    return 0;
}
