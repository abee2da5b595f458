/* engine_tier_pool.c — the engine's tiering pool: `lake.tiering.threads` threads that run a
 * tiering round of each lake-enabled table every 'table.datalake.freshness'.
 *
 * Scheduling: each table's lake state holds its next due time (monotonic). A thread looks at
 * the engine's tables, claims the most overdue table that no other thread has claimed (a
 * compare-and-swap on its `claimed` flag), runs its round and sets the next due time one
 * freshness interval after the previous one (at a fixed rate, so that the time a record
 * waits for the lake stays within about one interval plus a round); with nothing due it
 * sleeps until the earliest due time, at most a second (tables created meanwhile are seen
 * then). A table is first due one interval after the pool first sees it.
 *
 * Shutdown: fr_tier_pool_stop sets the stop flag, which the rounds in progress check between
 * reads (they abort their commit: nothing is published, and the next open resumes from the
 * last snapshot), wakes the threads and joins them. */
#include "engine/engine_int.h"

#include <inttypes.h>
#include <time.h>

#define FR_TIER_POOL_IDLE_MS 1000

typedef struct fr_tier_pool {
    fr_engine *e;
    pthread_t *threads;
    int nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stopping;
} fr_tier_pool;

static int64_t mono_ms(void) { return fr_monotonic_ns() / 1000000; }

/* Claims the most overdue lake table, or none; *next_ms gets the earliest due time of the
 * others. The claimed table is retained. */
static fr_table *claim_due(fr_engine *e, int64_t now, int64_t *next_ms)
{
    fr_table **tables = NULL;
    int n = 0;
    fr_error err = {0};
    *next_ms = now + FR_TIER_POOL_IDLE_MS;
    if (fr_engine_tables_snapshot(e, &tables, &n, &err) < 0) return NULL;
    fr_table *best = NULL;
    int64_t best_due = INT64_MAX;
    for (int i = 0; i < n; i++) {
        fr_table_lake *l = tables[i]->lake;
        if (!l || fr_table_dropped(tables[i]) || atomic_load(&l->claimed)) continue;
        int_fast64_t due = atomic_load(&l->next_due_ms);
        if (due == 0) {
            int_fast64_t first = now + tables[i]->conf.lake_freshness_ms;
            if (!atomic_compare_exchange_strong(&l->next_due_ms, &due, first)) continue;
            due = first;
        }
        if (due <= now && due < best_due) {
            best = tables[i];
            best_due = due;
        } else if (due > now && due < *next_ms) {
            *next_ms = due;
        }
    }
    bool want = false;
    if (best && !atomic_compare_exchange_strong(&best->lake->claimed, &want, true)) best = NULL;
    for (int i = 0; i < n; i++)
        if (tables[i] != best) fr_table_release(tables[i]);
    fr_free(tables);
    return best;
}

static void run_claimed(fr_tier_pool *pool, fr_table *t)
{
    fr_table_lake *l = t->lake;
    int64_t due = atomic_load(&l->next_due_ms);
    int64_t id = -1;
    fr_error err = {0};
    if (fr_table_tier_stoppable(t, &pool->stopping, &id, &err) < 0 &&
        !atomic_load(&pool->stopping))
        FR_WARN("%s (tiering is retried in %" PRId64 " ms)", err.msg,
                t->conf.lake_freshness_ms);
    int64_t now = mono_ms(), next = due + t->conf.lake_freshness_ms;
    atomic_store(&l->next_due_ms, next > now ? next : now);
    atomic_store(&l->claimed, false);
    fr_table_release(t);
}

static void *tier_main(void *arg)
{
    fr_tier_pool *pool = arg;
    pthread_setname_np(pthread_self(), "firth-tier");
    while (!atomic_load(&pool->stopping)) {
        int64_t next = 0;
        fr_table *t = claim_due(pool->e, mono_ms(), &next);
        if (t) {
            run_claimed(pool, t);
            continue;
        }
        pthread_mutex_lock(&pool->mu);
        struct timespec until = {.tv_sec = next / 1000, .tv_nsec = (next % 1000) * 1000000};
        while (!atomic_load(&pool->stopping) && mono_ms() < next &&
               pthread_cond_timedwait(&pool->cv, &pool->mu, &until) == 0) {
        }
        pthread_mutex_unlock(&pool->mu);
    }
    return NULL;
}

static void pool_free(fr_tier_pool *pool)
{
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->cv);
    fr_free(pool->threads);
    fr_free(pool);
}

void fr_tier_pool_stop(fr_engine *e)
{
    fr_tier_pool *pool = e->tier_pool;
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->stopping, true);
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->nthreads; i++) pthread_join(pool->threads[i], NULL);
    pool_free(pool);
    e->tier_pool = NULL;
}

int fr_tier_pool_start(fr_engine *e, fr_error *err)
{
    int n = e->opts.lake_tiering_threads;
    if (n <= 0) return FR_OK;
    fr_tier_pool *pool = fr_calloc(1, sizeof *pool);
    FR_CHECK(pool, FR_ENOMEM, err, "out of memory starting the tiering threads");
    pool->e = e;
    atomic_init(&pool->stopping, false);
    pthread_mutex_init(&pool->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pool->cv, &ca);
    pthread_condattr_destroy(&ca);
    pool->threads = fr_calloc((size_t)n, sizeof *pool->threads);
    if (!pool->threads) {
        pool_free(pool);
        return fr_fail(err, FR_ENOMEM, "out of memory starting the tiering threads");
    }
    e->tier_pool = pool;
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&pool->threads[i], NULL, tier_main, pool);
        if (rc != 0) {
            fr_tier_pool_stop(e);
            return fr_fail(err, FR_EIO, "start tiering thread %d of %d: %s", i + 1, n,
                           strerror(rc));
        }
        pool->nthreads++;
    }
    return FR_OK;
}
