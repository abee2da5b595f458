/* base_crc32c.c — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * every log batch. Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at
 * run time) and slicing-by-8 tables otherwise. Both paths give identical results; the
 * tables are built once, thread-safely, on first use. */
#include "base/base.h"

#include <pthread.h>

#define FR_CRC32C_POLY 0x82F63B78u

static uint32_t fr_crc32c_table[8][256];
static pthread_once_t fr_crc32c_once = PTHREAD_ONCE_INIT;

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

__attribute__((target("sse4.2"))) static uint32_t fr_crc32c_hw(uint32_t crc, const uint8_t *p,
                                                               size_t n)
{
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
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
