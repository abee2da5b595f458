/* server_core.c — the server's life: starting (engine, workers, listeners, the loop
 * thread), handing requests between the loop and the workers (the done queue and its
 * eventfd wake-up, streamed parts that a worker waits on), and the graceful shutdown.
 *
 * Waking the loop: a thread that queued something for the loop writes the eventfd unless
 * wake_sent says an earlier write is still unseen; the loop clears wake_sent before it
 * looks, so whatever is queued after that writes again. (uv_async_send is not used: in the
 * libuv of Debian 12 the loop spins, then yields, while a sender is between its write and
 * its flag, which on a busy two-core machine costs the loop a whole time slice.)
 *
 * Shutdown: the listener closes; frames read but not started are answered SHUTTING_DOWN;
 * parked fetches answer with what they have; once no request is in flight and every
 * response is written (or server.shutdown.timeout has passed) the connections close, the
 * workers stop, HTTP stops and the engine is flushed and closed, on the loop thread, and the
 * loop ends. */
#include "server/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* How long a streamed part may wait to be written before its worker counts as blocked. */
#define SRV_PART_PATIENCE_MS 20

/* ---- jobs ------------------------------------------------------------------------------ */

void srv_job_free(srv_job *j)
{
    if (!j) return;
    /* A produce_log or put_kv request references its record batches in the body: free it
     * first. */
    if (fr_rpc_request_in_place(j->api)) fr_rpc_request_free_in_place(j->request);
    else fr_rpc_free(j->request);
    fr_free(j->body_block);
    fr_buf_free(&j->out);
    srv_job_drop_gather(j);
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
    srv_wake_loop(s);
}

void srv_wake_loop(fr_server *s)
{
    if (atomic_exchange(&s->wake_sent, true)) return;
    uint64_t one = 1;
    /* Only EINTR can fail here: the counter is read long before it could fill. */
    while (write(s->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

srv_pool *srv_pool_of(fr_server *s, const srv_job *j)
{
    return j->api == FR_RPC_EXECUTE_SQL ? s->sql_pool : s->pool;
}

void srv_job_task(void *arg)
{
    srv_job *j = arg;
    srv_job_run(j);
    srv_complete(j->srv, j);
}

void srv_part_notify(srv_job *j, bool failed)
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
    /* A part is written in microseconds to a client that reads; one that does not may keep
     * this worker for ever. Past a short wait the worker declares itself blocked, so that
     * the pool may start another thread for the requests queued behind it. */
    srv_pool *pool = srv_pool_of(j->srv, j);
    bool blocked = false;
    pthread_mutex_lock(&j->part_mu);
    while (!j->part_done) {
        if (blocked) {
            pthread_cond_wait(&j->part_cv, &j->part_mu);
            continue;
        }
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += SRV_PART_PATIENCE_MS * 1000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&j->part_cv, &j->part_mu, &at) == ETIMEDOUT &&
            !j->part_done) {
            pthread_mutex_unlock(&j->part_mu);
            srv_pool_block_begin(pool);
            blocked = true;
            pthread_mutex_lock(&j->part_mu);
        }
    }
    bool failed = j->part_failed;
    pthread_mutex_unlock(&j->part_mu);
    if (blocked) srv_pool_block_end(pool);
    j->kind = SRV_JOB_DONE;
    FR_CHECK(!failed, FR_ESTATE, err, "the connection closed while a response was streamed");
    return FR_OK;
}
/* ---- finished jobs --------------------------------------------------------------------- */

static void job_done(fr_server *s, srv_job *j)
{
    srv_conn *c = j->conn;
    switch (j->kind) {
    case SRV_JOB_PART:
        if (c->closing || j->cancelled) srv_part_notify(j, true);
        else srv_conn_write_buf(c, &j->out, j);
        return;
    case SRV_JOB_PARKED:
        s->jobs_live--;
        srv_park(s, j);
        return;
    case SRV_JOB_DONE:
        break;
    }
    s->jobs_live--;
    c->inflight--;
    s->inflight_bytes -= (int64_t)j->counted_bytes;
    atomic_fetch_sub(&s->metrics->requests_in_flight, 1);
    if (!j->cancelled)
        srv_metrics_request(s->metrics, srv_api_slot(j->api), j->failed,
                            fr_monotonic_ns() - j->received_ns);
    if (!c->closing && !j->cancelled) {
        if (j->gout) srv_conn_write_gather(c, j);
        else srv_conn_write_buf(c, &j->out, NULL);
    }
    srv_job_free(j);
    if (!c->closing) {
        srv_conn_pump(c);
        srv_conn_maybe_finish(c);
    }
    if (s->bytes_paused && s->inflight_bytes < s->opts.inflight_bytes_max) {
        s->bytes_paused = false;
        srv_conn_pump_all(s);
    }
    srv_conn_unref(c);
}

static void begin_stop(fr_server *s);

static void on_wake(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    fr_server *s = h->data;
    uint64_t count;
    while (read(s->wake_fd, &count, sizeof count) < 0 && errno == EINTR) {}
    atomic_store(&s->wake_sent, false); /* before looking: later news writes again */
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
    if (atomic_exchange(&s->appended, false)) srv_wake_parked(s, false);
    srv_check_stop(s);
}

/* ---- shutdown -------------------------------------------------------------------------- */

static void close_all(fr_server *s)
{
    for (srv_conn *c = s->conns; c; c = c->next) srv_conn_close(c);
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
    srv_pool_free(s->sql_pool);
    s->pool = s->sql_pool = NULL;
    srv_http_stop(s);
    fr_engine_close(s->engine);
    s->engine = NULL;
    uv_timer_stop(&s->park_timer);
    uv_timer_stop(&s->stop_timer);
    uv_close((uv_handle_t *)&s->park_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->stop_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->wake_poll, on_handle_closed);
}

void srv_check_stop(fr_server *s)
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
        srv_conn_pump(c); /* frames read and not started get SHUTTING_DOWN; reading stops */
    }
    srv_wake_parked(s, true);
    uv_timer_start(&s->stop_timer, on_stop_timeout, (uint64_t)s->opts.shutdown_timeout_ms, 0);
}

void fr_server_shutdown(fr_server *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->exit_mu);
    if (!s->exited) {
        atomic_store(&s->stop_asked, true);
        srv_wake_loop(s);
    }
    pthread_mutex_unlock(&s->exit_mu);
}

/* ---- start and stop -------------------------------------------------------------------- */

static void *loop_main(void *arg)
{
    fr_server *s = arg;
    pthread_setname_np(pthread_self(), "firth-loop"); /* for top -H, perf and gdb */
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
    if (e == 0) e = uv_listen((uv_stream_t *)&s->listener, 511, srv_on_connection);
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
    srv_pool_free(s->pool);
    srv_pool_free(s->sql_pool);
    srv_http_stop(s);
    if (s->engine) fr_engine_close(s->engine);
    uv_walk(&s->loop, close_walk, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&s->loop) != 0) FR_WARN("server: the event loop did not close cleanly");
    if (s->wake_fd >= 0) close(s->wake_fd);
    pthread_mutex_destroy(&s->done_mu);
    pthread_mutex_destroy(&s->exit_mu);
    pthread_cond_destroy(&s->exit_cv);
    fr_server_options_free(&s->opts);
    fr_bufpool_free(s->bufs);
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
    int rc = s->metrics ? copy_options(&s->opts, o, err) : fr_fail(err, FR_ENOMEM, "out of memory");
    if (rc < 0) {
        fr_free(s->metrics);
        fr_free(s);
        return rc;
    }
    srv_metrics_init(s->metrics);
    pthread_mutex_init(&s->done_mu, NULL);
    pthread_mutex_init(&s->exit_mu, NULL);
    pthread_cond_init(&s->exit_cv, NULL);
    atomic_init(&s->stop_asked, false);
    atomic_init(&s->appended, false);
    atomic_init(&s->wake_sent, false);
    atomic_init(&s->parked_count, 0);
    s->watcher = (fr_log_watcher){srv_on_append, s};
    if (s->opts.log_level_given) fr_log_set_level(s->opts.log_level);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(s->opts.connections_max);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int e = s->wake_fd < 0 ? uv_translate_sys_error(errno) : uv_loop_init(&s->loop);
    if (e != 0) {
        rc = fr_fail(err, FR_EIO, "cannot start the event loop: %s", uv_strerror(e));
        if (s->wake_fd >= 0) close(s->wake_fd);
        fr_server_options_free(&s->opts);
        fr_free(s->metrics);
        fr_free(s);
        return rc;
    }
    e = uv_poll_init(&s->loop, &s->wake_poll, s->wake_fd);
    s->wake_poll.data = s;
    if (e == 0) e = uv_poll_start(&s->wake_poll, UV_READABLE, on_wake);
    uv_timer_init(&s->loop, &s->park_timer);
    s->park_timer.data = s;
    uv_timer_init(&s->loop, &s->stop_timer);
    s->stop_timer.data = s;
    if (e != 0) {
        rc = fr_fail(err, FR_EIO, "cannot watch the loop's wake-up: %s", uv_strerror(e));
        goto fail;
    }

    fr_engine_options eo = s->opts.engine;
    eo.data_dir = s->opts.data_dir;
    FR_GOTO(fr_engine_open(&eo, &s->engine, err));
    FR_GOTO(srv_pool_new(s->opts.workers, &s->pool, err));
    /* Fetches read records into buffers of up to server.fetch.bucket.bytes.max: kept and
     * reused, whichever worker reads next, they are not page-faulted in afresh. */
    s->bufs = fr_bufpool_new(SRV_BUFS_KEEP_BYTES);
    if (!s->bufs) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(srv_pool_new(s->opts.sql_workers, &s->sql_pool, err));
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
