/* server.h — `firth server`: the engine behind the native protocol (docs/PROTOCOL.md) on a
 * libuv event loop, and an HTTP listener for /metrics and /health (libmicrohttpd).
 *
 * Threads: one event loop thread does all network I/O (accepting, reading frames, writing
 * responses) and never calls the engine; a pool of worker threads runs the requests (engine
 * calls that fsync or read, SQL); libmicrohttpd runs its own thread for HTTP. A worker hands
 * its response back to the loop through a queue and an eventfd wake-up.
 *
 * Limits (docs/CONFIGURATION.md): frame size, connections, requests in flight per
 * connection (the loop stops reading a connection that has that many), bytes queued for
 * writing per connection (the loop stops reading a connection whose reader is slow), and
 * the longest a fetch may wait. Nothing is buffered without bound: a request is read only
 * when it may be worked on, and a streamed SQL result is produced only as fast as it is
 * written.
 *
 * Ownership and threads of the functions below: options are the caller's; a server is
 * created by fr_server_start and freed by fr_server_free, from one thread (the one that
 * started it), except fr_server_shutdown, which any thread may call. */
#ifndef FIRTH_SERVER_H
#define FIRTH_SERVER_H

#include "engine/engine.h"

#define FR_SERVER_DEFAULT_LISTEN "127.0.0.1:9123"
#define FR_SERVER_DEFAULT_HTTP_LISTEN "127.0.0.1:9249"
#define FR_SERVER_DEFAULT_DATA_DIR "./firth-data"
#define FR_SERVER_ADDRESS_BYTES_MAX 300 /* "host:port" of a listener, NUL included */
#define FR_SERVER_WORKERS_MAX 1024

/* The server's configuration. Strings are owned (fr_server_options_free). */
typedef struct fr_server_options {
    char *listen;                  /* server.listen: HOST:PORT of the native protocol */
    char *http_listen;             /* server.http.listen: HOST:PORT, or NULL when off */
    char *data_dir;                /* data.dir */
    int64_t connections_max;       /* server.connections.max */
    int64_t frame_bytes_max;       /* server.frame.bytes.max */
    int64_t inflight_max;          /* server.inflight.max: requests per connection */
    int64_t inflight_bytes_max;    /* server.inflight.bytes.max: request bytes, all connections */
    int64_t write_buffer_bytes_max; /* server.connection.write.bytes.max */
    int64_t fetch_wait_max_ms;     /* server.fetch.wait.max: caps a fetch's max_wait_ms */
    int64_t fetch_bytes_max;       /* server.fetch.bytes.max: a fetch's max_bytes when 0 */
    int64_t fetch_bucket_bytes_max; /* server.fetch.bucket.bytes.max: per bucket when 0 */
    int64_t sql_part_bytes;        /* server.sql.part.bytes: Arrow bytes per PART frame */
    int workers;                   /* server.workers: threads running requests */
    int sql_workers;               /* server.sql.workers: threads running SQL */
    int64_t shutdown_timeout_ms;   /* server.shutdown.timeout */
    bool auth_required;            /* server.auth.required */
    char *auth_users;              /* server.auth.users: "name:password,..." or NULL */
    int node_id;                   /* server.node.id */
    fr_log_level log_level;        /* log.level */
    bool log_level_given;          /* else the process's level (FIRTH_LOG_LEVEL, or info) */
    fr_engine_options engine;      /* log.flush... (engine.data_dir is set from data_dir) */
} fr_server_options;

/* Defaults: see docs/CONFIGURATION.md. fr_server_options_free releases the strings. */
int fr_server_options_default(fr_server_options *o, fr_error *err);
void fr_server_options_free(fr_server_options *o);
/* Sets one key from its text: a server key, "log.level", or one of the engine's keys
 * (fr_engine_options_set). An unknown key or a bad value is FR_EINVAL naming the key; o is
 * then unchanged. "off" or "" as server.http.listen turns HTTP off. */
int fr_server_options_set(fr_server_options *o, const char *key, const char *value,
                          fr_error *err);
/* The i-th key (0-based: the server's, then log.level, then the engine's), NULL past the
 * last. */
const char *fr_server_option_key(int i);
/* Reads a flat `key: value` file (fr_config) and sets each key; errors name the file. */
int fr_server_options_load(fr_server_options *o, const char *path, fr_error *err);
/* Splits "host:port" ("[::1]:9123" for IPv6) and checks the port (0..65535; 0 picks a free
 * one). host is NUL-terminated in hostcap bytes. */
int fr_server_parse_address(const char *text, char *host, size_t hostcap, int *port,
                            fr_error *err);

typedef struct fr_server fr_server;

/* Opens the engine on data_dir, binds the listeners, starts the workers, the loop thread
 * and HTTP, and returns once connections are accepted; logs "listening on A (native), B
 * (http)". Errors: the engine's (the data dir is locked by another process: FR_ESTATE),
 * FR_EIO for an address that cannot be bound (in use), FR_EINVAL for bad options. */
int fr_server_start(const fr_server_options *o, fr_server **out, fr_error *err);
/* The bound addresses ("127.0.0.1:41234"): the real port when 0 was asked for. The HTTP
 * one is NULL when HTTP is off. Live as long as the server. */
const char *fr_server_address(const fr_server *s);
const char *fr_server_http_address(const fr_server *s);
/* The engine the server runs (for tests that look behind the protocol). */
fr_engine *fr_server_engine(fr_server *s);
/* Asks the server to stop gracefully: stop accepting, answer requests not yet started with
 * SHUTTING_DOWN, finish those in flight (parked fetches answer with what they have), write
 * the responses, close the connections, flush and close the engine. Returns at once; any
 * thread, any number of times. */
void fr_server_shutdown(fr_server *s);
/* Waits until the server has stopped (after fr_server_shutdown). Returns 0, or the first
 * error of the shutdown (a flush that failed). */
int fr_server_wait(fr_server *s, fr_error *err);
/* Shuts down (if not yet), waits and frees. NULL is fine. */
void fr_server_free(fr_server *s);

/* The whole `firth server` life for the command: starts, writes the bound addresses to
 * ready_file (may be NULL) as {"native": "...", "http": "..."} once accepting, waits for
 * SIGTERM or SIGINT, shuts down gracefully and returns 0, or an error. Blocks those
 * signals in every thread of the process (call it before starting other threads). */
int fr_server_run(const fr_server_options *o, const char *ready_file, fr_error *err);

#endif
