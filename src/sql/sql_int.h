/* sql_int.h — what the files of the SQL module share: tokens and the lexer, the syntax tree
 * the parser builds (all of it in one arena per parse), and the helpers that put a source
 * position in front of an error message.
 *
 * Invariants: every node of a tree lives in the arena given to the parser and dies with it;
 * every position is 1-based (line, column) in the whole text handed to the parser, columns
 * counted in characters (UTF-8 continuation bytes do not count); no tree is deeper than
 * FR_EXPR_DEPTH_MAX, so that walking one recursively is safe. */
#ifndef FIRTH_SQL_INT_H
#define FIRTH_SQL_INT_H

#include "expr/expr.h"
#include "sql/sql.h"

/* ---- positions and errors -------------------------------------------------------------- */

typedef struct sql_pos {
    int line, col;
} sql_pos;

/* Fails with "line L, column C: <message>". */
int sql_fail_at(fr_error *err, int code, sql_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Puts "line L, column C: " in front of a message a callee set, unless it already starts with
 * a position. Returns err->code. */
int sql_wrap_at(fr_error *err, sql_pos pos);

/* ---- tokens ---------------------------------------------------------------------------- */

typedef enum sql_tok_kind {
    SQL_T_EOF = 0,
    SQL_T_IDENT,   /* a bare word: a keyword or a name, told apart by the parser */
    SQL_T_QIDENT,  /* `a quoted name` (`` inside stands for one backquote) */
    SQL_T_INTEGER, /* 123 */
    SQL_T_DECIMAL, /* 12.50, .5, 5. */
    SQL_T_FLOAT,   /* 1.5e3 */
    SQL_T_STRING,  /* 'text' ('' inside stands for one quote) */
    SQL_T_BYTES,   /* X'0A1B' */
    SQL_T_LPAREN, SQL_T_RPAREN, SQL_T_COMMA, SQL_T_SEMI, SQL_T_DOT,
    SQL_T_STAR, SQL_T_PLUS, SQL_T_MINUS, SQL_T_SLASH, SQL_T_PERCENT, SQL_T_CONCAT,
    SQL_T_EQ, SQL_T_NE, SQL_T_LT, SQL_T_LE, SQL_T_GT, SQL_T_GE,
} sql_tok_kind;

/* A token points into the text; p/n cover it whole (quotes included). */
typedef struct sql_token {
    sql_tok_kind kind;
    const char *p;
    size_t n;
    size_t off; /* byte offset of p in the text */
    sql_pos pos;
} sql_token;

typedef struct sql_lexer {
    const char *text;
    size_t len;
    size_t off;
    int line, col;
} sql_lexer;

void sql_lexer_init(sql_lexer *lx, const char *text, size_t len);
/* Reads the next token (SQL_T_EOF at the end, again and again). Skips blanks and comments.
 * Errors: FR_ESYNTAX for an unknown character, an unterminated string, quoted name or
 * comment, a malformed number; FR_ELIMIT for a quoted name longer than FR_NAME_BYTES_MAX. */
int sql_lex(sql_lexer *lx, sql_token *out, fr_error *err);
/* Describes a token for messages: "end of input", "'FROM'", "'abc...'" (shortened). */
void sql_token_describe(const sql_token *t, char *out, size_t cap);
/* True when t is the bare word kw (ASCII, case-insensitive). */
bool sql_tok_is(const sql_token *t, const char *kw);
/* Words that cannot be a bare name (SELECT, FROM, WHERE, AND, NULL, ...) are those of
 * fr_expr_word_reserved: one list serves the parser and the expression printer, so that
 * what fr_expr_format writes bare always reads back as a name. */

/* ---- the syntax tree ------------------------------------------------------------------- */

typedef enum sql_stmt_kind {
    SQL_CREATE_DATABASE = 1,
    SQL_CREATE_TABLE,
    SQL_DROP_DATABASE,
    SQL_DROP_TABLE,
    SQL_SHOW_DATABASES,
    SQL_SHOW_TABLES,
    SQL_SHOW_CREATE_TABLE,
    SQL_DESCRIBE,
    SQL_USE,
    SQL_INSERT,
    SQL_SELECT,
    SQL_UPDATE,
    SQL_DELETE,
    SQL_ADD_PARTITION,   /* ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (...) ... */
    SQL_DROP_PARTITION,  /* ALTER TABLE t DROP [IF EXISTS] PARTITION (...), ... */
    SQL_SHOW_PARTITIONS, /* SHOW PARTITIONS t [PARTITION (...)] */
    SQL_CALL,            /* CALL [ns.]procedure(args) */
} sql_stmt_kind;

/* A name as written: bare names are folded to lower case when they name a database or a
 * table (the catalog keeps those lower-case) and kept as written for columns. */
typedef struct sql_ident {
    const char *s;
    sql_pos pos;
} sql_ident;

/* [db.]table; db is NULL when not written. */
typedef struct sql_table_name {
    const char *db;
    const char *name;
    sql_pos pos;
} sql_table_name;

typedef struct sql_column_def {
    sql_ident name;
    fr_type type;  /* nullable unless NOT NULL was written */
    sql_pos type_pos;
    const char *comment; /* or NULL */
} sql_column_def;

typedef struct sql_option {
    const char *key, *value; /* NUL-terminated, unescaped */
    sql_pos pos;
} sql_option;

typedef struct sql_select_item {
    fr_expr *expr;        /* NULL for * */
    const char *alias;    /* or NULL */
    const char *text;     /* the item as written, blanks collapsed (for the column name) */
    sql_pos pos;
} sql_select_item;

/* ORDER BY expr [ASC|DESC] [NULLS FIRST|LAST] */
typedef struct sql_order_item {
    fr_expr *expr;
    bool desc;
    bool nulls_first; /* as written, or the default: NULLs sort as if above every value */
    sql_pos pos;
} sql_order_item;

/* UPDATE ... SET column = value */
typedef struct sql_assignment {
    sql_ident column;
    fr_expr *value;
} sql_assignment;

/* PARTITION (column = literal, ...): each value as text (a string literal unescaped, a
 * number as written, DATE 'x' as x), in the order written. */
typedef struct sql_partition_spec {
    sql_option *values; /* key: the column name as written; value: the text */
    int nvalues;
    sql_pos pos;
} sql_partition_spec;

typedef struct sql_values_row {
    fr_expr **values;
    int nvalues;
    sql_pos pos; /* its '(' */
} sql_values_row;

typedef struct sql_stmt {
    sql_stmt_kind kind;
    sql_pos pos;         /* the first token */
    bool if_exists;      /* DROP ... IF EXISTS */
    bool if_not_exists;  /* CREATE ... IF NOT EXISTS */
    bool cascade;        /* DROP DATABASE ... CASCADE */
    sql_ident db;        /* CREATE/DROP DATABASE, USE, SHOW TABLES FROM (s NULL when absent) */
    sql_table_name table;

    /* CREATE TABLE */
    sql_column_def *columns;
    int ncolumns;
    sql_ident *primary_key; /* NULL when there is none */
    int nprimary_key;
    sql_pos primary_key_pos;
    sql_ident *partition_keys; /* NULL when not PARTITIONED BY */
    int npartition_keys;
    sql_pos partition_pos;
    sql_option *options;
    int noptions;
    const char *comment;

    /* INSERT */
    sql_ident *insert_columns; /* NULL when no column list */
    int ninsert_columns;
    sql_values_row *rows;
    int nrows;
    struct sql_stmt *query; /* INSERT ... SELECT: the SELECT (rows is then NULL) */

    /* UPDATE (SET list; WHERE below) and DELETE (WHERE below) */
    sql_assignment *sets;
    int nsets;

    /* ADD/DROP PARTITION (one or more), SHOW PARTITIONS (at most one) */
    sql_partition_spec *partitions;
    int npartitions;

    /* CALL: the procedure's name as written ("sys.tier": namespace, '.', name; bare words
     * lower-cased) and its arguments (expressions, evaluated as constants when it runs) */
    const char *procedure;
    sql_pos procedure_pos;
    fr_expr **args;
    int nargs;

    /* EXPLAIN before SELECT, UPDATE or DELETE: describe how rows are found, run nothing */
    bool explain;

    /* SELECT */
    sql_select_item *items;
    int nitems;
    bool has_from;
    fr_expr *where;    /* SELECT, UPDATE, DELETE */
    sql_pos where_pos; /* the condition's first token */
    bool distinct;       /* SELECT DISTINCT */
    fr_expr **group_by;  /* GROUP BY: NULL when not written */
    int ngroup_by;
    fr_expr *having;     /* or NULL */
    sql_pos having_pos;
    sql_order_item *order_by; /* ORDER BY: NULL when not written */
    int norder_by;
    int64_t limit; /* -1: none */
    sql_pos limit_pos;
} sql_stmt;

typedef struct sql_script {
    sql_stmt **stmts;
    int nstmts;
} sql_script;

/* Parses a whole text of ';'-separated statements (empty ones are skipped). The tree lives
 * in arena. Errors: FR_ESYNTAX, FR_ELIMIT, FR_EINVAL (a literal that does not parse),
 * FR_ENOMEM, each with the position. */
int sql_parse_script(const char *text, size_t len, fr_arena *arena, sql_script *out,
                     fr_error *err);
/* Parses text that must hold exactly one expression (unbound). */
int sql_parse_expression(const char *text, size_t len, fr_arena *arena, fr_expr **out,
                         fr_error *err);

/* The parser's state, shared by the statement and expression halves. The lexer runs one
 * token ahead of the parser (two when asked). A lexer error is kept in `rc` and `err`, and
 * the failing token reads as the end of input; every later parse error then reports the
 * lexer's error instead of its own, and the parse as a whole returns it. */
typedef struct sql_parser {
    sql_lexer lx;
    sql_token cur;
    sql_token next;
    bool have_next;
    int rc;    /* a lexer error, sticky */
    int depth; /* nesting of expression parsing, bounded by FR_EXPR_DEPTH_MAX */
    size_t prev_end; /* byte offset just past the last token consumed */
    fr_arena *arena;
    fr_error *err;
} sql_parser;

void sql_p_init(sql_parser *P, const char *text, size_t len, fr_arena *arena, fr_error *err);
void sql_p_advance(sql_parser *P);
const sql_token *sql_p_peek2(sql_parser *P);
/* Consumes the current token when it is the bare word kw. */
bool sql_p_accept(sql_parser *P, const char *kw);
bool sql_p_accept_tok(sql_parser *P, sql_tok_kind k);
/* Fails with "expected <what>, found <token>" at the current token (or the lexer error). */
int sql_p_expected(sql_parser *P, const char *what);
int sql_p_expect(sql_parser *P, const char *kw);
int sql_p_expect_tok(sql_parser *P, sql_tok_kind k, const char *what);
/* Fails at pos unless a lexer error is pending (which wins). */
int sql_p_fail(sql_parser *P, int code, sql_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void *sql_p_alloc(sql_parser *P, size_t n); /* zeroed; NULL after failing with FR_ENOMEM */
/* A name: a bare word that is not reserved, or a `quoted name`. fold lower-cases a bare
 * word. */
int sql_p_name(sql_parser *P, const char *what, bool fold, sql_ident *out);
/* The unescaped text of a 'string' token, NUL-terminated, in the arena. */
int sql_p_string(sql_parser *P, const sql_token *t, const char **out, size_t *len);
/* A type as in CREATE TABLE and CAST: INT, DECIMAL(10, 2), TIMESTAMP(3) ... */
int sql_p_type(sql_parser *P, fr_type *out);
/* An expression; *out lives in the arena. */
int sql_p_expr(sql_parser *P, fr_expr **out);

/* A deep copy of a tree in arena (the tree's depth is bounded by the parser). NULL when out
 * of memory. */
fr_expr *sql_expr_clone(fr_arena *arena, const fr_expr *e);
/* True when e is a reference to a column. */
static inline bool sql_expr_is_column(const fr_expr *e) { return e->kind == FR_EX_COLUMN; }

/* ---- execution ------------------------------------------------------------------------- */

struct fr_sql_session {
    fr_engine *engine;
    char database[FR_NAME_BYTES_MAX + 1];
};

/* Run one parsed statement each (DDL: the catalog statements but the partition ones). */
int sql_exec_ddl(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                 fr_error *err);
int sql_exec_partition(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                       fr_error *err); /* ADD/DROP PARTITION, SHOW PARTITIONS */
int sql_exec_insert(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                    fr_error *err);
int sql_exec_select(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                    fr_error *err);
/* A SELECT over rows held in memory: plans st's items, WHERE and LIMIT against schema (the
 * rows' own; borrowed) and sends rows (taken; NULL: none) through them to sink, begin to
 * end. With a NULL sink and no rows it only plans: its errors come as a run's would. */
int sql_select_rows(const sql_stmt *st, const fr_schema *schema, fr_batch *rows,
                    const fr_sql_sink *sink, fr_error *err);
/* Whether a SELECT needs the stages after the read (sql_staged.c): GROUP BY, HAVING, an
 * aggregate function, DISTINCT or ORDER BY. */
bool sql_query_is_staged(const sql_stmt *st);
int sql_exec_query(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                   fr_error *err);
int sql_exec_dml(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                 fr_error *err); /* UPDATE, DELETE */
int sql_exec_call(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                  fr_error *err); /* CALL sys.<procedure>(...) (sql_lake.c) */

/* Virtual tables: a table name may end in a suffix that names a view of the table. */
typedef enum sql_virtual {
    SQL_VIRTUAL_NONE = 0,
    SQL_VIRTUAL_CHANGELOG, /* t$changelog: the log with change type, offset and time */
    SQL_VIRTUAL_LAKE,      /* t$lake: the lake alone, in the lake schema */
    SQL_VIRTUAL_LAKE_SNAPSHOTS, /* t$lake_snapshots: the lake's snapshots */
} sql_virtual;

/* Splits "t$changelog" (t$lake, t$lake_snapshots) into the base name "t" (written to base)
 * and the suffix's kind. FR_EINVAL (with the position) for an unknown suffix. */
int sql_virtual_split(const sql_table_name *name, sql_table_name *base, char *buf,
                      size_t cap, sql_virtual *kind, fr_error *err);

/* Looks up a table named in a statement, with clear messages for a missing database or
 * table, and for a virtual table named where only SELECT may read one. The handle is the
 * caller's to release. */
int sql_open_table(fr_sql_session *s, const sql_table_name *name, fr_table **out,
                   fr_error *err);
/* The value of a table option (its key matched case-insensitively), or NULL. Lives as long
 * as the handle. */
const char *sql_table_option(const fr_table *t, const char *key);
/* The table's merge engine as its option names it ("last_row" when unset), lower-case in
 * out. */
void sql_table_merge_engine(const fr_table *t, char *out, size_t cap);

/* Converts a value to a column's type as INSERT does (numbers into numbers, strings into
 * anything by parsing, a NULL only into a nullable column), with messages that name the
 * value, the column and its type at pos. */
int sql_convert_value(const fr_value *v, const fr_field *f, sql_pos pos, fr_arena *arena,
                      fr_value *out, fr_error *err);

/* ---- finding rows of a primary-key table (sql_pk.c) -------------------------------------- */

typedef enum sql_access {
    SQL_ACCESS_POINT,  /* lookups of whole keys: the KV store is read, nothing is scanned */
    SQL_ACCESS_PREFIX, /* prefix lookups on leading key columns that cover the partition and
                          bucket keys: one RocksDB prefix scan in one bucket each */
    SQL_ACCESS_SCAN,   /* a scan of the current state with the condition pushed down */
} sql_access;

/* How the rows a condition selects are found. The values live in the planning arena. */
typedef struct sql_pk_plan {
    sql_access access;
    int nfixed;        /* POINT, PREFIX: the leading key columns the condition fixes */
    fr_value **values; /* per fixed key column: its values (in its type), sorted, distinct */
    int *nvalues;
    int64_t nkeys;     /* keys (POINT) or prefixes (PREFIX) looked up: the product */
} sql_pk_plan;

/* Chooses the access for the rows of primary-key table t where `where` (bound to t's
 * schema; NULL selects every row) is TRUE: a point lookup when the condition's top-level
 * AND holds `key = constant` or `key IN (constants)` for every primary key column, a prefix
 * lookup when it does so for leading key columns that cover the partition and bucket keys,
 * a scan otherwise; at most FR_SQL_LOOKUP_KEYS_MAX keys or prefixes. */
int sql_pk_plan_where(fr_table *t, const fr_expr *where, fr_arena *arena, sql_pk_plan *out,
                      fr_error *err);
/* Appends the plan in words, one line per step (for EXPLAIN). */
int sql_pk_plan_describe(const fr_table *t, const sql_pk_plan *p, const fr_expr *where,
                         fr_buf *out, fr_error *err);

/* Receives rows; the batch is the callee's. Non-zero stops the read. */
typedef int (*sql_rows_fn)(void *ctx, fr_batch *batch, fr_error *err);
/* Reads the rows of t where `where` is TRUE by plan p, projected to cols (NULL: every
 * column), in batches to fn. Returns 0 when done, a negative code on failure, or the
 * positive value fn returned to stop. Never reads the changelog. */
int sql_pk_read(fr_table *t, const sql_pk_plan *p, const fr_expr *where, const int *cols,
                int ncols, sql_rows_fn fn, void *ctx, fr_error *err);

/* ---- the lake: $lake, $lake_snapshots and union reads (sql_lake.c) ----------------------- */

/* The schema of t$lake_snapshots (snapshot_id, parent_id, sequence_number, committed_at,
 * operation, added_data_files, added_delete_files, added_records, total_records,
 * tiered_offsets). */
int sql_lake_snapshots_schema(fr_schema **out, fr_error *err);
/* Every snapshot of t's lake as one batch of sql_lake_snapshots_schema, oldest first. */
int sql_lake_snapshots_batch(fr_table *t, const fr_schema *schema, fr_batch **out,
                             fr_error *err);

/* ---- the $changelog virtual table (sql_changelog.c) ------------------------------------- */

#define SQL_CHANGELOG_META_COLUMNS 3 /* _change_type, _log_offset, _commit_timestamp */

/* The schema of t$changelog: _change_type STRING NOT NULL, _log_offset BIGINT NOT NULL,
 * _commit_timestamp TIMESTAMP_LTZ(3) NOT NULL, then the table's columns. */
int sql_changelog_schema(const fr_table *t, fr_schema **out, fr_error *err);
/* Builds a batch of `schema` (a projection of the changelog schema by cols, indexes into
 * it) from one scanned batch: `scanned` holds the table columns of the projection in
 * scan_of order (scan_of[i]: the scanned column of projected column i, or -1 for a
 * metadata column), with the offsets, change types (NULL: all +A) and commit time of its
 * rows. */
int sql_changelog_batch(const fr_schema *schema, const int *cols, int ncols,
                        const int *scan_of, const fr_batch *scanned, const int64_t *offsets,
                        const uint8_t *change_types, int64_t commit_ts, fr_batch **out,
                        fr_error *err);
/* Whether the catalog has database db (true when the catalog cannot be listed, so that the
 * engine's own error shows). */
bool sql_database_exists(fr_sql_session *s, const char *db);
/* The database a statement's table lives in: the one written, or the session's. */
const char *sql_table_db(const fr_sql_session *s, const sql_table_name *name);
/* Whether column col of t's schema is one of its primary key columns (false for a log
 * table). */
bool sql_is_key_column(const fr_table *t, int col);

/* Sink helpers: a NULL callback is skipped; a batch given to a sink without rows() is
 * freed. A callback returning non-zero without setting err stops execution quietly, which
 * these report as 1. */
int sql_sink_begin(const fr_sql_sink *sink, const fr_schema *schema, fr_error *err);
int sql_sink_rows(const fr_sql_sink *sink, fr_batch *batch, fr_error *err);
int sql_sink_end(const fr_sql_sink *sink, const char *message, fr_error *err);

/* Sends the batch of a builder (finished here; the caller still frees bld) after the schema
 * to the sink, then end(NULL). */
int sql_emit_result(const fr_sql_sink *sink, const fr_schema *schema, fr_builder *bld,
                    fr_error *err);
/* Small results: one STRING column `column` holding names (then end(NULL)); a message
 * for statements without rows (end(message)). */
int sql_emit_names(const fr_sql_sink *sink, const char *column, char **names, int n,
                   fr_error *err);
int sql_end_message(const fr_sql_sink *sink, fr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* EXPLAIN's result: text as one STRING column "plan", a row per line. */
int sql_emit_plan(const fr_sql_sink *sink, const fr_buf *text, fr_error *err);

/* Constant expressions (INSERT values, SELECT without FROM): binds e (no column may be
 * named) and evaluates it once. Strings in *out are copied into arena. */
typedef struct sql_const_ctx {
    fr_schema *empty;  /* a schema without columns, to bind against */
    fr_batch *one_row; /* a batch of one row, to evaluate over */
} sql_const_ctx;
void sql_const_ctx_free(sql_const_ctx *c);
int sql_const_eval(sql_const_ctx *c, fr_expr *e, fr_arena *arena, fr_value *out,
                   fr_error *err);
int sql_const_bind(sql_const_ctx *c, fr_expr *e, fr_error *err);
int sql_const_batch(sql_const_ctx *c, const fr_batch **out, fr_error *err);

/* ---- GROUP BY and aggregate functions: the grouping stage (sql_group.c) ----------------- */

/* At most this many bytes of groups (their keys and aggregate states) are held by one
 * GROUP BY, DISTINCT or aggregate query. */
#define FR_SQL_GROUP_BYTES_MAX ((int64_t)1 << 30)

typedef struct sql_agg_spec {
    fr_expr_agg fn;
    bool distinct; /* over the distinct non-null values of the argument */
    int arg;       /* the input column it reads; -1 for COUNT(*) */
    sql_pos pos;   /* where the call was written, for its errors */
} sql_agg_spec;

/* The result type of fn over values of type arg (NULL for COUNT(*)): COUNT is BIGINT NOT
 * NULL; SUM is BIGINT over integers, DECIMAL(38, s) over DECIMAL(p, s), DOUBLE over FLOAT
 * and DOUBLE; AVG is DOUBLE over integers, FLOAT and DOUBLE, DECIMAL(38, max(s, 6)) over
 * DECIMAL(p, s); MIN and MAX have the argument's type. All but COUNT are nullable (NULL
 * for a group without a non-null value). FR_ETYPE, naming the function and the type, when
 * fn does not take the type (SUM of a string); pos is where the call was written. */
int sql_agg_type(fr_expr_agg fn, const fr_type *arg, sql_pos pos, fr_type *out,
                 fr_error *err);

typedef struct sql_grouper sql_grouper;

/* Groups rows of `input` by its first ngroup columns (NULLs form one group, as in SQL
 * GROUP BY) and computes aggs over each group. The output schema holds the group columns
 * (their types) and then one column per aggregate (sql_agg_type). With ngroup 0 there is
 * exactly one group, also when no row is added. The schemas are borrowed. */
int sql_grouper_new(const fr_schema *input, int ngroup, const sql_agg_spec *aggs, int naggs,
                    const fr_schema *output, sql_grouper **out, fr_error *err);
/* Adds a batch of rows of `input` (borrowed). FR_ELIMIT past FR_SQL_GROUP_BYTES_MAX or
 * FR_BATCH_ROWS_MAX groups; FR_ERANGE when a SUM overflows its type. */
int sql_grouper_add(sql_grouper *g, const fr_batch *batch, fr_error *err);
/* The groups as one batch of the output schema, in the order their first rows came. */
int sql_grouper_finish(sql_grouper *g, fr_batch **out, fr_error *err);
void sql_grouper_free(sql_grouper *g);

/* ---- ORDER BY: the sort stage (sql_order.c) -------------------------------------------- */

/* At most this many bytes are held by one sort without LIMIT, or by the best rows of a sort
 * with one: the rows' Arrow buffers, their sort keys and an entry of 32 bytes per row. A
 * batch is counted by its own columns, so the caller hands over batches that hold only the
 * columns it needs, not views into wider ones. */
#define FR_SQL_SORT_BYTES_MAX ((int64_t)1 << 30)

typedef struct sql_sort_key {
    int column;       /* a column of the sorter's schema */
    bool desc;        /* DESC: largest first */
    bool nulls_first; /* NULLs before every value (else after) */
} sql_sort_key;

typedef struct sql_sorter sql_sorter;

/* A sort of rows of `schema` (nvisible >= 1) by keys (compared as SQL comparisons order values: numbers by
 * value, strings and bytes bytewise, NaN above +Infinity; equal keys keep the order rows
 * were added in). Hands at most `limit` rows (-1: all) on, each batch projected to the
 * first `nvisible` columns of schema (the others are sort keys only). schema is borrowed
 * and must outlive the sorter. */
int sql_sorter_new(const fr_schema *schema, const sql_sort_key *keys, int nkeys, int64_t limit,
                   int nvisible, sql_sorter **out, fr_error *err);
/* Takes batch (freed here, also on failure). FR_ELIMIT once the rows held pass
 * FR_SQL_SORT_BYTES_MAX; with a limit only the best `limit` rows are kept as it goes. After
 * a failure the sorter may only be freed. */
int sql_sorter_add(sql_sorter *s, fr_batch *batch, fr_error *err);
/* Sends the sorted rows to sink->rows in batches (begin and end are the caller's), once.
 * Returns what sql_sink_rows returns: 0, a failure, or 1 when the sink stopped. */
int sql_sorter_emit(sql_sorter *s, const fr_sql_sink *sink, fr_error *err);
void sql_sorter_free(sql_sorter *s);
/* The bytes of a batch's Arrow buffers as a copy would hold them (a batch that shares a
 * larger parent's buffers holds more, which this does not see). */
int64_t sql_batch_bytes(const fr_batch *b);
/* Appends the memcmp-ordered encoding of row's value of column c (sql_order.c): a marker
 * (a NULL sorts first when nulls_first, else last; 0x01 when a value follows), then
 * fr_key_encode of the value, complemented for desc. Values that compare equal encode
 * alike (-0.0 as 0.0, every NaN as one). FR_ELIMIT for a value whose encoding passes
 * FR_KEY_BYTES_MAX. Sorting and grouping share it. */
int sql_key_append(fr_buf *out, const fr_column *c, int64_t row, bool desc, bool nulls_first,
                   fr_error *err);

/* Copies one column's buffers out of a batch into the three fr_malloc'd buffers
 * fr_batch_from_buffers takes (validity, offsets, values). */
int sql_column_copy(const fr_column *c, uint8_t **bufs, int64_t *null_count, fr_error *err);

#endif
