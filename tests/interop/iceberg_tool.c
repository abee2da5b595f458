/* iceberg_tool.c — writes sample Iceberg tables with firth's lake module and prints what
 * fr_iceberg_scan reads from a table, for the interop tests (iceberg_icebird.test.mjs,
 * iceberg_avsc.test.mjs).
 *
 *   iceberg_tool write <warehouse>   writes db/log (several appends), db/part (partitioned by
 *                                    region), db/pk (a primary-key table with updates and
 *                                    deletes), db/merged (the same with its manifests
 *                                    merged every few commits); prints {"tables": [...]}
 *   iceberg_tool scan <table dir>    prints the rows of the current snapshot as a JSON array
 *                                    of objects (column name -> value)
 *
 * Value encoding: BIGINT and TIMESTAMP_LTZ (microseconds) as strings, INT and DOUBLE as
 * numbers, DATE as "YYYY-MM-DD", BOOLEAN as true/false, STRING as strings, NULL as null. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lake/lake.h"
#include "lake/lake_iceberg_int.h"

static void die(const char *what, const fr_error *err)
{
    fprintf(stderr, "iceberg_tool: %s: %s\n", what, err->msg);
    exit(1);
}

#define CHECK(expr)                                                                          \
    do {                                                                                     \
        if ((expr) < 0) die(#expr, &err);                                                    \
    } while (0)

enum { C_ID, C_NAME, C_AMOUNT, C_QTY, C_DAY, C_OK, C_REGION, C_BUCKET, C_OFFSET, C_TS };

typedef struct table {
    fr_schema *lake;
    int32_t ids[FR_SCHEMA_COLUMNS_MAX + 3];
    int part[2];
    int key[1];
    fr_lake_spec spec;
} table;

static void table_init(table *t, int kind)
{
    fr_error err = {0};
    fr_field f[7] = {
        {"id", fr_type_of(FR_T_BIGINT)}, {"name", fr_type_of(FR_T_STRING)},
        {"amount", fr_type_of(FR_T_DOUBLE)}, {"qty", fr_type_of(FR_T_INT)},
        {"day", fr_type_of(FR_T_DATE)}, {"ok", fr_type_of(FR_T_BOOLEAN)},
        {"region", fr_type_of(FR_T_STRING)},
    };
    f[C_ID].type.nullable = false;
    fr_schema *s;
    CHECK(fr_schema_new(f, 7, 0, &s, &err));
    CHECK(fr_lake_schema(s, &t->lake, t->ids, &err));
    fr_schema_free(s);
    memset(&t->spec, 0, sizeof t->spec);
    t->spec.schema = t->lake;
    t->spec.field_ids = t->ids;
    if (kind == 1) {
        t->part[0] = C_REGION;
        t->spec.partition_cols = t->part;
        t->spec.npartition_cols = 1;
        t->spec.target_file_bytes = 4000; /* several files per partition */
    } else if (kind == 2) {
        t->part[0] = C_BUCKET;
        t->key[0] = C_ID;
        t->spec.partition_cols = t->part;
        t->spec.npartition_cols = 1;
        t->spec.key_cols = t->key;
        t->spec.nkey_cols = 1;
    }
}

static const char *regions[] = {"eu", "us", "apac"};

/* Appends the row of id (version ver) to the builder. */
static void add_row(fr_builder *b, int64_t id, int ver, int32_t bucket, int64_t offset)
{
    fr_error err = {0};
    char name[32];
    snprintf(name, sizeof name, "name-%lld-v%d", (long long)id, ver);
    CHECK(fr_builder_append_i64(b, C_ID, id, &err));
    if (id % 5 == 3) CHECK(fr_builder_append_null(b, C_NAME, &err));
    else CHECK(fr_builder_append_bytes(b, C_NAME, name, strlen(name), &err));
    CHECK(fr_builder_append_f64(b, C_AMOUNT, (double)id * 1.25 + ver, &err));
    if (id % 7 == 2) CHECK(fr_builder_append_null(b, C_QTY, &err));
    else CHECK(fr_builder_append_i64(b, C_QTY, (id * 3) % 100 - 20, &err));
    CHECK(fr_builder_append_i64(b, C_DAY, 20000 + id % 30, &err));
    CHECK(fr_builder_append_bool(b, C_OK, id % 2 == 0, &err));
    const char *r = regions[id % 3];
    CHECK(fr_builder_append_bytes(b, C_REGION, r, strlen(r), &err));
    CHECK(fr_builder_append_i64(b, C_BUCKET, bucket, &err));
    CHECK(fr_builder_append_i64(b, C_OFFSET, offset, &err));
    /* Whole milliseconds, so readers that give milliseconds see the exact value. */
    CHECK(fr_builder_append_i64(b, C_TS, 1767225600000000 + offset * 1000, &err));
}

static void commit_rows(fr_iceberg_table *it, table *t, int64_t first, int n, int ver,
                        int32_t buckets, int64_t *offsets, const int64_t *del, int ndel)
{
    fr_error err = {0};
    fr_iceberg_commit *c;
    CHECK(fr_iceberg_commit_begin(it, &c, &err));
    if (ndel > 0) {
        fr_builder *db;
        CHECK(fr_builder_new(fr_iceberg_delete_schema(it), &db, &err));
        for (int i = 0; i < ndel; i++) {
            CHECK(fr_builder_append_i64(db, 0, del[i], &err));
            CHECK(fr_builder_append_i64(db, 1, del[i] % buckets, &err));
        }
        fr_batch *d;
        CHECK(fr_builder_finish(db, &d, &err));
        CHECK(fr_iceberg_commit_add_deletes(c, d, &err));
        fr_batch_free(d);
        fr_builder_free(db);
    }
    if (n > 0) {
        fr_builder *b;
        CHECK(fr_builder_new(t->lake, &b, &err));
        for (int i = 0; i < n; i++) {
            int64_t id = first + i;
            int32_t bucket = (int32_t)(id % buckets);
            add_row(b, id, ver, bucket, offsets[bucket]++);
        }
        fr_batch *batch;
        CHECK(fr_builder_finish(b, &batch, &err));
        CHECK(fr_iceberg_commit_add_rows(c, batch, &err));
        fr_batch_free(batch);
        fr_builder_free(b);
    }
    fr_lake_offset offs[8];
    for (int i = 0; i < buckets; i++) offs[i] = (fr_lake_offset){-1, i, offsets[i]};
    int64_t snap;
    CHECK(fr_iceberg_commit_finish(c, offs, buckets, &snap, &err));
}

static void write_tables(const char *wh)
{
    fr_error err = {0};
    char dir[4096];
    table t;
    fr_iceberg_table *it;
    int64_t offsets[8] = {0};

    snprintf(dir, sizeof dir, "%s/db/log", wh);
    table_init(&t, 0);
    CHECK(fr_iceberg_open(dir, &t.spec, &it, &err));
    for (int round = 0; round < 4; round++) commit_rows(it, &t, round * 50, 50, 0, 2, offsets, NULL, 0);
    fr_iceberg_close(it);
    fr_schema_free(t.lake);

    memset(offsets, 0, sizeof offsets);
    snprintf(dir, sizeof dir, "%s/db/part", wh);
    table_init(&t, 1);
    CHECK(fr_iceberg_open(dir, &t.spec, &it, &err));
    for (int round = 0; round < 3; round++) commit_rows(it, &t, round * 120, 120, 0, 1, offsets, NULL, 0);
    fr_iceberg_close(it);
    fr_schema_free(t.lake);

    /* The PK table: ids 0..39, then rounds that update some keys (delete + new row) and
     * delete others (delete only). */
    memset(offsets, 0, sizeof offsets);
    snprintf(dir, sizeof dir, "%s/db/pk", wh);
    table_init(&t, 2);
    CHECK(fr_iceberg_open(dir, &t.spec, &it, &err));
    commit_rows(it, &t, 0, 40, 0, 4, offsets, NULL, 0);
    int64_t upd1[] = {5, 6, 7, 8, 9, 30, 31};
    commit_rows(it, &t, 5, 5, 1, 4, offsets, upd1, 7);        /* 5..9 updated, 30, 31 gone */
    int64_t upd2[] = {6, 12, 13};
    commit_rows(it, &t, 40, 3, 2, 4, offsets, upd2, 3);       /* 6, 12, 13 gone; 40..42 new */
    int64_t upd3[] = {30, 40};
    commit_rows(it, &t, 30, 1, 3, 4, offsets, upd3, 2);       /* 30 back, 40 gone */
    fr_iceberg_close(it);
    fr_schema_free(t.lake);

    /* The same rounds, then more, with manifests merged once there are more than two. */
    memset(offsets, 0, sizeof offsets);
    snprintf(dir, sizeof dir, "%s/db/merged", wh);
    table_init(&t, 2);
    CHECK(fr_iceberg_open(dir, &t.spec, &it, &err));
    fr_iceberg_test_merge_min(it, 2);
    commit_rows(it, &t, 0, 40, 0, 4, offsets, NULL, 0);
    commit_rows(it, &t, 5, 5, 1, 4, offsets, upd1, 7);
    commit_rows(it, &t, 40, 3, 2, 4, offsets, upd2, 3);
    commit_rows(it, &t, 30, 1, 3, 4, offsets, upd3, 2);
    int64_t upd4[] = {0, 1, 2, 41};
    commit_rows(it, &t, 0, 2, 4, 4, offsets, upd4, 4);        /* 0, 1 updated; 2, 41 gone */
    commit_rows(it, &t, 50, 4, 5, 4, offsets, NULL, 0);       /* 50..53 new */
    fr_iceberg_close(it);
    fr_schema_free(t.lake);

    printf("{\"tables\": [\"%s/db/log\", \"%s/db/part\", \"%s/db/pk\", \"%s/db/merged\"]}\n",
           wh, wh, wh, wh);
}

static void print_value(const fr_value *v)
{
    if (v->is_null) {
        fputs("null", stdout);
        return;
    }
    switch (v->type.id) {
    case FR_T_BIGINT: case FR_T_TIMESTAMP_LTZ: case FR_T_TIMESTAMP:
        printf("\"%lld\"", (long long)v->v.i);
        break;
    case FR_T_INT: case FR_T_SMALLINT: case FR_T_TINYINT:
        printf("%lld", (long long)v->v.i);
        break;
    case FR_T_DOUBLE: case FR_T_FLOAT:
        printf("%.17g", v->v.f);
        break;
    case FR_T_BOOLEAN:
        fputs(v->v.b ? "true" : "false", stdout);
        break;
    case FR_T_DATE: {
        int64_t y;
        unsigned m, d;
        fr_civil_from_days(v->v.i, &y, &m, &d);
        printf("\"%04lld-%02u-%02u\"", (long long)y, m, d);
        break;
    }
    default: {
        putchar('"');
        for (size_t i = 0; i < v->v.s.len; i++) {
            unsigned char c = v->v.s.ptr[i];
            if (c == '"' || c == '\\') printf("\\%c", c);
            else if (c < 0x20) printf("\\u%04x", c);
            else putchar(c);
        }
        putchar('"');
    }
    }
}

static void scan_table(const char *dir)
{
    fr_error err = {0};
    fr_iceberg_table *it;
    CHECK(fr_iceberg_open(dir, NULL, &it, &err));
    const fr_schema *s = fr_iceberg_schema(it);
    int n = fr_schema_num_fields(s);
    int cols[FR_SCHEMA_COLUMNS_MAX + 3];
    for (int i = 0; i < n; i++) cols[i] = i;
    fr_iceberg_scan *sc;
    CHECK(fr_iceberg_scan_open(it, -1, cols, n, NULL, &sc, &err));
    printf("[");
    bool first = true;
    for (;;) {
        fr_batch *b;
        CHECK(fr_iceberg_scan_next(sc, &b, &err));
        if (!b) break;
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            printf("%s\n{", first ? "" : ",");
            first = false;
            for (int c = 0; c < n; c++) {
                fr_value v;
                fr_column_get(fr_batch_column(b, c), r, &v);
                printf("%s\"%s\": ", c ? ", " : "", fr_schema_field(s, c)->name);
                print_value(&v);
            }
            printf("}");
        }
        fr_batch_free(b);
    }
    printf("\n]\n");
    fr_iceberg_scan_close(sc);
    fr_iceberg_close(it);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0) write_tables(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "scan") == 0) scan_table(argv[2]);
    else {
        fprintf(stderr, "usage: iceberg_tool write <warehouse> | scan <table dir>\n");
        return 2;
    }
    return 0;
}
