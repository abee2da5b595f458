/* upsert_lookup.c — a primary-key table: upserts and deletes through a writer, then point and
 * prefix lookups through a lookuper.
 *
 *   upsert_lookup TARGET        TARGET: file:DIR (embedded) or firth://HOST:PORT (a server)
 *
 * Creates examples.users (primary key id, 2 buckets), upserts ids 0..99, updates ids 0..49
 * (a second upsert of the same keys: the last row wins), deletes ids 0..9, then looks up ids
 * 0..19 in one batched call and prints what it finds. Exits 0 when exactly ids 10..19 are
 * found, with the updated names. */
#include <stdio.h>
#include <string.h>

#include "example_arrow.h"
#include "firth/firth.h"

static int check(int rc, const firth_error *err, const char *what)
{
    if (rc != 0) fprintf(stderr, "upsert_lookup: %s: %s\n", what, err->msg);
    return rc;
}

/* Rows ids[0..n) with name "<prefix><id>" and visits id % 7. */
static firth_batch *users(const int64_t *ids, int n, const char *prefix, firth_error *err)
{
    static char text[100][32];
    const char *names[100];
    int32_t visits[100];
    for (int i = 0; i < n; i++) {
        snprintf(text[i], sizeof text[i], "%s%lld", prefix, (long long)ids[i]);
        names[i] = text[i];
        visits[i] = (int32_t)(ids[i] % 7);
    }
    ex_column cols[] = {{"id", "l", ids}, {"name", "u", names}, {"visits", "i", visits}};
    return ex_batch(cols, 3, n, err);
}

static int write_users(firth_client *c, firth_error *err)
{
    firth_writer *w = NULL;
    if (check(firth_writer_open(c, "examples.users", NULL, &w, err), err, "writer")) return 1;
    int64_t ids[100];
    for (int i = 0; i < 100; i++) ids[i] = i;
    firth_batch *all = users(ids, 100, "user-", err);
    firth_batch *renamed = users(ids, 50, "renamed-", err);
    firth_batch *gone = users(ids, 10, "", err);
    int rc = !all || !renamed || !gone;
    uint64_t t1 = 0, t2 = 0, t3 = 0;
    if (rc == 0) rc = check(firth_writer_upsert(w, all, &t1, err), err, "upsert");
    if (rc == 0) rc = check(firth_writer_upsert(w, renamed, &t2, err), err, "update");
    if (rc == 0) rc = check(firth_writer_delete(w, gone, &t3, err), err, "delete");
    /* Each call can be waited for on its own; rows of one bucket apply in call order. */
    if (rc == 0) rc = check(firth_writer_wait(w, t3, err), err, "wait");
    firth_batch_free(all);
    firth_batch_free(renamed);
    firth_batch_free(gone);
    int64_t acked = 0, changed = 0;
    firth_writer_stats(w, &acked, &changed, NULL);
    if (check(firth_writer_close(w, err), err, "close")) rc = 1;
    printf("wrote %lld rows; %lld keys changed\n", (long long)acked, (long long)changed);
    return rc;
}

static int look_up(firth_client *c, firth_error *err)
{
    firth_lookuper *l = NULL;
    if (check(firth_lookuper_open(c, "examples.users", "id, name", &l, err), err, "lookuper"))
        return 1;
    int64_t keys[20];
    for (int i = 0; i < 20; i++) keys[i] = i;
    ex_column kc[] = {{"id", "l", keys}};
    firth_batch *kb = ex_batch(kc, 1, 20, err);
    bool found[20];
    firth_batch *rows = NULL;
    int rc = kb ? check(firth_lookup(l, kb, found, &rows, err), err, "lookup") : 1;
    int hits = 0, bad = 0;
    if (rc == 0) {
        struct ArrowSchema s;
        struct ArrowArray a;
        rc = check(firth_batch_export(rows, &s, &a, err), err, "export");
        for (int i = 0; rc == 0 && i < 20; i++) bad += found[i] != (i >= 10);
        for (int64_t r = 0; rc == 0 && r < a.length; r++) {
            const int64_t *id = a.children[0]->buffers[1];
            const int32_t *off = a.children[1]->buffers[1];
            const char *data = a.children[1]->buffers[2];
            int len = off[r + 1] - off[r];
            char want[32];
            snprintf(want, sizeof want, "%s%lld", id[r] < 50 ? "renamed-" : "user-",
                     (long long)id[r]);
            printf("  id %lld: %.*s\n", (long long)id[r], len, data + off[r]);
            bad += (int)strlen(want) != len || memcmp(want, data + off[r], (size_t)len) != 0;
            hits++;
        }
        if (rc == 0) {
            a.release(&a);
            s.release(&s);
        }
    }
    firth_batch_free(rows);
    /* A prefix lookup by the whole key returns the same rows, with a count per key. */
    int64_t counts[20];
    if (rc == 0) rc = check(firth_prefix_lookup(l, kb, counts, &rows, err), err, "prefix");
    int64_t total = 0;
    for (int i = 0; rc == 0 && i < 20; i++) total += counts[i];
    if (rc == 0) firth_batch_free(rows);
    firth_batch_free(kb);
    firth_lookuper_close(l);
    printf("looked up 20 keys: %d found, %lld by prefix\n", hits, (long long)total);
    return rc || bad || hits != 10 || total != 10;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: upsert_lookup file:DIR | firth://HOST:PORT\n");
        return 2;
    }
    firth_error err = {0};
    firth_client *c = NULL;
    if (check(firth_open(argv[1], &c, &err), &err, argv[1])) return 1;
    firth_table_def def = {
        .table = "examples.users",
        .schema_json = "{\"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": false},"
                       " {\"name\": \"name\", \"type\": \"STRING\"},"
                       " {\"name\": \"visits\", \"type\": \"INT\"}]}",
        .primary_key = "id",
        .option_keys = (const char *[]){"bucket.num"},
        .option_values = (const char *[]){"2"},
        .noptions = 1,
    };
    int rc = check(firth_create_database(c, "examples", true, &err), &err, "create database");
    if (rc == 0) rc = check(firth_drop_table(c, "examples.users", true, &err), &err, "drop");
    if (rc == 0) rc = check(firth_create_table(c, &def, &err), &err, "create table");
    if (rc == 0) rc = write_users(c, &err);
    if (rc == 0) rc = look_up(c, &err);
    firth_close(c);
    return rc ? 1 : 0;
}
