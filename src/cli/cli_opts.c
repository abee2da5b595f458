/* cli_opts.c — the command's option parser, its messages and the opening of the embedded
 * engine, shared by every subcommand.
 *
 * The parser is table driven and strict: every argument must be a known option of the
 * subcommand, so a typo is a usage error rather than a silently ignored word. Subcommands
 * that open a data dir also take the engine's configuration keys as options
 * ("--log.flush none"), checked by the public API as they are parsed, and --log.level,
 * which sets what the command logs to stderr. */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("firth: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("firth: error: ", stderr);
    if (cmd) fprintf(stderr, "firth %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "see firth %s --help (or firth --help for all commands)\n", cmd);
    else
        fputs("see firth --help\n", stderr);
    fflush(stderr);
    return CLI_EXIT_USAGE;
}

static const cli_opt *cli_opt_find_long(const cli_opt *opts, int nopts, const char *name,
                                        size_t len)
{
    for (int i = 0; i < nopts; i++)
        if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

static const cli_opt *cli_opt_find_short(const cli_opt *opts, int nopts, char c)
{
    for (int i = 0; i < nopts; i++)
        if (opts[i].short_name && opts[i].short_name == c) return &opts[i];
    return NULL;
}

/* Applies one recognized option; *i advances past a separate value argument. */
static int cli_opt_apply(const char *cmd, const cli_opt *o, const char *shown,
                         const char *inline_value, int argc, char **argv, int *i)
{
    if (o->flag) {
        if (inline_value) return cli_usage_error(cmd, "option '%s' takes no value", shown);
        *o->flag = true;
        return 0;
    }
    if (inline_value) {
        *o->value = inline_value;
        return 0;
    }
    if (*i + 1 >= argc) return cli_usage_error(cmd, "option '%s' needs a value", shown);
    *i += 1;
    *o->value = argv[*i];
    return 0;
}

/* The configuration key named by name[0..len), as the static string firth_config_key
 * gives, or NULL. */
static const char *cli_config_key_of(const char *name, size_t len)
{
    for (int i = 0; firth_config_key(i); i++) {
        const char *k = firth_config_key(i);
        if (strlen(k) == len && memcmp(k, name, len) == 0) return k;
    }
    return NULL;
}

/* Records one configuration key (a repeated key keeps its last value) after checking the
 * value, so that a bad one is reported before anything else happens. */
static int cli_config_add(const char *cmd, cli_config *cfg, const char *key, const char *value)
{
    firth_config *check = NULL;
    firth_error ferr = {0};
    int rc = firth_config_new(&check, &ferr);
    if (rc == 0) rc = firth_config_set(check, key, value, &ferr);
    firth_config_free(check);
    if (rc < 0) {
        if (rc == FIRTH_ENOMEM) {
            cli_error("%s", ferr.msg);
            return CLI_EXIT_FAILED;
        }
        return cli_usage_error(cmd, "--%s", ferr.msg);
    }
    for (int i = 0; i < cfg->n; i++) {
        if (cfg->keys[i] == key) {
            cfg->values[i] = value;
            return 0;
        }
    }
    if (cfg->n == CLI_CONFIG_MAX) return cli_usage_error(cmd, "too many configuration options");
    cfg->keys[cfg->n] = key;
    cfg->values[cfg->n] = value;
    cfg->n++;
    return 0;
}

/* --log.level LEVEL: the logger's level from now on, over FIRTH_LOG_LEVEL and the
 * command's default. */
static int cli_log_level_set(const char *cmd, const char *value)
{
    fr_log_level level;
    if (fr_log_level_parse(value, &level) < 0)
        return cli_usage_error(cmd, "--log.level must be debug, info, warn, error or off, not "
                                    "'%s'", value);
    fr_log_set_level(level);
    return 0;
}

int cli_parse_opts(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
                   bool *help)
{
    return cli_parse_opts_config(cmd, argc, argv, opts, nopts, NULL, help);
}

int cli_parse_opts_config(const char *cmd, int argc, char **argv, const cli_opt *opts,
                          int nopts, cli_config *cfg, bool *help)
{
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_help_print(stdout, cmd);
            *help = true;
            return 0;
        }
        if (a[0] == '-' && a[1] == '-' && a[2] != '\0') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const cli_opt *o = cli_opt_find_long(opts, nopts, name, len);
            if (!o && cfg && len == strlen("log.level") && memcmp(name, "log.level", len) == 0) {
                if (!eq && i + 1 >= argc)
                    return cli_usage_error(cmd, "option '--log.level' needs a value");
                int rc = cli_log_level_set(cmd, eq ? eq + 1 : argv[++i]);
                if (rc) return rc;
                continue;
            }
            const char *key = !o && cfg ? cli_config_key_of(name, len) : NULL;
            if (key) {
                if (!eq && i + 1 >= argc)
                    return cli_usage_error(cmd, "option '--%s' needs a value", key);
                int rc = cli_config_add(cmd, cfg, key, eq ? eq + 1 : argv[++i]);
                if (rc) return rc;
                continue;
            }
            if (!o) return cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
            char shown[80];
            snprintf(shown, sizeof shown, "--%s", o->name);
            int rc = cli_opt_apply(cmd, o, shown, eq ? eq + 1 : NULL, argc, argv, &i);
            if (rc) return rc;
            continue;
        }
        if (a[0] == '-' && a[1] != '\0' && a[1] != '-') {
            const cli_opt *o = cli_opt_find_short(opts, nopts, a[1]);
            if (!o) return cli_usage_error(cmd, "unknown option '%s'", a);
            char shown[4] = {'-', a[1], 0, 0};
            /* "-eSELECT 1" is accepted like getopt does; "-e" "SELECT 1" too. */
            const char *inline_value = a[2] ? a + 2 : NULL;
            int rc = cli_opt_apply(cmd, o, shown, inline_value, argc, argv, &i);
            if (rc) return rc;
            continue;
        }
        return cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", a);
    }
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *text, int64_t min,
                    int64_t max, int64_t *out)
{
    fr_error err = {0};
    int64_t v;
    if (fr_parse_i64(text, &v, &err) < 0 || v < min || v > max)
        return cli_usage_error(cmd, "%s must be an integer from %lld to %lld, not '%s'", opt,
                               (long long)min, (long long)max, text);
    *out = v;
    return 0;
}

int cli_open_client(const char *cmd, const char *data_dir, firth_client **out)
{
    return cli_open_client_config(cmd, data_dir, NULL, out);
}

/* Opens scheme + where ("file:" DIR or "firth://" HOST:PORT) with the configuration in cfg
 * (may be NULL). An FR_EINVAL from the client is a usage error of option usage_opt when it
 * is given (the address was malformed), else every failure is printed as it is. */
static int cli_open_url(const char *cmd, const char *scheme, const char *where,
                        const cli_config *cfg, const char *usage_opt, firth_client **out)
{
    size_t n = strlen(scheme) + strlen(where) + 1;
    char *target = fr_malloc(n);
    if (!target) {
        cli_error("out of memory");
        return CLI_EXIT_FAILED;
    }
    snprintf(target, n, "%s%s", scheme, where);
    firth_error ferr = {0};
    int rc = cfg ? firth_open_opts(target, cfg->keys, cfg->values, cfg->n, out, &ferr)
                 : firth_open(target, out, &ferr);
    fr_free(target);
    if (rc < 0) {
        if (rc == FIRTH_EINVAL && usage_opt)
            return cli_usage_error(cmd, "%s: %s", usage_opt, ferr.msg);
        cli_error("%s", ferr.msg);
        return CLI_EXIT_FAILED;
    }
    return 0;
}

int cli_open_client_config(const char *cmd, const char *data_dir, const cli_config *cfg,
                           firth_client **out)
{
    if (!data_dir || !*data_dir)
        return cli_usage_error(cmd, "--data-dir DIR is required (the directory of the "
                                    "embedded engine's data; created when missing)");
    /* The "file:" prefix keeps a directory whose name looks like a URL local. */
    return cli_open_url(cmd, "file:", data_dir, cfg, NULL, out);
}

int cli_open_target(const char *cmd, const char *data_dir, const char *connect,
                    const cli_config *cfg, firth_client **out)
{
    if (data_dir && connect)
        return cli_usage_error(cmd, "give --data-dir DIR (embedded) or --connect HOST:PORT "
                                    "(a server), not both");
    if (!connect) {
        if (!data_dir)
            return cli_usage_error(cmd, "--data-dir DIR or --connect HOST:PORT is required");
        return cli_open_client_config(cmd, data_dir, cfg, out);
    }
    if (cfg && cfg->n > 0)
        return cli_usage_error(cmd, "--%s configures an embedded data dir; a server reads its "
                                    "own configuration", cfg->keys[0]);
    if (!*connect || strstr(connect, "://"))
        return cli_usage_error(cmd, "--connect takes HOST:PORT (e.g. 127.0.0.1:9123), not '%s'",
                               connect);
    return cli_open_url(cmd, "firth://", connect, NULL, "--connect", out);
}

int cli_table_schema(firth_client *c, const char *table, fr_schema **out, fr_error *err)
{
    char *info = NULL;
    firth_error ferr = {0};
    if (firth_table_info(c, table, &info, &ferr) < 0)
        return fr_fail(err, ferr.code ? ferr.code : FR_EINVAL, "%s", ferr.msg);
    json_error_t jerr;
    json_t *root = json_loads(info, 0, &jerr);
    firth_free(info);
    json_t *schema = root ? json_object_get(root, "schema") : NULL;
    char *text = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
    json_decref(root);
    FR_CHECK(text, FR_ECORRUPT, err, "table %s: its description has no schema", table);
    int rc = fr_schema_from_json(text, strlen(text), out, err);
    free(text); /* jansson's allocation, not ours */
    return rc;
}
