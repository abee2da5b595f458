/* server_scale_partitions.c — partitions created dynamically by many concurrent writers on a
 * real `firth server` process, and scanners that follow every partition, those created later
 * included, with exact verification.
 *
 * Table scale.parts (id, part, p, c, r) is PARTITIONED BY part with 2 buckets per partition
 * (bucket key id) and dynamic partition creation (the default). 24 producer threads, each
 * with its own client and idempotent writer, write calls whose rows name partitions that
 * appear as the calls go on ("g<n>": a call of index c picks among g<c/6> .. g<c/6 + 2>), so
 * that several writers create the same new partition at the same time. 4 consumers, each
 * with its own client, subscribe to every partition from the earliest record while that
 * happens. Once the producers are done, every consumer must have read, for each partition
 * and bucket, offsets dense from 0 up to the end offset, each acknowledged row exactly once
 * (and nothing else twice), each row in the partition its `part` value names; the table must
 * list exactly the partitions the rows named.
 * The same for a partitioned primary-key table, scale.pkparts (PRIMARY KEY (part, k)), into
 * which every other producer upserts its own keys in partitions made on the fly (their KV
 * stores created concurrently): each consumer of its changelog must read, per key, the
 * after-images (+I, then -U/+U pairs holding the previous row) of exactly the upserts made,
 * in call order, and lookups must return the last.
 * A third of the way through, the server is killed (SIGKILL) and restarted on its port: the
 * clients reconnect, the writers retry, the consumers poll again, and all of the above must
 * still hold exactly. FIRTH_TEST_SEED replays a run. */
#include "integ_kit.h"

#define PRODUCERS 24
#define CONSUMERS 4
#define CALLS 60
#define ROWS_MAX 32
#define PARTS_MAX 64
#define BUCKETS 2
#define PK_KEYS 32 /* keys per producer and partition */
#define TABLES 2   /* 0: scale.parts (log), 1: scale.pkparts (primary key) */

static const char *const TABLE[TABLES] = {"scale.parts", "scale.pkparts"};

static char target[160];
static uint64_t seed;

typedef struct pcall {
    int nrows;
    atomic_int status; /* 1 pending, 0 acknowledged, < 0 failed */
    uint8_t part[ROWS_MAX];
    uint8_t key[ROWS_MAX]; /* primary-key table: the key j of row r (k = p * 1000 + j) */
} pcall;

typedef struct producer {
    int index, table;
    uint64_t rng;
    atomic_int ncalls;
    pcall calls[CALLS];
    pthread_t thread;
} producer;

static producer producers[PRODUCERS];
static atomic_int acked_calls;
static bool part_named[TABLES][PARTS_MAX];
static pthread_mutex_t part_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_ack(void *ctx, uint64_t token, int status, const char *message)
{
    producer *p = ctx;
    if (token < 1 || token > (uint64_t)atomic_load(&p->ncalls)) {
        ik_fail("producer %d: acknowledgement of token %llu, which no call has", p->index,
                (unsigned long long)token);
        return;
    }
    if (status < 0) ik_fail("producer %d: call %llu failed: %s", p->index,
                            (unsigned long long)token - 1, message ? message : "");
    if (atomic_exchange(&p->calls[token - 1].status, status < 0 ? status : 0) != 1)
        ik_fail("producer %d: call %llu acknowledged twice", p->index,
                (unsigned long long)token - 1);
    atomic_fetch_add(&acked_calls, 1);
}

static int64_t row_id(int p, int c, int r) { return (int64_t)p * 1000000 + c * 1000 + r; }

static void *producer_main(void *arg)
{
    producer *p = arg;
    firth_client *client = NULL;
    firth_writer *w = NULL;
    firth_error err = {0};
    IK_OK(firth_open(target, &client, &err), err);
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = (int64_t)ik_rand_between(&p->rng, 0, 3);
    o.retries = 40; /* outlasts the restart */
    o.retry_backoff_ms = 50;
    o.on_ack = on_ack;
    o.ack_ctx = p;
    IK_OK(firth_writer_open(client, TABLE[p->table], &o, &w, &err), err);
    fr_schema *schema = ik_schema(p->table == 0 ? "id BIGINT NOT NULL, part STRING NOT NULL, "
                                                  "p INT NOT NULL, c INT NOT NULL, "
                                                  "r INT NOT NULL"
                                                : "k BIGINT NOT NULL, part STRING NOT NULL, "
                                                  "p INT NOT NULL, c INT NOT NULL");
    for (int c = 0; c < CALLS; c++) {
        pcall *call = &p->calls[c];
        call->nrows = (int)ik_rand_between(&p->rng, 1, ROWS_MAX);
        fr_builder *bld = NULL;
        fr_error e = {0};
        if (fr_builder_new(schema, &bld, &e) < 0) IK_FATAL("builder: %s", e.msg);
        bool used[3][PK_KEYS] = {{false}}; /* a call upserts a key of a partition once */
        for (int r = 0; r < call->nrows; r++) {
            int dg, j;
            do {
                dg = (int)ik_rand_between(&p->rng, 0, 2);
                j = (int)ik_rand_between(&p->rng, 0, PK_KEYS - 1);
            } while (p->table == 1 && used[dg][j]);
            used[dg][j] = true;
            int g = c / 6 + dg;
            call->part[r] = (uint8_t)g;
            call->key[r] = (uint8_t)j;
            pthread_mutex_lock(&part_mu);
            part_named[p->table][g] = true;
            pthread_mutex_unlock(&part_mu);
            char part[16];
            int len = snprintf(part, sizeof part, "g%d", g);
            fr_builder_append_i64(bld, 0, p->table == 0 ? row_id(p->index, c, r)
                                                        : (int64_t)p->index * 1000 + j, &e);
            fr_builder_append_bytes(bld, 1, part, (size_t)len, &e);
            fr_builder_append_i64(bld, 2, p->index, &e);
            fr_builder_append_i64(bld, 3, c, &e);
            if (p->table == 0) fr_builder_append_i64(bld, 4, r, &e);
        }
        fr_batch *b = NULL;
        if (fr_builder_finish(bld, &b, &e) < 0) IK_FATAL("rows: %s", e.msg);
        fr_builder_free(bld);
        firth_batch *fb = firth_batch_wrap(b);
        atomic_store(&call->status, 1);
        atomic_store(&p->ncalls, c + 1);
        uint64_t token = 0;
        IK_OK(firth_writer_append(w, fb, &token, &err), err);
        firth_batch_free(fb);
        ik_sleep_ms(ik_rand_between(&p->rng, 0, 4));
    }
    firth_writer_close(w, &err);
    fr_schema_free(schema);
    firth_close(client);
    for (int c = 0; c < CALLS; c++)
        if (atomic_load(&p->calls[c].status) != 0)
            ik_fail("producer %d: call %d not acknowledged with success (%d)", p->index, c,
                    atomic_load(&p->calls[c].status));
    return NULL;
}

/* A key of the primary-key table as a consumer replays it. */
typedef struct key_state {
    uint8_t count;  /* after-images read */
    uint8_t last;   /* the call of the last one */
    bool before;    /* a -U waits for its +U */
} key_state;

/* What a consumer saw, per partition (by its number g) and bucket. */
typedef struct consumer {
    int index, table;
    pthread_t thread;
    int64_t next[PARTS_MAX][BUCKETS];
    uint8_t seen[PRODUCERS][CALLS][ROWS_MAX];   /* log table */
    key_state keys[PRODUCERS][PARTS_MAX][PK_KEYS]; /* primary-key table */
    int64_t rows, polls;
} consumer;

static consumer consumers[CONSUMERS];
static int64_t ends[TABLES][PARTS_MAX][BUCKETS];
static atomic_bool ends_known;

static bool consumer_done(const consumer *k)
{
    for (int g = 0; g < PARTS_MAX; g++)
        for (int b = 0; b < BUCKETS; b++)
            if (k->next[g][b] < ends[k->table][g][b]) return false;
    return true;
}

/* Whether call c of producer p upserted key j of partition g. */
static bool call_upserts(const producer *p, int c, int g, int j)
{
    for (int r = 0; r < p->calls[c].nrows; r++)
        if (p->calls[c].part[r] == g && p->calls[c].key[r] == j) return true;
    return false;
}

static void consume_log_row(consumer *k, const firth_scan_batch *sb, int g, int64_t i)
{
    int64_t id = ik_cell_i64(sb->batch, 0, i);
    char part[64], want[16];
    ik_cell_str(sb->batch, 1, i, part, sizeof part);
    int p = (int)ik_cell_i64(sb->batch, 2, i), c = (int)ik_cell_i64(sb->batch, 3, i);
    int r = (int)ik_cell_i64(sb->batch, 4, i);
    snprintf(want, sizeof want, "g%d", g);
    if (p < 0 || p >= PRODUCERS || producers[p].table != 0 || c < 0 ||
        c >= atomic_load(&producers[p].ncalls) || r < 0 || r >= producers[p].calls[c].nrows ||
        id != row_id(p, c, r)) {
        ik_fail("consumer %d: %s bucket %d offset %lld: row id %lld (p %d c %d r %d) was "
                "never written", k->index, sb->partition, sb->bucket, (long long)sb->offsets[i],
                (long long)id, p, c, r);
        return;
    }
    if (strcmp(part, want) != 0 || producers[p].calls[c].part[r] != g)
        ik_fail("consumer %d: row id %lld (part %s, written to g%d) read in partition %s",
                k->index, (long long)id, part, producers[p].calls[c].part[r], sb->partition);
    if (++k->seen[p][c][r] == 2)
        ik_fail("consumer %d: row id %lld read a second time (%s bucket %d offset %lld)",
                k->index, (long long)id, sb->partition, sb->bucket, (long long)sb->offsets[i]);
}

static void consume_pk_row(consumer *k, const firth_scan_batch *sb, int g, int64_t i)
{
    int change = sb->changes ? sb->changes[i] : FIRTH_CHANGE_APPEND;
    int64_t key = ik_cell_i64(sb->batch, 0, i);
    char part[64], want[16];
    ik_cell_str(sb->batch, 1, i, part, sizeof part);
    int p = (int)ik_cell_i64(sb->batch, 2, i), c = (int)ik_cell_i64(sb->batch, 3, i);
    int j = (int)(key - (int64_t)p * 1000);
    snprintf(want, sizeof want, "g%d", g);
    const char *name = firth_change_name(change);
    if (p < 0 || p >= PRODUCERS || producers[p].table != 1 || j < 0 || j >= PK_KEYS || c < 0 ||
        c >= atomic_load(&producers[p].ncalls) || strcmp(part, want) != 0 ||
        !call_upserts(&producers[p], c, g, j)) {
        ik_fail("consumer %d: %s bucket %d offset %lld: %s of key (%s, %lld) from producer %d "
                "call %d, which never upserted it", k->index, sb->partition, sb->bucket,
                (long long)sb->offsets[i], name, part, (long long)key, p, c);
        return;
    }
    key_state *ks = &k->keys[p][g][j];
    bool ok = true;
    switch (change) {
    case FIRTH_CHANGE_INSERT:
        ok = ks->count == 0 && !ks->before;
        ks->count = 1;
        ks->last = (uint8_t)c;
        break;
    case FIRTH_CHANGE_UPDATE_BEFORE:
        ok = ks->count > 0 && !ks->before && ks->last == c;
        ks->before = true;
        break;
    case FIRTH_CHANGE_UPDATE_AFTER:
        ok = ks->before && c > ks->last;
        ks->before = false;
        ks->count++;
        ks->last = (uint8_t)c;
        break;
    default: ok = false; /* no deletes are made; +A has no place in a changelog */
    }
    if (!ok)
        ik_fail("consumer %d: %s bucket %d offset %lld: %s of key (%s, %lld) holding call %d "
                "breaks its history (%d after-images read, the last of call %d%s)", k->index,
                sb->partition, sb->bucket, (long long)sb->offsets[i], name, part, (long long)key,
                c, ks->count, ks->last, ks->before ? ", a -U pending" : "");
}

static void consume_batch(consumer *k, const firth_scan_batch *sb)
{
    int g = -1;
    if (!sb->partition || sscanf(sb->partition, "part=g%d", &g) != 1 || g < 0 ||
        g >= PARTS_MAX || sb->bucket < 0 || sb->bucket >= BUCKETS) {
        ik_fail("consumer %d: a batch of partition %s bucket %d, not one the rows name",
                k->index, sb->partition ? sb->partition : "(none)", sb->bucket);
        return;
    }
    for (int64_t i = 0; i < firth_batch_num_rows(sb->batch); i++) {
        int64_t *next = &k->next[g][sb->bucket];
        if (sb->offsets[i] != *next) {
            ik_fail("consumer %d: %s bucket %d: offset %lld where %lld was next", k->index,
                    sb->partition, sb->bucket, (long long)sb->offsets[i], (long long)*next);
            *next = sb->offsets[i];
        }
        (*next)++;
        k->rows++;
        if (k->table == 0) consume_log_row(k, sb, g, i);
        else consume_pk_row(k, sb, g, i);
    }
}

static void *consumer_main(void *arg)
{
    consumer *k = arg;
    firth_client *client = NULL;
    firth_scanner *s = NULL;
    firth_error err = {0};
    IK_OK(firth_open(target, &client, &err), err);
    firth_scanner_options o = {.max_bytes = 64 << 10};
    IK_OK(firth_scanner_open(client, TABLE[k->table], &o, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    int64_t deadline = ik_now_ms() + 240000;
    while (!(atomic_load(&ends_known) && consumer_done(k))) {
        if (ik_now_ms() > deadline) {
            ik_fail("consumer %d: not done before the deadline", k->index);
            break;
        }
        firth_scan_result *res = NULL;
        int rc = firth_scanner_poll(s, 200, &res, &err);
        k->polls++;
        if (rc == FIRTH_EIO) { /* the server is down: the scanner keeps its positions */
            ik_sleep_ms(100);
            continue;
        }
        if (rc != 0) IK_FATAL("consumer %d: poll: %d %s", k->index, rc, err.msg);
        for (int i = 0; i < firth_scan_result_count(res); i++)
            consume_batch(k, firth_scan_result_get(res, i));
        firth_scan_result_free(res);
    }
    firth_scanner_close(s);
    firth_close(client);
    return NULL;
}

/* The partitions a table lists are those its rows named; fills its ends. */
static void read_ends(firth_client *c, int table)
{
    firth_error err = {0};
    char **names = NULL;
    int64_t *ids = NULL;
    int n = 0;
    IK_OK(firth_list_partitions(c, TABLE[table], &names, &ids, &n, &err), err);
    bool listed[PARTS_MAX] = {false};
    for (int i = 0; i < n; i++) {
        int g = -1;
        if (sscanf(names[i], "part=g%d", &g) != 1 || g < 0 || g >= PARTS_MAX || listed[g])
            ik_fail("%s lists partition '%s', which no row names", TABLE[table], names[i]);
        else listed[g] = true;
    }
    for (int g = 0; g < PARTS_MAX; g++)
        if (listed[g] != part_named[table][g])
            ik_fail("%s: partition part=g%d: %s", TABLE[table], g,
                    listed[g] ? "listed but no row names it" : "named by rows but not listed");
    firth_scanner *s = NULL;
    IK_OK(firth_scanner_open(c, TABLE[table], NULL, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_LATEST, 0, &err), err);
    for (int i = 0; i < n; i++) {
        int g = -1;
        if (sscanf(names[i], "part=g%d", &g) != 1 || g < 0 || g >= PARTS_MAX) continue;
        for (int b = 0; b < BUCKETS; b++)
            IK_OK(firth_scanner_position(s, names[i], b, &ends[table][g][b], &err), err);
    }
    firth_scanner_close(s);
    firth_names_free(names, n);
    firth_free(ids);
}

/* Log table: every acknowledged row read by the consumer. */
static void check_log(const consumer *k)
{
    int64_t missing = 0;
    for (int p = 0; p < PRODUCERS; p++) {
        if (producers[p].table != 0) continue;
        for (int c = 0; c < CALLS; c++)
            for (int r = 0; r < producers[p].calls[c].nrows; r++)
                if (atomic_load(&producers[p].calls[c].status) == 0 && k->seen[p][c][r] == 0 &&
                    missing++ < 10)
                    ik_fail("consumer %d: acknowledged row id %lld (producer %d, call %d, row "
                            "%d, partition g%d) was not read", k->index,
                            (long long)row_id(p, c, r), p, c, r, producers[p].calls[c].part[r]);
    }
}

/* Primary-key table: per key, as many after-images as upserts, the last of the last call. */
static void check_pk(const consumer *k)
{
    for (int p = 0; p < PRODUCERS; p++) {
        if (producers[p].table != 1) continue;
        for (int g = 0; g < PARTS_MAX; g++)
            for (int j = 0; j < PK_KEYS; j++) {
                int n = 0, last = -1;
                for (int c = 0; c < CALLS; c++)
                    if (call_upserts(&producers[p], c, g, j)) n++, last = c;
                const key_state *ks = &k->keys[p][g][j];
                if (ks->count != n || (n > 0 && ks->last != last) || ks->before)
                    ik_fail("consumer %d: key (g%d, %lld): %d after-images read, the last of "
                            "call %d; %d upserts were made, the last by call %d", k->index, g,
                            (long long)p * 1000 + j, ks->count, ks->count ? ks->last : -1, n,
                            last);
            }
    }
}

/* Lookups of every key of every partition return the last upsert's row, or nothing. */
static void check_lookups(firth_client *client, const consumer *k)
{
    firth_error err = {0};
    firth_lookuper *l = NULL;
    IK_OK(firth_lookuper_open(client, TABLE[1], NULL, &l, &err), err);
    fr_schema *ks = ik_schema("part STRING NOT NULL, k BIGINT NOT NULL");
    int64_t found_total = 0;
    for (int p = 0; p < PRODUCERS; p++) {
        if (producers[p].table != 1) continue;
        fr_builder *bld = NULL;
        fr_error e = {0};
        if (fr_builder_new(ks, &bld, &e) < 0) IK_FATAL("builder: %s", e.msg);
        int nkeys = 0, gs[PARTS_MAX * PK_KEYS], js[PARTS_MAX * PK_KEYS];
        for (int g = 0; g < PARTS_MAX; g++) {
            if (!part_named[1][g]) continue;
            for (int j = 0; j < PK_KEYS; j++) {
                char part[16];
                int len = snprintf(part, sizeof part, "g%d", g);
                fr_builder_append_bytes(bld, 0, part, (size_t)len, &e);
                fr_builder_append_i64(bld, 1, (int64_t)p * 1000 + j, &e);
                gs[nkeys] = g;
                js[nkeys++] = j;
            }
        }
        fr_batch *kb = NULL;
        if (fr_builder_finish(bld, &kb, &e) < 0) IK_FATAL("keys: %s", e.msg);
        fr_builder_free(bld);
        firth_batch *keys = firth_batch_wrap(kb);
        bool *found = calloc((size_t)nkeys + 1, sizeof *found);
        firth_batch *rows = NULL;
        IK_OK(firth_lookup(l, keys, found, &rows, &err), err);
        int64_t at = 0;
        for (int i = 0; i < nkeys; i++) {
            const key_state *st = &k->keys[p][gs[i]][js[i]];
            if (found[i] != (st->count > 0)) {
                ik_fail("lookup of key (g%d, %d): %s, but its changelog says %s", gs[i],
                        p * 1000 + js[i], found[i] ? "found" : "not found",
                        st->count ? "present" : "absent");
                at += found[i];
                continue;
            }
            if (!found[i]) continue;
            found_total++;
            int c = (int)ik_cell_i64(rows, 3, at);
            if (ik_cell_i64(rows, 0, at) != (int64_t)p * 1000 + js[i] || c != st->last)
                ik_fail("lookup of key (g%d, %d): the row of call %d, not of call %d", gs[i],
                        p * 1000 + js[i], c, st->last);
            at++;
        }
        free(found);
        firth_batch_free(rows);
        firth_batch_free(keys);
    }
    fr_schema_free(ks);
    firth_lookuper_close(l);
    ik_log("server_scale_partitions: lookups found %lld keys, as the changelog says",
           (long long)found_total);
}

int main(void)
{
    const char *program = "server_scale_partitions";
    seed = ik_seed(program);
    ik_scratch(program);
    ik_server srv;
    ik_server_init(&srv, "server");
    char listen[64];
    uint64_t rng = seed;
    ik_free_port(&rng, listen, sizeof listen);
    ik_server_start_ok(&srv, listen, NULL);
    snprintf(target, sizeof target, "%s", srv.target);
    firth_client *admin = NULL;
    firth_error err = {0};
    IK_OK(firth_open(target, &admin, &err), err);
    ik_sql(admin, "CREATE DATABASE scale; CREATE TABLE scale.parts (id BIGINT NOT NULL, "
                  "part STRING NOT NULL, p INT NOT NULL, c INT NOT NULL, r INT NOT NULL) "
                  "PARTITIONED BY (part) WITH ('bucket.num' = '2', 'bucket.key' = 'id');"
                  "CREATE TABLE scale.pkparts (k BIGINT NOT NULL, part STRING NOT NULL, "
                  "p INT NOT NULL, c INT NOT NULL, PRIMARY KEY (part, k) NOT ENFORCED) "
                  "PARTITIONED BY (part) WITH ('bucket.num' = '2')");

    int64_t started = ik_now_ms();
    for (int i = 0; i < CONSUMERS; i++) {
        consumers[i].index = i;
        consumers[i].table = i % TABLES;
        if (pthread_create(&consumers[i].thread, NULL, consumer_main, &consumers[i]))
            IK_FATAL("cannot start a consumer thread");
    }
    for (int i = 0; i < PRODUCERS; i++) {
        producers[i].index = i;
        producers[i].table = i % TABLES;
        producers[i].rng = seed * 7919 + (uint64_t)i;
        if (pthread_create(&producers[i].thread, NULL, producer_main, &producers[i]))
            IK_FATAL("cannot start a producer thread");
    }
    /* A third of the way, while partitions are being made: kill -9 and restart. */
    while (atomic_load(&acked_calls) < PRODUCERS * CALLS / 3) ik_sleep_ms(5);
    ik_server_kill9(&srv);
    ik_sleep_ms(ik_rand_between(&rng, 0, 300));
    ik_server_start_ok(&srv, listen, NULL);
    ik_log("%s: killed the server (SIGKILL) after %d acknowledged calls and restarted it",
           program, PRODUCERS * CALLS / 3);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(producers[i].thread, NULL);
    for (int t = 0; t < TABLES; t++) read_ends(admin, t);
    atomic_store(&ends_known, true);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(consumers[i].thread, NULL);

    for (int i = 0; i < CONSUMERS; i++) {
        const consumer *k = &consumers[i];
        for (int g = 0; g < PARTS_MAX; g++)
            for (int b = 0; b < BUCKETS; b++)
                if (k->next[g][b] != ends[k->table][g][b])
                    ik_fail("consumer %d of %s: part=g%d bucket %d read up to %lld, the log "
                            "ends at %lld", i, TABLE[k->table], g, b, (long long)k->next[g][b],
                            (long long)ends[k->table][g][b]);
        if (k->table == 0) check_log(k);
        else check_pk(k);
    }
    check_lookups(admin, &consumers[1]);

    int64_t rows[TABLES] = {0}, records[TABLES] = {0};
    int nparts[TABLES] = {0};
    for (int t = 0; t < TABLES; t++)
        for (int g = 0; g < PARTS_MAX; g++) {
            nparts[t] += part_named[t][g];
            for (int b = 0; b < BUCKETS; b++) records[t] += ends[t][g][b];
        }
    for (int p = 0; p < PRODUCERS; p++)
        for (int c = 0; c < CALLS; c++) rows[producers[p].table] += producers[p].calls[c].nrows;
    ik_log("%s: %d producers in %.1f s: %lld rows into %d partitions of scale.parts, %lld "
           "upserts (%lld changelog records) into %d partitions of scale.pkparts, all created "
           "on the fly; %d consumers read them all", program, PRODUCERS,
           (double)(ik_now_ms() - started) / 1e3, (long long)rows[0], nparts[0],
           (long long)rows[1], (long long)records[1], nparts[1], CONSUMERS);
    if (records[0] != rows[0])
        ik_fail("the logs of scale.parts hold %lld records for %lld rows written",
                (long long)records[0], (long long)rows[0]);
    firth_close(admin);
    ik_server_stop(&srv);
    return ik_finish(program);
}
