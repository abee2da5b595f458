/* server_scale_crash.c — `kill -9` of a real `firth server` process while 16 producers
 * append to a log table and upsert and delete in a primary-key table, then a restart on the
 * same data dir and port, five times over (the second and fifth stops are a graceful SIGTERM
 * under the same load instead, which must exit 0); the producers' clients reconnect by themselves
 * and their writers retry what was in flight (idempotent: a batch the server had appended
 * before it died is refused as a duplicate and acknowledged, not appended twice).
 *
 * Checked at the end, exactly (scale_model.h): a full scan of every bucket of both tables
 * from a fresh client decodes, has dense offsets, holds every acknowledged row once and
 * nothing else twice; the primary-key table's changelog replays into a valid history of the
 * producers' operations with every acknowledged change, and lookups return the state it ends
 * with (the KV stores recovered from the log agree with it). Two consumers follow the tables
 * through the crashes with scanners of their own and must read the same. Every call must be
 * acknowledged with success (the writers' retries outlast a restart), and calls made after
 * the last restart must be too: the producers continue; but two producers retry nothing, so
 * that calls in flight at a crash fail: their rows must be there at most once.
 * FIRTH_CRASH_ROUNDS sets the number of stops (default 5), FIRTH_CRASH_FLUSH the server's
 * log.flush. The server's warnings about torn tails cut at recovery are counted. */
#include "scale_model.h"

#define PRODUCERS 16

static sm_world world;
static int64_t ends[SM_TABLES][SM_BUCKETS_MAX];
static atomic_bool ends_known;

typedef struct follower {
    sm_reader r;
    pthread_t thread;
    int64_t polls, poll_errors;
    int64_t deadline_ms;
} follower;

/* Follows a table through the crashes: a poll that fails while the server is down is tried
 * again; the scanner keeps its positions. */
static void *follower_main(void *arg)
{
    follower *f = arg;
    firth_client *client = NULL;
    firth_error err = {0};
    IK_OK(firth_open(world.target, &client, &err), err);
    firth_scanner *s = NULL;
    IK_OK(firth_scanner_open(client, SM_TABLE[f->r.table], NULL, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    for (;;) {
        if (atomic_load(&ends_known) && sm_reader_at(&f->r, ends[f->r.table])) break;
        if (ik_now_ms() > f->deadline_ms) {
            ik_fail("%s: not done before the deadline", f->r.name);
            break;
        }
        firth_scan_result *res = NULL;
        int rc = firth_scanner_poll(s, 200, &res, &err);
        f->polls++;
        if (rc != 0) {
            f->poll_errors++;
            if (rc != FIRTH_EIO)
                ik_fail("%s: a poll failed with %d, not FIRTH_EIO: %s", f->r.name, rc, err.msg);
            ik_sleep_ms(100);
            continue;
        }
        for (int i = 0; i < firth_scan_result_count(res); i++) {
            const firth_scan_batch *sb = firth_scan_result_get(res, i);
            sm_reader_batch(&f->r, sb->bucket, sb->batch, sb->offsets, sb->changes);
        }
        firth_scan_result_free(res);
    }
    firth_scanner_close(s);
    firth_close(client);
    return NULL;
}

/* Waits until `more` further calls were acknowledged (or 60 s: the producers are stuck). */
static void wait_acks(int more)
{
    int target = atomic_load(&world.acked_calls) + more;
    int64_t deadline = ik_now_ms() + 60000;
    while (atomic_load(&world.acked_calls) < target) {
        if (ik_now_ms() > deadline)
            IK_FATAL("the producers had %d calls acknowledged, not %d, after 60 s",
                     atomic_load(&world.acked_calls), target);
        ik_sleep_ms(10);
    }
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

int main(void)
{
    const char *program = "server_scale_crash";
    uint64_t seed = ik_seed(program);
    uint64_t rng = seed ^ 0x5eed;
    ik_scratch(program);
    const char *rounds_env = getenv("FIRTH_CRASH_ROUNDS");
    int rounds = rounds_env ? (int)strtol(rounds_env, NULL, 10) : 5;
    if (rounds < 1 || rounds > 100) rounds = 5;

    ik_server srv;
    ik_server_init(&srv, "server");
    char listen[64];
    ik_free_port(&rng, listen, sizeof listen);
    /* FIRTH_CRASH_FLUSH runs the server with another log.flush policy (append, the default,
     * interval or none: a killed process loses nothing of what it wrote in any of them). */
    const char *flush = getenv("FIRTH_CRASH_FLUSH");
    const char *extra[] = {"--log.flush", flush && *flush ? flush : "append", NULL};
    ik_server_start_ok(&srv, listen, extra);
    ik_log("%s: server pid %d on %s", program, (int)srv.pid, srv.native);

    firth_client *admin = NULL;
    firth_error err = {0};
    IK_OK(firth_open(srv.target, &admin, &err), err);
    ik_sql(admin, SM_CREATE);
    firth_close(admin);

    const int tables[] = {SM_KEYED, SM_KV};
    sm_world_init(&world, program, srv.target, PRODUCERS, tables, 2, 20000, 2, seed);
    world.pause_max_ms = 4;
    world.writer_retries = 40; /* backoff doubling to 5 s: minutes, longer than a restart */
    /* Rows of up to 3,000 bytes from every fourth producer: batches of many pages, which a
     * SIGKILL can cut in the middle of their write, leaving a torn tail for recovery to cut. */
    world.big_rows_every = 4;
    /* Producers 3 and 4 of every 8 (one per table) do not retry: their calls in flight at a
     * crash fail, and their rows may then be there once or not at all. */
    world.fragile_mask = 1 << 3 | 1 << 4;

    follower fol[2];
    memset(fol, 0, sizeof fol);
    int64_t started = ik_now_ms();
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "follower of %s", SM_TABLE[tables[i]]);
        sm_reader_init(&fol[i].r, &world, tables[i], name);
        fol[i].deadline_ms = started + 300000;
        if (pthread_create(&fol[i].thread, NULL, follower_main, &fol[i]))
            IK_FATAL("cannot start a follower thread");
    }
    sm_producers_start(&world);

    for (int round = 1; round <= rounds; round++) {
        wait_acks(150);
        ik_sleep_ms(ik_rand_between(&rng, 0, 300));
        int acked = atomic_load(&world.acked_calls);
        /* Mostly SIGKILL; every third round a graceful SIGTERM under the same load, which
         * must end in exit 0 with every request in flight answered or safely retried. */
        bool graceful = round % 3 == 2;
        if (graceful) ik_server_stop(&srv);
        else ik_server_kill9(&srv);
        ik_log("%s: round %d: %s the server after %d acknowledged calls", program, round,
               graceful ? "stopped (SIGTERM)" : "killed (SIGKILL)", acked);
        ik_sleep_ms(ik_rand_between(&rng, 0, 500));
        atomic_fetch_add(&world.epoch, 1);
        int64_t t0 = ik_now_ms();
        ik_server_start_ok(&srv, listen, extra);
        ik_log("%s: round %d: restarted on the same data dir in %.2f s (pid %d)", program,
               round, (double)(ik_now_ms() - t0) / 1e3, (int)srv.pid);
    }
    int acked_before = atomic_load(&world.acked_calls);
    wait_acks(300); /* the producers continue after the last restart */
    atomic_store(&world.stop, true);
    sm_producers_join(&world);
    int64_t produced_ms = ik_now_ms() - started;

    /* Every call acknowledged with success, those of the last epoch too, but for the
     * fragile producers'. */
    int64_t ncalls = 0, failed = 0, fragile_failed = 0, last_epoch = 0, rows = 0;
    for (int i = 0; i < world.nproducers; i++) {
        sm_producer *p = &world.producers[i];
        for (int c = 0; c < atomic_load(&p->ncalls); c++) {
            ncalls++;
            int st = atomic_load(&p->calls[c].status);
            if (p->calls[c].epoch == rounds && st == 0) last_epoch++;
            if (st != 0 && sm_retries(p) == 0) {
                fragile_failed++;
                continue;
            }
            if (st != 0 && failed++ < 10)
                ik_fail("producer %d (%s): call %d (made during server start %d) failed with "
                        "%d", i, SM_TABLE[p->table], c, p->calls[c].epoch + 1, st);
        }
        rows += p->rows_acked;
    }
    if (failed > 10) ik_fail("%lld calls failed in all", (long long)failed);
    if (last_epoch == 0)
        ik_fail("no call made after the last restart was acknowledged: the producers did not "
                "continue");

    /* A fresh client reads everything from the start. */
    IK_OK(firth_open(srv.target, &admin, &err), err);
    for (int i = 0; i < 2; i++) sm_end_offsets(admin, tables[i], ends[tables[i]]);
    atomic_store(&ends_known, true);
    sm_reader full[2];
    sm_kv_model *model = calloc((size_t)world.slots[SM_KV], sizeof *model);
    sm_kv_model *fmodel = calloc((size_t)world.slots[SM_KV], sizeof *fmodel);
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "full scan of %s", SM_TABLE[tables[i]]);
        sm_reader_init(&full[i], &world, tables[i], name);
        sm_read_all(admin, &full[i], ends[tables[i]], 120000);
    }
    sm_check_log(&full[0]);
    sm_check_kv(&full[1], model);
    sm_check_lookups(&world, admin, model);

    for (int i = 0; i < 2; i++) pthread_join(fol[i].thread, NULL);
    sm_reader_report_position(&fol[0].r, ends[SM_KEYED]);
    sm_reader_report_position(&fol[1].r, ends[SM_KV]);
    sm_check_log(&fol[0].r);
    sm_check_kv(&fol[1].r, fmodel);
    if (memcmp(model, fmodel, (size_t)world.slots[SM_KV] * sizeof *model) != 0)
        ik_fail("the follower of scale.kv replayed another state than the full scan");

    int64_t log_rows = 0, changes = 0;
    for (int b = 0; b < SM_NBUCKETS[SM_KEYED]; b++) log_rows += ends[SM_KEYED][b];
    for (int b = 0; b < SM_NBUCKETS[SM_KV]; b++) changes += ends[SM_KV][b];
    ik_log("%s: %d producers, %d stops: %lld calls of %lld rows, all acknowledged: %s "
           "(%lld after the last restart, %d before it); %.1f s",
           program, PRODUCERS, rounds, (long long)ncalls, (long long)rows,
           failed ? "no" : "yes", (long long)last_epoch, acked_before,
           (double)produced_ms / 1e3);
    ik_log("%s: %lld calls of producers that do not retry failed; of their rows in scale.keyed "
           "%lld are there (once), %lld not", program, (long long)fragile_failed,
           (long long)full[0].failed_rows_read, (long long)full[0].failed_rows_absent);
    ik_log("%s: scale.keyed holds %lld records, scale.kv %lld changelog records", program,
           (long long)log_rows, (long long)changes);
    for (int i = 0; i < 2; i++)
        ik_log("%s: %s read %lld records in %lld polls, %lld of which failed while the server "
               "was down", program, fol[i].r.name, (long long)fol[i].r.rows,
               (long long)fol[i].polls, (long long)fol[i].poll_errors);
    ik_log("%s: the server's log tells of %d recoveries that cut a torn tail", program,
           count_lines(srv.log_path, "truncat"));

    firth_close(admin);
    ik_server_stop(&srv);
    for (int i = 0; i < 2; i++) {
        sm_reader_free(&full[i]);
        sm_reader_free(&fol[i].r);
    }
    free(model);
    free(fmodel);
    sm_world_free(&world);
    return ik_finish(program);
}
