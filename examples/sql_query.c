/* sql_query.c — SQL through firth_execute: statements run one after the other, results come
 * back as batches that the program reads through the Arrow C Data Interface.
 *
 *   sql_query TARGET            TARGET: file:DIR (embedded) or firth://HOST:PORT (a server)
 *
 * Creates examples.sales, inserts six rows, and runs a filtered query and an aggregate; the
 * messages of statements without rows and the rows of queries are printed. Exits 0 when the
 * query returns the rows expected. */
#include <stdio.h>
#include <string.h>

#include "firth/firth.h"

typedef struct result {
    int64_t rows;
    int64_t sum; /* of the first column, when it is a BIGINT ("l") */
} result;

static int on_begin(void *ctx, const char *schema_json)
{
    (void)ctx;
    printf("columns: %s\n", schema_json);
    return 0;
}

static int on_rows(void *ctx, firth_batch *batch)
{
    result *r = ctx;
    struct ArrowSchema s;
    struct ArrowArray a;
    firth_error err = {0};
    int rc = firth_batch_export(batch, &s, &a, &err);
    firth_batch_free(batch); /* the exported arrays keep what they need */
    if (rc != 0) return rc;
    if (a.n_children > 0 && strcmp(s.children[0]->format, "l") == 0) {
        const int64_t *v = a.children[0]->buffers[1];
        for (int64_t i = 0; i < a.length; i++) r->sum += v[a.children[0]->offset + i];
    }
    r->rows += a.length;
    a.release(&a);
    s.release(&s);
    return 0;
}

static int on_end(void *ctx, const char *message)
{
    (void)ctx;
    printf("%s\n", message ? message : "(query done)");
    return 0;
}

static int run(firth_client *c, const char *sql, result *r)
{
    firth_sink sink = {.ctx = r, .begin = on_begin, .rows = on_rows, .end = on_end};
    firth_error err = {0};
    if (firth_execute(c, sql, &sink, &err) != 0) {
        fprintf(stderr, "sql_query: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sql_query file:DIR | firth://HOST:PORT\n");
        return 2;
    }
    firth_error err = {0};
    firth_client *c = NULL;
    if (firth_open(argv[1], &c, &err) != 0) {
        fprintf(stderr, "sql_query: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    result setup = {0}, query = {0};
    int rc = run(c,
                 "CREATE DATABASE IF NOT EXISTS examples;"
                 "USE examples;"
                 "DROP TABLE IF EXISTS sales;"
                 "CREATE TABLE sales (id BIGINT NOT NULL, item STRING, qty INT, "
                 "  price DECIMAL(10, 2)) WITH ('bucket.num' = '2');"
                 "INSERT INTO sales VALUES (1, 'tea', 2, 3.50), (2, 'coffee', 1, 4.20),"
                 "  (3, 'tea', 5, 3.50), (4, 'cake', 1, 6.00), (5, 'coffee', 3, 4.20),"
                 "  (6, 'tea', 1, 3.50)",
                 &setup);
    /* USE stays in force for the client's next call. */
    if (rc == 0) rc = run(c, "SELECT id, item, qty FROM sales WHERE item = 'tea' AND qty > 1",
                          &query);
    firth_close(c);
    if (rc != 0) return 1;
    printf("%lld rows, ids adding up to %lld\n", (long long)query.rows, (long long)query.sum);
    return query.rows == 2 && query.sum == 4 ? 0 : 1;
}
