/* server_core.c — the server's life and its event loop: starting (engine, workers,
 * listeners, the loop thread), accepting connections within the limit, reading frames with
 * backpressure, handing requests to the workers and writing their responses, parking
 * fetches until an append or their deadline, and the graceful shutdown.
 *
 * Backpressure, all on the loop thread: a connection is read only while it has fewer than
 * server.inflight.max requests in flight and fewer than server.connection.write.bytes.max
 * bytes waiting to be written; otherwise the loop stops reading it (uv_read_stop) and the
 * peer's TCP window fills. Whole frames already read but not yet started stay in the
 * connection's frame reader, which never holds more than one frame's bytes.
 *
 * Shutdown: the listener closes; frames read but not started are answered SHUTTING_DOWN;
 * parked fetches answer with what they have; once no request is in flight and every
 * response is written (or server.shutdown.timeout has passed) the connections close, the
 * workers stop, HTTP stops and the engine is flushed and closed. */
#include "server/server_int.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>

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

typedef struct srv_write {
    uv_write_t req;
    srv_conn *conn;
    uint8_t *data;
    size_t len;
    srv_job *notify; /* a PART frame whose worker waits for this write */
} srv_write;

static void conn_pump(srv_conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void check_stop(fr_server *s);
static void resubmit(fr_server *s, srv_job *j);

/* ---- addresses ------------------------------------------------------------------------- */

void srv_format_sockaddr(const struct sockaddr *sa, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        uv_ip4_name(in, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, cap, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        uv_ip6_name(in6, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, cap, "[%s]:%d", host, port);
    } else {
        snprintf(out, cap, "unknown");
    }
}

/* Resolves "host:port" (numeric or a name) to the first address of the system's resolver. */
int srv_resolve(const char *what, const char *text, struct sockaddr_storage *out,
                   fr_error *err)
{
    char host[FR_SERVER_ADDRESS_BYTES_MAX];
    int port;
    FR_TRY(fr_server_parse_address(text, host, sizeof host, &port, err));
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int e = getaddrinfo(host, NULL, &hints, &res);
    FR_CHECK(e == 0 && res, FR_EINVAL, err, "%s %s: cannot resolve '%s': %s", what, text,
             host, gai_strerror(e));
    memset(out, 0, sizeof *out);
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (out->ss_family == AF_INET) ((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
    else ((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
    return FR_OK;
}

/* ---- jobs ------------------------------------------------------------------------------ */

void srv_job_free(srv_job *j)
{
    if (!j) return;
    fr_rpc_free(j->request);
    fr_free(j->body);
    fr_buf_free(&j->out);
    assert(j->nheld == 0);
    fr_free(j->held);
    fr_free(j->wait_logs);
    fr_free(j->wait_offsets);
    if (j->part_sync) {
        pthread_mutex_destroy(&j->part_mu);
        pthread_cond_destroy(&j->part_cv);
    }
    fr_free(j);
}

void srv_complete(fr_server *s, srv_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&s->done_mu);
    if (s->done_tail) s->done_tail->next = j;
    else s->done_head = j;
    s->done_tail = j;
    pthread_mutex_unlock(&s->done_mu);
    uv_async_send(&s->wake);
}

static void job_task(void *arg)
{
    srv_job *j = arg;
    srv_job_run(j);
    srv_complete(j->srv, j);
}

static void part_notify(srv_job *j, bool failed)
{
    pthread_mutex_lock(&j->part_mu);
    j->part_done = true;
    j->part_failed = failed;
    pthread_cond_signal(&j->part_cv);
    pthread_mutex_unlock(&j->part_mu);
}

int srv_send_part(srv_job *j, fr_error *err)
{
    if (!j->part_sync) {
        pthread_mutex_init(&j->part_mu, NULL);
        pthread_cond_init(&j->part_cv, NULL);
        j->part_sync = true;
    }
    pthread_mutex_lock(&j->part_mu);
    j->part_done = false;
    j->part_failed = false;
    pthread_mutex_unlock(&j->part_mu);
    j->kind = SRV_JOB_PART;
    srv_complete(j->srv, j);
    pthread_mutex_lock(&j->part_mu);
    while (!j->part_done) pthread_cond_wait(&j->part_cv, &j->part_mu);
    bool failed = j->part_failed;
    pthread_mutex_unlock(&j->part_mu);
    j->kind = SRV_JOB_DONE;
    FR_CHECK(!failed, FR_ESTATE, err, "the connection closed while a response was streamed");
    return FR_OK;
}

/* ---- connections ----------------------------------------------------------------------- */

void srv_conn_set_principal(srv_conn *c, const char *principal)
{
    char *p = fr_strdup(principal);
    if (!p) return;
    fr_free(c->principal);
    c->principal = p;
    c->authenticated = true;
}

const char *srv_conn_peer(const srv_conn *c) { return c ? c->peer : "?"; }

static void conn_unref(srv_conn *c)
{
    assert(c->refs > 0);
    if (--c->refs > 0) return;
    fr_rpc_reader_free(c->reader);
    fr_free(c->principal);
    fr_free(c);
}

static void on_conn_closed(uv_handle_t *h)
{
    srv_conn *c = (srv_conn *)h;
    fr_server *s = c->srv;
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    atomic_fetch_sub(&s->metrics->connections_open, 1);
    FR_DEBUG("connection from %s closed", c->peer);
    conn_unref(c);
    check_stop(s);
}

static void unpark(fr_server *s, srv_job *j)
{
    if (j->park_prev) j->park_prev->park_next = j->park_next;
    else s->parked = j->park_next;
    if (j->park_next) j->park_next->park_prev = j->park_prev;
    j->park_prev = j->park_next = NULL;
    atomic_fetch_sub(&s->parked_count, 1);
    atomic_fetch_sub(&s->metrics->fetches_parked, 1);
}

static void conn_close(srv_conn *c)
{
    if (c->closing) return;
    c->closing = true;
    if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    fr_server *s = c->srv;
    /* Parked fetches of this connection answer no one: send them back to be released. */
    for (srv_job *j = s->parked, *next; j; j = next) {
        next = j->park_next;
        if (j->conn != c) continue;
        unpark(s, j);
        j->cancelled = true;
        j->final = true;
        resubmit(s, j);
    }
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* Closes a connection whose work is over: a connection error that has been written, or a
 * peer that closed its side and got every answer. */
static void conn_maybe_finish(srv_conn *c)
{
    if (c->closing) return;
    if (c->close_after_write && c->write_queued == 0) conn_close(c);
    else if (c->eof && c->inflight == 0 && c->write_queued == 0) conn_close(c);
}

static void on_written(uv_write_t *req, int status)
{
    srv_write *w = (srv_write *)req;
    srv_conn *c = w->conn;
    fr_server *s = c->srv;
    c->write_queued -= w->len;
    if (w->notify) part_notify(w->notify, status < 0);
    fr_free(w->data);
    fr_free(w);
    if (status < 0 && !c->closing) {
        FR_DEBUG("connection from %s: write failed: %s", c->peer, uv_strerror(status));
        conn_close(c);
    }
    conn_maybe_finish(c);
    if (!c->closing) conn_pump(c);
    check_stop(s);
}

/* Writes data (taken: fr_free'd after) to the connection. */
static void conn_write(srv_conn *c, uint8_t *data, size_t len, srv_job *notify)
{
    if (c->closing || len == 0) {
        fr_free(data);
        if (notify) part_notify(notify, c->closing);
        return;
    }
    srv_write *w = fr_malloc(sizeof *w);
    if (!w) {
        FR_ERROR("connection from %s: out of memory for a response of %zu bytes; closing",
                 c->peer, len);
        fr_free(data);
        if (notify) part_notify(notify, true);
        conn_close(c);
        return;
    }
    w->conn = c;
    w->data = data;
    w->len = len;
    w->notify = notify;
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    int e = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written);
    if (e < 0) {
        fr_free(data);
        fr_free(w);
        if (notify) part_notify(notify, true);
        conn_close(c);
        return;
    }
    c->write_queued += len;
    atomic_fetch_add(&c->srv->metrics->bytes_out, len);
}

static void conn_write_buf(srv_conn *c, fr_buf *b, srv_job *notify)
{
    size_t len = 0;
    uint8_t *data = fr_buf_steal(b, &len);
    conn_write(c, data, len, notify);
}

/* Answers request_id with an ERROR frame of code (NONE: from failure's status). */
static void conn_error(srv_conn *c, int32_t request_id, Firth__ErrorCode code,
                       const fr_error *failure)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error e2;
    if (fr_rpc_write_error(&b, request_id, code, failure, &e2) == FR_OK) conn_write_buf(c, &b, NULL);
    fr_buf_free(&b);
}

/* A frame that cannot be read: one ERROR frame with request id -1, a log line, and the
 * connection closes once it is written. */
static void conn_bad_frame(srv_conn *c, const fr_error *why)
{
    FR_WARN("connection from %s: bad frame: %s; closing the connection", c->peer, why->msg);
    atomic_fetch_add(&c->srv->metrics->bad_frames, 1);
    conn_error(c, FR_RPC_CONNECTION_REQUEST_ID, FIRTH__ERROR_CODE__NONE, why);
    c->close_after_write = true;
    if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    conn_maybe_finish(c);
}

static srv_job *job_new(srv_conn *c, const fr_rpc_frame *f)
{
    srv_job *j = fr_calloc(1, sizeof *j);
    if (!j) return NULL;
    j->srv = c->srv;
    j->conn = c;
    j->api = f->api_key;
    j->version = f->api_version;
    j->request_id = f->request_id;
    j->received_ns = fr_monotonic_ns();
    j->kind = SRV_JOB_DONE;
    fr_buf_init(&j->out);
    if (f->body_len > 0) {
        j->body = fr_malloc(f->body_len);
        if (!j->body) {
            fr_free(j);
            return NULL;
        }
        memcpy(j->body, f->body, f->body_len);
        j->body_len = f->body_len;
    }
    return j;
}

static int api_slot(int api)
{
    return api >= 0 && api < FR_RPC_API_COUNT ? api : FR_RPC_API_COUNT;
}

/* Answers a request on the loop thread: those that need no engine and no waiting
 * (api_versions, authenticate, unknown apis). */
static void run_inline(srv_conn *c, srv_job *j)
{
    srv_job_run(j);
    srv_metrics_request(c->srv->metrics, api_slot(j->api), j->failed,
                        fr_monotonic_ns() - j->received_ns);
    conn_write_buf(c, &j->out, NULL);
    srv_job_free(j);
}

static void dispatch(srv_conn *c, const fr_rpc_frame *f)
{
    fr_server *s = c->srv;
    fr_error err = {0};
    if (s->stopping) {
        fr_fail(&err, FR_ESTATE, "the server is shutting down; retry on a new connection");
        srv_metrics_request(s->metrics, api_slot(f->api_key), true, 0);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__SHUTTING_DOWN, &err);
        return;
    }
    bool known = fr_rpc_api_lookup(f->api_key) != NULL;
    if (s->opts.auth_required && !c->authenticated && known &&
        f->api_key != FR_RPC_API_VERSIONS && f->api_key != FR_RPC_AUTHENTICATE) {
        fr_fail(&err, FR_ESTATE, "%s: authenticate first (the server requires it)",
                fr_rpc_api_name(f->api_key));
        srv_metrics_request(s->metrics, api_slot(f->api_key), true, 0);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__NOT_AUTHENTICATED, &err);
        return;
    }
    srv_job *j = job_new(c, f);
    if (!j) {
        fr_fail(&err, FR_ENOMEM, "out of memory for a request of %zu bytes", f->body_len);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__NONE, &err);
        return;
    }
    if (!known || f->api_key == FR_RPC_API_VERSIONS || f->api_key == FR_RPC_AUTHENTICATE) {
        run_inline(c, j);
        return;
    }
    c->inflight++;
    c->refs++;
    s->jobs_live++;
    atomic_fetch_add(&s->metrics->requests_in_flight, 1);
    if (srv_pool_push(s->pool, job_task, j, &err) < 0) {
        /* No memory for a queue entry: the request is answered here, without running. */
        c->inflight--;
        c->refs--;
        s->jobs_live--;
        atomic_fetch_sub(&s->metrics->requests_in_flight, 1);
        srv_job_free(j);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__NONE, &err);
    }
}

/* Takes the frames that may be worked on now and starts or stops reading accordingly. */
static void conn_pump(srv_conn *c)
{
    fr_server *s = c->srv;
    int64_t inflight_max = s->opts.inflight_max;
    size_t write_max = (size_t)s->opts.write_buffer_bytes_max;
    while (!c->closing && !c->close_after_write &&
           (s->stopping || (c->inflight < inflight_max && c->write_queued <= write_max))) {
        fr_rpc_frame f;
        fr_error err = {0};
        int rc = fr_rpc_reader_next(c->reader, &f, &err);
        if (rc == 0) break;
        if (rc < 0) {
            conn_bad_frame(c, &err);
            return;
        }
        dispatch(c, &f);
    }
    if (c->closing) return;
    bool want = !s->stopping && !c->eof && !c->close_after_write &&
                c->inflight < inflight_max && c->write_queued <= write_max;
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    /* An idle connection keeps no read buffer (1,000 idle connections cost little). */
    if (fr_rpc_reader_buffered(c->reader) == 0) fr_rpc_reader_trim(c->reader);
    if (s->stopping && !c->eof) c->eof = true; /* nothing more will be read */
    conn_maybe_finish(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    srv_conn *c = (srv_conn *)h;
    uint8_t *p = NULL;
    size_t n = 0;
    if (fr_rpc_reader_space(c->reader, &p, &n, &c->frame_err) < 0) {
        c->frame_error = true;
        n = 0;
        p = NULL;
    }
    *buf = uv_buf_init((char *)p, (unsigned)(n > UINT32_MAX ? UINT32_MAX : n));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    srv_conn *c = (srv_conn *)stream;
    (void)buf;
    if (nread > 0) {
        fr_rpc_reader_commit(c->reader, (size_t)nread);
        atomic_fetch_add(&c->srv->metrics->bytes_in, (uint64_t)nread);
        conn_pump(c);
        return;
    }
    if (nread == 0) return;
    if (nread == UV_ENOBUFS) {
        if (c->frame_error) conn_bad_frame(c, &c->frame_err);
        else conn_pump(c);
        return;
    }
    if (nread != UV_EOF)
        FR_DEBUG("connection from %s: read failed: %s", c->peer, uv_strerror((int)nread));
    c->eof = true;
    if (c->reading) uv_read_stop(stream);
    c->reading = false;
    if (nread != UV_EOF) conn_close(c); /* a reset: nobody reads the answers */
    else conn_maybe_finish(c);
}

static srv_conn *conn_new(fr_server *s)
{
    srv_conn *c = fr_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->srv = s;
    c->refs = 1;
    fr_error err = {0};
    if (fr_rpc_reader_new(FR_RPC_REQUEST, s->opts.frame_bytes_max, &c->reader, &err) < 0) {
        fr_free(c);
        return NULL;
    }
    return c;
}

static void on_connection(uv_stream_t *server, int status)
{
    fr_server *s = server->data;
    if (status < 0) {
        FR_WARN("accepting a connection on %s failed: %s", s->address, uv_strerror(status));
        return;
    }
    srv_conn *c = conn_new(s);
    if (!c) {
        FR_ERROR("out of memory accepting a connection on %s", s->address);
        return;
    }
    uv_tcp_init(&s->loop, &c->tcp);
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    atomic_fetch_add(&s->metrics->connections_open, 1);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    struct sockaddr_storage peer;
    int plen = sizeof peer;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen) == 0)
        srv_format_sockaddr((struct sockaddr *)&peer, c->peer, sizeof c->peer);
    else snprintf(c->peer, sizeof c->peer, "unknown");
    uv_tcp_nodelay(&c->tcp, 1);
    if (s->stopping || s->nconns > s->opts.connections_max) {
        fr_error err = {0};
        if (s->stopping) {
            fr_fail(&err, FR_ESTATE, "the server is shutting down");
        } else {
            atomic_fetch_add(&s->metrics->connections_refused, 1);
            FR_WARN("refusing the connection from %s: %" PRId64 " connections are open "
                    "(server.connections.max)", c->peer, s->nconns - 1);
            fr_fail(&err, FR_ELIMIT, "the server holds %" PRId64 " connections, its limit "
                    "(server.connections.max); try again later", s->nconns - 1);
        }
        conn_error(c, FR_RPC_CONNECTION_REQUEST_ID, FIRTH__ERROR_CODE__NONE, &err);
        c->close_after_write = true;
        conn_maybe_finish(c);
        return;
    }
    atomic_fetch_add(&s->metrics->connections_accepted, 1);
    FR_DEBUG("connection from %s", c->peer);
    conn_pump(c);
}

/* ---- parked fetches -------------------------------------------------------------------- */

static void resubmit(fr_server *s, srv_job *j)
{
    s->jobs_live++;
    fr_error err = {0};
    if (srv_pool_push(s->pool, job_task, j, &err) < 0) {
        /* No memory for a queue entry: run it here rather than lose it. */
        job_task(j);
    }
}

/* Whether one of the buckets a parked fetch reads has records past its fetch offset. */
static bool park_ready(const srv_job *j)
{
    for (int i = 0; i < j->nwait; i++)
        if (fr_log_end_offset(j->wait_logs[i]) > j->wait_offsets[i]) return true;
    return false;
}

static void on_park_timer(uv_timer_t *t);

static void rearm_park_timer(fr_server *s)
{
    int64_t first = INT64_MAX;
    for (srv_job *j = s->parked; j; j = j->park_next)
        if (j->deadline_ns < first) first = j->deadline_ns;
    if (first == INT64_MAX) {
        uv_timer_stop(&s->park_timer);
        return;
    }
    int64_t wait_ns = first - fr_monotonic_ns();
    uint64_t ms = wait_ns <= 0 ? 0 : (uint64_t)((wait_ns + 999999) / 1000000);
    uv_timer_start(&s->park_timer, on_park_timer, ms, 0);
}

static void on_park_timer(uv_timer_t *t)
{
    fr_server *s = t->data;
    int64_t now = fr_monotonic_ns();
    for (srv_job *j = s->parked, *next; j; j = next) {
        next = j->park_next;
        if (j->deadline_ns > now) continue;
        unpark(s, j);
        j->final = true;
        resubmit(s, j);
    }
    rearm_park_timer(s);
}

static void park(fr_server *s, srv_job *j)
{
    if (s->stopping || j->conn->closing) {
        j->final = true;
        j->cancelled = j->conn->closing;
        resubmit(s, j);
        return;
    }
    j->park_prev = NULL;
    j->park_next = s->parked;
    if (s->parked) s->parked->park_prev = j;
    s->parked = j;
    /* Counted before the check below, so that an append after the check wakes the loop. */
    atomic_fetch_add(&s->parked_count, 1);
    atomic_fetch_add(&s->metrics->fetches_parked, 1);
    if (park_ready(j)) {
        unpark(s, j);
        resubmit(s, j);
        return;
    }
    rearm_park_timer(s);
}

/* After an append: every parked fetch whose buckets grew runs again. */
static void wake_parked(fr_server *s, bool all)
{
    bool changed = false;
    for (srv_job *j = s->parked, *next; j; j = next) {
        next = j->park_next;
        if (!all && !park_ready(j)) continue;
        unpark(s, j);
        if (all) j->final = true;
        resubmit(s, j);
        changed = true;
    }
    if (changed) rearm_park_timer(s);
}

static void on_append(void *ctx, fr_log *log, int64_t end_offset)
{
    (void)log;
    (void)end_offset;
    fr_server *s = ctx;
    if (atomic_load(&s->parked_count) == 0) return;
    atomic_store(&s->appended, true);
    uv_async_send(&s->wake);
}

/* ---- finished jobs --------------------------------------------------------------------- */

static void job_done(fr_server *s, srv_job *j)
{
    srv_conn *c = j->conn;
    switch (j->kind) {
    case SRV_JOB_PART:
        if (c->closing || j->cancelled) part_notify(j, true);
        else conn_write_buf(c, &j->out, j);
        return;
    case SRV_JOB_PARKED:
        s->jobs_live--;
        park(s, j);
        return;
    case SRV_JOB_DONE:
        break;
    }
    s->jobs_live--;
    c->inflight--;
    atomic_fetch_sub(&s->metrics->requests_in_flight, 1);
    if (!j->cancelled)
        srv_metrics_request(s->metrics, api_slot(j->api), j->failed,
                            fr_monotonic_ns() - j->received_ns);
    if (!c->closing && !j->cancelled) conn_write_buf(c, &j->out, NULL);
    srv_job_free(j);
    if (!c->closing) {
        conn_pump(c);
        conn_maybe_finish(c);
    }
    conn_unref(c);
}

static void begin_stop(fr_server *s);

static void on_wake(uv_async_t *a)
{
    fr_server *s = a->data;
    if (atomic_load(&s->stop_asked) && !s->stopping) begin_stop(s);
    for (;;) {
        pthread_mutex_lock(&s->done_mu);
        srv_job *list = s->done_head;
        s->done_head = s->done_tail = NULL;
        pthread_mutex_unlock(&s->done_mu);
        if (!list) break;
        while (list) {
            srv_job *j = list;
            list = j->next;
            job_done(s, j);
        }
    }
    if (atomic_exchange(&s->appended, false)) wake_parked(s, false);
    check_stop(s);
}

/* ---- shutdown -------------------------------------------------------------------------- */

static void close_all(fr_server *s)
{
    for (srv_conn *c = s->conns; c; c = c->next) conn_close(c);
}

static void on_stop_timeout(uv_timer_t *t)
{
    fr_server *s = t->data;
    if (s->torn_down) return;
    FR_WARN("shutdown: %" PRId64 " connections still busy after server.shutdown.timeout "
            "(%" PRId64 " ms); closing them", s->nconns, s->opts.shutdown_timeout_ms);
    close_all(s);
}

static void on_handle_closed(uv_handle_t *h) { (void)h; }

static void teardown(fr_server *s)
{
    s->torn_down = true;
    FR_INFO("shutdown: every request answered; stopping the workers and closing the engine");
    srv_pool_free(s->pool);
    s->pool = NULL;
    srv_http_stop(s);
    fr_engine_close(s->engine);
    s->engine = NULL;
    uv_timer_stop(&s->park_timer);
    uv_timer_stop(&s->stop_timer);
    uv_close((uv_handle_t *)&s->park_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->stop_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->wake, on_handle_closed);
}

static void check_stop(fr_server *s)
{
    if (!s->stopping || s->torn_down) return;
    if (s->jobs_live > 0 || s->parked) return;
    for (srv_conn *c = s->conns; c; c = c->next)
        if (!c->closing && (c->inflight > 0 || c->write_queued > 0)) return;
    close_all(s);
    if (s->nconns == 0) teardown(s);
}

static void on_listener_closed(uv_handle_t *h) { (void)h; }

static void begin_stop(fr_server *s)
{
    s->stopping = true;
    FR_INFO("shutting down: no new connections; finishing %" PRId64 " requests in flight",
            (int64_t)atomic_load(&s->metrics->requests_in_flight));
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    for (srv_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        conn_pump(c); /* frames read and not started get SHUTTING_DOWN; reading stops */
    }
    wake_parked(s, true);
    uv_timer_start(&s->stop_timer, on_stop_timeout, (uint64_t)s->opts.shutdown_timeout_ms, 0);
}

void fr_server_shutdown(fr_server *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->exit_mu);
    if (!s->exited) {
        atomic_store(&s->stop_asked, true);
        uv_async_send(&s->wake);
    }
    pthread_mutex_unlock(&s->exit_mu);
}

/* ---- start and stop -------------------------------------------------------------------- */

static void *loop_main(void *arg)
{
    fr_server *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
    pthread_mutex_lock(&s->exit_mu);
    s->exited = true;
    pthread_cond_broadcast(&s->exit_cv);
    pthread_mutex_unlock(&s->exit_mu);
    return NULL;
}

static int copy_options(fr_server_options *dst, const fr_server_options *src, fr_error *err)
{
    *dst = *src;
    dst->listen = dst->http_listen = dst->data_dir = dst->auth_users = NULL;
    const char *const from[] = {src->listen, src->http_listen, src->data_dir, src->auth_users};
    char **to[] = {&dst->listen, &dst->http_listen, &dst->data_dir, &dst->auth_users};
    for (int i = 0; i < 4; i++) {
        if (!from[i]) continue;
        *to[i] = fr_strdup(from[i]);
        if (!*to[i]) {
            fr_server_options_free(dst);
            return fr_fail(err, FR_ENOMEM, "out of memory");
        }
    }
    FR_CHECK(dst->listen && dst->data_dir, FR_EINVAL, err,
             "the server needs server.listen and data.dir");
    return FR_OK;
}

/* More connections than the default soft limit of 1024 descriptors need a higher one. */
static void raise_fd_limit(int64_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t need = (rlim_t)want + 256;
    if (rl.rlim_cur >= need) return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need)
        FR_WARN("the descriptor limit is %llu: fewer than server.connections.max (%" PRId64
                ") connections may be accepted (raise it with ulimit -n)",
                (unsigned long long)rl.rlim_cur, want);
}

static int listen_native(fr_server *s, fr_error *err)
{
    struct sockaddr_storage addr;
    FR_TRY(srv_resolve("server.listen", s->opts.listen, &addr, err));
    uv_tcp_init(&s->loop, &s->listener);
    s->listener.data = s;
    int e = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (e == 0) e = uv_listen((uv_stream_t *)&s->listener, 511, on_connection);
    FR_CHECK(e == 0, FR_EIO, err, "cannot listen on %s (server.listen): %s", s->opts.listen,
             uv_strerror(e));
    struct sockaddr_storage bound;
    int blen = sizeof bound;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
    srv_format_sockaddr((struct sockaddr *)&bound, s->address, sizeof s->address);
    return FR_OK;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void server_destroy(fr_server *s)
{
    if (s->pool) srv_pool_free(s->pool);
    srv_http_stop(s);
    if (s->engine) fr_engine_close(s->engine);
    uv_walk(&s->loop, close_walk, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&s->loop) != 0) FR_WARN("server: the event loop did not close cleanly");
    pthread_mutex_destroy(&s->done_mu);
    pthread_mutex_destroy(&s->exit_mu);
    pthread_cond_destroy(&s->exit_cv);
    fr_server_options_free(&s->opts);
    fr_free(s->metrics);
    fr_free(s);
}

int fr_server_start(const fr_server_options *o, fr_server **out, fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_rpc_check_frame_limit(o->frame_bytes_max, err));
    fr_server *s = fr_calloc(1, sizeof *s);
    FR_CHECK(s, FR_ENOMEM, err, "out of memory");
    s->metrics = fr_calloc(1, sizeof *s->metrics);
    if (!s->metrics || copy_options(&s->opts, o, err) < 0) {
        fr_free(s->metrics);
        fr_free(s);
        return err && err->code ? err->code : fr_fail(err, FR_ENOMEM, "out of memory");
    }
    srv_metrics_init(s->metrics);
    pthread_mutex_init(&s->done_mu, NULL);
    pthread_mutex_init(&s->exit_mu, NULL);
    pthread_cond_init(&s->exit_cv, NULL);
    atomic_init(&s->stop_asked, false);
    atomic_init(&s->appended, false);
    atomic_init(&s->parked_count, 0);
    s->watcher = (fr_log_watcher){on_append, s};
    fr_log_set_level(s->opts.log_level);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(s->opts.connections_max);
    int rc = FR_OK;
    int e = uv_loop_init(&s->loop);
    if (e != 0) {
        rc = fr_fail(err, FR_EIO, "cannot start the event loop: %s", uv_strerror(e));
        fr_server_options_free(&s->opts);
        fr_free(s->metrics);
        fr_free(s);
        return rc;
    }
    uv_async_init(&s->loop, &s->wake, on_wake);
    s->wake.data = s;
    uv_timer_init(&s->loop, &s->park_timer);
    s->park_timer.data = s;
    uv_timer_init(&s->loop, &s->stop_timer);
    s->stop_timer.data = s;

    fr_engine_options eo = s->opts.engine;
    eo.data_dir = s->opts.data_dir;
    FR_GOTO(fr_engine_open(&eo, &s->engine, err));
    FR_GOTO(srv_pool_new(s->opts.workers, &s->pool, err));
    FR_GOTO(listen_native(s, err));
    FR_GOTO(srv_http_start(s, err));
    e = pthread_create(&s->loop_thread, NULL, loop_main, s);
    if (e != 0) {
        rc = fr_fail_errno(err, e, "cannot start the event loop thread");
        goto fail;
    }
    s->loop_started = true;
    FR_INFO("listening on %s (native), %s (http); data dir %s", s->address,
            s->http_on ? s->http_address : "off", s->opts.data_dir);
    *out = s;
    return FR_OK;
fail:
    server_destroy(s);
    return rc;
}

const char *fr_server_address(const fr_server *s) { return s->address; }
const char *fr_server_http_address(const fr_server *s)
{
    return s->http_on ? s->http_address : NULL;
}
fr_engine *fr_server_engine(fr_server *s) { return s->engine; }

int fr_server_wait(fr_server *s, fr_error *err)
{
    if (!s->loop_started) return FR_OK;
    pthread_mutex_lock(&s->exit_mu);
    while (!s->exited) pthread_cond_wait(&s->exit_cv, &s->exit_mu);
    pthread_mutex_unlock(&s->exit_mu);
    pthread_join(s->loop_thread, NULL);
    s->loop_started = false;
    if (s->exit_rc < 0 && err) *err = s->exit_err;
    return s->exit_rc;
}

void fr_server_free(fr_server *s)
{
    if (!s) return;
    fr_server_shutdown(s);
    fr_server_wait(s, NULL);
    server_destroy(s);
}

/* ---- the command's life ------------------------------------------------------------------ */

static int write_ready_file(const fr_server *s, const char *path, fr_error *err)
{
    fr_buf b;
    fr_buf_init(&b);
    int rc = fr_buf_printf(&b, err, "{\"native\": \"%s\", \"http\": %s%s%s}\n", s->address,
                           s->http_on ? "\"" : "", s->http_on ? s->http_address : "null",
                           s->http_on ? "\"" : "");
    if (rc == FR_OK) rc = fr_write_file_atomic(path, b.data, b.len, err);
    fr_buf_free(&b);
    return rc;
}

int fr_server_run(const fr_server_options *o, const char *ready_file, fr_error *err)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    fr_server *s = NULL;
    FR_TRY(fr_server_start(o, &s, err));
    if (ready_file) {
        int rc = write_ready_file(s, ready_file, err);
        if (rc < 0) {
            fr_error_wrap(err, "--ready-file");
            fr_server_free(s);
            return rc;
        }
    }
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {}
    FR_INFO("received %s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    fr_server_shutdown(s);
    int rc = fr_server_wait(s, err);
    fr_server_free(s);
    if (rc == FR_OK) FR_INFO("stopped");
    return rc;
}
