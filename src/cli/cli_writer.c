/* cli_writer.c — the appending half of `firth produce`: hands finished batches to
 * firth_produce (firth_upsert for a primary-key table) under this run's idempotent writer
 * id and the next sequence number, and says what is durable ("acknowledged lines A-B (N
 * rows)") and, when the input goes bad, what was and was not written.
 *
 * Invariants: an acknowledgement is printed only after firth_produce returned, when the
 * batch is durable, and stderr is flushed right after it; the ranges acknowledged are dense
 * (each batch starts at the unit after the previous one's last); sequence numbers go up by
 * one per batch handed over, whether it succeeded or not. */
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/client_bridge.h"

#define CLI_WRITER_ATTEMPTS 3 /* appends of one batch, when the first fails with an I/O error */

/* A random positive writer id for this run, so two runs never share sequence numbers. */
static int64_t cli_writer_id(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)fr_monotonic_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    v &= INT64_MAX;
    return v ? (int64_t)v : 1;
}

void cli_writer_init(cli_writer *w, firth_client *c, const char *table, const char *unit,
                     bool verbose)
{
    *w = (cli_writer){.client = c, .table = table, .unit = unit, .verbose = verbose,
                      .writer_id = cli_writer_id(), .next_first = 1};
}

int cli_writer_append(cli_writer *w, fr_batch *b, int64_t last)
{
    return cli_writer_append_ops(w, b, NULL, last);
}

int cli_writer_append_ops(cli_writer *w, fr_batch *b, const uint8_t *ops, int64_t last)
{
    int64_t rows = fr_batch_num_rows(b), first = w->next_first;
    firth_batch *fb = firth_batch_wrap(b);
    if (!fb) {
        fr_batch_free(b);
        cli_error("out of memory for a batch");
        return CLI_EXIT_FAILED;
    }
    firth_error ferr = {0};
    int64_t appended = 0, changed = 0;
    int rc = 0;
    /* An I/O error may leave the parts of the batch for some buckets written and not the
     * others: the same (writer, sequence) again completes it, and the parts already there
     * are not appended twice. */
    for (int attempt = 0; attempt < CLI_WRITER_ATTEMPTS; attempt++) {
        if (attempt > 0) usleep(100000u << (2 * attempt)); /* 0.4 s, then 1.6 s */
        if (w->pk)
            rc = firth_upsert(w->client, w->table, fb, ops, NULL, w->writer_id, w->seq, &changed,
                              &ferr);
        else
            rc = firth_produce(w->client, w->table, fb, w->writer_id, w->seq, &appended, &ferr);
        if (rc == 0 || (rc != FIRTH_EIO && rc != FIRTH_ENOSPC)) break;
    }
    firth_batch_free(fb);
    w->seq++;
    if (rc < 0) {
        cli_error("writing %ss %lld-%lld: %s", w->unit, (long long)first, (long long)last,
                  ferr.msg);
        fprintf(stderr, "firth: %ss 1-%lld were written to %s; of %ss %lld-%lld, the part "
                        "for some buckets may have been written\n",
                w->unit, (long long)first - 1, w->table, w->unit, (long long)first,
                (long long)last);
        return CLI_EXIT_FAILED;
    }
    w->written += rows;
    w->changed += changed;
    if (w->verbose) {
        fprintf(stderr, "acknowledged %ss %lld-%lld (%lld row%s)\n", w->unit, (long long)first,
                (long long)last, (long long)rows, rows == 1 ? "" : "s");
        fflush(stderr);
    }
    w->next_first = last + 1;
    return 0;
}

int cli_writer_stop(const cli_writer *w, int64_t at, const char *msg)
{
    cli_error("stdin %s %lld: %s", w->unit, (long long)at, msg);
    if (w->written > 0)
        fprintf(stderr, "firth: %lld row%s (%ss 1-%lld) %s written to %s; nothing from %s "
                        "%lld on was written\n",
                (long long)w->written, w->written == 1 ? "" : "s", w->unit,
                (long long)w->next_first - 1, w->written == 1 ? "was" : "were", w->table,
                w->unit, (long long)w->next_first);
    else
        fprintf(stderr, "firth: nothing was written to %s\n", w->table);
    return CLI_EXIT_FAILED;
}

void cli_writer_summary(const cli_writer *w)
{
    if (w->pk)
        fprintf(stderr, "%lld row%s written to %s (%lld key%s changed)\n", (long long)w->written,
                w->written == 1 ? "" : "s", w->table, (long long)w->changed,
                w->changed == 1 ? "" : "s");
    else
        fprintf(stderr, "%lld row%s written to %s\n", (long long)w->written,
                w->written == 1 ? "" : "s", w->table);
}
