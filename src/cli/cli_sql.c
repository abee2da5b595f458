/* cli_sql.c — `firth sql`: runs SQL from -e, -f, piped stdin, or an interactive prompt with
 * line editing (libedit) and history, and prints each statement's result as a table, CSV or
 * JSON as firth_execute delivers it.
 *
 * Invariants: a script (-e, -f, piped stdin) stops at its first error with exit 1, and the
 * error's line and column count from the start of the script; the prompt runs the
 * statements typed so far at each ';' outside strings and comments, reports an error and
 * goes on. Results go to stdout; statement messages go to stdout in the table format and
 * to stderr otherwise, so that CSV and JSON output holds rows only. */
#include <errno.h>
#include <editline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define CLI_SQL_TEXT_BYTES_MAX (16 << 20)
#define CLI_SQL_HISTORY_LINES_MAX 1000

typedef struct sql_state {
    firth_client *client;
    cli_format format;
    FILE *msg_out;
    cli_printer *printer; /* of the statement being printed */
    bool failed;          /* printing failed inside a callback: err says why */
    fr_error err;
} sql_state;

/* ---- the sink -------------------------------------------------------------------------- */

static int sql_begin(void *ctx, const char *schema_json)
{
    sql_state *st = ctx;
    fr_schema *schema = NULL;
    cli_printer_free(st->printer);
    st->printer = NULL;
    int rc = fr_schema_from_json(schema_json, strlen(schema_json), &schema, &st->err);
    if (rc == 0) rc = cli_printer_new(st->format, schema, stdout, false, &st->printer, &st->err);
    fr_schema_free(schema);
    st->failed = rc < 0;
    return rc < 0;
}

static int sql_rows(void *ctx, firth_batch *batch)
{
    sql_state *st = ctx;
    if (!st->printer) {
        firth_batch_free(batch);
        st->failed = true;
        fr_fail(&st->err, FR_ESTATE, "result rows arrived before their schema");
        return 1;
    }
    int rc = cli_printer_rows(st->printer, batch, 0, NULL, &st->err);
    st->failed = rc < 0;
    return rc < 0;
}

static int sql_end(void *ctx, const char *message)
{
    sql_state *st = ctx;
    int rc = 0;
    if (st->printer) {
        rc = cli_printer_finish(st->printer, &st->err);
        cli_printer_free(st->printer);
        st->printer = NULL;
    }
    if (rc == 0 && message) {
        fprintf(st->msg_out, "%s\n", message);
        fflush(st->msg_out);
    }
    st->failed = rc < 0;
    return rc < 0;
}

/* Runs the statements of text; prints the error and returns CLI_EXIT_FAILED on failure. */
static int sql_run(sql_state *st, const char *text)
{
    firth_sink sink = {.ctx = st, .begin = sql_begin, .rows = sql_rows, .end = sql_end};
    firth_error ferr = {0};
    st->failed = false;
    int rc = firth_execute(st->client, text, &sink, &ferr);
    cli_printer_free(st->printer);
    st->printer = NULL;
    fflush(stdout);
    if (st->failed) {
        cli_error("%s", st->err.msg);
        return CLI_EXIT_FAILED;
    }
    if (rc < 0) {
        cli_error("%s", ferr.msg);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

/* ---- scripts --------------------------------------------------------------------------- */

/* Reads all of a stream (stdin) up to the script limit. */
static int sql_read_stream(FILE *in, fr_buf *out, fr_error *err)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        FR_CHECK(out->len + n <= CLI_SQL_TEXT_BYTES_MAX, FR_ELIMIT, err,
                 "the SQL script is longer than the limit of %d bytes", CLI_SQL_TEXT_BYTES_MAX);
        FR_TRY(fr_buf_append(out, chunk, n, err));
    }
    if (ferror(in)) return fr_fail_errno(err, errno, "reading stdin");
    return fr_buf_append(out, "", 1, err);
}

static int sql_script(sql_state *st, const char *execute, const char *file)
{
    if (execute) return sql_run(st, execute);
    fr_buf text;
    fr_buf_init(&text);
    fr_error err = {0};
    int rc;
    if (file && strcmp(file, "-") != 0) {
        uint8_t *data = NULL;
        size_t len = 0;
        rc = fr_read_file(file, CLI_SQL_TEXT_BYTES_MAX, &data, &len, &err);
        if (rc == 0) {
            rc = fr_buf_append(&text, data, len, &err);
            if (rc == 0) rc = fr_buf_append(&text, "", 1, &err);
        }
        fr_free(data);
    } else {
        rc = sql_read_stream(stdin, &text, &err);
    }
    if (rc < 0) {
        cli_error("%s", err.msg);
        rc = CLI_EXIT_FAILED;
    } else if (memchr(text.data, 0, text.len - 1)) {
        cli_error("the SQL script holds a NUL byte");
        rc = CLI_EXIT_FAILED;
    } else {
        rc = sql_run(st, (const char *)text.data);
    }
    fr_buf_free(&text);
    return rc;
}

/* ---- the prompt ------------------------------------------------------------------------ */

/* The length of the prefix of s that holds complete statements: up to and with the last ';'
 * outside quotes ('...', "...", `...`) and comments (-- to the end of the line, and
 * slash-star to star-slash). 0 when no statement is complete. */
static size_t sql_complete_prefix(const char *s, size_t n)
{
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\'' || c == '"' || c == '`') {
            /* A doubled quote inside is an escaped one: the scan just re-enters. */
            size_t j = i + 1;
            while (j < n && s[j] != c) j++;
            if (j >= n) return done;
            i = j;
        } else if (c == '-' && i + 1 < n && s[i + 1] == '-') {
            while (i < n && s[i] != '\n') i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            size_t j = i + 2;
            while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/')) j++;
            if (j + 1 >= n) return done;
            i = j + 1;
        } else if (c == ';') {
            done = i + 1;
        }
    }
    return done;
}

/* Trims leading and trailing whitespace in place; returns the start. */
static char *sql_trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

static bool sql_is_quit(const char *w)
{
    return strcmp(w, "\\q") == 0 || strcmp(w, "quit") == 0 || strcmp(w, "exit") == 0 ||
           strcmp(w, "quit;") == 0 || strcmp(w, "exit;") == 0;
}

static const char SQL_PROMPT_HELP[] =
    "Type SQL statements ending with ';'. A statement may span lines.\n"
    "  \\q, quit, exit, Ctrl-D    leave\n"
    "  Ctrl-C                    drop the statement being typed\n"
    "  help, \\h, \\?              this help\n"
    "Statements: CREATE DATABASE, CREATE TABLE, DROP, SHOW DATABASES, SHOW TABLES,\n"
    "SHOW CREATE TABLE, DESCRIBE, USE, INSERT INTO ... VALUES,\n"
    "SELECT ... FROM ... [WHERE] [LIMIT].\n"
    "Example: SELECT * FROM shop.orders WHERE price > 3 LIMIT 10;\n";

/* Drops the first n bytes of b and the whitespace after them. */
static void sql_consume_prefix(fr_buf *b, size_t n)
{
    while (n < b->len && (b->data[n] == ' ' || b->data[n] == '\t' || b->data[n] == '\n' ||
                          b->data[n] == '\r'))
        n++;
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* Ctrl-C at the prompt drops the statement being typed (readline returns NULL with this
 * flag set); while a statement runs, SIGINT has its default effect and ends the command. */
static volatile sig_atomic_t sql_interrupted;

static void sql_on_sigint(int signo)
{
    (void)signo;
    sql_interrupted = 1;
}

static void sql_sigint(bool catch_it)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = catch_it ? sql_on_sigint : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: the read under readline must end */
}

/* One line typed at the prompt. Returns 1 to leave, 0 to go on, <0 on a memory error. */
static int sql_prompt_line(sql_state *st, fr_buf *pending, char *line, fr_error *err)
{
    if (pending->len == 0) {
        char *w = sql_trim(line);
        if (sql_is_quit(w)) return 1;
        if (strcmp(w, "help") == 0 || strcmp(w, "\\h") == 0 || strcmp(w, "\\?") == 0) {
            fputs(SQL_PROMPT_HELP, stdout);
            return 0;
        }
        if (*w == 0) return 0;
        line = w;
    }
    FR_TRY(fr_buf_append(pending, line, strlen(line), err));
    FR_TRY(fr_buf_append(pending, "\n", 1, err));
    size_t done = sql_complete_prefix((const char *)pending->data, pending->len);
    if (done == 0) return 0;
    char *stmt = fr_strndup((const char *)pending->data, done);
    FR_CHECK(stmt, FR_ENOMEM, err, "out of memory");
    sql_consume_prefix(pending, done);
    sql_sigint(false);
    sql_run(st, stmt); /* an error is reported and the prompt goes on */
    sql_sigint(true);
    fr_free(stmt);
    return 0;
}

/* where: what the prompt talks to, for its greeting ("embedded" or "server HOST:PORT"). */
static int sql_prompt(sql_state *st, const char *where)
{
    char history[4096] = "";
    const char *home = getenv("HOME");
    if (home && *home) snprintf(history, sizeof history, "%s/.firth_history", home);
    using_history();
    stifle_history(CLI_SQL_HISTORY_LINES_MAX);
    if (*history) read_history(history);
    printf("firth %s (%s). Statements end with ';'. Type help for help, \\q to quit.\n",
           FIRTH_VERSION, where);
    fr_buf pending;
    fr_buf_init(&pending);
    fr_error err = {0};
    int rc = 0;
    sql_sigint(true);
    for (;;) {
        sql_interrupted = 0;
        char *line = readline(pending.len ? "    -> " : "firth> ");
        if (!line && sql_interrupted) { /* Ctrl-C: start over */
            fputs("^C\n", stdout);
            fr_buf_reset(&pending);
            continue;
        }
        if (!line) { /* Ctrl-D */
            putchar('\n');
            break;
        }
        if (*line) {
            add_history(line);
            if (*history) write_history(history);
        }
        rc = sql_prompt_line(st, &pending, line, &err);
        free(line); /* readline's allocation */
        if (rc != 0) break;
    }
    sql_sigint(false);
    fr_buf_free(&pending);
    if (rc < 0) {
        cli_error("%s", err.msg);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

/* ---- the command ----------------------------------------------------------------------- */

int cli_sql_main(int argc, char **argv)
{
    const char *data_dir = NULL, *connect = NULL, *execute = NULL, *file = NULL,
               *format_text = NULL;
    bool help = false;
    cli_config cfg = {0};
    const cli_opt opts[] = {
        {"data-dir", 0, &data_dir, NULL},
        {"connect", 0, &connect, NULL},
        {"execute", 'e', &execute, NULL},
        {"file", 'f', &file, NULL},
        {"format", 0, &format_text, NULL},
    };
    int rc = cli_parse_opts_config("sql", argc, argv, opts, sizeof opts / sizeof opts[0], &cfg,
                                   &help);
    if (rc || help) return rc;
    sql_state st = {.format = CLI_FORMAT_TABLE};
    unsigned allowed = 1u << CLI_FORMAT_TABLE | 1u << CLI_FORMAT_CSV | 1u << CLI_FORMAT_JSON;
    if (format_text && (rc = cli_format_parse("sql", format_text, allowed, &st.format)))
        return rc;
    if (execute && file) return cli_usage_error("sql", "give -e or -f, not both");
    st.msg_out = st.format == CLI_FORMAT_TABLE ? stdout : stderr;
    rc = cli_open_target("sql", data_dir, connect, &cfg, &st.client);
    if (rc) return rc;
    if (execute || file || !isatty(STDIN_FILENO))
        rc = sql_script(&st, execute, file);
    else {
        char where[300];
        snprintf(where, sizeof where, connect ? "server %s" : "embedded", connect);
        rc = sql_prompt(&st, where);
    }
    firth_close(st.client);
    return rc;
}
