/* lake_parquet_enc.c — the RLE / bit-packed hybrid encoding of Parquet (definition levels,
 * dictionary indexes, booleans) and page compression (ZSTD, SNAPPY, LZ4_RAW, none).
 *
 * Hybrid runs: a varint header h; h & 1 == 0 is a repeated run of h >> 1 copies of one
 * value stored little-endian in ceil(bit_width / 8) bytes; h & 1 == 1 is (h >> 1) groups of
 * 8 values bit-packed LSB first. Literal groups other than the last hold real values only,
 * so the encoder pads a literal run to a multiple of 8 by borrowing from the repeated run
 * that follows. The decoder checks every run against the input and the values wanted. Also
 * CRC-32 of pages. */
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
                if (val > mask) return rle_bad(err, "run value wider than the bit width");   \
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

/* ---- page checksums ---------------------------------------------------------------------- */

/* CRC-32 (the polynomial of zlib and gzip, reflected 0xEDB88320), as parquet.thrift asks for
 * PageHeader.crc. */
static const uint32_t pq_crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
    0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
    0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
    0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
    0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
    0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
    0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
    0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
    0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
    0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
    0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
    0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
    0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
    0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
    0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
    0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
    0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
    0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
    0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
    0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
    0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
    0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
    0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t pq_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = pq_crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

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
    if (c->codec != FR_PARQUET_ZSTD) return pq_compress2(c, p, n, NULL, 0, out, err);
    /* One call, from the input where it is: the streaming interface would first copy the
     * input into the context's own buffer. */
    fr_buf_reset(out);
    size_t cap = ZSTD_compressBound(n);
    FR_TRY(fr_buf_reserve(out, cap, err));
    size_t rc = ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, c->level);
    if (!ZSTD_isError(rc)) rc = ZSTD_compress2(c->zc, out->data, cap, n ? p : (const uint8_t *)"", n);
    if (ZSTD_isError(rc))
        return fr_fail(err, FR_EINVAL, "ZSTD compression failed: %s", ZSTD_getErrorName(rc));
    out->len = rc;
    return 0;
}

/* ZSTD streams the two parts into one frame, so the second (a page's values) is not copied
 * behind the first (its definition levels); SNAPPY has no such interface and joins them. */
int pq_compress2(pq_compressor *c, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                 fr_buf *out, fr_error *err)
{
    fr_buf_reset(out);
    size_t n = alen + blen;
    switch (c->codec) {
    case FR_PARQUET_UNCOMPRESSED:
        FR_TRY(fr_buf_append(out, a, alen, err));
        return fr_buf_append(out, b, blen, err);
    case FR_PARQUET_ZSTD: {
        size_t cap = ZSTD_compressBound(n);
        FR_TRY(fr_buf_reserve(out, cap, err));
        size_t rc = ZSTD_CCtx_reset(c->zc, ZSTD_reset_session_only);
        if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, c->level);
        if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setPledgedSrcSize(c->zc, n);
        ZSTD_outBuffer ob = {out->data, cap, 0};
        ZSTD_inBuffer ia = {a, alen, 0}, ib = {b, blen, 0};
        if (!ZSTD_isError(rc) && alen) {
            rc = ZSTD_compressStream2(c->zc, &ob, &ia, ZSTD_e_continue);
            if (!ZSTD_isError(rc) && ia.pos != alen) rc = (size_t)-1;
        }
        while (!ZSTD_isError(rc)) {
            rc = ZSTD_compressStream2(c->zc, &ob, &ib, ZSTD_e_end);
            if (rc == 0) break;
        }
        if (ZSTD_isError(rc))
            return fr_fail(err, FR_EINVAL, "ZSTD compression failed: %s", ZSTD_getErrorName(rc));
        out->len = ob.pos;
        return 0;
    }
    case FR_PARQUET_SNAPPY: {
        static const uint8_t empty[1];
        const uint8_t *src = blen ? b : alen ? a : empty;
        uint8_t *joined = NULL;
        if (alen && blen) {
            joined = fr_malloc(n);
            if (!joined) return fr_fail(err, FR_ENOMEM, "out of memory");
            memcpy(joined, a, alen);
            memcpy(joined + alen, b, blen);
            src = joined;
        }
        size_t cap = snappy_max_compressed_length(n), got = cap;
        int rc = fr_buf_reserve(out, cap, err);
        if (rc == 0 && snappy_compress((const char *)src, n, (char *)out->data, &got) != SNAPPY_OK)
            rc = fr_fail(err, FR_EINVAL, "SNAPPY compression failed");
        fr_free(joined);
        if (rc == 0) out->len = got;
        return rc;
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
            return fr_fail(err, FR_ECORRUPT, "ZSTD page decompressed to %zu bytes, header says %zu",
                           got, expect);
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
