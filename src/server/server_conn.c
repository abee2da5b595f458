/* server_conn.c — the connections of the native listener, on the loop thread: accepting
 * within server.connections.max, reading frames into the connection's frame reader,
 * starting requests (on the workers, or here for those that need no engine), writing
 * responses, refusing bad frames, and closing.
 *
 * Backpressure: a connection is read only while it has fewer than server.inflight.max
 * requests in flight and no more than server.connection.write.bytes.max bytes waiting to be
 * written; otherwise the loop stops reading it (uv_read_stop) and the peer's TCP window
 * fills. Whole frames already read but not yet started stay in the frame reader, which
 * never holds more than one frame's bytes. srv_conn_pump is where that is decided, after
 * every event that changes the counts.
 *
 * Invariants: a connection's memory lives until its handle is closed and no job refers to
 * it (refs); nothing here blocks or calls the engine. */
#include "server/server_int.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>

typedef struct srv_write {
    uv_write_t req;
    srv_conn *conn;
    uint8_t *data;      /* owned: a whole frame; or NULL and: */
    fr_rpc_gather *g;   /* owned: a frame in pieces, */
    fr_buf *kept;       /* owned: and the buffers its pieces point into */
    int nkept;
    size_t len;
    srv_job *notify;    /* a PART frame whose worker waits for this write */
} srv_write;

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

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

void srv_conn_unref(srv_conn *c)
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
    srv_conn_unref(c);
    srv_check_stop(s);
}

void srv_conn_close(srv_conn *c)
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
        srv_unpark(s, j);
        j->cancelled = true;
        j->final = true;
        srv_resubmit(s, j);
    }
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* Closes a connection whose work is over: a connection error that has been written, or a
 * peer that closed its side and got every answer. */
void srv_conn_maybe_finish(srv_conn *c)
{
    if (c->closing) return;
    if (c->close_after_write && c->write_queued == 0) srv_conn_close(c);
    else if (c->eof && c->inflight == 0 && c->write_queued == 0) srv_conn_close(c);
}

static void write_free(srv_write *w)
{
    fr_free(w->data);
    if (w->g) fr_rpc_gather_free(w->g);
    fr_free(w->g);
    srv_bufs_give(w->conn->srv, w->kept, w->nkept);
    fr_free(w);
}

static void on_written(uv_write_t *req, int status)
{
    srv_write *w = (srv_write *)req;
    srv_conn *c = w->conn;
    fr_server *s = c->srv;
    c->write_queued -= w->len;
    if (w->notify) srv_part_notify(w->notify, status < 0);
    write_free(w);
    if (status < 0 && !c->closing) {
        FR_DEBUG("connection from %s: write failed: %s", c->peer, uv_strerror(status));
        srv_conn_close(c);
    }
    srv_conn_maybe_finish(c);
    if (!c->closing) srv_conn_pump(c);
    srv_check_stop(s);
}

static void write_oom(srv_conn *c, size_t len, srv_job *notify)
{
    FR_ERROR("connection from %s: out of memory for a response of %zu bytes; closing", c->peer,
             len);
    if (notify) srv_part_notify(notify, true);
    srv_conn_close(c);
}

/* A write that fails: w goes, the notified worker hears of it, the connection closes. */
static void conn_write_failed(srv_conn *c, srv_write *w)
{
    srv_job *notify = w->notify;
    write_free(w);
    if (notify) srv_part_notify(notify, true);
    srv_conn_close(c);
}

/* Sends w's bytes (bufs) on the connection; w is freed once written, or here when it
 * cannot be. Most answers fit the socket's buffer and are written here and now: through
 * libuv's write queue, each write would also re-register the socket with epoll when the
 * queue drains (one more system call per answer). The rest is queued. */
static void conn_start_write(srv_conn *c, srv_write *w, const uv_buf_t *bufs, unsigned nbufs)
{
    size_t len = w->len;
    if (c->closing || len == 0) {
        srv_job *notify = w->notify;
        write_free(w);
        if (notify) srv_part_notify(notify, c->closing);
        return;
    }
    atomic_fetch_add(&c->srv->metrics->bytes_out, len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, bufs, nbufs);
    if (n < 0 && n != UV_EAGAIN) {
        FR_DEBUG("connection from %s: write failed: %s", c->peer, uv_strerror(n));
        conn_write_failed(c, w);
        return;
    }
    if (n == (int)len) {
        srv_job *notify = w->notify;
        write_free(w);
        if (notify) srv_part_notify(notify, false);
        srv_conn_maybe_finish(c);
        return;
    }
    /* Skip what went out: whole buffers, then part of one (a copy, as bufs is const). */
    size_t done = n > 0 ? (size_t)n : 0;
    unsigned first = 0;
    while (done >= bufs[first].len) done -= bufs[first++].len;
    uv_buf_t head = uv_buf_init(bufs[first].base + done, (unsigned)(bufs[first].len - done));
    int e = 0;
    if (done == 0) {
        e = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs + first, nbufs - first, on_written);
    } else {
        uv_buf_t *rest = fr_malloc(sizeof *rest * (nbufs - first));
        if (!rest) {
            write_oom(c, len, NULL);
            conn_write_failed(c, w);
            return;
        }
        rest[0] = head;
        for (unsigned i = first + 1; i < nbufs; i++) rest[i - first] = bufs[i];
        /* libuv keeps its own copy of the array. */
        e = uv_write(&w->req, (uv_stream_t *)&c->tcp, rest, nbufs - first, on_written);
        fr_free(rest);
    }
    if (e < 0) {
        conn_write_failed(c, w);
        return;
    }
    c->write_queued += len;
}

/* Writes data (taken: fr_free'd after) to the connection. */
static void conn_write(srv_conn *c, uint8_t *data, size_t len, srv_job *notify)
{
    srv_write *w = fr_calloc(1, sizeof *w);
    if (!w) {
        fr_free(data);
        write_oom(c, len, notify);
        return;
    }
    *w = (srv_write){.conn = c, .data = data, .len = len, .notify = notify};
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    conn_start_write(c, w, &b, 1);
}

void srv_conn_write_buf(srv_conn *c, fr_buf *b, srv_job *notify)
{
    size_t len = 0;
    uint8_t *data = fr_buf_steal(b, &len);
    conn_write(c, data, len, notify);
}

void srv_conn_write_gather(srv_conn *c, srv_job *j)
{
    srv_write *w = fr_calloc(1, sizeof *w);
    uv_buf_t *bufs = fr_malloc(sizeof *bufs * ((size_t)j->gout->niov + 1));
    if (!w || !bufs) {
        size_t len = j->gout->total;
        fr_free(w);
        fr_free(bufs);
        srv_job_drop_gather(j);
        write_oom(c, len, NULL);
        return;
    }
    *w = (srv_write){.conn = c, .g = j->gout, .kept = j->kept, .nkept = j->nkept,
                     .len = j->gout->total};
    j->gout = NULL;
    j->kept = NULL;
    j->nkept = 0;
    for (int i = 0; i < w->g->niov; i++)
        bufs[i] = uv_buf_init(w->g->iov[i].iov_base, (unsigned)w->g->iov[i].iov_len);
    /* libuv keeps its own copy of the array; the bytes stay with w. */
    conn_start_write(c, w, bufs, (unsigned)w->g->niov);
    fr_free(bufs);
}

/* Answers request_id with an ERROR frame of code (NONE: from failure's status). */
static void conn_error(srv_conn *c, int32_t request_id, Firth__ErrorCode code,
                       const fr_error *failure)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error e2;
    if (fr_rpc_write_error(&b, request_id, code, failure, &e2) == FR_OK) srv_conn_write_buf(c, &b, NULL);
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
    srv_conn_maybe_finish(c);
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
    if (f->body_len == 0) return j;
    /* A large frame alone in the reader's buffer takes the buffer (no copy). */
    j->body_block = fr_rpc_reader_keep(c->reader, f, &j->body);
    if (!j->body_block) {
        fr_free(j);
        return NULL;
    }
    j->body_len = f->body_len;
    return j;
}

int srv_api_slot(int api)
{
    return api >= 0 && api < FR_RPC_API_COUNT ? api : FR_RPC_API_COUNT;
}

/* Answers a request on the loop thread: those that need no engine and no waiting
 * (api_versions, authenticate, unknown apis). */
static void run_inline(srv_conn *c, srv_job *j)
{
    srv_job_run(j);
    srv_metrics_request(c->srv->metrics, srv_api_slot(j->api), j->failed,
                        fr_monotonic_ns() - j->received_ns);
    srv_conn_write_buf(c, &j->out, NULL);
    srv_job_free(j);
}

static void dispatch(srv_conn *c, const fr_rpc_frame *f)
{
    fr_server *s = c->srv;
    fr_error err = {0};
    if (s->stopping) {
        fr_fail(&err, FR_ESTATE, "the server is shutting down; retry on a new connection");
        srv_metrics_request(s->metrics, srv_api_slot(f->api_key), true, 0);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__SHUTTING_DOWN, &err);
        return;
    }
    bool known = fr_rpc_api_lookup(f->api_key) != NULL;
    if (s->opts.auth_required && !c->authenticated && known &&
        f->api_key != FR_RPC_API_VERSIONS && f->api_key != FR_RPC_AUTHENTICATE) {
        fr_fail(&err, FR_ESTATE, "%s: authenticate first (the server requires it)",
                fr_rpc_api_name(f->api_key));
        srv_metrics_request(s->metrics, srv_api_slot(f->api_key), true, 0);
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
    j->counted_bytes = f->body_len;
    s->inflight_bytes += (int64_t)j->counted_bytes;
    atomic_fetch_add(&s->metrics->requests_in_flight, 1);
    if (srv_pool_push(srv_pool_of(s, j), srv_job_task, j, &err) < 0) {
        /* No memory for a queue entry: the request is answered here, without running. */
        c->inflight--;
        c->refs--;
        s->jobs_live--;
        s->inflight_bytes -= (int64_t)j->counted_bytes;
        atomic_fetch_sub(&s->metrics->requests_in_flight, 1);
        srv_job_free(j);
        conn_error(c, f->request_id, FIRTH__ERROR_CODE__NONE, &err);
    }
}

/* Whether the connection may start another request now: its own limits, and the bytes of
 * every connection's requests in flight. A connection with nothing in flight always gets
 * one request through, whatever the others hold: otherwise a few requests that cannot
 * finish (a client that does not read a large streamed result) would stop every
 * connection, new ones included. The bytes past the limit are then at most one frame per
 * connection. */
static bool may_take(srv_conn *c)
{
    fr_server *s = c->srv;
    if (c->inflight >= s->opts.inflight_max ||
        c->write_queued > (size_t)s->opts.write_buffer_bytes_max)
        return false;
    if (c->inflight > 0 && s->inflight_bytes >= s->opts.inflight_bytes_max) {
        s->bytes_paused = true; /* srv_conn_pump_all when they fall */
        return false;
    }
    return true;
}

void srv_conn_pump_all(fr_server *s)
{
    for (srv_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (!c->closing) srv_conn_pump(c);
    }
}

/* Takes the frames that may be worked on now and starts or stops reading accordingly. */
void srv_conn_pump(srv_conn *c)
{
    fr_server *s = c->srv;
    while (!c->closing && !c->close_after_write && (s->stopping || may_take(c))) {
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
    bool want = !s->stopping && !c->eof && !c->close_after_write && may_take(c);
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    /* An idle connection keeps no read buffer (1,000 idle connections cost little). */
    if (fr_rpc_reader_buffered(c->reader) == 0) fr_rpc_reader_trim(c->reader);
    if (s->stopping && !c->eof) c->eof = true; /* nothing more will be read */
    srv_conn_maybe_finish(c);
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
        srv_conn_pump(c);
        return;
    }
    if (nread == 0) return;
    if (nread == UV_ENOBUFS) {
        if (c->frame_error) conn_bad_frame(c, &c->frame_err);
        else srv_conn_pump(c);
        return;
    }
    if (nread != UV_EOF)
        FR_DEBUG("connection from %s: read failed: %s", c->peer, uv_strerror((int)nread));
    c->eof = true;
    if (c->reading) uv_read_stop(stream);
    c->reading = false;
    if (nread != UV_EOF) srv_conn_close(c); /* a reset: nobody reads the answers */
    else srv_conn_maybe_finish(c);
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

void srv_on_connection(uv_stream_t *server, int status)
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
        srv_conn_close(c);
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
        srv_conn_maybe_finish(c);
        return;
    }
    atomic_fetch_add(&s->metrics->connections_accepted, 1);
    FR_DEBUG("connection from %s", c->peer);
    srv_conn_pump(c);
}
