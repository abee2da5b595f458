/* benchkit.c — the shared parts of the benchmark programs (see benchkit.h): the benchmark
 * table, scratch engines, statistics, file sizes and result files. Nothing here is timed;
 * the programs time only the calls they measure. */
#include "benchkit.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void bk_rng_seed(bk_rng *r, uint64_t seed)
{
    /* A zero state would stay zero forever. */
    r->state = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint64_t bk_rng_next(bk_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static const fr_type_id bk_type_of_group[4] = {FR_T_INT, FR_T_BIGINT, FR_T_DOUBLE, FR_T_STRING};
static const char bk_prefix_of_group[4] = {'i', 'b', 'd', 's'};

int bk_schema_new(fr_schema **out, fr_error *err)
{
    fr_field fields[BK_COLUMNS];
    char names[BK_COLUMNS][4];
    for (int i = 0; i < BK_COLUMNS; i++) {
        int group = i / 5;
        snprintf(names[i], sizeof names[i], "%c%d", bk_prefix_of_group[group], i % 5);
        fields[i].name = names[i];
        fields[i].type = fr_type_of(bk_type_of_group[group]);
    }
    return fr_schema_new(fields, BK_COLUMNS, 0, out, err);
}

/* Appends one random cell of column col. The builder's generic append converts the value to
 * the column's type, which costs a little but keeps this independent of the typed fast
 * paths' conventions; building is never timed. */
static int bk_append_cell(fr_builder *bld, int col, bk_rng *rng, fr_error *err)
{
    fr_type_id id = bk_type_of_group[col / 5];
    fr_value v;
    uint8_t text[BK_STRING_BYTES_MAX];
    uint64_t x = bk_rng_next(rng);
    switch (id) {
    case FR_T_INT:
        v = fr_value_int(fr_type_of(FR_T_INT), (int32_t)x);
        break;
    case FR_T_BIGINT:
        v = fr_value_int(fr_type_of(FR_T_BIGINT), (int64_t)(x >> 1));
        break;
    case FR_T_DOUBLE:
        v = fr_value_double(fr_type_of(FR_T_DOUBLE), (double)(x >> 11) / 1048576.0);
        break;
    default: {
        size_t n = BK_STRING_BYTES_MIN + x % (BK_STRING_BYTES_MAX - BK_STRING_BYTES_MIN + 1);
        for (size_t i = 0; i < n; i++) text[i] = (uint8_t)(0x20 + bk_rng_next(rng) % 95);
        v = fr_value_str(fr_type_of(FR_T_STRING), text, n);
        break;
    }
    }
    return fr_builder_append(bld, col, &v, err);
}

int bk_batch_random(fr_builder *bld, int64_t rows, bk_rng *rng, fr_batch **out, fr_error *err)
{
    for (int64_t r = 0; r < rows; r++)
        for (int c = 0; c < BK_COLUMNS; c++) FR_TRY(bk_append_cell(bld, c, rng, err));
    return fr_builder_finish(bld, out, err);
}

int bk_distinct_batches(int64_t seed, int64_t batch_rows, fr_batch **out, fr_error *err)
{
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)seed);
    int rc;
    for (int i = 0; i < BK_DISTINCT; i++) out[i] = NULL;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    for (int i = 0; i < BK_DISTINCT; i++)
        FR_GOTO(bk_batch_random(bld, batch_rows, &rng, &out[i], err));
fail:
    if (rc < 0)
        for (int i = 0; i < BK_DISTINCT; i++) {
            if (out[i]) fr_batch_free(out[i]);
            out[i] = NULL;
        }
    if (bld) fr_builder_free(bld);
    if (schema) fr_schema_free(schema);
    return rc;
}

int bk_load_batch(fr_batch *const *distinct, int64_t batch_rows, int64_t rows, int64_t i,
                  fr_batch **out, bool *owned, int64_t *n, fr_error *err)
{
    int64_t left = rows - i * batch_rows;
    *n = left <= 0 ? 0 : left < batch_rows ? left : batch_rows;
    *owned = false;
    *out = distinct[i % BK_DISTINCT];
    if (*n == 0 || *n == batch_rows) return 0;
    *owned = true;
    return fr_batch_slice(distinct[i % BK_DISTINCT], 0, *n, out, err);
}

int bk_random_load_open(int64_t seed, int64_t rows, int64_t batch_rows, bk_random_load *out,
                        fr_error *err)
{
    *out = (bk_random_load){.rows = rows, .batch_rows = batch_rows};
    bk_rng_seed(&out->rng, (uint64_t)seed);
    FR_TRY(bk_schema_new(&out->schema, err));
    return fr_builder_new(out->schema, &out->bld, err);
}

int bk_random_load_next(bk_random_load *l, fr_batch **out, fr_error *err)
{
    *out = NULL;
    int64_t left = l->rows - l->done;
    if (left <= 0) return 0;
    int64_t n = left < l->batch_rows ? left : l->batch_rows;
    FR_TRY(bk_batch_random(l->bld, n, &l->rng, out, err));
    l->done += n;
    return 0;
}

void bk_random_load_close(bk_random_load *l)
{
    if (l->bld) fr_builder_free(l->bld);
    if (l->schema) fr_schema_free(l->schema);
    l->bld = NULL;
    l->schema = NULL;
}

int bk_batch_head(const fr_batch *b, int64_t n, fr_batch **out, fr_error *err)
{
    if (n != fr_batch_num_rows(b)) return fr_batch_slice(b, 0, n, out, err);
    int cols[BK_COLUMNS + 1];
    int ncols = fr_batch_num_columns(b);
    FR_CHECK(ncols <= BK_COLUMNS, FR_ELIMIT, err, "a batch of %d columns", ncols);
    for (int i = 0; i < ncols; i++) cols[i] = i;
    return fr_batch_project(b, cols, ncols, out, err);
}

int64_t bk_batch_logical_bytes(const fr_batch *b, const int *cols, int ncols)
{
    int n = cols ? ncols : fr_batch_num_columns(b);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const fr_column *c = fr_batch_column(b, cols ? cols[i] : i);
        if (fr_type_is_varwidth(&c->type))
            total += c->offsets[c->length] - c->offsets[0];
        else
            total += (int64_t)fr_type_width(&c->type) * c->length;
    }
    return total;
}

int bk_engine_open(const char *data_dir, fr_flush_mode flush, fr_engine **out, fr_error *err)
{
    FR_TRY(fr_remove_tree(data_dir, err));
    FR_TRY(fr_mkdirs(data_dir, err));
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = data_dir;
    o.flush = flush;
    return fr_engine_open(&o, out, err);
}

int bk_table_create(fr_engine *e, const char *name, const fr_schema *schema,
                    const char *compression, fr_table **out, fr_error *err)
{
    const fr_option options[] = {
        {"bucket.num", "1"},
        {"table.log.arrow.compression.type", compression},
    };
    fr_table_spec spec = {
        .db = "bench", .name = name, .schema = schema, .options = options, .noptions = 2,
    };
    FR_TRY(fr_engine_create_database(e, "bench", true, err));
    FR_TRY(fr_engine_create_table(e, &spec, false, err));
    return fr_engine_get_table(e, "bench", name, out, err);
}

int64_t bk_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bk_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int bk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bk_median(double *v, int n)
{
    assert(n >= 1);
    qsort(v, (size_t)n, sizeof *v, bk_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bk_quantile(double *v, int n, double q)
{
    assert(n >= 1 && q >= 0 && q <= 1);
    qsort(v, (size_t)n, sizeof *v, bk_cmp_double);
    int rank = (int)(q * n + 0.999999);
    if (rank < 1) rank = 1;
    return v[rank - 1];
}

/* nftw offers no context pointer; the walks are single-threaded, so a file-level sum is
 * enough. */
static int64_t bk_walk_sum;
static bool bk_walk_blocks;

static int bk_walk_fn(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (type == FTW_F) bk_walk_sum += bk_walk_blocks ? (int64_t)st->st_blocks * 512 : st->st_size;
    return 0;
}

static int64_t bk_tree_sum(const char *path, bool blocks)
{
    bk_walk_sum = 0;
    bk_walk_blocks = blocks;
    if (nftw(path, bk_walk_fn, 16, FTW_PHYS) != 0) return -1;
    return bk_walk_sum;
}

int64_t bk_tree_disk_bytes(const char *path) { return bk_tree_sum(path, true); }
int64_t bk_tree_file_bytes(const char *path) { return bk_tree_sum(path, false); }

int bk_path(char *out, size_t cap, const char *dir, const char *name, fr_error *err)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    FR_CHECK(n >= 0 && (size_t)n < cap, FR_ELIMIT, err, "path %s/%s is longer than %zu bytes",
             dir, name, cap - 1);
    return 0;
}

int bk_arg_i64(const char *name, const char *value, int64_t lo, int64_t hi, int64_t *out,
               fr_error *err)
{
    FR_CHECK(value, FR_EINVAL, err, "%s needs a value", name);
    FR_TRY(fr_parse_i64(value, out, err));
    FR_CHECK(*out >= lo && *out <= hi, FR_ERANGE, err, "%s %s is outside %lld..%lld", name,
             value, (long long)lo, (long long)hi);
    return 0;
}

const char *bk_verdict(const bk_target *t)
{
    bool pass = t->lower_is_better ? t->figure <= t->target : t->figure >= t->target;
    return pass ? "PASS" : "MISS";
}

json_t *bk_target_json(const bk_target *t)
{
    return json_pack("{s:s, s:s, s:f, s:f, s:s, s:s}", "name", t->name, "what", t->what,
                     "figure", t->figure, "target", t->target, "better",
                     t->lower_is_better ? "lower" : "higher", "status", bk_verdict(t));
}

int bk_json_write(json_t *doc, const char *path, fr_error *err)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    FR_CHECK(text, FR_ENOMEM, err, "cannot format the results for %s", path);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(text); /* jansson allocates with malloc */
        return fr_fail_errno(err, errno, "open %s", path);
    }
    int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    free(text);
    FR_CHECK(!bad, FR_EIO, err, "write %s failed", path);
    return 0;
}

json_t *bk_host_json(void)
{
    struct utsname u;
    const char *kernel = uname(&u) == 0 ? u.release : "unknown";
    return json_pack("{s:I, s:s}", "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "kernel",
                     kernel);
}

json_t *bk_json_read(const char *path, fr_error *err)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) fr_fail(err, FR_EIO, "cannot read %s: %s", path, jerr.text);
    return doc;
}

double bk_json_number(json_t *doc, const char *path)
{
    json_t *v = doc;
    char part[128];
    for (const char *p = path; v && *p;) {
        size_t n = strcspn(p, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        v = json_object_get(v, part);
        p += n + (p[n] == '.');
    }
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* Parses dd's last report line, "N bytes (...) copied, S s, R MB/s", into bytes and
 * seconds (more digits than its rounded rate) and keeps the rate as dd printed it. */
static int bk_parse_dd(const char *text, double *mb_s, char *rate, size_t rate_cap,
                       fr_error *err)
{
    const char *line = strstr(text, " bytes");
    while (line && line > text && line[-1] != '\n') line--;
    FR_CHECK(line, FR_EINVAL, err, "cannot find the byte count in dd's report: %.200s", text);
    char *end;
    double bytes = strtod(line, &end);
    const char *copied = strstr(line, "copied, ");
    FR_CHECK(end != line && copied, FR_EINVAL, err, "cannot parse dd's report: %.200s", text);
    double secs = strtod(copied + 8, &end);
    FR_CHECK(end != copied + 8 && secs > 0, FR_EINVAL, err, "cannot parse dd's time: %.200s",
             copied);
    *mb_s = bytes / secs / 1e6;
    const char *r = strstr(end, ", ");
    snprintf(rate, rate_cap, "%.*s", r ? (int)strcspn(r + 2, "\n") : 0, r ? r + 2 : "");
    return 0;
}

/* Runs dd with stderr captured through a pipe; text receives what it printed. */
static int bk_spawn_dd(char *const argv[], char *text, size_t cap, fr_error *err)
{
    int fds[2];
    if (pipe(fds) != 0) return fr_fail_errno(err, errno, "pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int src = posix_spawnp(&pid, "dd", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (src != 0) {
        close(fds[0]);
        return fr_fail_errno(err, src, "cannot run dd");
    }
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], text + len, cap - 1 - len)) > 0) len += (size_t)n;
    text[len] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    FR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, FR_EIO, err, "dd failed: %.200s",
             text);
    return 0;
}

int bk_run_dd(const char *dir, int64_t mib, double *mb_s, char *rate, size_t rate_cap,
              fr_error *err)
{
    char file[4096], of[4200], count[32], text[4096];
    FR_TRY(bk_path(file, sizeof file, dir, "dd.tmp", err));
    setenv("LC_ALL", "C", 1); /* dd's report must use '.' decimals to parse */
    snprintf(of, sizeof of, "of=%s", file);
    snprintf(count, sizeof count, "count=%lld", (long long)mib);
    char *argv[] = {"dd", "if=/dev/zero", of, "bs=1M", count, "conv=fdatasync", NULL};
    int rc = bk_spawn_dd(argv, text, sizeof text, err);
    unlink(file);
    FR_TRY(rc);
    return bk_parse_dd(text, mb_s, rate, rate_cap, err);
}

int bk_text_rows_build(const fr_batch *b, bk_text_rows *out, fr_error *err)
{
    int64_t n = fr_batch_num_rows(b);
    size_t cap = (size_t)n * (BK_COLUMNS * 32 + 5 * BK_STRING_BYTES_MAX), len = 0;
    *out = (bk_text_rows){.n = n};
    out->text = fr_malloc(cap);
    out->off = fr_malloc(sizeof *out->off * (size_t)(n * BK_COLUMNS + 1));
    out->len = fr_malloc(sizeof *out->len * (size_t)(n * BK_COLUMNS + 1));
    if (!out->text || !out->off || !out->len) {
        bk_text_rows_free(out);
        return fr_fail(err, FR_ENOMEM, "out of memory for %lld rows as text", (long long)n);
    }
    for (int64_t r = 0; r < n; r++)
        for (int c = 0; c < BK_COLUMNS; c++) {
            const fr_column *col = fr_batch_column(b, c);
            fr_value v;
            fr_column_get(col, r, &v);
            size_t at = len;
            if (col->type.id == FR_T_STRING) {
                memcpy(out->text + len, v.v.s.ptr, v.v.s.len);
                len += v.v.s.len;
                out->text[len] = 0;
            } else if (col->type.id == FR_T_DOUBLE) {
                len += (size_t)snprintf(out->text + len, cap - len, "%.17g", v.v.f);
            } else {
                len += (size_t)snprintf(out->text + len, cap - len, "%lld", (long long)v.v.i);
            }
            out->off[r * BK_COLUMNS + c] = at;
            out->len[r * BK_COLUMNS + c] = len - at;
            len++; /* the terminator */
        }
    return 0;
}

void bk_text_rows_free(bk_text_rows *r)
{
    fr_free(r->text);
    fr_free(r->off);
    fr_free(r->len);
    *r = (bk_text_rows){0};
}

const char *bk_column_name(int i)
{
    static const char *names[BK_COLUMNS] = {"i0", "i1", "i2", "i3", "i4", "b0", "b1",
                                            "b2", "b3", "b4", "d0", "d1", "d2", "d3",
                                            "d4", "s0", "s1", "s2", "s3", "s4"};
    return i >= 0 && i < BK_COLUMNS ? names[i] : "?";
}

int bk_run_duckdb_peer(const char *node, const char *script, const char *input,
                       const int *cols, int ncols, const char *extra, fr_error *err)
{
    char names[512] = "", cmd[8192];
    size_t used = 0;
    for (int i = 0; i < ncols && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? "," : "",
                                 bk_column_name(cols[i]));
    int n = snprintf(cmd, sizeof cmd, "'%s' '%s' --input '%s' --columns '%s' %s", node, script,
                     input, names, extra);
    FR_CHECK(n > 0 && (size_t)n < sizeof cmd, FR_ELIMIT, err, "the peer's command is too long");
    fflush(stdout);
    int status = system(cmd);
    FR_CHECK(status == 0, FR_EIO, err, "the DuckDB peer failed (status %d): %s", status, cmd);
    return 0;
}

void bk_spread_columns(int k, int *cols)
{
    for (int i = 0; i < k; i++) cols[i] = i * BK_COLUMNS / k;
}

void bk_columns_text(const int *cols, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len < cap; i++) {
        int w = snprintf(out + len, cap - len, "%s%s", i ? ", " : "", bk_column_name(cols[i]));
        if (w < 0) break;
        len += (size_t)w;
    }
}

int bk_firth_fail(const firth_error *fe, const char *what, fr_error *err)
{
    int code = fe->code < 0 ? fe->code : FR_EIO;
    return fr_fail(err, code, "%s: %s", what, fe->msg);
}

int bk_connect(const char *hostport, firth_client **out, fr_error *err)
{
    char target[512];
    firth_error fe = {0};
    snprintf(target, sizeof target, "firth://%s", hostport);
    if (firth_open(target, out, &fe) != 0) return bk_firth_fail(&fe, target, err);
    return 0;
}

/* The benchmark table's columns as firth_create_table's JSON. */
static void bk_schema_json(int key_col, char *out, size_t cap)
{
    static const char *types[4] = {"INT", "BIGINT", "DOUBLE", "STRING"};
    size_t len = (size_t)snprintf(out, cap, "{\"fields\": [");
    for (int i = 0; i < BK_COLUMNS && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"name\": \"%s\", \"type\": \"%s\", \"nullable\": %s}",
                                i ? ", " : "", bk_column_name(i), types[i / 5],
                                i == key_col ? "false" : "true");
    if (len < cap) snprintf(out + len, cap - len, "]}");
}

int bk_remote_table_create(firth_client *c, const char *db, const char *name, int key_col,
                           int buckets, const char *compression, const char *const *extra,
                           int nextra, fr_error *err)
{
    char qname[256], schema[2048], nbuckets[16];
    char keybuf[BK_TABLE_OPTIONS_MAX][128];
    const char *keys[BK_TABLE_OPTIONS_MAX + 2] = {"bucket.num", "table.log.arrow.compression.type"};
    const char *values[BK_TABLE_OPTIONS_MAX + 2] = {nbuckets, compression};
    firth_error fe = {0};
    FR_CHECK(nextra <= BK_TABLE_OPTIONS_MAX, FR_ELIMIT, err, "at most %d table options",
             BK_TABLE_OPTIONS_MAX);
    for (int i = 0; i < nextra; i++) {
        const char *eq = strchr(extra[i], '=');
        FR_CHECK(eq && eq > extra[i] && (size_t)(eq - extra[i]) < sizeof keybuf[i], FR_EINVAL,
                 err, "table option %s is not KEY=VALUE", extra[i]);
        snprintf(keybuf[i], sizeof keybuf[i], "%.*s", (int)(eq - extra[i]), extra[i]);
        keys[2 + i] = keybuf[i];
        values[2 + i] = eq + 1;
    }
    snprintf(qname, sizeof qname, "%s.%s", db, name);
    snprintf(nbuckets, sizeof nbuckets, "%d", buckets);
    bk_schema_json(key_col, schema, sizeof schema);
    firth_table_def def = {
        .table = qname, .schema_json = schema,
        .primary_key = key_col >= 0 ? bk_column_name(key_col) : NULL,
        .option_keys = keys, .option_values = values, .noptions = 2 + nextra,
    };
    if (firth_create_database(c, db, true, &fe) != 0) return bk_firth_fail(&fe, db, err);
    if (firth_drop_table(c, qname, true, &fe) != 0) return bk_firth_fail(&fe, qname, err);
    if (firth_create_table(c, &def, &fe) != 0) return bk_firth_fail(&fe, qname, err);
    return 0;
}

int64_t bk_pid_cpu_ns(pid_t pid)
{
    if (pid <= 0) return -1;
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    /* The command name may hold spaces; the fields after its closing parenthesis are
     * state (3), ..., utime (14), stime (15). */
    const char *p = strrchr(text, ')');
    if (!p) return -1;
    unsigned long long utime = 0, stime = 0;
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (int64_t)((utime + stime) * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100)));
}

void bk_sleep_until(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) continue;
}

/* One writer of bk_fsync_paced: its file, its schedule, and the latency of each batch. */
typedef struct paced_writer {
    const char *dir;
    int index;
    size_t bytes;
    int64_t start_ns, period_ns, end_ns;
    double *ms;   /* one per batch due before end_ns */
    int n, cap;
    int status;   /* 0, or an errno */
} paced_writer;

/* When batch i of pw is due. */
static int64_t paced_due(const paced_writer *pw, int64_t i)
{
    return pw->start_ns + i * pw->period_ns;
}

static void *paced_main(void *arg)
{
    paced_writer *pw = arg;
    char name[32], file[4096];
    fr_error err = {0};
    snprintf(name, sizeof name, "fsync-%d.tmp", pw->index);
    uint8_t *buf = fr_calloc(1, pw->bytes + 1);
    int fd = buf && bk_path(file, sizeof file, pw->dir, name, &err) == 0
                 ? open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644)
                 : -1;
    pw->status = !buf ? ENOMEM : fd < 0 ? (errno ? errno : EINVAL) : 0;
    for (int64_t next = 0; pw->status == 0 && pw->n < pw->cap;) {
        if (paced_due(pw, next) >= pw->end_ns) break;
        bk_sleep_until(paced_due(pw, next));
        /* Behind schedule, every batch due goes in this round, under one fdatasync. */
        int64_t now = fr_monotonic_ns(), k = 0;
        while (pw->n + k < pw->cap && paced_due(pw, next + k) <= now &&
               paced_due(pw, next + k) < pw->end_ns)
            k++;
        for (int64_t i = 0; i < k && pw->status == 0; i++)
            if (write(fd, buf, pw->bytes) != (ssize_t)pw->bytes) pw->status = errno ? errno : EIO;
        if (pw->status == 0 && fdatasync(fd) != 0) pw->status = errno;
        int64_t done = fr_monotonic_ns();
        for (int64_t i = 0; i < k; i++)
            pw->ms[pw->n++] = (double)(done - paced_due(pw, next + i)) / 1e6;
        next += k;
    }
    if (fd >= 0) {
        close(fd);
        unlink(file);
    }
    fr_free(buf);
    return NULL;
}

int bk_fsync_paced(const char *dir, size_t bytes, int writers, double rate_mb_s,
                   double seconds, double *p50, double *p99, fr_error *err)
{
    FR_CHECK(writers >= 1 && writers <= BK_PACED_WRITERS_MAX && rate_mb_s > 0 && seconds > 0,
             FR_EINVAL, err, "a paced disk probe needs 1 to %d writers and a rate",
             BK_PACED_WRITERS_MAX);
    paced_writer pw[BK_PACED_WRITERS_MAX];
    pthread_t tid[BK_PACED_WRITERS_MAX];
    int64_t period = (int64_t)((double)writers * (double)bytes / (rate_mb_s * 1e6) * 1e9);
    int64_t start = fr_monotonic_ns() + 10000000, end = start + (int64_t)(seconds * 1e9);
    int64_t due = (end - start) / (period > 0 ? period : 1) + 2;
    FR_CHECK(due * writers <= BK_PACED_CALLS_MAX, FR_ELIMIT, err,
             "a paced disk probe of %lld calls is too many: lower the rate or the time",
             (long long)(due * writers));
    int cap = (int)due, started = 0, n = 0;
    int rc = 0;
    double *all = fr_calloc((size_t)cap * (size_t)writers + 1, sizeof *all);
    if (!all) return fr_fail(err, FR_ENOMEM, "out of memory for the disk probe");
    for (int i = 0; i < writers && rc == 0; i++) {
        pw[i] = (paced_writer){.dir = dir, .index = i, .bytes = bytes, .start_ns = start,
                               .period_ns = period > 0 ? period : 1, .end_ns = end,
                               .ms = all + (size_t)i * (size_t)cap, .cap = cap};
        if (pthread_create(&tid[i], NULL, paced_main, &pw[i]) != 0)
            rc = fr_fail(err, FR_ESTATE, "cannot start a disk probe thread");
        else started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        if (rc == 0 && pw[i].status != 0)
            rc = fr_fail_errno(err, pw[i].status, "the disk probe in %s", dir);
        /* Close the gaps between the writers' figures, for the quantiles. */
        memmove(all + n, pw[i].ms, (size_t)pw[i].n * sizeof *all);
        n += pw[i].n;
    }
    if (rc == 0 && n == 0) rc = fr_fail(err, FR_ESTATE, "the disk probe wrote nothing");
    if (rc == 0) {
        *p50 = bk_quantile(all, n, 0.50);
        *p99 = bk_quantile(all, n, 0.99);
    }
    fr_free(all);
    return rc;
}

/* One neighbor thread: busy busy_ns, then asleep until its next period, until stopped. */
typedef struct bk_neighbor {
    pthread_t tid;
    int64_t busy_ns, period_ns;
    atomic_bool *stop;
} bk_neighbor;

struct bk_neighbors {
    atomic_bool stop;
    int n;
    bk_neighbor t[];
};

static void *neighbor_main(void *arg)
{
    bk_neighbor *nb = arg;
    for (int64_t next = fr_monotonic_ns(); !atomic_load(nb->stop);) {
        while (fr_monotonic_ns() - next < nb->busy_ns) continue;
        next += nb->period_ns;
        bk_sleep_until(next);
    }
    return NULL;
}

int bk_neighbors_start(int n, int64_t busy_us, int64_t period_us, bk_neighbors **out,
                       fr_error *err)
{
    FR_CHECK(n >= 1 && n <= 256 && busy_us >= 0 && period_us > busy_us, FR_EINVAL, err,
             "neighbors: 1 to 256 threads, each busy for less than its period");
    bk_neighbors *nbs = fr_calloc(1, sizeof *nbs + (size_t)n * sizeof nbs->t[0]);
    FR_CHECK(nbs, FR_ENOMEM, err, "out of memory for the neighbor threads");
    atomic_init(&nbs->stop, false);
    for (int i = 0; i < n; i++) {
        nbs->t[i] = (bk_neighbor){.busy_ns = busy_us * 1000, .period_ns = period_us * 1000,
                                  .stop = &nbs->stop};
        if (pthread_create(&nbs->t[i].tid, NULL, neighbor_main, &nbs->t[i]) != 0) {
            bk_neighbors_stop(nbs);
            return fr_fail(err, FR_ESTATE, "cannot start a neighbor thread");
        }
        nbs->n++;
    }
    *out = nbs;
    return 0;
}

void bk_neighbors_stop(bk_neighbors *nbs)
{
    if (!nbs) return;
    atomic_store(&nbs->stop, true);
    for (int i = 0; i < nbs->n; i++) pthread_join(nbs->t[i].tid, NULL);
    fr_free(nbs);
}

int64_t bk_context_switches(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    char line[256];
    long long v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "ctxt %lld", &v) == 1) break;
    fclose(f);
    return v;
}

int bk_http_get(const char *hostport, const char *path, char **out, fr_error *err)
{
    *out = NULL;
    char host[256];
    const char *colon = strrchr(hostport, ':');
    FR_CHECK(colon && (size_t)(colon - hostport) < sizeof host, FR_EINVAL, err,
             "an HTTP address must be HOST:PORT, not '%s'", hostport);
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int g = getaddrinfo(host, colon + 1, &hints, &ai);
    FR_CHECK(g == 0, FR_EIO, err, "cannot resolve %s: %s", hostport, gai_strerror(g));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0
                 ? FR_OK
                 : fr_fail_errno(err, errno, "cannot connect to %s", hostport);
    freeaddrinfo(ai);
    fr_buf b;
    fr_buf_init(&b);
    if (rc == FR_OK) rc = fr_buf_printf(&b, err, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path,
                                        hostport);
    if (rc == FR_OK && write(fd, b.data, b.len) != (ssize_t)b.len)
        rc = fr_fail_errno(err, errno, "cannot send to %s", hostport);
    fr_buf_reset(&b);
    char chunk[16384];
    ssize_t k = 0;
    while (rc == FR_OK && (k = read(fd, chunk, sizeof chunk)) > 0)
        rc = fr_buf_append(&b, chunk, (size_t)k, err);
    if (rc == FR_OK && k < 0) rc = fr_fail_errno(err, errno, "cannot read from %s", hostport);
    if (rc == FR_OK) rc = fr_buf_append(&b, "", 1, err);
    if (fd >= 0) close(fd);
    if (rc == FR_OK) *out = (char *)b.data;
    else fr_buf_free(&b);
    return rc;
}

int bk_fsync_hist_parse(const char *metrics, const char *db, const char *table,
                        bk_fsync_hist *out, fr_error *err)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix,
             "\nfirth_log_fsync_duration_seconds_bucket{database=\"%s\",table=\"%s\",le=\"", db,
             table);
    *out = (bk_fsync_hist){0};
    for (const char *p = strstr(metrics, prefix); p; p = strstr(p, prefix)) {
        p += strlen(prefix);
        FR_CHECK(out->n < FR_LOG_FSYNC_BUCKETS, FR_ECORRUPT, err,
                 "more fsync buckets than %d for %s.%s", FR_LOG_FSYNC_BUCKETS, db, table);
        double le = strncmp(p, "+Inf", 4) == 0 ? INFINITY : strtod(p, NULL) * 1e3;
        const char *v = strstr(p, "} ");
        FR_CHECK(v, FR_ECORRUPT, err, "a bad fsync bucket line for %s.%s", db, table);
        out->le_ms[out->n] = le;
        out->cum[out->n++] = strtoll(v + 2, NULL, 10);
    }
    FR_CHECK(out->n > 0, FR_ENOTFOUND, err, "no fsync histogram for %s.%s in the metrics", db,
             table);
    return FR_OK;
}

void bk_fsync_hist_since(const bk_fsync_hist *before, const bk_fsync_hist *after,
                         bk_fsync_hist *out)
{
    *out = *after;
    if (before->n != after->n) return;
    for (int k = 0; k < after->n; k++) out->cum[k] -= before->cum[k];
}

double bk_fsync_hist_quantile(const bk_fsync_hist *h, double q)
{
    int64_t total = h->n ? h->cum[h->n - 1] : 0;
    if (total <= 0) return 0;
    for (int k = 0; k < h->n; k++)
        if ((double)h->cum[k] >= q * (double)total) return h->le_ms[k];
    return INFINITY;
}

void bk_client_process_init(void)
{
    fr_alloc_tune_for_throughput();
}
