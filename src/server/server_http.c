/* server_http.c — the HTTP listener (libmicrohttpd, its own thread): GET /health answers
 * 200 with a small JSON document once the server accepts requests, GET /metrics the
 * Prometheus text exposition (server_metrics.c). Anything else is 404, other methods 405.
 *
 * The handler runs on libmicrohttpd's thread and reads only atomics and the engine (which
 * any thread may call); the listener is stopped before the engine closes. */
#include "server/server_int.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             const void *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)con_cls;
    fr_server *s = cls;
    if (*upload_data_size != 0) { /* a body we do not read */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET and HEAD\n";
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", msg, sizeof msg - 1);
    }
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    enum MHD_Result ok;
    if (strcmp(url, "/health") == 0) {
        double uptime = (double)(fr_now_ms() - s->metrics->started_ms) / 1e3;
        int rc = fr_buf_printf(&b, &err, "{\"status\": \"ok\", \"uptime_seconds\": %.3f, "
                               "\"connections\": %lld, \"version\": \"%s\"}\n", uptime,
                               (long long)atomic_load(&s->metrics->connections_open),
                               FIRTH_SERVER_VERSION);
        ok = rc == FR_OK ? reply(conn, MHD_HTTP_OK, "application/json", b.data, b.len) : MHD_NO;
    } else if (strcmp(url, "/metrics") == 0) {
        int rc = srv_metrics_render(s, &b, &err);
        if (rc == FR_OK) {
            ok = reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.data,
                       b.len);
        } else {
            FR_WARN("/metrics: %s", err.msg);
            ok = reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", err.msg,
                       strlen(err.msg));
        }
    } else {
        static const char msg[] = "not found: try /health or /metrics\n";
        ok = reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", msg, sizeof msg - 1);
    }
    fr_buf_free(&b);
    return ok;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    FR_WARN("http: %s", line);
}

int srv_http_start(fr_server *s, fr_error *err)
{
    if (!s->opts.http_listen) return FR_OK;
    struct sockaddr_storage addr;
    FR_TRY(srv_resolve("server.http.listen", s->opts.http_listen, &addr, err));
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->http = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                               MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                               MHD_OPTION_CONNECTION_LIMIT, 64u,
                               MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                               MHD_OPTION_END);
    FR_CHECK(s->http, FR_EIO, err, "cannot listen on %s (server.http.listen): the address is "
             "in use or not this machine's", s->opts.http_listen);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->http, MHD_DAEMON_INFO_BIND_PORT);
    int port = info ? info->port : 0;
    if (addr.ss_family == AF_INET) ((struct sockaddr_in *)&addr)->sin_port = htons((uint16_t)port);
    else ((struct sockaddr_in6 *)&addr)->sin6_port = htons((uint16_t)port);
    srv_format_sockaddr((struct sockaddr *)&addr, s->http_address, sizeof s->http_address);
    s->http_on = true;
    return FR_OK;
}

void srv_http_stop(fr_server *s)
{
    if (!s->http) return;
    MHD_stop_daemon(s->http);
    s->http = NULL;
}
