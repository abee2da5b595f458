/* cli_help.c — the help texts of the `firth` command, one per subcommand.
 *
 * They are the command's reference: every subcommand and every flag appears here with an
 * example, and tests/e2e/help.sh checks that they do. docs/CLI.md says the same at length. */
#include <string.h>

#include "cli/cli.h"

/* The engine's configuration keys, taken by every command that opens a data dir. */
#define CLI_HELP_CONFIG                                                                       \
    "Configuration of the embedded engine (docs/CONFIGURATION.md; not with --connect),\n"     \
    "each as --KEY VALUE:\n"                                                                 \
    "  --log.flush POLICY    when appended records reach the disk:\n"                          \
    "                          append    fsync before an append is acknowledged; appends\n"    \
    "                                    that arrive together share one fsync (default)\n"     \
    "                          interval  fsync every --log.flush.interval; an append is\n"     \
    "                                    acknowledged once written, and a power loss may\n"    \
    "                                    lose the last interval\n"                             \
    "                          none      leave it to the operating system (fastest)\n"        \
    "  --log.flush.interval DURATION\n"                                                       \
    "                        the period of --log.flush interval (default 1s)\n"                \
    "  --log.segment.bytes SIZE\n"                                                            \
    "                        start a new log segment file past this size (default 1gb,\n"      \
    "                        at most 2gb)\n"                                                   \
    "  --log.retention.check-interval DURATION\n"                                             \
    "                        how often expired log segments are removed (default 5min;\n"      \
    "                        0: only when the data dir is opened)\n"                           \
    "  --kv.flush.interval DURATION\n"                                                        \
    "                        longest time a primary-key table's KV store keeps a change\n"     \
    "                        in memory only (default 10min; 0: no timed flush)\n"             \
    "  --kv.flush.records N  flush a KV store once this many changes are in memory only\n"    \
    "                        (default 1000000; 0: no limit)\n"                                \
    "  --kv.block-cache.bytes SIZE\n"                                                         \
    "                        the block cache shared by all KV stores (default 64mb)\n"        \
    "  --kv.row-cache.bytes SIZE\n"                                                           \
    "                        rows found by lookups, kept for the next lookups of the same\n"   \
    "                        keys, shared by all KV stores (default 128mb; 0: none)\n"         \
    "  --kv.write-buffer.bytes SIZE\n"                                                        \
    "                        the memtables of all KV stores together (default 256mb)\n"       \
    "  --lake.warehouse DIR  where lake-enabled tables keep their Iceberg tables (default\n"  \
    "                        DATA_DIR/lake)\n"                                                \
    "  --lake.tiering.threads N\n"                                                           \
    "                        threads tiering lake-enabled tables into the lake (default 2;\n" \
    "                        0: only CALL sys.tier)\n"                                        \
    "Durations: 500ms, 30s, 5min, 2h, 7d. Sizes: 64kb, 256mb, 1gb.\n"

/* What sql, produce and consume log, embedded or remote. */
#define CLI_HELP_LOG_LEVEL                                                                    \
    "  --log.level LEVEL     what is logged to stderr besides the command's own messages:\n"  \
    "                        debug, info, warn (default), error or off; FIRTH_LOG_LEVEL in\n" \
    "                        the environment sets it too, the option wins\n"

static const char CLI_HELP_OVERVIEW[] =
    "firth " FIRTH_VERSION " - lakehouse-native streaming storage: tables you can stream into,\n"
    "read back column by column, and query with SQL. The commands run the storage engine\n"
    "embedded, on a data directory given with --data-dir, or talk to a firth server given\n"
    "with --connect HOST:PORT.\n"
    "\n"
    "Usage: firth COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  sql       run SQL statements (-e, -f, piped stdin, or an interactive prompt)\n"
    "  produce   append records read from stdin (NDJSON, CSV or Arrow) to a table\n"
    "  consume   read a table's records as NDJSON, CSV or an Arrow IPC stream\n"
    "  server    serve a data directory over the network (native protocol, HTTP metrics)\n"
    "  help      show the help of a command: firth help COMMAND\n"
    "\n"
    "Options:\n"
    "  -h, --help       show this help\n"
    "  -V, --version    print the version\n"
    "\n"
    "sql, produce and consume take --data-dir DIR, the data directory of the embedded engine\n"
    "(created when missing), or --connect HOST:PORT, a running firth server (exactly one).\n"
    "Run 'firth COMMAND --help' for the options of a command.\n"
    "\n"
    "Examples:\n"
    "  firth sql --data-dir ./firth-data -e \"CREATE DATABASE shop;\n"
    "      CREATE TABLE shop.orders (id BIGINT, item STRING, price DECIMAL(10, 2))\"\n"
    "  echo '{\"id\": 1, \"item\": \"tea\", \"price\": \"3.50\"}' |\n"
    "      firth produce --data-dir ./firth-data --table shop.orders\n"
    "  firth consume --data-dir ./firth-data --table shop.orders --columns id,price\n"
    "  firth sql --data-dir ./firth-data      (an interactive prompt)\n"
    "  firth server --data-dir ./firth-data &\n"
    "  firth consume --connect 127.0.0.1:9123 --table shop.orders --follow\n"
    "\n"
    "Exit status: 0 success, 1 the operation failed, 2 a usage error.\n";

static const char CLI_HELP_SQL[] =
    "Usage: firth sql (--data-dir DIR | --connect HOST:PORT) [-e SQL | -f FILE]\n"
    "                 [--format table|csv|json]\n"
    "\n"
    "Runs SQL statements separated by ';'. With -e or -f the whole text is parsed, then the\n"
    "statements run in order and the first error stops the command (exit 1; statements\n"
    "before it stay done). With neither, statements are read from stdin: a prompt with line\n"
    "editing and history when stdin is a terminal, else a script (like -f -).\n"
    "\n"
    "Options:\n"
    "  --data-dir DIR        the data directory of the embedded engine\n"
    "  --connect HOST:PORT   a firth server instead (\"[::1]:9123\" for IPv6; the port\n"
    "                        defaults to 9123); give it or --data-dir\n"
    "  -e, --execute SQL     run these statements\n"
    "  -f, --file FILE       run the statements in FILE ('-' for stdin)\n"
    "  --format FORMAT       how query results are printed:\n"
    "                          table  aligned columns and a row count (default)\n"
    "                          csv    RFC 4180 with a header line; NULL is an empty field\n"
    "                          json   one JSON object per row and line\n"
    CLI_HELP_LOG_LEVEL
    "  -h, --help            show this help\n"
    "\n"
    CLI_HELP_CONFIG
    "\n"
    "Messages of statements without rows (\"table shop.orders created\") go to stdout in the\n"
    "table format and to stderr in csv and json, so that stdout holds only rows.\n"
    "Errors name the line and column: firth: error: line 1, column 8: ...\n"
    "\n"
    "The prompt: 'firth> ' starts a statement, '    -> ' continues it; a statement runs at\n"
    "its ';'. Ctrl-C drops the statement being typed. \\q, quit or exit (or Ctrl-D) leaves.\n"
    "History is kept in ~/.firth_history.\n"
    "\n"
    "Statements: CREATE DATABASE [IF NOT EXISTS] d; CREATE TABLE [IF NOT EXISTS] d.t\n"
    "(col TYPE [NOT NULL], ... [, PRIMARY KEY (cols) NOT ENFORCED]) [PARTITIONED BY (cols)]\n"
    "[WITH ('bucket.num' = '4', ...)]; DROP DATABASE|TABLE [IF EXISTS] x;\n"
    "ALTER TABLE t ADD|DROP PARTITION (k = 'v', ...); SHOW DATABASES; SHOW TABLES [FROM d];\n"
    "SHOW PARTITIONS t; SHOW CREATE TABLE t; DESCRIBE t; USE d;\n"
    "INSERT INTO t [(cols)] VALUES (...), ... (an upsert into a primary-key table);\n"
    "UPDATE t SET c = e, ... [WHERE e]; DELETE FROM t [WHERE e];\n"
    "SELECT cols|* FROM t [WHERE e] [LIMIT n] (t$changelog: the changes of t);\n"
    "EXPLAIN SELECT|UPDATE|DELETE .... See docs/SQL.md.\n"
    "\n"
    "Examples:\n"
    "  firth sql --data-dir ./firth-data -e \"CREATE DATABASE IF NOT EXISTS shop\"\n"
    "  firth sql --data-dir ./firth-data -e \"INSERT INTO shop.orders VALUES (1, 'tea', 3.50)\"\n"
    "  firth sql --data-dir ./firth-data --format csv -e \"SELECT * FROM shop.orders\"\n"
    "  firth sql --data-dir ./firth-data -f schema.sql\n"
    "  firth sql --connect 127.0.0.1:9123     (the prompt, on a server)\n"
    "  firth sql --data-dir ./firth-data --log.flush interval --log.flush.interval 200ms\n";

static const char CLI_HELP_PRODUCE[] =
    "Usage: firth produce (--data-dir DIR | --connect HOST:PORT) --table DB.TABLE\n"
    "                     [--format json|csv|arrow]\n"
    "                     [--batch-rows N] [--verbose]\n"
    "\n"
    "Reads records from stdin and appends them to a table, in batches of --batch-rows\n"
    "records. Each batch is durable when it is acknowledged (with the default --log.flush\n"
    "append), and is written once even if it is retried (an idempotent writer id, random per\n"
    "run, and a sequence number per batch).\n"
    "\n"
    "Options:\n"
    "  --data-dir DIR        the data directory of the embedded engine\n"
    "  --connect HOST:PORT   a firth server instead (\"[::1]:9123\" for IPv6; the port\n"
    "                        defaults to 9123); give it or --data-dir\n"
    "  --table DB.TABLE      the table to append to (required)\n"
    "  --format FORMAT       json: one JSON object per line (default); keys are column\n"
    "                              names (case-insensitive), a missing key is NULL, an\n"
    "                              unknown key is an error\n"
    "                        csv:  RFC 4180, a header line naming the columns; an empty\n"
    "                              field is NULL, \"\" is the empty string\n"
    "                        arrow: an Arrow IPC stream (as consume --format arrow\n"
    "                              writes) holding every column of the table, by name;\n"
    "                              messages count records instead of lines\n"
    "  --batch-rows N        records per batch (default 1000, at most 1000000)\n"
    "  -v, --verbose         after each durable batch print to stderr\n"
    "                        'acknowledged lines A-B (N rows)'\n"
    CLI_HELP_LOG_LEVEL
    "  -h, --help            show this help\n"
    "\n"
    CLI_HELP_CONFIG
    "\n"
    "Values: JSON numbers, strings, true, false and null, converted to the column's type;\n"
    "strings are parsed for the other types: DECIMAL \"12.50\", DATE \"2026-01-31\", TIME\n"
    "\"10:00:00.123\", TIMESTAMP \"2026-01-31 10:00:00.123\" (or with T), TIMESTAMP_LTZ with a\n"
    "trailing Z. BYTES are base64 in JSON and \\x-prefixed hex (\\x0a1b) in CSV.\n"
    "\n"
    "Into a primary-key table each record is an upsert of the whole row; a record with\n"
    "\"_change_type\": \"-D\" or \"_delete\": true is a delete (the key is enough), and\n"
    "\"-U\" records are skipped, so consume's output of one table feeds another.\n"
    "\n"
    "A bad record stops the command with exit 1 and a message naming its line, e.g.\n"
    "  firth: error: stdin line 17: column 'price': 'abc' is not a valid DECIMAL(10, 2)\n"
    "Nothing of the batch holding that line is written; batches acknowledged before it stay.\n"
    "At the end the command prints 'N rows written to DB.TABLE' on stderr.\n"
    "\n"
    "Examples:\n"
    "  printf '%s\\n' '{\"id\": 1, \"item\": \"tea\"}' '{\"id\": 2, \"item\": \"milk\"}' |\n"
    "      firth produce --data-dir ./firth-data --table shop.orders\n"
    "  firth produce --data-dir ./firth-data --table shop.orders --format csv < orders.csv\n"
    "  firth produce --data-dir ./firth-data --table shop.copy --format arrow < orders.arrows\n"
    "  tail -f events.ndjson | firth produce --data-dir ./firth-data --table app.events \\\n"
    "      --batch-rows 100 --verbose\n"
    "  firth produce --data-dir ./firth-data --table shop.orders --format csv \\\n"
    "      --log.flush none < bulk.csv     (a bulk load, without fsync)\n";

static const char CLI_HELP_CONSUME[] =
    "Usage: firth consume (--data-dir DIR | --connect HOST:PORT) --table DB.TABLE\n"
    "                     [--from POSITION] [--follow] [--columns A,B] [--where EXPR]\n"
    "                     [--max-records N] [--format json|csv|arrow]\n"
    "                     [--arrow-compression CODEC] [--with-offsets]\n"
    "\n"
    "Reads a table's records, bucket by bucket in offset order, up to the current end of\n"
    "each bucket, and prints them to stdout. Of a primary-key table it reads the changelog,\n"
    "and each record starts with _change_type: +I, -U, +U or -D. With --follow it keeps\n"
    "going: records appended later are printed as they arrive (from a server at once, by a\n"
    "long poll; embedded within milliseconds), in offset order per bucket, until Ctrl-C\n"
    "(SIGINT) or SIGTERM, which end the output properly and exit 0.\n"
    "\n"
    "Options:\n"
    "  --data-dir DIR        the data directory of the embedded engine\n"
    "  --connect HOST:PORT   a firth server instead (\"[::1]:9123\" for IPv6; the port\n"
    "                        defaults to 9123); give it or --data-dir\n"
    "  --table DB.TABLE      the table to read (required)\n"
    "  --from POSITION       where each bucket's read starts:\n"
    "                          earliest      the first record kept (default)\n"
    "                          latest        the end: only records appended from now\n"
    "                          offset:N      offset N in every bucket\n"
    "                          timestamp:MS  the first record committed at or after MS\n"
    "                                        (milliseconds since 1970-01-01 UTC)\n"
    "  --columns A,B         read only these columns, in this order\n"
    "  --where EXPR          keep the records where the SQL predicate is true,\n"
    "                        e.g. \"price > 10 AND item LIKE 't%'\"\n"
    "  -F, --follow          keep reading new records until interrupted\n"
    "  --max-records N       stop after N records\n"
    "  --format FORMAT       json: one JSON object per line (default)\n"
    "                        csv:  a header line, then RFC 4180 rows\n"
    "                        arrow: an Arrow IPC stream (schema, record batches, end\n"
    "                               marker), readable by any Arrow library\n"
    "  --arrow-compression CODEC\n"
    "                        buffer compression of --format arrow: none (default), zstd,\n"
    "                        lz4_frame\n"
    "  --with-offsets        add the columns _bucket and _offset (the record's position)\n"
    "                        in front of the others\n"
    CLI_HELP_LOG_LEVEL
    "  -h, --help            show this help\n"
    "\n"
    CLI_HELP_CONFIG
    "\n"
    "JSON values: integers, FLOAT and DOUBLE are numbers, DECIMAL an exact string \"12.50\",\n"
    "dates and times strings (\"2026-01-31 10:00:00.123\"), BYTES base64, NULL null.\n"
    "\n"
    "Examples:\n"
    "  firth consume --data-dir ./firth-data --table shop.orders\n"
    "  firth consume --data-dir ./firth-data --table shop.orders --columns id,price \\\n"
    "      --where \"price > 3\" --max-records 10 --format csv\n"
    "  firth consume --data-dir ./firth-data --table shop.orders --from offset:100 \\\n"
    "      --with-offsets\n"
    "  firth consume --data-dir ./firth-data --table shop.orders --format arrow \\\n"
    "      --arrow-compression zstd > orders.arrows\n"
    "  firth consume --data-dir ./firth-data --table shop.orders --log.flush none\n"
    "  firth consume --connect 127.0.0.1:9123 --table shop.orders --from latest --follow\n";

static const char CLI_HELP_SERVER[] =
    "Usage: firth server [--config FILE] [--data-dir DIR] [--listen HOST:PORT]\n"
    "                    [--http-listen HOST:PORT] [--ready-file PATH] [--KEY VALUE ...]\n"
    "\n"
    "Serves a data directory to many clients: the native protocol (docs/PROTOCOL.md) on\n"
    "--listen, and HTTP on --http-listen with GET /health and GET /metrics (Prometheus).\n"
    "It logs to stderr and runs until SIGTERM or SIGINT, then stops gracefully: it stops\n"
    "accepting, finishes the requests in flight, flushes the logs and exits 0.\n"
    "\n"
    "Options:\n"
    "  --config FILE         read `key: value` lines (the keys below) from FILE; options\n"
    "                        given on the command line win over the file\n"
    "  --data-dir DIR        the data directory (data.dir; default ./firth-data)\n"
    "  --listen HOST:PORT    the native protocol's address (server.listen; default\n"
    "                        127.0.0.1:9123; port 0 picks a free port)\n"
    "  --http-listen HOST:PORT\n"
    "                        the HTTP address (server.http.listen; default 127.0.0.1:9249;\n"
    "                        off turns HTTP off)\n"
    "  --ready-file PATH     once accepting, write the bound addresses to PATH as\n"
    "                        {\"native\": \"127.0.0.1:41234\", \"http\": \"127.0.0.1:41235\"}\n"
    "  -h, --help            show this help\n"
    "\n"
    "Configuration keys (docs/CONFIGURATION.md), each also an option --KEY VALUE:\n"
    "  server.connections.max N      connections held at once (default 4096)\n"
    "  server.frame.bytes.max SIZE   the largest request frame (default 100mb)\n"
    "  server.inflight.max N         requests per connection worked on at once (default 64)\n"
    "  server.inflight.bytes.max SIZE  request bytes worked on at once, all connections\n"
    "                                together (default 1gb)\n"
    "  server.connection.write.bytes.max SIZE\n"
    "                                response bytes queued per connection before it is no\n"
    "                                longer read (default 16mb)\n"
    "  server.fetch.wait.max DURATION  the longest a fetch waits for records (default 60s)\n"
    "  server.fetch.bytes.max SIZE   a fetch's bytes when it gives none (default 16mb)\n"
    "  server.fetch.bucket.bytes.max SIZE  per bucket (default 1mb)\n"
    "  server.sql.part.bytes SIZE    Arrow bytes per streamed SQL frame (default 1mb)\n"
    "  server.workers N              threads running requests (default 16)\n"
    "  server.sql.workers N          threads running SQL statements (default 4)\n"
    "  server.shutdown.timeout DURATION  longest wait for requests at shutdown (default 30s)\n"
    "  server.auth.required BOOL     require AUTHENTICATE first (default false)\n"
    "  server.auth.users LIST        name:password,... accepted by PLAIN (default: any)\n"
    "  server.node.id N              this node's id in metadata (default 0)\n"
    "  log.level LEVEL               debug, info, warn, error or off (default info)\n"
    "  log.flush, log.flush.interval, log.segment.bytes, log.retention.check-interval,\n"
    "  kv.flush.interval, kv.flush.records, kv.block-cache.bytes, kv.row-cache.bytes,\n"
    "  kv.write-buffer.bytes, lake.warehouse, lake.tiering.threads\n"
    "                                the engine's keys, as for the other commands\n"
    "Durations: 500ms, 30s, 5min, 2h, 7d. Sizes: 64kb, 256mb, 1gb.\n"
    "\n"
    "Exit status: 0 after a graceful shutdown, 1 when the server cannot start (the data dir\n"
    "is in use, the address is taken), 2 a usage error.\n"
    "\n"
    "Examples:\n"
    "  firth server --data-dir ./firth-data\n"
    "  firth server --listen 0.0.0.0:9123 --http-listen off --log.flush interval\n"
    "  firth server --config firth.conf --server.inflight.max 16\n"
    "  firth server --data-dir /tmp/d --listen 127.0.0.1:0 --ready-file /tmp/d.ready\n";

static const char CLI_HELP_HELP[] =
    "Usage: firth help [COMMAND]\n"
    "\n"
    "Shows the help of COMMAND (sql, produce, consume, server), or the overview of all\n"
    "commands.\n"
    "'firth COMMAND --help' does the same.\n"
    "\n"
    "Examples:\n"
    "  firth help\n"
    "  firth help consume\n";

bool cli_help_print(FILE *f, const char *cmd)
{
    const char *text = NULL;
    if (!cmd)
        text = CLI_HELP_OVERVIEW;
    else if (strcmp(cmd, "sql") == 0)
        text = CLI_HELP_SQL;
    else if (strcmp(cmd, "produce") == 0)
        text = CLI_HELP_PRODUCE;
    else if (strcmp(cmd, "consume") == 0)
        text = CLI_HELP_CONSUME;
    else if (strcmp(cmd, "server") == 0)
        text = CLI_HELP_SERVER;
    else if (strcmp(cmd, "help") == 0)
        text = CLI_HELP_HELP;
    if (!text) return false;
    fputs(text, f);
    fflush(f);
    return true;
}
