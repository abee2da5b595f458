/* types_type.c — type descriptors: constructors, validation, SQL names (formatting and
 * parsing) and the physical-layout predicates.
 *
 * fr_type_parse reads the SQL spellings users and the catalog write; its tokenizer keeps
 * words (letters, digits, '_'), numbers and the punctuation "(),", and works on a bounded
 * copy of the input so error messages can quote it. */
#include "types/types.h"

#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#define FR_TYPE_TEXT_BYTES_MAX 200

fr_type fr_type_of(fr_type_id id)
{
    fr_type t = {.id = id, .nullable = true};
    switch (id) {
    case FR_T_DECIMAL:
        t.precision = 10;
        break;
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        t.precision = 6;
        break;
    case FR_T_CHAR:
        t.length = 1;
        break;
    case FR_T_VARCHAR:
        t.length = FR_CHAR_LENGTH_MAX;
        break;
    default:
        break;
    }
    return t;
}

fr_type fr_type_decimal(int precision, int scale)
{
    fr_type t = {.id = FR_T_DECIMAL, .precision = (uint8_t)precision, .scale = (uint8_t)scale,
                 .nullable = true};
    return t;
}

fr_type fr_type_time_like(fr_type_id id, int precision)
{
    fr_type t = {.id = id, .precision = (uint8_t)precision, .nullable = true};
    return t;
}

int fr_type_validate(const fr_type *t, fr_error *err)
{
    switch (t->id) {
    case FR_T_BOOLEAN:
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT:
    case FR_T_FLOAT:
    case FR_T_DOUBLE:
    case FR_T_STRING:
    case FR_T_BYTES:
    case FR_T_DATE:
        return FR_OK;
    case FR_T_DECIMAL:
        FR_CHECK(t->precision >= 1 && t->precision <= FR_DECIMAL_PRECISION_MAX, FR_EINVAL, err,
                 "DECIMAL precision %d is out of range 1..%d", t->precision,
                 FR_DECIMAL_PRECISION_MAX);
        FR_CHECK(t->scale <= t->precision, FR_EINVAL, err,
                 "DECIMAL scale %d is out of range 0..%d (the precision)", t->scale,
                 t->precision);
        return FR_OK;
    case FR_T_CHAR:
    case FR_T_VARCHAR:
        FR_CHECK(t->length >= 1, FR_EINVAL, err, "%s length %d is out of range 1..%d",
                 t->id == FR_T_CHAR ? "CHAR" : "VARCHAR", t->length, FR_CHAR_LENGTH_MAX);
        return FR_OK;
    case FR_T_TIME:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        FR_CHECK(t->precision <= FR_TIME_PRECISION_MAX, FR_EINVAL, err,
                 "%s precision %d is out of range 0..%d",
                 t->id == FR_T_TIME ? "TIME" : t->id == FR_T_TIMESTAMP ? "TIMESTAMP"
                                                                      : "TIMESTAMP_LTZ",
                 t->precision, FR_TIME_PRECISION_MAX);
        return FR_OK;
    }
    return fr_fail(err, FR_EINVAL, "unknown type id %d", (int)t->id);
}

static const char *fr_type_base_name(fr_type_id id)
{
    switch (id) {
    case FR_T_BOOLEAN: return "BOOLEAN";
    case FR_T_TINYINT: return "TINYINT";
    case FR_T_SMALLINT: return "SMALLINT";
    case FR_T_INT: return "INT";
    case FR_T_BIGINT: return "BIGINT";
    case FR_T_FLOAT: return "FLOAT";
    case FR_T_DOUBLE: return "DOUBLE";
    case FR_T_DECIMAL: return "DECIMAL";
    case FR_T_CHAR: return "CHAR";
    case FR_T_VARCHAR: return "VARCHAR";
    case FR_T_STRING: return "STRING";
    case FR_T_BYTES: return "BYTES";
    case FR_T_DATE: return "DATE";
    case FR_T_TIME: return "TIME";
    case FR_T_TIMESTAMP: return "TIMESTAMP";
    case FR_T_TIMESTAMP_LTZ: return "TIMESTAMP_LTZ";
    }
    return "UNKNOWN";
}

int fr_type_format(const fr_type *t, bool with_null, char *out, size_t cap)
{
    const char *name = fr_type_base_name(t->id);
    const char *nn = (with_null && !t->nullable) ? " NOT NULL" : "";
    switch (t->id) {
    case FR_T_DECIMAL:
        return snprintf(out, cap, "%s(%d, %d)%s", name, t->precision, t->scale, nn);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
        return snprintf(out, cap, "%s(%d)%s", name, (int)t->length, nn);
    case FR_T_TIME:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        return snprintf(out, cap, "%s(%d)%s", name, t->precision, nn);
    default:
        return snprintf(out, cap, "%s%s", name, nn);
    }
}

/* ---- parsing --------------------------------------------------------------------------- */

typedef struct fr_type_lexer {
    const char *text; /* the whole input, NUL-terminated copy */
    const char *p;
    const char *tok; /* where the current token starts */
    char word[32]; /* the current word, upper-cased; "" at the end or on punctuation */
    char punct;    /* '(' ')' ',' or 0 */
    int64_t num;   /* the number when the token is a number */
    bool is_num;
    bool at_end;
} fr_type_lexer;

static int fr_type_next(fr_type_lexer *lx, fr_error *err)
{
    while (isspace((unsigned char)*lx->p)) lx->p++;
    lx->tok = lx->p;
    lx->word[0] = '\0';
    lx->punct = 0;
    lx->is_num = false;
    lx->at_end = false;
    char c = *lx->p;
    if (c == '\0') {
        lx->at_end = true;
        return FR_OK;
    }
    if (c == '(' || c == ')' || c == ',') {
        lx->punct = c;
        lx->p++;
        return FR_OK;
    }
    if (isdigit((unsigned char)c)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*lx->p)) {
            v = v * 10 + (*lx->p - '0');
            FR_CHECK(v <= INT32_MAX, FR_EINVAL, err, "number too large in type '%s'", lx->text);
            lx->p++;
        }
        lx->num = v;
        lx->is_num = true;
        return FR_OK;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)*lx->p) || *lx->p == '_') {
            FR_CHECK(n + 1 < sizeof lx->word, FR_EINVAL, err, "unknown type '%s'", lx->text);
            lx->word[n++] = (char)toupper((unsigned char)*lx->p);
            lx->p++;
        }
        lx->word[n] = '\0';
        return FR_OK;
    }
    return fr_fail(err, FR_EINVAL, "unexpected character '%c' in type '%s'", c, lx->text);
}

static bool fr_type_is_word(const fr_type_lexer *lx, const char *w)
{
    return strcmp(lx->word, w) == 0;
}

/* Consumes `w` when it is the current word. */
static int fr_type_accept(fr_type_lexer *lx, const char *w, bool *took, fr_error *err)
{
    *took = fr_type_is_word(lx, w);
    if (*took) FR_TRY(fr_type_next(lx, err));
    return FR_OK;
}

static int fr_type_expect(fr_type_lexer *lx, const char *w, fr_error *err)
{
    FR_CHECK(fr_type_is_word(lx, w), FR_EINVAL, err, "expected %s in type '%s'", w, lx->text);
    return fr_type_next(lx, err);
}

/* Reads an optional "(a)" or "(a, b)"; *count is 0, 1 or 2. */
static int fr_type_args(fr_type_lexer *lx, int max_args, int64_t *args, int *count,
                        const char *name, fr_error *err)
{
    *count = 0;
    if (lx->punct != '(') return FR_OK;
    FR_TRY(fr_type_next(lx, err));
    for (;;) {
        FR_CHECK(lx->is_num, FR_EINVAL, err, "expected a number in %s(...) in type '%s'", name,
                 lx->text);
        FR_CHECK(*count < max_args, FR_EINVAL, err, "%s takes at most %d argument%s in type '%s'",
                 name, max_args, max_args == 1 ? "" : "s", lx->text);
        args[(*count)++] = lx->num;
        FR_TRY(fr_type_next(lx, err));
        if (lx->punct == ',') {
            FR_TRY(fr_type_next(lx, err));
            continue;
        }
        FR_CHECK(lx->punct == ')', FR_EINVAL, err, "expected ')' after %s(... in type '%s'", name,
                 lx->text);
        return fr_type_next(lx, err);
    }
}

/* The optional "WITH[OUT] [LOCAL] TIME ZONE" after TIME or TIMESTAMP. */
static int fr_type_zone_suffix(fr_type_lexer *lx, fr_type *t, fr_error *err)
{
    bool took;
    FR_TRY(fr_type_accept(lx, "WITHOUT", &took, err));
    if (took) {
        FR_TRY(fr_type_expect(lx, "TIME", err));
        return fr_type_expect(lx, "ZONE", err);
    }
    FR_TRY(fr_type_accept(lx, "WITH", &took, err));
    if (!took) return FR_OK;
    FR_CHECK(t->id == FR_T_TIMESTAMP, FR_EUNSUPPORTED, err,
             "TIME WITH LOCAL TIME ZONE is not supported (in type '%s')", lx->text);
    FR_CHECK(fr_type_is_word(lx, "LOCAL"), FR_EUNSUPPORTED, err,
             "TIMESTAMP WITH TIME ZONE is not supported; use TIMESTAMP WITH LOCAL TIME ZONE "
             "(in type '%s')", lx->text);
    FR_TRY(fr_type_next(lx, err));
    FR_TRY(fr_type_expect(lx, "TIME", err));
    FR_TRY(fr_type_expect(lx, "ZONE", err));
    t->id = FR_T_TIMESTAMP_LTZ;
    return FR_OK;
}

typedef struct fr_type_name {
    const char *word;
    fr_type_id id;
} fr_type_name;

static const fr_type_name fr_type_names[] = {
    {"BOOLEAN", FR_T_BOOLEAN},   {"BOOL", FR_T_BOOLEAN},       {"TINYINT", FR_T_TINYINT},
    {"SMALLINT", FR_T_SMALLINT}, {"INT", FR_T_INT},            {"INTEGER", FR_T_INT},
    {"BIGINT", FR_T_BIGINT},     {"FLOAT", FR_T_FLOAT},        {"REAL", FR_T_FLOAT},
    {"DOUBLE", FR_T_DOUBLE},     {"DECIMAL", FR_T_DECIMAL},    {"NUMERIC", FR_T_DECIMAL},
    {"DEC", FR_T_DECIMAL},       {"CHAR", FR_T_CHAR},          {"CHARACTER", FR_T_CHAR},
    {"VARCHAR", FR_T_VARCHAR},   {"STRING", FR_T_STRING},      {"TEXT", FR_T_STRING},
    {"BYTES", FR_T_BYTES},       {"VARBINARY", FR_T_BYTES},    {"BINARY", FR_T_BYTES},
    {"DATE", FR_T_DATE},         {"TIME", FR_T_TIME},          {"TIMESTAMP", FR_T_TIMESTAMP},
    {"TIMESTAMP_LTZ", FR_T_TIMESTAMP_LTZ},
};

/* Reads the type name and its arguments (no nullability). */
static int fr_type_parse_body(fr_type_lexer *lx, fr_type *t, fr_error *err)
{
    const fr_type_name *found = NULL;
    for (size_t i = 0; i < sizeof fr_type_names / sizeof fr_type_names[0]; i++)
        if (fr_type_is_word(lx, fr_type_names[i].word)) found = &fr_type_names[i];
    FR_CHECK(found != NULL, FR_EINVAL, err, "unknown type '%s'", lx->text);
    *t = fr_type_of(found->id);
    bool varying = false;
    if (fr_type_is_word(lx, "CHARACTER")) {
        FR_TRY(fr_type_next(lx, err));
        FR_TRY(fr_type_accept(lx, "VARYING", &varying, err));
        if (varying) t->id = FR_T_VARCHAR;
    } else {
        FR_TRY(fr_type_next(lx, err));
    }
    if (t->id == FR_T_DOUBLE) {
        bool took;
        FR_TRY(fr_type_accept(lx, "PRECISION", &took, err));
    }
    int64_t args[2] = {0, 0};
    int n = 0;
    switch (t->id) {
    case FR_T_DECIMAL:
        FR_TRY(fr_type_args(lx, 2, args, &n, "DECIMAL", err));
        if (n >= 1) {
            FR_CHECK(args[0] >= 1 && args[0] <= FR_DECIMAL_PRECISION_MAX, FR_EINVAL, err,
                     "DECIMAL precision %lld is out of range 1..%d", (long long)args[0],
                     FR_DECIMAL_PRECISION_MAX);
            t->precision = (uint8_t)args[0];
        }
        if (n == 2) {
            FR_CHECK(args[1] <= args[0], FR_EINVAL, err,
                     "DECIMAL scale %lld is out of range 0..%lld (the precision)",
                     (long long)args[1], (long long)args[0]);
            t->scale = (uint8_t)args[1];
        }
        return FR_OK;
    case FR_T_CHAR:
    case FR_T_VARCHAR: {
        const char *nm = t->id == FR_T_CHAR ? "CHAR" : "VARCHAR";
        FR_TRY(fr_type_args(lx, 1, args, &n, nm, err));
        if (n == 1) {
            FR_CHECK(args[0] >= 1, FR_EINVAL, err, "%s length %lld is out of range 1..%d", nm,
                     (long long)args[0], FR_CHAR_LENGTH_MAX);
            t->length = (int32_t)args[0];
        }
        return FR_OK;
    }
    case FR_T_BYTES:
        /* BINARY(n) and VARBINARY(n) are stored as BYTES; the length is not kept. */
        FR_TRY(fr_type_args(lx, 1, args, &n, found->word, err));
        FR_CHECK(n == 0 || args[0] >= 1, FR_EINVAL, err, "%s length %lld is out of range 1..%d",
                 found->word, (long long)args[0], FR_CHAR_LENGTH_MAX);
        return FR_OK;
    case FR_T_TIME:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        FR_TRY(fr_type_args(lx, 1, args, &n, found->word, err));
        if (n == 1) {
            FR_CHECK(args[0] <= FR_TIME_PRECISION_MAX, FR_EINVAL, err,
                     "%s precision %lld is out of range 0..%d", found->word,
                     (long long)args[0], FR_TIME_PRECISION_MAX);
            t->precision = (uint8_t)args[0];
        }
        if (t->id != FR_T_TIMESTAMP_LTZ) FR_TRY(fr_type_zone_suffix(lx, t, err));
        return FR_OK;
    default:
        FR_CHECK(lx->punct != '(', FR_EINVAL, err, "%s takes no arguments (in type '%s')",
                 found->word, lx->text);
        return FR_OK;
    }
}

int fr_type_parse(const char *s, fr_type *out, fr_error *err)
{
    char text[FR_TYPE_TEXT_BYTES_MAX + 1];
    size_t len = strlen(s);
    FR_CHECK(len <= FR_TYPE_TEXT_BYTES_MAX, FR_EINVAL, err,
             "type name of %zu bytes is longer than %d bytes", len, FR_TYPE_TEXT_BYTES_MAX);
    memcpy(text, s, len + 1);
    fr_type_lexer lx = {.text = text, .p = text};
    FR_TRY(fr_type_next(&lx, err));
    FR_CHECK(!lx.at_end, FR_EINVAL, err, "empty type name");
    fr_type t;
    FR_TRY(fr_type_parse_body(&lx, &t, err));
    bool took;
    FR_TRY(fr_type_accept(&lx, "NOT", &took, err));
    if (took) {
        FR_TRY(fr_type_expect(&lx, "NULL", err));
        t.nullable = false;
    } else {
        FR_TRY(fr_type_accept(&lx, "NULL", &took, err));
    }
    FR_CHECK(lx.at_end, FR_EINVAL, err, "unexpected '%.20s' after the type in '%s'",
             lx.tok, text);
    *out = t;
    return FR_OK;
}

bool fr_type_equal(const fr_type *a, const fr_type *b)
{
    if (a->id != b->id) return false;
    switch (a->id) {
    case FR_T_DECIMAL:
        return a->precision == b->precision && a->scale == b->scale;
    case FR_T_CHAR:
    case FR_T_VARCHAR:
        return a->length == b->length;
    case FR_T_TIME:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        return a->precision == b->precision;
    default:
        return true;
    }
}

bool fr_type_is_integer(fr_type_id id)
{
    return id >= FR_T_TINYINT && id <= FR_T_BIGINT;
}

bool fr_type_is_numeric(fr_type_id id)
{
    return id >= FR_T_TINYINT && id <= FR_T_DECIMAL;
}

bool fr_type_is_string(fr_type_id id)
{
    return id == FR_T_CHAR || id == FR_T_VARCHAR || id == FR_T_STRING;
}

bool fr_type_is_temporal(fr_type_id id)
{
    return id >= FR_T_DATE && id <= FR_T_TIMESTAMP_LTZ;
}

int fr_type_width(const fr_type *t)
{
    switch (t->id) {
    case FR_T_TINYINT: return 1;
    case FR_T_SMALLINT: return 2;
    case FR_T_INT:
    case FR_T_FLOAT:
    case FR_T_DATE:
        return 4;
    case FR_T_BIGINT:
    case FR_T_DOUBLE:
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        return 8;
    case FR_T_TIME: return t->precision <= 3 ? 4 : 8;
    case FR_T_DECIMAL: return 16;
    default: return 0; /* BOOLEAN is a bitmap; strings and bytes are variable */
    }
}

bool fr_type_is_varwidth(const fr_type *t)
{
    return fr_type_is_string(t->id) || t->id == FR_T_BYTES;
}

int64_t fr_type_time_units(int precision)
{
    if (precision <= 0) return 1;
    if (precision <= 3) return 1000;
    if (precision <= 6) return 1000000;
    return 1000000000;
}
