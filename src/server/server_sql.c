/* server_sql.c — execute_sql: runs SQL text in a session of its own and streams each
 * statement's result as Arrow IPC stream bytes in PART frames, then a final SUCCESS frame
 * with the session database (docs/PROTOCOL.md, section 8), or an ERROR frame with the line,
 * column and index of the failing statement.
 *
 * Flow control: a PART frame is handed to the loop and the worker waits until it has been
 * written before it produces more rows (srv_send_part), so a slow reader slows the
 * statement down and the server holds at most one part (server.sql.part.bytes, plus one
 * batch) per statement being streamed. A connection that closes stops the statement. */
#include "server/server_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct sql_stream {
    srv_job *j;
    int64_t part_bytes;
    int statement;     /* index of the statement running */
    bool has_rows;     /* it returns rows: begin was called */
    fr_buf piece;      /* its Arrow IPC bytes not yet sent */
    int64_t piece_rows;
    bool gone;         /* the connection closed */
} sql_stream;

static int send_piece(sql_stream *ss, bool done, const char *message, fr_error *err)
{
    Firth__ExecuteSqlResponse r = FIRTH__EXECUTE_SQL_RESPONSE__INIT;
    r.statement = ss->statement;
    r.arrow_ipc.data = ss->piece.data;
    r.arrow_ipc.len = ss->piece.len;
    r.statement_done = done;
    r.message = (char *)(message ? message : "");
    r.rows = ss->piece_rows;
    fr_buf_reset(&ss->j->out);
    FR_TRY(srv_respond(ss->j, FR_RPC_PART, &r.base, err));
    fr_buf_reset(&ss->piece);
    ss->piece_rows = 0;
    int rc = srv_send_part(ss->j, err);
    if (rc < 0) ss->gone = true;
    return rc;
}

static int on_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    sql_stream *ss = ctx;
    ss->has_rows = true;
    return fr_ipc_write_schema(schema, &ss->piece, err);
}

static int on_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    sql_stream *ss = ctx;
    int rc = FR_OK;
    if (fr_batch_num_rows(batch) > 0) {
        rc = fr_ipc_write_batch(batch, FR_COMPRESSION_NONE, &ss->piece, err);
        ss->piece_rows += fr_batch_num_rows(batch);
    }
    fr_batch_free(batch);
    FR_TRY(rc);
    if ((int64_t)ss->piece.len >= ss->part_bytes) FR_TRY(send_piece(ss, false, NULL, err));
    return FR_OK;
}

static int on_end(void *ctx, const char *message, fr_error *err)
{
    sql_stream *ss = ctx;
    if (ss->has_rows) FR_TRY(fr_ipc_write_eos(&ss->piece, err));
    FR_TRY(send_piece(ss, true, message, err));
    ss->statement++;
    ss->has_rows = false;
    return FR_OK;
}

/* The byte position of "line L, column C" in text (1-based both), or -1. */
static int64_t error_position(const char *text, size_t len, const char *msg)
{
    const char *p = strstr(msg, "line ");
    long line = 0, col = 0;
    if (!p || sscanf(p, "line %ld, column %ld", &line, &col) != 2 || line < 1 || col < 1)
        return -1;
    size_t pos = 0;
    for (long l = 1; l < line && pos < len; pos++)
        if (text[pos] == '\n') l++;
    pos += (size_t)(col - 1);
    return pos <= len ? (int64_t)pos : -1;
}

/* The index of the statement at byte `until`: the ';' before it that are not in a string,
 * a quoted name or a comment. */
static int statement_at(const char *text, size_t len, int64_t until)
{
    int n = 0;
    for (size_t i = 0; i < len && (int64_t)i < until; i++) {
        char c = text[i];
        if (c == '\'' || c == '"' || c == '`') {
            for (i++; i < len && text[i] != c; i++) {}
        } else if (c == '-' && i + 1 < len && text[i + 1] == '-') {
            while (i < len && text[i] != '\n') i++;
        } else if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); i++) {}
            i++;
        } else if (c == ';') {
            n++;
        }
    }
    return n;
}

static void respond_sql_error(srv_job *j, const fr_error *failure, int statement)
{
    Firth__Error e = FIRTH__ERROR__INIT;
    fr_rpc_error_set(&e, failure);
    e.statement = statement;
    fr_buf_reset(&j->out);
    fr_error e2;
    if (fr_rpc_write_response(&j->out, FR_RPC_ERROR, j->request_id, &e.base,
                              j->srv->opts.frame_bytes_max, &e2) < 0)
        fr_rpc_write_error(&j->out, j->request_id, FIRTH__ERROR_CODE__NONE, failure, &e2);
    j->failed = true;
}

/* Starts the session in the request's database. */
static int use_database(fr_sql_session *session, const char *db, fr_error *err)
{
    if (!db || !db[0]) return FR_OK;
    size_t n = strlen(db);
    FR_CHECK(n <= FR_RPC_NAME_BYTES_MAX, FR_EINVAL, err, "database name of %zu bytes", n);
    for (size_t i = 0; i < n; i++)
        FR_CHECK(isalnum((unsigned char)db[i]) || db[i] == '_', FR_EINVAL, err,
                 "'%s' is not a database name (letters, digits and _)", db);
    char text[FR_RPC_NAME_BYTES_MAX + 8];
    snprintf(text, sizeof text, "USE %s", db);
    return fr_sql_execute(session, text, strlen(text), NULL, err);
}

int srv_handle_execute_sql(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__ExecuteSqlRequest *req = (Firth__ExecuteSqlRequest *)j->request;
    const char *text = req->sql ? req->sql : "";
    size_t len = strlen(text);
    fr_sql_session *session = NULL;
    FR_TRY(fr_sql_session_new(s->engine, &session, err));
    sql_stream ss = {.j = j, .part_bytes = s->opts.sql_part_bytes};
    fr_buf_init(&ss.piece);
    fr_sql_sink sink = {&ss, on_begin, on_rows, on_end};
    fr_error serr = {0};
    int rc = use_database(session, req->database, &serr);
    if (rc == FR_OK) rc = fr_sql_execute(session, text, len, &sink, &serr);
    if (rc == FR_OK) {
        Firth__ExecuteSqlResponse r = FIRTH__EXECUTE_SQL_RESPONSE__INIT;
        r.statement = ss.statement;
        r.database = (char *)fr_sql_session_database(session);
        fr_buf_reset(&j->out);
        rc = srv_respond(j, FR_RPC_SUCCESS, &r.base, err);
    } else if (ss.gone) {
        j->cancelled = true; /* nobody to answer */
        rc = FR_OK;
    } else {
        int statement = ss.statement;
        if (rc == FR_ESYNTAX && statement == 0) /* nothing ran: find the bad statement */
            statement = statement_at(text, len, error_position(text, len, serr.msg));
        respond_sql_error(j, &serr, statement);
        rc = FR_OK;
    }
    fr_buf_free(&ss.piece);
    fr_sql_session_free(session);
    return rc;
}
