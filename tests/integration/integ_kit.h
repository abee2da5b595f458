/* integ_kit.h — what the integration programs of tests/integration/ share: a real `firth
 * server` process started on ephemeral loopback ports (its ready file read for the bound
 * addresses), stopped by SIGTERM or killed with SIGKILL and restarted on the same data dir
 * and port; failures recorded from any thread, each with a message saying what went wrong;
 * scratch dirs; a tiny HTTP GET for /metrics; a server's resident memory; seeds.
 *
 * The programs are plain C (no cmocka: many threads report failures at once), link libfirth
 * and use firth.h for everything they test; batches are built and read through the arrow
 * module behind client/client_bridge.h. Header-only, so that each program is one file.
 * Environment: FIRTH (the binary; default: `firth` beside the program), FIRTH_TEST_TMP (a
 * scratch dir; default /tmp), FIRTH_TEST_SEED (replays a run), FIRTH_TEST_VERBOSE. */
#ifndef FIRTH_INTEG_KIT_H
#define FIRTH_INTEG_KIT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client_bridge.h"

/* ---- failures -------------------------------------------------------------------------- */

static atomic_int ik_failures;
static pthread_mutex_t ik_print_mu = PTHREAD_MUTEX_INITIALIZER;
#define IK_FAILURES_PRINTED 40

/* Records a failure and prints its message (the first IK_FAILURES_PRINTED of them). Any
 * thread. */
__attribute__((format(printf, 1, 2))) static inline void ik_fail(const char *fmt, ...)
{
    int n = atomic_fetch_add(&ik_failures, 1);
    if (n >= IK_FAILURES_PRINTED) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&ik_print_mu);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    if (n + 1 == IK_FAILURES_PRINTED) fputs("FAIL: (further failures not printed)\n", stderr);
    pthread_mutex_unlock(&ik_print_mu);
    va_end(ap);
}

/* Stops the program at once: for a failure after which nothing else can be checked. */
#define IK_FATAL(...)                                                                        \
    do {                                                                                     \
        ik_fail(__VA_ARGS__);                                                                \
        ik_exit_hook();                                                                      \
        exit(1);                                                                             \
    } while (0)

/* A call that must succeed; its firth_error says why not. */
#define IK_OK(expr, err)                                                                     \
    do {                                                                                     \
        int ik_rc_ = (expr);                                                                 \
        if (ik_rc_ != 0) IK_FATAL("%s failed: %d %s", #expr, ik_rc_, (err).msg);             \
    } while (0)

__attribute__((format(printf, 1, 2))) static inline void ik_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&ik_print_mu);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&ik_print_mu);
    va_end(ap);
}

/* ---- time, seeds, randomness ------------------------------------------------------------ */

static inline int64_t ik_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void ik_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The run's seed: FIRTH_TEST_SEED or the clock; printed so that a failure can be replayed. */
static inline uint64_t ik_seed(const char *program)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) % 1000000;
    ik_log("%s: seed %" PRIu64 " (rerun with FIRTH_TEST_SEED=%" PRIu64 ")", program, seed,
           seed);
    return seed;
}

/* splitmix64: a small generator with a state per thread. */
static inline uint64_t ik_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int64_t ik_rand_between(uint64_t *state, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(ik_rand(state) % (uint64_t)(hi - lo + 1));
}

/* ---- scratch dirs ---------------------------------------------------------------------- */

static char ik_dir[1024];
static bool ik_keep_dir;

static int ik_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A fresh scratch dir for the program ($FIRTH_TEST_TMP/name.XXXXXX), in ik_dir: removed by
 * ik_finish when the program passes, kept for a look when it fails. */
static inline void ik_scratch(const char *name)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    snprintf(ik_dir, sizeof ik_dir, "%s/%s.XXXXXX", base, name);
    if (!mkdtemp(ik_dir)) {
        fprintf(stderr, "FAIL: cannot make a scratch dir under %s: %s\n", base, strerror(errno));
        exit(1);
    }
}

/* ---- the server process ---------------------------------------------------------------- */

typedef struct ik_server {
    pid_t pid;
    char data_dir[1200];
    char log_path[1200];
    char ready_path[1200];
    char native[128];      /* "127.0.0.1:41234" */
    char http[128];
    char target[160];      /* "firth://127.0.0.1:41234" */
    int starts;
    rlim_t nofile;         /* 0: inherit; else the descriptor limit (soft and hard) */
} ik_server;

static ik_server *ik_servers[4];

/* Kills what is still running: called before a fatal exit. */
static inline void ik_exit_hook(void)
{
    for (int i = 0; i < 4; i++)
        if (ik_servers[i] && ik_servers[i]->pid > 0) {
            kill(ik_servers[i]->pid, SIGKILL);
            waitpid(ik_servers[i]->pid, NULL, 0);
            ik_servers[i]->pid = -1;
        }
}

/* The firth binary: $FIRTH, or `firth` beside this program. */
static inline void ik_firth_binary(char *out, size_t cap)
{
    const char *env = getenv("FIRTH");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) IK_FATAL("cannot read /proc/self/exe: %s", strerror(errno));
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        snprintf(out, cap, "%s/firth", self);
    }
    if (access(out, X_OK) != 0)
        IK_FATAL("no firth binary at %s (set FIRTH to the binary)", out);
}

static inline void ik_server_init(ik_server *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->pid = -1;
    snprintf(s->data_dir, sizeof s->data_dir, "%s/%s-data", ik_dir, name);
    snprintf(s->log_path, sizeof s->log_path, "%s/%s.log", ik_dir, name);
    snprintf(s->ready_path, sizeof s->ready_path, "%s/%s.ready", ik_dir, name);
    for (int i = 0; i < 4; i++)
        if (!ik_servers[i]) {
            ik_servers[i] = s;
            break;
        }
}

/* The server's log, for failure messages: its last lines (static storage). */
static inline const char *ik_server_log_tail(const ik_server *s)
{
    static char tail[4096];
    tail[0] = '\0';
    FILE *f = fopen(s->log_path, "r");
    if (!f) return tail;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof tail - 1 ? size - (long)sizeof tail + 1 : 0, SEEK_SET);
    size_t n = fread(tail, 1, sizeof tail - 1, f);
    tail[n] = '\0';
    fclose(f);
    return tail;
}

/* Starts `firth server` on s->data_dir. listen is "127.0.0.1:0" for a port the system picks,
 * or the address of an earlier start (a restart keeps the port, so that clients reconnect).
 * extra: NULL-terminated further arguments ("--server.connections.max", "1000", NULL), may
 * be NULL. Waits up to 60 s for the ready file; false when the server exited instead (its
 * log says why). The server's stderr goes to s->log_path, appended across restarts. */
static inline bool ik_server_start(ik_server *s, const char *listen, const char *const *extra)
{
    char bin[PATH_MAX + 16];
    ik_firth_binary(bin, sizeof bin);
    unlink(s->ready_path);
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "server";
    argv[n++] = "--data-dir";
    argv[n++] = s->data_dir;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--http-listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--ready-file";
    argv[n++] = s->ready_path;
    for (int i = 0; extra && extra[i] && n < 62; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) IK_FATAL("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) dup2(fd, 2);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1);
        if (s->nofile > 0) {
            struct rlimit rl = {.rlim_cur = s->nofile, .rlim_max = s->nofile};
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    s->starts++;
    for (int i = 0; i < 1200; i++) { /* up to 60 s: a loaded machine recovering many logs */
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            s->pid = -1;
            return false;
        }
        json_error_t jerr;
        json_t *root = json_load_file(s->ready_path, 0, &jerr);
        const char *native = root ? json_string_value(json_object_get(root, "native")) : NULL;
        const char *http = root ? json_string_value(json_object_get(root, "http")) : NULL;
        if (native) {
            snprintf(s->native, sizeof s->native, "%s", native);
            snprintf(s->http, sizeof s->http, "%s", http ? http : "");
            snprintf(s->target, sizeof s->target, "firth://%s", native);
            json_decref(root);
            return true;
        }
        json_decref(root);
        ik_sleep_ms(50);
    }
    IK_FATAL("the server did not write its ready file within 60 s; its log:\n%s",
             ik_server_log_tail(s));
    return false;
}

/* ik_server_start that must succeed: a restart on a port just freed is tried again for a
 * while (the port may linger). */
static inline void ik_server_start_ok(ik_server *s, const char *listen, const char *const *extra)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        if (ik_server_start(s, listen, extra)) return;
        if (strcmp(listen, "127.0.0.1:0") == 0) break;
        ik_sleep_ms(250);
    }
    IK_FATAL("the server did not start on %s; its log:\n%s", listen, ik_server_log_tail(s));
}

/* SIGTERM and wait: a graceful stop, which must exit 0. */
static inline void ik_server_stop(ik_server *s)
{
    if (s->pid <= 0) return;
    kill(s->pid, SIGTERM);
    int status = 0;
    waitpid(s->pid, &status, 0);
    s->pid = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        ik_fail("the server did not stop cleanly on SIGTERM (status %#x); its log:\n%s", status,
                ik_server_log_tail(s));
}

/* SIGKILL and wait: the crash the server must survive. */
static inline void ik_server_kill9(ik_server *s)
{
    if (s->pid <= 0) return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = -1;
}

/* Resident memory of a process in KiB (VmRSS of /proc/PID/status), or -1. */
static inline int64_t ik_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int64_t kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = strtoll(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* CPU time (user + system) of a process in clock ticks, from /proc/PID/stat, or -1. */
static inline int64_t ik_cpu_ticks(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p) return -1;
    long long utime = 0, stime = 0;
    /* After ')': state, then fields 4..13, then utime (14) and stime (15). */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &utime,
               &stime) != 2)
        return -1;
    return utime + stime;
}

/* ---- sockets and HTTP ------------------------------------------------------------------ */

/* A loopback port that is free now, below the system's ephemeral range (32768 and up on
 * Linux): a server restarted on it cannot find it taken by a client's own connection, which
 * the kernel may give an ephemeral port equal to the one the client dials (a TCP
 * self-connect). Returns "127.0.0.1:PORT" in out. */
static inline void ik_free_port(uint64_t *rng, char *out, size_t cap)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        int port = (int)ik_rand_between(rng, 20000, 32000);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int rc = fd >= 0 ? bind(fd, (struct sockaddr *)&sa, sizeof sa) : -1;
        if (fd >= 0) close(fd);
        if (rc == 0) {
            snprintf(out, cap, "127.0.0.1:%d", port);
            return;
        }
    }
    IK_FATAL("no free loopback port found in 20000..32000");
}

/* A blocking TCP connection to "host:port" (IPv4), or -1 with errno. */
static inline int ik_dial(const char *addr)
{
    char host[128];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon - addr >= (long)sizeof host) return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)strtol(colon + 1, NULL, 10))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* GET path from addr: the whole response (status line, headers, body), malloc'd; NULL when
 * the connection failed. */
static inline char *ik_http_get(const char *addr, const char *path)
{
    int fd = ik_dial(addr);
    if (fd < 0) return NULL;
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        close(fd);
        return NULL;
    }
    size_t len = 0, cap = 65536;
    char *out = malloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap) out = realloc(out, cap *= 2);
        ssize_t got = recv(fd, out + len, 4096, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd);
    out[len] = '\0';
    return out;
}

/* The value of the metric line that starts with `name` (with its labels, as exposed:
 * "firth_connections" or "firth_log_end_offset{database=\"d\",...}") in a /metrics text;
 * -1 when there is none. */
static inline double ik_metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ') return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

static inline double ik_server_metric(const ik_server *s, const char *name)
{
    char *text = ik_http_get(s->http, "/metrics");
    if (!text) return -1;
    double v = ik_metric(text, name);
    free(text);
    return v;
}

/* ---- the client ------------------------------------------------------------------------ */

/* Runs SQL on a client; fatal on an error. */
static inline void ik_sql(firth_client *c, const char *sql)
{
    firth_error err = {0};
    int rc = firth_execute(c, sql, NULL, &err);
    if (rc != 0) IK_FATAL("SQL failed (%d %s): %s", rc, err.msg, sql);
}

/* ---- reading batches ------------------------------------------------------------------- */

static inline int64_t ik_cell_i64(const firth_batch *b, int col, int64_t row)
{
    const fr_column *c = fr_batch_column(firth_batch_unwrap(b), col);
    fr_value v;
    fr_column_get(c, row, &v);
    return v.is_null ? INT64_MIN : v.v.i;
}

/* A string cell into out (NUL-terminated, cut to cap); false when NULL. */
static inline bool ik_cell_str(const firth_batch *b, int col, int64_t row, char *out,
                               size_t cap)
{
    const fr_column *c = fr_batch_column(firth_batch_unwrap(b), col);
    if (fr_column_is_null(c, row)) {
        out[0] = '\0';
        return false;
    }
    int32_t from = c->offsets[row], to = c->offsets[row + 1];
    size_t n = (size_t)(to - from) < cap - 1 ? (size_t)(to - from) : cap - 1;
    memcpy(out, c->values + from, n);
    out[n] = '\0';
    return true;
}

/* A schema from "name TYPE, name TYPE NOT NULL, ..." (fatal when it does not parse). */
static inline fr_schema *ik_schema(const char *cols)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cols);
    fr_field f[32];
    int n = 0;
    for (char *part = buf; part && n < 32;) {
        char *comma = strchr(part, ',');
        if (comma) *comma = '\0';
        while (*part == ' ') part++;
        char *sp = strchr(part, ' ');
        if (!sp) IK_FATAL("bad column spec '%s'", part);
        *sp = '\0';
        f[n].name = part;
        fr_error err = {0};
        if (fr_type_parse(sp + 1, &f[n].type, &err) < 0)
            IK_FATAL("bad column type '%s': %s", sp + 1, err.msg);
        n++;
        part = comma ? comma + 1 : NULL;
    }
    fr_schema *s = NULL;
    fr_error err = {0};
    if (fr_schema_new(f, n, 0, &s, &err) < 0) IK_FATAL("schema %s: %s", cols, err.msg);
    return s;
}

/* Ends the program: prints the verdict, removes the scratch dir when it passed. */
static inline int ik_finish(const char *program)
{
    ik_exit_hook();
    int failures = atomic_load(&ik_failures);
    if (failures == 0) {
        if (!ik_keep_dir && !getenv("FIRTH_TEST_KEEP"))
            nftw(ik_dir, ik_rm_one, 32, FTW_DEPTH | FTW_PHYS);
        ik_log("%s: ok", program);
        return 0;
    }
    fprintf(stderr, "%s: FAILED (%d failures); files kept in %s\n", program, failures, ik_dir);
    return 1;
}

#endif
