/* client_lake_snapshot.c — firth_latest_lake_snapshot, embedded (file:DIR) and remote (a real
 * `firth server`, through the LAKE_SNAPSHOT api), the same checks on both:
 *
 * - a lake-enabled log table with rows but never tiered: snapshot id -1, no offsets;
 * - after CALL sys.tier: the id CALL returned, which is the newest row of t$lake_snapshots;
 *   its commit time is that row's committed_at and its offsets, formatted as SQL formats
 *   them, that row's tiered_offsets; each bucket's offset is the number of rows the bucket's
 *   log holds (read back with firth_scan), and a bucket not listed holds none;
 * - more rows and another round: a newer snapshot and the new counts;
 * - a partitioned lake table (offsets per partition, ids the table's partitions have) and a
 *   primary-key lake table (offsets count its changelog records);
 * - "t" in the current database as well as "db.t";
 * - errors: a table without a lake (FIRTH_EINVAL, the message says how to enable it), an
 *   unknown table or database (FIRTH_ENOTFOUND), NULL arguments (FIRTH_EINVAL);
 * - a table dropped and created again under the same name after a call (remote: the client
 *   keeps the old description and its table id, which the server refuses; the call asks
 *   again): the new table's lake, with no snapshot.
 *
 * Background tiering is off (lake.tiering.threads 0) so that snapshots come only from CALL.
 * Environment: FIRTH, FIRTH_TEST_TMP, FIRTH_TEST_VERBOSE. */
#include "integ_kit.h"

#define LS_BUCKETS 3
#define LS_CHECK(cond, ...)                                                                  \
    do {                                                                                     \
        if (!(cond)) ik_fail(__VA_ARGS__);                                                   \
    } while (0)

static const char *ls_side; /* "embedded" or "remote", for messages */

/* ---- reading SQL results ----------------------------------------------------------------- */

/* The last row of a query of (snapshot_id, committed_at, tiered_offsets) or of one BIGINT
 * column, and the rows counted. */
typedef struct ls_row {
    int64_t rows;
    int64_t id, committed_at;
    char offsets[4096];
} ls_row;

static int ls_rows(void *ctx, firth_batch *b)
{
    ls_row *r = ctx;
    int64_t n = firth_batch_num_rows(b);
    if (n > 0) {
        const fr_batch *fb = firth_batch_unwrap(b);
        r->id = ik_cell_i64(b, 0, n - 1);
        if (fr_batch_num_columns(fb) == 3) {
            r->committed_at = ik_cell_i64(b, 1, n - 1);
            ik_cell_str(b, 2, n - 1, r->offsets, sizeof r->offsets);
        }
    }
    r->rows += n;
    firth_batch_free(b);
    return 0;
}

static ls_row ls_query(firth_client *c, const char *sql)
{
    ls_row r = {0};
    firth_sink sink = {.ctx = &r, .rows = ls_rows};
    firth_error err = {0};
    IK_OK(firth_execute(c, sql, &sink, &err), err);
    return r;
}

/* The newest row of db.t$lake_snapshots (rows 0 when there is none). */
static ls_row ls_newest(firth_client *c, const char *table)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT snapshot_id, committed_at, tiered_offsets FROM %s$lake_snapshots", table);
    return ls_query(c, sql);
}

/* CALL sys.tier(table): the snapshot id it returns. */
static int64_t ls_tier(firth_client *c, const char *table)
{
    char sql[256];
    snprintf(sql, sizeof sql, "CALL sys.tier('%s')", table);
    ls_row r = ls_query(c, sql);
    if (r.rows != 1) IK_FATAL("%s: CALL sys.tier('%s') returned %" PRId64 " rows", ls_side,
                              table, r.rows);
    return r.id;
}

/* ---- reading the logs -------------------------------------------------------------------- */

typedef struct ls_counts {
    int64_t rows[LS_BUCKETS];
    int64_t end[LS_BUCKETS]; /* the last offset seen + 1 */
} ls_counts;

static int ls_count(void *ctx, int bucket, firth_batch *b, const int64_t *offsets)
{
    ls_counts *k = ctx;
    int64_t n = firth_batch_num_rows(b);
    if (bucket >= 0 && bucket < LS_BUCKETS && n > 0) {
        k->rows[bucket] += n;
        k->end[bucket] = offsets[n - 1] + 1;
    } else if (n > 0) {
        ik_fail("%s: a scan gave bucket %d of a table of %d", ls_side, bucket, LS_BUCKETS);
    }
    firth_batch_free(b);
    return 0;
}

static int ls_count_changes(void *ctx, int bucket, firth_batch *b, const int64_t *offsets,
                            const uint8_t *changes, int64_t commit_ms)
{
    (void)changes, (void)commit_ms;
    return ls_count(ctx, bucket, b, offsets);
}

/* The records of every bucket's log (a primary-key table's changelog when changelog). */
static ls_counts ls_log(firth_client *c, const char *table, bool changelog)
{
    ls_counts k = {0};
    firth_scan_options o = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    firth_error err = {0};
    if (changelog) IK_OK(firth_scan_changelog(c, table, &o, ls_count_changes, &k, &err), err);
    else IK_OK(firth_scan(c, table, &o, ls_count, &k, &err), err);
    return k;
}

/* ---- the snapshot ------------------------------------------------------------------------ */

static firth_lake_snapshot *ls_latest(firth_client *c, const char *table)
{
    firth_lake_snapshot *s = NULL;
    firth_error err = {0};
    IK_OK(firth_latest_lake_snapshot(c, table, &s, &err), err);
    if (!s) IK_FATAL("%s: %s: no snapshot result", ls_side, table);
    return s;
}

/* The offsets as t$lake_snapshots writes them: "p-1/b0:120,p-1/b1:98". */
static void ls_format(const firth_lake_snapshot *s, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < s->noffsets && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%sp%" PRId64 "/b%d:%" PRId64, i ? "," : "",
                              s->offsets[i].partition_id, s->offsets[i].bucket,
                              s->offsets[i].offset);
}

static void ls_expect_none(firth_client *c, const char *table)
{
    firth_lake_snapshot *s = ls_latest(c, table);
    LS_CHECK(s->snapshot_id == -1 && s->noffsets == 0 && !s->offsets && s->committed_at_ms == 0,
             "%s: %s before any round: snapshot %" PRId64 " with %d offsets, committed at %"
             PRId64, ls_side, table, s->snapshot_id, s->noffsets, s->committed_at_ms);
    firth_lake_snapshot_free(s);
}

/* The snapshot is the newest of t$lake_snapshots, its id `want`, and it says what that row
 * says. Returns it (the caller frees it). */
static firth_lake_snapshot *ls_expect_newest(firth_client *c, const char *table, int64_t want)
{
    firth_lake_snapshot *s = ls_latest(c, table);
    ls_row sql = ls_newest(c, table);
    char text[sizeof sql.offsets];
    ls_format(s, text, sizeof text);
    LS_CHECK(s->snapshot_id == want && sql.rows > 0 && sql.id == want,
             "%s: %s: snapshot %" PRId64 ", CALL said %" PRId64 ", $lake_snapshots' newest %"
             PRId64 " (of %" PRId64 ")", ls_side, table, s->snapshot_id, want, sql.id, sql.rows);
    LS_CHECK(s->committed_at_ms == sql.committed_at && s->committed_at_ms > 0,
             "%s: %s: committed at %" PRId64 ", $lake_snapshots says %" PRId64, ls_side, table,
             s->committed_at_ms, sql.committed_at);
    LS_CHECK(strcmp(text, sql.offsets) == 0, "%s: %s: offsets %s, $lake_snapshots says %s",
             ls_side, table, text, sql.offsets);
    if (getenv("FIRTH_TEST_VERBOSE"))
        ik_log("%s: %s: snapshot %" PRId64 " committed at %" PRId64 ": %s", ls_side, table,
               s->snapshot_id, s->committed_at_ms, text);
    return s;
}

/* Each bucket's tiered offset is the count of its log's records (log ends, since offsets
 * start at 0 and retention removed nothing). */
static void ls_expect_counts(const firth_lake_snapshot *s, const ls_counts *k,
                             const char *table)
{
    int64_t listed[LS_BUCKETS];
    for (int b = 0; b < LS_BUCKETS; b++) listed[b] = -1;
    for (int i = 0; i < s->noffsets; i++) {
        const firth_lake_offset *o = &s->offsets[i];
        if (o->partition_id != -1 || o->bucket < 0 || o->bucket >= LS_BUCKETS) {
            ik_fail("%s: %s: offset %d names partition %" PRId64 " bucket %d", ls_side, table,
                    i, o->partition_id, o->bucket);
            continue;
        }
        listed[o->bucket] = o->offset;
    }
    for (int b = 0; b < LS_BUCKETS; b++) {
        int64_t tiered = listed[b] < 0 ? 0 : listed[b];
        LS_CHECK(tiered == k->rows[b] && tiered == k->end[b],
                 "%s: %s bucket %d: tiered offset %" PRId64 " (%s), but the log holds %" PRId64
                 " records ending at %" PRId64, ls_side, table, b, listed[b],
                 listed[b] < 0 ? "not listed" : "listed", k->rows[b], k->end[b]);
    }
}

/* Rows (id, 'e<id>') for ids first..last into lk.events. */
static void ls_insert_events(firth_client *c, int first, int last)
{
    char sql[4096];
    size_t n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO lk.events VALUES ");
    for (int i = first; i <= last && n < sizeof sql; i++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s(%d, 'e%d')", i > first ? ", " : "",
                              i, i);
    ik_sql(c, sql);
}

/* ---- the checks ----------------------------------------------------------------------------- */

static void ls_log_table(firth_client *c)
{
    ls_expect_none(c, "lk.events");
    LS_CHECK(ls_newest(c, "lk.events").rows == 0, "%s: a snapshot before any round", ls_side);
    int64_t first = ls_tier(c, "lk.events");
    firth_lake_snapshot *s = ls_expect_newest(c, "lk.events", first);
    ls_counts k = ls_log(c, "lk.events", false);
    ls_expect_counts(s, &k, "lk.events");
    LS_CHECK(k.rows[0] + k.rows[1] + k.rows[2] == 40, "%s: 40 rows written, %" PRId64 " read",
             ls_side, k.rows[0] + k.rows[1] + k.rows[2]);
    firth_lake_snapshot_free(s);

    ls_insert_events(c, 101, 125);
    int64_t second = ls_tier(c, "lk.events");
    LS_CHECK(second != first, "%s: the second round kept snapshot %" PRId64, ls_side, first);
    s = ls_expect_newest(c, "lk.events", second);
    k = ls_log(c, "lk.events", false);
    ls_expect_counts(s, &k, "lk.events");
    firth_lake_snapshot_free(s);
    LS_CHECK(ls_newest(c, "lk.events").rows == 2, "%s: two rounds, not two snapshots", ls_side);

    /* "t" is a table of the current database. */
    ik_sql(c, "USE lk");
    s = ls_latest(c, "events");
    LS_CHECK(s->snapshot_id == second, "%s: 'events' in lk gives snapshot %" PRId64
             ", not %" PRId64, ls_side, s->snapshot_id, second);
    firth_lake_snapshot_free(s);
}

static void ls_partitioned(firth_client *c)
{
    ls_expect_none(c, "lk.days");
    int64_t id = ls_tier(c, "lk.days");
    firth_lake_snapshot *s = ls_expect_newest(c, "lk.days", id);
    char **names = NULL;
    int64_t *ids = NULL;
    int np = 0;
    firth_error err = {0};
    IK_OK(firth_list_partitions(c, "lk.days", &names, &ids, &np, &err), err);
    int64_t sum = 0;
    for (int i = 0; i < s->noffsets; i++) {
        bool known = false;
        for (int p = 0; p < np; p++) known = known || ids[p] == s->offsets[i].partition_id;
        LS_CHECK(known && s->offsets[i].bucket >= 0 && s->offsets[i].bucket < 2,
                 "%s: lk.days: offset %d names partition %" PRId64 " bucket %d", ls_side, i,
                 s->offsets[i].partition_id, s->offsets[i].bucket);
        sum += s->offsets[i].offset;
    }
    LS_CHECK(np == 2 && sum == 9, "%s: lk.days: %d partitions, %" PRId64 " records tiered "
             "(2 and 9 expected)", ls_side, np, sum);
    firth_names_free(names, np);
    firth_free(ids);
    firth_lake_snapshot_free(s);
}

static void ls_primary_key(firth_client *c)
{
    int64_t id = ls_tier(c, "lk.users");
    firth_lake_snapshot *s = ls_expect_newest(c, "lk.users", id);
    ls_counts k = ls_log(c, "lk.users", true);
    ls_expect_counts(s, &k, "lk.users");
    firth_lake_snapshot_free(s);
}

static void ls_errors(firth_client *c)
{
    firth_lake_snapshot *s = NULL;
    firth_error err = {0};
    int rc = firth_latest_lake_snapshot(c, "lk.plain", &s, &err);
    LS_CHECK(rc == FIRTH_EINVAL && err.code == FIRTH_EINVAL && !s &&
                 strstr(err.msg, "table lk.plain has no lake: create it with "
                                 "'table.datalake.enabled' = 'true'"),
             "%s: a table without a lake: %d %s", ls_side, rc, err.msg);
    rc = firth_latest_lake_snapshot(c, "lk.nope", &s, &err);
    LS_CHECK(rc == FIRTH_ENOTFOUND && !s && strstr(err.msg, "nope"),
             "%s: an unknown table: %d %s", ls_side, rc, err.msg);
    rc = firth_latest_lake_snapshot(c, "nodb.events", &s, &err);
    LS_CHECK(rc == FIRTH_ENOTFOUND && !s, "%s: an unknown database: %d %s", ls_side, rc,
             err.msg);
    LS_CHECK(firth_latest_lake_snapshot(c, NULL, &s, &err) == FIRTH_EINVAL &&
                 firth_latest_lake_snapshot(c, "lk.events", NULL, &err) == FIRTH_EINVAL &&
                 firth_latest_lake_snapshot(NULL, "lk.events", &s, NULL) == FIRTH_EINVAL,
             "%s: NULL arguments are FIRTH_EINVAL", ls_side);
    firth_lake_snapshot_free(NULL);
}

/* Dropped and created again after a call: the new table's (empty) lake. */
static void ls_recreated(firth_client *c)
{
    firth_lake_snapshot *s = ls_latest(c, "lk.events");
    LS_CHECK(s->snapshot_id >= 0, "%s: lk.events has no snapshot before the drop", ls_side);
    firth_lake_snapshot_free(s);
    ik_sql(c, "DROP TABLE lk.events; CREATE TABLE lk.events (id INT NOT NULL, name STRING) "
              "WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '3')");
    ls_expect_none(c, "lk.events");
}

static void ls_run(const char *target, const char *side)
{
    ls_side = side;
    firth_client *c = NULL;
    firth_error err = {0};
    const char *keys[] = {"lake.tiering.threads"}, *values[] = {"0"};
    IK_OK(strncmp(target, "firth://", 8) == 0 ? firth_open(target, &c, &err)
                                               : firth_open_opts(target, keys, values, 1, &c, &err),
          err);
    ik_sql(c, "CREATE DATABASE lk;"
              "CREATE TABLE lk.events (id INT NOT NULL, name STRING) WITH ("
              "'table.datalake.enabled' = 'true', 'bucket.num' = '3', 'bucket.key' = 'id');"
              "CREATE TABLE lk.days (id INT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt) "
              "WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2', 'bucket.key' = 'id');"
              "CREATE TABLE lk.users (id INT NOT NULL, name STRING, PRIMARY KEY (id) NOT "
              "ENFORCED) WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '3');"
              "CREATE TABLE lk.plain (id INT NOT NULL) WITH ('bucket.num' = '2')");
    ls_insert_events(c, 1, 40);
    ik_sql(c, "INSERT INTO lk.days VALUES (1, 'a'), (2, 'a'), (3, 'a'), (4, 'a'), (5, 'b'), "
              "(6, 'b'), (7, 'b'), (8, 'b'), (9, 'b');"
              "INSERT INTO lk.users VALUES (1, 'ann'), (2, 'bob'), (3, 'cy'), (4, 'di');"
              "UPDATE lk.users SET name = 'bobby' WHERE id = 2; DELETE FROM lk.users WHERE id = 3");
    ls_log_table(c);
    ls_partitioned(c);
    ls_primary_key(c);
    ls_errors(c);
    ls_recreated(c);
    firth_close(c);
    ik_log("%s: checked", side);
}

int main(void)
{
    ik_scratch("client_lake_snapshot");
    char target[1300];
    snprintf(target, sizeof target, "file:%s/embedded", ik_dir);
    ls_run(target, "embedded");
    ik_server s;
    ik_server_init(&s, "lake");
    const char *extra[] = {"--lake.tiering.threads", "0", NULL};
    ik_server_start_ok(&s, "127.0.0.1:0", extra);
    ls_run(s.target, "remote");
    ik_server_stop(&s);
    return ik_finish("client_lake_snapshot");
}
