/* types.h — firth's data types, schemas and single values.
 *
 * A type is a small value struct (no allocation). A schema is an immutable, refcount-free
 * object owned by whoever created it (the catalog keeps one per schema version); it is
 * serialized as JSON in the catalog. A value (fr_value) is one cell: it points into memory
 * it does not own (strings and bytes), so it lives as long as that memory.
 *
 * Physical representation, shared by the Arrow layer and the executor:
 *   BOOLEAN            bool          TINYINT/SMALLINT/INT/BIGINT  int8/16/32/64
 *   FLOAT / DOUBLE     float/double  DECIMAL(p,s)   128-bit unscaled integer (__int128)
 *   CHAR/VARCHAR/STRING  UTF-8 bytes BYTES          bytes
 *   DATE               int32 days since 1970-01-01
 *   TIME(p)            p = 0: int32 seconds; p <= 3: int32 ms; p <= 6: int64 us; else int64 ns
 *   TIMESTAMP(p), TIMESTAMP_LTZ(p)  int64 in the unit of TIME(p) (s, ms, us or ns) since
 *                      the epoch; TIMESTAMP is wall-clock (no zone), TIMESTAMP_LTZ an instant.
 */
#ifndef FIRTH_TYPES_H
#define FIRTH_TYPES_H

#include "base/base.h"

typedef enum fr_type_id {
    FR_T_BOOLEAN = 1,
    FR_T_TINYINT,
    FR_T_SMALLINT,
    FR_T_INT,
    FR_T_BIGINT,
    FR_T_FLOAT,
    FR_T_DOUBLE,
    FR_T_DECIMAL,
    FR_T_CHAR,
    FR_T_VARCHAR,
    FR_T_STRING,
    FR_T_BYTES,
    FR_T_DATE,
    FR_T_TIME,
    FR_T_TIMESTAMP,
    FR_T_TIMESTAMP_LTZ,
} fr_type_id;

#define FR_DECIMAL_PRECISION_MAX 38
#define FR_TIME_PRECISION_MAX 9
#define FR_CHAR_LENGTH_MAX 2147483647
#define FR_SCHEMA_COLUMNS_MAX 4096
#define FR_NAME_BYTES_MAX 255

typedef struct fr_type {
    fr_type_id id;
    uint8_t precision; /* DECIMAL: 1..38; TIME/TIMESTAMP/_LTZ: 0..9 */
    uint8_t scale;     /* DECIMAL: 0..precision */
    bool nullable;
    int32_t length;    /* CHAR(n), VARCHAR(n): n; otherwise 0 */
} fr_type;

/* Constructors for the common cases (nullable). */
fr_type fr_type_of(fr_type_id id);
fr_type fr_type_decimal(int precision, int scale);
fr_type fr_type_time_like(fr_type_id id, int precision);

/* Checks that a type is well formed (precision and scale in range). */
int fr_type_validate(const fr_type *t, fr_error *err);
/* Writes the SQL name: "DECIMAL(10, 2)", "TIMESTAMP(3)", "VARCHAR(20) NOT NULL" when
 * with_null is true and the type is NOT NULL. Returns the length snprintf would write. */
int fr_type_format(const fr_type *t, bool with_null, char *out, size_t cap);
/* Parses a type name as written in SQL or JSON ("INT", "decimal(10,2)", "TIMESTAMP(6)",
 * "TIMESTAMP_LTZ(3)", "TIMESTAMP WITH LOCAL TIME ZONE", "STRING", "VARCHAR(5)", "BIGINT NOT
 * NULL"). Defaults: DECIMAL = DECIMAL(10, 0), TIME = TIME(0), TIMESTAMP = TIMESTAMP(6). */
int fr_type_parse(const char *s, fr_type *out, fr_error *err);
bool fr_type_equal(const fr_type *a, const fr_type *b); /* ignores nullability */

bool fr_type_is_integer(fr_type_id id);   /* TINYINT..BIGINT */
bool fr_type_is_numeric(fr_type_id id);   /* integers, FLOAT, DOUBLE, DECIMAL */
bool fr_type_is_string(fr_type_id id);    /* CHAR, VARCHAR, STRING */
bool fr_type_is_temporal(fr_type_id id);  /* DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ */
/* Bytes per value of a fixed-width type (BOOLEAN: 0, meaning a bitmap; var-width: 0). */
int fr_type_width(const fr_type *t);
bool fr_type_is_varwidth(const fr_type *t); /* strings and bytes */
/* Units per second of TIME/TIMESTAMP(p): 1, 1000, 1000000 or 1000000000. */
int64_t fr_type_time_units(int precision);

/* ---- schemas --------------------------------------------------------------------------- */

typedef struct fr_field {
    char *name; /* NUL-terminated, owned by the schema */
    fr_type type;
} fr_field;

typedef struct fr_schema fr_schema;

/* Creates a schema from fields (names are copied). Checks names (1..255 bytes, unique,
 * case-insensitive) and types. The caller frees it with fr_schema_free. */
int fr_schema_new(const fr_field *fields, int nfields, int32_t schema_id, fr_schema **out,
                  fr_error *err);
void fr_schema_free(fr_schema *s);
/* Another owner of s (schemas are immutable and shared, so this never copies or fails);
 * each owner calls fr_schema_free. Thread: any. */
fr_schema *fr_schema_clone(const fr_schema *s);
int fr_schema_num_fields(const fr_schema *s);
/* The i-th field; lives as long as the schema. */
const fr_field *fr_schema_field(const fr_schema *s, int i);
/* Finds a field by name, case-insensitively. Returns its index or -1. */
int fr_schema_find(const fr_schema *s, const char *name);
int32_t fr_schema_id(const fr_schema *s);
/* A new schema holding the chosen columns in the given order. */
int fr_schema_project(const fr_schema *s, const int *cols, int ncols, fr_schema **out,
                      fr_error *err);
bool fr_schema_equal(const fr_schema *a, const fr_schema *b); /* names, types, nullability */

/* JSON form, as stored in the catalog:
 *   {"id": 0, "fields": [{"name": "a", "type": "INT", "nullable": false}, ...]}
 * to_json returns a NUL-terminated string the caller frees with fr_free. */
int fr_schema_to_json(const fr_schema *s, char **out, fr_error *err);
int fr_schema_from_json(const char *json, size_t len, fr_schema **out, fr_error *err);

/* ---- values ---------------------------------------------------------------------------- */

typedef __int128 fr_i128;

/* One cell. The tag says which union member is valid:
 *   BOOLEAN                       b
 *   TINYINT..BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ   i (in the type's unit)
 *   FLOAT, DOUBLE                 f
 *   DECIMAL                       d (unscaled) with `scale` in the value's type
 *   CHAR, VARCHAR, STRING, BYTES  s (not owned; not NUL-terminated) */
typedef struct fr_value {
    fr_type type; /* the value's own type; for literals the literal's type */
    bool is_null;
    union {
        bool b;
        int64_t i;
        double f;
        fr_i128 d;
        struct {
            const uint8_t *ptr;
            size_t len;
        } s;
    } v;
} fr_value;

/* Constructors; nothing is copied (fr_value_str points at p). fr_value_int stores i in the
 * member the type uses: BOOLEAN gets i != 0, DECIMAL the unscaled i, FLOAT and DOUBLE the
 * number i, every other type i itself. fr_value_double rounds to float precision for
 * FLOAT. */
fr_value fr_value_null(fr_type t);
fr_value fr_value_int(fr_type t, int64_t i);
fr_value fr_value_double(fr_type t, double f);
fr_value fr_value_str(fr_type t, const void *p, size_t n);
fr_value fr_value_bool(fr_type t, bool b);
fr_value fr_value_decimal(fr_type t, fr_i128 unscaled);

/* Converts v to type `to` (SQL CAST semantics for the pairs firth supports: numeric
 * widening and narrowing with range checks, decimal rescale with overflow check, string to
 * any type by parsing, any type to string by formatting into `arena` memory, DATE to
 * TIMESTAMP, timestamp precision changes). Out-of-range or unparsable input is FR_ERANGE or
 * FR_EINVAL with a message naming the value and the target type. */
int fr_value_cast(const fr_value *v, const fr_type *to, fr_arena *arena, fr_value *out,
                  fr_error *err);
/* Compares two non-null values of comparable types (numbers with numbers, strings with
 * strings, bytes with bytes, temporal with the same temporal kind) into *cmp (<0, 0, >0).
 * FR_ETYPE when the types cannot be compared. */
int fr_value_compare(const fr_value *a, const fr_value *b, int *cmp, fr_error *err);

/* Text form used by `firth sql` and CSV: "12.50", "2026-01-01", "10:00:00.123",
 * "2026-01-01 10:00:00.123" (the type's precision), "2026-01-01 10:00:00.123Z" for LTZ,
 * bytes as "\x0a1b...", booleans "true"/"false", NULL as "NULL" when null_text is NULL.
 * Appends to out. */
int fr_value_format(const fr_value *v, fr_buf *out, fr_error *err);

/* Parsing of literal text into a value of type t (used by CSV, JSON and SQL literals):
 * integers, floats, decimals ("12.5" into DECIMAL(10,2) is 1250), dates "2026-01-01",
 * times "10:00:00[.fff]", timestamps "2026-01-01 10:00:00[.fff]" or with 'T', optionally
 * ending in 'Z' (LTZ also takes "+02:00"-style offsets). Strings and bytes point into s
 * (caller keeps s alive). Booleans: true/false/1/0 in any case. Surrounding ASCII spaces
 * are ignored for all but string and bytes types; any other stray byte is FR_EINVAL and a
 * value out of the type's range FR_ERANGE. Fractional seconds beyond the type's precision
 * are truncated; decimal digits beyond the scale round half away from zero. */
int fr_value_parse(const char *s, size_t n, const fr_type *t, fr_value *out, fr_error *err);

/* Calendar helpers. */
int64_t fr_days_from_civil(int64_t y, unsigned m, unsigned d);
void fr_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* Decimal helpers: 10^n for n <= 38, and the text of an unscaled value with a scale. */
fr_i128 fr_i128_pow10(int n);
/* Writes e.g. "-12.50" for (-1250, 2). Returns bytes written (cap >= 42 always suffices). */
int fr_decimal_format(fr_i128 unscaled, int scale, char *out, size_t cap);
/* True when |unscaled| < 10^precision. */
bool fr_decimal_fits(fr_i128 unscaled, int precision);
/* Changes the scale of an unscaled value, rounding half away from zero when digits are
 * dropped, and checks that the result fits `precision` digits (FR_ERANGE otherwise). */
int fr_decimal_rescale(fr_i128 unscaled, int from_scale, int to_scale, int precision,
                       fr_i128 *out, fr_error *err);
/* Parses decimal text ("-12.345", "1e3", "0.5E-2") into an unscaled value of the given
 * scale, rounding half away from zero; FR_EINVAL for bad text, FR_ERANGE when the value
 * needs more than `precision` digits. */
int fr_decimal_parse(const char *s, size_t n, int precision, int scale, fr_i128 *out,
                     fr_error *err);
/* The shortest text that reads back as the same double (or float, when is_float), in the
 * form Java and Flink print: "3.0", "0.1", "1.0E10", "1.5E-5", "NaN", "-Infinity".
 * Returns the length written (cap >= 32 always suffices). */
int fr_double_format(double f, bool is_float, char *out, size_t cap);


/* ---- order-preserving key encoding ------------------------------------------------------ */

#define FR_KEY_BYTES_MAX (64 << 10)

/* Encodes the values of a primary key (one per key column, of the columns' types, none
 * NULL) so that memcmp of two encodings orders like the values, column by column, and the
 * encoding of the first k columns is a byte prefix of the encoding of all of them (so a
 * prefix of the key is a RocksDB prefix). Appends to out. FR_EINVAL for a NULL value or a
 * value whose type does not match (another type id, DECIMAL scale or TIME/TIMESTAMP unit, an
 * integer outside the column's width, a double that is no FLOAT); FR_ERANGE for text longer
 * than CHAR(n)/VARCHAR(n); FR_ELIMIT past FR_KEY_BYTES_MAX. On error out keeps its length.
 * Layout: docs/FORMAT.md, "Key and row encodings". */
int fr_key_encode(const fr_type *types, const fr_value *values, int n, fr_buf *out,
                  fr_error *err);
/* Decodes n key values from p (n may be fewer than the key's columns: a prefix). String and
 * bytes values point into p, except that a value holding a zero byte is stored escaped and
 * cannot: fr_key_decode fails on it with FR_EUNSUPPORTED, fr_key_decode_arena copies it
 * into `arena` memory (living as long as the arena). *used (may be NULL) is the number of
 * bytes consumed. Every length is checked: FR_ECORRUPT on bad input, including bytes that
 * fr_key_encode would not write (so a decoded key re-encodes to the same bytes). */
int fr_key_decode(const uint8_t *p, size_t len, const fr_type *types, int n,
                  fr_value *values, size_t *used, fr_error *err);
int fr_key_decode_arena(const uint8_t *p, size_t len, const fr_type *types, int n,
                        fr_arena *arena, fr_value *values, size_t *used, fr_error *err);

/* ---- compact row encoding ---------------------------------------------------------------- */

#define FR_ROW_BYTES_MAX (64 << 20)

/* Encodes a whole row (one value per field of s; NULL allowed where the field is nullable)
 * in a compact form that starts with the schema id, so a stored row says which schema
 * version wrote it. Appends to out. Errors as fr_key_encode's (FR_EINVAL also for a NULL in
 * a NOT NULL field or a negative schema id; FR_ELIMIT past FR_ROW_BYTES_MAX), with the
 * field's name; on error out keeps its length. Layout: docs/FORMAT.md. */
int fr_row_encode(const fr_schema *s, const fr_value *values, fr_buf *out, fr_error *err);
/* Reads the schema id of an encoded row without decoding it. */
int fr_row_schema_id(const uint8_t *p, size_t len, int32_t *schema_id, fr_error *err);
/* Decodes a row written with schema s (whose id must match) into values[nfields]. String
 * and bytes values point into p. FR_ECORRUPT on any inconsistency. */
int fr_row_decode(const uint8_t *p, size_t len, const fr_schema *s, fr_value *values,
                  fr_error *err);

#endif
