/* kv_roaring.c — the rbm32 and rbm64 aggregates: serialized RoaringBitmaps merged by union.
 *
 * rbm32 values are 32-bit RoaringBitmaps in the portable format that CRoaring and Java's
 * RoaringBitmap share (github.com/RoaringBitmap/RoaringFormatSpec). rbm64 values are the
 * portable 64-bit format of CRoaring and Java's Roaring64NavigableMap: a little-endian
 * uint64 count of buckets, then per bucket the little-endian uint32 high 32 bits (ascending)
 * and a portable 32-bit bitmap of the low 32 bits.
 *
 * Every value is checked here, byte by byte, before CRoaring sees it: CRoaring 0.2's
 * "safe" deserializer checks lengths but not that a container's contents are sorted or
 * match its cardinality, and a union over such a container is undefined. A malformed value
 * is FR_EINVAL saying what is wrong at which byte, never a crash. */
#include <roaring/roaring.h>

#include "kv/kv_int.h"

enum {
    RBM_COOKIE_NO_RUN = 12346,
    RBM_COOKIE_RUN = 12347,
    RBM_NO_OFFSET_THRESHOLD = 4,
    RBM_ARRAY_MAX = 4096,
    RBM_BITSET_BYTES = 8192,
    RBM_CONTAINERS_MAX = 65536,
};

/* Checks the contents of one container that starts at p[pos] (n bytes in all); *pos moves
 * past it. */
static int rbm_check_container(const uint8_t *p, size_t n, size_t *pos, bool run,
                               uint32_t card, int index, fr_error *err)
{
    size_t at = *pos;
    if (run) {
        FR_CHECK(n - at >= 2, FR_EINVAL, err,
                 "bitmap: container %d (run) is cut short at byte %zu", index, at);
        uint32_t nruns = fr_get_u16le(p + at);
        FR_CHECK(nruns >= 1 && (n - at - 2) / 4 >= nruns, FR_EINVAL, err,
                 "bitmap: container %d holds %u runs that do not fit at byte %zu", index,
                 nruns, at);
        uint64_t total = 0;
        int64_t prev_end = -1;
        for (uint32_t r = 0; r < nruns; r++) {
            uint32_t start = fr_get_u16le(p + at + 2 + 4 * r);
            uint32_t len = fr_get_u16le(p + at + 4 + 4 * r); /* length - 1 */
            FR_CHECK((int64_t)start > prev_end && start + len <= 0xFFFF, FR_EINVAL, err,
                     "bitmap: container %d, run %u overlaps or runs past 65535 (byte %zu)",
                     index, r, at + 2 + 4 * (size_t)r);
            prev_end = (int64_t)(start + len);
            total += len + 1;
        }
        FR_CHECK(total == card, FR_EINVAL, err,
                 "bitmap: container %d has %llu values in its runs but a cardinality of %u",
                 index, (unsigned long long)total, card);
        *pos = at + 2 + 4 * (size_t)nruns;
    } else if (card <= RBM_ARRAY_MAX) {
        FR_CHECK((n - at) / 2 >= card, FR_EINVAL, err,
                 "bitmap: container %d (%u values) is cut short at byte %zu", index, card, at);
        int32_t prev = -1;
        for (uint32_t i = 0; i < card; i++) {
            int32_t v = fr_get_u16le(p + at + 2 * i);
            FR_CHECK(v > prev, FR_EINVAL, err,
                     "bitmap: container %d is not sorted at byte %zu", index,
                     at + 2 * (size_t)i);
            prev = v;
        }
        *pos = at + 2 * (size_t)card;
    } else {
        FR_CHECK(n - at >= RBM_BITSET_BYTES, FR_EINVAL, err,
                 "bitmap: container %d (bitset) is cut short at byte %zu", index, at);
        uint64_t bits = 0;
        for (size_t w = 0; w < RBM_BITSET_BYTES / 8; w++)
            bits += (uint64_t)__builtin_popcountll(fr_get_u64le(p + at + 8 * w));
        FR_CHECK(bits == card, FR_EINVAL, err,
                 "bitmap: container %d has %llu bits set but a cardinality of %u", index,
                 (unsigned long long)bits, card);
        *pos = at + RBM_BITSET_BYTES;
    }
    return FR_OK;
}

/* Reads the cookie: the number of containers, and where the run flags are (or none). */
static int rbm_check_cookie(const uint8_t *p, size_t n, uint32_t *size, const uint8_t **runs,
                            size_t *pos, fr_error *err)
{
    FR_CHECK(n >= 4, FR_EINVAL, err, "bitmap: %zu bytes are too short for a RoaringBitmap", n);
    uint32_t cookie = fr_get_u32le(p);
    *runs = NULL;
    if ((cookie & 0xFFFF) == RBM_COOKIE_RUN) {
        *size = (cookie >> 16) + 1;
        size_t flags = (*size + 7) / 8;
        FR_CHECK(n - 4 >= flags, FR_EINVAL, err,
                 "bitmap: the run flags of %u containers are cut short", *size);
        *runs = p + 4;
        *pos = 4 + flags;
    } else {
        FR_CHECK(cookie == RBM_COOKIE_NO_RUN, FR_EINVAL, err,
                 "bitmap: unknown cookie 0x%08x (not a portable RoaringBitmap)", cookie);
        FR_CHECK(n >= 8, FR_EINVAL, err, "bitmap: the container count is cut short");
        *size = fr_get_u32le(p + 4);
        FR_CHECK(*size <= RBM_CONTAINERS_MAX, FR_EINVAL, err,
                 "bitmap: %u containers (at most %d)", *size, RBM_CONTAINERS_MAX);
        *pos = 8;
    }
    return FR_OK;
}

int kv_rbm32_check(const uint8_t *p, size_t n, size_t *used, fr_error *err)
{
    uint32_t size = 0;
    const uint8_t *runs = NULL;
    size_t pos = 0;
    FR_TRY(rbm_check_cookie(p, n, &size, &runs, &pos, err));
    size_t header = pos;
    FR_CHECK((n - pos) / 4 >= size, FR_EINVAL, err,
             "bitmap: the headers of %u containers are cut short", size);
    pos += 4 * (size_t)size;
    bool offsets = !runs || size >= RBM_NO_OFFSET_THRESHOLD;
    size_t offsets_at = pos;
    if (offsets) {
        FR_CHECK((n - pos) / 4 >= size, FR_EINVAL, err,
                 "bitmap: the offsets of %u containers are cut short", size);
        pos += 4 * (size_t)size;
    }
    int32_t prev_key = -1;
    for (uint32_t i = 0; i < size; i++) {
        int32_t key = fr_get_u16le(p + header + 4 * i);
        uint32_t card = (uint32_t)fr_get_u16le(p + header + 4 * i + 2) + 1;
        FR_CHECK(key > prev_key, FR_EINVAL, err,
                 "bitmap: container keys are not ascending at container %u", i);
        prev_key = key;
        if (offsets)
            FR_CHECK(fr_get_u32le(p + offsets_at + 4 * i) == pos, FR_EINVAL, err,
                     "bitmap: container %u is at byte %zu but its offset says %u", i, pos,
                     fr_get_u32le(p + offsets_at + 4 * i));
        bool run = runs && ((runs[i / 8] >> (i % 8)) & 1);
        FR_TRY(rbm_check_container(p, n, &pos, run, card, (int)i, err));
    }
    *used = pos;
    return FR_OK;
}

int kv_rbm64_check(const uint8_t *p, size_t n, size_t *used, fr_error *err)
{
    FR_CHECK(n >= 8, FR_EINVAL, err,
             "bitmap: %zu bytes are too short for a 64-bit RoaringBitmap", n);
    uint64_t count = fr_get_u64le(p);
    /* Each bucket takes at least 4 bytes of key and an 8-byte empty bitmap. */
    FR_CHECK(count <= (n - 8) / 12, FR_EINVAL, err,
             "bitmap: %llu buckets cannot fit in %zu bytes", (unsigned long long)count, n);
    size_t pos = 8;
    int64_t prev = -1;
    for (uint64_t i = 0; i < count; i++) {
        FR_CHECK(n - pos >= 4, FR_EINVAL, err, "bitmap: bucket %llu is cut short",
                 (unsigned long long)i);
        int64_t high = fr_get_u32le(p + pos);
        FR_CHECK(high > prev, FR_EINVAL, err,
                 "bitmap: bucket keys are not ascending at bucket %llu (byte %zu)",
                 (unsigned long long)i, pos);
        prev = high;
        pos += 4;
        size_t len;
        int rc = kv_rbm32_check(p + pos, n - pos, &len, err);
        if (rc < 0)
            return fr_error_wrap(err, "bucket %llu at byte %zu", (unsigned long long)i, pos);
        pos += len;
    }
    *used = pos;
    return FR_OK;
}

/* A checked value must be the whole cell: trailing bytes are malformed too. */
static int rbm_check_whole(bool wide, const uint8_t *p, size_t n, fr_error *err)
{
    size_t used;
    FR_TRY(wide ? kv_rbm64_check(p, n, &used, err) : kv_rbm32_check(p, n, &used, err));
    FR_CHECK(used == n, FR_EINVAL, err, "bitmap: %zu bytes follow the %zu-byte bitmap",
             n - used, used);
    return FR_OK;
}

/* Unions two checked portable 32-bit bitmaps, appending the serialized result to out. */
static int rbm32_union_into(const uint8_t *a, size_t an, const uint8_t *b, size_t bn,
                            fr_buf *out, fr_error *err)
{
    roaring_bitmap_t *x = roaring_bitmap_portable_deserialize_safe((const char *)a, an);
    roaring_bitmap_t *y = x ? roaring_bitmap_portable_deserialize_safe((const char *)b, bn)
                            : NULL;
    int rc = FR_OK;
    if (!x || !y) {
        rc = fr_fail(err, FR_EINVAL, "bitmap: CRoaring refused a bitmap that passed the check");
        goto done;
    }
    roaring_bitmap_or_inplace(x, y);
    roaring_bitmap_run_optimize(x);
    size_t size = roaring_bitmap_portable_size_in_bytes(x);
    rc = fr_buf_reserve(out, size, err);
    if (rc == FR_OK) {
        size_t wrote = roaring_bitmap_portable_serialize(x, (char *)out->data + out->len);
        assert(wrote == size);
        (void)wrote;
        out->len += size;
    }
done:
    if (x) roaring_bitmap_free(x);
    if (y) roaring_bitmap_free(y);
    return rc;
}

/* Moves a finished buffer into arena memory. */
static int rbm_to_arena(fr_buf *b, fr_arena *arena, const uint8_t **out, size_t *outn,
                        fr_error *err)
{
    uint8_t *m = fr_arena_alloc(arena, b->len ? b->len : 1);
    if (!m) return fr_fail(err, FR_ENOMEM, "bitmap: out of memory for %zu bytes", b->len);
    if (b->len) memcpy(m, b->data, b->len);
    *out = m;
    *outn = b->len;
    return FR_OK;
}

int kv_rbm32_union(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, fr_arena *arena,
                   const uint8_t **out, size_t *outn, fr_error *err)
{
    FR_TRY(rbm_check_whole(false, a, an, err));
    FR_TRY(rbm_check_whole(false, b, bn, err));
    fr_buf buf;
    fr_buf_init(&buf);
    int rc = rbm32_union_into(a, an, b, bn, &buf, err);
    if (rc == FR_OK) rc = rbm_to_arena(&buf, arena, out, outn, err);
    fr_buf_free(&buf);
    return rc;
}

/* A cursor over the buckets of a checked 64-bit bitmap. */
typedef struct rbm64_cursor {
    const uint8_t *p;
    size_t n, pos;
    uint64_t left;
    uint32_t high;
    const uint8_t *bits;
    size_t bits_len;
} rbm64_cursor;

static bool rbm64_next(rbm64_cursor *c)
{
    if (c->left == 0) return false;
    c->high = fr_get_u32le(c->p + c->pos);
    c->bits = c->p + c->pos + 4;
    fr_error ignored;
    int rc = kv_rbm32_check(c->bits, c->n - c->pos - 4, &c->bits_len, &ignored);
    assert(rc == FR_OK); /* the whole value was checked before */
    (void)rc;
    c->pos += 4 + c->bits_len;
    c->left--;
    return true;
}

static int rbm64_put_bucket(fr_buf *out, uint32_t high, const uint8_t *bits, size_t len,
                            fr_error *err)
{
    uint8_t h[4];
    fr_put_u32le(h, high);
    FR_TRY(fr_buf_append(out, h, 4, err));
    return fr_buf_append(out, bits, len, err);
}

/* Merges the bucket lists of a and b by their high bits, unioning buckets found in both. */
static int rbm64_merge(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, fr_buf *out,
                       fr_error *err)
{
    rbm64_cursor x = { a, an, 8, fr_get_u64le(a), 0, NULL, 0 };
    rbm64_cursor y = { b, bn, 8, fr_get_u64le(b), 0, NULL, 0 };
    FR_TRY(fr_buf_append_zeros(out, 8, err));
    uint64_t count = 0;
    bool hx = rbm64_next(&x), hy = rbm64_next(&y);
    while (hx || hy) {
        if (hx && (!hy || x.high < y.high)) {
            FR_TRY(rbm64_put_bucket(out, x.high, x.bits, x.bits_len, err));
            hx = rbm64_next(&x);
        } else if (!hx || y.high < x.high) {
            FR_TRY(rbm64_put_bucket(out, y.high, y.bits, y.bits_len, err));
            hy = rbm64_next(&y);
        } else {
            uint8_t h[4];
            fr_put_u32le(h, x.high);
            FR_TRY(fr_buf_append(out, h, 4, err));
            FR_TRY(rbm32_union_into(x.bits, x.bits_len, y.bits, y.bits_len, out, err));
            hx = rbm64_next(&x);
            hy = rbm64_next(&y);
        }
        count++;
    }
    fr_put_u64le(out->data, count);
    return FR_OK;
}

int kv_rbm64_union(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, fr_arena *arena,
                   const uint8_t **out, size_t *outn, fr_error *err)
{
    FR_TRY(rbm_check_whole(true, a, an, err));
    FR_TRY(rbm_check_whole(true, b, bn, err));
    fr_buf buf;
    fr_buf_init(&buf);
    int rc = rbm64_merge(a, an, b, bn, &buf, err);
    if (rc == FR_OK) rc = rbm_to_arena(&buf, arena, out, outn, err);
    fr_buf_free(&buf);
    return rc;
}

int kv_agg_check_input(fr_agg_fn fn, const fr_value *in, fr_error *err)
{
    if (in->is_null || (fn != FR_AGG_RBM32 && fn != FR_AGG_RBM64)) return FR_OK;
    return rbm_check_whole(fn == FR_AGG_RBM64, in->v.s.ptr, in->v.s.len, err);
}
