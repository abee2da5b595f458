/* produce_consume.c — a log table written by a batching writer and read back by a scanner.
 *
 *   produce_consume TARGET      TARGET: file:DIR (embedded) or firth://HOST:PORT (a server)
 *
 * Creates examples.events (3 buckets), appends 1,000 rows in 10 calls through a writer
 * (batched, acknowledged by a callback), then subscribes a scanner to every bucket from the
 * earliest offset and polls until every row is back, reading the values through the Arrow C
 * Data Interface. Exits 0 when each row came back exactly once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_arrow.h"
#include "firth/firth.h"

#define CALLS 10
#define ROWS_PER_CALL 100
#define ROWS (CALLS * ROWS_PER_CALL)

static int check(int rc, const firth_error *err, const char *what)
{
    if (rc != 0) fprintf(stderr, "produce_consume: %s: %s\n", what, err->msg);
    return rc;
}

static void on_ack(void *ctx, uint64_t token, int status, const char *message)
{
    int *acked = ctx;
    if (status == 0) (*acked)++;
    else fprintf(stderr, "call %llu failed: %s\n", (unsigned long long)token, message);
}

static int produce(firth_client *c, firth_error *err)
{
    int acked = 0;
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = 10;          /* rows of several calls travel together */
    o.on_ack = on_ack;
    o.ack_ctx = &acked;
    firth_writer *w = NULL;
    if (check(firth_writer_open(c, "examples.events", &o, &w, err), err, "writer")) return 1;
    for (int call = 0; call < CALLS; call++) {
        int64_t ids[ROWS_PER_CALL];
        double scores[ROWS_PER_CALL];
        const char *names[ROWS_PER_CALL];
        for (int i = 0; i < ROWS_PER_CALL; i++) {
            ids[i] = call * ROWS_PER_CALL + i;
            scores[i] = (double)ids[i] / 4;
            names[i] = ids[i] % 10 == 0 ? NULL : "click";
        }
        ex_column cols[] = {{"id", "l", ids}, {"name", "u", names}, {"score", "g", scores}};
        struct ArrowSchema schema;
        struct ArrowArray array;
        if (ex_make_batch(cols, 3, ROWS_PER_CALL, &schema, &array) < 0) return 1;
        int rc = firth_writer_append_arrow(w, &schema, &array, NULL, err);
        schema.release(&schema);
        if (check(rc, err, "append")) return 1;
    }
    if (check(firth_writer_close(w, err), err, "flush")) return 1;
    printf("produced %d rows in %d calls, %d acknowledged\n", ROWS, CALLS, acked);
    return acked == CALLS ? 0 : 1;
}

static int consume(firth_client *c, firth_error *err)
{
    firth_scanner_options so = {.columns = "id, score"};
    firth_scanner *s = NULL;
    if (check(firth_scanner_open(c, "examples.events", &so, &s, err), err, "scanner")) return 1;
    if (check(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, err), err,
              "subscribe"))
        return 1;
    static int seen[ROWS];
    int64_t rows = 0;
    double sum = 0;
    for (int round = 0; round < 100 && rows < ROWS; round++) {
        firth_scan_result *r = NULL;
        if (check(firth_scanner_poll(s, 1000, &r, err), err, "poll")) return 1;
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *b = firth_scan_result_get(r, i);
            struct ArrowSchema schema;
            struct ArrowArray array;
            if (check(firth_batch_export(b->batch, &schema, &array, err), err, "export"))
                return 1;
            /* Column 0 is id (int64), column 1 score (double): values are buffer 1. */
            const int64_t *id = array.children[0]->buffers[1];
            const double *score = array.children[1]->buffers[1];
            for (int64_t k = 0; k < array.length; k++) {
                int64_t v = id[array.children[0]->offset + k];
                if (v < 0 || v >= ROWS) return 1;
                seen[v]++;
                sum += score[array.children[1]->offset + k];
            }
            rows += array.length;
            array.release(&array);
            schema.release(&schema);
        }
        firth_scan_result_free(r);
    }
    firth_scanner_close(s);
    for (int i = 0; i < ROWS; i++) {
        if (seen[i] != 1) {
            fprintf(stderr, "row %d was read %d times\n", i, seen[i]);
            return 1;
        }
    }
    printf("consumed %lld rows, sum of scores %.2f\n", (long long)rows, sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: produce_consume file:DIR | firth://HOST:PORT\n");
        return 2;
    }
    firth_error err = {0};
    firth_client *c = NULL;
    if (check(firth_open(argv[1], &c, &err), &err, argv[1])) return 1;
    firth_table_def def = {
        .table = "examples.events",
        .schema_json = "{\"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": false},"
                       " {\"name\": \"name\", \"type\": \"STRING\"},"
                       " {\"name\": \"score\", \"type\": \"DOUBLE\"}]}",
        .option_keys = (const char *[]){"bucket.num", "bucket.key"},
        .option_values = (const char *[]){"3", "id"},
        .noptions = 2,
    };
    int rc = check(firth_create_database(c, "examples", true, &err), &err, "create database");
    if (rc == 0) rc = check(firth_drop_table(c, "examples.events", true, &err), &err, "drop");
    if (rc == 0) rc = check(firth_create_table(c, &def, &err), &err, "create table");
    if (rc == 0) rc = produce(c, &err);
    if (rc == 0) rc = consume(c, &err);
    firth_close(c);
    return rc ? 1 : 0;
}
