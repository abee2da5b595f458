/* types_codec.h — internals shared by the key encoding (types_key.c) and the row encoding
 * (types_row.c): checking that a value may be written to a column, and reading varints in
 * their one canonical (shortest) form, so that every accepted encoding re-encodes to the
 * same bytes. */
#ifndef FIRTH_TYPES_CODEC_H
#define FIRTH_TYPES_CODEC_H

#include "types/types.h"

/* Checks that a non-null value can be stored in a column of type col: the same type id,
 * the same DECIMAL scale and a value within its precision, the same TIME/TIMESTAMP unit,
 * an integer within the column's physical width, a FLOAT value that a float holds exactly,
 * text within CHAR(n)/VARCHAR(n). FR_EINVAL (FR_ERANGE for text too long) otherwise; the
 * caller wraps the message with the column's name. */
int fr_codec_check_value(const fr_value *v, const fr_type *col, fr_error *err);

/* The smallest and largest integer a column of an integer or temporal type holds, by its
 * physical width (TINYINT: -128..127, DATE: int32, TIMESTAMP: int64). */
void fr_codec_int_range(const fr_type *col, int64_t *lo, int64_t *hi);

/* Reads an unsigned LEB128 varint in its shortest form. Returns the bytes consumed, or 0
 * when the input is short, the varint is longer than 10 bytes or it has a redundant zero
 * final group (0x80 0x00 for 0), which no encoder here writes. */
size_t fr_codec_varint_get(const uint8_t *p, size_t n, uint64_t *v);

#endif
