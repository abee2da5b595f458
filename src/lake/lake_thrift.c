/* lake_thrift.c — the Thrift compact protocol writer and reader (lake_thrift.h).
 *
 * Encoding, from the Thrift compact protocol specification: a field header is one byte
 * (field-id delta 1..15 in the high nibble, type in the low nibble) or, for larger or
 * negative deltas, the type byte followed by the zigzag varint id; integers are zigzag
 * varints; binary is a varint length and the bytes; a list header is one byte (size < 15 in
 * the high nibble, element type in the low one) or 0xF? followed by a varint size; a bool
 * field carries its value in the type (1 true, 2 false), a bool list element is one byte. */
#include "lake/lake_thrift.h"

/* ---- writer ------------------------------------------------------------------------------ */

static void tw_byte(fr_thrift_w *w, uint8_t b)
{
    if (w->rc == 0) w->rc = fr_buf_append(w->out, &b, 1, w->err);
}

static void tw_varint(fr_thrift_w *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = fr_varint_put(tmp, v);
    if (w->rc == 0) w->rc = fr_buf_append(w->out, tmp, n, w->err);
}

static void tw_header(fr_thrift_w *w, int16_t id, int type)
{
    int16_t last = w->last[w->depth];
    if (id > last && id - last <= 15) {
        tw_byte(w, (uint8_t)(((id - last) << 4) | type));
    } else {
        tw_byte(w, (uint8_t)type);
        tw_varint(w, fr_zigzag_enc(id));
    }
    w->last[w->depth] = id;
}

void fr_thrift_w_init(fr_thrift_w *w, fr_buf *out, fr_error *err)
{
    w->out = out;
    w->depth = 0;
    w->last[0] = 0;
    w->rc = 0;
    w->err = err;
}

int fr_thrift_w_finish(fr_thrift_w *w)
{
    if (w->rc == 0 && w->depth != 0)
        w->rc = fr_fail(w->err, FR_EINVAL, "thrift writer: %d structs left open", w->depth);
    tw_byte(w, FR_TT_STOP);
    return w->rc;
}

void fr_thrift_w_i32(fr_thrift_w *w, int16_t id, int32_t v)
{
    tw_header(w, id, FR_TT_I32);
    tw_varint(w, fr_zigzag_enc(v));
}

void fr_thrift_w_i64(fr_thrift_w *w, int16_t id, int64_t v)
{
    tw_header(w, id, FR_TT_I64);
    tw_varint(w, fr_zigzag_enc(v));
}

void fr_thrift_w_i8(fr_thrift_w *w, int16_t id, int8_t v)
{
    tw_header(w, id, FR_TT_BYTE);
    tw_byte(w, (uint8_t)v);
}

void fr_thrift_w_i16(fr_thrift_w *w, int16_t id, int16_t v)
{
    tw_header(w, id, FR_TT_I16);
    tw_varint(w, fr_zigzag_enc(v));
}

void fr_thrift_w_bool(fr_thrift_w *w, int16_t id, bool v)
{
    tw_header(w, id, v ? FR_TT_TRUE : FR_TT_FALSE);
}

void fr_thrift_w_elem_binary(fr_thrift_w *w, const void *p, size_t n)
{
    tw_varint(w, n);
    if (w->rc == 0 && n) w->rc = fr_buf_append(w->out, p, n, w->err);
}

void fr_thrift_w_binary(fr_thrift_w *w, int16_t id, const void *p, size_t n)
{
    tw_header(w, id, FR_TT_BINARY);
    fr_thrift_w_elem_binary(w, p, n);
}

void fr_thrift_w_string(fr_thrift_w *w, int16_t id, const char *s)
{
    fr_thrift_w_binary(w, id, s, strlen(s));
}

void fr_thrift_w_elem_struct_begin(fr_thrift_w *w)
{
    if (w->depth >= FR_THRIFT_DEPTH_MAX) {
        if (w->rc == 0) w->rc = fr_fail(w->err, FR_EINVAL, "thrift writer: nesting too deep");
        return;
    }
    w->last[++w->depth] = 0;
}

void fr_thrift_w_struct_begin(fr_thrift_w *w, int16_t id)
{
    tw_header(w, id, FR_TT_STRUCT);
    fr_thrift_w_elem_struct_begin(w);
}

void fr_thrift_w_struct_end(fr_thrift_w *w)
{
    tw_byte(w, FR_TT_STOP);
    if (w->depth > 0) w->depth--;
}

void fr_thrift_w_list_begin(fr_thrift_w *w, int16_t id, int elem, int64_t n)
{
    tw_header(w, id, FR_TT_LIST);
    if (n < 15) {
        tw_byte(w, (uint8_t)((n << 4) | elem));
    } else {
        tw_byte(w, (uint8_t)(0xF0 | elem));
        tw_varint(w, (uint64_t)n);
    }
}

void fr_thrift_w_elem_i32(fr_thrift_w *w, int32_t v) { tw_varint(w, fr_zigzag_enc(v)); }
void fr_thrift_w_elem_i64(fr_thrift_w *w, int64_t v) { tw_varint(w, fr_zigzag_enc(v)); }

/* ---- reader ------------------------------------------------------------------------------ */

void fr_thrift_r_init(fr_thrift_r *r, const uint8_t *p, size_t n, const char *what,
                      fr_error *err)
{
    r->start = r->p = p;
    r->end = p + n;
    r->depth = 0;
    r->what = what;
    r->err = err;
}

static int tr_bad(fr_thrift_r *r, const char *why)
{
    return fr_fail(r->err, FR_ECORRUPT, "%s: %s at byte %zu", r->what, why, fr_thrift_r_used(r));
}

static int tr_varint(fr_thrift_r *r, uint64_t *v)
{
    size_t used = fr_varint_get(r->p, (size_t)(r->end - r->p), v);
    if (used == 0) return tr_bad(r, "truncated or overlong varint");
    r->p += used;
    return 0;
}

int fr_thrift_r_struct_begin(fr_thrift_r *r, int16_t *last_id)
{
    if (r->depth >= FR_THRIFT_DEPTH_MAX) return tr_bad(r, "structs nested too deep");
    r->depth++;
    *last_id = 0;
    return 0;
}

void fr_thrift_r_struct_end(fr_thrift_r *r)
{
    if (r->depth > 0) r->depth--;
}

int fr_thrift_r_field(fr_thrift_r *r, int16_t *last_id, int *type, int16_t *id)
{
    if (r->p >= r->end) return tr_bad(r, "truncated struct");
    uint8_t b = *r->p++;
    *type = b & 0x0F;
    if (*type == FR_TT_STOP) {
        if (b != 0) return tr_bad(r, "bad field header");
        *id = 0;
        return 0;
    }
    if (*type > FR_TT_STRUCT) return tr_bad(r, "unknown field type");
    int delta = b >> 4;
    if (delta) {
        int32_t nid = *last_id + delta;
        if (nid > INT16_MAX) return tr_bad(r, "field id out of range");
        *id = (int16_t)nid;
    } else {
        uint64_t u;
        FR_TRY(tr_varint(r, &u));
        int64_t v = fr_zigzag_dec(u);
        if (v < INT16_MIN || v > INT16_MAX) return tr_bad(r, "field id out of range");
        *id = (int16_t)v;
    }
    *last_id = *id;
    return 0;
}

int fr_thrift_r_int(fr_thrift_r *r, int type, int64_t *v)
{
    if (type == FR_TT_BYTE) {
        if (r->p >= r->end) return tr_bad(r, "truncated byte");
        *v = (int8_t)*r->p++;
        return 0;
    }
    if (type != FR_TT_I16 && type != FR_TT_I32 && type != FR_TT_I64)
        return tr_bad(r, "integer expected");
    uint64_t u;
    FR_TRY(tr_varint(r, &u));
    *v = fr_zigzag_dec(u);
    return 0;
}

int fr_thrift_r_i32(fr_thrift_r *r, int type, int32_t *v)
{
    int64_t x;
    FR_TRY(fr_thrift_r_int(r, type, &x));
    if (x < INT32_MIN || x > INT32_MAX) return tr_bad(r, "32-bit integer out of range");
    *v = (int32_t)x;
    return 0;
}

int fr_thrift_r_bool(fr_thrift_r *r, int type, bool in_list, bool *v)
{
    if (in_list) {
        if (r->p >= r->end) return tr_bad(r, "truncated bool");
        uint8_t b = *r->p++;
        if (b != FR_TT_TRUE && b != FR_TT_FALSE && b != 0) return tr_bad(r, "bad bool");
        *v = b == FR_TT_TRUE;
        return 0;
    }
    if (type != FR_TT_TRUE && type != FR_TT_FALSE) return tr_bad(r, "bool expected");
    *v = type == FR_TT_TRUE;
    return 0;
}

int fr_thrift_r_binary(fr_thrift_r *r, int type, const uint8_t **p, size_t *n)
{
    if (type != FR_TT_BINARY) return tr_bad(r, "binary expected");
    uint64_t len;
    FR_TRY(tr_varint(r, &len));
    if (len > FR_THRIFT_BINARY_BYTES_MAX) return tr_bad(r, "binary longer than the limit");
    if (len > (uint64_t)(r->end - r->p)) return tr_bad(r, "binary runs past the end");
    *p = r->p;
    *n = (size_t)len;
    r->p += len;
    return 0;
}

int fr_thrift_r_list(fr_thrift_r *r, int type, int *elem, int32_t *n)
{
    if (type != FR_TT_LIST && type != FR_TT_SET) return tr_bad(r, "list expected");
    if (r->p >= r->end) return tr_bad(r, "truncated list header");
    uint8_t b = *r->p++;
    *elem = b & 0x0F;
    if (*elem == FR_TT_STOP || *elem > FR_TT_STRUCT) return tr_bad(r, "bad list element type");
    uint64_t size = b >> 4;
    if (size == 15) FR_TRY(tr_varint(r, &size));
    if (size > FR_THRIFT_LIST_MAX) return tr_bad(r, "list longer than the limit");
    if (size > (uint64_t)(r->end - r->p)) return tr_bad(r, "list runs past the end");
    *n = (int32_t)size;
    return 0;
}

int fr_thrift_r_skip(fr_thrift_r *r, int type, bool in_list)
{
    int64_t iv;
    bool bv;
    const uint8_t *p;
    size_t n;
    switch (type) {
    case FR_TT_TRUE:
    case FR_TT_FALSE:
        return fr_thrift_r_bool(r, type, in_list, &bv);
    case FR_TT_BYTE:
    case FR_TT_I16:
    case FR_TT_I32:
    case FR_TT_I64:
        return fr_thrift_r_int(r, type, &iv);
    case FR_TT_DOUBLE:
        if (r->end - r->p < 8) return tr_bad(r, "truncated double");
        r->p += 8;
        return 0;
    case FR_TT_BINARY:
        return fr_thrift_r_binary(r, type, &p, &n);
    case FR_TT_LIST:
    case FR_TT_SET: {
        int elem;
        int32_t cnt;
        FR_TRY(fr_thrift_r_list(r, type, &elem, &cnt));
        if (r->depth >= FR_THRIFT_DEPTH_MAX) return tr_bad(r, "lists nested too deep");
        r->depth++;
        for (int32_t i = 0; i < cnt; i++) {
            int rc = fr_thrift_r_skip(r, elem, true);
            if (rc < 0) return rc;
        }
        r->depth--;
        return 0;
    }
    case FR_TT_MAP: {
        uint64_t cnt;
        FR_TRY(tr_varint(r, &cnt));
        if (cnt == 0) return 0;
        if (cnt > FR_THRIFT_LIST_MAX || cnt > (uint64_t)(r->end - r->p))
            return tr_bad(r, "map larger than its bytes");
        if (r->p >= r->end) return tr_bad(r, "truncated map header");
        uint8_t kv = *r->p++;
        int kt = kv >> 4, vt = kv & 0x0F;
        if (kt == 0 || kt > FR_TT_STRUCT || vt == 0 || vt > FR_TT_STRUCT)
            return tr_bad(r, "bad map types");
        if (r->depth >= FR_THRIFT_DEPTH_MAX) return tr_bad(r, "maps nested too deep");
        r->depth++;
        for (uint64_t i = 0; i < cnt; i++) {
            FR_TRY(fr_thrift_r_skip(r, kt, true));
            FR_TRY(fr_thrift_r_skip(r, vt, true));
        }
        r->depth--;
        return 0;
    }
    case FR_TT_STRUCT: {
        int16_t last;
        FR_TRY(fr_thrift_r_struct_begin(r, &last));
        for (;;) {
            int ft;
            int16_t id;
            FR_TRY(fr_thrift_r_field(r, &last, &ft, &id));
            if (ft == FR_TT_STOP) break;
            FR_TRY(fr_thrift_r_skip(r, ft, false));
        }
        fr_thrift_r_struct_end(r);
        return 0;
    }
    default:
        return tr_bad(r, "unknown type");
    }
}
