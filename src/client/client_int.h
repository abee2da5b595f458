/* client_int.h — the internals shared by the files of the client module: the client object
 * (embedded or remote), the remote connection (client_net.c), what the client knows of a
 * table (client_table.c), routing rows to buckets and partitions (client_route.c), gathering
 * rows of several batches into one (client_gather.c), and the remote versions of the public
 * calls (client_remote.c, client_rscan.c).
 *
 * A client is either embedded (engine and SQL session in this process) or remote (one
 * connection to a firth server, shared by every thread of the client). Every public function
 * picks its path by c->remote; the writer, scanner and lookuper work on an fr_ctable, which
 * hides which one it is. */
#ifndef FIRTH_CLIENT_INT_H
#define FIRTH_CLIENT_INT_H

#include <pthread.h>

#include "client/client_bridge.h"
#include "rpc/rpc.h"

/* ---- the remote connection (client_net.c) ------------------------------------------------ */

typedef struct fr_cnet fr_cnet;

typedef struct fr_cnet_options {
    const char *host;             /* copied */
    int port;
    int64_t connect_timeout_ms;   /* one connection attempt */
    int64_t request_timeout_ms;   /* a response's wait, beyond a long poll's own wait */
    int64_t frame_bytes_max;      /* of the responses this client accepts */
    int64_t backoff_ms;           /* first pause before a reconnection; doubles ... */
    int64_t backoff_max_ms;       /* ... up to this */
    int retries;                  /* attempts after the first, for calls that may retry */
    int64_t stream_buffer_bytes;  /* frames of one streamed response held unread, at most */
} fr_cnet_options;

void fr_cnet_options_default(fr_cnet_options *o);

/* Connects (and says hello with API_VERSIONS) at once, so that a bad address fails here:
 * "cannot connect to 127.0.0.1:9123: Connection refused (is `firth server` running?)".
 * Starts the connection's reader thread. *out is the caller's (fr_cnet_close). */
int fr_cnet_open(const fr_cnet_options *o, fr_cnet **out, fr_error *err);
/* Closes the connection, fails the calls in flight (FR_ESTATE) and joins the reader. */
void fr_cnet_close(fr_cnet *n);

/* Flags of fr_cnet_call. */
#define FR_CNET_RETRY 0x1u /* the request may be sent again after a lost connection or a
                            * SHUTTING_DOWN answer (reads; writes made safe by idempotence) */

/* Called for each PART frame of a streamed response, on the caller's thread, with the
 * unpacked message (freed after the call). A negative return fails the call with it, a
 * positive one stops it quietly (the rest of the stream is dropped). */
typedef int (*fr_cnet_part_fn)(void *ctx, ProtobufCMessage *part, fr_error *err);

/* Sends req (a request of api, checked with fr_rpc_request_check) and waits for its answer:
 * the final SUCCESS message in *resp (the caller's: fr_rpc_free), or the ERROR's status and
 * message (prefixed with the api's name). wait_ms is how long the server may hold the
 * request on purpose (a long poll), added to the request timeout. Thread: any; calls from
 * several threads are pipelined on the one connection. Errors: the server's, FR_EIO for a
 * connection lost (after the retries when FR_CNET_RETRY) or no answer in time. *stopped
 * (may be NULL) is set when on_part stopped the stream. */
int fr_cnet_call(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, int64_t wait_ms,
                 unsigned flags, fr_cnet_part_fn on_part, void *ctx, ProtobufCMessage **resp,
                 bool *stopped, fr_error *err);

/* A request sent whose answer is taken later (a scanner's prefetched fetch): the caller
 * goes on meanwhile. Owned by the caller (fr_cnet_pending_free), used by one thread at a
 * time; not for streamed answers. */
typedef struct fr_cnet_pending fr_cnet_pending;

/* Sends req as fr_cnet_call does, without waiting for the answer, and without retries (the
 * caller sends again when it wants to). notify (may be NULL) is called with ctx once the
 * answer is there or the connection is lost, on whichever thread saw it, with the
 * connection's lock held: it must only signal (never call into the connection). */
int fr_cnet_start(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, int64_t wait_ms,
                  void (*notify)(void *ctx), void *ctx, fr_cnet_pending **out, fr_error *err);
/* Waits at most timeout_ms for p's answer: FR_OK with *resp (the caller's: fr_rpc_free)
 * once it came, FR_OK with *resp NULL while it has not; or the failure, as fr_cnet_call
 * gives it. After an answer or a failure, p has nothing more to give. */
int fr_cnet_wait(fr_cnet_pending *p, int64_t timeout_ms, ProtobufCMessage **resp,
                 fr_error *err);
/* Forgets p, answered or not (an answer still to come is dropped). NULL is ignored. */
void fr_cnet_pending_free(fr_cnet_pending *p);
/* Frees an answer of fr_cnet_call or fr_cnet_wait (NULL is fine). A fetch_log or lookup
 * answer holds the frame it was received in, with its batches unpacked in place; that
 * memory goes back to the connection, to receive the next answers into, so free such an
 * answer only once nothing points into its batches. Thread: any. */
void fr_cnet_release(fr_cnet *n, ProtobufCMessage *m);

/* The largest request frame the server takes (from its API_VERSIONS answer). */
int64_t fr_cnet_server_frame_max(fr_cnet *n);
/* Connections made so far (1 after open; more after reconnections), for tests. */
int64_t fr_cnet_connects(fr_cnet *n);
/* Breaks the current connection as a network failure would (tests of reconnection). */
void fr_cnet_break(fr_cnet *n);

/* ---- the client ---------------------------------------------------------------------------- */

/* The most capacity of encoded record batches a remote client keeps for its next requests:
 * a few requests' worth (a writer's flights of several buckets included). */
#define CLIENT_ENCODED_KEEP_BYTES (16u << 20)

struct firth_client {
    bool remote;
    /* embedded */
    fr_engine *engine;
    fr_sql_session *session;
    /* remote */
    fr_cnet *net;
    char *target;
    fr_bufpool *encoded; /* the buffers of encoded record batches, kept between requests */
    pthread_mutex_t db_mu; /* database */
    char database[FR_NAME_BYTES_MAX + 1]; /* the session database of execute_sql (USE) */
    /* remote: table descriptions kept for one-shot calls (client_table.c) */
    pthread_mutex_t tables_mu;
    struct fr_ctable *tables; /* most recently used first */
    int ntables;
};

struct firth_batch {
    fr_batch *batch;
};

/* Sets a public error (may be NULL) and returns code. */
int fr_client_fail(firth_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Splits "db.t" or "t" (in the client's current database) into checked, lower-cased parts
 * (bare names; `quoted` parts are unquoted). db and t have FR_NAME_BYTES_MAX + 1 bytes. */
int fr_client_resolve(firth_client *c, const char *name, char *db, char *t, fr_error *err);
/* The client's current database, copied into out (FR_NAME_BYTES_MAX + 1 bytes). */
void fr_client_database(firth_client *c, char *out);

/* A random idempotent writer id, >= 0. */
int64_t fr_client_random_writer_id(void);

/* ---- tables as the client sees them (client_table.c) -------------------------------------- */

typedef struct fr_cpart {
    int64_t id;
    char *name; /* "dt=2026-11-30/region=eu" */
} fr_cpart;

typedef struct fr_ctable {
    firth_client *client;           /* not owned */
    char db[FR_NAME_BYTES_MAX + 1];
    char name[FR_NAME_BYTES_MAX + 1];
    char qname[2 * FR_NAME_BYTES_MAX + 2];
    int64_t id;
    fr_schema *schema;              /* the current schema (owned) */
    fr_compression compression;
    int nbuckets;
    int *bucket_key, nbucket_key;   /* column indexes (owned) */
    int *pk, npk;
    int *part, npart;
    bool dynamic_partitions;
    fr_table *local;                /* embedded: the handle (released by fr_ctable_free) */
    /* remote, partitioned: the partitions known (refreshed when a name is missing) */
    pthread_mutex_t parts_mu;
    fr_cpart *parts;
    int nparts;
    /* kept by the client's table cache: users and the cache hold references (tables_mu) */
    int refs;
    struct fr_ctable *next;
} fr_ctable;

/* Looks the table up (embedded: a handle; remote: GET_TABLE_INFO). *out is the caller's. */
int fr_ctable_open(firth_client *c, const char *name, fr_ctable **out, fr_error *err);
void fr_ctable_free(fr_ctable *t);
/* The table for a one-shot call: a remote table's description comes from the client's
 * cache when it holds one (*cached true), otherwise from the server, and is kept for the
 * next calls. The server checks the table id of every write, so a
 * description outdated by a DROP and CREATE under the same name is refused whole; the
 * caller then forgets it and tries once more, fresh. Give *out back with fr_ctable_put.
 * Thread: any. */
int fr_ctable_get(firth_client *c, const char *name, bool fresh, fr_ctable **out,
                  bool *cached, fr_error *err);
void fr_ctable_put(fr_ctable *t);
/* Takes t's description out of the cache (the next fr_ctable_get asks the server). */
void fr_ctable_forget(fr_ctable *t);
/* Empties the cache (firth_close: no call is running). */
void fr_ctable_cache_free(firth_client *c);
/* The remote table's partitions (refreshed from METADATA when refresh or none known yet):
 * fills a snapshot the caller frees with fr_cparts_free. */
int fr_ctable_partitions(fr_ctable *t, bool refresh, fr_cpart **out, int *count,
                         fr_error *err);
void fr_cparts_free(fr_cpart *p, int count);
/* The id of the partition named name (remote), creating it when the table creates
 * partitions as rows arrive (FR_ENOTFOUND otherwise, naming the partition). */
int fr_ctable_partition_id(fr_ctable *t, const char *name, int64_t *id, fr_error *err);
/* The id the partition known as old_id has now (FR_ENOTFOUND when t never knew old_id):
 * a partition dropped since t read the list is found again under its name, or created
 * again when the table creates partitions as rows arrive. */
int fr_ctable_partition_renew(fr_ctable *t, int64_t old_id, int64_t *id, fr_error *err);
/* A TablePath message pointing at t's names (lives as t). */
void fr_ctable_path(const fr_ctable *t, Firth__TablePath *path);
/* Resolves "a, b" to column indexes of the schema, in the order given, distinct. *cols has
 * room for every column. */
int fr_ctable_columns(const fr_ctable *t, const char *text, int *cols, int *ncols,
                      fr_error *err);

/* ---- routing (client_route.c) ------------------------------------------------------------- */

/* The bucket of row `row` of b by the table's bucket key (murmur3 of the canonical key
 * bytes, docs/ENGINE.md), key[] naming the key's columns in b. */
int fr_route_bucket(const fr_batch *b, const int *key, int nkey, int nbuckets, int64_t row,
                    fr_buf *scratch, int *bucket, fr_error *err);
/* The bucket of an idempotent writer's batch in a table without a bucket key. */
int fr_route_writer_bucket(int64_t writer_id, int32_t seq, int nbuckets);
/* The partition name of row `row` ("k=v/k2=v2"): part[] names the partition columns in b
 * and names[] their names. Appends the name and a NUL to out. A NULL is FR_EINVAL. */
int fr_route_partition_name(const fr_batch *b, const int *part, const char *const *names,
                            int npart, int64_t row, fr_buf *out, fr_error *err);

/* Rows of a batch grouped by destination: dest[i] of row i (0..ndest-1). Fills rows (the
 * row numbers grouped by destination, in row order within one) and start (ndest + 1
 * entries: the rows of destination d are rows[start[d] .. start[d + 1])). */
int fr_route_group(const int32_t *dest, int64_t nrows, int ndest, int64_t *rows,
                   int64_t *start, fr_error *err);

/* ---- gathering rows (client_gather.c) ----------------------------------------------------- */

/* A run of rows of one source batch. */
typedef struct fr_gather_run {
    const fr_batch *src;
    int64_t row;
    int64_t count;
} fr_gather_run;

/* A new batch of schema `schema` (copied) holding the runs' rows in order; every source has
 * columns of the schema's types. Buffers are copied. */
int fr_gather(const fr_schema *schema, const fr_gather_run *runs, int nruns, fr_batch **out,
              fr_error *err);
/* The rows [rows[0], rows[1], ...) of b, in that order. */
int fr_gather_rows(const fr_batch *b, const int64_t *rows, int64_t n, fr_batch **out,
                   fr_error *err);
/* About how many bytes a batch holds (its buffers): for batching by size. */
int64_t fr_gather_bytes(const fr_batch *b);

/* ---- lookup answers (client_lookup.c) ---------------------------------------------------- */

/* Record batches collected in order. */
typedef struct fr_rrows {
    fr_batch **batches; /* owned */
    int n, cap;
    int64_t rows;
} fr_rrows;

/* What one bucket answered to a lookup of n keys: found flags or row counts per key, and the
 * rows, in key order. */
typedef struct fr_rlookup_part {
    int64_t n;          /* keys asked (set by the caller) */
    bool *hit;          /* owned: lookup: found per key */
    int64_t *counts;    /* owned: prefix lookup: rows per prefix */
    fr_rrows found;     /* the rows, of the lookuper's output schema */
} fr_rlookup_part;

/* Checks and decodes bucket i (< its n_buckets) of the answer m, a Firth__LookupResponse or,
 * when prefix, a Firth__PrefixLookupResponse, into part: the bucket's own error, else its
 * flags or counts (one per key) and its rows (schema out), which the flags or counts must
 * account for exactly (FR_ECORRUPT otherwise). */
int fr_rlookup_take(const ProtobufCMessage *m, bool prefix, int i, const fr_schema *out,
                    fr_rlookup_part *part, fr_error *err);
/* Frees what part holds; n stays. */
void fr_rlookup_part_free(fr_rlookup_part *part);

/* ---- lake snapshot answers (client_lake.c) ----------------------------------------------- */

/* Checks the answer m to a lake_snapshot request about table qname (of nbuckets buckets,
 * partitioned or not, as the client's description says) and copies it into *out (the
 * caller's: firth_lake_snapshot_free). FR_ECORRUPT, naming the table and what is wrong, for
 * a snapshot id below -1, a negative commit time, offsets or a commit time without a
 * snapshot, more than FR_RPC_LAKE_OFFSETS_MAX offsets, a bucket outside 0..nbuckets-1, a
 * partition id that does not fit the table (-1 exactly without partitions, >= 0 with), a
 * negative offset, or offsets out of order or named twice; FR_ENOMEM. */
int fr_rlake_take(const Firth__LakeSnapshotResponse *m, const char *qname, int nbuckets,
                  bool partitioned, firth_lake_snapshot **out, fr_error *err);

/* ---- record batches to and from the wire (client_remote.c) -------------------------------- */

/* Decoded records of a fetch: one entry per record batch. */
typedef struct fr_rdecoded {
    fr_batch *batch;      /* projected, filtered; owned */
    int64_t *offsets;     /* one per row (owned) */
    uint8_t *changes;     /* one per row, or NULL for appends only (owned) */
    int64_t commit_ms;
} fr_rdecoded;

/* ---- remote versions of the public calls (client_remote.c) -------------------------------- */

int fr_remote_open(const char *target, const char *hostport, firth_client **out,
                   firth_error *err);
int fr_remote_execute(firth_client *c, const char *sql, const firth_sink *sink,
                      firth_error *err);
int fr_remote_table_info(firth_client *c, const char *table, char **json, firth_error *err);
/* Appends (log tables) or puts (primary-key tables, ops, target columns) the rows of b into
 * t, split by partition and bucket, under (writer_id, seq) for every bucket. *count gets the
 * rows appended or the keys changed. On failure, *untouched says whether the
 * server surely applied none of it: the failure came before the first request, or the
 * server refused that request whole because the table is not found (or not t->id). */
int fr_remote_write(fr_ctable *t, const fr_batch *b, const uint8_t *ops, const int *targets,
                    int ntargets, int64_t writer_id, int32_t seq, int64_t *count,
                    bool *untouched, fr_error *err);

/* The destination of each row of b: dest[row] = partition index * nbuckets + bucket, with
 * part_ids[partition index] its partition id (-1 without partitions); partitions missing
 * on the server are created when the table allows. fixed is the bucket of every row of a
 * table without a bucket key (-1: round robin per call). *dest and *part_ids are the
 * caller's (fr_free). */
int fr_remote_route(fr_ctable *t, const fr_batch *b, int fixed, int32_t **dest,
                    int64_t **part_ids, int *nparts, fr_error *err);
/* The batch has the table's columns, by type, in order (FR_ETYPE otherwise). */
int fr_remote_check_batch(const fr_ctable *t, const fr_batch *b, fr_error *err);

/* One unit of a remote write: the rows for one bucket of one partition, encoded. */
typedef struct fr_rput {
    int64_t partition_id;
    int bucket;
    fr_buf records;       /* one record batch */
    int64_t rows;
    /* results */
    int status;           /* 0, or the FR_E* of the bucket's error (DUPLICATE is 0) */
    fr_error err;
    int64_t count;        /* rows appended or keys changed */
    int64_t base_offset;
} fr_rput;

/* Sends units as PRODUCE_LOG (log tables) or PUT_KV requests, as few as the frame limit
 * allows, and fills their results. Returns a whole-request failure (the connection, the
 * table); per-unit failures are in the units. *answered gets how many units had their
 * request answered. */
int fr_remote_send(fr_ctable *t, fr_rput *units, int nunits, const int *targets,
                   int ntargets, int64_t writer_id, int *answered, fr_error *err);
/* How many of units [0, n) go in one request (at least one): the server's frame limit. */
int fr_remote_fit(fr_ctable *t, const fr_rput *units, int n);
/* Sends units [0, n) (n from fr_remote_fit) as one request without waiting for the answer,
 * which fr_remote_finish takes once notify(ctx) said it came (see fr_cnet_start). The units'
 * records must stay until then. in_order asks the server's logs for the writer's next
 * sequence only (a log table's ProduceLogRequest.in_order; FR_ESEQUENCE otherwise). */
int fr_remote_start(fr_ctable *t, fr_rput *units, int n, const int *targets, int ntargets,
                    int64_t writer_id, bool in_order, void (*notify)(void *ctx), void *ctx,
                    fr_cnet_pending **out, fr_error *err);
/* Fills the units' results from p's answer (or fails as fr_remote_send does, without
 * retrying: FR_EIO for a lost connection). p is still the caller's to free. */
int fr_remote_finish(fr_ctable *t, fr_cnet_pending *p, fr_rput *units, int n, fr_error *err);
/* Encodes the rows of b for a unit: a record batch under the writer id and sequence, with
 * ops as change types (NULL: appends; a primary-key table's upserts). */
int fr_remote_encode(const fr_ctable *t, const fr_batch *b, const uint8_t *ops,
                     int64_t writer_id, int32_t seq, fr_buf *out, fr_error *err);

/* Offsets of buckets: spec OFFSET_EARLIEST/LATEST/TIMESTAMP for each (partition, bucket). */
int fr_remote_list_offsets(fr_ctable *t, int spec, int64_t ts_ms, const int64_t *pids,
                           const int *buckets, int n, int64_t *offsets, fr_error *err);

/* A fetch plan shared by the remote scan and scanner: the columns to ask for (the wanted
 * ones, then those only the filter needs), the schema they decode to, the filter bound to
 * it. */
typedef struct fr_rfetch {
    int *cols;           /* fetched columns (table indexes) */
    int ncols;
    int nwanted;         /* the first nwanted of cols are returned */
    bool all_columns;    /* no projection asked for */
    fr_schema *fetched;  /* schema of the fetched columns */
    fr_schema *wanted;   /* schema of the returned columns */
    fr_expr *filter;     /* bound to `fetched`, or NULL */
    char *filter_text;
    fr_arena *arena;
} fr_rfetch;

int fr_rfetch_init(fr_rfetch *f, const fr_ctable *t, const char *columns, const char *where,
                   fr_error *err);
void fr_rfetch_free(fr_rfetch *f);
/* Decodes the record batches of one bucket's fetch result: records before from_offset are
 * skipped, the filter applied, the extra columns dropped. Appends to *out (grown). */
int fr_rfetch_decode(const fr_rfetch *f, const fr_ctable *t, const uint8_t *p, size_t n,
                     int64_t from_offset, fr_rdecoded **out, int *count, int *cap,
                     fr_error *err);
void fr_rdecoded_free(fr_rdecoded *d, int count);

int fr_remote_scan(firth_client *c, const char *table, const firth_scan_options *o,
                   firth_scan_fn fn, firth_changelog_fn changes_fn, void *ctx,
                   firth_error *err);

#endif
