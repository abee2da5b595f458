/* fuzz_kv_rbm.c — the checks of serialized RoaringBitmaps that the rbm32 and rbm64
 * aggregates run on every written value (kv_rbm32_check, kv_rbm64_check) and the unions
 * behind them, on arbitrary bytes. The first byte chooses the 32-bit or the 64-bit format.
 * Whatever the check accepts must be a bitmap CRoaring reads without complaint; its union
 * with a fixed bitmap must succeed, pass the check again and hold both inputs. */
#include <stdlib.h>

#include <roaring/roaring.h>

#include "kv/kv_int.h"

/* {0, 5, 70000..70010}: two containers. */
static uint8_t *fz_fixed32(size_t *n)
{
    roaring_bitmap_t *r = roaring_bitmap_from_range(70000, 70011, 1);
    roaring_bitmap_add(r, 0);
    roaring_bitmap_add(r, 5);
    *n = roaring_bitmap_portable_size_in_bytes(r);
    uint8_t *p = malloc(*n);
    if (!p || roaring_bitmap_portable_serialize(r, (char *)p) != *n) abort();
    roaring_bitmap_free(r);
    return p;
}

static roaring_bitmap_t *fz_read32(const uint8_t *p, size_t n)
{
    roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe((const char *)p, n);
    if (!r) abort(); /* the check accepted what CRoaring refuses */
    return r;
}

static void fz_bits32(const uint8_t *p, size_t n, fr_arena *arena)
{
    size_t used;
    fr_error err;
    if (kv_rbm32_check(p, n, &used, &err) < 0) return;
    if (used > n) abort();
    roaring_bitmap_t *in = fz_read32(p, used);
    size_t fn;
    uint8_t *fixed = fz_fixed32(&fn);
    const uint8_t *u;
    size_t un;
    if (kv_rbm32_union(p, used, fixed, fn, arena, &u, &un, &err) < 0) abort();
    size_t again;
    if (kv_rbm32_check(u, un, &again, &err) < 0 || again != un) abort();
    roaring_bitmap_t *out = fz_read32(u, un);
    roaring_bitmap_t *f = fz_read32(fixed, fn);
    if (!roaring_bitmap_is_subset(in, out) || !roaring_bitmap_is_subset(f, out)) abort();
    if (roaring_bitmap_get_cardinality(out) >
        roaring_bitmap_get_cardinality(in) + roaring_bitmap_get_cardinality(f))
        abort();
    roaring_bitmap_free(in);
    roaring_bitmap_free(out);
    roaring_bitmap_free(f);
    free(fixed);
}

static void fz_bits64(const uint8_t *p, size_t n, fr_arena *arena)
{
    size_t used;
    fr_error err;
    if (kv_rbm64_check(p, n, &used, &err) < 0) return;
    if (used > n) abort();
    /* {7 << 32 | fixed, fixed}: one bucket below and one among the input's */
    size_t fn;
    uint8_t *fixed = fz_fixed32(&fn);
    fr_buf b;
    fr_buf_init(&b);
    uint8_t head[12];
    fr_put_u64le(head, 2);
    fr_put_u32le(head + 8, 0);
    fr_buf_append(&b, head, 12, &err);
    fr_buf_append(&b, fixed, fn, &err);
    fr_put_u32le(head, 7);
    fr_buf_append(&b, head, 4, &err);
    fr_buf_append(&b, fixed, fn, &err);
    const uint8_t *u;
    size_t un;
    if (kv_rbm64_union(p, used, b.data, b.len, arena, &u, &un, &err) < 0) abort();
    size_t again;
    if (kv_rbm64_check(u, un, &again, &err) < 0 || again != un) abort();
    /* the union has at least as many buckets as each side */
    if (fr_get_u64le(u) < fr_get_u64le(p) || fr_get_u64le(u) < 2) abort();
    fr_buf_free(&b);
    free(fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fr_arena *arena = fr_arena_new(1 << 16);
    if (!arena) abort();
    if (data[0] & 1) fz_bits64(data + 1, size - 1, arena);
    else fz_bits32(data + 1, size - 1, arena);
    fr_arena_free(arena);
    return 0;
}
