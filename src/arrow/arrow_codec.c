/* arrow_codec.c — the per-buffer codecs of Arrow IPC BodyCompression: ZSTD (one frame) and
 * LZ4 frame format. Each thread keeps its own compression and decompression contexts (ZSTD
 * and LZ4F), created on first use and freed when the thread exits, because creating a
 * context per buffer costs more than compressing a small buffer. */
#include <lz4frame.h>
#include <pthread.h>
#include <strings.h>
#include <zstd.h>

#include "arrow/arrow_internal.h"

/* ZSTD level 1. The write path compresses every buffer of every appended batch, so speed
 * comes first, but the ratio must stay useful. Measured per buffer of ~97 KB with
 * libzstd 1.5.4 on one core: on English text, level 1 gives 0.26 of the size at ~350 MB/s,
 * level 3 0.24 at ~240 MB/s, levels -1/-3/-5 0.32/0.34/0.38 at ~370-410 MB/s; on random
 * printable strings level 1 gives 0.83 at ~530 MB/s while every negative level stores
 * them raw (1.00: negative levels skip the entropy coding of literals) and gains nothing
 * in speed when that coding is turned back on. Level 1 is the fastest level that keeps
 * the entropy coder; the lake recompresses when data is tiered. */
#define FR_ZSTD_LEVEL 1
/* Buffers under 2 KiB are compressed at level -1, whose literals are not entropy coded.
 * Building the Huffman table costs 5 to 13 us whatever the buffer's size: a 64-row batch
 * of the 20-column benchmark table has 20 such buffers beside its 5 string buffers, and
 * their tables took 40% of its compression time, for about 100 bytes saved per buffer on
 * the kinds of data that gain at all (small integers, string offsets: 256-260 B buffers of
 * 130-170 B at level 1 are 200-270 B at level -1; timestamps, categories and decimals
 * compress the same, their repeats being found either way). A small buffer's Huffman table
 * costs more time than writing the bytes it saves. */
#define FR_ZSTD_SMALL_BYTES 2048
#define FR_ZSTD_SMALL_LEVEL (-1)

typedef struct fr_codec_ctx {
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    LZ4F_cctx *lc;
    LZ4F_dctx *ld;
} fr_codec_ctx;

static pthread_key_t fr_codec_key;
static pthread_once_t fr_codec_once = PTHREAD_ONCE_INIT;
static int fr_codec_key_rc;

static void fr_codec_ctx_free(void *p)
{
    fr_codec_ctx *c = p;
    if (!c) return;
    ZSTD_freeCCtx(c->zc);
    ZSTD_freeDCtx(c->zd);
    if (c->lc) LZ4F_freeCompressionContext(c->lc);
    if (c->ld) LZ4F_freeDecompressionContext(c->ld);
    fr_free(c);
}

static void fr_codec_key_init(void) { fr_codec_key_rc = pthread_key_create(&fr_codec_key, fr_codec_ctx_free); }

static fr_codec_ctx *fr_codec_ctx_get(fr_error *err)
{
    pthread_once(&fr_codec_once, fr_codec_key_init);
    if (fr_codec_key_rc != 0) {
        fr_fail(err, FR_ENOMEM, "cannot create the thread key of the compression contexts");
        return NULL;
    }
    fr_codec_ctx *c = pthread_getspecific(fr_codec_key);
    if (c) return c;
    c = fr_calloc(1, sizeof *c);
    if (!c || pthread_setspecific(fr_codec_key, c) != 0) {
        fr_free(c);
        fr_fail(err, FR_ENOMEM, "out of memory allocating compression contexts");
        return NULL;
    }
    return c;
}

/* The LZ4 frame settings for n bytes, as LZ4F_compressFrame would choose them: the
 * smallest block size that holds the buffer, independent blocks, every block written at
 * once (no copy into the context's own buffer), and the content size in the frame header
 * so that readers can size their output. */
static LZ4F_preferences_t fr_lz4_prefs(size_t n)
{
    LZ4F_preferences_t prefs = {0};
    prefs.frameInfo.contentSize = n;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.frameInfo.blockSizeID = n <= (64u << 10)   ? LZ4F_max64KB
                                  : n <= (256u << 10) ? LZ4F_max256KB
                                  : n <= (1u << 20)   ? LZ4F_max1MB
                                                      : LZ4F_max4MB;
    prefs.autoFlush = 1;
    return prefs;
}

size_t fr_codec_bound(fr_compression codec, size_t n)
{
    if (codec == FR_COMPRESSION_ZSTD) return ZSTD_compressBound(n);
    LZ4F_preferences_t prefs = fr_lz4_prefs(n);
    return LZ4F_compressFrameBound(n, &prefs);
}

/* One LZ4 frame with the thread's reused context. cap >= fr_codec_bound(LZ4_FRAME, n). */
static int fr_lz4_compress(fr_codec_ctx *c, const uint8_t *src, size_t n, uint8_t *dst,
                           size_t cap, size_t *len, fr_error *err)
{
    if (!c->lc && LZ4F_isError(LZ4F_createCompressionContext(&c->lc, LZ4F_VERSION))) {
        c->lc = NULL;
        return fr_fail(err, FR_ENOMEM, "out of memory creating an LZ4 context");
    }
    LZ4F_preferences_t prefs = fr_lz4_prefs(n);
    size_t at = LZ4F_compressBegin(c->lc, dst, cap, &prefs), r = at;
    if (!LZ4F_isError(r)) {
        r = LZ4F_compressUpdate(c->lc, dst + at, cap - at, src, n, NULL);
        if (!LZ4F_isError(r)) {
            at += r;
            r = LZ4F_compressEnd(c->lc, dst + at, cap - at, NULL);
            at += LZ4F_isError(r) ? 0 : r;
        }
    }
    /* A failed frame leaves the context mid-frame; the next Begin starts it afresh. */
    if (LZ4F_isError(r))
        return fr_fail(err, FR_EIO, "LZ4 compression failed: %s", LZ4F_getErrorName(r));
    *len = at;
    return 0;
}

int fr_codec_compress(fr_compression codec, const uint8_t *src, size_t n, uint8_t *dst,
                      size_t cap, size_t *len, fr_error *err)
{
    fr_codec_ctx *c = fr_codec_ctx_get(err);
    if (!c) return FR_ENOMEM;
    if (codec == FR_COMPRESSION_LZ4_FRAME) return fr_lz4_compress(c, src, n, dst, cap, len, err);
    if (!c->zc && !(c->zc = ZSTD_createCCtx()))
        return fr_fail(err, FR_ENOMEM, "out of memory creating a ZSTD context");
    int level = n < FR_ZSTD_SMALL_BYTES ? FR_ZSTD_SMALL_LEVEL : FR_ZSTD_LEVEL;
    size_t r = ZSTD_compressCCtx(c->zc, dst, cap, src, n, level);
    if (ZSTD_isError(r)) return fr_fail(err, FR_EIO, "ZSTD compression failed: %s", ZSTD_getErrorName(r));
    *len = r;
    return 0;
}

static int fr_lz4_decompress(fr_codec_ctx *c, const uint8_t *src, size_t n, uint8_t *dst,
                             size_t want, fr_error *err)
{
    if (!c->ld && LZ4F_isError(LZ4F_createDecompressionContext(&c->ld, LZ4F_VERSION))) {
        c->ld = NULL;
        return fr_fail(err, FR_ENOMEM, "out of memory creating an LZ4 context");
    }
    LZ4F_resetDecompressionContext(c->ld);
    size_t in = 0, produced = 0;
    for (;;) {
        size_t src_size = n - in, dst_size = want - produced;
        size_t r = LZ4F_decompress(c->ld, dst + produced, &dst_size, src + in, &src_size, NULL);
        if (LZ4F_isError(r)) {
            LZ4F_resetDecompressionContext(c->ld);
            return fr_fail(err, FR_ECORRUPT, "corrupt LZ4 frame in a compressed buffer: %s",
                           LZ4F_getErrorName(r));
        }
        in += src_size;
        produced += dst_size;
        if (r == 0) break; /* the frame is complete */
        if (src_size == 0 && dst_size == 0) {
            /* No progress: either the input ended early or the output is full. */
            LZ4F_resetDecompressionContext(c->ld);
            return fr_fail(err, FR_ECORRUPT,
                           "LZ4 buffer does not decompress to the %zu bytes its prefix declares", want);
        }
    }
    FR_CHECK(in == n, FR_ECORRUPT, err, "LZ4 buffer has %zu bytes after its frame", n - in);
    FR_CHECK(produced == want, FR_ECORRUPT, err,
             "LZ4 buffer decompresses to %zu bytes but its prefix declares %zu", produced, want);
    return 0;
}

int fr_codec_decompress(fr_compression codec, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t want, fr_error *err)
{
    fr_codec_ctx *c = fr_codec_ctx_get(err);
    if (!c) return FR_ENOMEM;
    if (codec == FR_COMPRESSION_LZ4_FRAME) return fr_lz4_decompress(c, src, n, dst, want, err);
    if (!c->zd && !(c->zd = ZSTD_createDCtx()))
        return fr_fail(err, FR_ENOMEM, "out of memory creating a ZSTD context");
    size_t r = ZSTD_decompressDCtx(c->zd, dst, want, src, n);
    FR_CHECK(!ZSTD_isError(r), FR_ECORRUPT, err, "corrupt ZSTD data in a compressed buffer: %s",
             ZSTD_getErrorName(r));
    FR_CHECK(r == want, FR_ECORRUPT, err,
             "ZSTD buffer decompresses to %zu bytes but its prefix declares %zu", r, want);
    return 0;
}

int fr_compression_parse(const char *s, fr_compression *out, fr_error *err)
{
    static const struct {
        const char *name;
        fr_compression c;
    } names[] = {{"NONE", FR_COMPRESSION_NONE}, {"LZ4_FRAME", FR_COMPRESSION_LZ4_FRAME},
                 {"ZSTD", FR_COMPRESSION_ZSTD}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].c;
            return 0;
        }
    }
    return fr_fail(err, FR_EINVAL, "unknown compression '%s': use NONE, LZ4_FRAME or ZSTD", s);
}

const char *fr_compression_name(fr_compression c)
{
    switch (c) {
    case FR_COMPRESSION_NONE: return "NONE";
    case FR_COMPRESSION_LZ4_FRAME: return "LZ4_FRAME";
    case FR_COMPRESSION_ZSTD: return "ZSTD";
    }
    return "UNKNOWN";
}
