/* sql.h — firth's SQL: lexer, parser, planner and a vectorized executor over Arrow batches.
 * It runs next to the engine (in the server, or in-process when embedded), never in a
 * remote client. docs/SQL.md is the reference of the dialect.
 *
 * Statements (this layer grows with the project): CREATE DATABASE [IF NOT EXISTS] d;
 * CREATE TABLE [IF NOT EXISTS] [d.]t (col TYPE [NOT NULL] [PRIMARY KEY NOT ENFORCED]
 * [COMMENT 'c'], ..., [PRIMARY KEY (cols) NOT ENFORCED]) [PARTITIONED BY (cols)]
 * [WITH ('k'='v', ...)]; DROP DATABASE [IF EXISTS] d [CASCADE|RESTRICT];
 * DROP TABLE [IF EXISTS] t; ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (k = v, ...) ...;
 * ALTER TABLE t DROP [IF EXISTS] PARTITION (k = v, ...), ...; SHOW DATABASES;
 * SHOW TABLES [FROM d]; SHOW PARTITIONS t [PARTITION (...)]; SHOW CREATE TABLE t;
 * DESCRIBE|DESC t; USE d; INSERT INTO t [(cols)] VALUES (...), ... or SELECT ... (an
 * upsert, partial when the columns leave some out, into a primary-key table); [EXPLAIN] SELECT [DISTINCT] items
 * [FROM t [WHERE e]] [GROUP BY e, ...] [HAVING e] [ORDER BY e [ASC|DESC] [NULLS
 * FIRST|LAST], ...] [LIMIT n] (items may hold COUNT, SUM, MIN, MAX and AVG; expressions
 * may use CASE, COALESCE, NULLIF, ABS, LOWER, UPPER and CHAR_LENGTH; t may be
 * t$changelog, t$lake or t$lake_snapshots; a lake-enabled table is read by a union read of
 * its lake and its log); [EXPLAIN] UPDATE t SET c = e, ...
 * [WHERE e] and [EXPLAIN] DELETE FROM t [WHERE e] on primary-key tables; CALL
 * sys.tier('db.t') (one tiering round now; returns the snapshot id).
 * Several statements are separated by ';'.
 *
 * Errors of a statement carry its position: "line 3, column 14: unknown column 'x'". */
#ifndef FIRTH_SQL_H
#define FIRTH_SQL_H

#include "engine/engine.h"

#define FR_SQL_TEXT_BYTES_MAX (16 << 20)
#define FR_SQL_VALUES_ROWS_MAX 1000000
#define FR_SQL_PARTITIONS_MAX 1024     /* partitions named by one ALTER TABLE */
#define FR_SQL_LOOKUP_KEYS_MAX 100000  /* keys (or prefixes) one statement looks up */

/* A session holds the current database (USE). Not thread-safe: one per connection. */
typedef struct fr_sql_session fr_sql_session;

int fr_sql_session_new(fr_engine *engine, fr_sql_session **out, fr_error *err);
void fr_sql_session_free(fr_sql_session *s);
const char *fr_sql_session_database(const fr_sql_session *s); /* "default" at start */

/* What a statement produced, delivered through callbacks as it runs:
 *   begin(schema)   once for a statement that returns rows (the schema lives until end)
 *   rows(batch)     for each result batch (owned by the callee)
 *   end(message)    once per statement: a message for statements without rows
 *                   ("database d created", "3 rows inserted") or NULL
 * Any callback returning non-zero stops execution. */
typedef struct fr_sql_sink {
    void *ctx;
    int (*begin)(void *ctx, const fr_schema *schema, fr_error *err);
    int (*rows)(void *ctx, fr_batch *batch, fr_error *err);
    int (*end)(void *ctx, const char *message, fr_error *err);
} fr_sql_sink;

/* Parses the whole text (a syntax error anywhere runs nothing), then executes its
 * statements in order, stopping at the first error (statements before it stay done) or
 * when a sink callback returns non-zero: a negative return is an error (the callback sets
 * err, or gets a generic message), a positive one stops quietly and returns 0. The sink
 * may be NULL, and so may any of its callbacks. */
int fr_sql_execute(fr_sql_session *s, const char *text, size_t len, const fr_sql_sink *sink,
                   fr_error *err);

/* Parses one expression (as in WHERE) and binds it to schema. The tree lives in arena.
 * Errors start with the position in text ("line 1, column 5: ..."). */
int fr_sql_parse_expr(const char *text, size_t len, const fr_schema *schema, fr_arena *arena,
                      fr_expr **out, fr_error *err);

/* Splits "db.t" or "t" (with the session's database) into its parts, checking the names:
 * bare names are lower-cased, `quoted` ones unquoted. FR_EINVAL for a malformed name,
 * FR_ELIMIT when a part does not fit its buffer. */
int fr_sql_resolve_table(const fr_sql_session *s, const char *name, char *db, size_t dbcap,
                         char *table, size_t tcap, fr_error *err);

/* Parses text into statements and discards them: the fuzz target's entry point. */
int fr_sql_parse_only(const char *text, size_t len, fr_error *err);

#endif
