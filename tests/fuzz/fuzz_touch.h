/* fuzz_touch.h — reads every cell of a decoded batch, so that ASan sees any buffer a decoder
 * let through too short; the hash lets a target compare two decodings of the same cells. */
#ifndef FIRTH_FUZZ_TOUCH_H
#define FIRTH_FUZZ_TOUCH_H

#include "arrow/arrow.h"

static inline uint64_t fuzz_touch(const fr_batch *b)
{
    uint64_t h = 0;
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        const fr_column *col = fr_batch_column(b, c);
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            fr_value v;
            fr_column_get(col, r, &v);
            if (v.is_null) continue;
            if (v.type.id == FR_T_CHAR || v.type.id == FR_T_VARCHAR || v.type.id == FR_T_STRING ||
                v.type.id == FR_T_BYTES) {
                for (size_t i = 0; i < v.v.s.len; i++) h = h * 31 + v.v.s.ptr[i];
            } else {
                h = h * 31 + (uint64_t)v.v.i;
            }
        }
    }
    return h;
}

#endif
