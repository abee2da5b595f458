/* lake_thrift.h — the Thrift compact protocol, as Parquet uses it for its footer and page
 * headers (private to the lake module).
 *
 * The writer appends to an fr_buf and keeps a sticky error: calls after a failure do
 * nothing, and fr_thrift_w_finish reports the first failure. Struct nesting is tracked so
 * that field-id deltas are right; every begin has its end.
 *
 * The reader is a cursor over bytes it does not own. Every length, count and varint is
 * checked against the bytes left and the limits below; nesting deeper than
 * FR_THRIFT_DEPTH_MAX fails. Failures are FR_ECORRUPT with a message naming the offset. */
#ifndef FIRTH_LAKE_THRIFT_H
#define FIRTH_LAKE_THRIFT_H

#include "base/base.h"

#define FR_THRIFT_DEPTH_MAX 32
#define FR_THRIFT_LIST_MAX (1 << 24)       /* elements of one list */
#define FR_THRIFT_BINARY_BYTES_MAX (64 << 20) /* bytes of one binary or string */

/* Compact protocol type codes (field headers and list element types). */
enum {
    FR_TT_STOP = 0,
    FR_TT_TRUE = 1,
    FR_TT_FALSE = 2,
    FR_TT_BYTE = 3,
    FR_TT_I16 = 4,
    FR_TT_I32 = 5,
    FR_TT_I64 = 6,
    FR_TT_DOUBLE = 7,
    FR_TT_BINARY = 8,
    FR_TT_LIST = 9,
    FR_TT_SET = 10,
    FR_TT_MAP = 11,
    FR_TT_STRUCT = 12,
};

/* ---- writer ------------------------------------------------------------------------------ */

typedef struct fr_thrift_w {
    fr_buf *out;
    int depth;
    int16_t last[FR_THRIFT_DEPTH_MAX + 1]; /* last field id written at each struct level */
    int rc;
    fr_error *err;
} fr_thrift_w;

/* Starts a top-level struct appended to out. */
void fr_thrift_w_init(fr_thrift_w *w, fr_buf *out, fr_error *err);
/* Ends the top-level struct; returns 0 or the first failure. */
int fr_thrift_w_finish(fr_thrift_w *w);

void fr_thrift_w_i32(fr_thrift_w *w, int16_t id, int32_t v);
void fr_thrift_w_i64(fr_thrift_w *w, int16_t id, int64_t v);
void fr_thrift_w_i8(fr_thrift_w *w, int16_t id, int8_t v);
void fr_thrift_w_i16(fr_thrift_w *w, int16_t id, int16_t v);
void fr_thrift_w_bool(fr_thrift_w *w, int16_t id, bool v);
void fr_thrift_w_binary(fr_thrift_w *w, int16_t id, const void *p, size_t n);
void fr_thrift_w_string(fr_thrift_w *w, int16_t id, const char *s);
/* A struct-valued field; its fields follow, then fr_thrift_w_struct_end. */
void fr_thrift_w_struct_begin(fr_thrift_w *w, int16_t id);
void fr_thrift_w_struct_end(fr_thrift_w *w);
/* A list-valued field of n elements of type elem; the elements follow with the elem_*
 * calls (structs: elem_struct_begin ... struct_end). */
void fr_thrift_w_list_begin(fr_thrift_w *w, int16_t id, int elem, int64_t n);
void fr_thrift_w_elem_i32(fr_thrift_w *w, int32_t v);
void fr_thrift_w_elem_i64(fr_thrift_w *w, int64_t v);
void fr_thrift_w_elem_binary(fr_thrift_w *w, const void *p, size_t n);
void fr_thrift_w_elem_struct_begin(fr_thrift_w *w);

/* ---- reader ------------------------------------------------------------------------------ */

typedef struct fr_thrift_r {
    const uint8_t *start, *p, *end;
    int depth;
    const char *what; /* what is being decoded, for messages ("footer", "page header") */
    fr_error *err;
} fr_thrift_r;

void fr_thrift_r_init(fr_thrift_r *r, const uint8_t *p, size_t n, const char *what,
                      fr_error *err);
/* Bytes consumed so far. */
static inline size_t fr_thrift_r_used(const fr_thrift_r *r) { return (size_t)(r->p - r->start); }

/* Enters a struct (the top level or a struct-valued field/element): checks the depth. */
int fr_thrift_r_struct_begin(fr_thrift_r *r, int16_t *last_id);
void fr_thrift_r_struct_end(fr_thrift_r *r);
/* Reads the next field header of the current struct: *type FR_TT_STOP at the end. last_id
 * is the struct's field-id state from struct_begin. */
int fr_thrift_r_field(fr_thrift_r *r, int16_t *last_id, int *type, int16_t *id);

/* Values of a field (type from its header) or list element (type from the list header;
 * in_list true). Integer readers accept any narrower integer type. */
int fr_thrift_r_int(fr_thrift_r *r, int type, int64_t *v);
int fr_thrift_r_i32(fr_thrift_r *r, int type, int32_t *v);
int fr_thrift_r_bool(fr_thrift_r *r, int type, bool in_list, bool *v);
int fr_thrift_r_binary(fr_thrift_r *r, int type, const uint8_t **p, size_t *n);
/* A list header; *n is checked against the bytes left (every element takes at least one
 * byte) and FR_THRIFT_LIST_MAX. */
int fr_thrift_r_list(fr_thrift_r *r, int type, int *elem, int32_t *n);
/* Skips one value of the given type (recursively, depth-limited). */
int fr_thrift_r_skip(fr_thrift_r *r, int type, bool in_list);

#endif
