/* server_pool.c — the worker threads that run requests: a FIFO queue of tasks under one
 * mutex, taken by a fixed set of threads, and a fork-join helper for requests that touch
 * several buckets (their appends wait for fsyncs that may run side by side).
 *
 * The pool is not libuv's (uv_queue_work): that one has a process-wide size fixed at first
 * use, and a request that waits for an fsync holds its thread for milliseconds, so the
 * server sizes its own (server.workers).
 *
 * A worker that waits for something other than the engine (a streamed SQL part that a slow
 * reader does not take) says so with srv_pool_block_begin/end: while it waits, it does not
 * count against the pool's size, and the pool starts another thread (up to
 * SRV_POOL_EXTRA_MAX more than its size, kept once started) when tasks wait and no thread
 * is free, so that clients who stop reading cannot hold every worker.
 *
 * Invariants: a task pushed runs exactly once, also when the pool is being freed (free
 * drains the queue first). srv_pool_parallel returns only when every index has run. Tasks
 * wait only while fewer than size threads that are not blocked run (or the extra threads
 * are all started). */
#include "server/server_int.h"

typedef struct pool_task {
    struct pool_task *next;
    srv_task_fn fn;
    void *arg;
} pool_task;

#define SRV_POOL_EXTRA_MAX 256

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pool_task *head, *tail;
    bool stopping;
    int size;           /* threads meant to run tasks at once */
    int nthreads;       /* threads started: size, and extra ones for blocked workers */
    int idle;           /* threads waiting for a task */
    int blocked;        /* threads between srv_pool_block_begin and end */
    pthread_t *threads; /* size + SRV_POOL_EXTRA_MAX slots */
};

static void *pool_main(void *arg)
{
    srv_pool *p = arg;
    pthread_setname_np(pthread_self(), "firth-worker");
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) {
            p->idle++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->idle--;
        }
        pool_task *t = p->head;
        if (!t) break; /* stopping and drained */
        p->head = t->next;
        if (!p->head) p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        t->fn(t->arg);
        fr_free(t);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Starts one more thread when a task waits, no thread is free, and fewer than size threads
 * run tasks (the others are blocked); mu held. A thread that cannot be started leaves the
 * task to the threads there are. */
static void maybe_grow(srv_pool *p)
{
    if (!p->head || p->idle > 0 || p->stopping || p->nthreads - p->blocked >= p->size ||
        p->nthreads >= p->size + SRV_POOL_EXTRA_MAX)
        return;
    if (pthread_create(&p->threads[p->nthreads], NULL, pool_main, p) == 0) p->nthreads++;
}

void srv_pool_block_begin(srv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->blocked++;
    maybe_grow(p);
    pthread_mutex_unlock(&p->mu);
}

void srv_pool_block_end(srv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    assert(p->blocked > 0);
    p->blocked--;
    pthread_mutex_unlock(&p->mu);
}

int srv_pool_new(int threads, srv_pool **out, fr_error *err)
{
    assert(threads >= 1);
    srv_pool *p = fr_calloc(1, sizeof *p);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory");
    p->size = threads;
    p->threads = fr_calloc((size_t)threads + SRV_POOL_EXTRA_MAX, sizeof *p->threads);
    if (!p->threads) {
        fr_free(p);
        return fr_fail(err, FR_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < threads; i++) {
        int e = pthread_create(&p->threads[i], NULL, pool_main, p);
        if (e != 0) {
            srv_pool_free(p);
            return fr_fail_errno(err, e, "starting worker thread %d of %d", i + 1, threads);
        }
        p->nthreads++;
    }
    *out = p;
    return FR_OK;
}

int srv_pool_push(srv_pool *p, srv_task_fn fn, void *arg, fr_error *err)
{
    pool_task *t = fr_malloc(sizeof *t);
    FR_CHECK(t, FR_ENOMEM, err, "out of memory queueing a request");
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_lock(&p->mu);
    if (p->tail) p->tail->next = t;
    else p->head = t;
    p->tail = t;
    maybe_grow(p);
    pthread_mutex_unlock(&p->mu);
    /* After the unlock, so that the worker it wakes does not block at once on mu. */
    pthread_cond_signal(&p->cv);
    return FR_OK;
}

void srv_pool_free(srv_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    assert(!p->head);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    fr_free(p->threads);
    fr_free(p);
}

/* ---- fork-join ------------------------------------------------------------------------- */

/* Shared by the caller and its helpers; the last one out frees it. The caller's ctx is
 * only touched by whoever claimed an index, and every index is claimed before the caller
 * returns, so a helper that starts late touches nothing but this. */
typedef struct pool_par {
    atomic_int refs;
    atomic_int next;
    atomic_int done;
    int n;
    void (*fn)(void *ctx, int i);
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pool_par;

static void par_unref(pool_par *pp)
{
    if (atomic_fetch_sub(&pp->refs, 1) != 1) return;
    pthread_mutex_destroy(&pp->mu);
    pthread_cond_destroy(&pp->cv);
    fr_free(pp);
}

static void par_work(pool_par *pp)
{
    for (;;) {
        int i = atomic_fetch_add(&pp->next, 1);
        if (i >= pp->n) return;
        pp->fn(pp->ctx, i);
        if (atomic_fetch_add(&pp->done, 1) + 1 == pp->n) {
            pthread_mutex_lock(&pp->mu);
            pthread_cond_broadcast(&pp->cv);
            pthread_mutex_unlock(&pp->mu);
        }
    }
}

static void par_helper(void *arg)
{
    pool_par *pp = arg;
    par_work(pp);
    par_unref(pp);
}

void srv_pool_parallel(srv_pool *p, int n, int helpers, void (*fn)(void *ctx, int i),
                       void *ctx)
{
    if (n <= 0) return;
    pool_par *pp = n > 1 && helpers > 0 ? fr_calloc(1, sizeof *pp) : NULL;
    if (!pp) { /* one item, or no memory for helpers: run them here */
        for (int i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    atomic_init(&pp->refs, 1);
    atomic_init(&pp->next, 0);
    atomic_init(&pp->done, 0);
    pp->n = n;
    pp->fn = fn;
    pp->ctx = ctx;
    pthread_mutex_init(&pp->mu, NULL);
    pthread_cond_init(&pp->cv, NULL);
    int want = n - 1 < helpers ? n - 1 : helpers;
    for (int h = 0; h < want; h++) {
        atomic_fetch_add(&pp->refs, 1);
        if (srv_pool_push(p, par_helper, pp, NULL) < 0) {
            atomic_fetch_sub(&pp->refs, 1);
            break;
        }
    }
    par_work(pp);
    pthread_mutex_lock(&pp->mu);
    while (atomic_load(&pp->done) < n) pthread_cond_wait(&pp->cv, &pp->mu);
    pthread_mutex_unlock(&pp->mu);
    par_unref(pp);
}
