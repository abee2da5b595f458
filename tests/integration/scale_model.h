/* scale_model.h — the producers, consumers and exact checks that server_scale_produce.c and
 * server_scale_crash.c share: many idempotent writers on log tables and a primary-key table,
 * scanners following the tables from their earliest records, and a model in the test that
 * knows every call made and how it was acknowledged.
 *
 * Tables (database `scale`):
 *   keyed   log table, 8 buckets, bucket key `id` (a call's rows spread over buckets)
 *   spread  log table, 4 buckets, no bucket key (the client picks a bucket per batch)
 *   kv      primary-key table (k), 8 buckets: upserts and deletes, changelog FULL
 * Producer p writes to table p % 3 (the crash test uses keyed and kv only). Its rows are
 * self-describing: a log row is (id, p, c, r, chk, pad) with id = p * 1e9 + c * 1e4 + r for
 * row r of its call c, chk and pad functions of id; a kv row is (k, p, c, v) with k one of
 * the producer's own 64 keys (p * 1e5 + j), so that no two producers race on a key, and v a
 * function of (k, p, c).
 *
 * What is checked, exactly (per consumer, and for the crash test per full scan):
 *   - offsets: every bucket's records come in offset order, dense from 0 (no gap, no
 *     repeat), up to the bucket's end offset read once the producers were done;
 *   - nothing corrupt: every row decodes and is self-consistent (chk, pad, v match id or k);
 *   - every acknowledged record is read exactly once: each row of a call whose
 *     acknowledgement was a success appears once;
 *   - no garbage: every row read belongs to a call that was made (producer, call and row in
 *     range). Rows of a call whose acknowledgement was a failure may appear at most once each
 *     (the server may have applied the batch before the failure was reported); nothing may
 *     appear twice;
 *   - the primary-key table: the changelog of each key, replayed in order, is a valid
 *     history (+I on an absent key, -U then +U with the stored row, -D of the stored row)
 *     made of the key's operations in call order, containing every acknowledged upsert and
 *     every acknowledged delete that had a row to delete, and skipping only operations
 *     without effect (a delete of an absent key) or calls that failed; the rows a lookup
 *     returns are exactly the state this replay ends with. */
#ifndef FIRTH_SCALE_MODEL_H
#define FIRTH_SCALE_MODEL_H

#include "integ_kit.h"

enum { SM_KEYED, SM_SPREAD, SM_KV, SM_TABLES };

#define SM_BUCKETS_MAX 8
#define SM_ROWS_MAX 48       /* rows per call at most */
#define SM_KEYS 64           /* keys per kv producer */
#define SM_PAD_MAX 40         /* pad letters of a row at most */
#define SM_PAD_BIG 3000        /* of a row of a producer with big rows */

static const char *const SM_TABLE[SM_TABLES] = {"scale.keyed", "scale.spread", "scale.kv"};
static const int SM_NBUCKETS[SM_TABLES] = {8, 4, 8};

static const char SM_CREATE[] =
    "CREATE DATABASE IF NOT EXISTS scale;"
    "CREATE TABLE scale.keyed (id BIGINT NOT NULL, p INT NOT NULL, c INT NOT NULL, "
    "  r INT NOT NULL, chk BIGINT NOT NULL, pad STRING) "
    "  WITH ('bucket.num' = '8', 'bucket.key' = 'id');"
    "CREATE TABLE scale.spread (id BIGINT NOT NULL, p INT NOT NULL, c INT NOT NULL, "
    "  r INT NOT NULL, chk BIGINT NOT NULL, pad STRING) WITH ('bucket.num' = '4');"
    "CREATE TABLE scale.kv (k BIGINT NOT NULL, p INT NOT NULL, c INT NOT NULL, v STRING, "
    "  PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket.num' = '8')";

#define SM_LOG_COLUMNS "id BIGINT NOT NULL, p INT NOT NULL, c INT NOT NULL, r INT NOT NULL, " \
                       "chk BIGINT NOT NULL, pad STRING"
#define SM_KV_COLUMNS "k BIGINT NOT NULL, p INT NOT NULL, c INT NOT NULL, v STRING"

/* ---- rows ------------------------------------------------------------------------------ */

static inline int64_t sm_id(int p, int c, int r)
{
    return (int64_t)p * 1000000000 + (int64_t)c * 10000 + r;
}

static inline int64_t sm_key(int p, int j) { return (int64_t)p * 100000 + j; }

static inline int64_t sm_chk(int64_t id)
{
    uint64_t s = (uint64_t)id;
    return (int64_t)(ik_rand(&s) >> 1);
}

/* pad of row id: 0..max letters, a function of id. */
static inline int sm_pad(int64_t id, int max, char *out)
{
    int n = (int)((uint64_t)sm_chk(id) % (uint64_t)(max + 1));
    for (int i = 0; i < n; i++) out[i] = (char)('a' + (id + i) % 26);
    out[n] = '\0';
    return n;
}

/* v of kv row (k, p, c). */
static inline int sm_value(int64_t k, int p, int c, char *out, size_t cap)
{
    return snprintf(out, cap, "k%lld/p%d/c%d/%.*s", (long long)k, p, c,
                    (int)((k + c) % 17), "vvvvvvvvvvvvvvvvvvvvvvvvv");
}

/* ---- producers ------------------------------------------------------------------------- */

enum { SM_PENDING = 1 }; /* a call's status before its acknowledgement; then 0 or < 0 */

typedef struct sm_call {
    int nrows;
    atomic_int status;
    int64_t *keys; /* kv: the key of each row */
    uint8_t *ops;  /* kv: FIRTH_OP_* of each row */
    int epoch;     /* the server start the call was made during (crash test) */
} sm_call;

typedef struct sm_producer {
    int index, table, slot;  /* slot: the producer's index among its table's producers */
    int calls_max;
    atomic_int ncalls;       /* calls made so far */
    sm_call *calls;
    uint64_t rng;
    bool one_call;           /* firth_produce / firth_upsert per call instead of a writer */
    int64_t writer_id;
    int pad_max;             /* pad letters of its rows at most */
    firth_client *shared;    /* a client shared with other producers, or NULL: its own */
    int64_t rows_acked;
    pthread_t thread;
    struct sm_world *world;
} sm_producer;

typedef struct sm_world {
    const char *program;
    char target[160];
    int nproducers;
    sm_producer *producers;
    int slots[SM_TABLES];    /* producers per table */
    int calls_max;
    int pause_max_ms;        /* a producer pauses 0..this between calls */
    int writer_retries;
    int fragile_mask;        /* producers i with bit i % 8 set retry nothing: calls may fail */
    int big_rows_every;      /* every so many producers write rows of SM_PAD_BIG (0: none) */
    atomic_bool stop;        /* producers stop making calls (crash test) */
    atomic_int epoch;        /* bumped at each restart of the server (crash test) */
    atomic_int acked_calls;
} sm_world;

static inline void sm_on_ack(void *ctx, uint64_t token, int status, const char *message)
{
    sm_producer *p = ctx;
    if (token < 1 || token > (uint64_t)atomic_load(&p->ncalls)) {
        ik_fail("producer %d: acknowledgement of token %llu, which no call has", p->index,
                (unsigned long long)token);
        return;
    }
    sm_call *c = &p->calls[token - 1];
    int was = atomic_exchange(&c->status, status < 0 ? status : 0);
    if (was != SM_PENDING)
        ik_fail("producer %d (%s): call %llu acknowledged twice (%d, then %d)", p->index,
                SM_TABLE[p->table], (unsigned long long)token - 1, was, status);
    if (status < 0 && getenv("FIRTH_TEST_VERBOSE"))
        ik_log("producer %d: call %llu failed: %s", p->index, (unsigned long long)token - 1,
               message ? message : "");
    if (status == 0) atomic_fetch_add(&p->world->acked_calls, 1);
}

/* The rows of call c of producer p (made now, recorded in p->calls[c]). */
static inline firth_batch *sm_make_call(sm_producer *p, int c)
{
    sm_call *call = &p->calls[c];
    int n = (int)ik_rand_between(&p->rng, 1, SM_ROWS_MAX);
    call->nrows = n;
    fr_error err = {0};
    fr_builder *bld = NULL;
    fr_schema *schema = ik_schema(p->table == SM_KV ? SM_KV_COLUMNS : SM_LOG_COLUMNS);
    if (fr_builder_new(schema, &bld, &err) < 0) IK_FATAL("builder: %s", err.msg);
    int rc = 0;
    if (p->table == SM_KV) {
        call->keys = calloc((size_t)n, sizeof *call->keys);
        call->ops = calloc((size_t)n, 1);
        bool used[SM_KEYS] = {false};
        for (int r = 0; r < n; r++) {
            int j;
            do j = (int)ik_rand_between(&p->rng, 0, SM_KEYS - 1);
            while (used[j]); /* the keys of one call are distinct */
            used[j] = true;
            int64_t k = sm_key(p->index, j);
            call->keys[r] = k;
            call->ops[r] = ik_rand(&p->rng) % 6 == 0 ? FIRTH_OP_DELETE : FIRTH_OP_UPSERT;
            char v[96];
            int len = sm_value(k, p->index, c, v, sizeof v);
            rc |= fr_builder_append_i64(bld, 0, k, &err);
            rc |= fr_builder_append_i64(bld, 1, p->index, &err);
            rc |= fr_builder_append_i64(bld, 2, c, &err);
            rc |= fr_builder_append_bytes(bld, 3, v, (size_t)len, &err);
        }
    } else {
        for (int r = 0; r < n; r++) {
            int64_t id = sm_id(p->index, c, r);
            char pad[SM_PAD_BIG + 1];
            int len = sm_pad(id, p->pad_max, pad);
            rc |= fr_builder_append_i64(bld, 0, id, &err);
            rc |= fr_builder_append_i64(bld, 1, p->index, &err);
            rc |= fr_builder_append_i64(bld, 2, c, &err);
            rc |= fr_builder_append_i64(bld, 3, r, &err);
            rc |= fr_builder_append_i64(bld, 4, sm_chk(id), &err);
            rc |= fr_builder_append_bytes(bld, 5, pad, (size_t)len, &err);
        }
    }
    fr_batch *b = NULL;
    if (rc < 0 || fr_builder_finish(bld, &b, &err) < 0) IK_FATAL("building rows: %s", err.msg);
    fr_builder_free(bld);
    fr_schema_free(schema);
    firth_batch *fb = firth_batch_wrap(b);
    if (!fb) IK_FATAL("out of memory wrapping a batch");
    return fb;
}

/* The retries of a producer's failed sends: none for a fragile one. */
static inline int sm_retries(const sm_producer *p)
{
    return (p->world->fragile_mask >> (p->index % 8)) & 1 ? 0 : p->world->writer_retries;
}

/* One call through the one-call api (firth_produce / firth_upsert with the producer's writer
 * id and the call's index as sequence), retried on FIRTH_EIO as a writer would. */
static inline int sm_one_call(sm_producer *p, firth_client *client, const firth_batch *b,
                              int c, firth_error *err)
{
    int rc = FIRTH_EIO;
    for (int attempt = 0; attempt <= sm_retries(p) && rc == FIRTH_EIO; attempt++) {
        if (attempt > 0) ik_sleep_ms(attempt < 6 ? 50 << attempt : 2000);
        int64_t count = 0;
        rc = p->table == SM_KV
                 ? firth_upsert(client, SM_TABLE[p->table], b, p->calls[c].ops, NULL,
                                p->writer_id, c, &count, err)
                 : firth_produce(client, SM_TABLE[p->table], b, p->writer_id, c, &count, err);
    }
    return rc;
}

static inline void *sm_producer_main(void *arg)
{
    sm_producer *p = arg;
    sm_world *w = p->world;
    firth_client *client = NULL;
    firth_writer *writer = NULL;
    firth_error err = {0};
    if (p->shared) client = p->shared;
    else IK_OK(firth_open(w->target, &client, &err), err);
    if (!p->one_call) {
        firth_writer_options o;
        firth_writer_options_init(&o);
        o.linger_ms = (int64_t)ik_rand_between(&p->rng, 0, 5);
        o.batch_bytes = 4096 << ik_rand_between(&p->rng, 0, 3);
        o.retries = sm_retries(p);
        o.retry_backoff_ms = 50;
        o.max_in_flight = (int)ik_rand_between(&p->rng, 1, 5); /* log tables: pipelined */
        o.on_ack = sm_on_ack;
        o.ack_ctx = p;
        IK_OK(firth_writer_open(client, SM_TABLE[p->table], &o, &writer, &err), err);
        p->writer_id = firth_writer_id(writer);
    }
    for (int c = 0; c < p->calls_max && !atomic_load(&w->stop); c++) {
        firth_batch *b = sm_make_call(p, c);
        atomic_store(&p->calls[c].status, SM_PENDING);
        p->calls[c].epoch = atomic_load(&w->epoch);
        atomic_store(&p->ncalls, c + 1); /* before the call: its ack may come at once */
        if (writer) {
            uint64_t token = 0;
            int rc = firth_writer_write(writer, b, p->table == SM_KV ? p->calls[c].ops : NULL,
                                        &token, &err);
            if (rc != 0) IK_FATAL("producer %d: firth_writer_write of call %d: %s", p->index, c,
                                  err.msg);
            if (token != (uint64_t)c + 1)
                ik_fail("producer %d: call %d got token %llu, not %d", p->index, c,
                        (unsigned long long)token, c + 1);
        } else {
            int rc = sm_one_call(p, client, b, c, &err);
            atomic_store(&p->calls[c].status, rc < 0 ? rc : 0);
            if (rc == 0) atomic_fetch_add(&w->acked_calls, 1);
            else if (getenv("FIRTH_TEST_VERBOSE"))
                ik_log("producer %d: call %d failed: %s", p->index, c, err.msg);
        }
        firth_batch_free(b);
        if (w->pause_max_ms > 0) ik_sleep_ms(ik_rand_between(&p->rng, 0, w->pause_max_ms));
    }
    if (writer) {
        /* A failed flush is a failed call, which the acknowledgements already recorded. */
        firth_writer_close(writer, &err);
    }
    if (!p->shared) firth_close(client);
    int n = atomic_load(&p->ncalls);
    for (int c = 0; c < n; c++) {
        int st = atomic_load(&p->calls[c].status);
        if (st == SM_PENDING)
            ik_fail("producer %d (%s): call %d of %d was never acknowledged, though the writer "
                    "was flushed and closed", p->index, SM_TABLE[p->table], c, n);
        if (st == 0) p->rows_acked += p->calls[c].nrows;
    }
    return NULL;
}

/* Makes n producers: p writes to table tables[p % ntables]; of every eight, the last
 * one_call_per_8 use the one-call api. */
static inline void sm_world_init(sm_world *w, const char *program, const char *target, int n,
                                 const int *tables, int ntables, int calls_max,
                                 int one_call_per_8, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->program = program;
    snprintf(w->target, sizeof w->target, "%s", target);
    w->nproducers = n;
    w->calls_max = calls_max;
    w->writer_retries = 10;
    w->producers = calloc((size_t)n, sizeof *w->producers);
    for (int i = 0; i < n; i++) {
        sm_producer *p = &w->producers[i];
        p->index = i;
        p->table = tables[i % ntables];
        p->slot = w->slots[p->table]++;
        p->calls_max = calls_max;
        p->calls = calloc((size_t)calls_max, sizeof *p->calls);
        p->rng = seed * 1000003 + (uint64_t)i;
        p->one_call = i % 8 >= 8 - one_call_per_8;
        p->writer_id = 1000000 + i; /* the one-call producers' id; writers choose their own */
        p->pad_max = SM_PAD_MAX;
        p->world = w;
    }
}

static inline void sm_world_free(sm_world *w)
{
    for (int i = 0; i < w->nproducers; i++) {
        sm_producer *p = &w->producers[i];
        for (int c = 0; c < p->calls_max; c++) {
            free(p->calls[c].keys);
            free(p->calls[c].ops);
        }
        free(p->calls);
    }
    free(w->producers);
}

static inline void sm_producers_start(sm_world *w)
{
    for (int i = 0; i < w->nproducers; i++)
        if (w->big_rows_every > 0 && i % w->big_rows_every == 0)
            w->producers[i].pad_max = SM_PAD_BIG;
    for (int i = 0; i < w->nproducers; i++)
        if (pthread_create(&w->producers[i].thread, NULL, sm_producer_main, &w->producers[i]))
            IK_FATAL("cannot start producer thread %d", i);
}

static inline void sm_producers_join(sm_world *w)
{
    for (int i = 0; i < w->nproducers; i++) pthread_join(w->producers[i].thread, NULL);
}

/* The producer of a table slot (NULL when none). */
static inline sm_producer *sm_producer_of(sm_world *w, int table, int p)
{
    if (p < 0 || p >= w->nproducers) return NULL;
    sm_producer *pr = &w->producers[p];
    return pr->table == table ? pr : NULL;
}

/* ---- what a reader saw ----------------------------------------------------------------- */

typedef struct sm_change {
    int64_t key, offset;
    int bucket;
    uint8_t change;
    int p, c;
} sm_change;

/* One reader of one table: every record checked as it arrives (order, density, decoding),
 * log rows counted per (producer slot, call, row), kv changes kept for the replay. */
typedef struct sm_reader {
    char name[64];           /* "consumer 3 of scale.kv", for messages */
    sm_world *w;
    int table;
    int64_t next[SM_BUCKETS_MAX];
    uint8_t *seen;           /* log tables: [slot][call][row] */
    size_t nseen;
    sm_change *changes;
    size_t nchanges, cap;
    int64_t rows;
    int64_t failed_rows_read, failed_rows_absent; /* rows of calls that failed */
    /* A filtered reader of a log table (sm_reader_filter): only rows that pass, with the
     * columns in another order; its offsets increase but are not dense. */
    bool filtered;
    int col[6];              /* where id, p, c, r, chk, pad are in its batches */
} sm_reader;

/* What a filtered reader asks for, and the same predicate in C. */
#define SM_FILTER_COLUMNS "chk, pad, r, c, p, id"
#define SM_FILTER_WHERE "r % 2 = 0 AND p < 40"
static inline bool sm_filter_pass(int p, int r) { return r % 2 == 0 && p < 40; }

/* Makes r a filtered reader (SM_FILTER_COLUMNS, SM_FILTER_WHERE). */
static inline void sm_reader_filter(sm_reader *r)
{
    r->filtered = true;
    const int col[6] = {5, 4, 3, 2, 0, 1};
    memcpy(r->col, col, sizeof col);
}

static inline void sm_reader_init(sm_reader *r, sm_world *w, int table, const char *name)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    for (int i = 0; i < 6; i++) r->col[i] = i;
    r->w = w;
    r->table = table;
    if (table != SM_KV) {
        r->nseen = (size_t)(w->slots[table] > 0 ? w->slots[table] : 1) * (size_t)w->calls_max *
                   SM_ROWS_MAX;
        r->seen = calloc(r->nseen, 1);
    }
}

static inline void sm_reader_free(sm_reader *r)
{
    free(r->seen);
    free(r->changes);
}

static inline void sm_log_row(sm_reader *r, int bucket, int64_t offset, const firth_batch *b,
                              int64_t row)
{
    int64_t id = ik_cell_i64(b, r->col[0], row);
    int p = (int)ik_cell_i64(b, r->col[1], row), c = (int)ik_cell_i64(b, r->col[2], row);
    int rr = (int)ik_cell_i64(b, r->col[3], row);
    int64_t chk = ik_cell_i64(b, r->col[4], row);
    char pad[SM_PAD_BIG + 2], want[SM_PAD_BIG + 1];
    bool has_pad = ik_cell_str(b, r->col[5], row, pad, sizeof pad);
    sm_producer *owner = sm_producer_of(r->w, r->table, p);
    sm_pad(id, owner ? owner->pad_max : SM_PAD_MAX, want);
    if (id != sm_id(p, c, rr) || chk != sm_chk(id) || !has_pad || strcmp(pad, want) != 0) {
        ik_fail("%s: bucket %d offset %lld: a corrupt row (id %lld p %d c %d r %d chk %lld "
                "pad '%s')", r->name, bucket, (long long)offset, (long long)id, p, c, rr,
                (long long)chk, pad);
        return;
    }
    sm_producer *pr = sm_producer_of(r->w, r->table, p);
    if (!pr || c < 0 || c >= atomic_load(&pr->ncalls) || rr < 0 ||
        rr >= pr->calls[c].nrows) {
        ik_fail("%s: bucket %d offset %lld: row id %lld (producer %d, call %d, row %d) was "
                "never written", r->name, bucket, (long long)offset, (long long)id, p, c, rr);
        return;
    }
    uint8_t *count = &r->seen[((size_t)pr->slot * (size_t)r->w->calls_max + (size_t)c) *
                                  SM_ROWS_MAX + (size_t)rr];
    if (r->filtered && !sm_filter_pass(p, rr))
        ik_fail("%s: bucket %d offset %lld: row id %lld (producer %d, row %d) does not pass "
                "the filter %s", r->name, bucket, (long long)offset, (long long)id, p, rr,
                SM_FILTER_WHERE);
    if (*count < 255) (*count)++;
    if (*count == 2)
        ik_fail("%s: bucket %d offset %lld: row id %lld (producer %d, call %d, row %d) read "
                "a second time", r->name, bucket, (long long)offset, (long long)id, p, c, rr);
}

static inline void sm_kv_row(sm_reader *r, int bucket, int64_t offset, const firth_batch *b,
                             int64_t row, uint8_t change)
{
    int64_t k = ik_cell_i64(b, 0, row);
    int p = (int)ik_cell_i64(b, 1, row), c = (int)ik_cell_i64(b, 2, row);
    char v[256], want[96];
    bool has_v = ik_cell_str(b, 3, row, v, sizeof v);
    sm_value(k, p, c, want, sizeof want);
    if (!has_v || strcmp(v, want) != 0 || k != sm_key(p, (int)(k % 100000)) ||
        k % 100000 >= SM_KEYS) {
        ik_fail("%s: bucket %d offset %lld: a corrupt %s row (k %lld p %d c %d v '%s')",
                r->name, bucket, (long long)offset, firth_change_name(change), (long long)k, p,
                c, v);
        return;
    }
    if (r->nchanges == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->changes = realloc(r->changes, r->cap * sizeof *r->changes);
    }
    r->changes[r->nchanges++] =
        (sm_change){.key = k, .offset = offset, .bucket = bucket, .change = change, .p = p,
                    .c = c};
}

/* Takes one batch of bucket: checks that its offsets continue the bucket's dense sequence,
 * then each row. */
static inline void sm_reader_batch(sm_reader *r, int bucket, const firth_batch *b,
                                   const int64_t *offsets, const uint8_t *changes)
{
    if (bucket < 0 || bucket >= SM_NBUCKETS[r->table]) {
        ik_fail("%s: a batch of bucket %d, which the table does not have", r->name, bucket);
        return;
    }
    int64_t n = firth_batch_num_rows(b);
    for (int64_t i = 0; i < n; i++) {
        if (r->filtered ? offsets[i] < r->next[bucket] : offsets[i] != r->next[bucket]) {
            ik_fail("%s: bucket %d: offset %lld where %lld was next (%s)", r->name, bucket,
                    (long long)offsets[i], (long long)r->next[bucket],
                    offsets[i] < r->next[bucket] ? "a repeat or out of order" : "a gap");
        }
        r->next[bucket] = offsets[i] + 1; /* past a problem: report the next one */
        r->rows++;
        uint8_t change = changes ? changes[i] : FIRTH_CHANGE_APPEND;
        if (r->table == SM_KV) {
            if (change == FIRTH_CHANGE_APPEND)
                ik_fail("%s: bucket %d offset %lld: +A in a primary-key table's changelog",
                        r->name, bucket, (long long)offsets[i]);
            else sm_kv_row(r, bucket, offsets[i], b, i, change);
        } else {
            if (change != FIRTH_CHANGE_APPEND)
                ik_fail("%s: bucket %d offset %lld: change %s in a log table", r->name, bucket,
                        (long long)offsets[i], firth_change_name(change));
            sm_log_row(r, bucket, offsets[i], b, i);
        }
    }
}

/* Whether the reader reached ends[] in every bucket; a reader past an end is a failure. */
static inline bool sm_reader_at(sm_reader *r, const int64_t *ends)
{
    bool all = true;
    for (int b = 0; b < SM_NBUCKETS[r->table]; b++) all = all && r->next[b] >= ends[b];
    return all;
}

static inline void sm_reader_report_position(sm_reader *r, const int64_t *ends)
{
    for (int b = 0; b < SM_NBUCKETS[r->table]; b++)
        if (r->next[b] != ends[b])
            ik_fail("%s: bucket %d: read up to offset %lld, the log ends at %lld", r->name, b,
                    (long long)r->next[b], (long long)ends[b]);
}

/* ---- the checks ------------------------------------------------------------------------ */

/* Log tables: each row of an acknowledged call read once; rows of failed calls at most once
 * (the reader already failed on a second read). */
static inline void sm_check_log(sm_reader *r)
{
    sm_world *w = r->w;
    int64_t missing = 0;
    for (int i = 0; i < w->nproducers; i++) {
        sm_producer *p = &w->producers[i];
        if (p->table != r->table) continue;
        int n = atomic_load(&p->ncalls);
        for (int c = 0; c < n; c++) {
            int st = atomic_load(&p->calls[c].status);
            for (int rr = 0; rr < p->calls[c].nrows; rr++) {
                uint8_t count = r->seen[((size_t)p->slot * (size_t)w->calls_max + (size_t)c) *
                                            SM_ROWS_MAX + (size_t)rr];
                if (st < 0) {
                    if (count) r->failed_rows_read++;
                    else r->failed_rows_absent++;
                }
                if (r->filtered && !sm_filter_pass(i, rr)) continue;
                if (st == 0 && count == 0 && missing++ < 10)
                    ik_fail("%s: acknowledged row id %lld (producer %d, call %d, row %d) "
                            "was not read", r->name, (long long)sm_id(i, c, rr), i, c, rr);
            }
        }
    }
    if (missing > 10) ik_fail("%s: %lld acknowledged rows were not read in all", r->name,
                              (long long)missing);
}

static inline int sm_change_cmp(const void *a, const void *b)
{
    const sm_change *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* One key's operations in call order. */
typedef struct sm_op {
    int c;
    uint8_t op;
    int status;
} sm_op;

typedef struct sm_key_state {
    bool present;
    int p, c;
} sm_key_state;

/* The state of the keys of producer p after replaying its keys' changes. */
typedef struct sm_kv_model {
    sm_key_state keys[SM_KEYS];
} sm_kv_model;

/* Whether skipping ops[from, to) is allowed with the key present or not: an acknowledged
 * upsert always has an effect; an acknowledged delete has one when the key is present. */
static inline bool sm_skip_ok(const char *who, int64_t key, const sm_op *ops, int from, int to,
                              bool present, int p)
{
    for (int i = from; i < to; i++) {
        if (ops[i].status != 0) continue;
        if (ops[i].op == FIRTH_OP_UPSERT) {
            ik_fail("%s: key %lld: the acknowledged upsert of call %d (producer %d) is not in "
                    "the changelog", who, (long long)key, ops[i].c, p);
            return false;
        }
        if (present) {
            ik_fail("%s: key %lld: the acknowledged delete of call %d (producer %d) is not in "
                    "the changelog, and the key was there to delete", who, (long long)key,
                    ops[i].c, p);
            return false;
        }
    }
    return true;
}

/* Replays the changes of one key (in offset order) against its operations. */
static inline void sm_replay_key(const char *who, int64_t key, int p, const sm_op *ops, int nops,
                                 const sm_change *ch, int nch, sm_key_state *st)
{
    int at = 0;
    bool before = false; /* a -U waits for its +U */
    *st = (sm_key_state){0};
    for (int i = 0; i < nch; i++) {
        const sm_change *x = &ch[i];
        const char *name = firth_change_name(x->change);
        if (x->p != p) {
            ik_fail("%s: key %lld: %s at offset %lld names producer %d, not its owner %d", who,
                    (long long)key, name, (long long)x->offset, x->p, p);
            return;
        }
        bool image = x->change == FIRTH_CHANGE_UPDATE_BEFORE || x->change == FIRTH_CHANGE_DELETE;
        if (image && (!st->present || st->c != x->c)) {
            ik_fail("%s: key %lld: %s at offset %lld holds call %d, but the key %s", who,
                    (long long)key, name, (long long)x->offset, x->c,
                    st->present ? "holds another call's row" : "is absent");
            return;
        }
        if (before != (x->change == FIRTH_CHANGE_UPDATE_AFTER)) {
            ik_fail("%s: key %lld: %s at offset %lld %s", who, (long long)key, name,
                    (long long)x->offset, before ? "where +U should follow -U" : "without -U");
            return;
        }
        if (x->change == FIRTH_CHANGE_UPDATE_BEFORE) {
            before = true;
            continue;
        }
        /* The operation it comes from: the upsert of its call, or the next delete. */
        int j = at;
        if (x->change == FIRTH_CHANGE_DELETE)
            while (j < nops && ops[j].op != FIRTH_OP_DELETE) j++;
        else
            while (j < nops && !(ops[j].op == FIRTH_OP_UPSERT && ops[j].c == x->c)) j++;
        if (j == nops) {
            ik_fail("%s: key %lld: %s at offset %lld (call %d) matches no operation made after "
                    "the previous change (out of order, or never made)", who, (long long)key,
                    name, (long long)x->offset, x->c);
            return;
        }
        if (x->change == FIRTH_CHANGE_INSERT && st->present) {
            ik_fail("%s: key %lld: +I at offset %lld while the key holds call %d", who,
                    (long long)key, (long long)x->offset, st->c);
            return;
        }
        if (!sm_skip_ok(who, key, ops, at, j, st->present, p)) return;
        at = j + 1;
        before = false;
        if (x->change == FIRTH_CHANGE_DELETE) *st = (sm_key_state){0};
        else *st = (sm_key_state){.present = true, .p = p, .c = x->c};
    }
    if (before) ik_fail("%s: key %lld: the changelog ends with -U", who, (long long)key);
    sm_skip_ok(who, key, ops, at, nops, st->present, p);
}

/* Checks a kv reader's changes against every producer's operations; fills models[slot]. */
static inline void sm_check_kv(sm_reader *r, sm_kv_model *models)
{
    sm_world *w = r->w;
    qsort(r->changes, r->nchanges, sizeof *r->changes, sm_change_cmp);
    size_t at = 0;
    sm_op *ops = calloc((size_t)w->calls_max, sizeof *ops);
    for (int i = 0; i < w->nproducers; i++) {
        sm_producer *p = &w->producers[i];
        if (p->table != SM_KV) continue;
        int n = atomic_load(&p->ncalls);
        for (int j = 0; j < SM_KEYS; j++) {
            int64_t key = sm_key(i, j);
            int nops = 0;
            for (int c = 0; c < n; c++)
                for (int rr = 0; rr < p->calls[c].nrows; rr++)
                    if (p->calls[c].keys[rr] == key)
                        ops[nops++] = (sm_op){.c = c, .op = p->calls[c].ops[rr],
                                              .status = atomic_load(&p->calls[c].status)};
            while (at < r->nchanges && r->changes[at].key < key) {
                ik_fail("%s: a change of key %lld, which no producer owns", r->name,
                        (long long)r->changes[at].key);
                at++;
            }
            size_t from = at;
            while (at < r->nchanges && r->changes[at].key == key) at++;
            for (size_t x = from + 1; x < at; x++)
                if (r->changes[x].bucket != r->changes[from].bucket)
                    ik_fail("%s: key %lld has changes in buckets %d and %d", r->name,
                            (long long)key, r->changes[from].bucket, r->changes[x].bucket);
            sm_replay_key(r->name, key, i, ops, nops, r->changes + from, (int)(at - from),
                          &models[p->slot].keys[j]);
        }
    }
    for (; at < r->nchanges; at++)
        ik_fail("%s: a change of key %lld, which no producer owns", r->name,
                (long long)r->changes[at].key);
    free(ops);
}

/* The rows a lookup of every kv producer's keys returns must be the replayed state. */
static inline void sm_check_lookups(sm_world *w, firth_client *client, const sm_kv_model *models)
{
    firth_error err = {0};
    firth_lookuper *l = NULL;
    IK_OK(firth_lookuper_open(client, SM_TABLE[SM_KV], NULL, &l, &err), err);
    fr_schema *ks = ik_schema("k BIGINT NOT NULL");
    int64_t present = 0;
    for (int i = 0; i < w->nproducers; i++) {
        sm_producer *p = &w->producers[i];
        if (p->table != SM_KV) continue;
        fr_builder *bld = NULL;
        fr_error e = {0};
        if (fr_builder_new(ks, &bld, &e) < 0) IK_FATAL("builder: %s", e.msg);
        for (int j = 0; j < SM_KEYS; j++) fr_builder_append_i64(bld, 0, sm_key(i, j), &e);
        fr_batch *kb = NULL;
        if (fr_builder_finish(bld, &kb, &e) < 0) IK_FATAL("keys: %s", e.msg);
        fr_builder_free(bld);
        firth_batch *keys = firth_batch_wrap(kb);
        bool found[SM_KEYS];
        firth_batch *rows = NULL;
        IK_OK(firth_lookup(l, keys, found, &rows, &err), err);
        int64_t at = 0;
        for (int j = 0; j < SM_KEYS; j++) {
            const sm_key_state *st = &models[p->slot].keys[j];
            int64_t key = sm_key(i, j);
            if (found[j] != st->present) {
                ik_fail("lookup of key %lld (producer %d): %s, but its changelog replayed "
                        "says %s", (long long)key, i, found[j] ? "found" : "not found",
                        st->present ? "present" : "absent");
                if (found[j]) at++;
                continue;
            }
            if (!found[j]) continue;
            present++;
            int64_t k = ik_cell_i64(rows, 0, at);
            int pp = (int)ik_cell_i64(rows, 1, at), c = (int)ik_cell_i64(rows, 2, at);
            char v[256], want[96];
            ik_cell_str(rows, 3, at, v, sizeof v);
            sm_value(key, i, st->c, want, sizeof want);
            if (k != key || pp != i || c != st->c || strcmp(v, want) != 0)
                ik_fail("lookup of key %lld: row (k %lld, p %d, c %d, v '%s'), but its changelog "
                        "replayed ends with call %d", (long long)key, (long long)k, pp, c, v,
                        st->c);
            at++;
        }
        if (rows && firth_batch_num_rows(rows) != at)
            ik_fail("lookup of producer %d's keys: %lld rows for %lld found keys", i,
                    (long long)firth_batch_num_rows(rows), (long long)at);
        firth_batch_free(rows);
        firth_batch_free(keys);
    }
    fr_schema_free(ks);
    firth_lookuper_close(l);
    ik_log("%s: lookups of every key agree with the replayed changelog (%lld keys present)",
           w->program, (long long)present);
}

/* The end offset of every bucket of a table now, through a scanner subscribed at the end. */
static inline void sm_end_offsets(firth_client *client, int table, int64_t *ends)
{
    firth_error err = {0};
    firth_scanner *s = NULL;
    IK_OK(firth_scanner_open(client, SM_TABLE[table], NULL, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_LATEST, 0, &err), err);
    for (int b = 0; b < SM_NBUCKETS[table]; b++)
        IK_OK(firth_scanner_position(s, NULL, b, &ends[b], &err), err);
    firth_scanner_close(s);
}

/* Reads a whole table from its earliest records to ends[] into r: a fresh scanner. */
static inline void sm_read_all(firth_client *client, sm_reader *r, const int64_t *ends,
                               int64_t timeout_ms)
{
    firth_error err = {0};
    firth_scanner *s = NULL;
    firth_scanner_options o = {.max_bytes = 1 << 20};
    IK_OK(firth_scanner_open(client, SM_TABLE[r->table], &o, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    int64_t deadline = ik_now_ms() + timeout_ms;
    while (!sm_reader_at(r, ends) && ik_now_ms() < deadline) {
        firth_scan_result *res = NULL;
        IK_OK(firth_scanner_poll(s, 100, &res, &err), err);
        for (int i = 0; i < firth_scan_result_count(res); i++) {
            const firth_scan_batch *sb = firth_scan_result_get(res, i);
            sm_reader_batch(r, sb->bucket, sb->batch, sb->offsets, sb->changes);
        }
        firth_scan_result_free(res);
    }
    firth_scanner_close(s);
    sm_reader_report_position(r, ends);
}

#endif
