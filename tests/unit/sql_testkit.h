/* sql_testkit.h — the engine the SQL tests run statements on: opened in a scratch directory
 * of its own under FIRTH_TEST_TMP (else /tmp), without fsync, background timers or tiering
 * threads, so that every result follows from the statements alone; closed and removed. */
#ifndef FIRTH_SQL_TESTKIT_H
#define FIRTH_SQL_TESTKIT_H

#include <stdio.h>
#include <stdlib.h>

#include "sql/sql.h"

/* Makes dir (cap bytes) "<tmp>/<name>.XXXXXX", opens an engine there and a session on it.
 * Returns 0, or -1 after saying why on stderr. */
static inline int sql_tk_open(char *dir, size_t cap, const char *name, fr_engine **engine,
                              fr_sql_session **session)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error err = {0};
    if (fr_mkdirs(base, &err) < 0) return -1;
    snprintf(dir, cap, "%s/%s.XXXXXX", base, name);
    if (!mkdtemp(dir)) return -1;
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.auto_partition_check_interval_ms = 0;
    o.lake_tiering_threads = 0;
    if (fr_engine_open(&o, engine, &err) < 0 || fr_sql_session_new(*engine, session, &err) < 0) {
        fprintf(stderr, "%s setup: %s\n", name, err.msg);
        return -1;
    }
    return 0;
}

static inline void sql_tk_close(const char *dir, fr_engine *engine, fr_sql_session *session)
{
    fr_sql_session_free(session);
    fr_engine_close(engine);
    fr_error err = {0};
    fr_remove_tree(dir, &err);
}

#endif
