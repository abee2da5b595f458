/* fuzz_engine_tzif.c — the zoneinfo (TZif) reader of auto-partitioning's time zones: any
 * bytes must be read or refused, never crash; an offset read is within a day and a few
 * hours of UTC. The instant comes from the first 8 bytes, so that the transitions, the
 * footer's POSIX rule and the times before the first transition are all reached. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/engine_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t at = 4102444800; /* 2100-01-01 */
    if (size >= 8) {
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | data[i];
        at = (int64_t)(u % (int64_t)8e11) - (int64_t)4e11; /* some 12,000 years around 1970 */
        data += 8;
        size -= 8;
    }
    int32_t off = 0;
    if (fr_tzif_offset(data, size, at, &off) && (off <= -26 * 3600 || off >= 26 * 3600)) abort();
    return 0;
}
