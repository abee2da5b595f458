/* bench_report.c — gathers the result files of the benchmark programs into one summary:
 * prints every target with its figure and verdict (PASS or MISS; a miss never fails the
 * run) and writes them, with each benchmark's headline figures, to one JSON file.
 *
 * usage: bench_report --out SUMMARY.json RESULT.json...
 * A result file that is missing or unreadable is reported as "not run" (the program that
 * should have written it failed, and said why), and makes this program exit with 1. */
#include "benchkit.h"

#include <stdio.h>

/* The figures worth a glance, without the per-repetition detail. */
static json_t *rp_headline(json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "benchmark"));
    json_t *out = json_object(), *runs = json_object_get(doc, "runs"), *run;
    size_t i;
    if (kind && !strcmp(kind, "append")) {
        json_t *disk = json_object_get(doc, "disk");
        if (json_is_object(disk))
            json_object_set(out, "dd_mb_per_s", json_object_get(disk, "dd_mb_per_s_median"));
        json_array_foreach(runs, i, run)
            json_object_set(out, json_string_value(json_object_get(run, "compression")),
                            json_object_get(run, "median"));
    } else if (kind && !strcmp(kind, "net_produce")) {
        json_object_set(out, "dd_mb_per_s", json_object_get(json_object_get(doc, "disk"),
                                                             "dd_mb_per_s_median"));
        json_array_foreach(runs, i, run)
            json_object_set_new(out, json_string_value(json_object_get(run, "compression")),
                                json_pack("{s:O, s:O}", "max",
                                          json_object_get(json_object_get(run, "max"), "median"),
                                          "latency", json_object_get(run, "latency")));
    } else if (kind && !strcmp(kind, "net_pk")) {
        json_object_set(out, "upserts", json_object_get(doc, "upserts"));
        json_object_set(out, "lookups", json_object_get(doc, "lookups"));
    } else if (kind && (!strcmp(kind, "redis_streams") || !strcmp(kind, "postgres"))) {
        json_object_set(out, "median", json_object_get(doc, "median"));
    } else if (kind && (!strcmp(kind, "projection") || !strcmp(kind, "net_fetch"))) {
        json_array_foreach(runs, i, run) {
            json_t *rows = json_object(), *p;
            size_t j;
            json_array_foreach(json_object_get(run, "projections"), j, p)
                json_object_set(rows, json_string_value(json_object_get(p, "label")),
                                json_object_get(p, "rows_per_s"));
            json_object_set_new(out, json_string_value(json_object_get(run, "compression")),
                                json_pack("{s:o}", "rows_per_s", rows));
        }
    }
    return out;
}

static void rp_print_target(json_t *t)
{
    const char *better = json_string_value(json_object_get(t, "better"));
    printf("  %-4s  %-32s %8.2f  (target %s %.2f)\n    %s\n",
           json_string_value(json_object_get(t, "status")),
           json_string_value(json_object_get(t, "name")),
           json_real_value(json_object_get(t, "figure")),
           better && !strcmp(better, "lower") ? "<=" : ">=",
           json_real_value(json_object_get(t, "target")),
           json_string_value(json_object_get(t, "what")));
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    json_t *targets = json_array(), *benches = json_object();
    int missing = 0, pass = 0, miss = 0;
    printf("\nfirth benchmark targets (a MISS is reported, never a failure):\n");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
            continue;
        }
        json_error_t jerr;
        json_t *doc = json_load_file(argv[i], 0, &jerr);
        if (!doc) {
            printf("  not run: %s (%s)\n", argv[i], jerr.text);
            missing++;
            continue;
        }
        json_t *t;
        size_t j;
        json_array_foreach(json_object_get(doc, "targets"), j, t) {
            rp_print_target(t);
            json_array_append(targets, t);
            bool ok = !strcmp(json_string_value(json_object_get(t, "status")), "PASS");
            pass += ok;
            miss += !ok;
        }
        const char *kind = json_string_value(json_object_get(doc, "benchmark"));
        json_object_set_new(benches, kind ? kind : argv[i],
                            json_pack("{s:s, s:o}", "file", argv[i], "headline", rp_headline(doc)));
        json_decref(doc);
    }
    printf("  %d PASS, %d MISS%s\n", pass, miss, missing ? ", some benchmarks did not run" : "");
    json_t *doc = json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "pass", pass, "miss", miss,
                            "not_run", missing, "targets", targets, "benchmarks", benches,
                            "host", bk_host_json());
    fr_error err = {0};
    if (out && bk_json_write(doc, out, &err) < 0) {
        fprintf(stderr, "bench_report: %s\n", err.msg);
        missing++;
    }
    if (out) printf("  results: %s\n", out);
    json_decref(doc);
    return missing ? 1 : 0;
}
