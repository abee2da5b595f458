/* base_mem.c — the allocator every module uses, with a fault-injection countdown for tests.
 *
 * Invariant: fail_after == 0 means injection is off; otherwise it counts down by one per
 * allocation and the allocation that brings it to zero fails (and turns injection off, so
 * that cleanup code after the failure can allocate). The countdown belongs to the thread
 * that set it: an engine's background threads (flushes, partition creation, tiering)
 * allocate at any time, and would otherwise take the failure meant for the call under
 * test. */
#include "base/base.h"

#include <stdint.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define FR_ALLOC_MMAP_THRESHOLD (32 << 20) /* the largest glibc takes */
#define FR_ALLOC_KEEP_BYTES (128 << 20)

static _Thread_local long fr_fail_after_count = 0;

void fr_alloc_fail_after(long n)
{
    fr_fail_after_count = n > 0 ? n : 0;
}

/* True when this allocation must fail. */
static bool fr_alloc_should_fail(void)
{
    if (fr_fail_after_count <= 0) return false;
    return --fr_fail_after_count == 0;
}

void fr_alloc_tune_for_throughput(void)
{
#ifdef __GLIBC__
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc.")) return;
    /* Setting either value also turns off glibc's own adjustment of the threshold, which
     * follows the sizes freed but gives memory back as soon as more than twice the
     * threshold is free. */
    mallopt(M_MMAP_THRESHOLD, FR_ALLOC_MMAP_THRESHOLD);
    mallopt(M_TRIM_THRESHOLD, FR_ALLOC_KEEP_BYTES);
#endif
}

void *fr_malloc(size_t n)
{
    if (fr_alloc_should_fail() || n > PTRDIFF_MAX) return NULL;
    return malloc(n ? n : 1);
}

void *fr_calloc(size_t count, size_t size)
{
    if (fr_alloc_should_fail()) return NULL;
    if (count == 0 || size == 0) return calloc(1, 1);
    if (count > SIZE_MAX / size) return NULL;
    return calloc(count, size);
}

void *fr_realloc(void *p, size_t n)
{
    if (fr_alloc_should_fail() || n > PTRDIFF_MAX) return NULL;
    return realloc(p, n ? n : 1);
}

void fr_free(void *p)
{
    free(p);
}

char *fr_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = fr_malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *fr_strdup(const char *s)
{
    return fr_strndup(s, strlen(s));
}
