/* arrow_flatbuf.c — the FlatBuffers writer and checked reader declared in arrow_flatbuf.h.
 * Layout rules followed (FlatBuffers binary format): a table starts with an int32 soffset
 * to its vtable (vtable = table - soffset); a vtable is uint16 vtable size, uint16 table
 * size, then one uint16 offset per field slot (0 = absent); offsets to tables, vectors and
 * strings are uint32 and relative to where they are stored; vectors and strings start with
 * a uint32 count, strings end with a NUL. */
#include <assert.h>

#include "arrow/arrow_flatbuf.h"

/* ---- writer ------------------------------------------------------------------------------ */

static size_t fr_fbw_pos(const fr_fbw *w) { return w->buf->len - w->base; }

static uint8_t *fr_fbw_grow(fr_fbw *w, size_t n)
{
    if (w->rc < 0) return NULL;
    w->rc = fr_buf_append_zeros(w->buf, n, w->err);
    return w->rc < 0 ? NULL : w->buf->data + w->buf->len - n;
}

/* Pads with zeros until (position + skew) is a multiple of align. */
static void fr_fbw_align(fr_fbw *w, size_t align, size_t skew)
{
    size_t pad = (align - (fr_fbw_pos(w) + skew) % align) % align;
    if (pad) fr_fbw_grow(w, pad);
}

void fr_fbw_init(fr_fbw *w, fr_buf *buf, fr_error *err)
{
    w->buf = buf;
    w->base = buf->len;
    w->rc = 0;
    w->err = err;
    fr_fbw_grow(w, 4);
}

size_t fr_fbw_table(fr_fbw *w, const fr_fbf *fields, int n, size_t *at)
{
    assert(n <= FR_FB_TABLE_FIELDS_MAX);
    for (int i = 0; at && i < n; i++) at[i] = 0;
    int nslots = 0;
    bool has8 = false;
    for (int i = 0; i < n; i++) {
        if (fields[i].slot + 1 > nslots) nslots = fields[i].slot + 1;
        if (fields[i].size == 8) has8 = true;
    }
    /* Lay fields out by decreasing size after the soffset, so each is naturally aligned when
     * the table starts 4 bytes before an 8-byte boundary. */
    uint16_t field_off[FR_FB_TABLE_FIELDS_MAX];
    uint16_t off = 4;
    static const int sizes[] = {8, 4, 2, 1};
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < n; i++) {
            int size = fields[i].size ? fields[i].size : 4;
            if (size != sizes[s]) continue;
            field_off[i] = off;
            off = (uint16_t)(off + size);
        }
    }
    uint16_t t_size = off;
    uint16_t vt_size = (uint16_t)(4 + 2 * nslots);

    fr_fbw_align(w, 2, 0);
    size_t vt_pos = fr_fbw_pos(w);
    uint8_t *vt = fr_fbw_grow(w, vt_size);
    if (!vt) return 0;
    fr_put_u16le(vt, vt_size);
    fr_put_u16le(vt + 2, t_size);
    for (int i = 0; i < n; i++) fr_put_u16le(vt + 4 + 2 * fields[i].slot, field_off[i]);

    fr_fbw_align(w, has8 ? 8 : 4, has8 ? 4 : 0);
    size_t t_pos = fr_fbw_pos(w);
    uint8_t *t = fr_fbw_grow(w, t_size);
    if (!t) return 0;
    fr_put_u32le(t, (uint32_t)(t_pos - vt_pos));
    for (int i = 0; i < n; i++) {
        uint64_t v = fields[i].value;
        switch (fields[i].size) {
        case 1: t[field_off[i]] = (uint8_t)v; break;
        case 2: fr_put_u16le(t + field_off[i], (uint16_t)v); break;
        case 4: fr_put_u32le(t + field_off[i], (uint32_t)v); break;
        case 8: fr_put_u64le(t + field_off[i], v); break;
        default: break; /* an offset, patched later */
        }
        if (at) at[i] = t_pos + field_off[i];
    }
    return t_pos;
}

size_t fr_fbw_vector(fr_fbw *w, size_t count, size_t elem, size_t align, const void *data)
{
    if (align < 4) align = 4;
    fr_fbw_align(w, 4, 0);
    fr_fbw_align(w, align, 4);
    size_t pos = fr_fbw_pos(w);
    if (count > UINT32_MAX || (elem && count > (SIZE_MAX - 4) / elem)) {
        if (w->rc == 0) w->rc = fr_fail(w->err, FR_ELIMIT, "flatbuffer vector of %zu elements is too long", count);
        return 0;
    }
    uint8_t *v = fr_fbw_grow(w, 4 + count * elem);
    if (!v) return 0;
    fr_put_u32le(v, (uint32_t)count);
    if (data && count) memcpy(v + 4, data, count * elem);
    return pos;
}

size_t fr_fbw_string(fr_fbw *w, const char *s, size_t len)
{
    fr_fbw_align(w, 4, 0);
    size_t pos = fr_fbw_pos(w);
    uint8_t *v = fr_fbw_grow(w, 4 + len + 1);
    if (!v) return 0;
    fr_put_u32le(v, (uint32_t)len);
    if (len) memcpy(v + 4, s, len);
    return pos;
}

void fr_fbw_patch(fr_fbw *w, size_t at, size_t target)
{
    if (w->rc < 0) return;
    assert(target > at);
    fr_put_u32le(w->buf->data + w->base + at, (uint32_t)(target - at));
}

int fr_fbw_finish(fr_fbw *w)
{
    fr_fbw_align(w, 8, 0);
    return w->rc;
}

/* ---- reader ------------------------------------------------------------------------------ */

static int fr_fbr_table_at(const uint8_t *p, size_t n, size_t pos, fr_fbt *t, fr_error *err)
{
    FR_CHECK(n >= 4 && pos <= n - 4, FR_ECORRUPT, err,
             "flatbuffer table at %zu is outside the %zu-byte metadata", pos, n);
    int64_t vt = (int64_t)pos - (int32_t)fr_get_u32le(p + pos);
    FR_CHECK(vt >= 0 && (uint64_t)vt <= n - 4, FR_ECORRUPT, err,
             "flatbuffer vtable of the table at %zu is outside the metadata", pos);
    uint16_t vt_size = fr_get_u16le(p + vt), t_size = fr_get_u16le(p + vt + 2);
    FR_CHECK(vt_size >= 4 && (vt_size & 1) == 0 && (uint64_t)vt + vt_size <= n, FR_ECORRUPT, err,
             "flatbuffer vtable at %lld has a bad size %u", (long long)vt, vt_size);
    FR_CHECK(t_size >= 4 && pos + t_size <= n, FR_ECORRUPT, err,
             "flatbuffer table at %zu of %u bytes is outside the metadata", pos, t_size);
    *t = (fr_fbt){.p = p, .n = n, .pos = pos, .vt = (size_t)vt, .vt_size = vt_size, .t_size = t_size};
    return 0;
}

int fr_fbr_root(const uint8_t *p, size_t n, fr_fbt *root, fr_error *err)
{
    FR_CHECK(n >= 8, FR_ECORRUPT, err, "flatbuffer metadata of %zu bytes is too short", n);
    return fr_fbr_table_at(p, n, fr_get_u32le(p), root, err);
}

/* The offset of a field in its table, 0 when absent; checks that size bytes fit. */
static int fr_fbt_field(const fr_fbt *t, int slot, size_t size, uint16_t *off, fr_error *err)
{
    *off = 0;
    size_t entry = 4 + 2 * (size_t)slot;
    if (entry + 2 > t->vt_size) return 0;
    uint16_t o = fr_get_u16le(t->p + t->vt + entry);
    if (o == 0) return 0;
    FR_CHECK(o >= 4 && o + size <= t->t_size, FR_ECORRUPT, err,
             "flatbuffer field %d of the table at %zu lies outside the table", slot, t->pos);
    *off = o;
    return 0;
}

int fr_fbt_scalar(const fr_fbt *t, int slot, int size, uint64_t def, uint64_t *out, fr_error *err)
{
    uint16_t off;
    FR_TRY(fr_fbt_field(t, slot, (size_t)size, &off, err));
    if (!off) {
        *out = def;
        return 0;
    }
    const uint8_t *q = t->p + t->pos + off;
    switch (size) {
    case 1: *out = q[0]; break;
    case 2: *out = fr_get_u16le(q); break;
    case 4: *out = fr_get_u32le(q); break;
    default: *out = fr_get_u64le(q); break;
    }
    return 0;
}

/* Follows the uoffset stored at absolute position `at` to a position with 4 bytes. */
static int fr_fbt_follow(const fr_fbt *t, size_t at, size_t *target, fr_error *err)
{
    size_t to = at + fr_get_u32le(t->p + at);
    *target = 0;
    FR_CHECK(to >= at && t->n >= 4 && to <= t->n - 4, FR_ECORRUPT, err,
             "flatbuffer offset at %zu points outside the metadata", at);
    *target = to;
    return 0;
}

int fr_fbt_table(const fr_fbt *t, int slot, fr_fbt *child, bool *present, fr_error *err)
{
    uint16_t off;
    *present = false;
    FR_TRY(fr_fbt_field(t, slot, 4, &off, err));
    if (!off) return 0;
    size_t to = 0;
    FR_TRY(fr_fbt_follow(t, t->pos + off, &to, err));
    FR_TRY(fr_fbr_table_at(t->p, t->n, to, child, err));
    *present = true;
    return 0;
}

int fr_fbt_vector(const fr_fbt *t, int slot, size_t elem, const uint8_t **data, uint32_t *count,
                  fr_error *err)
{
    uint16_t off;
    *data = NULL;
    *count = 0;
    FR_TRY(fr_fbt_field(t, slot, 4, &off, err));
    if (!off) return 0;
    size_t to = 0;
    FR_TRY(fr_fbt_follow(t, t->pos + off, &to, err));
    uint32_t c = fr_get_u32le(t->p + to);
    FR_CHECK((uint64_t)c * elem <= t->n - to - 4, FR_ECORRUPT, err,
             "flatbuffer vector of %u elements at %zu runs past the metadata", c, to);
    *data = t->p + to + 4;
    *count = c;
    return 0;
}

int fr_fbt_vector_table(const fr_fbt *t, const uint8_t *data, uint32_t i, fr_fbt *child,
                        fr_error *err)
{
    size_t at = (size_t)(data - t->p) + 4 * (size_t)i, to = 0;
    FR_TRY(fr_fbt_follow(t, at, &to, err));
    return fr_fbr_table_at(t->p, t->n, to, child, err);
}

int fr_fbt_string(const fr_fbt *t, int slot, const char **s, size_t *len, bool *present,
                  fr_error *err)
{
    const uint8_t *data;
    uint32_t count;
    uint16_t off;
    *present = false;
    FR_TRY(fr_fbt_field(t, slot, 4, &off, err));
    if (!off) return 0;
    FR_TRY(fr_fbt_vector(t, slot, 1, &data, &count, err));
    *s = (const char *)data;
    *len = count;
    *present = true;
    return 0;
}
