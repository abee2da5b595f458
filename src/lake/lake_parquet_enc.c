/* lake_parquet_enc.c — the RLE / bit-packed hybrid encoding of Parquet (definition levels,
 * dictionary indexes, booleans) and page compression (ZSTD, SNAPPY, LZ4_RAW, none).
 *
 * Hybrid runs: a varint header h; h & 1 == 0 is a repeated run of h >> 1 copies of one
 * value stored little-endian in ceil(bit_width / 8) bytes; h & 1 == 1 is (h >> 1) groups of
 * 8 values bit-packed LSB first. Literal groups other than the last hold real values only,
 * so the encoder pads a literal run to a multiple of 8 by borrowing from the repeated run
 * that follows. The decoder checks every run against the input and the values wanted. */
#include <lz4.h>
#include <snappy-c.h>
#include <zstd.h>

#include "lake/lake_parquet_int.h"

/* ---- encoder ----------------------------------------------------------------------------- */

typedef struct rle_enc {
    fr_buf *out;
    int bit_width;
    int rc;
    fr_error *err;
} rle_enc;

static void rle_put(rle_enc *e, const void *p, size_t n)
{
    if (e->rc == 0) e->rc = fr_buf_append(e->out, p, n, e->err);
}

static void rle_varint(rle_enc *e, uint64_t v)
{
    uint8_t tmp[10];
    rle_put(e, tmp, fr_varint_put(tmp, v));
}

static void rle_repeat(rle_enc *e, uint32_t value, int64_t count)
{
    rle_varint(e, (uint64_t)count << 1);
    uint8_t tmp[4];
    fr_put_u32le(tmp, value);
    rle_put(e, tmp, (size_t)(e->bit_width + 7) / 8);
}

/* Bit-packs count values (padded with zeros to a multiple of 8). */
#define RLE_LITERAL(NAME, T)                                                                 \
    static void NAME(rle_enc *e, const T *v, int64_t count)                                  \
    {                                                                                        \
        int64_t groups = (count + 7) / 8;                                                    \
        rle_varint(e, ((uint64_t)groups << 1) | 1);                                          \
        if (e->rc) return;                                                                   \
        size_t bytes = (size_t)groups * (size_t)e->bit_width;                                \
        e->rc = fr_buf_reserve(e->out, bytes + 8, e->err);                                   \
        if (e->rc) return;                                                                   \
        uint8_t *dst = e->out->data + e->out->len;                                           \
        memset(dst, 0, bytes + 8);                                                           \
        uint64_t acc = 0;                                                                    \
        int nbits = 0;                                                                       \
        size_t pos = 0;                                                                      \
        for (int64_t i = 0; i < groups * 8; i++) {                                           \
            uint64_t x = i < count ? (uint64_t)v[i] : 0;                                     \
            acc |= x << nbits;                                                               \
            nbits += e->bit_width;                                                           \
            while (nbits >= 8) {                                                             \
                dst[pos++] = (uint8_t)acc;                                                   \
                acc >>= 8;                                                                   \
                nbits -= 8;                                                                  \
            }                                                                                \
        }                                                                                    \
        e->out->len += bytes;                                                                \
    }
RLE_LITERAL(rle_literal_u32, uint32_t)
RLE_LITERAL(rle_literal_u8, uint8_t)

#define RLE_ENCODE(NAME, T, LITERAL)                                                         \
    int NAME(const T *v, int64_t n, int bit_width, fr_buf *out, fr_error *err)               \
    {                                                                                        \
        rle_enc e = {out, bit_width, 0, err};                                                \
        int64_t lit_start = 0, lit = 0, i = 0;                                               \
        while (i < n && e.rc == 0) {                                                         \
            int64_t j = i + 1;                                                               \
            while (j < n && v[j] == v[i]) j++;                                               \
            int64_t run = j - i;                                                             \
            if (run < 8) {                                                                   \
                lit += run;                                                                  \
                i = j;                                                                       \
                continue;                                                                    \
            }                                                                                \
            int64_t take = (8 - lit % 8) % 8;                                                \
            lit += take, i += take, run -= take;                                             \
            if (lit) LITERAL(&e, v + lit_start, lit);                                        \
            rle_repeat(&e, (uint32_t)v[i], run);                                             \
            i = j;                                                                           \
            lit_start = i, lit = 0;                                                          \
        }                                                                                    \
        if (lit) LITERAL(&e, v + lit_start, lit);                                            \
        return e.rc;                                                                         \
    }
RLE_ENCODE(pq_rle_encode, uint32_t, rle_literal_u32)
RLE_ENCODE(pq_rle_encode_u8, uint8_t, rle_literal_u8)

/* ---- decoder ----------------------------------------------------------------------------- */

static int rle_bad(fr_error *err, const char *why)
{
    return fr_fail(err, FR_ECORRUPT, "RLE/bit-packed data: %s", why);
}

#define RLE_DECODE(NAME, T)                                                                  \
    int NAME(const uint8_t *p, size_t len, int bit_width, T *out, int64_t n, fr_error *err)  \
    {                                                                                        \
        if (bit_width < 0 || bit_width > 32) return rle_bad(err, "bit width above 32");      \
        if (bit_width == 0) {                                                                \
            memset(out, 0, (size_t)n * sizeof(T));                                           \
            return 0;                                                                        \
        }                                                                                    \
        size_t pos = 0, vbytes = (size_t)(bit_width + 7) / 8;                                \
        int64_t got = 0;                                                                     \
        uint64_t mask = bit_width == 64 ? ~0ull : ((1ull << bit_width) - 1);                 \
        while (got < n) {                                                                    \
            uint64_t h;                                                                      \
            size_t used = fr_varint_get(p + pos, len - pos, &h);                             \
            if (used == 0) return rle_bad(err, "truncated run header");                      \
            pos += used;                                                                     \
            if ((h & 1) == 0) {                                                              \
                uint64_t count = h >> 1;                                                     \
                if (count == 0) return rle_bad(err, "empty run");                            \
                if (len - pos < vbytes) return rle_bad(err, "truncated run value");          \
                uint32_t val = 0;                                                            \
                memcpy(&val, p + pos, vbytes);                                               \
                pos += vbytes;                                                               \
                if (count > (uint64_t)(n - got)) count = (uint64_t)(n - got);                \
                if (sizeof(T) == 1) {                                                        \
                    memset(out + got, (int)val, (size_t)count);                              \
                } else {                                                                     \
                    for (uint64_t k = 0; k < count; k++) out[got + (int64_t)k] = (T)val;     \
                }                                                                            \
                got += (int64_t)count;                                                       \
            } else {                                                                         \
                uint64_t groups = h >> 1;                                                    \
                if (groups == 0) return rle_bad(err, "empty literal run");                   \
                if (groups > (len - pos) / (size_t)bit_width)                                \
                    return rle_bad(err, "literal run longer than its data");                 \
                uint64_t count = groups * 8;                                                 \
                if (count > (uint64_t)(n - got)) count = (uint64_t)(n - got);                \
                const uint8_t *src = p + pos;                                                \
                uint64_t acc = 0;                                                            \
                int nbits = 0;                                                               \
                size_t sp = 0;                                                               \
                for (uint64_t k = 0; k < count; k++) {                                       \
                    while (nbits < bit_width) {                                              \
                        acc |= (uint64_t)src[sp++] << nbits;                                 \
                        nbits += 8;                                                          \
                    }                                                                        \
                    out[got + (int64_t)k] = (T)(acc & mask);                                 \
                    acc >>= bit_width;                                                       \
                    nbits -= bit_width;                                                      \
                }                                                                            \
                pos += (size_t)groups * (size_t)bit_width;                                   \
                got += (int64_t)count;                                                       \
            }                                                                                \
        }                                                                                    \
        return 0;                                                                            \
    }
RLE_DECODE(pq_rle_decode, uint32_t)
RLE_DECODE(pq_rle_decode_u8, uint8_t)

/* ---- compression ------------------------------------------------------------------------- */

struct pq_compressor {
    int codec;
    int level;
    ZSTD_CCtx *zc;
};

int pq_compressor_new(int codec, int zstd_level, pq_compressor **out, fr_error *err)
{
    pq_compressor *c = fr_calloc(1, sizeof *c);
    if (!c) return fr_fail(err, FR_ENOMEM, "out of memory");
    c->codec = codec;
    c->level = zstd_level;
    if (codec == FR_PARQUET_ZSTD) {
        c->zc = ZSTD_createCCtx();
        if (!c->zc) {
            fr_free(c);
            return fr_fail(err, FR_ENOMEM, "out of memory creating a ZSTD context");
        }
    }
    *out = c;
    return 0;
}

void pq_compressor_free(pq_compressor *c)
{
    if (!c) return;
    ZSTD_freeCCtx(c->zc);
    fr_free(c);
}

int pq_compress(pq_compressor *c, const uint8_t *p, size_t n, fr_buf *out, fr_error *err)
{
    fr_buf_reset(out);
    switch (c->codec) {
    case FR_PARQUET_UNCOMPRESSED:
        return fr_buf_append(out, p, n, err);
    case FR_PARQUET_ZSTD: {
        size_t cap = ZSTD_compressBound(n);
        FR_TRY(fr_buf_reserve(out, cap, err));
        size_t got = ZSTD_compressCCtx(c->zc, out->data, cap, p, n, c->level);
        if (ZSTD_isError(got))
            return fr_fail(err, FR_EINVAL, "ZSTD compression failed: %s", ZSTD_getErrorName(got));
        out->len = got;
        return 0;
    }
    case FR_PARQUET_SNAPPY: {
        size_t cap = snappy_max_compressed_length(n);
        FR_TRY(fr_buf_reserve(out, cap, err));
        size_t got = cap;
        if (snappy_compress((const char *)p, n, (char *)out->data, &got) != SNAPPY_OK)
            return fr_fail(err, FR_EINVAL, "SNAPPY compression failed");
        out->len = got;
        return 0;
    }
    default:
        return fr_fail(err, FR_EINVAL, "unknown Parquet codec %d", c->codec);
    }
}

int pq_decompress(int codec, const uint8_t *p, size_t n, uint8_t *dst, size_t expect,
                  fr_error *err)
{
    switch (codec) {
    case FR_PARQUET_UNCOMPRESSED:
        if (n != expect)
            return fr_fail(err, FR_ECORRUPT, "uncompressed page of %zu bytes, header says %zu", n, expect);
        memcpy(dst, p, n);
        return 0;
    case FR_PARQUET_ZSTD: {
        size_t got = ZSTD_decompress(dst, expect, p, n);
        if (ZSTD_isError(got))
            return fr_fail(err, FR_ECORRUPT, "ZSTD page: %s", ZSTD_getErrorName(got));
        if (got != expect)
            return fr_fail(err, FR_ECORRUPT, "ZSTD page decompressed to %zu bytes, header says %zu", got, expect);
        return 0;
    }
    case FR_PARQUET_SNAPPY: {
        size_t got;
        if (snappy_uncompressed_length((const char *)p, n, &got) != SNAPPY_OK || got != expect)
            return fr_fail(err, FR_ECORRUPT, "SNAPPY page: bad length (header says %zu)", expect);
        if (snappy_uncompress((const char *)p, n, (char *)dst, &got) != SNAPPY_OK || got != expect)
            return fr_fail(err, FR_ECORRUPT, "SNAPPY page: bad compressed data");
        return 0;
    }
    case PQ_CODEC_LZ4_RAW: {
        if (n > INT32_MAX || expect > INT32_MAX)
            return fr_fail(err, FR_ECORRUPT, "LZ4_RAW page too large");
        int got = LZ4_decompress_safe((const char *)p, (char *)dst, (int)n, (int)expect);
        if (got < 0 || (size_t)got != expect)
            return fr_fail(err, FR_ECORRUPT, "LZ4_RAW page: bad compressed data");
        return 0;
    }
    default:
        return fr_fail(err, FR_EUNSUPPORTED, "Parquet codec %s is not supported (firth reads "
                       "UNCOMPRESSED, SNAPPY, ZSTD and LZ4_RAW)", pq_codec_name(codec));
    }
}
