/* server_scale_idle.c — 1,000 idle connections held by a real `firth server` process with
 * bounded memory, and descriptor limits met cleanly.
 *
 * Part 1: a server with server.connections.max = 1000 (the default is 4096; the server
 * raises its descriptor limit to fit). 1,000 TCP connections each send api_versions and get
 * its answer, then stay open and idle. The server's resident memory (VmRSS) is read before
 * and after, printed, and must grow by less than 64 KiB per connection. /metrics counts the
 * 1,000 connections; a 1,001st is refused with an error frame (request id -1,
 * LIMIT_EXCEEDED) and closed; held connections still answer; once all are closed the gauge
 * returns to 0 and a new connection is served.
 * Part 2: a server started with a descriptor limit of 128 (below what server.connections.max
 * asks for) warns about it at start; 300 connections get either an answer or a closed
 * connection, none hangs; the server neither dies nor spins (its CPU time while they are
 * held stays small) and serves new connections once they are closed.
 * The frames are written by hand from docs/PROTOCOL.md (api_versions has an empty body). */
#include "integ_kit.h"

#define HELD 1000
#define RSS_PER_CONNECTION_MAX_KB 64
#define LIMITED_NOFILE 128
#define LIMITED_CONNECTIONS 300

/* Sends api_versions with request id id on fd. */
static bool send_api_versions(int fd, int32_t id)
{
    uint8_t f[12] = {0, 0, 0, 8, 0, 0, 0, 0};
    uint32_t be = htonl((uint32_t)id);
    memcpy(f + 8, &be, 4);
    return send(fd, f, sizeof f, MSG_NOSIGNAL) == (ssize_t)sizeof f;
}

/* Reads exactly n bytes within timeout_ms: n, 0 at a closed connection, -1 on timeout. */
static ssize_t read_full(int fd, uint8_t *buf, size_t n, int timeout_ms)
{
    size_t got = 0;
    int64_t deadline = ik_now_ms() + timeout_ms;
    while (got < n) {
        int left = (int)(deadline - ik_now_ms());
        if (left <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) return -1;
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == ECONNRESET) return 0;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return (ssize_t)n;
}

typedef struct frame {
    int result;
    int32_t id;
    uint8_t body[8192];
    size_t len;
} frame;

/* The next response frame: 1, 0 when the connection closed, -1 on timeout or a bad frame. */
static int read_frame(int fd, frame *f, int timeout_ms)
{
    uint8_t h[9];
    ssize_t r = read_full(fd, h, sizeof h, timeout_ms);
    if (r <= 0) return (int)r;
    uint32_t len, id;
    memcpy(&len, h, 4);
    memcpy(&id, h + 5, 4);
    len = ntohl(len);
    if (len < 5 || len - 5 > sizeof f->body) return -1;
    f->result = h[4];
    f->id = (int32_t)ntohl(id);
    f->len = len - 5;
    r = read_full(fd, f->body, f->len, timeout_ms);
    return r == (ssize_t)f->len ? 1 : -1;
}

/* api_versions on fd answered with SUCCESS for request id. */
static bool api_versions_ok(int fd, int32_t id, const char *what)
{
    if (!send_api_versions(fd, id)) {
        ik_fail("%s: sending api_versions: %s", what, strerror(errno));
        return false;
    }
    frame f;
    int rc = read_frame(fd, &f, 20000);
    if (rc != 1 || f.result != 0 || f.id != id) {
        ik_fail("%s: api_versions (request id %d): %s", what, id,
                rc == 0 ? "the connection closed" : rc < 0 ? "no answer within 20 s"
                                                          : "not a SUCCESS frame for its id");
        return false;
    }
    return true;
}

/* Runs SQL on fd (execute_sql, request id id): 1 for SUCCESS, 0 for an ERROR frame (its
 * message in msg), -1 when the connection closed or nothing came within 20 s. */
static int run_sql(int fd, int32_t id, const char *sql, char *msg, size_t cap)
{
    size_t n = strlen(sql);
    uint8_t *f = malloc(n + 24);
    size_t at = 12;
    f[at++] = 0x0a; /* field 1 (sql), length-delimited */
    for (size_t v = n; ; v >>= 7) {
        f[at++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f) break;
    }
    memcpy(f + at, sql, n);
    at += n;
    uint32_t len = htonl((uint32_t)(at - 4)), be = htonl((uint32_t)id);
    uint16_t api = htons(15);
    memcpy(f, &len, 4);
    memcpy(f + 4, &api, 2);
    memset(f + 6, 0, 2);
    memcpy(f + 8, &be, 4);
    bool sent = send(fd, f, at, MSG_NOSIGNAL) == (ssize_t)at;
    free(f);
    snprintf(msg, cap, "%s", sent ? "no answer" : "cannot send");
    for (frame fr; sent;) {
        int rc = read_frame(fd, &fr, 20000);
        if (rc != 1) return -1;
        if (fr.id != id || fr.result == 2) continue; /* PART frames of the result */
        if (fr.result == 0) return 1;
        /* Error {code = 1, message = 2}: the message's bytes, for the log. */
        size_t i = 0, mlen = 0;
        if (i < fr.len && fr.body[i] == 0x08) i += 2;
        if (i < fr.len && fr.body[i++] == 0x12)
            for (int shift = 0; i < fr.len && shift < 28; shift += 7) {
                mlen |= (size_t)(fr.body[i] & 0x7f) << shift;
                if (!(fr.body[i++] & 0x80)) break;
            }
        if (mlen > 0 && i + mlen <= fr.len)
            snprintf(msg, cap, "%.*s", (int)mlen, (const char *)fr.body + i);
        return 0;
    }
    return -1;
}

/* Waits up to 30 s for the server's firth_connections gauge to read want. */
static void wait_connections(const ik_server *s, double want)
{
    double v = -1;
    for (int i = 0; i < 300; i++) {
        v = ik_server_metric(s, "firth_connections");
        if (v == want) return;
        ik_sleep_ms(100);
    }
    ik_fail("/metrics: firth_connections is %.0f, expected %.0f", v, want);
}

static void part_held(void)
{
    ik_server srv;
    ik_server_init(&srv, "held");
    const char *extra[] = {"--server.connections.max", "1000", NULL};
    ik_server_start_ok(&srv, "127.0.0.1:0", extra);

    /* Warm up the paths a connection takes, then measure. */
    for (int i = 0; i < 8; i++) {
        int fd = ik_dial(srv.native);
        if (fd < 0) IK_FATAL("connect %s: %s", srv.native, strerror(errno));
        api_versions_ok(fd, i, "a warm-up connection");
        close(fd);
    }
    wait_connections(&srv, 0);
    int64_t before = ik_rss_kb(srv.pid);

    static int fds[HELD];
    for (int i = 0; i < HELD; i++) {
        fds[i] = ik_dial(srv.native);
        if (fds[i] < 0) IK_FATAL("connection %d of %d: connect: %s", i, HELD, strerror(errno));
        if (!send_api_versions(fds[i], i)) IK_FATAL("connection %d: send: %s", i, strerror(errno));
    }
    int answered = 0;
    for (int i = 0; i < HELD; i++) {
        frame f;
        int rc = read_frame(fds[i], &f, 20000);
        if (rc == 1 && f.result == 0 && f.id == i) answered++;
        else ik_fail("held connection %d: api_versions not answered (%s)", i,
                     rc == 0 ? "closed" : rc < 0 ? "timeout" : "wrong frame");
    }
    wait_connections(&srv, HELD);
    ik_sleep_ms(500); /* idle: whatever the server trims after a request is trimmed */
    int64_t after = ik_rss_kb(srv.pid);
    double per = (double)(after - before) / HELD;
    ik_log("server_scale_idle: %d idle connections (%d answered api_versions): server RSS %lld "
           "KiB before, %lld KiB after: %.1f KiB per connection (bound %d KiB)", HELD, answered,
           (long long)before, (long long)after, per, RSS_PER_CONNECTION_MAX_KB);
    if (before <= 0 || after <= 0) ik_fail("cannot read the server's VmRSS");
    if (per >= RSS_PER_CONNECTION_MAX_KB)
        ik_fail("%d idle connections cost the server %.1f KiB each (RSS %lld -> %lld KiB), over "
                "the %d KiB bound", HELD, per, (long long)before, (long long)after,
                RSS_PER_CONNECTION_MAX_KB);

    /* One more than server.connections.max: an error frame, then the connection closes. */
    int extra_fd = ik_dial(srv.native);
    if (extra_fd < 0) IK_FATAL("connect %s: %s", srv.native, strerror(errno));
    frame f;
    int rc = read_frame(extra_fd, &f, 20000);
    if (rc != 1 || f.result != 1 || f.id != -1 || f.len < 2 || f.body[0] != 0x08 ||
        f.body[1] != 9)
        ik_fail("connection %d: expected an ERROR frame with request id -1 and code 9 "
                "(LIMIT_EXCEEDED), got %s (result %d, id %d)", HELD + 1,
                rc == 1 ? "another frame" : rc == 0 ? "a closed connection" : "nothing",
                rc == 1 ? f.result : -1, rc == 1 ? f.id : 0);
    else if (read_frame(extra_fd, &f, 20000) != 0)
        ik_fail("connection %d: not closed after its LIMIT_EXCEEDED error", HELD + 1);
    close(extra_fd);
    if (ik_server_metric(&srv, "firth_connections_refused_total") < 1)
        ik_fail("/metrics: firth_connections_refused_total did not count the refusal");

    /* Held connections still answer, long after their first request. */
    for (int i = 0; i < HELD; i += HELD / 50) {
        char what[64];
        snprintf(what, sizeof what, "held connection %d, again", i);
        api_versions_ok(fds[i], HELD + i, what);
    }
    for (int i = 0; i < HELD; i++) close(fds[i]);
    wait_connections(&srv, 0);
    int64_t closed = ik_rss_kb(srv.pid);
    ik_log("server_scale_idle: after closing them: server RSS %lld KiB", (long long)closed);
    int fd = ik_dial(srv.native);
    if (fd < 0) ik_fail("a new connection after closing %d: %s", HELD, strerror(errno));
    else api_versions_ok(fd, 7, "a new connection after closing the held ones");
    if (fd >= 0) close(fd);
    ik_server_stop(&srv);
}

static void part_fd_limit(void)
{
    ik_server srv;
    ik_server_init(&srv, "limited");
    srv.nofile = LIMITED_NOFILE;
    ik_server_start_ok(&srv, "127.0.0.1:0", NULL);
    if (!strstr(ik_server_log_tail(&srv), "descriptor limit"))
        ik_fail("a server with %d descriptors and server.connections.max 4096 did not warn "
                "about the descriptor limit; its log:\n%s", LIMITED_NOFILE,
                ik_server_log_tail(&srv));

    static int fds[LIMITED_CONNECTIONS];
    static bool served_at_limit[LIMITED_CONNECTIONS];
    for (int i = 0; i < LIMITED_CONNECTIONS; i++) {
        fds[i] = ik_dial(srv.native);
        if (fds[i] >= 0 && !send_api_versions(fds[i], i)) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    int answered = 0, closed = 0, refused = 0;
    for (int i = 0; i < LIMITED_CONNECTIONS; i++) {
        if (fds[i] < 0) {
            refused++;
            continue;
        }
        frame f;
        int rc = read_frame(fds[i], &f, 20000);
        if (rc == 1 && f.result == 0 && f.id == i) served_at_limit[i] = true, answered++;
        else if (rc == 0 || (rc == 1 && f.result == 1 && f.id == -1)) closed++;
        else ik_fail("connection %d to the limited server: neither answered nor closed within "
                     "20 s", i);
    }
    ik_log("server_scale_idle: descriptor limit %d: of %d connections %d were served, %d "
           "closed by the server, %d not connected", LIMITED_NOFILE, LIMITED_CONNECTIONS,
           answered, closed, refused);
    if (answered < 32) ik_fail("the limited server served only %d connections", answered);

    /* At its limit the server answers SQL that needs new files (32 buckets' logs) with a
     * result or an error, not a crash or a hang. */
    int sql_fd = -1;
    for (int i = 0; i < LIMITED_CONNECTIONS && sql_fd < 0; i++)
        if (served_at_limit[i]) sql_fd = fds[i];
    char msg[256], values[2048];
    int at = 0;
    for (int v = 0; v < 200; v++)
        at += snprintf(values + at, sizeof values - (size_t)at, "%s(%d)", v ? ", " : "", v);
    char sql[2300];
    snprintf(sql, sizeof sql, "CREATE DATABASE lim; CREATE TABLE lim.t (a BIGINT) WITH "
             "('bucket.num' = '32', 'bucket.key' = 'a'); INSERT INTO lim.t VALUES %s", values);
    int src = sql_fd >= 0 ? run_sql(sql_fd, 9000, sql, msg, sizeof msg) : -1;
    ik_log("server_scale_idle: SQL creating 32 buckets at the descriptor limit: %s%s",
           src == 1 ? "done" : src == 0 ? "error: " : "no answer", src == 0 ? msg : "");
    if (src < 0) ik_fail("SQL at the descriptor limit got no answer (%s)", msg);

    /* Held, the connections cost it no CPU: no accept loop spinning on EMFILE. */
    int64_t cpu0 = ik_cpu_ticks(srv.pid), t0 = ik_now_ms();
    ik_sleep_ms(2000);
    int64_t cpu1 = ik_cpu_ticks(srv.pid), t1 = ik_now_ms();
    double share = (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) /
                   ((double)(t1 - t0) / 1e3);
    ik_log("server_scale_idle: the limited server used %.0f%% of a core while they were held",
           share * 100);
    if (cpu0 < 0 || cpu1 < 0) ik_fail("cannot read the limited server's CPU time");
    else if (share > 0.2)
        ik_fail("the server at its descriptor limit used %.0f%% of a core while idle "
                "(spinning?)", share * 100);
    if (kill(srv.pid, 0) != 0) ik_fail("the server at its descriptor limit died");

    for (int i = 0; i < LIMITED_CONNECTIONS; i++)
        if (fds[i] >= 0) close(fds[i]);
    bool served = false;
    for (int attempt = 0; attempt < 50 && !served; attempt++) {
        int fd = ik_dial(srv.native);
        if (fd >= 0) {
            frame f;
            served = send_api_versions(fd, 1) && read_frame(fd, &f, 20000) == 1 &&
                     f.result == 0 && f.id == 1;
            close(fd);
        }
        if (!served) ik_sleep_ms(100);
    }
    if (!served) ik_fail("the server at its descriptor limit serves no new connection after "
                         "the others closed");
    /* With descriptors free again, the table takes rows. */
    int fd = ik_dial(srv.native);
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS lim; CREATE TABLE IF NOT EXISTS "
             "lim.t (a BIGINT) WITH ('bucket.num' = '32', 'bucket.key' = 'a'); INSERT INTO lim.t "
             "VALUES %s", values);
    if (fd < 0 || run_sql(fd, 1, sql, msg, sizeof msg) != 1)
        ik_fail("SQL after the descriptors were freed failed: %s", msg);
    if (fd >= 0) close(fd);
    ik_server_stop(&srv);
}

int main(void)
{
    const char *program = "server_scale_idle";
    ik_scratch(program);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t need = HELD + LIMITED_CONNECTIONS + 256;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < need) {
        ik_log("%s: skipped: this process may open %llu descriptors, it needs %llu (raise the "
               "hard limit with ulimit -Hn)", program, (unsigned long long)rl.rlim_cur,
               (unsigned long long)need);
        ik_finish(program);
        return 77;
    }
    part_held();
    part_fd_limit();
    return ik_finish(program);
}
