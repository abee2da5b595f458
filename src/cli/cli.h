/* cli.h — the internals shared by the files of the `firth` command: exit codes, option
 * parsing, messages, value rendering (table, CSV, JSON), the input readers of `produce`
 * (NDJSON and CSV) and the entry points of the subcommands.
 *
 * The command talks to storage only through the public API (include/firth/firth.h); it
 * uses the arrow and types modules to read and build batches, and the client's bridge to
 * move between public and internal batches. Output goes to stdout, messages to stderr
 * ("firth: error: ..."), and every subcommand returns one of the exit codes below. */
#ifndef FIRTH_CLI_H
#define FIRTH_CLI_H

#include <stdio.h>

#include "arrow/arrow.h"
#include "firth/firth.h"

/* Exit codes, as documented in `firth --help`. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILED = 1, /* the operation failed: bad input, engine error */
    CLI_EXIT_USAGE = 2,  /* the command line itself is wrong */
};

/* ---- messages -------------------------------------------------------------------------- */

/* Prints "firth: error: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a usage error and where to look ("see firth CMD --help", or "see firth --help"
 * when cmd is NULL) and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- options --------------------------------------------------------------------------- */

/* One option of a subcommand. Exactly one of value and flag is set: value receives the
 * argument of an option that takes one (the pointer points into argv), flag is set to true
 * for an option without one. A repeated option keeps its last value. */
typedef struct cli_opt {
    const char *name;  /* long name without the dashes: "data-dir" */
    char short_name;   /* 'e' for -e, or 0 */
    const char **value;
    bool *flag;
} cli_opt;

/* Parses argv[1..argc) of subcommand cmd against opts. --help and -h print the
 * subcommand's help on stdout, set *help and stop (the caller returns CLI_EXIT_OK).
 * Accepts "--name value", "--name=value" and "-e value". Positional arguments and unknown
 * options are usage errors, reported here. Returns 0 or CLI_EXIT_USAGE. */
int cli_parse_opts(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
                   bool *help);

/* The engine's configuration keys given as options, "--log.flush none" (the keys of
 * firth_config_key, docs/CONFIGURATION.md). Keys and values point into argv; a key given
 * twice keeps its last value. */
#define CLI_CONFIG_MAX 32
typedef struct cli_config {
    const char *keys[CLI_CONFIG_MAX];
    const char *values[CLI_CONFIG_MAX];
    int n;
} cli_config;

/* cli_parse_opts for a subcommand that opens a data dir: a long option that is not in opts
 * but is a configuration key goes to *cfg (zeroed by the caller), its value checked at once
 * (a bad value or a missing one is a usage error naming the key). --log.level LEVEL sets
 * the logger's level at once (fr_log_set_level), over FIRTH_LOG_LEVEL. */
int cli_parse_opts_config(const char *cmd, int argc, char **argv, const cli_opt *opts,
                          int nopts, cli_config *cfg, bool *help);

/* Strict parse of a count option ("--batch-rows 100"): an integer in [min, max]. Reports a
 * usage error and returns CLI_EXIT_USAGE on bad input. */
int cli_parse_count(const char *cmd, const char *opt, const char *text, int64_t min,
                    int64_t max, int64_t *out);

/* Opens the embedded engine in data_dir (required: a usage error when NULL). Prints the
 * engine's error and returns CLI_EXIT_FAILED when it cannot be opened. */
int cli_open_client(const char *cmd, const char *data_dir, firth_client **out);
/* The same with the configuration given on the command line (cfg may be NULL). */
int cli_open_client_config(const char *cmd, const char *data_dir, const cli_config *cfg,
                           firth_client **out);

/* Opens the client of a subcommand: the embedded engine in data_dir (with the configuration
 * given on the command line), or a firth server at connect ("HOST:PORT"). Exactly one of
 * them must be given (a usage error otherwise), and configuration keys go with --data-dir
 * only (a server reads its own). Prints the error and returns CLI_EXIT_FAILED when the
 * client cannot be opened. */
int cli_open_target(const char *cmd, const char *data_dir, const char *connect,
                    const cli_config *cfg, firth_client **out);

/* ---- help ------------------------------------------------------------------------------ */

/* Prints the help of a subcommand ("sql", "produce", "consume", "help"), or the overview
 * when cmd is NULL. Returns false when there is no such subcommand. */
bool cli_help_print(FILE *f, const char *cmd);

/* ---- value rendering ------------------------------------------------------------------- */

/* The text form of a cell as firth shows it in tables and CSV (fr_value_format's form;
 * bytes as "\x0a1b"). NULL cells are not passed here. Appends to out. */
int cli_render_text(const fr_value *v, fr_buf *out, fr_error *err);
/* The JSON form of a cell: numbers for integers, FLOAT and DOUBLE (NaN and infinities as
 * the strings "NaN", "Infinity", "-Infinity"), true/false, null, and strings for the rest:
 * DECIMAL as its exact text "12.50", temporal values in their text form, BYTES in
 * base64 (RFC 4648, with padding). Appends to out. */
int cli_render_json(const fr_value *v, fr_buf *out, fr_error *err);
/* Appends s as a JSON string (quoted, escaped; invalid UTF-8 becomes U+FFFD). */
int cli_json_string(const uint8_t *s, size_t n, fr_buf *out, fr_error *err);
/* Appends a CSV field: quoted (RFC 4180) when it holds a comma, quote, CR or LF or is
 * empty; NULL is written as an empty unquoted field, so that it differs from "". */
int cli_csv_field(const uint8_t *s, size_t n, fr_buf *out, fr_error *err);
/* Base64 (RFC 4648, padded) and its decoding; decode fails on any other character. */
int cli_base64_encode(const uint8_t *p, size_t n, fr_buf *out, fr_error *err);
int cli_base64_decode(const char *s, size_t n, fr_buf *out, fr_error *err);

/* Writes all of buf to f; FR_EIO with a message when the write fails (a closed pipe). */
int cli_write(FILE *f, const fr_buf *buf, fr_error *err);

/* ---- row printers: one interface for table, CSV and JSON output ------------------------ */

typedef enum cli_format {
    CLI_FORMAT_TABLE,
    CLI_FORMAT_CSV,
    CLI_FORMAT_JSON,
    CLI_FORMAT_ARROW,
} cli_format;

/* Parses a --format value among the formats allowed (a bitmask of 1 << cli_format). */
int cli_format_parse(const char *cmd, const char *text, unsigned allowed, cli_format *out);

/* A printer of one result: header, rows, footer. The table form buffers every batch until
 * cli_printer_finish, to align the columns; CSV and JSON print each batch as it comes. */
typedef struct cli_printer cli_printer;

/* out is the stream rows go to (kept, not closed). with_offsets adds the "_bucket" and
 * "_offset" columns in front (CSV, JSON). The schema is copied. */
int cli_printer_new(cli_format format, const fr_schema *schema, FILE *out, bool with_offsets,
                    cli_printer **p, fr_error *err);
/* Prints (or keeps) the rows of b. offsets is NULL unless with_offsets. Takes ownership
 * of b in every case (it is freed with firth_batch_free). */
int cli_printer_rows(cli_printer *p, firth_batch *b, int bucket, const int64_t *offsets,
                     fr_error *err);
/* Prints what is buffered and the footer ("3 rows" for tables). */
int cli_printer_finish(cli_printer *p, fr_error *err);
int64_t cli_printer_num_rows(const cli_printer *p);
void cli_printer_free(cli_printer *p);

/* ---- input readers for produce --------------------------------------------------------- */

/* Named limits of one input line or CSV record. */
#define CLI_INPUT_LINE_BYTES_MAX (16 << 20)

/* A reader of lines from a stream; a line's bytes exclude the newline (and a CR before
 * it). The first line loses a UTF-8 byte-order mark. */
typedef struct cli_lines {
    FILE *in;
    fr_buf line;
    int64_t line_no; /* 1-based number of the line last read */
    bool bom_checked;
} cli_lines;

void cli_lines_init(cli_lines *r, FILE *in);
void cli_lines_free(cli_lines *r);
/* Reads the next line into r->line. Returns 1 when a line was read, 0 at the end of input,
 * or a negative code (a line over the limit, a read error). */
int cli_lines_next(cli_lines *r, fr_error *err);

/* One member of a flat JSON object, after parsing: key and value text point into the
 * parser's storage (valid until the next parse). */
typedef enum cli_json_kind {
    CLI_JSON_STRING,
    CLI_JSON_NUMBER, /* text is the number exactly as written */
    CLI_JSON_TRUE,
    CLI_JSON_FALSE,
    CLI_JSON_NULL,
} cli_json_kind;

typedef struct cli_json_member {
    const char *key;
    size_t key_len;
    cli_json_kind kind;
    const char *text;
    size_t len;
} cli_json_member;

#define CLI_JSON_MEMBERS_MAX FR_SCHEMA_COLUMNS_MAX

/* Parses one line holding a flat JSON object whose values are strings, numbers, true,
 * false or null (nested objects and arrays are rejected). Strings are unescaped and must
 * be valid UTF-8. The members are in input order in *members, *count of them; they live in
 * scratch, which the caller keeps and reuses. Errors name the byte position. */
typedef struct cli_json_scratch {
    fr_buf text;               /* unescaped keys and strings */
    cli_json_member *members;
    int cap;
} cli_json_scratch;

int cli_json_parse_object(const uint8_t *p, size_t n, cli_json_scratch *scratch,
                          cli_json_member **members, int *count, fr_error *err);
void cli_json_scratch_free(cli_json_scratch *s);

/* One CSV record (RFC 4180: quoted fields may hold commas, quotes as "" and line breaks).
 * Field i is text[start[i] .. start[i] + len[i]); quoted[i] tells "" (empty string) from
 * an empty unquoted field (NULL). */
typedef struct cli_csv_record {
    fr_buf text;
    size_t *start;
    size_t *len;
    bool *quoted;
    int count, cap;
    int64_t line_no; /* the line the record starts on */
} cli_csv_record;

/* Reads the next record from in, counting lines in *line_no. Returns 1 with a record, 0 at
 * the end of input, or a negative code (a quote left open, a stray quote, the limits). */
int cli_csv_next(FILE *in, int64_t *line_no, cli_csv_record *rec, fr_error *err);
void cli_csv_record_free(cli_csv_record *rec);

/* ---- produce's writer ------------------------------------------------------------------ */

/* Appends finished batches to a table under this run's idempotent writer id (random) and
 * consecutive sequence numbers, and reports in units of the input ("line", "record"). Into
 * a primary-key table (pk set) the batches are upserts and deletes (firth_upsert). */
typedef struct cli_writer {
    firth_client *client; /* not owned */
    const char *table;
    const char *unit;
    bool verbose;
    bool pk;             /* the table has a primary key */
    int64_t writer_id;
    int32_t seq;         /* of the next batch */
    int64_t written;     /* rows acknowledged so far */
    int64_t changed;     /* primary-key table: keys whose stored row changed */
    int64_t next_first;  /* the first unit of the next batch (1-based) */
} cli_writer;

void cli_writer_init(cli_writer *w, firth_client *c, const char *table, const char *unit,
                     bool verbose);
/* Appends b (taken, freed here) as the batch covering units next_first..last, retrying an
 * I/O error under the same sequence number; then prints "acknowledged <unit>s A-B (N rows)"
 * when verbose. Returns 0, or CLI_EXIT_FAILED after saying what failed. */
int cli_writer_append(cli_writer *w, fr_batch *b, int64_t last);
/* The same with one FIRTH_OP_* per row (NULL: all upserts), for a primary-key table. */
int cli_writer_append_ops(cli_writer *w, fr_batch *b, const uint8_t *ops, int64_t last);
/* Reports bad input at unit `at` ("stdin line 17: <msg>") and what was written before it.
 * Returns CLI_EXIT_FAILED. */
int cli_writer_stop(const cli_writer *w, int64_t at, const char *msg);
/* Prints "N rows written to TABLE" on stderr (and, for a primary-key table, how many keys
 * changed). */
void cli_writer_summary(const cli_writer *w);

/* `firth produce --format arrow`: appends the record batches of an Arrow IPC stream read
 * from in, matching its columns to the table's by name. Returns an exit code. */
int cli_produce_arrow(cli_writer *w, const fr_schema *table, int64_t batch_rows, FILE *in);

/* ---- subcommands ----------------------------------------------------------------------- */

/* Each takes the argv that starts at the subcommand's name and returns an exit code. */
int cli_sql_main(int argc, char **argv);
int cli_produce_main(int argc, char **argv);
int cli_consume_main(int argc, char **argv);
int cli_server_main(int argc, char **argv);

/* Reads a table's schema through firth_table_info. The caller frees it. */
int cli_table_schema(firth_client *c, const char *table, fr_schema **out, fr_error *err);

#endif
