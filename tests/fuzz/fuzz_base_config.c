/* fuzz_base_config.c — the flat `key: value` configuration parser and the duration, size
 * and integer parsers that read its values. Every parsed entry must be found again by key
 * with a trimmed, non-empty value. */
#include <stdint.h>
#include <stdlib.h>

#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_config *c = fr_config_new();
    if (!c) return 0;
    fr_error err;
    if (fr_config_parse(c, (const char *)data, size, "fuzz", &err) == 0) {
        for (size_t i = 0; i < fr_config_count(c); i++) {
            const char *k, *v;
            fr_config_entry(c, i, &k, &v);
            if (!k || !v || !*k || !*v) abort();
            if (fr_config_get(c, k) != v) abort();
            int64_t x;
            (void)fr_parse_duration_ms(v, &x, &err);
            (void)fr_parse_bytes(v, &x, &err);
            if (fr_parse_i64(v, &x, &err) == 0 && fr_parse_duration_ms(v, &x, &err) != 0 &&
                v[0] != '-' && v[0] != '+')
                abort();
        }
    } else if (!strstr(err.msg, "fuzz:")) {
        abort();
    }
    fr_config_free(c);
    return 0;
}
