/* cli_main.c — the entry point of the `firth` command: picks the subcommand, answers
 * --help and --version, and turns unknown commands into usage errors (exit 2).
 *
 * Subcommands return their exit code; nothing here keeps state between them. */
#include <locale.h>
#include <string.h>

#include "cli/cli.h"

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    /* What the command logs to stderr unless FIRTH_LOG_LEVEL or --log.level say otherwise.
     * sql, produce and consume print their own results and messages, so the engine's INFO
     * lines (a partition created, a segment rolled) would only clutter them; the server's
     * log is its record of events and keeps them. */
    fr_log_level log_level;
} cli_command;

static const cli_command CLI_COMMANDS[] = {
    {"sql", cli_sql_main, FR_LOG_WARN},
    {"produce", cli_produce_main, FR_LOG_WARN},
    {"consume", cli_consume_main, FR_LOG_WARN},
    {"server", cli_server_main, FR_LOG_INFO},
};

static const cli_command *cli_command_find(const char *name)
{
    for (size_t i = 0; i < sizeof CLI_COMMANDS / sizeof CLI_COMMANDS[0]; i++)
        if (strcmp(CLI_COMMANDS[i].name, name) == 0) return &CLI_COMMANDS[i];
    return NULL;
}

/* `firth help [CMD]`. */
static int cli_help_main(int argc, char **argv)
{
    if (argc > 2) return cli_usage_error(NULL, "firth help takes at most one command name");
    if (argc == 1) {
        cli_help_print(stdout, NULL);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cli_help_print(stdout, "help");
        return CLI_EXIT_OK;
    }
    if (!cli_help_print(stdout, argv[1]))
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    /* Number formatting must not depend on the user's locale (a decimal comma would break
     * CSV and JSON), so the C locale stays in force for LC_NUMERIC. */
    setlocale(LC_CTYPE, "");
    if (argc < 2) {
        cli_help_print(stderr, NULL);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        cli_help_print(stdout, NULL);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 ||
        strcmp(cmd, "version") == 0) {
        printf("firth %s\n", FIRTH_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) return cli_help_main(argc - 1, argv + 1);
    const cli_command *c = cli_command_find(cmd);
    if (!c) {
        if (cmd[0] == '-') return cli_usage_error(NULL, "unknown option '%s'", cmd);
        return cli_usage_error(NULL, "unknown command '%s'", cmd);
    }
    fr_log_set_default_level(c->log_level);
    fr_alloc_tune_for_throughput();
    return c->run(argc - 1, argv + 1);
}
