/* client_route.c — where a remote client sends a row: its bucket and its partition, computed
 * exactly as the engine computes them (docs/ENGINE.md), so that the server finds every row
 * of a bucket's batch in the bucket it names.
 *
 * Bucket of a row: murmur3_x86_32 (seed 0) of the canonical bytes of its bucket-key values,
 * mod bucket.num; the canonical bytes per key column are 0x00 for NULL, else 0x01 and the
 * value (BOOLEAN 1 byte; integers and temporal values as int64 LE; FLOAT and DOUBLE as a
 * double LE with -0.0 as 0.0 and one NaN; DECIMAL 16 bytes LE; strings and bytes a uint32 LE
 * length and the bytes). A table without a bucket key puts an idempotent writer's batch in
 * murmur3(writer id LE 8 ++ sequence LE 4) mod bucket.num. The unit tests check these
 * against the engine's own routing. Partition of a row: "k=v" per partition key in key order,
 * joined with '/', each value in its canonical text (fr_value_format). */
#include "client/client_int.h"

#include <math.h>

static int value_bytes(const fr_column *c, int64_t row, fr_buf *out, fr_error *err)
{
    uint8_t w[16];
    if (fr_column_is_null(c, row)) {
        w[0] = 0;
        return fr_buf_append(out, w, 1, err);
    }
    w[0] = 1;
    FR_TRY(fr_buf_append(out, w, 1, err));
    fr_value v;
    fr_column_get(c, row, &v);
    switch (c->type.id) {
    case FR_T_BOOLEAN:
        w[0] = v.v.b ? 1 : 0;
        return fr_buf_append(out, w, 1, err);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: {
        double d = v.v.f;
        uint64_t bits;
        if (isnan(d)) {
            bits = 0x7ff8000000000000ULL;
        } else {
            if (d == 0) d = 0;
            memcpy(&bits, &d, 8);
        }
        fr_put_u64le(w, bits);
        return fr_buf_append(out, w, 8, err);
    }
    case FR_T_DECIMAL:
        fr_put_u64le(w, (uint64_t)v.v.d);
        fr_put_u64le(w + 8, (uint64_t)((unsigned __int128)v.v.d >> 64));
        return fr_buf_append(out, w, 16, err);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
    case FR_T_BYTES:
        fr_put_u32le(w, (uint32_t)v.v.s.len);
        FR_TRY(fr_buf_append(out, w, 4, err));
        return v.v.s.len ? fr_buf_append(out, v.v.s.ptr, v.v.s.len, err) : FR_OK;
    default:
        fr_put_u64le(w, (uint64_t)v.v.i);
        return fr_buf_append(out, w, 8, err);
    }
}

int fr_route_bucket(const fr_batch *b, const int *key, int nkey, int nbuckets, int64_t row,
                    fr_buf *scratch, int *bucket, fr_error *err)
{
    if (nbuckets <= 1) {
        *bucket = 0;
        return FR_OK;
    }
    fr_buf_reset(scratch);
    for (int k = 0; k < nkey; k++)
        FR_TRY(value_bytes(fr_batch_column(b, key[k]), row, scratch, err));
    *bucket = (int)(fr_murmur3_32(scratch->data, scratch->len, 0) % (uint32_t)nbuckets);
    return FR_OK;
}

int fr_route_writer_bucket(int64_t writer_id, int32_t seq, int nbuckets)
{
    if (nbuckets <= 1) return 0;
    uint8_t w[12];
    fr_put_u64le(w, (uint64_t)writer_id);
    fr_put_u32le(w + 8, (uint32_t)seq);
    return (int)(fr_murmur3_32(w, sizeof w, 0) % (uint32_t)nbuckets);
}

int fr_route_partition_name(const fr_batch *b, const int *part, const char *const *names,
                            int npart, int64_t row, fr_buf *out, fr_error *err)
{
    for (int k = 0; k < npart; k++) {
        const fr_column *c = fr_batch_column(b, part[k]);
        FR_CHECK(!fr_column_is_null(c, row), FR_EINVAL, err,
                 "row %lld: partition column '%s' is NULL", (long long)row + 1, names[k]);
        fr_value v;
        fr_column_get(c, row, &v);
        if (k) FR_TRY(fr_buf_append(out, "/", 1, err));
        FR_TRY(fr_buf_printf(out, err, "%s=", names[k]));
        FR_TRY(fr_value_format(&v, out, err));
    }
    return fr_buf_append(out, "", 1, err);
}

int fr_route_group(const int32_t *dest, int64_t nrows, int ndest, int64_t *rows,
                   int64_t *start, fr_error *err)
{
    FR_CHECK(ndest >= 0, FR_EINVAL, err, "a negative count of destinations");
    memset(start, 0, sizeof *start * ((size_t)ndest + 1));
    for (int64_t i = 0; i < nrows; i++) start[dest[i] + 1]++;
    for (int d = 0; d < ndest; d++) start[d + 1] += start[d];
    /* start[d] is where destination d's rows go; advance a cursor per destination. */
    int64_t *cursor = fr_malloc(sizeof *cursor * ((size_t)ndest + 1));
    FR_CHECK(cursor, FR_ENOMEM, err, "out of memory grouping rows");
    memcpy(cursor, start, sizeof *cursor * ((size_t)ndest + 1));
    for (int64_t i = 0; i < nrows; i++) rows[cursor[dest[i]]++] = i;
    fr_free(cursor);
    return FR_OK;
}
