/* benchkit.c — the shared parts of the benchmark programs (see benchkit.h): the benchmark
 * table, scratch engines, statistics, file sizes and result files. Nothing here is timed;
 * the programs time only the calls they measure. */
#include "benchkit.h"

#include <assert.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

const char *bk_verdict(const bk_target *t) { return t->figure >= t->target ? "PASS" : "MISS"; }

json_t *bk_target_json(const bk_target *t)
{
    return json_pack("{s:s, s:s, s:f, s:f, s:s}", "name", t->name, "what", t->what, "figure",
                     t->figure, "target", t->target, "status", bk_verdict(t));
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
