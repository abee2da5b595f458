/* engine_take.c — gathering chosen rows of a batch into a new batch, for splitting a batch
 * by bucket. fr_batch_filter walks the whole batch once per part, which costs rows times
 * buckets; a gather by row index costs each part its own rows, so a batch split over 256
 * buckets costs about what one copy of it does.
 *
 * The new batch's buffers are built here in the Arrow layout that arrow.h documents
 * (validity bitmap LSB first, int32 offsets for var-width columns, BOOLEAN values as a
 * bitmap) and handed to fr_batch_from_buffers, which checks and owns them. */
#include "engine/engine_int.h"

#include <inttypes.h>

static inline bool bit_get(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void bit_set(uint8_t *bits, int64_t i)
{
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static void take_fixed(const fr_column *c, int w, const int64_t *rows, int64_t n, uint8_t *out)
{
    const uint8_t *v = c->values;
    switch (w) {
    case 1:
        for (int64_t i = 0; i < n; i++) out[i] = v[rows[i]];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) memcpy(out + 2 * i, v + 2 * rows[i], 2);
        break;
    case 4:
        for (int64_t i = 0; i < n; i++) memcpy(out + 4 * i, v + 4 * rows[i], 4);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) memcpy(out + 8 * i, v + 8 * rows[i], 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(out + (size_t)w * (size_t)i, v + (size_t)w * (size_t)rows[i], (size_t)w);
        break;
    }
}

/* Fills bufs[0..2] (validity, offsets, values) of one column; *nulls gets its null count. */
static int take_column(const fr_column *c, const int64_t *rows, int64_t n, uint8_t **bufs,
                       int64_t *nulls, fr_error *err)
{
    size_t bitmap_bytes = (size_t)(n + 7) / 8;
    *nulls = 0;
    if (c->null_count > 0) {
        FR_CHECK(bufs[0] = fr_calloc(bitmap_bytes, 1), FR_ENOMEM, err, "out of memory");
        for (int64_t i = 0; i < n; i++) {
            if (bit_get(c->validity, rows[i])) bit_set(bufs[0], i);
            else (*nulls)++;
        }
        if (*nulls == 0) {
            fr_free(bufs[0]);
            bufs[0] = NULL;
        }
    }
    int w = fr_type_width(&c->type);
    if (fr_type_is_varwidth(&c->type)) {
        int32_t *off = fr_malloc((size_t)(n + 1) * sizeof *off);
        FR_CHECK(bufs[1] = (uint8_t *)off, FR_ENOMEM, err, "out of memory");
        int64_t total = 0;
        off[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            total += c->offsets[rows[i] + 1] - c->offsets[rows[i]];
            off[i + 1] = (int32_t)total; /* a part never holds more than its whole batch */
        }
        FR_CHECK(bufs[2] = fr_malloc((size_t)total), FR_ENOMEM, err, "out of memory");
        for (int64_t i = 0; i < n; i++)
            memcpy(bufs[2] + off[i], c->values + c->offsets[rows[i]], (size_t)(off[i + 1] - off[i]));
    } else if (w == 0) { /* BOOLEAN: a bitmap */
        FR_CHECK(bufs[2] = fr_calloc(bitmap_bytes, 1), FR_ENOMEM, err, "out of memory");
        for (int64_t i = 0; i < n; i++)
            if (bit_get(c->values, rows[i])) bit_set(bufs[2], i);
    } else {
        FR_CHECK(bufs[2] = fr_malloc((size_t)n * (size_t)w), FR_ENOMEM, err, "out of memory");
        take_fixed(c, w, rows, n, bufs[2]);
    }
    return FR_OK;
}

int fr_engine_take(const fr_batch *b, const int64_t *rows, int64_t n, fr_batch **out,
                   fr_error *err)
{
    int ncols = fr_batch_num_columns(b);
    uint8_t **bufs = fr_calloc((size_t)ncols * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)ncols + 1, sizeof *nulls);
    int rc = bufs && nulls ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory splitting a batch");
    for (int i = 0; rc == FR_OK && i < ncols; i++)
        rc = take_column(fr_batch_column(b, i), rows, n, &bufs[3 * i], &nulls[i], err);
    if (rc == FR_OK) {
        /* from_buffers owns the buffers from here, whatever it returns. */
        rc = fr_batch_from_buffers(fr_batch_schema(b), n, bufs, nulls, out, err);
    } else if (bufs) {
        for (int i = 0; i < 3 * ncols; i++) fr_free(bufs[i]);
        if (rc == FR_ENOMEM) fr_fail(err, FR_ENOMEM, "out of memory splitting a batch");
    }
    fr_free(bufs);
    fr_free(nulls);
    return rc;
}
