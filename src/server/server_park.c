/* server_park.c — fetches that wait for records (long polling), on the loop thread: a
 * parked fetch runs again when one of its buckets' logs has records past where it would
 * read, or at its deadline, or at shutdown; a fetch whose connection closed is sent back to
 * a worker to be released.
 *
 * Waking: every log a parked fetch reads has the server's watcher (srv_on_append), which
 * runs on the appending thread after each append and, while any fetch is parked, sets a
 * flag and wakes the loop (srv_wake_loop); the loop then looks at the end offsets of the
 * parked fetches' logs. Parking counts the fetch before it checks the offsets a last time,
 * so an append that lands between a fetch's read and its parking still wakes it.
 *
 * Invariants: a parked fetch is in the list exactly while it is counted in parked_count;
 * one timer is armed at the earliest deadline of the list. */
#include "server/server_int.h"

void srv_unpark(fr_server *s, srv_job *j)
{
    if (j->park_prev) j->park_prev->park_next = j->park_next;
    else s->parked = j->park_next;
    if (j->park_next) j->park_next->park_prev = j->park_prev;
    j->park_prev = j->park_next = NULL;
    atomic_fetch_sub(&s->parked_count, 1);
    atomic_fetch_sub(&s->metrics->fetches_parked, 1);
}

void srv_resubmit(fr_server *s, srv_job *j)
{
    s->jobs_live++;
    fr_error err = {0};
    if (srv_pool_push(srv_pool_of(s, j), srv_job_task, j, &err) < 0) {
        /* No memory for a queue entry: run it here rather than lose it. */
        srv_job_task(j);
    }
}

/* Whether one of the buckets a parked fetch reads has records past its fetch offset. */
static bool park_ready(const srv_job *j)
{
    for (int i = 0; i < j->nwait; i++)
        if (fr_log_end_offset(j->wait_logs[i]) > j->wait_offsets[i]) return true;
    return false;
}

static void on_park_timer(uv_timer_t *t);

static void rearm_park_timer(fr_server *s)
{
    int64_t first = INT64_MAX;
    for (srv_job *j = s->parked; j; j = j->park_next)
        if (j->deadline_ns < first) first = j->deadline_ns;
    if (first == INT64_MAX) {
        uv_timer_stop(&s->park_timer);
        return;
    }
    int64_t wait_ns = first - fr_monotonic_ns();
    uint64_t ms = wait_ns <= 0 ? 0 : (uint64_t)((wait_ns + 999999) / 1000000);
    uv_timer_start(&s->park_timer, on_park_timer, ms, 0);
}

static void on_park_timer(uv_timer_t *t)
{
    fr_server *s = t->data;
    int64_t now = fr_monotonic_ns();
    for (srv_job *j = s->parked, *next; j; j = next) {
        next = j->park_next;
        if (j->deadline_ns > now) continue;
        srv_unpark(s, j);
        j->final = true;
        srv_resubmit(s, j);
    }
    rearm_park_timer(s);
}

void srv_park(fr_server *s, srv_job *j)
{
    if (s->stopping || j->conn->closing) {
        j->final = true;
        j->cancelled = j->conn->closing;
        srv_resubmit(s, j);
        return;
    }
    j->park_prev = NULL;
    j->park_next = s->parked;
    if (s->parked) s->parked->park_prev = j;
    s->parked = j;
    /* Counted before the check below, so that an append after the check wakes the loop. */
    atomic_fetch_add(&s->parked_count, 1);
    atomic_fetch_add(&s->metrics->fetches_parked, 1);
    if (park_ready(j)) {
        srv_unpark(s, j);
        srv_resubmit(s, j);
        return;
    }
    rearm_park_timer(s);
}

/* After an append: every parked fetch whose buckets grew runs again. */
void srv_wake_parked(fr_server *s, bool all)
{
    bool changed = false;
    for (srv_job *j = s->parked, *next; j; j = next) {
        next = j->park_next;
        if (!all && !park_ready(j)) continue;
        srv_unpark(s, j);
        if (all) j->final = true;
        srv_resubmit(s, j);
        changed = true;
    }
    if (changed) rearm_park_timer(s);
}

void srv_on_append(void *ctx, fr_log *log, int64_t end_offset)
{
    (void)log;
    (void)end_offset;
    fr_server *s = ctx;
    if (atomic_load(&s->parked_count) == 0) return;
    atomic_store(&s->appended, true);
    srv_wake_loop(s);
}
