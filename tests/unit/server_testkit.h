/* server_testkit.h — helpers of the server's tests: a real server started in-process on
 * ephemeral loopback ports over a scratch data dir, and a blocking client that speaks the
 * native protocol over a real socket with the rpc module (frames, pack, unpack), plus a tiny
 * HTTP GET. Header-only (static functions) so that every test binary is one source file. */
#ifndef FIRTH_SERVER_TESTKIT_H
#define FIRTH_SERVER_TESTKIT_H

#include "engine_testkit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "rpc/rpc.h"
#include "server/server.h"

/* ---- the server ------------------------------------------------------------------------ */

typedef struct kit_server {
    char *dir;
    fr_server *srv;
    fr_server_options opts;
} kit_server;

/* Options for a test server: ephemeral ports, the scratch dir, no fsync (durability is the
 * log's test), quiet logs unless FIRTH_TEST_VERBOSE is set. */
static inline void kit_server_options(kit_server *k, const char *name)
{
    fr_error err = {0};
    k->dir = kit_tmpdir(name);
    KIT_CHECK(fr_server_options_default(&k->opts, &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "data.dir", k->dir, &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "server.listen", "127.0.0.1:0", &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "server.http.listen", "127.0.0.1:0", &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "log.flush", "none", &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "server.workers", "4", &err), err);
    KIT_CHECK(fr_server_options_set(&k->opts, "log.level",
                                    getenv("FIRTH_TEST_VERBOSE") ? "debug" : "error", &err),
              err);
}

static inline void kit_server_start(kit_server *k)
{
    fr_error err = {0};
    KIT_CHECK(fr_server_start(&k->opts, &k->srv, &err), err);
}

static inline void kit_server_stop(kit_server *k)
{
    fr_server_free(k->srv);
    k->srv = NULL;
    fr_server_options_free(&k->opts);
    kit_rmdir(k->dir);
    k->dir = NULL;
}

/* ---- a client -------------------------------------------------------------------------- */

typedef struct kit_conn {
    int fd;
    fr_rpc_reader *r;
    int32_t next_id;
} kit_conn;

static inline int kit_dial(const char *addr)
{
    char host[256];
    int port = 0;
    fr_error err = {0};
    KIT_CHECK(fr_server_parse_address(addr, host, sizeof host, &port, &err), err);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    assert_int_equal(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        fail_msg("connect %s: %s", addr, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static inline kit_conn kit_connect(const char *addr)
{
    kit_conn c = {.fd = kit_dial(addr), .next_id = 1};
    fr_error err = {0};
    KIT_CHECK(fr_rpc_reader_new(FR_RPC_RESPONSE, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &c.r, &err),
              err);
    return c;
}

static inline void kit_close(kit_conn *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    fr_rpc_reader_free(c->r);
    c->r = NULL;
}

static inline void kit_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail_msg("send: %s", strerror(errno));
        b += w;
        n -= (size_t)w;
    }
}

/* Sends a request with a chosen id; returns the id. */
static inline int32_t kit_send_id(kit_conn *c, fr_rpc_api api, int32_t id,
                                  const ProtobufCMessage *body)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    KIT_CHECK(fr_rpc_write_request(&b, api, 0, id, body, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
              err);
    kit_write_all(c->fd, b.data, b.len);
    fr_buf_free(&b);
    return id;
}

static inline int32_t kit_send(kit_conn *c, fr_rpc_api api, const ProtobufCMessage *body)
{
    return kit_send_id(c, api, c->next_id++, body);
}

/* Waits up to timeout_ms for the next frame: 1 with *f (valid until the next call on c),
 * 0 when the server closed the connection, -1 on timeout. */
static inline int kit_next_frame(kit_conn *c, fr_rpc_frame *f, int timeout_ms)
{
    fr_error err = {0};
    int64_t deadline = fr_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int rc = fr_rpc_reader_next(c->r, f, &err);
        if (rc < 0) fail_msg("reading a response frame: %s", err.msg);
        if (rc == 1) return 1;
        int64_t left = (deadline - fr_monotonic_ns()) / 1000000;
        if (left <= 0) return -1;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr == 0) return -1;
        if (pr < 0 && errno == EINTR) continue;
        uint8_t *space = NULL;
        size_t n = 0;
        KIT_CHECK(fr_rpc_reader_space(c->r, &space, &n, &err), err);
        ssize_t got = recv(c->fd, space, n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == ECONNRESET) return 0;
        if (got < 0) fail_msg("recv: %s", strerror(errno));
        if (got == 0) return 0;
        fr_rpc_reader_commit(c->r, (size_t)got);
    }
}

/* The next frame, unpacked for api (the api's response, or a Firth__Error for ERROR);
 * fails the test on timeout or a closed connection. */
static inline ProtobufCMessage *kit_recv(kit_conn *c, fr_rpc_api api, fr_rpc_result *result,
                                         int32_t *id)
{
    fr_rpc_frame f;
    int rc = kit_next_frame(c, &f, 10000);
    if (rc != 1) fail_msg("no response (%s)", rc == 0 ? "connection closed" : "timeout");
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_rpc_response_unpack(api, &f, &m, &err), err);
    if (result) *result = f.result;
    if (id) *id = f.request_id;
    return m;
}

/* A request and its SUCCESS response; fails the test on an ERROR. */
static inline ProtobufCMessage *kit_call(kit_conn *c, fr_rpc_api api, const ProtobufCMessage *body)
{
    int32_t id = kit_send(c, api, body);
    fr_rpc_result result;
    int32_t got = -2;
    ProtobufCMessage *m = kit_recv(c, api, &result, &got);
    assert_int_equal(got, id);
    if (result == FR_RPC_ERROR) {
        Firth__Error *e = (Firth__Error *)m;
        fail_msg("%s: error %s: %s", fr_rpc_api_name(api), fr_rpc_code_name(e->code), e->message);
    }
    assert_int_equal(result, FR_RPC_SUCCESS);
    return m;
}

/* A request that must fail: returns the Error (caller frees with fr_rpc_free). */
static inline Firth__Error *kit_call_error(kit_conn *c, fr_rpc_api api,
                                           const ProtobufCMessage *body)
{
    int32_t id = kit_send(c, api, body);
    fr_rpc_result result;
    int32_t got = -2;
    ProtobufCMessage *m = kit_recv(c, api, &result, &got);
    assert_int_equal(got, id);
    if (result != FR_RPC_ERROR) fail_msg("%s: expected an error", fr_rpc_api_name(api));
    return (Firth__Error *)m;
}

/* ---- requests the tests use often ------------------------------------------------------ */

static inline void kit_sql(kit_conn *c, const char *sql)
{
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = (char *)sql;
    int32_t id = kit_send(c, FR_RPC_EXECUTE_SQL, &req.base);
    for (;;) {
        fr_rpc_result result;
        int32_t got = -2;
        ProtobufCMessage *m = kit_recv(c, FR_RPC_EXECUTE_SQL, &result, &got);
        assert_int_equal(got, id);
        if (result == FR_RPC_ERROR)
            fail_msg("sql %s: %s", sql, ((Firth__Error *)m)->message);
        fr_rpc_free(m);
        if (result == FR_RPC_SUCCESS) return;
    }
}

/* One record batch of rows [first, first + n) of kit_batch, as a client sends it. */
static inline void kit_encode(const fr_batch *b, int32_t schema_id, int64_t writer_id,
                              int32_t seq, const uint8_t *change_types, fr_buf *out)
{
    fr_rb_params p = {
        .schema_id = schema_id,
        .compression = FR_COMPRESSION_ZSTD,
        .writer_id = writer_id,
        .batch_sequence = seq,
        .change_types = change_types,
    };
    fr_error err = {0};
    KIT_CHECK(fr_rb_encode(b, &p, out, &err), err);
}

static inline Firth__TablePath kit_path_of(const char *db, const char *table)
{
    Firth__TablePath p = FIRTH__TABLE_PATH__INIT;
    p.database = (char *)db;
    p.table = (char *)table;
    return p;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

/* GET path from addr; returns the whole response (status line, headers, body); the caller
 * frees it. */
static inline char *kit_http_get(const char *addr, const char *path)
{
    int fd = kit_dial(addr);
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr);
    kit_write_all(fd, req, (size_t)n);
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    for (;;) {
        char chunk[4096];
        ssize_t got = recv(fd, chunk, sizeof chunk, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        KIT_CHECK(fr_buf_append(&b, chunk, (size_t)got, &err), err);
    }
    close(fd);
    KIT_CHECK(fr_buf_append(&b, "", 1, &err), err);
    size_t len;
    return (char *)fr_buf_steal(&b, &len);
}

#endif
