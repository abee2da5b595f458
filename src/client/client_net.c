/* client_net.c — the remote client's connection to a firth server: one TCP socket shared by
 * every thread of a client, requests pipelined with request ids, a reader thread that cuts
 * the byte stream into frames and hands each to the call waiting for it, and reconnection
 * with a doubling pause when the connection is lost.
 *
 * Invariants: a call is in the pending list from before its request is written until its
 * final frame is taken or it gives up; only the reader adds frames to a call, only the
 * call's own thread takes them; a call lives on its caller's stack, so the reader touches a
 * call only under mu and finds it again by id after any wait. The frames of one streamed
 * response held unread are bounded (stream_buffer_bytes): past it the reader waits, which
 * stops reading the socket and lets TCP slow the server down. Each connection has a
 * generation; a call fails when the generation it was sent on is lost. */
#include "client/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CNET_HELLO_ID 0

typedef struct cnet_frame {
    struct cnet_frame *next;
    fr_rpc_result result;
    int32_t request_id;
    size_t len;
    uint8_t *body;  /* into block */
    uint8_t *block; /* owned: the reader's buffer, taken whole, or a copy of the body */
    size_t cap;     /* block's capacity */
} cnet_frame;

typedef struct cnet_call {
    struct cnet_call *next;
    int32_t id;
    uint64_t gen;
    cnet_frame *head, *tail;
    size_t queued;
    bool done;      /* the final frame is queued */
    int lost;       /* the connection was lost before the final frame: FR_EIO */
    fr_error lost_err;
    pthread_cond_t cv;
    void (*notify)(void *ctx); /* told of done or lost, under mu (fr_cnet_start) */
    void *notify_ctx;
} cnet_call;

/* The most capacity of received frames' buffers a connection keeps for the next frames: a
 * response being read while two before it are decoded (a scanner's answer and the one it
 * fetched ahead), each a little over the size the reader offers. */
#define CNET_FRAMES_KEEP_BYTES (4u * FR_RPC_READ_LEARN_BYTES)

struct fr_cnet {
    fr_cnet_options o;
    char *host;
    fr_bufpool *frames; /* buffers of received frames, back from the calls that took them */
    pthread_mutex_t mu;
    pthread_cond_t state_cv;  /* connection state, in-flight slots */
    pthread_cond_t drain_cv;  /* a stream's frames were taken */
    pthread_mutex_t send_mu;  /* whole frames go out one at a time */
    int fd;
    uint64_t gen;
    bool connected, connecting, closing;
    pthread_t reader;
    bool reader_started;
    cnet_call *pending;
    int npending;
    int32_t next_id;
    int64_t server_frame_max;
    int in_flight_max;
    int64_t connects;
    int64_t backoff_ms;
    int64_t next_try_ns;
    fr_error last_err;        /* why the last connection attempt or connection failed */
};

void fr_cnet_options_default(fr_cnet_options *o)
{
    *o = (fr_cnet_options){
        .port = 9123,
        .connect_timeout_ms = 10000,
        .request_timeout_ms = 60000,
        .frame_bytes_max = FR_RPC_FRAME_BYTES_MAX_DEFAULT,
        .backoff_ms = 50,
        .backoff_max_ms = 2000,
        .retries = 8,
        .stream_buffer_bytes = 64 << 20,
    };
}

static void deadline_ts(int64_t at_ns, struct timespec *ts)
{
    /* pthread_cond_timedwait measures CLOCK_REALTIME unless told otherwise; the conditions
     * here are made with CLOCK_MONOTONIC. */
    ts->tv_sec = (time_t)(at_ns / 1000000000);
    ts->tv_nsec = (long)(at_ns % 1000000000);
}

static int cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

/* Waits on cv until at_ns (monotonic); returns false on timeout. */
static bool wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t at_ns)
{
    struct timespec ts;
    deadline_ts(at_ns, &ts);
    return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT;
}

/* ---- sockets ----------------------------------------------------------------------------- */

static int send_all(int fd, const uint8_t *p, size_t n, fr_error *err)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "send to the server");
        }
        p += w;
        n -= (size_t)w;
    }
    return FR_OK;
}

/* Sends iov[0..n) whole (the array is consumed: entries are advanced past what was sent). */
static int send_iov(int fd, struct iovec *iov, int n, fr_error *err)
{
    while (n > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)(n < IOV_MAX ? n : IOV_MAX)};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "send to the server");
        }
        fr_iov_advance(&iov, &n, (size_t)w);
    }
    return FR_OK;
}

/* Connects to host:port within timeout_ms; *fd is a blocking socket with TCP_NODELAY. */
static int tcp_connect(const char *host, int port, int64_t timeout_ms, int *fd, fr_error *err)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g != 0)
        return fr_fail(err, FR_EIO, "cannot resolve %s: %s", host, gai_strerror(g));
    int rc = FR_EIO, s = -1, last = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (s < 0) {
            last = errno;
            continue;
        }
        int c = connect(s, a->ai_addr, a->ai_addrlen);
        if (c < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = s, .events = POLLOUT};
            int pr = poll(&pfd, 1, (int)timeout_ms);
            int soerr = 0;
            socklen_t len = sizeof soerr;
            if (pr == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
                c = 0;
            else
                errno = pr == 0 ? ETIMEDOUT : (soerr ? soerr : errno);
        }
        if (c == 0) {
            int one = 1;
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            /* Back to blocking: the reader thread blocks in recv, senders in send. */
            int fl = fcntl(s, F_GETFL);
            if (fl >= 0 && fcntl(s, F_SETFL, fl & ~O_NONBLOCK) == 0) {
                rc = FR_OK;
                break;
            }
        }
        last = errno;
        close(s);
        s = -1;
    }
    freeaddrinfo(res);
    if (rc < 0)
        return fr_fail(err, FR_EIO, "cannot connect to %s:%d: %s (is `firth server` running "
                       "there?)", host, port, strerror(last ? last : ECONNREFUSED));
    *fd = s;
    return FR_OK;
}

/* Says hello on a new socket before the reader starts: API_VERSIONS, answered in order. */
static int hello(fr_cnet *n, int fd, int64_t *frame_max, int *in_flight, fr_error *err)
{
    Firth__ApiVersionsRequest req = FIRTH__API_VERSIONS_REQUEST__INIT;
    req.client_software = "libfirth " FIRTH_VERSION;
    fr_buf out;
    fr_buf_init(&out);
    fr_rpc_reader *r = NULL;
    ProtobufCMessage *m = NULL;
    int rc = FR_OK;
    FR_GOTO(fr_rpc_write_request(&out, FR_RPC_API_VERSIONS, 0, CNET_HELLO_ID, &req.base,
                                 FR_RPC_FRAME_BYTES_MIN, err));
    FR_GOTO(send_all(fd, out.data, out.len, err));
    FR_GOTO(fr_rpc_reader_new(FR_RPC_RESPONSE, n->o.frame_bytes_max, &r, err));
    int64_t deadline = fr_monotonic_ns() + n->o.connect_timeout_ms * 1000000;
    fr_rpc_frame f;
    for (;;) {
        int k = 0;
        FR_GOTO(k = fr_rpc_reader_next(r, &f, err));
        if (k == 1) break;
        int64_t left_ms = (deadline - fr_monotonic_ns()) / 1000000;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left_ms <= 0 || poll(&pfd, 1, (int)left_ms) == 0) {
            rc = fr_fail(err, FR_EIO, "%s:%d: no answer to api_versions in %lld ms (is it a "
                         "firth server?)", n->host, n->o.port,
                         (long long)n->o.connect_timeout_ms);
            goto fail;
        }
        uint8_t *p;
        size_t cap;
        FR_GOTO(fr_rpc_reader_space(r, &p, &cap, err));
        ssize_t got = recv(fd, p, cap, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            rc = got == 0 ? fr_fail(err, FR_EIO, "%s:%d closed the connection at hello",
                                    n->host, n->o.port)
                          : fr_fail_errno(err, errno, "%s:%d: recv", n->host, n->o.port);
            goto fail;
        }
        fr_rpc_reader_commit(r, (size_t)got);
    }
    if (f.request_id != CNET_HELLO_ID && f.request_id != FR_RPC_CONNECTION_REQUEST_ID) {
        rc = fr_fail(err, FR_ECORRUPT, "%s:%d answered hello with request id %d", n->host,
                     n->o.port, (int)f.request_id);
        goto fail;
    }
    FR_GOTO(fr_rpc_response_unpack(FR_RPC_API_VERSIONS, &f, &m, err));
    if (f.result == FR_RPC_ERROR) {
        rc = fr_rpc_error_get((const Firth__Error *)m, "api_versions", err);
        goto fail;
    }
    const Firth__ApiVersionsResponse *v = (const Firth__ApiVersionsResponse *)m;
    *frame_max = v->frame_bytes_max >= FR_RPC_FRAME_BYTES_MIN ? v->frame_bytes_max
                                                              : FR_RPC_FRAME_BYTES_MAX_DEFAULT;
    if (*frame_max > INT32_MAX) *frame_max = INT32_MAX;
    *in_flight = v->in_flight_max > 0 ? (v->in_flight_max < 4096 ? v->in_flight_max : 4096)
                                      : 64;
fail:
    fr_rpc_free(m);
    fr_rpc_reader_free(r);
    fr_buf_free(&out);
    return rc;
}

/* ---- the reader thread --------------------------------------------------------------------- */

static cnet_call *find_call(fr_cnet *n, int32_t id, uint64_t gen)
{
    for (cnet_call *c = n->pending; c; c = c->next)
        if (c->id == id && c->gen == gen) return c;
    return NULL;
}

/* The connection of generation gen is gone: the calls sent on it fail. */
static void lost(fr_cnet *n, uint64_t gen, const fr_error *why)
{
    pthread_mutex_lock(&n->mu);
    if (n->gen == gen && n->connected) {
        n->connected = false;
        n->last_err = *why;
    }
    for (cnet_call *c = n->pending; c; c = c->next) {
        if (c->gen != gen || c->done || c->lost) continue;
        c->lost = FR_EIO;
        c->lost_err = *why;
        pthread_cond_signal(&c->cv);
        if (c->notify) c->notify(c->notify_ctx);
    }
    pthread_cond_broadcast(&n->state_cv);
    pthread_cond_broadcast(&n->drain_cv);
    pthread_mutex_unlock(&n->mu);
}

/* Frees f; its block goes back to the pool, for the reader to receive into again. */
static void frame_free(fr_cnet *n, cnet_frame *f)
{
    if (!f) return;
    fr_buf b = {.data = f->block, .len = 0, .cap = f->block ? f->cap : 0};
    fr_bufpool_give(n->frames, &b);
    fr_free(f);
}

/* Keeps frame f, just taken from r: a large frame alone in the buffer takes the buffer (a
 * long poll's megabytes are not copied again), others are copied. NULL: out of memory. */
static cnet_frame *frame_new(fr_rpc_reader *r, const fr_rpc_frame *f)
{
    cnet_frame *cf = fr_calloc(1, sizeof *cf);
    if (!cf) return NULL;
    cf->result = f->result;
    cf->request_id = f->request_id;
    cf->len = f->body_len;
    if (f->body_len == 0) return cf;
    cf->block = fr_rpc_reader_keep(r, f, &cf->body);
    if (!cf->block) {
        fr_free(cf);
        return NULL;
    }
    cf->cap = fr_rpc_reader_kept_cap(r);
    return cf;
}

/* Hands one frame to its call (a frame for no call, e.g. of a call that gave up, is
 * dropped). Returns < 0 when the connection must end. */
static int dispatch(fr_cnet *n, uint64_t gen, fr_rpc_reader *r, const fr_rpc_frame *f,
                    fr_error *err)
{
    if (f->request_id == FR_RPC_CONNECTION_REQUEST_ID) {
        ProtobufCMessage *m = NULL;
        if (fr_rpc_response_unpack(FR_RPC_API_VERSIONS, f, &m, err) < 0) return FR_ECORRUPT;
        int rc = fr_rpc_error_get((const Firth__Error *)m, "the server closed the connection",
                                  err);
        fr_rpc_free(m);
        return rc;
    }
    cnet_frame *cf = frame_new(r, f);
    FR_CHECK(cf, FR_ENOMEM, err, "out of memory for a response of %zu bytes", f->body_len);
    pthread_mutex_lock(&n->mu);
    for (;;) {
        cnet_call *c = find_call(n, f->request_id, gen);
        if (!c || n->closing) {
            frame_free(n, cf);
            break;
        }
        if (f->result == FR_RPC_PART && c->queued >= (size_t)n->o.stream_buffer_bytes) {
            pthread_cond_wait(&n->drain_cv, &n->mu); /* c may be gone after: look again */
            continue;
        }
        if (c->tail) c->tail->next = cf;
        else c->head = cf;
        c->tail = cf;
        c->queued += cf->len;
        if (f->result != FR_RPC_PART) c->done = true;
        pthread_cond_signal(&c->cv);
        if (c->done && c->notify) c->notify(c->notify_ctx);
        break;
    }
    pthread_mutex_unlock(&n->mu);
    return FR_OK;
}

static void *reader_main(void *arg)
{
    fr_cnet *n = arg;
    pthread_setname_np(pthread_self(), "firth-recv");
    pthread_mutex_lock(&n->mu);
    int fd = n->fd;
    uint64_t gen = n->gen;
    pthread_mutex_unlock(&n->mu);
    fr_error err = {0};
    fr_rpc_reader *r = NULL;
    if (fr_rpc_reader_new(FR_RPC_RESPONSE, n->o.frame_bytes_max, &r, &err) == 0) {
        fr_rpc_reader_set_pool(r, n->frames);
        for (;;) {
            uint8_t *p;
            size_t cap;
            if (fr_rpc_reader_space(r, &p, &cap, &err) < 0) break;
            ssize_t got = recv(fd, p, cap, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                if (got == 0) fr_fail(&err, FR_EIO, "the server closed the connection");
                else fr_fail_errno(&err, errno, "recv from the server");
                break;
            }
            fr_rpc_reader_commit(r, (size_t)got);
            fr_rpc_frame f;
            int k;
            while ((k = fr_rpc_reader_next(r, &f, &err)) == 1)
                if (dispatch(n, gen, r, &f, &err) < 0) break;
            if (k != 0) break;
        }
    }
    fr_rpc_reader_free(r);
    shutdown(fd, SHUT_RDWR);
    lost(n, gen, &err);
    return NULL;
}

/* ---- connecting ------------------------------------------------------------------------------ */

/* With mu held: returns once connected (mu held again), or fails: after a failed attempt,
 * or when the next attempt may not start before deadline_ns. */
static int ensure_connected(fr_cnet *n, int64_t deadline_ns, fr_error *err)
{
    for (;;) {
        if (n->closing) return fr_fail(err, FR_ESTATE, "the client is being closed");
        if (n->connected) return FR_OK;
        int64_t now = fr_monotonic_ns();
        if (n->connecting || now < n->next_try_ns) {
            int64_t until = n->connecting ? deadline_ns : n->next_try_ns;
            if (!n->connecting && n->next_try_ns > deadline_ns)
                return fr_fail(err, FR_EIO, "%s:%d is unreachable: %s", n->host, n->o.port,
                               n->last_err.msg);
            if (!wait_until(&n->state_cv, &n->mu, until) && fr_monotonic_ns() >= deadline_ns)
                return fr_fail(err, FR_EIO, "%s:%d: no connection in time: %s", n->host,
                               n->o.port, n->last_err.msg);
            continue;
        }
        n->connecting = true;
        bool had_reader = n->reader_started;
        pthread_t old = n->reader;
        int oldfd = n->fd;
        n->reader_started = false;
        n->fd = -1;
        pthread_mutex_unlock(&n->mu);
        if (had_reader) pthread_join(old, NULL);
        if (oldfd >= 0) {
            pthread_mutex_lock(&n->send_mu);
            close(oldfd);
            pthread_mutex_unlock(&n->send_mu);
        }
        int fd = -1, in_flight = 64;
        int64_t frame_max = FR_RPC_FRAME_BYTES_MAX_DEFAULT;
        fr_error e = {0};
        int rc = tcp_connect(n->host, n->o.port, n->o.connect_timeout_ms, &fd, &e);
        if (rc == 0) rc = hello(n, fd, &frame_max, &in_flight, &e);
        if (rc < 0 && fd >= 0) close(fd);
        pthread_mutex_lock(&n->mu);
        n->connecting = false;
        if (rc == 0) {
            n->fd = fd;
            n->gen++;
            n->connected = true;
            n->connects++;
            n->server_frame_max = frame_max;
            n->in_flight_max = in_flight;
            n->backoff_ms = n->o.backoff_ms;
            if (pthread_create(&n->reader, NULL, reader_main, n) != 0) {
                n->connected = false;
                rc = fr_fail(&e, FR_ENOMEM, "cannot start the connection's reader thread");
                shutdown(fd, SHUT_RDWR);
            } else {
                n->reader_started = true;
            }
        }
        if (rc < 0) {
            n->last_err = e;
            n->next_try_ns = fr_monotonic_ns() + n->backoff_ms * 1000000;
            n->backoff_ms = n->backoff_ms * 2 < n->o.backoff_max_ms ? n->backoff_ms * 2
                                                                   : n->o.backoff_max_ms;
        }
        pthread_cond_broadcast(&n->state_cv);
        if (rc < 0) {
            if (err) *err = e;
            return rc;
        }
    }
}

int fr_cnet_open(const fr_cnet_options *o, fr_cnet **out, fr_error *err)
{
    fr_cnet *n = fr_calloc(1, sizeof *n);
    FR_CHECK(n, FR_ENOMEM, err, "out of memory opening a connection");
    n->o = *o;
    n->host = fr_strdup(o->host ? o->host : "127.0.0.1");
    n->frames = fr_bufpool_new(CNET_FRAMES_KEEP_BYTES);
    n->fd = -1;
    n->next_id = 1;
    n->backoff_ms = o->backoff_ms;
    n->in_flight_max = 64;
    n->server_frame_max = FR_RPC_FRAME_BYTES_MAX_DEFAULT;
    pthread_mutex_init(&n->mu, NULL);
    pthread_mutex_init(&n->send_mu, NULL);
    cond_init_mono(&n->state_cv);
    cond_init_mono(&n->drain_cv);
    if (!n->host || !n->frames) {
        fr_cnet_close(n);
        return fr_fail(err, FR_ENOMEM, "out of memory opening a connection");
    }
    pthread_mutex_lock(&n->mu);
    int rc = ensure_connected(n, fr_monotonic_ns() + o->connect_timeout_ms * 1000000, err);
    pthread_mutex_unlock(&n->mu);
    if (rc < 0) {
        fr_cnet_close(n);
        return rc;
    }
    *out = n;
    return FR_OK;
}

void fr_cnet_close(fr_cnet *n)
{
    if (!n) return;
    pthread_mutex_lock(&n->mu);
    n->closing = true;
    while (n->connecting) pthread_cond_wait(&n->state_cv, &n->mu);
    int fd = n->fd;
    bool had_reader = n->reader_started;
    n->reader_started = false;
    pthread_cond_broadcast(&n->state_cv);
    pthread_cond_broadcast(&n->drain_cv);
    pthread_mutex_unlock(&n->mu);
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
    if (had_reader) pthread_join(n->reader, NULL);
    if (fd >= 0) close(fd);
    pthread_cond_destroy(&n->state_cv);
    pthread_cond_destroy(&n->drain_cv);
    pthread_mutex_destroy(&n->send_mu);
    pthread_mutex_destroy(&n->mu);
    fr_free(n->host);
    fr_bufpool_free(n->frames);
    fr_free(n);
}

int64_t fr_cnet_server_frame_max(fr_cnet *n)
{
    pthread_mutex_lock(&n->mu);
    int64_t v = n->server_frame_max;
    pthread_mutex_unlock(&n->mu);
    return v;
}

int64_t fr_cnet_connects(fr_cnet *n)
{
    pthread_mutex_lock(&n->mu);
    int64_t v = n->connects;
    pthread_mutex_unlock(&n->mu);
    return v;
}

void fr_cnet_break(fr_cnet *n)
{
    pthread_mutex_lock(&n->mu);
    if (n->connected && n->fd >= 0) shutdown(n->fd, SHUT_RDWR);
    pthread_mutex_unlock(&n->mu);
}

/* ---- calls ----------------------------------------------------------------------------------- */

typedef struct call_state {
    bool parts_seen;
    bool retriable;
} call_state;

/* Takes the call's frames until the final one. */
static int receive(fr_cnet *n, fr_rpc_api api, cnet_call *call, int64_t deadline_ns,
                   fr_cnet_part_fn on_part, void *ctx, ProtobufCMessage **resp,
                   bool *stopped, call_state *st, fr_error *err)
{
    for (;;) {
        pthread_mutex_lock(&n->mu);
        while (!call->head && !call->lost) {
            if (!wait_until(&call->cv, &n->mu, deadline_ns) && !call->head && !call->lost &&
                fr_monotonic_ns() >= deadline_ns) {
                pthread_mutex_unlock(&n->mu);
                return fr_fail(err, FR_EIO, "%s:%d: no answer to %s in time", n->host,
                               n->o.port, fr_rpc_api_name(api));
            }
        }
        if (!call->head) {
            fr_error why = call->lost_err;
            pthread_mutex_unlock(&n->mu);
            st->retriable = true;
            return fr_fail(err, FR_EIO, "connection to %s:%d lost: %s", n->host, n->o.port,
                           why.msg);
        }
        cnet_frame *fr = call->head;
        call->head = fr->next;
        if (!call->head) call->tail = NULL;
        call->queued -= fr->len;
        pthread_cond_broadcast(&n->drain_cv);
        pthread_mutex_unlock(&n->mu);

        fr_rpc_frame f = {.direction = FR_RPC_RESPONSE, .result = fr->result,
                          .request_id = fr->request_id, .body = fr->body,
                          .body_len = fr->len};
        ProtobufCMessage *m = NULL;
        int rc;
        if (api == FR_RPC_FETCH_LOG && fr->result == FR_RPC_SUCCESS) {
            /* The records stay in the frame, which the message takes over. */
            rc = fr_rpc_fetch_unpack(&f, fr->block, fr->cap, (Firth__FetchLogResponse **)&m,
                                     err);
            fr->block = NULL;
        } else if (api == FR_RPC_LOOKUP && fr->result == FR_RPC_SUCCESS) {
            rc = fr_rpc_lookup_unpack(&f, fr->block, fr->cap, (Firth__LookupResponse **)&m,
                                      err);
            fr->block = NULL;
        } else {
            rc = fr_rpc_response_unpack(api, &f, &m, err);
        }
        fr_rpc_result result = fr->result;
        frame_free(n, fr);
        if (rc < 0) return rc;
        if (result == FR_RPC_ERROR) {
            const Firth__Error *e = (const Firth__Error *)m;
            st->retriable = e->code == FIRTH__ERROR_CODE__SHUTTING_DOWN;
            rc = fr_rpc_error_get(e, fr_rpc_api_name(api), err);
            fr_rpc_free(m);
            return rc;
        }
        if (result == FR_RPC_PART) {
            /* Parts handed to the caller make a retry unsafe (it would see them twice);
             * parts dropped for want of a callback do not. */
            if (on_part) st->parts_seen = true;
            rc = on_part ? on_part(ctx, m, err) : 0;
            fr_rpc_free(m);
            if (rc < 0) return rc;
            if (rc > 0) {
                if (stopped) *stopped = true;
                return FR_OK;
            }
            continue;
        }
        if (resp) *resp = m;
        else fr_rpc_free(m);
        return FR_OK;
    }
}

static void unlink_call(fr_cnet *n, cnet_call *call)
{
    for (cnet_call **p = &n->pending; *p; p = &(*p)->next) {
        if (*p == call) {
            *p = call->next;
            n->npending--;
            break;
        }
    }
    for (cnet_frame *f = call->head, *next; f; f = next) {
        next = f->next;
        frame_free(n, f);
    }
    call->head = call->tail = NULL;
    pthread_cond_broadcast(&n->state_cv);
    pthread_cond_broadcast(&n->drain_cv);
}

/* Registers call (its cv initialized) and sends req: FR_OK once sent, else the failure. The
 * call is unlinked by call_end whatever happened here. */
static int call_send(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, cnet_call *call,
                     call_state *st, fr_error *err)
{
    int64_t start = fr_monotonic_ns();
    pthread_mutex_lock(&n->mu);
    int rc = ensure_connected(n, start + n->o.connect_timeout_ms * 1000000, err);
    while (rc == 0 && n->npending >= n->in_flight_max) {
        if (!wait_until(&n->state_cv, &n->mu, start + n->o.request_timeout_ms * 1000000))
            rc = fr_fail(err, FR_EIO, "%s:%d: %d requests in flight for too long", n->host,
                         n->o.port, n->npending);
        else
            rc = ensure_connected(n, start + n->o.connect_timeout_ms * 1000000, err);
    }
    if (rc < 0) {
        st->retriable = rc == FR_EIO;
        pthread_mutex_unlock(&n->mu);
        return rc;
    }
    call->id = n->next_id;
    n->next_id = n->next_id == INT32_MAX ? 1 : n->next_id + 1;
    call->gen = n->gen;
    int fd = n->fd;
    int64_t frame_max = n->server_frame_max;
    call->next = n->pending;
    n->pending = call;
    n->npending++;
    pthread_mutex_unlock(&n->mu);

    /* The request's record batches are sent from where they are, not copied into it. */
    fr_rpc_gather out;
    fr_rpc_gather_init(&out);
    rc = fr_rpc_write_request_gather(&out, api, 0, call->id, req, frame_max, err);
    if (rc == 0) {
        /* Only on the connection the call was registered with: a newer one may have taken
         * the old descriptor's number. */
        pthread_mutex_lock(&n->send_mu);
        pthread_mutex_lock(&n->mu);
        bool same = n->connected && n->gen == call->gen;
        pthread_mutex_unlock(&n->mu);
        rc = same ? send_iov(fd, out.iov, out.niov, err)
                  : fr_fail(err, FR_EIO, "connection to %s:%d lost before sending", n->host,
                            n->o.port);
        if (rc < 0 && same) shutdown(fd, SHUT_RDWR);
        pthread_mutex_unlock(&n->send_mu);
        if (rc < 0) {
            /* Say so at once: a retry must not find the connection still marked up before
             * the reader thread has seen it end. */
            fr_error why = {0};
            if (err) why = *err;
            if (same) lost(n, call->gen, &why);
            st->retriable = true;
        }
    }
    fr_rpc_gather_free(&out);
    return rc;
}

/* Forgets call (sent or not): its frames are dropped, later ones are too. */
static void call_end(fr_cnet *n, cnet_call *call)
{
    pthread_mutex_lock(&n->mu);
    unlink_call(n, call);
    pthread_mutex_unlock(&n->mu);
    pthread_cond_destroy(&call->cv);
}

static int call_once(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, int64_t wait_ms,
                     fr_cnet_part_fn on_part, void *ctx, ProtobufCMessage **resp,
                     bool *stopped, call_state *st, fr_error *err)
{
    cnet_call call = {0};
    cond_init_mono(&call.cv);
    int rc = call_send(n, api, req, &call, st, err);
    if (rc == 0) {
        int64_t deadline = fr_monotonic_ns() + (n->o.request_timeout_ms + wait_ms) * 1000000;
        rc = receive(n, api, &call, deadline, on_part, ctx, resp, stopped, st, err);
    }
    call_end(n, &call);
    return rc;
}

struct fr_cnet_pending {
    fr_cnet *n;
    fr_rpc_api api;
    int64_t deadline_ns; /* no answer by then: the connection is taken as stuck */
    bool ended;          /* answered, or failed: nothing more to wait for */
    cnet_call call;
};

int fr_cnet_start(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, int64_t wait_ms,
                  void (*notify)(void *ctx), void *ctx, fr_cnet_pending **out, fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_rpc_request_check(api, req, err));
    fr_cnet_pending *p = fr_calloc(1, sizeof *p);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory sending %s", fr_rpc_api_name(api));
    p->n = n;
    p->api = api;
    cond_init_mono(&p->call.cv);
    call_state st = {0};
    int rc = call_send(n, api, req, &p->call, &st, err);
    if (rc < 0) {
        call_end(n, &p->call);
        fr_free(p);
        return rc;
    }
    /* Told only once sent (a failed start is the caller's to count), of an answer that
     * may already be there. */
    pthread_mutex_lock(&n->mu);
    p->call.notify = notify;
    p->call.notify_ctx = ctx;
    if (notify && (p->call.done || p->call.lost)) notify(ctx);
    pthread_mutex_unlock(&n->mu);
    p->deadline_ns = fr_monotonic_ns() + (n->o.request_timeout_ms + wait_ms) * 1000000;
    *out = p;
    return FR_OK;
}

int fr_cnet_wait(fr_cnet_pending *p, int64_t timeout_ms, ProtobufCMessage **resp,
                 fr_error *err)
{
    *resp = NULL;
    FR_CHECK(!p->ended, FR_ESTATE, err, "%s: the answer was already taken",
             fr_rpc_api_name(p->api));
    fr_cnet *n = p->n;
    int64_t until = fr_monotonic_ns() + (timeout_ms > 0 ? timeout_ms : 0) * 1000000;
    if (until > p->deadline_ns) until = p->deadline_ns;
    pthread_mutex_lock(&n->mu);
    while (!p->call.head && !p->call.lost && fr_monotonic_ns() < until)
        wait_until(&p->call.cv, &n->mu, until);
    bool ready = p->call.head || p->call.lost;
    pthread_mutex_unlock(&n->mu);
    if (!ready && fr_monotonic_ns() < p->deadline_ns) return FR_OK; /* not yet */
    call_state st = {0};
    p->ended = true;
    return receive(n, p->api, &p->call, p->deadline_ns, NULL, NULL, resp, NULL, &st, err);
}

void fr_cnet_release(fr_cnet *n, ProtobufCMessage *m)
{
    fr_buf b;
    b.data = fr_rpc_kept_take(m, &b.cap);
    b.len = 0;
    fr_bufpool_give(n->frames, &b);
    fr_rpc_free(m);
}

void fr_cnet_pending_free(fr_cnet_pending *p)
{
    if (!p) return;
    call_end(p->n, &p->call);
    fr_free(p);
}

int fr_cnet_call(fr_cnet *n, fr_rpc_api api, const ProtobufCMessage *req, int64_t wait_ms,
                 unsigned flags, fr_cnet_part_fn on_part, void *ctx, ProtobufCMessage **resp,
                 bool *stopped, fr_error *err)
{
    if (resp) *resp = NULL;
    if (stopped) *stopped = false;
    FR_TRY(fr_rpc_request_check(api, req, err));
    int attempts = (flags & FR_CNET_RETRY) ? n->o.retries + 1 : 1;
    for (int a = 1;; a++) {
        call_state st = {0};
        int rc = call_once(n, api, req, wait_ms, on_part, ctx, resp, stopped, &st, err);
        if (rc >= 0 || !st.retriable || st.parts_seen || a >= attempts) return rc;
        FR_DEBUG("%s: retrying after: %s", fr_rpc_api_name(api), err ? err->msg : "");
    }
}
