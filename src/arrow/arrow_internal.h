/* arrow_internal.h — what the files of the arrow module share: the batch struct, aligned
 * growable buffers, bitmap helpers and the physical layout of each firth type.
 *
 * Invariants of every fr_batch (whoever built it: builder, IPC decoder, C import):
 *   - each column has exactly `rows` values;
 *   - validity is NULL exactly when null_count == 0, else it holds at least rows bits;
 *   - var-width columns have offsets[0] == 0, offsets non-decreasing, and offsets[rows]
 *     bytes of values; fixed-width columns have rows * width bytes of values;
 *   - values and offsets are never NULL (an empty buffer points at fr_arrow_empty), so that
 *     consumers and the C Data Interface need no special case for empty columns;
 *   - the batch is immutable; its memory lives until the last reference is dropped. */
#ifndef FIRTH_ARROW_INTERNAL_H
#define FIRTH_ARROW_INTERNAL_H

#include <stdatomic.h>

#include "arrow/arrow.h"
#include "arrow/arrow_flatbuf.h"
#include "firth/firth.h"

/* Column buffers start on this boundary (Arrow's recommendation, good for SIMD). */
#define FR_ARROW_ALIGN 64

/* A zero-filled, aligned block that empty buffers point at. */
extern const uint8_t fr_arrow_empty[FR_ARROW_ALIGN];

struct fr_batch {
    atomic_int refs;
    fr_schema *schema;
    int64_t rows;
    int ncols;
    fr_column *cols;
    /* Allocations freed with the batch (fr_free on each). */
    void **owned;
    int nowned, owned_cap;
    /* A projection shares its parent's buffers and holds a reference on it. */
    fr_batch *parent;
    /* An imported C Data array, released with the batch (release == NULL when none). */
    struct ArrowArray imported;
};

/* How a type is laid out. */
typedef enum fr_phys { FR_PHYS_BOOL, FR_PHYS_FIXED, FR_PHYS_VAR } fr_phys;

static inline fr_phys fr_arrow_phys(const fr_type *t)
{
    switch (t->id) {
    case FR_T_BOOLEAN: return FR_PHYS_BOOL;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: return FR_PHYS_VAR;
    default: return FR_PHYS_FIXED;
    }
}

/* Bytes per value of a fixed-width type; 0 for BOOLEAN and var-width types. */
static inline int fr_arrow_width(const fr_type *t)
{
    switch (t->id) {
    case FR_T_TINYINT: return 1;
    case FR_T_SMALLINT: return 2;
    case FR_T_INT: case FR_T_FLOAT: case FR_T_DATE: return 4;
    case FR_T_BIGINT: case FR_T_DOUBLE: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ: return 8;
    case FR_T_DECIMAL: return 16;
    case FR_T_TIME: return t->precision <= 3 ? 4 : 8;
    default: return 0;
    }
}

/* Number of Arrow buffers of a column of type t: validity + values, plus offsets. */
static inline int fr_arrow_nbuffers(const fr_type *t)
{
    return fr_arrow_phys(t) == FR_PHYS_VAR ? 3 : 2;
}

static inline int64_t fr_bitmap_bytes(int64_t bits) { return (bits + 7) >> 3; }
static inline size_t fr_pad8(size_t n) { return (n + 7) & ~(size_t)7; }
static inline bool fr_bit_get(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void fr_bit_set(uint8_t *bits, int64_t i, bool v)
{
    uint8_t m = (uint8_t)(1u << (i & 7));
    bits[i >> 3] = v ? (uint8_t)(bits[i >> 3] | m) : (uint8_t)(bits[i >> 3] & ~m);
}
/* Copies n bits from src at bit spos to dst at bit dpos (the ranges do not overlap). */
void fr_bits_copy(uint8_t *dst, int64_t dpos, const uint8_t *src, int64_t spos, int64_t n);
/* Number of set bits among bits [off, off + n). */
int64_t fr_bits_count(const uint8_t *bits, int64_t off, int64_t n);

/* Allocates n bytes (at least 1) aligned to FR_ARROW_ALIGN, with the bytes past n up to the
 * next multiple of 8 zeroed. *raw receives what must be passed to fr_free. NULL on failure. */
uint8_t *fr_arrow_alloc(size_t n, void **raw);

/* An aligned growable buffer (the builder's columns). data is FR_ARROW_ALIGN-aligned. */
typedef struct fr_avec {
    void *raw;
    uint8_t *data;
    size_t len, cap;
    size_t hint; /* the capacity to start from when data is NULL (the last batch's size) */
} fr_avec;

int fr_avec_grow(fr_avec *v, size_t need, fr_error *err);
static inline int fr_avec_reserve(fr_avec *v, size_t extra, fr_error *err)
{
    return v->len + extra <= v->cap ? 0 : fr_avec_grow(v, v->len + extra, err);
}
void fr_avec_free(fr_avec *v);

/* ---- batch construction (arrow_batch.c) -------------------------------------------------- */

/* A new batch with a copy of schema, `rows` rows and zeroed columns (types filled in). */
int fr_batch_alloc(const fr_schema *schema, int64_t rows, fr_batch **out, fr_error *err);
/* Makes raw memory owned by b (freed with it). On failure raw is freed. */
int fr_batch_own(fr_batch *b, void *raw, fr_error *err);
/* Makes room for n more owned allocations, so that the next n fr_batch_own cannot fail. */
int fr_batch_reserve_owned(fr_batch *b, int n, fr_error *err);
/* Takes a new reference on b (batches are immutable, so a const batch can be shared). */
fr_batch *fr_batch_ref(const fr_batch *b);
/* Sets empty buffers of every column to fr_arrow_empty and checks the invariants' cheap
 * parts (assert in debug builds). */
void fr_batch_seal(fr_batch *b);

/* ---- builder internals used by filter and slice (arrow_builder.c) ----------------------- */

/* Appends rows [off, off + n) of src (a column of the builder column's type). */
int fr_builder_append_range(fr_builder *bld, int col, const fr_column *src, int64_t off,
                            int64_t n, fr_error *err);

/* ---- compression (arrow_codec.c) --------------------------------------------------------- */

/* Largest compressed size of n bytes under codec (not NONE). */
size_t fr_codec_bound(fr_compression codec, size_t n);
/* Compresses src into dst (cap bytes, at least fr_codec_bound). *len is the output size. */
int fr_codec_compress(fr_compression codec, const uint8_t *src, size_t n, uint8_t *dst,
                      size_t cap, size_t *len, fr_error *err);
/* Decompresses exactly `want` bytes from src into dst; any other size is FR_ECORRUPT. */
int fr_codec_decompress(fr_compression codec, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t want, fr_error *err);

/* ---- IPC metadata shared by the writer and projection (arrow_ipc_write.c) --------------- */

typedef struct fr_ipc_node {
    int64_t length, null_count;
} fr_ipc_node;
typedef struct fr_ipc_buffer {
    int64_t offset, length;
} fr_ipc_buffer;

/* Starts an encapsulated message at the end of out: the frame (continuation marker and a
 * metadata length patched by fr_ipc_message_end), then the flatbuffer's root Message table
 * (version V5, header_type, body_length) through *w. The Message's fields are at msg_at[0..4)
 * (flatbuffer positions): msg_at[2] is the header offset to patch with the header table,
 * msg_at[3] the body length. On failure out is as it was. */
int fr_ipc_message_begin(fr_buf *out, fr_fbw *w, uint8_t header_type, int64_t body_length,
                         size_t msg_at[4], fr_error *err);
/* Pads the flatbuffer and patches the frame's metadata length; start is out->len as it was
 * before fr_ipc_message_begin. On failure (the writer's first error) out is cut back to
 * start. */
int fr_ipc_message_end(fr_buf *out, size_t start, fr_fbw *w);

/* Appends an encapsulated RecordBatch message header (continuation, metadata length and the
 * flatbuffer padded to 8 bytes) for the given nodes and buffers. When nodes or buffers are
 * not known yet, pass NULL and patch them later at *nodes_at / *buffers_at (arrays of 16-byte
 * little-endian structs, as indexes into out->data), and the body length at
 * *body_length_at. Any of the outputs may be NULL. */
int fr_ipc_write_batch_header(fr_buf *out, int64_t rows, const fr_ipc_node *nodes, int nnodes,
                              const fr_ipc_buffer *buffers, int nbuffers, int64_t body_length,
                              fr_compression codec, size_t *nodes_at, size_t *buffers_at,
                              size_t *body_length_at, fr_error *err);

/* ---- IPC metadata decoding shared by the reader and projection (arrow_ipc_read.c) ------- */

/* One encapsulated message: its frame checked against n, its Message table parsed. */
typedef struct fr_ipc_msg {
    bool eos;        /* the end-of-stream marker (nothing else is set) */
    int header_type; /* FR_IPC_HDR_* */
    fr_fbt header;   /* the header table (Schema or RecordBatch) */
    const uint8_t *body;
    int64_t body_length;
    size_t used;     /* bytes of the whole message */
} fr_ipc_msg;

/* Parses the frame (continuation marker or the legacy bare length) and the Message table at
 * the start of p. Checks the version (V4 or V5) and that metadata and body fit in n. */
int fr_ipc_parse_message(const uint8_t *p, size_t n, fr_ipc_msg *m, fr_error *err);

/* A parsed encapsulated RecordBatch message: pointers into the input. */
typedef struct fr_ipc_batch_msg {
    int64_t rows;
    int nnodes, nbuffers;
    const uint8_t *nodes;   /* nnodes FieldNode structs (16 bytes each) */
    const uint8_t *buffers; /* nbuffers Buffer structs (16 bytes each) */
    fr_compression codec;
    const uint8_t *body;
    int64_t body_length;
    size_t used; /* bytes of the whole message */
} fr_ipc_batch_msg;

/* Parses the frame and the flatbuffer of a RecordBatch message and checks that its nodes
 * and buffers match schema and lie within the body. Does not look at the body bytes. */
int fr_ipc_parse_batch(const uint8_t *p, size_t n, const fr_schema *schema,
                       fr_ipc_batch_msg *m, fr_error *err);
static inline fr_ipc_node fr_ipc_node_at(const fr_ipc_batch_msg *m, int i)
{
    return (fr_ipc_node){(int64_t)fr_get_u64le(m->nodes + 16 * i),
                         (int64_t)fr_get_u64le(m->nodes + 16 * i + 8)};
}
static inline fr_ipc_buffer fr_ipc_buffer_at(const fr_ipc_batch_msg *m, int i)
{
    return (fr_ipc_buffer){(int64_t)fr_get_u64le(m->buffers + 16 * i),
                           (int64_t)fr_get_u64le(m->buffers + 16 * i + 8)};
}

/* Arrow metadata versions and message header kinds, from Schema.fbs and Message.fbs. */
enum { FR_IPC_V4 = 3, FR_IPC_V5 = 4 };
enum { FR_IPC_HDR_SCHEMA = 1, FR_IPC_HDR_DICTIONARY = 2, FR_IPC_HDR_RECORD_BATCH = 3 };
#define FR_IPC_CONTINUATION 0xFFFFFFFFu

/* The name of the custom metadata key that keeps firth's exact SQL type. */
#define FR_ARROW_TYPE_KEY "firth.type"
/* True when the type needs FR_ARROW_TYPE_KEY to survive a trip through Arrow metadata:
 * CHAR(n), VARCHAR(n), and TIME/TIMESTAMP precisions that are not an Arrow unit. */
bool fr_arrow_needs_type_key(const fr_type *t);
/* Applies the SQL type text of FR_ARROW_TYPE_KEY to *t when it describes the same physical
 * layout and unit (otherwise the text is ignored: *t keeps what the Arrow type said). */
void fr_arrow_apply_type_key(fr_type *t, const char *text, size_t len);

#endif
