/* server_int.h — what the files of the server share: the server, its connections and
 * requests (jobs), the worker pool, the handlers of the apis, and the metrics.
 *
 * Threads and ownership:
 * - The loop thread owns the connections, the parked fetches and every field marked
 *   (loop). Workers never touch a connection; they see a job and its request only.
 * - A job is owned by exactly one place at a time: the loop (being read or parked), the
 *   pool's queue, a worker (running), or the done queue (handed back). Its response bytes
 *   go to the loop with it.
 * - A connection lives until its handle is closed and no job refers to it (conn->refs).
 * - Metrics are atomics, written by any thread without a lock, read by the HTTP thread. */
#ifndef FIRTH_SERVER_INT_H
#define FIRTH_SERVER_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "rpc/rpc.h"
#include "server/server.h"
#include "sql/sql.h"

#define SRV_SOFTWARE "firth " FIRTH_SERVER_VERSION
#define FIRTH_SERVER_VERSION "0.1.0"

typedef struct srv_conn srv_conn;
typedef struct srv_job srv_job;

/* ---- metrics (server_metrics.c) --------------------------------------------------------- */

/* Latency histogram upper bounds in microseconds; one more bucket counts everything. */
#define SRV_LATENCY_BUCKETS 16
#define SRV_TABLE_SLOTS 4096 /* tables tracked for append and fetch counters */
#define SRV_TABLE_NAME_BYTES 520

typedef struct srv_api_metrics {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t errors;
    atomic_uint_fast64_t latency_us_sum;
    atomic_uint_fast64_t latency[SRV_LATENCY_BUCKETS + 1]; /* non-cumulative counts */
} srv_api_metrics;

/* One table's counters: a slot of an open-addressing table keyed by table id, claimed
 * once (state 0 -> 1 -> 2) and never freed, so that lookups take no lock. */
typedef struct srv_table_metrics {
    atomic_int state; /* 0 empty, 1 being filled, 2 ready */
    int64_t table_id;
    char name[SRV_TABLE_NAME_BYTES]; /* "db.table" */
    atomic_uint_fast64_t appended_records, appended_bytes, appended_batches;
    atomic_uint_fast64_t fetched_records, fetched_bytes;
    atomic_uint_fast64_t kv_rows_written;
} srv_table_metrics;

typedef struct srv_metrics {
    int64_t started_ms;
    srv_api_metrics api[FR_RPC_API_COUNT + 1]; /* the last: unknown api keys */
    atomic_uint_fast64_t bytes_in, bytes_out;
    atomic_uint_fast64_t connections_accepted, connections_refused, bad_frames;
    atomic_uint_fast64_t produce_out_of_order;
    atomic_int_fast64_t connections_open, requests_in_flight, fetches_parked;
    srv_table_metrics tables[SRV_TABLE_SLOTS];
} srv_metrics;

void srv_metrics_init(srv_metrics *m);
void srv_metrics_request(srv_metrics *m, int api, bool failed, int64_t latency_ns);
/* The counters of table t (found or claimed); NULL when every slot is taken. */
srv_table_metrics *srv_metrics_table(srv_metrics *m, fr_table *t);
/* The Prometheus text exposition of everything (engine sizes included). */
int srv_metrics_render(fr_server *s, fr_buf *out, fr_error *err);

/* ---- the worker pool (server_pool.c) ---------------------------------------------------- */

typedef void (*srv_task_fn)(void *arg);

/* A fixed set of threads taking tasks from one queue. A task is a function and an
 * argument; tasks are run in the order pushed, by whichever thread is free. */
typedef struct srv_pool srv_pool;
int srv_pool_new(int threads, srv_pool **out, fr_error *err);
/* Queues a task; FR_ENOMEM when no memory is left for the queue entry. */
int srv_pool_push(srv_pool *p, srv_task_fn fn, void *arg, fr_error *err);
/* Runs fn(ctx, i) for i in 0..n, on this thread and on up to helpers pool threads at once,
 * and returns when all are done. The caller's thread runs whatever no pool thread has
 * taken, so this never waits for a queue that is full of callers like itself. */
void srv_pool_parallel(srv_pool *p, int n, int helpers, void (*fn)(void *ctx, int i),
                       void *ctx);
/* Finishes the queued tasks, stops and joins the threads, frees. */
void srv_pool_free(srv_pool *p);
/* Around a wait on something other than the engine (a client reading a streamed part): the
 * thread does not count against the pool's size meanwhile (server_pool.c). Thread: a pool
 * worker, in pairs. */
void srv_pool_block_begin(srv_pool *p);
void srv_pool_block_end(srv_pool *p);

/* ---- the server and its connections (server_core.c) ------------------------------------ */

typedef enum srv_job_kind {
    SRV_JOB_DONE,   /* out holds the final frame(s); the request is finished */
    SRV_JOB_PARKED, /* a fetch waiting for data (out is empty) */
    SRV_JOB_PART,   /* a worker waits for out (one PART frame) to be written */
} srv_job_kind;

struct srv_job {
    srv_job *next;                 /* queue link (done queue) */
    srv_job *park_prev, *park_next; /* (loop) the parked list */
    fr_server *srv;
    srv_conn *conn;                /* (loop) */
    int16_t api, version;
    int32_t request_id;
    uint8_t *body;                 /* the frame's body, within body_block */
    size_t body_len;
    uint8_t *body_block;           /* owned: the memory body points into (the frame reader's
                                    * buffer taken whole, or a copy of the body) */
    size_t counted_bytes;          /* (loop) its share of fr_server.inflight_bytes */
    int64_t received_ns;           /* fr_monotonic_ns when read */
    ProtobufCMessage *request;     /* unpacked by the worker; NULL until then */
    srv_job_kind kind;
    fr_buf out;                    /* response frames */
    fr_rpc_gather *gout;           /* or the final frame as pieces (srv_respond_gather) */
    fr_buf *kept;                  /* owned: the buffers gout's pieces point into */
    int nkept;
    bool failed;                   /* the final frame is an ERROR */

    /* Long polling (server_fetch.c): what a parked fetch waits on. */
    int64_t deadline_ns;
    bool final;                    /* answer with what there is, do not park again */
    bool cancelled;                /* the connection is gone: free, answer nothing */
    fr_table **held;               /* tables retained while parked (their logs live) */
    int nheld;
    fr_log **wait_logs;            /* a bucket's log and the offset the fetch reads from */
    int64_t *wait_offsets;
    int nwait;

    /* Streamed responses (server_sql.c): the worker waits until its PART is written. */
    pthread_mutex_t part_mu;
    pthread_cond_t part_cv;
    bool part_sync;                /* part_mu and part_cv are initialized */
    bool part_done;                /* (part_mu) the loop wrote (or dropped) the part */
    bool part_failed;              /* (part_mu) the connection is gone */
};

/* What the server keeps of answers' record buffers for reuse (fr_bufpool). */
#define SRV_BUFS_KEEP_BYTES ((size_t)64 << 20)
/* Gives the buffers of an answer back to the server's pool and frees the array. */
void srv_bufs_give(fr_server *s, fr_buf *bufs, int n);

struct fr_server {
    fr_server_options opts;        /* a copy: strings owned */
    fr_engine *engine;
    srv_pool *pool;                /* data requests */
    srv_pool *sql_pool;            /* execute_sql, so that long queries do not hold the others */
    fr_bufpool *bufs;              /* answers' record buffers, kept mapped for the next ones */
    char address[FR_SERVER_ADDRESS_BYTES_MAX];
    char http_address[FR_SERVER_ADDRESS_BYTES_MAX];
    bool http_on;

    uv_loop_t loop;
    uv_tcp_t listener;
    int wake_fd;                   /* an eventfd: jobs done, appends seen, stop asked */
    uv_poll_t wake_poll;           /* the loop's watch on wake_fd */
    atomic_bool wake_sent;         /* wake_fd was written and the loop has not looked yet */
    uv_timer_t park_timer;         /* the earliest deadline of the parked fetches */
    uv_timer_t stop_timer;         /* the shutdown timeout */
    pthread_t loop_thread;
    bool loop_started;

    pthread_mutex_t done_mu;       /* guards the done queue */
    srv_job *done_head, *done_tail;

    atomic_bool stop_asked;
    atomic_bool appended;          /* an append woke the loop for the parked fetches */
    atomic_int parked_count;       /* parked fetches (the watcher skips the wake-up at 0) */
    fr_log_watcher watcher;

    /* (loop) */
    bool stopping;                 /* no new requests; draining */
    bool torn_down;
    srv_conn *conns;               /* doubly linked */
    int64_t nconns;
    int64_t jobs_live;             /* jobs handed to workers and not yet back */
    int64_t inflight_bytes;        /* request bodies of the requests in flight */
    bool bytes_paused;             /* a connection waits for inflight_bytes to fall */
    srv_job *parked;               /* doubly linked through park_prev/park_next */

    struct MHD_Daemon *http;
    srv_metrics *metrics;

    pthread_mutex_t exit_mu;       /* the loop's end, for fr_server_wait */
    pthread_cond_t exit_cv;
    bool exited;
    int exit_rc;
    fr_error exit_err;
};

/* Wakes the loop to look at the done queue and the flags (any thread; cheap when the loop
 * was already woken and has not looked yet). */
void srv_wake_loop(fr_server *s);
/* Hands a job back to the loop (any thread). */
void srv_complete(fr_server *s, srv_job *j);
/* Frees a job's memory (any thread; the job is nowhere anymore). */
void srv_job_free(srv_job *j);

/* ---- requests (server_dispatch.c) ------------------------------------------------------- */

/* Runs a job on a worker: unpacks the request and calls its handler; the response frames
 * (or an ERROR frame) end up in j->out, or the job is marked parked. */
void srv_job_run(srv_job *j);
/* Answers api_versions (which needs no worker) into out. */
int srv_api_versions(fr_server *s, srv_job *j, fr_error *err);

/* Zeroed arena memory (NULL when out of memory) and arena copies of strings, for the
 * messages a handler builds: the arena is freed once the response is packed. */
void *srv_zalloc(fr_arena *a, size_t n);
char *srv_strdup(fr_arena *a, const char *s);

/* Appends the api's response frame (result SUCCESS or PART) to j->out. */
int srv_respond(srv_job *j, fr_rpc_result result, const ProtobufCMessage *body, fr_error *err);
/* srv_respond for a SUCCESS whose large bytes fields lie in kept[0..nkept) (taken, whatever
 * happens): they are written from there, not copied into the frame. */
int srv_respond_gather(srv_job *j, const ProtobufCMessage *body, fr_buf *kept, int nkept,
                       fr_error *err);
/* Drops a gathered response and its buffers (an error replaces it, or nobody reads it). */
void srv_job_drop_gather(srv_job *j);

/* A table named by a request: path present, table exists, and when table_id != 0 it still
 * has that id. The handle is the caller's (fr_table_release). */
int srv_get_table(fr_server *s, const Firth__TablePath *path, int64_t table_id,
                  fr_table **out, fr_error *err);
/* Error messages of per-item results: a Firth__Error filled from err; the strings are
 * copied into an arena that lives as long as the response being built. */
Firth__Error *srv_item_error(fr_arena *a, const fr_error *err);

/* ---- handlers (one file per family); each fills j->out or returns an error ------------- */

int srv_handle_metadata(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_create_database(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_drop_database(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_list_databases(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_create_table(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_drop_table(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_list_tables(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_get_table_info(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_list_offsets(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_authenticate(fr_server *s, srv_conn *c, srv_job *j, fr_error *err);
/* The newest lake snapshot of a lake-enabled table (server_lake.c). */
int srv_handle_lake_snapshot(fr_server *s, srv_job *j, fr_error *err);

/* ---- writes (server_write.c, server_put.c) ---------------------------------------------- */

/* What became of one entry. */
typedef struct srv_entry_result {
    int rc;
    fr_error err;
    int64_t base_offset;
    int64_t commit_ts;
    int64_t rows_changed, changelog_records; /* put_kv */
    fr_table_pending pending; /* produce_log: appended, waiting for durability */
} srv_entry_result;

/* Entries ordered by (partition, bucket, position), cut into groups of one bucket. */
typedef struct srv_entry_groups {
    int *order;  /* entry indexes */
    int *start;  /* group g is order[start[g] .. start[g + 1]) */
    int n;
} srv_entry_groups;

void srv_groups_free(srv_entry_groups *g);
/* Groups the n entries by (partition, bucket) into g and runs fn(ctx, group) over the groups
 * on the worker pool, side by side; returns when all have run. */
int srv_run_groups(fr_server *s, size_t n, const int64_t *pids, const int32_t *buckets,
                   void (*fn)(void *, int), void *ctx, srv_entry_groups *g, fr_error *err);
/* Allocates the per-entry partition and bucket arrays (the caller frees both). */
int srv_entry_keys(size_t n, int64_t **pids, int32_t **buckets, fr_error *err);
/* Checks that a record batch is long enough for its header and carries the request's writer
 * id. */
int srv_check_writer(const uint8_t *p, size_t n, int64_t writer_id, fr_error *err);

int srv_handle_produce_log(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_put_kv(fr_server *s, srv_job *j, fr_error *err);
/* Returns SRV_PARK when the fetch should wait (j's wait fields are filled). */
#define SRV_PARK 1
int srv_handle_fetch_log(fr_server *s, srv_job *j, fr_error *err);
/* Releases what a parked fetch holds (worker side). */
void srv_fetch_release(srv_job *j);
int srv_handle_lookup(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_prefix_lookup(fr_server *s, srv_job *j, fr_error *err);
int srv_handle_execute_sql(fr_server *s, srv_job *j, fr_error *err);

/* Sends j->out as one PART frame and waits until the loop has written it. FR_ESTATE when
 * the connection is gone (the caller stops). Worker threads only. */
int srv_send_part(srv_job *j, fr_error *err);

/* Worker side of a job: runs it and hands it back (a srv_pool task). */
void srv_job_task(void *arg);
/* The pool a job runs on: execute_sql has its own. */
srv_pool *srv_pool_of(fr_server *s, const srv_job *j);
/* Tells the worker waiting in srv_send_part that its part was written (or not). */
void srv_part_notify(srv_job *j, bool failed);
/* Tears the server down once it is stopping and nothing is left in flight (loop). */
void srv_check_stop(fr_server *s);

/* ---- connections (server_conn.c), all on the loop thread -------------------------------- */

struct srv_conn {
    uv_tcp_t tcp; /* first: the handle's address is the connection's */
    fr_server *srv;
    srv_conn *prev, *next;
    fr_rpc_reader *reader;
    int refs;             /* the handle's, and one per job that names the connection */
    int64_t inflight;     /* requests read and not yet answered (parked fetches too) */
    size_t write_queued;  /* bytes handed to uv_write and not yet written */
    bool reading;
    bool closing;
    bool eof;             /* the peer closed its side: close once all is answered */
    bool close_after_write; /* a connection error was sent: close once it is written */
    bool frame_error;     /* the reader refused the bytes (in alloc_cb) */
    fr_error frame_err;
    bool authenticated;
    char *principal;
    char peer[FR_SERVER_ADDRESS_BYTES_MAX];
};

void srv_on_connection(uv_stream_t *server, int status);
/* Takes the frames that may be worked on now and starts or stops reading accordingly. */
void srv_conn_pump(srv_conn *c);
/* srv_conn_pump of every connection (when a limit shared by all of them frees up). */
void srv_conn_pump_all(fr_server *s);
/* Writes b's bytes (taken) to the connection; notify (may be NULL) learns when written. */
void srv_conn_write_buf(srv_conn *c, fr_buf *b, srv_job *notify);
/* Writes j's gathered response (taken from j: its pieces and buffers are freed once
 * written). */
void srv_conn_write_gather(srv_conn *c, srv_job *j);
void srv_conn_close(srv_conn *c);
/* Closes a connection whose work is over (an error frame written, or a peer that closed
 * its side and got every answer). */
void srv_conn_maybe_finish(srv_conn *c);
void srv_conn_unref(srv_conn *c);
void srv_conn_set_principal(srv_conn *c, const char *principal);
/* "127.0.0.1:51234": fixed once accepted, so workers may read it. */
const char *srv_conn_peer(const srv_conn *c);
/* The metrics slot of an api key (unknown keys share the last). */
int srv_api_slot(int api);

/* ---- parked fetches (server_park.c), on the loop thread --------------------------------- */

void srv_park(fr_server *s, srv_job *j);
void srv_unpark(fr_server *s, srv_job *j);
/* Hands a job to the workers again. */
void srv_resubmit(fr_server *s, srv_job *j);
/* Runs again the parked fetches whose buckets grew, or all of them (answering at once). */
void srv_wake_parked(fr_server *s, bool all);
/* The logs' watcher: wakes the loop after an append while fetches are parked. */
void srv_on_append(void *ctx, fr_log *log, int64_t end_offset);
/* ---- addresses and buckets ---------------------------------------------------------------- */

/* Listener addresses: "host:port" resolved (names through the system's resolver) and a
 * socket address formatted back ("127.0.0.1:9123", "[::1]:9123"). */
struct sockaddr;
struct sockaddr_storage;
int srv_resolve(const char *what, const char *text, struct sockaddr_storage *out,
                fr_error *err);
void srv_format_sockaddr(const struct sockaddr *sa, char *out, size_t cap);
/* The bucket's log for a request naming (partition id, bucket), with errors that say
 * whether the bucket or the partition is wrong. Lives as long as the table handle. */
int srv_bucket_log(fr_table *t, int64_t pid, int bucket, fr_log **out, fr_error *err);

/* ---- HTTP (server_http.c) -------------------------------------------------------------- */

int srv_http_start(fr_server *s, fr_error *err);
void srv_http_stop(fr_server *s);

#endif
