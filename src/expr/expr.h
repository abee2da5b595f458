/* expr.h — typed scalar expressions over columnar batches: the common language of SQL's
 * WHERE and SELECT lists, `firth consume --where`, and the log's filter pushdown.
 *
 * An expression is a tree built by the SQL layer (or a test) and bound to a schema: binding
 * resolves column names to indexes, checks and infers types (with numeric promotion:
 * integers < DECIMAL < DOUBLE) and folds nothing away. A bound expression is immutable and
 * may be evaluated from several threads at once. Evaluation is vectorized: one call per
 * batch produces a whole column.
 *
 * SQL three-valued logic holds: comparisons with NULL are NULL; AND/OR follow Kleene's
 * tables; a filter keeps a row only when the predicate is TRUE.
 *
 * Typing rules applied by fr_expr_bind:
 *   - A NULL literal has no type of its own: it takes the type its context asks for.
 *   - Comparisons (=, <>, <, <=, >, >=, BETWEEN, IN) accept numbers with numbers (compared in
 *     the common type: integers < DECIMAL < DOUBLE), strings with strings, bytes with bytes,
 *     booleans with booleans, and temporal values of the same kind (DATE also with
 *     TIMESTAMP, at midnight; precisions are compared in the finer unit). A string literal
 *     compared with a DATE/TIME/TIMESTAMP expression is cast to that type while binding.
 *   - Floating-point values are ordered totally: NaN equals NaN and sorts above +Infinity
 *     (as in PostgreSQL). Writers of column statistics must use the same order.
 *   - Arithmetic (+ - * / %) on integers computes in BIGINT, overflow is an error; with a
 *     DECIMAL operand the result is DECIMAL with the SQL precision and scale rules (capped at
 *     38 digits, the scale reduced to no less than 6 when the cap applies); with a FLOAT or
 *     DOUBLE operand it is DOUBLE. Division or modulo by zero is an error (FR_EINVAL) for
 *     every numeric type. DATE +/- integer adds days; DATE - DATE is the INT number of days.
 *     Unary minus keeps DECIMAL and DOUBLE, turns integers into BIGINT and FLOAT into DOUBLE.
 *   - || concatenates strings (STRING result) or bytes (BYTES result).
 *   - LIKE matches strings; % matches any run of characters, _ one UTF-8 character, every
 *     other byte itself.
 *   - CASE and COALESCE give the common type of their results (THEN and ELSE; COALESCE's
 *     arguments): integers widen to the widest, with a DECIMAL the result is DECIMAL with
 *     the integer digits and the scale of both (at most 38 digits: a value that does not
 *     fit is FR_ERANGE when chosen), with a FLOAT or DOUBLE it is DOUBLE (FLOAT when all
 *     are FLOAT); strings give STRING unless all are the same type; bytes, booleans and
 *     temporal values as comparisons take them (DATE with TIMESTAMP gives TIMESTAMP).
 *     CASE conditions are BOOLEAN (NULL is not TRUE); the simple form compares its operand
 *     with the WHEN values as IN compares with its list. A CASE without ELSE is NULL where
 *     no WHEN is TRUE; COALESCE is nullable only when every argument is.
 *   - NULLIF(x, y) has x's type and is nullable; x and y are compared as = compares.
 *     ABS keeps DECIMAL and DOUBLE, turns integers into BIGINT (ABS of the smallest BIGINT
 *     is FR_ERANGE) and FLOAT into DOUBLE. LOWER and UPPER map ASCII letters only and keep
 *     the string type; CHAR_LENGTH counts UTF-8 characters as LIKE's _ does (INT).
 *   - A result type is nullable when any input is (IS [NOT] NULL is never null). */
#ifndef FIRTH_EXPR_H
#define FIRTH_EXPR_H

#include "arrow/arrow.h"

#define FR_EXPR_DEPTH_MAX 256

typedef enum fr_expr_kind {
    FR_EX_LITERAL,  /* value */
    FR_EX_COLUMN,   /* name (unbound) / column index (bound) */
    FR_EX_UNARY,    /* op in {NOT, NEG}, args[0] */
    FR_EX_BINARY,   /* op, args[0], args[1] */
    FR_EX_IS_NULL,  /* args[0]; negated for IS NOT NULL */
    FR_EX_IN,       /* args[0] IN (args[1..n-1]); negated for NOT IN */
    FR_EX_BETWEEN,  /* args[0] BETWEEN args[1] AND args[2]; negated for NOT BETWEEN */
    FR_EX_LIKE,     /* args[0] LIKE args[1] (pattern with % and _; ESCAPE not supported) */
    FR_EX_CAST,     /* CAST(args[0] AS cast_type) */
    FR_EX_AGGREGATE, /* agg(args[0]), agg(DISTINCT args[0]) (distinct), or COUNT(*) (no
                        args): written in a SELECT list, HAVING or ORDER BY, and replaced by
                        the SQL planner with a column of the aggregated rows. It never
                        binds: fr_expr_bind refuses it wherever it is left (WHERE, GROUP BY,
                        inside another aggregate). */
    FR_EX_CASE,     /* CASE [operand] WHEN w THEN t ... [ELSE x] END, all in args: with
                       case_operand, args[0] is the operand of the simple form, compared with
                       each w by =; without, each w is a BOOLEAN condition. Then the WHEN/THEN
                       pairs, at least one (w at odd positions after the operand); with
                       case_else, the last arg is the ELSE result. */
    FR_EX_FUNC,     /* func(args[0..nargs)): a scalar function (FR_FN_*) */
} fr_expr_kind;

typedef enum fr_expr_agg {
    FR_AGGFN_NONE = 0,
    FR_AGGFN_COUNT, FR_AGGFN_SUM, FR_AGGFN_MIN, FR_AGGFN_MAX, FR_AGGFN_AVG,
} fr_expr_agg;

/* The scalar functions. Their names are not reserved words: a column may be called `lower`. */
typedef enum fr_expr_func {
    FR_FN_NONE = 0,
    FR_FN_COALESCE,    /* COALESCE(x, ...): the first non-null argument */
    FR_FN_NULLIF,      /* NULLIF(x, y): NULL when x = y, else x */
    FR_FN_ABS,         /* ABS(n) */
    FR_FN_LOWER,       /* LOWER(s), UPPER(s): ASCII letters only */
    FR_FN_UPPER,
    FR_FN_CHAR_LENGTH, /* CHAR_LENGTH(s), also spelled CHARACTER_LENGTH: UTF-8 characters */
} fr_expr_func;

typedef enum fr_expr_op {
    FR_OP_NONE = 0,
    FR_OP_EQ, FR_OP_NE, FR_OP_LT, FR_OP_LE, FR_OP_GT, FR_OP_GE,
    FR_OP_AND, FR_OP_OR, FR_OP_NOT,
    FR_OP_ADD, FR_OP_SUB, FR_OP_MUL, FR_OP_DIV, FR_OP_MOD, FR_OP_NEG,
    FR_OP_CONCAT, /* || */
} fr_expr_op;

/* Expression nodes are allocated in an arena that the creator owns; freeing the arena
 * frees the tree. Fields are public so the parser and the planner can build and walk
 * trees; do not modify a bound tree. */
typedef struct fr_expr fr_expr;
struct fr_expr {
    fr_expr_kind kind;
    fr_expr_op op;
    bool negated;
    int nargs;
    fr_expr **args;
    fr_value value;      /* FR_EX_LITERAL; string bytes live in the arena */
    const char *name;    /* FR_EX_COLUMN: the name as written */
    int column;          /* FR_EX_COLUMN: index in the bound schema, -1 before binding */
    fr_type cast_type;   /* FR_EX_CAST */
    fr_expr_agg agg;     /* FR_EX_AGGREGATE: the function */
    bool distinct;       /* FR_EX_AGGREGATE: over the distinct values of args[0] */
    fr_expr_func func;   /* FR_EX_FUNC: the function */
    bool case_operand;   /* FR_EX_CASE: args[0] is the operand (CASE v WHEN ...) */
    bool case_else;      /* FR_EX_CASE: the last arg is the ELSE result */
    fr_type type;        /* result type, set by binding */
    fr_type operand_type; /* set by binding: comparisons, IN, BETWEEN, NULLIF and the simple
                            CASE compare in this type; arithmetic and ABS convert their
                            operands to it (the result type for numbers, DATE for date
                            arithmetic) */
    int line, col;       /* position in the source text, for messages (1-based; 0 unknown) */
};

/* Node constructors; NULL when the arena is out of memory. */
fr_expr *fr_expr_literal(fr_arena *a, const fr_value *v);
fr_expr *fr_expr_column(fr_arena *a, const char *name);
fr_expr *fr_expr_node(fr_arena *a, fr_expr_kind kind, fr_expr_op op, int nargs, fr_expr **args);
/* Shorthands over fr_expr_node: a binary operator, and CAST(arg AS to). */
fr_expr *fr_expr_binary(fr_arena *a, fr_expr_op op, fr_expr *left, fr_expr *right);
fr_expr *fr_expr_cast(fr_arena *a, fr_expr *arg, fr_type to);
/* func(args[0..nargs)); the caller checks the count (fr_expr_func_arity). */
fr_expr *fr_expr_call(fr_arena *a, fr_expr_func func, int nargs, fr_expr **args);
/* A copy of bound expression e (in arena a) whose column references are renumbered: column
 * c becomes map[c], for c in 0..ncols. NULL when a column is out of range or maps to -1,
 * when the tree is deeper than FR_EXPR_DEPTH_MAX, or when the arena is out of memory. For
 * readers that evaluate a filter over a batch holding only some of the columns it was
 * bound to. */
fr_expr *fr_expr_remap_columns(fr_arena *a, const fr_expr *e, const int *map, int ncols);

/* Resolves names against schema and infers types, in place. Errors (unknown column:
 * FR_ENOTFOUND; type mismatch such as 'abc' + 1: FR_ETYPE; a string literal that does not
 * parse as the date or time it is compared with: FR_EINVAL; nesting deeper than
 * FR_EXPR_DEPTH_MAX: FR_ELIMIT) name the expression's line and column when known, as in
 * "line 1, column 8: cannot compare STRING with INT". Binding may replace a literal's value
 * (a string compared with a DATE becomes a DATE); binding the same tree again to the same
 * schema gives the same result. */
int fr_expr_bind(fr_expr *e, const fr_schema *schema, fr_error *err);

/* Evaluates a bound expression over every row of b. *out is a new one-column batch whose
 * single column has the expression's type; the caller frees it. The column is named after
 * the column when e is a column reference, and "expr" otherwise. Errors: FR_EINVAL for
 * division by zero, FR_ERANGE for arithmetic overflow or a result out of its type's range,
 * those of fr_value_cast for CAST, FR_ENOMEM. Such errors are raised only for rows whose
 * result depends on the failing part: in `b <> 0 AND a / b > 1` a row with b = 0 raises
 * nothing, as AND is FALSE there whatever its right side; in `CASE WHEN b <> 0 THEN a / b
 * END` neither, as the THEN value is computed only where it is chosen (and a COALESCE
 * argument only where those before it are NULL). Thread: any (e is only read). */
int fr_expr_eval(const fr_expr *e, const fr_batch *b, fr_batch **out, fr_error *err);
/* Evaluates a bound BOOLEAN expression as a filter: `keep` (caller-allocated bitmap of
 * (rows + 7) / 8 bytes) gets bit i set when the predicate is TRUE for row i (and clear
 * otherwise). Returns the number of rows kept in *kept. A row that cannot be kept raises no
 * evaluation error (in `x AND y`, y is not judged where x is not TRUE). */
int fr_expr_filter(const fr_expr *e, const fr_batch *b, uint8_t *keep, int64_t *kept,
                   fr_error *err);

/* Per-column statistics of a batch, as the log stores them. min and max have the column's
 * type and order values as comparisons do (floating point: NaN above +Infinity); they are
 * taken over the non-null values. */
typedef struct fr_column_stats {
    int64_t null_count;
    bool has_minmax; /* false when unknown (e.g. strings over 64 bytes, all null) */
    fr_value min, max;
} fr_column_stats;

/* Whether a batch with these statistics (one entry per schema column, `rows` rows) may hold
 * a row where the bound predicate is TRUE. Conservative: true when unsure. */
bool fr_expr_may_match(const fr_expr *e, const fr_column_stats *stats, int64_t rows);

/* The columns a bound expression reads, as a bitmap over the schema's columns (caller
 * provides (ncols + 7) / 8 zeroed bytes). */
void fr_expr_columns(const fr_expr *e, uint8_t *used);

/* Writes the expression as SQL text (for EXPLAIN-like messages and tests), appending to
 * out: every operator parenthesized, "(a + 1)", "(x IS NOT NULL)", "(s LIKE 'a''b%')",
 * "CAST(a AS BIGINT)", "CASE WHEN (a > 1) THEN 'x' ELSE NULL END", "COALESCE(a, 0)";
 * strings quoted with '' doubled, column names that are not plain
 * ([A-Za-z_][A-Za-z0-9_]*) or are reserved words (fr_expr_word_reserved) in backquotes,
 * a backquote in them doubled ("`select`", "`unit price`", "`a``b`"), DATE '2026-01-01',
 * TIME '10:00:00', TIMESTAMP '2026-01-01 10:00:00.123', X'0a1b' for bytes. The SQL
 * parser reads the text back as the same expression. */
int fr_expr_format(const fr_expr *e, fr_buf *out, fr_error *err);
/* The SQL name of an aggregate function: "COUNT", "SUM", "MIN", "MAX", "AVG". */
const char *fr_expr_agg_name(fr_expr_agg agg);
/* The SQL name of a scalar function: "COALESCE", "NULLIF", "ABS", "LOWER", "UPPER",
 * "CHAR_LENGTH". */
const char *fr_expr_func_name(fr_expr_func func);
/* The scalar function p[0..n) names, in any case (CHARACTER_LENGTH is CHAR_LENGTH), or
 * FR_FN_NONE. */
fr_expr_func fr_expr_func_lookup(const char *p, size_t n);
/* Whether func takes nargs arguments; when not, msg gets what it needs, as in "COALESCE
 * needs at least one argument" or "ABS needs 1 argument, not 2". */
bool fr_expr_func_arity(fr_expr_func func, int nargs, char *msg, size_t cap);
/* Whether p[0..n) is a word the SQL dialect reserves (any case): SELECT, FROM, AND, NULL,
 * ... A column of that name is written in backquotes. */
bool fr_expr_word_reserved(const char *p, size_t n);

#endif
