/* base_crc32c.c — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * every log batch. Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at
 * run time) and slicing-by-8 tables otherwise. Both paths give identical results; the
 * tables are built once, thread-safely, on first use.
 *
 * The crc32 instruction takes 3 cycles to give its result but can start one every cycle, so
 * a single chain of them runs at a third of the CPU's pace. Long buffers are therefore cut
 * into three lanes whose CRCs are computed side by side and then joined: the CRC register
 * is linear over GF(2), so the register after lane A then lane B is the register after A
 * advanced over len(B) zero bytes, xored with B's register computed from 0. Advancing over
 * a fixed number of zero bytes is a 32x32 bit matrix, applied through four byte tables.
 *
 * Some CPUs (AMD's Zen 2, for one) start a crc32 only every few cycles, lanes or not. Where
 * the CPU has carry-less multiplication (PCLMULQDQ), long buffers are folded instead: four
 * 128-bit accumulators walk the buffer 64 bytes at a time, each step multiplying an
 * accumulator's two halves by x^(512+32) and x^(512-32) modulo the polynomial (bit
 * reflected), which moves its remainder 512 bits on while keeping it 128 bits wide. The
 * four are then folded into one (the same with 128 bits), and the crc32 instruction
 * finishes the last 16 bytes and the tail. */
#include "base/base.h"

#include <pthread.h>

#define FR_CRC32C_POLY 0x82F63B78u

static uint32_t fr_crc32c_table[8][256];
static pthread_once_t fr_crc32c_once = PTHREAD_ONCE_INIT;

/* Lane lengths of the three-lane loop, and the tables advancing a register over that many
 * zero bytes. */
#define FR_CRC32C_LONG 8192
#define FR_CRC32C_SHORT 256
static uint32_t fr_crc32c_long[4][256];
static uint32_t fr_crc32c_short[4][256];

/* A 32x32 matrix over GF(2), column i the image of bit i, times a vector. */
static uint32_t gf2_times(const uint32_t *m, uint32_t v)
{
    uint32_t r = 0;
    for (; v; v >>= 1, m++)
        if (v & 1) r ^= *m;
    return r;
}

/* out = a after b (columns: a times each column of b). */
static void gf2_mul(uint32_t *out, const uint32_t *a, const uint32_t *b)
{
    for (int i = 0; i < 32; i++) out[i] = gf2_times(a, b[i]);
}

/* acc = the operator applying n zero bytes to a register. The operator for one zero bit
 * shifts the register right and folds the polynomial in; squared three times it is the
 * operator for a byte, and n bytes take the product of its powers 2^k for the bits k of n. */
static void fr_crc32c_zeros(uint32_t acc[32], size_t n)
{
    uint32_t op[32], tmp[32];
    op[0] = FR_CRC32C_POLY;
    for (int i = 1; i < 32; i++) op[i] = 1u << (i - 1);
    for (int k = 0; k < 3; k++) {
        gf2_mul(tmp, op, op);
        memcpy(op, tmp, sizeof op);
    }
    for (int i = 0; i < 32; i++) acc[i] = 1u << i;
    for (; n; n >>= 1) {
        if (n & 1) {
            gf2_mul(tmp, op, acc);
            memcpy(acc, tmp, sizeof tmp);
        }
        gf2_mul(tmp, op, op);
        memcpy(op, tmp, sizeof op);
    }
}

/* The tables applying n zero bytes to a register, a byte of the register per table. */
static void fr_crc32c_zeros_tables(uint32_t t[4][256], size_t n)
{
    uint32_t acc[32];
    fr_crc32c_zeros(acc, n);
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 0; k < 4; k++) t[k][b] = gf2_times(acc, b << (8 * k));
}

static void fr_crc32c_init_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ FR_CRC32C_POLY : c >> 1;
        fr_crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = fr_crc32c_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = fr_crc32c_table[0][c & 0xff] ^ (c >> 8);
            fr_crc32c_table[t][i] = c;
        }
    }
    fr_crc32c_zeros_tables(fr_crc32c_long, FR_CRC32C_LONG);
    fr_crc32c_zeros_tables(fr_crc32c_short, FR_CRC32C_SHORT);
}

/* Slicing-by-8 on the inverted crc state. */
static uint32_t fr_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = fr_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = fr_get_u64le(p) ^ crc;
        crc = fr_crc32c_table[7][w & 0xff] ^ fr_crc32c_table[6][(w >> 8) & 0xff] ^
              fr_crc32c_table[5][(w >> 16) & 0xff] ^ fr_crc32c_table[4][(w >> 24) & 0xff] ^
              fr_crc32c_table[3][(w >> 32) & 0xff] ^ fr_crc32c_table[2][(w >> 40) & 0xff] ^
              fr_crc32c_table[1][(w >> 48) & 0xff] ^ fr_crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = fr_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>

static uint32_t fr_crc32c_shift(const uint32_t t[4][256], uint32_t crc)
{
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
           t[3][crc >> 24];
}

/* Three lanes of len bytes (a multiple of 8) side by side from p, for as long as 3 * len
 * bytes remain; returns the register after them, *p and *n moved past them. */
__attribute__((target("sse4.2"))) static uint64_t fr_crc32c_lanes(uint64_t c, const uint8_t **p,
                                                                  size_t *n, size_t len,
                                                                  const uint32_t t[4][256])
{
    const uint8_t *q = *p;
    for (; *n >= 3 * len; *n -= 3 * len, q += 3 * len) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < len; i += 8) {
            c = _mm_crc32_u64(c, fr_get_u64le(q + i));
            c1 = _mm_crc32_u64(c1, fr_get_u64le(q + len + i));
            c2 = _mm_crc32_u64(c2, fr_get_u64le(q + 2 * len + i));
        }
        c = fr_crc32c_shift(t, (uint32_t)c) ^ (uint32_t)c1;
        c = fr_crc32c_shift(t, (uint32_t)c) ^ (uint32_t)c2;
    }
    *p = q;
    return c;
}

#define FR_CRC32C_FOLD_MIN 256 /* shorter buffers go to the lanes and the plain loop */

/* The folding constants, built once: x^(512+32), x^(512-32), x^(128+32) and x^(128-32)
 * modulo the polynomial, bit reflected and shifted left by one (a reflected product comes
 * out one bit short), in that order. */
static uint64_t fr_crc32c_fold_k[4];

/* x^(8 * bytes) modulo the polynomial as a reflected register: the register holding 1
 * (its top bit) advanced over that many zero bytes. */
static uint64_t fr_crc32c_fold_constant(size_t bytes)
{
    uint32_t acc[32];
    fr_crc32c_zeros(acc, bytes);
    return (uint64_t)gf2_times(acc, 0x80000000u) << 1;
}

__attribute__((target("sse4.2,pclmul"))) static inline __m128i fr_crc32c_fold1(__m128i x,
                                                                              __m128i k,
                                                                              __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Folds 64-byte blocks while they last (*n >= 64 on entry); returns the register after
 * them, *p and *n moved past them. The register c enters as an xor into the first bytes. */
__attribute__((target("sse4.2,pclmul"))) static uint64_t fr_crc32c_folded(uint64_t c,
                                                                         const uint8_t **p,
                                                                         size_t *n)
{
    const uint8_t *q = *p;
    __m128i x0 = _mm_loadu_si128((const __m128i *)q);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(q + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(q + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(q + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)(uint32_t)c));
    /* Each pair low lane first, as _mm_clmulepi64_si128 takes them. */
    const uint64_t *k = fr_crc32c_fold_k;
    const __m128i k512 = _mm_set_epi64x((long long)k[1], (long long)k[0]);
    const __m128i k128 = _mm_set_epi64x((long long)k[3], (long long)k[2]);
    for (q += 64, *n -= 64; *n >= 64; q += 64, *n -= 64) {
        x0 = fr_crc32c_fold1(x0, k512, _mm_loadu_si128((const __m128i *)q));
        x1 = fr_crc32c_fold1(x1, k512, _mm_loadu_si128((const __m128i *)(q + 16)));
        x2 = fr_crc32c_fold1(x2, k512, _mm_loadu_si128((const __m128i *)(q + 32)));
        x3 = fr_crc32c_fold1(x3, k512, _mm_loadu_si128((const __m128i *)(q + 48)));
    }
    x0 = fr_crc32c_fold1(x0, k128, x1);
    x0 = fr_crc32c_fold1(x0, k128, x2);
    x0 = fr_crc32c_fold1(x0, k128, x3);
    *p = q;
    uint64_t r = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x0));
    return _mm_crc32_u64(r, (uint64_t)_mm_extract_epi64(x0, 1));
}

static int fr_crc32c_have_fold; /* written once under fr_crc32c_once */

__attribute__((target("sse4.2"))) static uint32_t fr_crc32c_hw(uint32_t crc, const uint8_t *p,
                                                               size_t n)
{
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    if (fr_crc32c_have_fold && n >= FR_CRC32C_FOLD_MIN) {
        c = fr_crc32c_folded(c, &p, &n); /* leaves fewer than 64 bytes */
    } else {
        c = fr_crc32c_lanes(c, &p, &n, FR_CRC32C_LONG, fr_crc32c_long);
        c = fr_crc32c_lanes(c, &p, &n, FR_CRC32C_SHORT, fr_crc32c_short);
    }
    while (n >= 8) {
        c = _mm_crc32_u64(c, fr_get_u64le(p));
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}

static int fr_crc32c_have_hw = -1; /* -1 unknown, written once under fr_crc32c_once */

static void fr_crc32c_init(void)
{
    fr_crc32c_init_tables();
    __builtin_cpu_init();
    fr_crc32c_have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    fr_crc32c_have_fold = fr_crc32c_have_hw && __builtin_cpu_supports("pclmul");
    const size_t k_bytes[4] = {(512 + 32) / 8, (512 - 32) / 8, (128 + 32) / 8, (128 - 32) / 8};
    for (int i = 0; fr_crc32c_have_fold && i < 4; i++)
        fr_crc32c_fold_k[i] = fr_crc32c_fold_constant(k_bytes[i]);
}
#else
static const int fr_crc32c_have_hw = 0;
static void fr_crc32c_init(void) { fr_crc32c_init_tables(); }
#endif

/* Exposed for tests so both paths can be compared; not in base.h on purpose. */
uint32_t fr_crc32c_portable(uint32_t crc, const void *data, size_t n);
uint32_t fr_crc32c_portable(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&fr_crc32c_once, fr_crc32c_init);
    return ~fr_crc32c_sw(~crc, data, n);
}

uint32_t fr_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&fr_crc32c_once, fr_crc32c_init);
#if defined(__x86_64__)
    if (fr_crc32c_have_hw == 1) return ~fr_crc32c_hw(~crc, data, n);
#endif
    return ~fr_crc32c_sw(~crc, data, n);
}
