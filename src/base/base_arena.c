/* base_arena.c — bump allocation in a chain of blocks, all freed at once.
 *
 * Invariants: every block's payload starts 16-byte aligned and `used` is kept a multiple
 * of 16, so every returned pointer is 16-byte aligned. A request larger than the block
 * size gets a block of its own, so large allocations never waste a normal block. */
#include "base/base.h"

#define FR_ARENA_ALIGN 16

typedef struct fr_arena_block {
    struct fr_arena_block *next;
    size_t cap;
    size_t used;
    _Alignas(FR_ARENA_ALIGN) unsigned char data[];
} fr_arena_block;

struct fr_arena {
    fr_arena_block *head; /* the block being filled; older blocks follow */
    size_t block_bytes;
};

fr_arena *fr_arena_new(size_t block_bytes)
{
    fr_arena *a = fr_malloc(sizeof *a);
    if (!a) return NULL;
    a->head = NULL;
    a->block_bytes = block_bytes < 256 ? 256 : block_bytes;
    return a;
}

static fr_arena_block *fr_arena_block_new(size_t cap)
{
    fr_arena_block *b = fr_malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

void *fr_arena_alloc(fr_arena *a, size_t n)
{
    if (n > SIZE_MAX - 2 * FR_ARENA_ALIGN - sizeof(fr_arena_block)) return NULL;
    size_t need = (n + FR_ARENA_ALIGN - 1) & ~(size_t)(FR_ARENA_ALIGN - 1);
    if (need == 0) need = FR_ARENA_ALIGN;
    fr_arena_block *h = a->head;
    if (h && h->cap - h->used >= need) {
        void *p = h->data + h->used;
        h->used += need;
        return p;
    }
    if (need > a->block_bytes / 2) {
        /* A dedicated block, linked behind the head so the head keeps filling. */
        fr_arena_block *b = fr_arena_block_new(need);
        if (!b) return NULL;
        b->used = need;
        if (h) {
            b->next = h->next;
            h->next = b;
        } else {
            a->head = b;
        }
        return b->data;
    }
    fr_arena_block *b = fr_arena_block_new(a->block_bytes);
    if (!b) return NULL;
    b->next = h;
    a->head = b;
    b->used = need;
    return b->data;
}

char *fr_arena_strndup(fr_arena *a, const char *s, size_t n)
{
    n = strnlen(s, n);
    char *d = fr_arena_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void fr_arena_free(fr_arena *a)
{
    if (!a) return;
    fr_arena_block *b = a->head;
    while (b) {
        fr_arena_block *next = b->next;
        fr_free(b);
        b = next;
    }
    fr_free(a);
}
