/* cli_server.c — `firth server`: reads the configuration (defaults, then --config FILE, then
 * the options in the order given) and runs the server until SIGTERM or SIGINT.
 *
 * Every configuration key is also an option ("--server.inflight.max 32"); --data-dir,
 * --listen and --http-listen are the short names of data.dir, server.listen and
 * server.http.listen. The server's log goes to stderr; the exit code is 0 after a graceful
 * shutdown, 1 when it cannot start, 2 for a usage error. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "server/server.h"

/* The options besides the configuration keys; each name is documented in the help. */
static const char *cli_server_config;
static const char *cli_server_ready_file;
static const char *cli_server_alias_value;

typedef struct cli_server_alias {
    const char *name; /* the option */
    const char *key;  /* the configuration key it sets, or NULL */
} cli_server_alias;

static const cli_opt CLI_SERVER_OPTS[] = {
    {"config", 0, &cli_server_config, NULL},
    {"ready-file", 0, &cli_server_ready_file, NULL},
    {"data-dir", 0, &cli_server_alias_value, NULL},
    {"listen", 0, &cli_server_alias_value, NULL},
    {"http-listen", 0, &cli_server_alias_value, NULL},
};

static const cli_server_alias CLI_SERVER_ALIASES[] = {
    {"data-dir", "data.dir"},
    {"listen", "server.listen"},
    {"http-listen", "server.http.listen"},
};

#define CLI_SERVER_SETTINGS_MAX 256

typedef struct cli_server_setting {
    const char *key;
    const char *value;
} cli_server_setting;

static const char *cli_server_key_of(const char *name)
{
    for (size_t i = 0; i < sizeof CLI_SERVER_ALIASES / sizeof CLI_SERVER_ALIASES[0]; i++)
        if (strcmp(CLI_SERVER_ALIASES[i].name, name) == 0) return CLI_SERVER_ALIASES[i].key;
    for (int i = 0; fr_server_option_key(i); i++)
        if (strcmp(fr_server_option_key(i), name) == 0) return fr_server_option_key(i);
    return NULL;
}

/* Splits argv into the config file, the ready file and the settings in order. */
static int cli_server_parse(int argc, char **argv, cli_server_setting *set, int *nset,
                            bool *help)
{
    *nset = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
            return cli_usage_error("server", "unexpected argument '%s'", a);
        char name[256];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) return cli_usage_error("server", "unknown option '%s'", a);
        memcpy(name, a + 2, len);
        name[len] = '\0';
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) return cli_usage_error("server", "option '--%s' needs a value", name);
            value = argv[++i];
        }
        if (strcmp(name, CLI_SERVER_OPTS[0].name) == 0) {
            cli_server_config = value;
            continue;
        }
        if (strcmp(name, CLI_SERVER_OPTS[1].name) == 0) {
            cli_server_ready_file = value;
            continue;
        }
        const char *key = cli_server_key_of(name);
        if (!key) return cli_usage_error("server", "unknown option '--%s'", name);
        if (*nset == CLI_SERVER_SETTINGS_MAX)
            return cli_usage_error("server", "more than %d options", CLI_SERVER_SETTINGS_MAX);
        set[*nset].key = key;
        set[*nset].value = value;
        (*nset)++;
    }
    return 0;
}

int cli_server_main(int argc, char **argv)
{
    cli_server_setting set[CLI_SERVER_SETTINGS_MAX];
    int nset = 0;
    bool help = false;
    int rc = cli_server_parse(argc, argv, set, &nset, &help);
    if (rc != 0) return rc;
    if (help) {
        cli_help_print(stdout, "server");
        return CLI_EXIT_OK;
    }
    fr_server_options o;
    fr_error err = {0};
    if (fr_server_options_default(&o, &err) < 0) {
        cli_error("%s", err.msg);
        return CLI_EXIT_FAILED;
    }
    if (cli_server_config && fr_server_options_load(&o, cli_server_config, &err) < 0) {
        fr_server_options_free(&o);
        return cli_usage_error("server", "--config %s: %s", cli_server_config, err.msg);
    }
    for (int i = 0; i < nset; i++) {
        if (fr_server_options_set(&o, set[i].key, set[i].value, &err) < 0) {
            fr_server_options_free(&o);
            return cli_usage_error("server", "%s", err.msg);
        }
    }
    rc = fr_server_run(&o, cli_server_ready_file, &err);
    fr_server_options_free(&o);
    if (rc < 0) {
        cli_error("firth server: %s", err.msg);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}
