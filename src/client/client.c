/* client.c — the public C API (include/firth/firth.h) over the embedded engine: opening a
 * data dir, SQL through one session, table descriptions, produce, upsert and scan, and the
 * batch wrapper with its Arrow C Data Interface export and import.
 *
 * A firth_client owns one fr_engine and one fr_sql_session. Every function converts the
 * internal fr_error into the caller's firth_error (the codes are the same numbers). The
 * engine is thread-safe; the session is used by firth_execute and, read-only, to resolve
 * "t" against the current database. */
#include "client/client_int.h"

#include <stdio.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

_Static_assert((int)FIRTH_EINVAL == (int)FR_EINVAL && (int)FIRTH_ESTATE == (int)FR_ESTATE &&
                   (int)FIRTH_ENOTFOUND == (int)FR_ENOTFOUND &&
                   (int)FIRTH_EUNSUPPORTED == (int)FR_EUNSUPPORTED,
               "public and internal error codes are the same numbers");
_Static_assert(sizeof(((firth_error *)0)->msg) == FR_ERROR_MSG_MAX,
               "public and internal error messages have the same size");
_Static_assert((int)FIRTH_OP_UPSERT == (int)FR_KV_UPSERT &&
                   (int)FIRTH_OP_DELETE == (int)FR_KV_DELETE,
               "public and internal write operations are the same numbers");
_Static_assert((int)FIRTH_CHANGE_APPEND == (int)FR_CHANGE_APPEND &&
                   (int)FIRTH_CHANGE_INSERT == (int)FR_CHANGE_INSERT &&
                   (int)FIRTH_CHANGE_UPDATE_BEFORE == (int)FR_CHANGE_UPDATE_BEFORE &&
                   (int)FIRTH_CHANGE_UPDATE_AFTER == (int)FR_CHANGE_UPDATE_AFTER &&
                   (int)FIRTH_CHANGE_DELETE == (int)FR_CHANGE_DELETE,
               "public and internal change types are the same numbers");

int fr_client_fail(firth_error *err, int code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int firth_error_from(const fr_error *in, firth_error *out)
{
    int code = in->code < 0 ? in->code : FIRTH_EINVAL;
    if (out) {
        out->code = code;
        snprintf(out->msg, sizeof out->msg, "%s", in->msg);
    }
    return code;
}

/* ---- batches --------------------------------------------------------------------------- */

firth_batch *firth_batch_wrap(fr_batch *b)
{
    firth_batch *fb = fr_malloc(sizeof *fb);
    if (fb) fb->batch = b;
    return fb;
}

const fr_batch *firth_batch_unwrap(const firth_batch *b) { return b->batch; }

int64_t firth_batch_num_rows(const firth_batch *b) { return fr_batch_num_rows(b->batch); }

void firth_batch_free(firth_batch *b)
{
    if (!b) return;
    fr_batch_free(b->batch);
    fr_free(b);
}

int firth_batch_export(const firth_batch *b, struct ArrowSchema *schema,
                       struct ArrowArray *array, firth_error *err)
{
    if (!b || !schema || !array) return fr_client_fail(err, FIRTH_EINVAL, "export: a NULL argument");
    fr_error e = {0};
    if (fr_batch_export(b->batch, schema, array, &e) < 0) return firth_error_from(&e, err);
    return FIRTH_OK;
}

int firth_batch_import(struct ArrowSchema *schema, struct ArrowArray *array,
                       firth_batch **out, firth_error *err)
{
    if (!schema || !array || !out) return fr_client_fail(err, FIRTH_EINVAL, "import: a NULL argument");
    fr_error e = {0};
    fr_batch *b = NULL;
    if (fr_batch_import(schema, array, &b, &e) < 0) return firth_error_from(&e, err);
    *out = firth_batch_wrap(b);
    if (!*out) {
        fr_batch_free(b);
        return fr_client_fail(err, FIRTH_ENOMEM, "out of memory importing a batch");
    }
    return FIRTH_OK;
}

void firth_free(void *p) { fr_free(p); }

/* ---- clients --------------------------------------------------------------------------- */

/* The data dir of a target: "file:DIR", "file:///abs/dir" or a plain path ("firth://" is
 * taken by the caller). */
static int target_dir(const char *target, const char **dir, firth_error *err)
{
    if (!target || !*target)
        return fr_client_fail(err, FIRTH_EINVAL, "no target given: use file:DIR or "
                              "firth://HOST:PORT");
    if (strncasecmp(target, "file:", 5) == 0) {
        target += 5;
        if (strncmp(target, "//", 2) == 0) target += 2; /* file:///abs -> /abs */
    } else {
        const char *scheme = strstr(target, "://");
        if (scheme && strcspn(target, "/") > (size_t)(scheme - target))
            return fr_client_fail(err, FIRTH_EUNSUPPORTED, "%s: unknown kind of target; use "
                                  "file:DIR or firth://HOST:PORT", target);
    }
    if (!*target) return fr_client_fail(err, FIRTH_EINVAL, "the target names no directory");
    *dir = target;
    return FIRTH_OK;
}

/* A configuration is the engine's options, each key checked as it is set. */
struct firth_config {
    fr_engine_options opts;
};

int firth_config_new(firth_config **out, firth_error *err)
{
    if (!out) return fr_client_fail(err, FIRTH_EINVAL, "firth_config_new: a NULL argument");
    *out = fr_calloc(1, sizeof **out);
    if (!*out) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory creating a configuration");
    fr_engine_options_default(&(*out)->opts);
    return FIRTH_OK;
}

int firth_config_set(firth_config *c, const char *key, const char *value, firth_error *err)
{
    if (!c) return fr_client_fail(err, FIRTH_EINVAL, "firth_config_set: no configuration given");
    fr_error e = {0};
    if (fr_engine_options_set(&c->opts, key, value, &e) < 0) return firth_error_from(&e, err);
    return FIRTH_OK;
}

void firth_config_free(firth_config *c) { fr_free(c); }

const char *firth_config_key(int i) { return fr_engine_option_key(i); }

int firth_open_opts(const char *target, const char *const *keys, const char *const *values,
                    int n, firth_client **out, firth_error *err)
{
    if (n < 0 || (n > 0 && (!keys || !values)))
        return fr_client_fail(err, FIRTH_EINVAL, "firth_open_opts: %d keys but no arrays", n);
    firth_config c;
    fr_engine_options_default(&c.opts);
    for (int i = 0; i < n; i++) {
        int rc = firth_config_set(&c, keys[i], values[i], err);
        if (rc < 0) return rc;
    }
    return firth_open_config(target, &c, out, err);
}

int firth_open(const char *target, firth_client **out, firth_error *err)
{
    return firth_open_config(target, NULL, out, err);
}

int firth_open_config(const char *target, const firth_config *config, firth_client **out,
                      firth_error *err)
{
    if (!out) return fr_client_fail(err, FIRTH_EINVAL, "firth_open: no result pointer");
    /* A remote client takes the configuration keys (they are checked) but they configure
     * the server, which reads its own. */
    if (target && strncasecmp(target, "firth://", 8) == 0)
        return fr_remote_open(target, target + 8, out, err);
    const char *dir = NULL;
    int rc = target_dir(target, &dir, err);
    if (rc < 0) return rc;
    firth_client *c = fr_calloc(1, sizeof *c);
    if (!c) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory opening %s", target);
    pthread_mutex_init(&c->db_mu, NULL);
    pthread_mutex_init(&c->tables_mu, NULL);
    fr_engine_options o;
    if (config) o = config->opts;
    else fr_engine_options_default(&o);
    o.data_dir = dir;
    fr_error e = {0};
    if (fr_engine_open(&o, &c->engine, &e) < 0 ||
        fr_sql_session_new(c->engine, &c->session, &e) < 0) {
        firth_close(c);
        return firth_error_from(&e, err);
    }
    *out = c;
    return FIRTH_OK;
}

void firth_close(firth_client *c)
{
    if (!c) return;
    fr_cnet_close(c->net);
    fr_free(c->target);
    fr_bufpool_free(c->encoded);
    fr_sql_session_free(c->session);
    fr_engine_close(c->engine);
    fr_ctable_cache_free(c);
    pthread_mutex_destroy(&c->db_mu);
    pthread_mutex_destroy(&c->tables_mu);
    fr_free(c);
}

fr_engine *firth_client_engine(firth_client *c) { return c->engine; }
fr_sql_session *firth_client_session(firth_client *c) { return c->session; }

/* ---- SQL ------------------------------------------------------------------------------- */

typedef struct exec_ctx {
    const firth_sink *user;
    int user_rc; /* non-zero when a callback of the user stopped execution */
} exec_ctx;

static int stopped(exec_ctx *x, int rc, fr_error *err)
{
    if (rc == 0) return 0;
    x->user_rc = rc;
    return fr_fail(err, rc < 0 ? rc : FR_ESTATE, "stopped by the caller's callback (%d)", rc);
}

static int exec_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    exec_ctx *x = ctx;
    if (!x->user->begin) return 0;
    char *json = NULL;
    FR_TRY(fr_schema_to_json(schema, &json, err));
    int rc = x->user->begin(x->user->ctx, json);
    fr_free(json);
    return stopped(x, rc, err);
}

static int exec_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    exec_ctx *x = ctx;
    if (!x->user->rows) {
        fr_batch_free(batch);
        return 0;
    }
    firth_batch *fb = firth_batch_wrap(batch);
    if (!fb) {
        fr_batch_free(batch);
        return fr_fail(err, FR_ENOMEM, "out of memory passing a result batch");
    }
    return stopped(x, x->user->rows(x->user->ctx, fb), err);
}

static int exec_end(void *ctx, const char *message, fr_error *err)
{
    exec_ctx *x = ctx;
    if (!x->user->end) return 0;
    return stopped(x, x->user->end(x->user->ctx, message), err);
}

int firth_execute(firth_client *c, const char *sql, const firth_sink *sink, firth_error *err)
{
    if (!c || !sql) return fr_client_fail(err, FIRTH_EINVAL, "execute: no client or no SQL text");
    if (c->remote) return fr_remote_execute(c, sql, sink, err);
    firth_sink none = {0};
    exec_ctx x = {.user = sink ? sink : &none};
    fr_sql_sink s = {.ctx = &x, .begin = exec_begin, .rows = exec_rows, .end = exec_end};
    fr_error e = {0};
    int rc = fr_sql_execute(c->session, sql, strlen(sql), &s, &e);
    if (x.user_rc > 0) return FIRTH_OK; /* the caller asked to stop: not an error */
    if (x.user_rc < 0) return fr_client_fail(err, x.user_rc, "execution stopped by the sink (%d)", x.user_rc);
    if (rc < 0) return firth_error_from(&e, err);
    return FIRTH_OK;
}

/* ---- tables ---------------------------------------------------------------------------- */

/* Resolves "db.t" or "t" and takes a handle on the table. */
static int open_table(firth_client *c, const char *name, fr_table **out, firth_error *err)
{
    if (!c || !name) return fr_client_fail(err, FIRTH_EINVAL, "no client or no table name");
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1];
    fr_error e = {0};
    if (fr_sql_resolve_table(c->session, name, db, sizeof db, t, sizeof t, &e) < 0 ||
        fr_engine_get_table(c->engine, db, t, out, &e) < 0)
        return firth_error_from(&e, err);
    return FIRTH_OK;
}

int firth_table_info(firth_client *c, const char *table, char **json, firth_error *err)
{
    if (c && c->remote && table && json) return fr_remote_table_info(c, table, json, err);
    fr_table *t = NULL;
    int rc = open_table(c, table, &t, err);
    if (rc < 0) return rc;
    fr_error e = {0};
    rc = fr_table_to_json(t, json, &e);
    fr_table_release(t);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

static int target_columns(const char *table, const fr_schema *s, const char *text, int *cols,
                          int *n, fr_error *err);

/* One attempt of remote_write on t; *untouched says whether a failure left the table as
 * it was (see fr_remote_write). */
static int remote_write_on(fr_ctable *t, const fr_batch *b, const uint8_t *ops,
                           const char *targets_text, bool put, int64_t writer_id, int32_t seq,
                           int64_t *count, bool *untouched, fr_error *e)
{
    *untouched = true;
    if (put && t->npk == 0)
        return fr_fail(e, FR_EINVAL, "table %s has no primary key: append to it instead",
                       t->qname);
    if (!put && t->npk > 0)
        return fr_fail(e, FR_EINVAL, "table %s has a primary key: upsert into it instead",
                       t->qname);
    int *targets = NULL, ntargets = 0, rc = FR_OK;
    if (targets_text) {
        int nf = fr_schema_num_fields(t->schema);
        targets = fr_calloc((size_t)nf + 1, sizeof *targets);
        rc = targets ? target_columns(t->qname, t->schema, targets_text, targets, &ntargets, e)
                     : fr_fail(e, FR_ENOMEM, "out of memory for target columns");
        if (ntargets == nf) ntargets = 0;
    }
    if (rc == 0)
        rc = fr_remote_write(t, b, ops, targets, ntargets, writer_id, seq, count, untouched, e);
    fr_free(targets);
    return rc;
}

/* firth_produce and firth_upsert for a remote client. The table's description may come
 * from the client's cache: when a call on a cached one fails without touching the table
 * (the table was dropped and created again, with other columns or keys perhaps), it is
 * tried once more on a fresh one. */
static int remote_write(firth_client *c, const char *table, const fr_batch *b,
                        const uint8_t *ops, const char *targets_text, bool put,
                        int64_t writer_id, int32_t seq, int64_t *count, firth_error *err)
{
    fr_error e = {0};
    int rc = FR_OK;
    for (bool fresh = false;; fresh = true) {
        fr_ctable *t = NULL;
        bool cached = false, untouched = false;
        rc = fr_ctable_get(c, table, fresh, &t, &cached, &e);
        if (rc == 0)
            rc = remote_write_on(t, b, ops, targets_text, put, writer_id, seq, count,
                                 &untouched, &e);
        if (rc < 0 && t) fr_ctable_forget(t);
        fr_ctable_put(t);
        if (rc == 0 || !cached || !untouched) break;
        e = (fr_error){0};
    }
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

int firth_produce(firth_client *c, const char *table, const firth_batch *batch,
                  int64_t writer_id, int32_t seq, int64_t *appended, firth_error *err)
{
    int64_t sink = 0;
    if (!appended) appended = &sink;
    *appended = 0;
    if (!batch) return fr_client_fail(err, FIRTH_EINVAL, "produce: no batch");
    if (c && c->remote) return remote_write(c, table, batch->batch, NULL, NULL, false,
                                            writer_id, seq, appended, err);
    fr_table *t = NULL;
    int rc = open_table(c, table, &t, err);
    if (rc < 0) return rc;
    fr_error e = {0};
    rc = fr_table_append(t, batch->batch, writer_id < 0 ? FR_NO_WRITER : writer_id,
                         writer_id < 0 ? -1 : seq, appended, &e);
    fr_table_release(t);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

/* ---- primary-key tables ---------------------------------------------------------------- */

int firth_table_is_pk(firth_client *c, const char *table, bool *is_pk, firth_error *err)
{
    if (!is_pk) return fr_client_fail(err, FIRTH_EINVAL, "table_is_pk: no result pointer");
    if (c && c->remote && table) {
        fr_ctable *ct = NULL;
        fr_error e = {0};
        if (fr_ctable_open(c, table, &ct, &e) < 0) return firth_error_from(&e, err);
        *is_pk = ct->npk > 0;
        fr_ctable_free(ct);
        return FIRTH_OK;
    }
    fr_table *t = NULL;
    int rc = open_table(c, table, &t, err);
    if (rc < 0) return rc;
    *is_pk = fr_table_is_pk(t);
    fr_table_release(t);
    return FIRTH_OK;
}

const char *firth_change_name(int change)
{
    if (change < FIRTH_CHANGE_APPEND || change > FIRTH_CHANGE_DELETE) return "?";
    return fr_change_type_name((fr_change_type)change);
}

/* Resolves "a, b" to column indexes of schema, ascending. */
static int target_columns(const char *table, const fr_schema *s, const char *text, int *cols,
                          int *n, fr_error *err)
{
    int nf = fr_schema_num_fields(s);
    bool *named = fr_calloc((size_t)nf + 1, sizeof *named);
    FR_CHECK(named, FR_ENOMEM, err, "out of memory for target columns");
    int rc = FR_OK;
    *n = 0;
    for (const char *p = text; rc == FR_OK;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        char name[FR_NAME_BYTES_MAX + 1];
        size_t len = (size_t)(e - p);
        if (len == 0 || len > FR_NAME_BYTES_MAX) {
            rc = fr_fail(err, FR_EINVAL, "target columns '%.100s': an empty or too long name",
                         text);
            break;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        int col = fr_schema_find(s, name);
        if (col < 0)
            rc = fr_fail(err, FR_EINVAL, "table %s has no column '%s'", table, name);
        else if (named[col])
            rc = fr_fail(err, FR_EINVAL, "target column '%s' is named twice", name);
        else
            named[col] = true;
        if (!comma) break;
        p = comma + 1;
    }
    for (int i = 0; rc == FR_OK && i < nf; i++)
        if (named[i]) cols[(*n)++] = i;
    fr_free(named);
    return rc;
}

int firth_upsert(firth_client *c, const char *table, const firth_batch *batch,
                 const uint8_t *ops, const char *target_text, int64_t writer_id, int32_t seq,
                 int64_t *changed, firth_error *err)
{
    int64_t ignored = 0;
    if (!changed) changed = &ignored;
    *changed = 0;
    if (!batch) return fr_client_fail(err, FIRTH_EINVAL, "upsert: no batch");
    if (c && c->remote) return remote_write(c, table, batch->batch, ops, target_text, true,
                                            writer_id, seq, changed, err);
    fr_table *t = NULL;
    int rc = open_table(c, table, &t, err);
    if (rc < 0) return rc;
    const fr_schema *s = fr_table_schema(t);
    int *targets = NULL, ntargets = 0;
    fr_error e = {0};
    if (target_text) {
        targets = fr_calloc((size_t)fr_schema_num_fields(s) + 1, sizeof *targets);
        rc = targets ? target_columns(table, s, target_text, targets, &ntargets, &e)
                     : fr_fail(&e, FR_ENOMEM, "out of memory for target columns");
    }
    if (ntargets == fr_schema_num_fields(s)) ntargets = 0; /* every column: whole rows */
    if (rc == 0)
        rc = fr_table_put(t, batch->batch, ops, ntargets ? targets : NULL, ntargets,
                          writer_id < 0 ? FR_NO_WRITER : writer_id, writer_id < 0 ? -1 : seq,
                          changed, &e);
    fr_free(targets);
    fr_table_release(t);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

int64_t fr_client_random_writer_id(void)
{
    /* Ids only need to differ between writers of one table; the clock and the process id
     * mixed with a per-process counter are enough where getrandom is missing. */
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
        static _Atomic uint64_t counter;
        v = (uint64_t)fr_now_ms() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid() << 20 ^
            atomic_fetch_add(&counter, 1);
    }
    return (int64_t)(v >> 1);
}
