/* test_base.c — unit tests of src/base: errors, allocation with fault injection, buffers,
 * arenas, CRC-32C, murmur3, varints, clocks, logging, files, parsers and the config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

uint32_t fr_crc32c_portable(uint32_t crc, const void *data, size_t n);

/* A fresh scratch directory under FIRTH_TEST_TMP (or /tmp) for one test. */
static void scratch_dir(char *out, size_t cap, const char *name)
{
    const char *root = getenv("FIRTH_TEST_TMP");
    if (!root || !*root) root = "/tmp";
    snprintf(out, cap, "%s/test_base.%ld/%s", root, (long)getpid(), name);
    fr_error err;
    assert_int_equal(fr_remove_tree(out, &err), 0);
    assert_int_equal(fr_mkdirs(out, &err), 0);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_error_fail_and_wrap(void **state)
{
    (void)state;
    fr_error err;
    fr_error_clear(&err);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.msg, "");
    assert_int_equal(fr_fail(&err, FR_EINVAL, "bad %d", 42), FR_EINVAL);
    assert_int_equal(err.code, FR_EINVAL);
    assert_string_equal(err.msg, "bad 42");
    assert_int_equal(fr_error_wrap(&err, "table %s", "db.t"), FR_EINVAL);
    assert_string_equal(err.msg, "table db.t: bad 42");
    assert_int_equal(fr_fail(NULL, FR_EIO, "x"), FR_EIO);
    /* A long message is cut, never overflowed. */
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fr_fail(&err, FR_EIO, "%s", big);
    assert_int_equal(strlen(err.msg), FR_ERROR_MSG_MAX - 1);
    fr_error_wrap(&err, "%s", big);
    assert_int_equal(strlen(err.msg), FR_ERROR_MSG_MAX - 1);
}

static void test_error_errno(void **state)
{
    (void)state;
    fr_error err;
    assert_int_equal(fr_fail_errno(&err, ENOENT, "open %s", "/x/y"), FR_ENOTFOUND);
    assert_string_equal(err.msg, "open /x/y: No such file or directory");
    assert_int_equal(fr_fail_errno(&err, ENOSPC, "write"), FR_ENOSPC);
    assert_int_equal(fr_fail_errno(&err, EEXIST, "mkdir"), FR_EEXIST);
    assert_int_equal(fr_fail_errno(&err, EACCES, "open"), FR_EIO);
    assert_int_equal(err.code, FR_EIO);
}

static void test_strcode(void **state)
{
    (void)state;
    assert_string_equal(fr_strcode(FR_OK), "OK");
    assert_string_equal(fr_strcode(FR_EINVAL), "EINVAL");
    assert_string_equal(fr_strcode(FR_EDUPLICATE), "EDUPLICATE");
    assert_string_equal(fr_strcode(FR_ECORRUPT), "ECORRUPT");
    assert_string_equal(fr_strcode(-999), "EUNKNOWN");
    for (int c = FR_EDUPLICATE; c <= FR_OK; c++) assert_string_not_equal(fr_strcode(c), "EUNKNOWN");
}

static int helper_try(int fail, fr_error *err)
{
    FR_CHECK(!fail, FR_ERANGE, err, "fail=%d", fail);
    return 7;
}

static int helper_outer(int fail, fr_error *err)
{
    FR_TRY(helper_try(fail, err));
    return 1;
}

static int helper_goto(int fail, fr_error *err, int *cleaned)
{
    int rc;
    FR_GOTO(helper_try(fail, err));
    return 0;
fail:
    *cleaned = 1;
    return rc;
}

static void test_error_macros(void **state)
{
    (void)state;
    fr_error err;
    assert_int_equal(helper_outer(0, &err), 1);
    assert_int_equal(helper_outer(1, &err), FR_ERANGE);
    assert_string_equal(err.msg, "fail=1");
    int cleaned = 0;
    assert_int_equal(helper_goto(0, &err, &cleaned), 0);
    assert_int_equal(cleaned, 0);
    assert_int_equal(helper_goto(1, &err, &cleaned), FR_ERANGE);
    assert_int_equal(cleaned, 1);
}

/* ---- memory ---------------------------------------------------------------------------- */

static void test_alloc_basic(void **state)
{
    (void)state;
    void *p = fr_malloc(0);
    assert_non_null(p);
    fr_free(p);
    int *z = fr_calloc(10, sizeof(int));
    assert_non_null(z);
    for (int i = 0; i < 10; i++) assert_int_equal(z[i], 0);
    z = fr_realloc(z, 1000 * sizeof(int));
    assert_non_null(z);
    assert_int_equal(z[9], 0);
    fr_free(z);
    fr_free(NULL);
    char *s = fr_strdup("hello");
    assert_string_equal(s, "hello");
    fr_free(s);
    s = fr_strndup("hello", 3);
    assert_string_equal(s, "hel");
    fr_free(s);
    s = fr_strndup("hi", 10);
    assert_string_equal(s, "hi");
    fr_free(s);
    /* calloc overflow must fail rather than wrap. */
    assert_null(fr_calloc(SIZE_MAX / 2, 4));
    assert_null(fr_malloc(SIZE_MAX));
}

static void test_alloc_fail_after(void **state)
{
    (void)state;
    fr_alloc_fail_after(3);
    void *a = fr_malloc(8);
    void *b = fr_calloc(1, 8);
    void *c = fr_malloc(8); /* the third one fails */
    void *d = fr_malloc(8); /* injection is off again */
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_non_null(d);
    fr_free(a);
    fr_free(b);
    fr_free(d);
    fr_alloc_fail_after(1);
    assert_null(fr_strdup("x"));
    fr_alloc_fail_after(1);
    void *r = fr_realloc(NULL, 4);
    assert_null(r);
    fr_alloc_fail_after(2);
    fr_alloc_fail_after(0);
    a = fr_malloc(1);
    b = fr_malloc(1);
    assert_non_null(a);
    assert_non_null(b);
    fr_free(a);
    fr_free(b);
}

/* ---- buffers --------------------------------------------------------------------------- */

static void test_buf(void **state)
{
    (void)state;
    fr_error err;
    fr_buf b;
    fr_buf_init(&b);
    assert_null(b.data);
    assert_int_equal(fr_buf_append(&b, "abc", 3, &err), 0);
    assert_int_equal(fr_buf_append(&b, NULL, 0, &err), 0);
    assert_int_equal(b.len, 3);
    assert_int_equal(fr_buf_printf(&b, &err, "-%d-%s", 12, "x"), 0);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "abc-12-x", 8);
    assert_int_equal(fr_buf_append_zeros(&b, 3, &err), 0);
    assert_int_equal(b.len, 11);
    assert_int_equal(b.data[10], 0);
    assert_int_equal(fr_buf_pad(&b, 8, &err), 0);
    assert_int_equal(b.len, 16);
    assert_int_equal(fr_buf_pad(&b, 8, &err), 0);
    assert_int_equal(b.len, 16);
    assert_int_equal(fr_buf_pad(&b, 3, &err), FR_EINVAL);
    assert_int_equal(fr_buf_pad(&b, 1, &err), 0);
    assert_int_equal(b.len, 16);
    /* Grow well beyond the first capacity. */
    for (int i = 0; i < 10000; i++) assert_int_equal(fr_buf_append(&b, &i, sizeof i, &err), 0);
    assert_int_equal(b.len, 16 + 40000);
    int v;
    memcpy(&v, b.data + 16 + 4 * 9999, 4);
    assert_int_equal(v, 9999);
    assert_true(b.cap >= b.len);
    size_t cap = b.cap;
    fr_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, cap);
    assert_int_equal(fr_buf_append(&b, "xyz", 3, &err), 0);
    size_t len = 0;
    uint8_t *p = fr_buf_steal(&b, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, "xyz", 3);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    fr_free(p);
    p = fr_buf_steal(&b, &len);
    assert_non_null(p);
    assert_int_equal(len, 0);
    fr_free(p);
    fr_buf_free(&b);
    /* Big printf output. */
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(fr_buf_printf(&b, &err, "%s!", big), 0);
    assert_int_equal(b.len, sizeof big);
    assert_int_equal(b.data[b.len - 1], '!');
    fr_buf_free(&b);
    assert_int_equal(fr_buf_reserve(&b, SIZE_MAX - 10, &err), FR_ENOMEM);
    fr_buf_free(&b);
}

static void test_buf_alloc_failure(void **state)
{
    (void)state;
    fr_error err;
    fr_buf b;
    fr_buf_init(&b);
    assert_int_equal(fr_buf_append(&b, "abc", 3, &err), 0);
    fr_alloc_fail_after(1);
    uint8_t big[200] = {0};
    assert_int_equal(fr_buf_append(&b, big, sizeof big, &err), FR_ENOMEM);
    assert_int_equal(err.code, FR_ENOMEM);
    /* The buffer is unchanged and usable after the failure. */
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "abc", 3);
    fr_alloc_fail_after(1);
    assert_int_equal(fr_buf_printf(&b, &err, "%0200d", 1), FR_ENOMEM);
    fr_alloc_fail_after(1);
    assert_int_equal(fr_buf_append_zeros(&b, 500, &err), FR_ENOMEM);
    assert_int_equal(fr_buf_append(&b, big, sizeof big, &err), 0);
    assert_int_equal(b.len, 203);
    fr_buf_free(&b);
}

/* A pool hands back the memory given to it, empty, largest first, and keeps no more than
 * its byte budget and its slots; a NULL pool keeps nothing. */
static void test_bufpool(void **state)
{
    (void)state;
    fr_error err;
    fr_bufpool *p = fr_bufpool_new(3000);
    assert_non_null(p);
    fr_buf a, b, c;
    fr_bufpool_take(p, &a);
    assert_null(a.data);
    assert_int_equal(fr_buf_append_zeros(&a, 1000, &err), 0); /* cap 1024 */
    fr_bufpool_take(p, &b);
    assert_int_equal(fr_buf_append_zeros(&b, 1500, &err), 0); /* cap 2048 */
    uint8_t *a_mem = a.data;
    fr_bufpool_give(p, &a);
    assert_null(a.data);
    assert_int_equal(fr_bufpool_kept_bytes(p), 1024);
    fr_bufpool_give(p, &b); /* 1024 + 2048 > 3000: freed */
    assert_null(b.data);
    assert_int_equal(fr_bufpool_kept_bytes(p), 1024);
    fr_bufpool_take(p, &c);
    assert_ptr_equal(c.data, a_mem);
    assert_int_equal(c.len, 0);
    assert_int_equal(c.cap, 1024);
    assert_int_equal(fr_bufpool_kept_bytes(p), 0);
    fr_bufpool_give(p, &c);

    /* The slots bound the count of small buffers kept. */
    fr_buf many[FR_BUFPOOL_SLOTS + 2];
    for (int i = 0; i < FR_BUFPOOL_SLOTS + 2; i++) {
        fr_buf_init(&many[i]);
        assert_int_equal(fr_buf_append_zeros(&many[i], 10, &err), 0);
    }
    fr_bufpool_free(p);
    p = fr_bufpool_new(1 << 20);
    for (int i = 0; i < FR_BUFPOOL_SLOTS + 2; i++) fr_bufpool_give(p, &many[i]);
    assert_int_equal(fr_bufpool_kept_bytes(p), FR_BUFPOOL_SLOTS * 64);
    fr_bufpool_free(p);

    /* Largest first, whatever the order they came back in. */
    p = fr_bufpool_new(1 << 20);
    size_t sizes[3] = {100, 5000, 700};
    for (int i = 0; i < 3; i++) {
        fr_buf_init(&a);
        assert_int_equal(fr_buf_append_zeros(&a, sizes[i], &err), 0);
        fr_bufpool_give(p, &a);
    }
    size_t caps[3];
    for (int i = 0; i < 3; i++) {
        fr_bufpool_take(p, &a);
        caps[i] = a.cap;
        fr_buf_free(&a);
    }
    assert_true(caps[0] >= 5000 && caps[1] >= 700 && caps[1] < 5000 && caps[2] < 700);
    assert_int_equal(fr_bufpool_kept_bytes(p), 0);
    fr_bufpool_free(p);

    fr_bufpool_take(NULL, &a);
    assert_int_equal(fr_buf_append(&a, "x", 1, &err), 0);
    fr_bufpool_give(NULL, &a);
    assert_null(a.data);
    assert_int_equal(fr_bufpool_kept_bytes(NULL), 0);
}

/* ---- arena ----------------------------------------------------------------------------- */

static void test_arena(void **state)
{
    (void)state;
    fr_arena *a = fr_arena_new(1024);
    assert_non_null(a);
    char *prev = NULL;
    for (int i = 0; i < 1000; i++) {
        size_t n = (size_t)(i % 37) + 1;
        char *p = fr_arena_alloc(a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, i & 0xff, n);
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    void *big = fr_arena_alloc(a, 100000);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % 16, 0);
    memset(big, 1, 100000);
    void *zero = fr_arena_alloc(a, 0);
    assert_non_null(zero);
    char *s = fr_arena_strndup(a, "hello world", 5);
    assert_string_equal(s, "hello");
    s = fr_arena_strndup(a, "hi", 10);
    assert_string_equal(s, "hi");
    assert_null(fr_arena_alloc(a, SIZE_MAX - 8));
    fr_arena_free(a);
    fr_arena_free(NULL);
}

static void test_arena_alloc_failure(void **state)
{
    (void)state;
    fr_alloc_fail_after(1);
    assert_null(fr_arena_new(100));
    fr_arena *a = fr_arena_new(100);
    assert_non_null(a);
    fr_alloc_fail_after(1);
    assert_null(fr_arena_alloc(a, 10));
    assert_non_null(fr_arena_alloc(a, 10));
    fr_arena_free(a);
}

/* ---- checksums and hashes -------------------------------------------------------------- */

static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(fr_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(fr_crc32c_portable(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(fr_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4 vectors: 32 zero bytes, 32 0xff bytes, 0..31 ascending. */
    uint8_t buf[32];
    memset(buf, 0, sizeof buf);
    assert_int_equal(fr_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    assert_int_equal(fr_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    assert_int_equal(fr_crc32c(0, buf, 32), 0x46DD794Eu);
    assert_int_equal(fr_crc32c_portable(0, buf, 32), 0x46DD794Eu);
}

/* Long buffers go through three lanes joined by the zero-byte tables (8 KiB lanes, then
 * 256-byte ones): every length around the lanes' edges, at every alignment, must give the
 * portable result. */
static void test_crc32c_long(void **state)
{
    (void)state;
    enum { MAX = 3 * 8192 * 2 + 3 * 256 + 64 };
    uint8_t *data = malloc(MAX + 8);
    assert_non_null(data);
    for (size_t i = 0; i < MAX + 8; i++) data[i] = (uint8_t)(i * 131 + (i >> 7));
    /* The lanes' block sizes, and the folding's: 256 bytes to start, then 64 at a time. */
    const size_t edges[] = { 256, 256 + 64, 1024 + 32, 3 * 256, 3 * 8192, 2 * 3 * 8192,
                             3 * 8192 + 3 * 256 };
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        for (size_t n = edges[e] - 9; n <= edges[e] + 9 && n <= MAX; n++)
            for (size_t off = 0; off < 8; off += 3)
                assert_int_equal(fr_crc32c(0x1234u, data + off, n),
                                 fr_crc32c_portable(0x1234u, data + off, n));
    assert_int_equal(fr_crc32c(0, data, MAX), fr_crc32c_portable(0, data, MAX));
    free(data);
}

static void test_crc32c_incremental_and_unaligned(void **state)
{
    (void)state;
    unsigned seed = (unsigned)time(NULL);
    print_message("crc32c seed %u\n", seed);
    srand(seed);
    uint8_t data[1100];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)rand();
    for (size_t off = 0; off < 9; off++) {
        for (size_t n = 0; n < 300; n += 7) {
            uint32_t whole = fr_crc32c(0, data + off, n);
            assert_int_equal(whole, fr_crc32c_portable(0, data + off, n));
            for (size_t cut = 0; cut <= n; cut += 13) {
                uint32_t c = fr_crc32c(0, data + off, cut);
                c = fr_crc32c(c, data + off + cut, n - cut);
                assert_int_equal(c, whole);
            }
        }
    }
    assert_int_equal(fr_crc32c(0, data, sizeof data), fr_crc32c_portable(0, data, sizeof data));
}

static void test_murmur3(void **state)
{
    (void)state;
    assert_int_equal(fr_murmur3_32("", 0, 0), 0);
    assert_int_equal(fr_murmur3_32("", 0, 1), 0x514E28B7u);
    assert_int_equal(fr_murmur3_32("hello", 5, 0), 0x248bfa47u);
    assert_int_equal(fr_murmur3_32("Hello, world!", 13, 1234), 0xfaf6cdb3u);
    assert_int_equal(fr_murmur3_32("The quick brown fox jumps over the lazy dog", 43, 0x9747b28c),
                     0x2FA826CDu);
    uint8_t zero4[4] = {0};
    assert_int_equal(fr_murmur3_32(zero4, 4, 0), 0x2362F9DEu);
    assert_int_equal(fr_murmur3_32("a", 1, 0x9747b28c), 0x7FA09EA6u);
    assert_int_equal(fr_murmur3_32("ab", 2, 0x9747b28c), 0x74875592u);
    assert_int_equal(fr_murmur3_32("abc", 3, 0x9747b28c), 0xC84A62DDu);
}

static void test_varint(void **state)
{
    (void)state;
    static const uint64_t cases[] = {0, 1, 127, 128, 255, 300, 16383, 16384, (1ULL << 35) - 1,
                                     1ULL << 56, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t out[10];
        size_t n = fr_varint_put(out, cases[i]);
        assert_true(n >= 1 && n <= 10);
        uint64_t v = 0;
        assert_int_equal(fr_varint_get(out, n, &v), n);
        assert_true(v == cases[i]);
        if (n > 1) assert_int_equal(fr_varint_get(out, n - 1, &v), 0);
    }
    uint8_t out[10];
    assert_int_equal(fr_varint_put(out, 300), 2);
    assert_int_equal(out[0], 0xac);
    assert_int_equal(out[1], 0x02);
    assert_int_equal(fr_varint_put(out, UINT64_MAX), 10);
    uint64_t v;
    /* 11 continuation bytes, and a tenth byte carrying more than one bit. */
    uint8_t bad[11];
    memset(bad, 0x80, sizeof bad);
    assert_int_equal(fr_varint_get(bad, sizeof bad, &v), 0);
    memset(bad, 0xff, 9);
    bad[9] = 0x02;
    assert_int_equal(fr_varint_get(bad, 10, &v), 0);
    assert_int_equal(fr_varint_get(bad, 0, &v), 0);
    int64_t zz[] = {0, -1, 1, -2, INT64_MAX, INT64_MIN};
    uint64_t enc[] = {0, 1, 2, 3, UINT64_MAX - 1, UINT64_MAX};
    for (int i = 0; i < 6; i++) {
        assert_true(fr_zigzag_enc(zz[i]) == enc[i]);
        assert_true(fr_zigzag_dec(enc[i]) == zz[i]);
    }
}

static void test_le_access(void **state)
{
    (void)state;
    uint8_t b[8];
    fr_put_u16le(b, 0x1234);
    assert_int_equal(b[0], 0x34);
    assert_int_equal(fr_get_u16le(b), 0x1234);
    fr_put_u32le(b, 0xdeadbeef);
    assert_int_equal(b[0], 0xef);
    assert_int_equal(fr_get_u32le(b), 0xdeadbeef);
    fr_put_u64le(b, 0x0102030405060708ULL);
    assert_int_equal(b[0], 0x08);
    assert_int_equal(b[7], 0x01);
    assert_true(fr_get_u64le(b) == 0x0102030405060708ULL);
}

/* ---- clocks and logging ---------------------------------------------------------------- */

static void test_clocks(void **state)
{
    (void)state;
    int64_t now = fr_now_ms();
    assert_true(now > 1700000000000LL);          /* after 2023 */
    assert_true(now < 4102444800000LL);          /* before 2100 */
    int64_t a = fr_monotonic_ns();
    int64_t b = fr_monotonic_ns();
    assert_true(b >= a);
}

/* Runs fn with stderr redirected into a file and returns what it wrote. */
static size_t capture_stderr(void (*fn)(void), char *out, size_t cap)
{
    char path[] = "/tmp/test_base_log_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    unlink(path);
    assert_true(n >= 0);
    out[n] = '\0';
    return (size_t)n;
}

static void log_some(void)
{
    fr_log_set_level(FR_LOG_WARN);
    FR_INFO("hidden %d", 1);
    FR_WARN("shown %d", 2);
    FR_ERROR("also shown");
    fr_log_set_level(FR_LOG_OFF);
    FR_ERROR("off");
    fr_log_set_level(FR_LOG_DEBUG);
    FR_DEBUG("debug line");
    fr_log_set_level(FR_LOG_INFO);
}

static void log_long(void)
{
    char big[10000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    FR_WARN("%s", big);
}

static void test_logging(void **state)
{
    (void)state;
    char out[16384];
    size_t n = capture_stderr(log_some, out, sizeof out);
    assert_true(n > 0);
    assert_null(strstr(out, "hidden"));
    assert_null(strstr(out, "off"));
    char *w = strstr(out, " WARN  shown 2\n");
    assert_non_null(w);
    /* "2026-11-30T12:00:00.123Z" is 24 characters. */
    assert_int_equal(w - out, 24);
    assert_int_equal(out[4], '-');
    assert_int_equal(out[10], 'T');
    assert_int_equal(out[19], '.');
    assert_int_equal(out[23], 'Z');
    assert_non_null(strstr(out, " ERROR also shown\n"));
    assert_non_null(strstr(out, " DEBUG debug line\n"));
    n = capture_stderr(log_long, out, sizeof out);
    assert_true(n <= 4096);
    assert_int_equal(out[n - 1], '\n');
    assert_memory_equal(out + n - 4, "...", 3);

    fr_log_level lvl;
    assert_int_equal(fr_log_level_parse("debug", &lvl), 0);
    assert_int_equal(lvl, FR_LOG_DEBUG);
    assert_int_equal(fr_log_level_parse("INFO", &lvl), 0);
    assert_int_equal(lvl, FR_LOG_INFO);
    assert_int_equal(fr_log_level_parse("warn", &lvl), 0);
    assert_int_equal(lvl, FR_LOG_WARN);
    assert_int_equal(fr_log_level_parse("error", &lvl), 0);
    assert_int_equal(lvl, FR_LOG_ERROR);
    assert_int_equal(fr_log_level_parse("off", &lvl), 0);
    assert_int_equal(lvl, FR_LOG_OFF);
    assert_int_equal(fr_log_level_parse("loud", &lvl), FR_EINVAL);
    assert_int_equal(fr_log_level_parse("", &lvl), FR_EINVAL);
}

#define LOG_THREADS 4
#define LOG_LINES 200

static void *log_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < LOG_LINES; i++) FR_WARN("thread %d line %d %s", id, i, "payload-payload");
    return NULL;
}

static void log_from_threads(void)
{
    pthread_t th[LOG_THREADS];
    for (int i = 0; i < LOG_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, log_worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < LOG_THREADS; i++) pthread_join(th[i], NULL);
}

/* Lines written by several threads at once never interleave. */
static void test_logging_threads(void **state)
{
    (void)state;
    static char out[LOG_THREADS * LOG_LINES * 80 + 1];
    fr_log_set_level(FR_LOG_INFO);
    size_t n = capture_stderr(log_from_threads, out, sizeof out);
    int count[LOG_THREADS] = {0};
    char *line = out;
    size_t lines = 0;
    while (line < out + n) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        int id = -1, i = -1;
        char tail[32];
        assert_int_equal(sscanf(line + 24, " WARN  thread %d line %d %31s", &id, &i, tail), 3);
        assert_true(id >= 0 && id < LOG_THREADS);
        assert_int_equal(i, count[id]); /* each thread's lines stay in order */
        assert_string_equal(tail, "payload-payload");
        count[id]++;
        lines++;
        line = nl + 1;
    }
    assert_int_equal(lines, LOG_THREADS * LOG_LINES);
}

/* FIRTH_LOG_LEVEL decides the level until the program sets one; checked in a child process
 * because the variable is read once per process. */
static void test_logging_env(void **state)
{
    (void)state;
    const char *levels[] = {"error", "DEBUG", "bogus"};
    const int expect_warn_shown[] = {0, 1, 1};
    const int expect_debug_shown[] = {0, 1, 0};
    for (int k = 0; k < 3; k++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* A fresh program: this process has set its level already. */
            dup2(fds[1], STDERR_FILENO);
            close(fds[0]);
            setenv("FIRTH_LOG_LEVEL", levels[k], 1);
            execl("/proc/self/exe", "test_base", "--log-child", (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        char buf[1024];
        size_t got = 0;
        ssize_t r;
        while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
        buf[got] = '\0';
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(strstr(buf, "warn-line") != NULL, expect_warn_shown[k]);
        assert_int_equal(strstr(buf, "debug-line") != NULL, expect_debug_shown[k]);
    }
}

/* A program's default level stands when FIRTH_LOG_LEVEL names none; the variable wins over
 * it. Checked in child processes, like the variable itself. */
static void test_logging_default(void **state)
{
    (void)state;
    const char *levels[] = {NULL, "", "info", "bogus", "off"};
    const int expect_info_shown[] = {0, 0, 1, 0, 0};
    const int expect_warn_shown[] = {1, 1, 1, 1, 0};
    for (int k = 0; k < 5; k++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            dup2(fds[1], STDERR_FILENO);
            close(fds[0]);
            if (levels[k])
                setenv("FIRTH_LOG_LEVEL", levels[k], 1);
            else
                unsetenv("FIRTH_LOG_LEVEL");
            execl("/proc/self/exe", "test_base", "--log-child-default", (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        char buf[1024];
        size_t got = 0;
        ssize_t r;
        while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
        buf[got] = '\0';
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(strstr(buf, "info-line") != NULL, expect_info_shown[k]);
        assert_int_equal(strstr(buf, "warn-line") != NULL, expect_warn_shown[k]);
    }
}

/* CRC tables are built once even when the first calls race. */
static void *crc_worker(void *arg)
{
    uint32_t *out = arg;
    *out = fr_crc32c(0, "123456789", 9);
    return NULL;
}

static void test_crc32c_threads(void **state)
{
    (void)state;
    pthread_t th[4];
    uint32_t res[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, crc_worker, &res[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(res[i], 0xE3069283u);
    }
}

/* ---- files ----------------------------------------------------------------------------- */

static void test_files(void **state)
{
    (void)state;
    fr_error err;
    char dir[512], path[700], sub[700];
    scratch_dir(dir, sizeof dir, "files");
    snprintf(sub, sizeof sub, "%s/a/b//c/", dir);
    assert_int_equal(fr_mkdirs(sub, &err), 0);
    assert_int_equal(fr_mkdirs(sub, &err), 0);
    assert_true(fr_path_exists(sub));
    snprintf(path, sizeof path, "%s/a/b/c/meta.json", dir);
    assert_false(fr_path_exists(path));
    assert_int_equal(fr_write_file_atomic(path, "v1", 2, &err), 0);
    assert_true(fr_path_exists(path));
    assert_int_equal(fr_write_file_atomic(path, "version2", 8, &err), 0);
    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(fr_read_file(path, 100, &data, &len, &err), 0);
    assert_int_equal(len, 8);
    assert_memory_equal(data, "version2", 8);
    fr_free(data);
    /* No temp file is left behind. */
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_false(fr_path_exists(tmp));
    assert_int_equal(fr_read_file(path, 7, &data, &len, &err), FR_ELIMIT);
    assert_int_equal(fr_write_file_atomic(path, "", 0, &err), 0);
    assert_int_equal(fr_read_file(path, 7, &data, &len, &err), 0);
    assert_int_equal(len, 0);
    fr_free(data);
    /* A larger file crosses the read chunk. */
    size_t bign = 200000;
    uint8_t *big = fr_malloc(bign);
    for (size_t i = 0; i < bign; i++) big[i] = (uint8_t)(i * 7);
    assert_int_equal(fr_write_file_atomic(path, big, bign, &err), 0);
    assert_int_equal(fr_read_file(path, bign, &data, &len, &err), 0);
    assert_int_equal(len, bign);
    assert_memory_equal(data, big, bign);
    fr_free(data);
    fr_free(big);

    snprintf(tmp, sizeof tmp, "%s/missing", dir);
    assert_int_equal(fr_read_file(tmp, 10, &data, &len, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "missing"));
    snprintf(tmp, sizeof tmp, "%s/nodir/x", dir);
    assert_int_equal(fr_write_file_atomic(tmp, "x", 1, &err), FR_ENOTFOUND);
    /* mkdirs over a file fails. */
    assert_true(fr_mkdirs(path, &err) < 0);
    snprintf(tmp, sizeof tmp, "%s/sub", path);
    assert_true(fr_mkdirs(tmp, &err) < 0);
    assert_int_equal(fr_fsync_dir(dir, &err), 0);
    snprintf(tmp, sizeof tmp, "%s/nope", dir);
    assert_int_equal(fr_fsync_dir(tmp, &err), FR_ENOTFOUND);

    snprintf(tmp, sizeof tmp, "%s/a", dir);
    assert_int_equal(fr_remove_tree(tmp, &err), 0);
    assert_false(fr_path_exists(tmp));
    assert_int_equal(fr_remove_tree(tmp, &err), 0);
    assert_int_equal(fr_remove_tree(dir, &err), 0);
    assert_false(fr_path_exists(dir));
    assert_int_equal(fr_mkdirs("", &err), FR_EINVAL);
    /* The per-process parent of the scratch directory goes too. */
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    assert_int_equal(fr_remove_tree(dir, &err), 0);
}

/* ---- parsers --------------------------------------------------------------------------- */

static void test_parse_i64(void **state)
{
    (void)state;
    fr_error err;
    int64_t v;
    assert_int_equal(fr_parse_i64("0", &v, &err), 0);
    assert_int_equal(v, 0);
    assert_int_equal(fr_parse_i64("-42", &v, &err), 0);
    assert_int_equal(v, -42);
    assert_int_equal(fr_parse_i64("+7", &v, &err), 0);
    assert_int_equal(v, 7);
    assert_int_equal(fr_parse_i64("9223372036854775807", &v, &err), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(fr_parse_i64("-9223372036854775808", &v, &err), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(fr_parse_i64("9223372036854775808", &v, &err), FR_ERANGE);
    assert_int_equal(fr_parse_i64("-9223372036854775809", &v, &err), FR_ERANGE);
    const char *bad[] = {"", " 1", "1 ", "1a", "a", "-", "+", "--1", "0x10", "1.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(fr_parse_i64(bad[i], &v, &err), FR_EINVAL);
}

static void test_parse_duration(void **state)
{
    (void)state;
    fr_error err;
    struct {
        const char *s;
        int64_t ms;
    } ok[] = {
        {"0", 0},          {"500", 500},        {"500ms", 500},     {"30s", 30000},
        {"30 s", 30000},   {"2sec", 2000},      {"10min", 600000},  {"10m", 600000},
        {"10 MIN", 600000}, {"2h", 7200000},    {"1hour", 3600000}, {"3 hours", 10800000},
        {"7d", 604800000}, {"7 d", 604800000},  {"7days", 604800000}, {"1day", 86400000},
        {"1 Ms", 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        assert_int_equal(fr_parse_duration_ms(ok[i].s, &v, &err), 0);
        assert_true(v == ok[i].ms);
    }
    const char *bad[] = {"", "ms", "-1s", "1x", "1 s s", " 1s", "1.5s", "1 week"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v;
        assert_int_equal(fr_parse_duration_ms(bad[i], &v, &err), FR_EINVAL);
    }
    int64_t v;
    assert_int_equal(fr_parse_duration_ms("9223372036854775807d", &v, &err), FR_ERANGE);
    assert_int_equal(fr_parse_duration_ms("99999999999999999999", &v, &err), FR_ERANGE);
    assert_int_equal(fr_parse_duration_ms("1 fortnight", &v, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "fortnight"));
}

static void test_parse_bytes(void **state)
{
    (void)state;
    fr_error err;
    struct {
        const char *s;
        int64_t n;
    } ok[] = {
        {"1024", 1024},        {"0", 0},           {"10b", 10},
        {"64kb", 65536},       {"64KB", 65536},    {"1 mb", 1048576},
        {"2gb", 2147483648LL}, {"1Tb", 1LL << 40}, {"3 k", 3072},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        assert_int_equal(fr_parse_bytes(ok[i].s, &v, &err), 0);
        assert_true(v == ok[i].n);
    }
    const char *bad[] = {"", "kb", "-1", "1pb", "1 kb x", "1.5mb"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v;
        assert_int_equal(fr_parse_bytes(bad[i], &v, &err), FR_EINVAL);
    }
    int64_t v;
    assert_int_equal(fr_parse_bytes("10000000tb", &v, &err), FR_ERANGE);
}

/* ---- config ---------------------------------------------------------------------------- */

static void test_config(void **state)
{
    (void)state;
    fr_error err;
    fr_config *c = fr_config_new();
    assert_non_null(c);
    const char *text = "# a comment\n"
                       "\n"
                       "  data.dir :  /var/firth  \n"
                       "listen: 127.0.0.1:9123\r\n"
                       "bucket.num: 4   # trailing comment\n"
                       "password: a#b\n"
                       "\t# indented comment\n"
                       "bucket.num: 8\n"
                       "last: x";
    assert_int_equal(fr_config_parse(c, text, strlen(text), "firth.yaml", &err), 0);
    assert_int_equal(fr_config_count(c), 5);
    assert_string_equal(fr_config_get(c, "data.dir"), "/var/firth");
    assert_string_equal(fr_config_get(c, "listen"), "127.0.0.1:9123");
    assert_string_equal(fr_config_get(c, "bucket.num"), "8");
    assert_string_equal(fr_config_get(c, "password"), "a#b");
    assert_string_equal(fr_config_get(c, "last"), "x");
    assert_null(fr_config_get(c, "missing"));
    const char *k, *v;
    fr_config_entry(c, 0, &k, &v);
    assert_string_equal(k, "data.dir");
    fr_config_entry(c, 2, &k, &v);
    assert_string_equal(k, "bucket.num");
    assert_string_equal(v, "8");
    fr_config_entry(c, 99, &k, &v);
    assert_null(k);
    assert_int_equal(fr_config_set(c, "new.key", "v", &err), 0);
    assert_int_equal(fr_config_count(c), 6);
    fr_config_entry(c, 5, &k, &v);
    assert_string_equal(k, "new.key");
    assert_string_equal(v, "v");
    /* Many keys grow the table. */
    for (int i = 0; i < 100; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "%d", i * 2);
        assert_int_equal(fr_config_set(c, key, val, &err), 0);
    }
    assert_string_equal(fr_config_get(c, "k77"), "154");
    fr_config_free(c);
    fr_config_free(NULL);
}

static void test_config_errors(void **state)
{
    (void)state;
    fr_error err;
    struct {
        const char *text;
        const char *msg;
    } bad[] = {
        {"a: 1\nno colon here\n", "conf.yaml:2: expected 'key: value'"},
        {"\n\n: value\n", "conf.yaml:3: empty key"},
        {"key:\n", "conf.yaml:1: key 'key' has no value"},
        {"key:   # only comment\n", "conf.yaml:1: key 'key' has no value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_config *c = fr_config_new();
        assert_int_equal(fr_config_parse(c, bad[i].text, strlen(bad[i].text), "conf.yaml", &err),
                         FR_EINVAL);
        assert_non_null(strstr(err.msg, bad[i].msg));
        fr_config_free(c);
    }
    fr_config *c = fr_config_new();
    const char nul[] = "a: b\0c\n";
    assert_int_equal(fr_config_parse(c, nul, sizeof nul - 1, NULL, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "config:1"));
    fr_config_free(c);
}

static void test_config_alloc_failure(void **state)
{
    (void)state;
    fr_error err;
    const char *text = "a: 1\nb: 2\nc: 3\n";
    /* Fail each allocation in turn: parse fails cleanly with ENOMEM, nothing leaks. */
    for (long n = 1; n < 30; n++) {
        fr_config *c = fr_config_new();
        assert_non_null(c);
        fr_alloc_fail_after(n);
        int rc = fr_config_parse(c, text, strlen(text), "x", &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            assert_string_equal(fr_config_get(c, "c"), "3");
            fr_config_free(c);
            break;
        }
        assert_int_equal(rc, FR_ENOMEM);
        fr_config_free(c);
    }
}

/* fr_iov_advance: whole pieces skipped, a partial one cut at its front, nothing left. */
static void test_iov_advance(void **state)
{
    (void)state;
    char a[4] = "abcd", b[3] = "efg", c[5] = "hijkl";
    struct iovec v[3] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof c}};
    struct iovec *iov = v;
    int n = 3;
    fr_iov_advance(&iov, &n, 0);
    assert_ptr_equal(iov, &v[0]);
    assert_int_equal(n, 3);
    fr_iov_advance(&iov, &n, 5); /* all of a, one byte of b */
    assert_ptr_equal(iov, &v[1]);
    assert_int_equal(n, 2);
    assert_ptr_equal(iov->iov_base, b + 1);
    assert_int_equal(iov->iov_len, 2);
    fr_iov_advance(&iov, &n, 2); /* the rest of b exactly */
    assert_ptr_equal(iov, &v[2]);
    assert_int_equal(n, 1);
    assert_int_equal(iov->iov_len, 5);
    fr_iov_advance(&iov, &n, 5);
    assert_int_equal(n, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--log-child") == 0) {
        FR_WARN("warn-line");
        FR_DEBUG("debug-line");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--log-child-default") == 0) {
        fr_log_set_default_level(FR_LOG_WARN);
        FR_INFO("info-line");
        FR_WARN("warn-line");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_fail_and_wrap),
        cmocka_unit_test(test_error_errno),
        cmocka_unit_test(test_strcode),
        cmocka_unit_test(test_error_macros),
        cmocka_unit_test(test_alloc_basic),
        cmocka_unit_test(test_alloc_fail_after),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_buf_alloc_failure),
        cmocka_unit_test(test_bufpool),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_arena_alloc_failure),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_crc32c_long),
        cmocka_unit_test(test_crc32c_incremental_and_unaligned),
        cmocka_unit_test(test_murmur3),
        cmocka_unit_test(test_varint),
        cmocka_unit_test(test_le_access),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_logging),
        cmocka_unit_test(test_logging_threads),
        cmocka_unit_test(test_logging_env),
        cmocka_unit_test(test_logging_default),
        cmocka_unit_test(test_crc32c_threads),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_parse_i64),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_iov_advance),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
