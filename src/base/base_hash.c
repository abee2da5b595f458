/* base_hash.c — MurmurHash3 x86_32 (as Fluss hashes bucket keys) and unsigned LEB128
 * varints. The hash reads its input as little-endian 32-bit blocks, like the reference. */
#include "base/base.h"

static inline uint32_t fr_rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

uint32_t fr_murmur3_32(const void *data, size_t n, uint32_t seed)
{
    const uint8_t *p = data;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = seed;
    size_t nblocks = n / 4;
    for (size_t i = 0; i < nblocks; i++) {
        uint32_t k = fr_get_u32le(p + 4 * i);
        k *= c1;
        k = fr_rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = fr_rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = p + 4 * nblocks;
    uint32_t k = 0;
    switch (n & 3) {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = fr_rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

size_t fr_varint_put(uint8_t *out, uint64_t v)
{
    size_t i = 0;
    while (v >= 0x80) {
        out[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[i++] = (uint8_t)v;
    return i;
}

size_t fr_varint_get(const uint8_t *p, size_t n, uint64_t *v)
{
    uint64_t r = 0;
    for (size_t i = 0; i < n && i < 10; i++) {
        uint8_t byte = p[i];
        /* The tenth byte may only carry the top bit of a 64-bit value. */
        if (i == 9 && byte > 1) return 0;
        r |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}
