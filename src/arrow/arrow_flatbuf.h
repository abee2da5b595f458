/* arrow_flatbuf.h — the smallest FlatBuffers writer and bounds-checked reader that Arrow's
 * Message, Schema and RecordBatch tables need (no generated code, no library).
 *
 * The writer works front to back: a table is written with placeholders for its offset
 * fields, its children after it, and the placeholders patched once a child's position is
 * known. Since FlatBuffers offsets point forward, children always follow their parents.
 * Scalars are aligned to their size relative to the start of the flatbuffer.
 *
 * The reader never trusts the bytes: every table, vtable, field, vector and string is
 * checked to lie inside the buffer before it is read, and reads are unaligned-safe. */
#ifndef FIRTH_ARROW_FLATBUF_H
#define FIRTH_ARROW_FLATBUF_H

#include "base/base.h"

/* ---- writer ------------------------------------------------------------------------------ */

typedef struct fr_fbw {
    fr_buf *buf;
    size_t base; /* where the flatbuffer starts in buf */
    int rc;      /* first error; later calls do nothing */
    fr_error *err;
} fr_fbw;

/* One field of a table: a scalar of size 1, 2, 4 or 8 bytes, or (size 0) an offset to a
 * child written later and set with fr_fbw_patch. */
typedef struct fr_fbf {
    uint8_t slot;
    uint8_t size;
    uint64_t value;
} fr_fbf;

#define FR_FB_TABLE_FIELDS_MAX 8

/* Starts a flatbuffer at the end of buf: writes the root offset placeholder at position 0. */
void fr_fbw_init(fr_fbw *w, fr_buf *buf, fr_error *err);
/* Writes a table (its vtable first). Returns the table's position; the position of field i
 * goes to at[i] (for offset fields, to patch later). */
size_t fr_fbw_table(fr_fbw *w, const fr_fbf *fields, int n, size_t *at);
/* Writes a vector of count elements of elem bytes, its elements aligned to align; data may
 * be NULL (zeros, e.g. offsets to patch). Returns its position; elements follow at +4. */
size_t fr_fbw_vector(fr_fbw *w, size_t count, size_t elem, size_t align, const void *data);
size_t fr_fbw_string(fr_fbw *w, const char *s, size_t len);
/* Points the offset stored at position `at` to the object at position `target`. */
void fr_fbw_patch(fr_fbw *w, size_t at, size_t target);
/* Pads the flatbuffer to a multiple of 8 bytes; returns the first error or 0. */
int fr_fbw_finish(fr_fbw *w);

/* ---- reader ------------------------------------------------------------------------------ */

typedef struct fr_fbt {
    const uint8_t *p; /* the whole flatbuffer */
    size_t n;
    size_t pos;       /* the table */
    size_t vt;        /* its vtable */
    uint16_t vt_size, t_size;
} fr_fbt;

/* Finds the root table of a flatbuffer of n bytes. */
int fr_fbr_root(const uint8_t *p, size_t n, fr_fbt *root, fr_error *err);
/* Reads a scalar field of size 1, 2, 4 or 8 (zero-extended into *out); def when absent. */
int fr_fbt_scalar(const fr_fbt *t, int slot, int size, uint64_t def, uint64_t *out, fr_error *err);
/* A child table; *present is false when the field is absent. */
int fr_fbt_table(const fr_fbt *t, int slot, fr_fbt *child, bool *present, fr_error *err);
/* A vector of elem-byte elements: *data points at its first element, *count is 0 when the
 * field is absent. count * elem is checked to lie inside the buffer. */
int fr_fbt_vector(const fr_fbt *t, int slot, size_t elem, const uint8_t **data, uint32_t *count,
                  fr_error *err);
/* The table at element i of a vector of tables read with fr_fbt_vector(elem = 4). */
int fr_fbt_vector_table(const fr_fbt *t, const uint8_t *data, uint32_t i, fr_fbt *child,
                        fr_error *err);
/* A string (not NUL-terminated in *s); *present is false when absent. */
int fr_fbt_string(const fr_fbt *t, int slot, const char **s, size_t *len, bool *present,
                  fr_error *err);

#endif
