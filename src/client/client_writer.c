/* client_writer.c — firth_writer: rows of many calls batched per destination, sent by a
 * background thread, acknowledged per call, and retried safely.
 *
 * A destination ("unit") is one bucket of one partition for a remote client (the client
 * routes rows as the engine does) and the whole table for an embedded one (the engine
 * routes). Each call's rows are split into one piece per unit and queued there; a unit is
 * sent when its queued bytes reach batch_bytes, when its oldest piece has waited linger_ms,
 * or when someone flushes. Each batch carries the unit's writer id and the unit's next
 * sequence number, given when the batch is taken and kept across its retries: the log
 * refuses a (writer, sequence) it has already seen as a duplicate, so a retry after an
 * ambiguous failure never applies rows twice.
 *
 * Order: a unit has up to max_in_flight batches in flight (a remote writer to a log table;
 * one elsewhere). Their requests say "in order", so the log takes only a writer's next
 * sequence and refuses one that overtook an earlier batch (FR_ESEQUENCE, nothing written);
 * that batch goes again once every earlier batch of its unit is answered. Rows of one unit
 * are thus applied in call order, with several batches on the way. A batch that fails for
 * good leaves a gap the log would never fill: its unit takes nothing more until its batches
 * in flight are answered, then goes on under a new random writer id, from sequence 0 (the
 * same happens before the sequence would wrap). The batches behind the gap, which the log
 * refused with nothing written, go back to the head of their unit's queue in their order
 * and are sent again under the new id: only the batch that failed fails.
 *
 * Locking: mu guards everything below it in the struct; the thread sends without holding
 * it. Calls complete when their last piece does; ack callbacks run on the thread, without
 * mu held. Memory: the rows queued or in flight are bounded by buffer_bytes (a call waits
 * for room; a single call larger than the bound is let in alone). */
#include "client/client_int.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#define WRITER_FAILURES_KEPT 256

typedef struct wcall {
    struct wcall *next, *prev; /* the open list; next also links the done list */
    uint64_t token;
    int pending;          /* pieces not done */
    int64_t rows;
    int status;
    char msg[FR_ERROR_MSG_MAX];
} wcall;

typedef struct wpiece {
    struct wpiece *next;
    fr_batch *rows;       /* owned */
    uint8_t *ops;         /* owned; NULL: all upserts (or appends) */
    wcall *call;
    int64_t bytes;
    int64_t queued_ns;    /* when it was queued, for linger_ms */
    int32_t seq;          /* the sequence of the batch that last took it */
} wpiece;

typedef struct wunit {
    int64_t partition_id;
    int bucket;
    wpiece *head, *tail;  /* queued */
    int64_t bytes;
    int64_t oldest_ns;
    int64_t writer_id;    /* the id its batches carry */
    int32_t next_seq;     /* the sequence of the next batch taken */
    int32_t open_base;    /* the lowest sequence taken and not finished (next_seq if none) */
    uint64_t open_mask;   /* bit i: sequence open_base + i is taken and not finished */
    bool stalled;         /* failed for good (or at the last sequence): new id once idle */
    wpiece *redo;         /* refused behind a gap: queued again under the new id, by seq */
} wunit;

typedef struct wfailure {
    uint64_t token;
    int status;
    char msg[FR_ERROR_MSG_MAX];
} wfailure;

struct firth_writer {
    firth_client *client;
    fr_ctable *t;
    firth_writer_options o;
    char *targets_text;
    int *targets, ntargets;
    int64_t writer_id;       /* the id units start with */
    int max_in_flight;       /* per unit: o.max_in_flight where in-order sends apply, else 1 */
    pthread_t thread;
    bool thread_started;

    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the thread: something to send, a flush, stop */
    pthread_cond_t done_cv;  /* callers: calls completed, room in the buffer */
    wunit *units;            /* index: partition index * nbuckets + bucket */
    int nunits;
    int next_unit;           /* where the next flight starts looking: every unit in turn */
    int64_t *pids;           /* partition ids by partition index */
    int npids;
    wcall *open, *open_tail; /* calls not complete, in token order */
    uint64_t next_token;
    int64_t buffered;
    int flushing;            /* callers in firth_writer_flush */
    int acking;              /* batches of callbacks running (flush waits for them) */
    bool stopping;
    wfailure failures[WRITER_FAILURES_KEPT];
    int nfailures;           /* total recorded; the last WRITER_FAILURES_KEPT are kept */
    int first_status;        /* the first failure since the last flush */
    char first_msg[FR_ERROR_MSG_MAX];
    int64_t rows_acked, rows_changed, calls_failed;
    struct wflight *flights; /* remote: requests in flight or waiting to be sent again */
};

void firth_writer_options_init(firth_writer_options *o)
{
    *o = (firth_writer_options){
        .batch_bytes = 1 << 20,
        .linger_ms = 5,
        .buffer_bytes = 64 << 20,
        .retries = 10,
        .retry_backoff_ms = 100,
        .writer_id = -1,
        .max_in_flight = 1,
    };
}

static int cond_mono(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t at_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(at_ns / 1000000000),
                          .tv_nsec = (long)(at_ns % 1000000000)};
    pthread_cond_timedwait(cv, mu, &ts);
}

/* ---- units --------------------------------------------------------------------------------- */

/* The unit of (pid, bucket), growing the table for a new partition (mu held). */
static int unit_index(firth_writer *w, int64_t pid, int bucket, int *out, fr_error *err)
{
    int nb = w->client->remote ? w->t->nbuckets : 1;
    int p = 0;
    while (p < w->npids && w->pids[p] != pid) p++;
    if (p == w->npids) {
        int64_t *pids = fr_realloc(w->pids, sizeof *pids * (size_t)(w->npids + 1));
        FR_CHECK(pids, FR_ENOMEM, err, "out of memory for a new partition");
        w->pids = pids;
        wunit *units = fr_realloc(w->units, sizeof *units * (size_t)(w->nunits + nb));
        FR_CHECK(units, FR_ENOMEM, err, "out of memory for a new partition");
        w->units = units;
        for (int b = 0; b < nb; b++)
            w->units[w->nunits + b] = (wunit){.partition_id = pid, .bucket = b,
                                              .writer_id = w->writer_id};
        w->pids[w->npids++] = pid;
        w->nunits += nb;
    }
    *out = p * nb + bucket;
    return FR_OK;
}

static void piece_free(wpiece *p)
{
    fr_batch_free(p->rows);
    fr_free(p->ops);
    fr_free(p);
}

static void pieces_free(wpiece *p)
{
    for (wpiece *next; p; p = next) {
        next = p->next;
        piece_free(p);
    }
}

/* ---- completing calls ------------------------------------------------------------------------ */

static void record_failure(firth_writer *w, wcall *c)
{
    wfailure *f = &w->failures[w->nfailures++ % WRITER_FAILURES_KEPT];
    f->token = c->token;
    f->status = c->status;
    snprintf(f->msg, sizeof f->msg, "%s", c->msg);
    w->calls_failed++;
    if (w->first_status == 0) {
        w->first_status = c->status;
        snprintf(w->first_msg, sizeof w->first_msg, "%s", c->msg);
    }
}

/* Batches of u taken and not finished. */
static int unit_inflight(const wunit *u) { return __builtin_popcountll(u->open_mask); }

/* Puts the pieces of u's redo list back at the head of its queue (mu held). */
static void unit_requeue(wunit *u)
{
    wpiece *last = u->redo;
    int64_t bytes = last->bytes;
    for (; last->next; last = last->next) bytes += last->next->bytes;
    last->next = u->head;
    if (!u->head) u->tail = last;
    u->head = u->redo;
    u->redo = NULL;
    u->oldest_ns = u->head->queued_ns;
    u->bytes += bytes;
}

/* Sequence seq of u is finished: off the open set; a stalled unit left idle starts again
 * under a new writer id, its refused batches first (mu held). */
static void unit_close_seq(wunit *u, int32_t seq)
{
    int64_t bit = (int64_t)seq - u->open_base;
    assert(bit >= 0 && bit < 64 && (u->open_mask >> bit & 1));
    u->open_mask &= ~((uint64_t)1 << bit);
    while (u->open_mask && !(u->open_mask & 1)) {
        u->open_mask >>= 1;
        u->open_base++;
    }
    if (!u->open_mask) u->open_base = u->next_seq;
    if (u->stalled && !u->open_mask) {
        u->writer_id = fr_client_random_writer_id();
        u->next_seq = u->open_base = 0;
        u->stalled = false;
        if (u->redo) unit_requeue(u);
    }
}

/* A batch of u (pieces, sequence seq) that the log refused with nothing written after a gap
 * in u's sequence: its pieces wait in u's redo list, in sequence order, for the new id; the
 * unit stalls until it is idle (mu held). */
static void redo_batch(wunit *u, wpiece *pieces, int32_t seq)
{
    wpiece *last = pieces;
    while (last->next) last = last->next;
    wpiece **at = &u->redo;
    while (*at && (*at)->seq < seq) at = &(*at)->next;
    last->next = *at;
    *at = pieces;
    u->stalled = true;
    unit_close_seq(u, seq);
}

/* Marks a unit's batch (its pieces, sequence seq) done with status; moves complete calls
 * to *done (mu held). A failure stalls the unit: see the top of the file. */
static void finish_batch(firth_writer *w, wunit *u, wpiece *pieces, int32_t seq, int status,
                         const fr_error *err, int64_t changed, wcall **done)
{
    for (wpiece *p = pieces, *next; p; p = next) {
        next = p->next;
        wcall *c = p->call;
        if (status < 0 && c->status == 0) {
            c->status = status;
            snprintf(c->msg, sizeof c->msg, "%s", err->msg);
        }
        w->buffered -= p->bytes;
        if (--c->pending == 0) {
            if (c->prev) c->prev->next = c->next;
            else w->open = c->next;
            if (c->next) c->next->prev = c->prev;
            else w->open_tail = c->prev;
            if (c->status < 0) record_failure(w, c);
            else w->rows_acked += c->rows;
            c->next = *done;
            *done = c;
        }
        piece_free(p);
    }
    if (status == 0) w->rows_changed += changed;
    if (status < 0) u->stalled = true;
    unit_close_seq(u, seq);
}

static void run_callbacks(firth_writer *w, wcall *done)
{
    for (wcall *c = done, *next; c; c = next) {
        next = c->next;
        if (w->o.on_ack) w->o.on_ack(w->o.ack_ctx, c->token, c->status, c->status ? c->msg : NULL);
        fr_free(c);
    }
}

/* ---- sending --------------------------------------------------------------------------------- */

/* A batch of all of b's rows sharing its buffers (fr_batch_project of every column, which
 * keeps them alive on its own): a call's rows that go whole to one unit, and a batch of one
 * piece, are queued and sent without copying them. */
static int share_rows(const fr_batch *b, fr_batch **out, fr_error *err)
{
    int n = fr_batch_num_columns(b);
    int *cols = fr_malloc(sizeof *cols * (size_t)(n + 1));
    FR_CHECK(cols, FR_ENOMEM, err, "out of memory sharing rows");
    for (int i = 0; i < n; i++) cols[i] = i;
    int rc = fr_batch_project(b, cols, n, out, err);
    fr_free(cols);
    return rc;
}

/* The rows of a unit's pieces as one batch, and their ops (NULL when none has any). */
static int join_pieces(firth_writer *w, wpiece *pieces, fr_batch **rows, uint8_t **ops,
                       fr_error *err)
{
    int n = 0;
    bool any_ops = false;
    int64_t total = 0;
    for (wpiece *p = pieces; p; p = p->next) {
        n++;
        any_ops = any_ops || p->ops;
        total += fr_batch_num_rows(p->rows);
    }
    *ops = NULL;
    if (any_ops) {
        *ops = fr_calloc((size_t)total + 1, 1);
        FR_CHECK(*ops, FR_ENOMEM, err, "out of memory joining %lld rows", (long long)total);
        int64_t at = 0;
        for (wpiece *p = pieces; p; p = p->next) {
            int64_t r = fr_batch_num_rows(p->rows);
            if (p->ops) memcpy(*ops + at, p->ops, (size_t)r);
            at += r;
        }
    }
    if (n == 1) return share_rows(pieces->rows, rows, err);
    fr_gather_run *runs = fr_calloc((size_t)n, sizeof *runs);
    FR_CHECK(runs, FR_ENOMEM, err, "out of memory joining rows");
    int i = 0;
    for (wpiece *p = pieces; p; p = p->next)
        runs[i++] = (fr_gather_run){p->rows, 0, fr_batch_num_rows(p->rows)};
    int rc = fr_gather(w->t->schema, runs, n, rows, err);
    fr_free(runs);
    return rc;
}

/* Statuses after which a batch goes again (FR_ESEQUENCE: once its unit's earlier batches
 * are answered). */
static bool retriable(int status) { return status == FR_EIO || status == FR_ESEQUENCE; }

/* One unit's batch to send: its rows and ops (owned), and how it ended. */
typedef struct wsend {
    int unit;
    int64_t partition_id; /* the unit's, copied: callers may move the units array */
    int bucket;
    wpiece *pieces;       /* the calls' rows it carries (owned until finished) */
    int32_t seq;
    bool go;              /* a retry: goes in this attempt (decided under mu) */
    bool first_open;      /* its unit had no earlier batch open when it was last sent */
    fr_batch *rows;
    uint8_t *ops;
    int status;
    fr_error err;
    int64_t changed;
} wsend;

static int send_local(firth_writer *w, wsend *s, int64_t writer_id)
{
    fr_table *t = w->t->local;
    int64_t count = 0;
    fr_error e = {0};
    int rc = w->t->npk ? fr_table_put(t, s->rows, s->ops, w->ntargets ? w->targets : NULL,
                                      w->ntargets, writer_id, s->seq, &count, &e)
                       : fr_table_append(t, s->rows, writer_id, s->seq, &count, &e);
    if (rc == FR_EDUPLICATE) rc = 0;
    s->status = rc < 0 ? rc : 0;
    s->err = e;
    s->changed = w->t->npk ? count : 0;
    return FR_OK;
}

/* Writes an embedded writer's batches (one unit: the table) until each is applied, failed
 * for good, or out of retries; each send's status, err and changed say how it ended. */
static void send_all(firth_writer *w, wsend *sends, int n, int64_t writer_id)
{
    bool *todo = fr_calloc((size_t)n + 1, sizeof *todo);
    int64_t backoff = w->o.retry_backoff_ms;
    for (int attempt = 0;; attempt++) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            /* The first round sends what was joined; later rounds what may be retried. */
            bool again = attempt == 0 ? sends[i].rows != NULL : retriable(sends[i].status);
            if (todo) todo[i] = again;
            left += again;
        }
        if (!todo) break;
        if (left == 0) break;
        if (attempt > 0) {
            if (attempt > w->o.retries) break;
            struct timespec ts = {.tv_sec = backoff / 1000, .tv_nsec = (backoff % 1000) * 1000000};
            nanosleep(&ts, NULL);
            backoff = backoff * 2 < 5000 ? backoff * 2 : 5000;
        }
        for (int i = 0; i < n; i++)
            if (todo[i]) send_local(w, &sends[i], writer_id);
    }
    if (!todo)
        for (int i = 0; i < n; i++)
            if (sends[i].rows)
                sends[i].status = fr_fail(&sends[i].err, FR_ENOMEM, "out of memory sending rows");
    fr_free(todo);
}

/* Whether unit u may have another batch in flight (mu held). */
static bool unit_has_room(const firth_writer *w, const wunit *u)
{
    /* The open set is a 64-bit mask from the lowest open sequence. */
    return !u->stalled && unit_inflight(u) < w->max_in_flight &&
           (int64_t)u->next_seq - u->open_base < 64;
}

/* Whether unit u should go now (mu held). */
static bool unit_ready(const firth_writer *w, const wunit *u, int64_t now)
{
    if (!u->head || !unit_has_room(w, u)) return false;
    return w->flushing > 0 || w->stopping || u->bytes >= w->o.batch_bytes ||
           now - u->oldest_ns >= w->o.linger_ms * 1000000;
}

/* How many units should go now (mu held); *wake moves to the end of the earliest linger
 * of the others. */
static int units_ready(const firth_writer *w, int64_t now, int64_t *wake)
{
    int ready = 0;
    for (int i = 0; i < w->nunits; i++) {
        const wunit *u = &w->units[i];
        if (unit_ready(w, u, now)) ready++;
        else if (u->head && unit_has_room(w, u) &&
                 u->oldest_ns + w->o.linger_ms * 1000000 < *wake)
            *wake = u->oldest_ns + w->o.linger_ms * 1000000;
    }
    return ready;
}

/* Moves the unit's next batch from its queue to in flight (mu held): the pieces from the
 * head up to batch_bytes (at least one). Bounding the batch keeps the client's joining and
 * encoding, the transfer and the server's write of successive batches overlapping; a writer
 * whose queue outgrew batch_bytes while a batch was in flight would otherwise send the whole
 * buffer (up to buffer_bytes) as one record batch. */
static int64_t take_batch(firth_writer *w, wunit *u, wsend *s)
{
    wpiece *last = u->head;
    int64_t bytes = last->bytes;
    last->seq = u->next_seq;
    while (last->next && bytes + last->next->bytes <= w->o.batch_bytes) {
        last = last->next;
        last->seq = u->next_seq;
        bytes += last->bytes;
    }
    s->pieces = u->head;
    s->partition_id = u->partition_id;
    s->bucket = u->bucket;
    s->seq = u->next_seq;
    s->first_open = !u->open_mask;
    u->open_mask |= (uint64_t)1 << (u->next_seq - u->open_base);
    if (u->next_seq == INT32_MAX) u->stalled = true; /* a new id before the wrap */
    else u->next_seq++;
    u->head = last->next;
    last->next = NULL;
    if (!u->head) u->tail = NULL;
    else u->oldest_ns = u->head->queued_ns;
    u->bytes -= bytes;
    return bytes;
}

/* ---- the remote writer: requests side by side ------------------------------------------------ */

/* A remote writer does not wait for one request's answer before it sends the next: ready
 * units become flights of about FLIGHT_SEND_BYTES of rows each, and the thread goes on
 * encoding and sending while the server writes and fsyncs (a unit's batches in flight are
 * numbered in order: see the top of the file). The connection's reader thread says when an
 * answer came (flight_notify); the thread then settles the flight, sending again, after the
 * backoff, the batches that failed retriably, and the batches refused as out of order once
 * their units' earlier batches are answered (looked at as soon as a batch of the unit is
 * settled, and after 1 ms, then up to every 64 ms, while they wait). One flight's batches
 * carry one writer id (a request names one). Only the thread touches the flights list;
 * answered is under mu. Lock order: the connection's lock, then mu (the notify runs under
 * the first). */
typedef struct wflight {
    struct wflight *next;
    firth_writer *w;
    wsend *sends;            /* owned, with their rows and ops */
    int n;
    fr_rput *units;          /* this attempt's encoded batches: units[j] is sends[map[j]] */
    int *map;
    int k;
    fr_cnet_pending **reqs;  /* the requests carrying them, cut at the frame limit */
    int *cut;                /* request r carries units [cut[r], cut[r + 1]) */
    int nreqs;
    int answered;            /* mu: requests answered, lost or never sent */
    int attempt;             /* rounds of sending so far, less one */
    int retries;             /* rounds after a retriable failure (FR_EIO) */
    int64_t writer_id;       /* its batches' (their units' when taken) */
    int64_t wait_ms;         /* > 0: rounds of only waiting batches, looked at this often */
    int64_t retry_ns;        /* > 0: waiting to send the retriable batches again then */
    int64_t backoff_ms;
} wflight;

static void flight_notify(void *ctx)
{
    wflight *f = ctx;
    firth_writer *w = f->w; /* f may be gone once mu is released; the writer is not */
    pthread_mutex_lock(&w->mu);
    f->answered++;
    pthread_mutex_unlock(&w->mu);
    /* After the unlock, so that the thread it wakes does not block at once on mu. */
    pthread_cond_signal(&w->work_cv);
}

/* Forgets this attempt's requests and encoded batches (the answers were taken). */
static void flight_unsend(wflight *f)
{
    for (int r = 0; r < f->nreqs; r++) fr_cnet_pending_free(f->reqs[r]);
    for (int j = 0; j < f->k; j++) fr_bufpool_give(f->w->t->client->encoded, &f->units[j].records);
    fr_free(f->reqs);
    fr_free(f->cut);
    fr_free(f->units);
    fr_free(f->map);
    f->reqs = NULL;
    f->cut = NULL;
    f->units = NULL;
    f->map = NULL;
    f->k = f->nreqs = 0;
}

static void flight_free(wflight *f)
{
    flight_unsend(f);
    for (int i = 0; i < f->n; i++) {
        fr_batch_free(f->sends[i].rows);
        fr_free(f->sends[i].ops);
        pieces_free(f->sends[i].pieces);
    }
    fr_free(f->sends);
    fr_free(f);
}

/* Whether send s is to go in this attempt: the first sends what was joined, later ones
 * what flight_pick chose. */
static bool flight_todo(const wflight *f, const wsend *s)
{
    return s->rows && (f->attempt == 0 ? s->status == 0 : s->go);
}

/* Chooses the sends of a retry (mu held): those that failed retriably, but a batch refused
 * as out of order only once it is the lowest open of its unit, and not at all when the unit
 * stalled (it goes again under the unit's next id: flight_settle). */
static void flight_pick(firth_writer *w, wflight *f)
{
    for (int i = 0; i < f->n; i++) {
        wsend *s = &f->sends[i];
        const wunit *u = &w->units[s->unit];
        s->go = s->pieces && s->rows && retriable(s->status) &&
                (s->status != FR_ESEQUENCE || (s->seq == u->open_base && !u->stalled));
        if (s->go) s->first_open = s->seq == u->open_base;
    }
}

/* Makes the flights whose batches only wait, and one of which may now go on (the batch
 * before it was answered, or its unit stalled), due at once rather than at their next look
 * (mu held). */
static void flights_wake_waiting(firth_writer *w, int64_t now)
{
    for (wflight *f = w->flights; f; f = f->next) {
        if (f->wait_ms == 0 || f->retry_ns <= now) continue;
        for (int i = 0; i < f->n; i++) {
            const wsend *s = &f->sends[i];
            const wunit *u = &w->units[s->unit];
            if (s->pieces && s->status == FR_ESEQUENCE && (s->seq == u->open_base || u->stalled))
                f->retry_ns = now;
        }
    }
}

/* Encoded bytes of a flight that go out as a request without waiting for the flight's other
 * batches to be encoded: a large batch is on the wire while the next one is compressed,
 * small ones still share a request. */
#define FLIGHT_SEND_BYTES (256 << 10)

/* Says what to do about a batch the server's frames cannot carry (e->msg gives the sizes). */
static void frame_limit_hint(fr_error *e)
{
    char msg[FR_ERROR_MSG_MAX];
    int n = snprintf(msg, sizeof msg, "%s; a bucket's rows of one call go in one batch: "
                     "append fewer rows per call (or lower batch_bytes), or raise the "
                     "server's server.frame.bytes.max", e->msg);
    if (n > 0) memcpy(e->msg, msg, sizeof msg); /* cut short when too long */
}

/* Sends the encoded batches [*sent, f->k) in requests under the frame limit. A request that
 * cannot be sent fails its batches (retriably when the connection is the cause) and counts
 * as answered. */
static void flight_start(firth_writer *w, wflight *f, int *sent)
{
    for (int at = *sent; at < f->k; f->nreqs++) {
        int n = fr_remote_fit(w->t, f->units + at, f->k - at);
        f->cut[f->nreqs] = at;
        f->cut[f->nreqs + 1] = at + n;
        fr_error e = {0};
        if (fr_remote_start(w->t, f->units + at, n, w->targets, w->ntargets, f->writer_id,
                            w->max_in_flight > 1, flight_notify, f, &f->reqs[f->nreqs],
                            &e) < 0) {
            if (e.code == FR_ELIMIT && n == 1) frame_limit_hint(&e); /* fit() made it alone */
            for (int j = at; j < at + n; j++) {
                f->units[j].status = e.code;
                f->units[j].err = e;
            }
            flight_notify(f);
        }
        at += n;
    }
    *sent = f->k;
}

/* Encodes the batches to send and sends them (mu not held). A batch that cannot be encoded
 * fails alone. */
static void flight_send(firth_writer *w, wflight *f)
{
    int todo = 0;
    for (int i = 0; i < f->n; i++) todo += flight_todo(f, &f->sends[i]);
    if (todo == 0) return; /* all wait for earlier batches: settled again as they are */
    f->wait_ms = 0;
    f->units = fr_calloc((size_t)todo + 1, sizeof *f->units);
    f->map = fr_calloc((size_t)todo + 1, sizeof *f->map);
    f->reqs = fr_calloc((size_t)todo + 1, sizeof *f->reqs);
    f->cut = fr_calloc((size_t)todo + 2, sizeof *f->cut);
    if (!f->units || !f->map || !f->reqs || !f->cut) { /* nothing was sent: all fail */
        fr_error e = {0};
        fr_fail(&e, FR_ENOMEM, "out of memory sending rows");
        for (int i = 0; i < f->n; i++)
            if (flight_todo(f, &f->sends[i])) f->sends[i].status = e.code, f->sends[i].err = e;
        flight_unsend(f);
        flight_notify(f); /* answered (1) >= nreqs (0): settled as is */
        return;
    }
    int sent = 0;
    size_t unsent = 0;
    for (int i = 0; i < f->n; i++) {
        wsend *s = &f->sends[i];
        if (!flight_todo(f, s)) continue;
        fr_rput *p = &f->units[f->k];
        *p = (fr_rput){.partition_id = s->partition_id, .bucket = s->bucket,
                       .rows = fr_batch_num_rows(s->rows)};
        fr_bufpool_take(w->t->client->encoded, &p->records);
        fr_error e = {0};
        if (fr_remote_encode(w->t, s->rows, w->t->npk ? s->ops : NULL, f->writer_id, s->seq,
                             &p->records, &e) < 0) {
            fr_bufpool_give(w->t->client->encoded, &p->records);
            s->status = e.code;
            s->err = e;
            continue;
        }
        f->map[f->k++] = i;
        unsent += p->records.len;
        if (unsent >= FLIGHT_SEND_BYTES) {
            flight_start(w, f, &sent);
            unsent = 0;
        }
    }
    flight_start(w, f, &sent);
}

/* Takes the answers of an answered flight into its sends' statuses (mu not held). */
static void flight_take(firth_writer *w, wflight *f)
{
    for (int r = 0; r < f->nreqs; r++) {
        int from = f->cut[r], n = f->cut[r + 1] - from;
        if (f->reqs[r]) {
            fr_error e = {0};
            int rc = fr_remote_finish(w->t, f->reqs[r], f->units + from, n, &e);
            for (int j = from; rc < 0 && j < from + n; j++) {
                f->units[j].status = rc;
                f->units[j].err = e;
            }
        }
        for (int j = from; j < from + n; j++) {
            wsend *s = &f->sends[f->map[j]];
            s->status = f->units[j].status;
            s->err = f->units[j].err;
            s->changed = w->t->npk ? f->units[j].count : 0;
        }
    }
    flight_unsend(f);
}

/* Settles the sends of f that are done (mu held): into *done, their batches freed. True when
 * every send is; otherwise f waits for its retry. */
static bool flight_settle(firth_writer *w, wflight *f, int64_t now, wcall **done)
{
    bool again = f->retries < w->o.retries;
    int failed = 0, waiting = 0;
    for (int i = 0; i < f->n; i++) {
        wsend *s = &f->sends[i];
        if (!s->pieces) continue;
        wunit *u = &w->units[s->unit];
        /* Out of order behind a batch still open: again once that one is answered. Out of
         * order as the lowest open, or behind a failure: the gap stays, so the batch goes
         * again under the unit's next id (nothing of it was written). */
        if (s->status == FR_ESEQUENCE && !s->first_open && !u->stalled) {
            waiting++;
            continue;
        }
        if (s->rows && again && s->status == FR_EIO) {
            failed++;
            continue;
        }
        if (s->status == FR_ESEQUENCE) redo_batch(u, s->pieces, s->seq);
        else finish_batch(w, u, s->pieces, s->seq, s->status, &s->err, s->changed, done);
        s->pieces = NULL;
        fr_batch_free(s->rows);
        fr_free(s->ops);
        s->rows = NULL;
        s->ops = NULL;
    }
    if (failed + waiting == 0) return true;
    f->attempt++;
    f->answered = 0;
    if (failed == 0) { /* only waiting: soon, less often while the wait lasts */
        f->wait_ms = f->wait_ms == 0 ? 1 : f->wait_ms * 2 < 64 ? f->wait_ms * 2 : 64;
        f->retry_ns = now + f->wait_ms * 1000000;
        return false;
    }
    f->retries++;
    f->retry_ns = now + f->backoff_ms * 1000000;
    f->backoff_ms = f->backoff_ms * 2 < 5000 ? f->backoff_ms * 2 : 5000;
    return false;
}

/* A flight of ready units' next batches, up to FLIGHT_SEND_BYTES of rows (mu held); NULL
 * when out of memory. A flight is settled once all of its requests are answered: small
 * flights let a unit whose answer came go on without waiting for the others' fsyncs. */
static wflight *flight_new(firth_writer *w, int ready, int64_t now)
{
    wflight *f = fr_calloc(1, sizeof *f);
    wsend *sends = fr_calloc((size_t)ready, sizeof *sends);
    if (!f || !sends) {
        fr_free(f);
        fr_free(sends);
        return NULL;
    }
    *f = (wflight){.w = w, .sends = sends, .backoff_ms = w->o.retry_backoff_ms};
    int64_t bytes = 0;
    int start = w->next_unit; /* each unit once: a unit may have room for a second batch */
    for (int k = 0; k < w->nunits && bytes < FLIGHT_SEND_BYTES; k++) {
        int i = (start + k) % w->nunits;
        wunit *u = &w->units[i];
        if (!unit_ready(w, u, now)) continue;
        if (f->n > 0 && u->writer_id != f->writer_id) continue; /* the next flight's */
        f->writer_id = u->writer_id;
        sends[f->n] = (wsend){.unit = i};
        bytes += take_batch(w, u, &sends[f->n]);
        f->n++;
        w->next_unit = (i + 1) % w->nunits;
    }
    return f;
}

/* Joins the pieces of each of f's batches into one batch of rows (mu not held). */
static void flight_join(firth_writer *w, wflight *f)
{
    for (int i = 0; i < f->n; i++) {
        wsend *s = &f->sends[i];
        fr_error e = {0};
        s->status = join_pieces(w, s->pieces, &s->rows, &s->ops, &e);
        s->err = e;
    }
}

/* One turn of the remote writer's thread (mu held on entry and exit): a new flight for the
 * ready units, the answered flights settled, the retries due sent. False when there was
 * nothing to do; *wake is then when something is due. */
static bool remote_turn(firth_writer *w, int64_t *wake, wcall **done)
{
    int64_t now = fr_monotonic_ns();
    int ready = units_ready(w, now, wake);
    bool busy = false;
    for (wflight *f = w->flights; f; f = f->next) {
        if (f->retry_ns > 0 && f->retry_ns > now && f->retry_ns < *wake) *wake = f->retry_ns;
        busy |= f->retry_ns > 0 ? f->retry_ns <= now : f->answered >= f->nreqs;
    }
    if (ready == 0 && !busy) return false;
    wflight *nf = ready ? flight_new(w, ready, now) : NULL;
    wflight *answered[64];
    int nans = 0;
    for (wflight *f = w->flights; f && nans < 64; f = f->next) {
        if (f->retry_ns > 0 ? f->retry_ns <= now : f->answered >= f->nreqs) answered[nans++] = f;
        if (f->retry_ns > 0 && f->retry_ns <= now) flight_pick(w, f);
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < nans; i++) {
        if (answered[i]->retry_ns > 0) {
            answered[i]->retry_ns = 0;
            flight_send(w, answered[i]);
        } else {
            flight_take(w, answered[i]);
        }
    }
    if (nf) {
        flight_join(w, nf);
        flight_send(w, nf);
    }
    pthread_mutex_lock(&w->mu);
    if (nf) {
        nf->next = w->flights;
        w->flights = nf;
    }
    for (wflight **pf = &w->flights; *pf;) {
        wflight *f = *pf;
        bool taken = false;
        for (int i = 0; i < nans && !taken; i++) taken = answered[i] == f && f->nreqs == 0;
        if (taken && flight_settle(w, f, now, done)) {
            *pf = f->next;
            flight_free(f);
            continue;
        }
        pf = &f->next;
    }
    if (nans > 0) flights_wake_waiting(w, now);
    if (ready && !nf) /* out of memory for the flight: wait a little before trying again */
        timed_wait(&w->work_cv, &w->mu, fr_monotonic_ns() + 10000000);
    return true;
}

/* ---- the writer's thread ------------------------------------------------------------------- */

/* An embedded writer's round: the ready units' batches written one after the other. */
static bool local_turn(firth_writer *w, int64_t *wake, wcall **done)
{
    int64_t now = fr_monotonic_ns();
    int ready = units_ready(w, now, wake);
    if (ready == 0) return false;
    wflight *f = flight_new(w, ready, now);
    if (!f) { /* out of memory for the list: wait a little before trying again */
        timed_wait(&w->work_cv, &w->mu, fr_monotonic_ns() + 10000000);
        return true;
    }
    pthread_mutex_unlock(&w->mu);
    flight_join(w, f);
    int nsend = 0;
    for (int i = 0; i < f->n; i++) nsend += f->sends[i].status == 0;
    if (nsend > 0) send_all(w, f->sends, f->n, f->writer_id);
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < f->n; i++) {
        wsend *s = &f->sends[i];
        finish_batch(w, &w->units[s->unit], s->pieces, s->seq, s->status, &s->err, s->changed,
                     done);
        s->pieces = NULL;
    }
    flight_free(f);
    return true;
}

static void *writer_main(void *arg)
{
    firth_writer *w = arg;
    pthread_setname_np(pthread_self(), "firth-writer");
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int64_t wake = INT64_MAX;
        wcall *done = NULL;
        bool did = w->client->remote ? remote_turn(w, &wake, &done) : local_turn(w, &wake, &done);
        if (!did) {
            if (w->stopping && !w->open && !w->flights) break;
            if (wake == INT64_MAX) pthread_cond_wait(&w->work_cv, &w->mu);
            else timed_wait(&w->work_cv, &w->mu, wake);
            continue;
        }
        pthread_cond_broadcast(&w->done_cv);
        if (done) {
            w->acking++;
            pthread_mutex_unlock(&w->mu);
            run_callbacks(w, done);
            pthread_mutex_lock(&w->mu);
            w->acking--;
            pthread_cond_broadcast(&w->done_cv);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- the public calls ------------------------------------------------------------------------ */

static int writer_fail(firth_error *err, const fr_error *e) { return firth_error_from(e, err); }

static int resolve_targets(firth_writer *w, fr_error *err)
{
    int nf = fr_schema_num_fields(w->t->schema), n = 0;
    int *cols = fr_calloc((size_t)nf + 1, sizeof *cols);
    FR_CHECK(cols, FR_ENOMEM, err, "out of memory for target columns");
    int rc = fr_ctable_columns(w->t, w->targets_text, cols, &n, err);
    if (rc < 0) {
        fr_free(cols);
        return rc;
    }
    /* Ascending, as the engine takes them; every column is a whole-row write. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && cols[j - 1] > cols[j]; j--) {
            int x = cols[j];
            cols[j] = cols[j - 1];
            cols[j - 1] = x;
        }
    w->targets = cols;
    w->ntargets = n == nf ? 0 : n;
    return FR_OK;
}

static void writer_free(firth_writer *w)
{
    for (int i = 0; i < w->nunits; i++) {
        pieces_free(w->units[i].head);
        pieces_free(w->units[i].redo);
    }
    for (wcall *c = w->open, *next; c; c = next) {
        next = c->next;
        fr_free(c);
    }
    fr_free(w->units);
    fr_free(w->pids);
    fr_free(w->targets);
    fr_free(w->targets_text);
    fr_ctable_free(w->t);
    pthread_cond_destroy(&w->work_cv);
    pthread_cond_destroy(&w->done_cv);
    pthread_mutex_destroy(&w->mu);
    fr_free(w);
}

int firth_writer_open(firth_client *c, const char *table, const firth_writer_options *o,
                      firth_writer **out, firth_error *err)
{
    if (!c || !table || !out) return fr_client_fail(err, FIRTH_EINVAL, "writer: a NULL argument");
    firth_writer_options d;
    firth_writer_options_init(&d);
    if (!o) o = &d;
    if (o->batch_bytes <= 0 || o->linger_ms < 0 || o->buffer_bytes <= 0 || o->retries < 0 ||
        o->retry_backoff_ms < 0 || o->writer_id < -1 || o->max_in_flight < 1 ||
        o->max_in_flight > 64)
        return fr_client_fail(err, FIRTH_EINVAL, "writer options: batch_bytes and buffer_bytes "
                              "must be positive, linger_ms, retries and retry_backoff_ms not "
                              "negative, writer_id -1 or an id, max_in_flight 1 to 64");
    firth_writer *w = fr_calloc(1, sizeof *w);
    if (!w) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory opening a writer");
    w->client = c;
    w->o = *o;
    pthread_mutex_init(&w->mu, NULL);
    cond_mono(&w->work_cv);
    cond_mono(&w->done_cv);
    fr_error e = {0};
    int rc = fr_ctable_open(c, table, &w->t, &e);
    if (rc == 0 && o->target_columns) {
        if (!w->t->npk)
            rc = fr_fail(&e, FR_EINVAL, "table %s has no primary key: target columns are for "
                         "upserts", w->t->qname);
        else if (!(w->targets_text = fr_strdup(o->target_columns)))
            rc = fr_fail(&e, FR_ENOMEM, "out of memory opening a writer");
        else
            rc = resolve_targets(w, &e);
    }
    w->o.target_columns = w->targets_text;
    w->writer_id = o->writer_id >= 0 ? o->writer_id : fr_client_random_writer_id();
    /* Several batches of a unit in flight need the log's in-order check: remote log tables. */
    w->max_in_flight = rc == 0 && c->remote && !w->t->npk ? o->max_in_flight : 1;
    if (rc == 0 && pthread_create(&w->thread, NULL, writer_main, w) != 0)
        rc = fr_fail(&e, FR_ENOMEM, "cannot start the writer's thread");
    if (rc < 0) {
        writer_free(w);
        return writer_fail(err, &e);
    }
    w->thread_started = true;
    *out = w;
    return FIRTH_OK;
}

/* The pieces of a call: one per destination, with the destination's unit (mu not held:
 * routing may ask the server for partitions). */
typedef struct wroute {
    wpiece **pieces;
    int64_t *pids;
    int *buckets;
    int n;
} wroute;

static void wroute_free(wroute *r)
{
    for (int i = 0; r->pieces && i < r->n; i++)
        if (r->pieces[i]) piece_free(r->pieces[i]);
    fr_free(r->pieces);
    fr_free(r->pids);
    fr_free(r->buckets);
}

static int new_piece(const fr_batch *b, const uint8_t *ops, const int64_t *rows, int64_t n,
                     wpiece **out, fr_error *err)
{
    wpiece *p = fr_calloc(1, sizeof *p);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory queueing rows");
    int rc;
    if (rows) rc = fr_gather_rows(b, rows, n, &p->rows, err);
    else if (n == fr_batch_num_rows(b)) rc = share_rows(b, &p->rows, err);
    else rc = fr_batch_slice(b, 0, n, &p->rows, err);
    if (rc == 0 && ops) {
        p->ops = fr_malloc((size_t)n);
        if (!p->ops) rc = fr_fail(err, FR_ENOMEM, "out of memory queueing rows");
        for (int64_t i = 0; rc == 0 && i < n; i++) p->ops[i] = ops[rows ? rows[i] : i];
    }
    if (rc < 0) {
        piece_free(p);
        return rc;
    }
    p->bytes = fr_gather_bytes(p->rows);
    *out = p;
    return FR_OK;
}

static int route_call(firth_writer *w, const fr_batch *b, const uint8_t *ops, wroute *r,
                      fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    if (!w->client->remote) {
        r->pieces = fr_calloc(1, sizeof *r->pieces);
        r->pids = fr_calloc(1, sizeof *r->pids);
        r->buckets = fr_calloc(1, sizeof *r->buckets);
        FR_CHECK(r->pieces && r->pids && r->buckets, FR_ENOMEM, err, "out of memory queueing");
        r->pids[0] = -1;
        r->n = 1;
        return new_piece(b, ops, NULL, rows, &r->pieces[0], err);
    }
    int32_t *dest = NULL;
    int64_t *part_ids = NULL, *order = NULL, *start = NULL;
    int nparts = 0, rc = FR_OK;
    FR_GOTO(fr_remote_route(w->t, b, -1, &dest, &part_ids, &nparts, err));
    int ndest = nparts * w->t->nbuckets;
    order = fr_malloc(sizeof *order * (size_t)(rows + 1));
    start = fr_malloc(sizeof *start * ((size_t)ndest + 1));
    r->pieces = fr_calloc((size_t)ndest + 1, sizeof *r->pieces);
    r->pids = fr_calloc((size_t)ndest + 1, sizeof *r->pids);
    r->buckets = fr_calloc((size_t)ndest + 1, sizeof *r->buckets);
    if (!order || !start || !r->pieces || !r->pids || !r->buckets) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory queueing rows");
        goto fail;
    }
    FR_GOTO(fr_route_group(dest, rows, ndest, order, start, err));
    for (int d = 0; d < ndest; d++) {
        int64_t n = start[d + 1] - start[d];
        if (n == 0) continue;
        r->pids[r->n] = part_ids[d / w->t->nbuckets];
        r->buckets[r->n] = d % w->t->nbuckets;
        FR_GOTO(new_piece(b, ops, n == rows ? NULL : order + start[d], n, &r->pieces[r->n], err));
        r->n++;
    }
fail:
    fr_free(dest);
    fr_free(part_ids);
    fr_free(order);
    fr_free(start);
    return rc;
}

static bool call_open(const firth_writer *w, uint64_t token)
{
    for (const wcall *c = w->open; c && c->token <= token; c = c->next)
        if (c->token == token) return true;
    return false;
}

static int writer_put(firth_writer *w, const fr_batch *b, const uint8_t *ops, uint64_t *token,
                      fr_error *err)
{
    FR_TRY(fr_remote_check_batch(w->t, b, err));
    int64_t rows = fr_batch_num_rows(b);
    for (int64_t i = 0; ops && i < rows; i++) {
        FR_CHECK(ops[i] == FIRTH_OP_UPSERT || ops[i] == FIRTH_OP_DELETE, FR_EINVAL, err,
                 "row %lld: operation %d is neither FIRTH_OP_UPSERT nor FIRTH_OP_DELETE",
                 (long long)i + 1, ops[i]);
        FR_CHECK(w->t->npk || ops[i] == FIRTH_OP_UPSERT, FR_EINVAL, err,
                 "table %s has no primary key: rows cannot be deleted from it", w->t->qname);
    }
    if (!w->t->npk) ops = NULL;
    wroute r = {0};
    wcall *call = fr_calloc(1, sizeof *call);
    int rc = call ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory queueing rows");
    if (rc == 0 && rows > 0) rc = route_call(w, b, ops, &r, err);
    int64_t bytes = 0;
    for (int i = 0; i < r.n; i++) bytes += r.pieces[i]->bytes;
    int *units = rc == 0 ? fr_calloc((size_t)r.n + 1, sizeof *units) : NULL;
    if (rc == 0 && !units) rc = fr_fail(err, FR_ENOMEM, "out of memory queueing rows");
    pthread_mutex_lock(&w->mu);
    while (rc == 0 && !w->stopping && w->buffered > 0 && w->buffered + bytes > w->o.buffer_bytes)
        pthread_cond_wait(&w->done_cv, &w->mu);
    if (rc == 0 && w->stopping) rc = fr_fail(err, FR_ESTATE, "the writer is closing");
    for (int i = 0; rc == 0 && i < r.n; i++)
        rc = unit_index(w, r.pids[i], r.buckets[i], &units[i], err);
    if (rc < 0) {
        pthread_mutex_unlock(&w->mu);
        fr_free(call);
        fr_free(units);
        wroute_free(&r);
        return rc;
    }
    call->token = ++w->next_token;
    call->pending = r.n;
    call->rows = rows;
    if (token) *token = call->token;
    int64_t now = fr_monotonic_ns();
    for (int i = 0; i < r.n; i++) {
        wunit *u = &w->units[units[i]];
        wpiece *p = r.pieces[i];
        r.pieces[i] = NULL;
        p->call = call;
        p->queued_ns = now;
        if (!u->head) u->oldest_ns = now;
        if (u->tail) u->tail->next = p;
        else u->head = p;
        u->tail = p;
        u->bytes += p->bytes;
        w->buffered += p->bytes;
    }
    if (r.n == 0) { /* nothing to send: done at once */
        pthread_mutex_unlock(&w->mu);
        if (w->o.on_ack) w->o.on_ack(w->o.ack_ctx, call->token, 0, NULL);
        fr_free(call);
    } else {
        call->prev = w->open_tail;
        if (w->open_tail) w->open_tail->next = call;
        else w->open = call;
        w->open_tail = call;
        pthread_mutex_unlock(&w->mu);
        pthread_cond_signal(&w->work_cv);
    }
    fr_free(units);
    wroute_free(&r);
    return FR_OK;
}

static int put_public(firth_writer *w, const firth_batch *batch, const uint8_t *ops,
                      uint64_t *token, firth_error *err)
{
    if (!w || !batch) return fr_client_fail(err, FIRTH_EINVAL, "writer: no writer or no batch");
    fr_error e = {0};
    int rc = writer_put(w, batch->batch, ops, token, &e);
    return rc < 0 ? writer_fail(err, &e) : FIRTH_OK;
}

int firth_writer_append(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err)
{
    return put_public(w, batch, NULL, token, err);
}

int firth_writer_upsert(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err)
{
    if (w && !w->t->npk)
        return fr_client_fail(err, FIRTH_EINVAL, "table %s has no primary key: append to it",
                              w->t->qname);
    return put_public(w, batch, NULL, token, err);
}

int firth_writer_delete(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err)
{
    if (!w || !batch) return fr_client_fail(err, FIRTH_EINVAL, "writer: no writer or no batch");
    int64_t rows = firth_batch_num_rows(batch);
    uint8_t *ops = fr_malloc((size_t)rows + 1);
    if (!ops) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory queueing deletes");
    memset(ops, FIRTH_OP_DELETE, (size_t)rows);
    int rc = put_public(w, batch, ops, token, err);
    fr_free(ops);
    return rc;
}

int firth_writer_write(firth_writer *w, const firth_batch *batch, const uint8_t *ops,
                       uint64_t *token, firth_error *err)
{
    return put_public(w, batch, ops, token, err);
}

int firth_writer_append_arrow(firth_writer *w, struct ArrowSchema *schema,
                              struct ArrowArray *array, uint64_t *token, firth_error *err)
{
    firth_batch *b = NULL;
    int rc = firth_batch_import(schema, array, &b, err);
    if (rc < 0) return rc;
    rc = firth_writer_append(w, b, token, err);
    firth_batch_free(b);
    return rc;
}

int firth_writer_wait(firth_writer *w, uint64_t token, firth_error *err)
{
    if (!w) return fr_client_fail(err, FIRTH_EINVAL, "writer: no writer");
    pthread_mutex_lock(&w->mu);
    if (token == 0 || token > w->next_token) {
        pthread_mutex_unlock(&w->mu);
        return fr_client_fail(err, FIRTH_EINVAL, "writer: no call has token %llu",
                              (unsigned long long)token);
    }
    while (call_open(w, token) || w->acking) pthread_cond_wait(&w->done_cv, &w->mu);
    int status = 0;
    char msg[FR_ERROR_MSG_MAX] = "";
    int kept = w->nfailures < WRITER_FAILURES_KEPT ? w->nfailures : WRITER_FAILURES_KEPT;
    for (int i = 0; i < kept; i++) {
        if (w->failures[i].token == token) {
            status = w->failures[i].status;
            snprintf(msg, sizeof msg, "%s", w->failures[i].msg);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return status < 0 ? fr_client_fail(err, status, "%s", msg) : FIRTH_OK;
}

int firth_writer_flush(firth_writer *w, firth_error *err)
{
    if (!w) return fr_client_fail(err, FIRTH_EINVAL, "writer: no writer");
    pthread_mutex_lock(&w->mu);
    w->flushing++;
    uint64_t target = w->next_token;
    pthread_cond_signal(&w->work_cv);
    /* Done when every call up to target is complete and its callback has returned. */
    while ((w->open && w->open->token <= target) || w->acking)
        pthread_cond_wait(&w->done_cv, &w->mu);
    w->flushing--;
    int status = w->first_status;
    char msg[FR_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", w->first_msg);
    w->first_status = 0;
    pthread_mutex_unlock(&w->mu);
    return status < 0 ? fr_client_fail(err, status, "%s", msg) : FIRTH_OK;
}

void firth_writer_stats(firth_writer *w, int64_t *rows_acked, int64_t *rows_changed,
                        int64_t *calls_failed)
{
    pthread_mutex_lock(&w->mu);
    if (rows_acked) *rows_acked = w->rows_acked;
    if (rows_changed) *rows_changed = w->rows_changed;
    if (calls_failed) *calls_failed = w->calls_failed;
    pthread_mutex_unlock(&w->mu);
}

int64_t firth_writer_id(const firth_writer *w) { return w->writer_id; }

int firth_writer_close(firth_writer *w, firth_error *err)
{
    if (!w) return FIRTH_OK;
    int rc = firth_writer_flush(w, err);
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->work_cv);
    pthread_cond_broadcast(&w->done_cv);
    pthread_mutex_unlock(&w->mu);
    if (w->thread_started) pthread_join(w->thread, NULL);
    writer_free(w);
    return rc;
}
