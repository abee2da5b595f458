/* test_types.c — unit tests of src/types: type names, schemas and their JSON, the
 * calendar and decimal helpers, and value parse, format, cast and compare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "types/types.h"

/* ---- helpers --------------------------------------------------------------------------- */

static fr_type T(const char *name)
{
    fr_type t;
    fr_error err;
    if (fr_type_parse(name, &t, &err) < 0) fail_msg("type %s: %s", name, err.msg);
    return t;
}

/* Formats v into a static buffer. */
static const char *fmt(const fr_value *v)
{
    static char out[256];
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    if (fr_value_format(v, &b, &err) < 0) fail_msg("format: %s", err.msg);
    assert_true(b.len < sizeof out);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    fr_buf_free(&b);
    return out;
}

static fr_value parse_ok(const char *type, const char *text)
{
    fr_type t = T(type);
    fr_value v;
    fr_error err;
    if (fr_value_parse(text, strlen(text), &t, &v, &err) < 0)
        fail_msg("parse '%s' as %s: %s", text, type, err.msg);
    assert_false(v.is_null);
    return v;
}

/* Parses text as type and checks that it formats as expected. */
static void roundtrip(const char *type, const char *text, const char *expect)
{
    fr_value v = parse_ok(type, text);
    const char *got = fmt(&v);
    if (strcmp(got, expect) != 0)
        fail_msg("'%s' as %s formats as '%s', expected '%s'", text, type, got, expect);
}

static int parse_rc(const char *type, const char *text, fr_error *err)
{
    fr_type t = T(type);
    fr_value v;
    return fr_value_parse(text, strlen(text), &t, &v, err);
}

static const char *type_str(const fr_type *t, bool with_null)
{
    static char buf[80];
    fr_type_format(t, with_null, buf, sizeof buf);
    return buf;
}

/* ---- types ----------------------------------------------------------------------------- */

static void test_type_parse_names(void **state)
{
    (void)state;
    struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"BOOLEAN", "BOOLEAN"},
        {"bool", "BOOLEAN"},
        {"tinyint", "TINYINT"},
        {"SmallInt", "SMALLINT"},
        {"INT", "INT"},
        {"integer", "INT"},
        {"BIGINT", "BIGINT"},
        {"FLOAT", "FLOAT"},
        {"REAL", "FLOAT"},
        {"DOUBLE", "DOUBLE"},
        {"double precision", "DOUBLE"},
        {"DECIMAL", "DECIMAL(10, 0)"},
        {"decimal(10,2)", "DECIMAL(10, 2)"},
        {"NUMERIC(38, 38)", "DECIMAL(38, 38)"},
        {"DEC(5)", "DECIMAL(5, 0)"},
        {"CHAR", "CHAR(1)"},
        {"CHAR(10)", "CHAR(10)"},
        {"character(3)", "CHAR(3)"},
        {"VARCHAR(20)", "VARCHAR(20)"},
        {"character varying(7)", "VARCHAR(7)"},
        {"VARCHAR", "VARCHAR(2147483647)"},
        {"STRING", "STRING"},
        {"BYTES", "BYTES"},
        {"VARBINARY(100)", "BYTES"},
        {"BINARY(16)", "BYTES"},
        {"DATE", "DATE"},
        {"TIME", "TIME(0)"},
        {"TIME(3)", "TIME(3)"},
        {"TIME(9) WITHOUT TIME ZONE", "TIME(9)"},
        {"TIMESTAMP", "TIMESTAMP(6)"},
        {"timestamp(3)", "TIMESTAMP(3)"},
        {"TIMESTAMP(0) WITHOUT TIME ZONE", "TIMESTAMP(0)"},
        {"TIMESTAMP_LTZ", "TIMESTAMP_LTZ(6)"},
        {"TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)"},
        {"TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(6)"},
        {"timestamp(9) with local time zone", "TIMESTAMP_LTZ(9)"},
        {"BIGINT NOT NULL", "BIGINT NOT NULL"},
        {"  varchar ( 5 )   not   null ", "VARCHAR(5) NOT NULL"},
        {"INT NULL", "INT"},
        {"TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP_LTZ(3) NOT NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fr_type t = T(cases[i].in);
        assert_string_equal(type_str(&t, true), cases[i].out);
        fr_error err;
        assert_int_equal(fr_type_validate(&t, &err), 0);
        /* The formatted name parses back to the same type. */
        fr_type u = T(type_str(&t, true));
        assert_true(fr_type_equal(&t, &u));
        assert_int_equal(t.nullable, u.nullable);
    }
    fr_type t = T("BIGINT NOT NULL");
    assert_string_equal(type_str(&t, false), "BIGINT");
    assert_false(t.nullable);
}

static void test_type_parse_errors(void **state)
{
    (void)state;
    struct {
        const char *in;
        const char *msg;
    } cases[] = {
        {"", "empty type name"},
        {"   ", "empty type name"},
        {"FOO", "unknown type 'FOO'"},
        {"DECIMAL(40)", "DECIMAL precision 40 is out of range 1..38"},
        {"DECIMAL(0)", "DECIMAL precision 0 is out of range 1..38"},
        {"DECIMAL(5, 6)", "DECIMAL scale 6 is out of range 0..5"},
        {"DECIMAL(5, 2, 1)", "at most 2 arguments"},
        {"DECIMAL(5", "expected ')'"},
        {"DECIMAL()", "expected a number"},
        {"DECIMAL(x)", "expected a number"},
        {"VARCHAR(0)", "VARCHAR length 0 is out of range"},
        {"VARCHAR(2147483648)", "number too large"},
        {"CHAR(1, 2)", "at most 1 argument"},
        {"TIMESTAMP(10)", "TIMESTAMP precision 10 is out of range 0..9"},
        {"TIME(12)", "TIME precision 12 is out of range 0..9"},
        {"TIMESTAMP_LTZ(10)", "TIMESTAMP_LTZ precision 10 is out of range 0..9"},
        {"INT(4)", "INT takes no arguments"},
        {"INT NOT", "expected NULL"},
        {"INT NOT NULL garbage", "unexpected 'garbage'"},
        {"INT)", "unexpected ')'"},
        {"TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE is not supported"},
        {"TIME WITH LOCAL TIME ZONE", "TIME WITH LOCAL TIME ZONE is not supported"},
        {"TIMESTAMP WITHOUT ZONE", "expected TIME"},
        {"INT;", "unexpected character ';'"},
        {"AVERYLONGTYPENAMETHATDOESNOTEXISTATALLXX", "unknown type"},
        {"BINARY(0)", "BINARY length 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fr_type t;
        fr_error err;
        int rc = fr_type_parse(cases[i].in, &t, &err);
        if (rc >= 0) fail_msg("'%s' parsed", cases[i].in);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("'%s': message '%s' lacks '%s'", cases[i].in, err.msg, cases[i].msg);
    }
    char longname[300];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    fr_type t;
    fr_error err;
    assert_int_equal(fr_type_parse(longname, &t, &err), FR_EINVAL);
}

static void test_type_validate_and_props(void **state)
{
    (void)state;
    fr_error err;
    fr_type t = fr_type_decimal(38, 10);
    assert_int_equal(fr_type_validate(&t, &err), 0);
    t = fr_type_decimal(39, 0);
    assert_int_equal(fr_type_validate(&t, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "DECIMAL precision 39"));
    t = fr_type_decimal(5, 6);
    assert_int_equal(fr_type_validate(&t, &err), FR_EINVAL);
    t = fr_type_time_like(FR_T_TIMESTAMP, 10);
    assert_int_equal(fr_type_validate(&t, &err), FR_EINVAL);
    t = fr_type_time_like(FR_T_TIME, 9);
    assert_int_equal(fr_type_validate(&t, &err), 0);
    t = fr_type_of(FR_T_CHAR);
    t.length = 0;
    assert_int_equal(fr_type_validate(&t, &err), FR_EINVAL);
    t.id = (fr_type_id)99;
    assert_int_equal(fr_type_validate(&t, &err), FR_EINVAL);
    for (int id = FR_T_BOOLEAN; id <= FR_T_TIMESTAMP_LTZ; id++) {
        fr_type x = fr_type_of((fr_type_id)id);
        assert_true(x.nullable);
        assert_int_equal(fr_type_validate(&x, &err), 0);
    }
    assert_int_equal(fr_type_of(FR_T_DECIMAL).precision, 10);
    assert_int_equal(fr_type_of(FR_T_TIMESTAMP).precision, 6);
    assert_int_equal(fr_type_of(FR_T_TIME).precision, 0);

    assert_true(fr_type_is_integer(FR_T_TINYINT) && fr_type_is_integer(FR_T_BIGINT));
    assert_false(fr_type_is_integer(FR_T_BOOLEAN) || fr_type_is_integer(FR_T_FLOAT));
    assert_true(fr_type_is_numeric(FR_T_DECIMAL) && fr_type_is_numeric(FR_T_DOUBLE));
    assert_false(fr_type_is_numeric(FR_T_BOOLEAN) || fr_type_is_numeric(FR_T_CHAR));
    assert_true(fr_type_is_string(FR_T_CHAR) && fr_type_is_string(FR_T_STRING));
    assert_false(fr_type_is_string(FR_T_BYTES));
    assert_true(fr_type_is_temporal(FR_T_DATE) && fr_type_is_temporal(FR_T_TIMESTAMP_LTZ));
    assert_false(fr_type_is_temporal(FR_T_BIGINT));

    struct {
        const char *t;
        int w;
        bool var;
    } widths[] = {
        {"BOOLEAN", 0, false},     {"TINYINT", 1, false},   {"SMALLINT", 2, false},
        {"INT", 4, false},         {"BIGINT", 8, false},    {"FLOAT", 4, false},
        {"DOUBLE", 8, false},      {"DECIMAL(5,2)", 16, false}, {"CHAR(3)", 0, true},
        {"VARCHAR(3)", 0, true},   {"STRING", 0, true},     {"BYTES", 0, true},
        {"DATE", 4, false},        {"TIME(0)", 4, false},   {"TIME(3)", 4, false},
        {"TIME(6)", 8, false},     {"TIME(9)", 8, false},   {"TIMESTAMP(0)", 8, false},
        {"TIMESTAMP_LTZ(9)", 8, false},
    };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        fr_type x = T(widths[i].t);
        assert_int_equal(fr_type_width(&x), widths[i].w);
        assert_int_equal(fr_type_is_varwidth(&x), widths[i].var);
    }
    assert_int_equal(fr_type_time_units(0), 1);
    assert_int_equal(fr_type_time_units(1), 1000);
    assert_int_equal(fr_type_time_units(3), 1000);
    assert_int_equal(fr_type_time_units(4), 1000000);
    assert_int_equal(fr_type_time_units(6), 1000000);
    assert_int_equal(fr_type_time_units(7), 1000000000);
    assert_int_equal(fr_type_time_units(9), 1000000000);

    fr_type a = T("DECIMAL(10,2)"), b = T("DECIMAL(10,2) NOT NULL"), c = T("DECIMAL(10,3)");
    assert_true(fr_type_equal(&a, &b));
    assert_false(fr_type_equal(&a, &c));
    a = T("VARCHAR(3)");
    b = T("VARCHAR(4)");
    assert_false(fr_type_equal(&a, &b));
    a = T("TIMESTAMP(3)");
    b = T("TIMESTAMP_LTZ(3)");
    assert_false(fr_type_equal(&a, &b));
    char small[4];
    assert_int_equal(fr_type_format(&c, false, small, sizeof small), 14);
    assert_string_equal(small, "DEC");
}

/* ---- schemas --------------------------------------------------------------------------- */

static fr_schema *make_schema(void)
{
    fr_field f[] = {
        {"id", T("BIGINT NOT NULL")},
        {"name", T("VARCHAR(20)")},
        {"price", T("DECIMAL(10, 2)")},
        {"ts", T("TIMESTAMP(3)")},
        {"Flag", T("BOOLEAN")},
    };
    fr_schema *s = NULL;
    fr_error err;
    if (fr_schema_new(f, 5, 7, &s, &err) < 0) fail_msg("%s", err.msg);
    return s;
}

static void test_schema_basic(void **state)
{
    (void)state;
    fr_schema *s = make_schema();
    assert_int_equal(fr_schema_num_fields(s), 5);
    assert_int_equal(fr_schema_id(s), 7);
    assert_string_equal(fr_schema_field(s, 1)->name, "name");
    assert_null(fr_schema_field(s, 5));
    assert_null(fr_schema_field(s, -1));
    assert_int_equal(fr_schema_find(s, "PRICE"), 2);
    assert_int_equal(fr_schema_find(s, "flag"), 4);
    assert_int_equal(fr_schema_find(s, "nope"), -1);
    assert_false(fr_schema_field(s, 0)->type.nullable);

    /* A clone is the same immutable schema, shared: it outlives the original's free. */
    fr_schema *c = fr_schema_clone(s);
    assert_ptr_equal(c, s);
    assert_true(fr_schema_equal(s, c));

    int cols[] = {3, 0};
    fr_schema *p = NULL;
    fr_error err;
    assert_int_equal(fr_schema_project(s, cols, 2, &p, &err), 0);
    assert_int_equal(fr_schema_num_fields(p), 2);
    assert_string_equal(fr_schema_field(p, 0)->name, "ts");
    assert_string_equal(fr_schema_field(p, 1)->name, "id");
    assert_false(fr_schema_equal(s, p));
    fr_schema_free(p);
    int bad[] = {0, 5};
    assert_int_equal(fr_schema_project(s, bad, 2, &p, &err), FR_ERANGE);
    int dup[] = {1, 1};
    assert_int_equal(fr_schema_project(s, dup, 2, &p, &err), FR_EINVAL);
    assert_int_equal(fr_schema_project(s, cols, 0, &p, &err), 0);
    assert_int_equal(fr_schema_num_fields(p), 0);
    fr_schema_free(p);

    /* Equality looks at names (case-sensitive), types and nullability. */
    fr_field f2[] = {{"id", T("BIGINT")}};
    fr_field f3[] = {{"ID", T("BIGINT NOT NULL")}};
    fr_field f4[] = {{"id", T("BIGINT NOT NULL")}};
    fr_schema *a, *b, *d;
    assert_int_equal(fr_schema_new(f2, 1, 0, &a, &err), 0);
    assert_int_equal(fr_schema_new(f3, 1, 0, &b, &err), 0);
    assert_int_equal(fr_schema_new(f4, 1, 1, &d, &err), 0);
    assert_false(fr_schema_equal(a, d));
    assert_false(fr_schema_equal(b, d));
    int one[] = {0};
    assert_int_equal(fr_schema_project(s, one, 1, &p, &err), 0);
    assert_true(fr_schema_equal(p, d));
    fr_schema_free(p);
    fr_schema_free(a);
    fr_schema_free(b);
    fr_schema_free(d);
    fr_schema_free(s);
    assert_string_equal(fr_schema_field(c, 0)->name, "id");
    fr_schema_free(c);
    fr_schema_free(NULL);
}

static void test_schema_errors(void **state)
{
    (void)state;
    fr_error err;
    fr_schema *s = NULL;
    fr_field dup[] = {{"a", T("INT")}, {"A", T("INT")}};
    assert_int_equal(fr_schema_new(dup, 2, 0, &s, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate column name 'A'"));
    fr_field empty[] = {{"", T("INT")}};
    assert_int_equal(fr_schema_new(empty, 1, 0, &s, &err), FR_EINVAL);
    fr_field nul[] = {{NULL, T("INT")}};
    assert_int_equal(fr_schema_new(nul, 1, 0, &s, &err), FR_EINVAL);
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    fr_field lng[] = {{longname, T("INT")}};
    assert_int_equal(fr_schema_new(lng, 1, 0, &s, &err), FR_EINVAL);
    longname[255] = '\0';
    assert_int_equal(fr_schema_new(lng, 1, 0, &s, &err), 0);
    fr_schema_free(s);
    fr_field ctl[] = {{"a\nb", T("INT")}};
    assert_int_equal(fr_schema_new(ctl, 1, 0, &s, &err), FR_EINVAL);
    fr_field badtype[] = {{"d", fr_type_decimal(50, 0)}};
    assert_int_equal(fr_schema_new(badtype, 1, 0, &s, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "column d: DECIMAL precision 50"));
    assert_int_equal(fr_schema_new(dup, -1, 0, &s, &err), FR_ELIMIT);
    assert_int_equal(fr_schema_new(dup, FR_SCHEMA_COLUMNS_MAX + 1, 0, &s, &err), FR_ELIMIT);
    fr_field utf[] = {{"prix_€", T("INT")}, {"名前", T("STRING")}};
    assert_int_equal(fr_schema_new(utf, 2, 0, &s, &err), 0);
    assert_int_equal(fr_schema_find(s, "名前"), 1);
    fr_schema_free(s);
}

static void test_schema_alloc_failure(void **state)
{
    (void)state;
    fr_field f[] = {{"a", T("INT")}, {"b", T("STRING")}, {"c", T("DATE")}};
    bool succeeded = false;
    for (long n = 1; n < 20 && !succeeded; n++) {
        fr_schema *s = NULL;
        fr_error err;
        fr_alloc_fail_after(n);
        int rc = fr_schema_new(f, 3, 1, &s, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            succeeded = true;
            assert_int_equal(fr_schema_num_fields(s), 3);
            fr_schema_free(s);
        } else {
            assert_int_equal(rc, FR_ENOMEM);
            assert_int_equal(err.code, FR_ENOMEM);
        }
    }
    assert_true(succeeded);
    fr_schema *s = NULL;
    fr_error err;
    assert_int_equal(fr_schema_new(f, 3, 1, &s, &err), 0);
    for (long n = 1; n < 6; n++) {
        fr_alloc_fail_after(n);
        fr_schema *c = fr_schema_clone(s); /* shared: needs no memory */
        fr_alloc_fail_after(0);
        assert_ptr_equal(c, s);
        fr_schema_free(c);
        fr_schema *p = NULL;
        int cols[] = {2, 1};
        fr_alloc_fail_after(n);
        int rc = fr_schema_project(s, cols, 2, &p, &err);
        fr_alloc_fail_after(0);
        if (n <= 4) assert_int_equal(rc, FR_ENOMEM);
        fr_schema_free(p);
        char *json = NULL;
        fr_alloc_fail_after(1);
        assert_int_equal(fr_schema_to_json(s, &json, &err), FR_ENOMEM);
        fr_alloc_fail_after(0);
    }
    fr_schema_free(s);
}

static void test_schema_json_roundtrip(void **state)
{
    (void)state;
    fr_schema *s = make_schema();
    char *json = NULL;
    fr_error err;
    assert_int_equal(fr_schema_to_json(s, &json, &err), 0);
    assert_string_equal(json,
                        "{\"id\":7,\"fields\":["
                        "{\"name\":\"id\",\"type\":\"BIGINT\",\"nullable\":false},"
                        "{\"name\":\"name\",\"type\":\"VARCHAR(20)\",\"nullable\":true},"
                        "{\"name\":\"price\",\"type\":\"DECIMAL(10, 2)\",\"nullable\":true},"
                        "{\"name\":\"ts\",\"type\":\"TIMESTAMP(3)\",\"nullable\":true},"
                        "{\"name\":\"Flag\",\"type\":\"BOOLEAN\",\"nullable\":true}]}");
    fr_schema *r = NULL;
    assert_int_equal(fr_schema_from_json(json, strlen(json), &r, &err), 0);
    assert_true(fr_schema_equal(s, r));
    assert_int_equal(fr_schema_id(r), 7);
    fr_free(json);
    fr_schema_free(r);
    fr_schema_free(s);

    /* Every type survives the round trip. */
    const char *types[] = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                           "DECIMAL(38, 38)", "DECIMAL(1, 0)", "CHAR(5)", "VARCHAR(9)", "STRING",
                           "BYTES", "DATE", "TIME(0)", "TIME(9)", "TIMESTAMP(0)", "TIMESTAMP(9)",
                           "TIMESTAMP_LTZ(3)"};
    enum { N = sizeof types / sizeof types[0] };
    fr_field f[N];
    char names[N][8];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        f[i].name = names[i];
        f[i].type = T(types[i]);
        f[i].type.nullable = i % 2;
    }
    assert_int_equal(fr_schema_new(f, N, -5, &s, &err), 0);
    assert_int_equal(fr_schema_to_json(s, &json, &err), 0);
    assert_int_equal(fr_schema_from_json(json, strlen(json), &r, &err), 0);
    assert_true(fr_schema_equal(s, r));
    assert_int_equal(fr_schema_id(r), -5);
    fr_free(json);
    fr_schema_free(r);
    fr_schema_free(s);

    /* Hand-written JSON: extra members ignored, nullable optional, NOT NULL in the type. */
    const char *hand = "{ \"fields\": [ {\"type\": \"int not null\", \"name\": \"a\", "
                       "\"comment\": \"x\"}, {\"name\": \"b\", \"type\": \"STRING\"} ], "
                       "\"id\": 3, \"extra\": [1,2] }";
    assert_int_equal(fr_schema_from_json(hand, strlen(hand), &r, &err), 0);
    assert_false(fr_schema_field(r, 0)->type.nullable);
    assert_true(fr_schema_field(r, 1)->type.nullable);
    fr_schema_free(r);
    const char *none = "{\"id\": 0, \"fields\": []}";
    assert_int_equal(fr_schema_from_json(none, strlen(none), &r, &err), 0);
    assert_int_equal(fr_schema_num_fields(r), 0);
    fr_schema_free(r);
}

static void test_schema_json_malformed(void **state)
{
    (void)state;
    struct {
        const char *json;
        const char *msg;
    } cases[] = {
        {"", "schema JSON"},
        {"{", "schema JSON"},
        {"[]", "top level is not an object"},
        {"{\"fields\": []}", "\"id\" must be a 32-bit integer"},
        {"{\"id\": \"1\", \"fields\": []}", "\"id\" must be a 32-bit integer"},
        {"{\"id\": 4294967296, \"fields\": []}", "\"id\" must be a 32-bit integer"},
        {"{\"id\": 1.5, \"fields\": []}", "\"id\" must be a 32-bit integer"},
        {"{\"id\": 1}", "\"fields\" must be an array"},
        {"{\"id\": 1, \"fields\": {}}", "\"fields\" must be an array"},
        {"{\"id\": 1, \"fields\": [1]}", "field 0 is not an object"},
        {"{\"id\": 1, \"fields\": [{\"type\": \"INT\"}]}", "field 0 has no string member \"name\""},
        {"{\"id\": 1, \"fields\": [{\"name\": 5, \"type\": \"INT\"}]}", "\"name\""},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\"}]}", "field 0 has no string member \"type\""},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\", \"type\": \"INT\", \"nullable\": 1}]}",
         "\"nullable\" must be true or false"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\", \"type\": \"WHAT\"}]}",
         "field 0 (a): unknown type 'WHAT'"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\", \"type\": \"DECIMAL(99)\"}]}",
         "DECIMAL precision 99 is out of range 1..38"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\", \"type\": \"INT NOT NULL\", \"nullable\": "
         "true}]}",
         "type says NOT NULL but \"nullable\" is true"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\", \"type\": \"INT\"}, {\"name\": \"A\", "
         "\"type\": \"INT\"}]}",
         "duplicate column name"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"\", \"type\": \"INT\"}]}", "empty name"},
        {"{\"id\": 1, \"id\": 2, \"fields\": []}", "duplicate"},
        {"{\"id\": 1, \"fields\": [{\"name\": \"a\\u0000b\", \"type\": \"INT\"}]}", "NUL"},
        {"{\"id\": 1, \"fields\": []} trailing", "schema JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fr_schema *s = NULL;
        fr_error err;
        int rc = fr_schema_from_json(cases[i].json, strlen(cases[i].json), &s, &err);
        if (rc != FR_ECORRUPT) fail_msg("case %zu (%s): rc %d", i, cases[i].json, rc);
        assert_int_equal(err.code, FR_ECORRUPT);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].msg);
        assert_null(s);
    }
    /* Too many fields. */
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    assert_int_equal(fr_buf_printf(&b, &err, "{\"id\":1,\"fields\":["), 0);
    for (int i = 0; i <= FR_SCHEMA_COLUMNS_MAX; i++)
        assert_int_equal(fr_buf_printf(&b, &err, "%s{\"name\":\"c%d\",\"type\":\"INT\"}",
                                       i ? "," : "", i),
                         0);
    assert_int_equal(fr_buf_printf(&b, &err, "]}"), 0);
    fr_schema *s = NULL;
    assert_int_equal(fr_schema_from_json((const char *)b.data, b.len, &s, &err), FR_ECORRUPT);
    assert_non_null(strstr(err.msg, "exceed the limit"));
    fr_buf_free(&b);
}

/* ---- calendar and decimal helpers ------------------------------------------------------ */

static void test_calendar(void **state)
{
    (void)state;
    assert_int_equal(fr_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(fr_days_from_civil(1969, 12, 31), -1);
    assert_int_equal(fr_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(fr_days_from_civil(2026, 1, 1), 20454);
    assert_int_equal(fr_days_from_civil(1900, 1, 1), -25567);
    assert_int_equal(fr_days_from_civil(0, 1, 1), -719528);
    assert_int_equal(fr_days_from_civil(9999, 12, 31), 2932896);
    /* Every day over a long span round-trips, and consecutive days are consecutive. */
    int64_t prev = fr_days_from_civil(-1000, 1, 1) - 1;
    for (int64_t z = fr_days_from_civil(-1000, 1, 1); z < fr_days_from_civil(3000, 1, 1);
         z += 1) {
        int64_t y;
        unsigned m, d;
        fr_civil_from_days(z, &y, &m, &d);
        assert_true(m >= 1 && m <= 12 && d >= 1 && d <= 31);
        int64_t back = fr_days_from_civil(y, m, d);
        if (back != z) fail_msg("day %lld -> %lld-%u-%u -> %lld", (long long)z, (long long)y, m, d,
                                (long long)back);
        assert_int_equal(back, prev + 1);
        prev = back;
    }
    int64_t y;
    unsigned m, d;
    fr_civil_from_days(fr_days_from_civil(2024, 2, 29), &y, &m, &d);
    assert_true(y == 2024 && m == 2 && d == 29);
    assert_int_equal(fr_days_from_civil(2024, 3, 1) - fr_days_from_civil(2024, 2, 28), 2);
    assert_int_equal(fr_days_from_civil(2100, 3, 1) - fr_days_from_civil(2100, 2, 28), 1);
    assert_int_equal(fr_days_from_civil(2000, 3, 1) - fr_days_from_civil(2000, 2, 28), 2);
    fr_civil_from_days(INT32_MIN, &y, &m, &d);
    assert_int_equal(fr_days_from_civil(y, m, d), INT32_MIN);
    fr_civil_from_days(INT32_MAX, &y, &m, &d);
    assert_int_equal(fr_days_from_civil(y, m, d), INT32_MAX);
}

static const char *dec_str(fr_i128 v, int scale)
{
    static char buf[64];
    int n = fr_decimal_format(v, scale, buf, sizeof buf);
    assert_int_equal((size_t)n, strlen(buf));
    return buf;
}

static void test_decimal_helpers(void **state)
{
    (void)state;
    assert_true(fr_i128_pow10(0) == 1);
    assert_true(fr_i128_pow10(18) == (fr_i128)1000000000000000000LL);
    fr_i128 p38 = fr_i128_pow10(19) * fr_i128_pow10(19);
    assert_true(fr_i128_pow10(38) == p38);
    assert_true(fr_i128_pow10(39) == 0);
    assert_true(fr_i128_pow10(-1) == 0);
    fr_i128 max38 = p38 - 1;
    assert_string_equal(dec_str(-1250, 2), "-12.50");
    assert_string_equal(dec_str(5, 2), "0.05");
    assert_string_equal(dec_str(-5, 3), "-0.005");
    assert_string_equal(dec_str(0, 0), "0");
    assert_string_equal(dec_str(0, 3), "0.000");
    assert_string_equal(dec_str(123, 0), "123");
    assert_string_equal(dec_str(max38, 0), "99999999999999999999999999999999999999");
    assert_string_equal(dec_str(-max38, 38), "-0.99999999999999999999999999999999999999");
    assert_string_equal(dec_str(max38, 10), "9999999999999999999999999999.9999999999");
    fr_i128 imin = -(fr_i128)(((unsigned __int128)1 << 127) - 1) - 1;
    assert_string_equal(dec_str(imin, 0), "-170141183460469231731687303715884105728");
    char small[5];
    assert_int_equal(fr_decimal_format(-1250, 2, small, sizeof small), 6);
    assert_string_equal(small, "-12.");
    assert_true(fr_decimal_fits(max38, 38));
    assert_false(fr_decimal_fits(p38, 38));
    assert_false(fr_decimal_fits(-p38, 38));
    assert_true(fr_decimal_fits(99, 2));
    assert_false(fr_decimal_fits(100, 2));
    assert_true(fr_decimal_fits(-99, 2));
    assert_false(fr_decimal_fits(-100, 2));

    fr_error err;
    fr_i128 out;
    assert_int_equal(fr_decimal_rescale(12345, 3, 2, 10, &out, &err), 0);
    assert_true(out == 1235);
    assert_int_equal(fr_decimal_rescale(-12345, 3, 2, 10, &out, &err), 0);
    assert_true(out == -1235);
    assert_int_equal(fr_decimal_rescale(12344, 3, 2, 10, &out, &err), 0);
    assert_true(out == 1234);
    assert_int_equal(fr_decimal_rescale(149, 2, 0, 10, &out, &err), 0);
    assert_true(out == 1);
    assert_int_equal(fr_decimal_rescale(150, 2, 0, 10, &out, &err), 0);
    assert_true(out == 2);
    assert_int_equal(fr_decimal_rescale(12, 0, 3, 5, &out, &err), 0);
    assert_true(out == 12000);
    assert_int_equal(fr_decimal_rescale(123, 0, 3, 5, &out, &err), FR_ERANGE);
    assert_int_equal(fr_decimal_rescale(max38, 0, 1, 38, &out, &err), FR_ERANGE);
    assert_int_equal(fr_decimal_rescale(max38, 38, 0, 38, &out, &err), 0);
    assert_true(out == 1);
    assert_int_equal(fr_decimal_rescale(max38, 0, 0, 37, &out, &err), FR_ERANGE);
    assert_int_equal(fr_decimal_rescale(5, 0, 38, 38, &out, &err), FR_ERANGE);
    assert_int_equal(fr_decimal_rescale(0, 0, 38, 38, &out, &err), 0);
    /* Rounding that carries into a new digit overflows the precision. */
    assert_int_equal(fr_decimal_rescale(9995, 3, 2, 3, &out, &err), FR_ERANGE);
    assert_int_equal(fr_decimal_rescale(max38, 38, 37, 38, &out, &err), 0);
    assert_true(out == fr_i128_pow10(37));

    struct {
        const char *s;
        int p, sc;
        const char *expect;
    } ok[] = {
        {"12.345", 10, 2, "12.35"},
        {"-12.345", 10, 2, "-12.35"},
        {"12.344", 10, 2, "12.34"},
        {"12.5", 10, 2, "12.50"},
        {"0", 5, 5, "0.00000"},
        {"-0.0", 5, 1, "0.0"},
        {".5", 5, 0, "1"},
        {"5.", 5, 0, "5"},
        {"+7", 3, 1, "7.0"},
        {"1e3", 10, 2, "1000.00"},
        {"1.5E-2", 10, 3, "0.015"},
        {"1.5E-3", 10, 3, "0.002"},
        {"123456789012345678901234567890.12345678", 38, 8,
         "123456789012345678901234567890.12345678"},
        {"0.123456789012345678901234567890123456789", 38, 38,
         "0.12345678901234567890123456789012345679"},
        {"0.99999999999999999999999999999999999999", 38, 38,
         "0.99999999999999999999999999999999999999"},
        {"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999"},
        {"-99999999999999999999999999999999999999", 38, 0,
         "-99999999999999999999999999999999999999"},
        {"1234567890123456789012345678901234567890123e-10", 38, 4,
         "123456789012345678901234567890123.4568"},
        {"0.0000000000000000000000000000000000000000001", 38, 38,
         "0.00000000000000000000000000000000000000"},
        {"0.49999999999999999999999999999999999999999", 5, 0, "0"},
        {"000000000000000000000000000000000000000000012.5", 5, 1, "12.5"},
        {"1e-100000000", 5, 2, "0.00"},
        {"0e100000", 5, 2, "0.00"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        fr_i128 v;
        if (fr_decimal_parse(ok[i].s, strlen(ok[i].s), ok[i].p, ok[i].sc, &v, &err) < 0)
            fail_msg("%s: %s", ok[i].s, err.msg);
        if (strcmp(dec_str(v, ok[i].sc), ok[i].expect) != 0)
            fail_msg("%s -> %s, expected %s", ok[i].s, dec_str(v, ok[i].sc), ok[i].expect);
    }
    struct {
        const char *s;
        int p, sc, rc;
    } bad[] = {
        {"", 5, 0, FR_EINVAL},
        {"-", 5, 0, FR_EINVAL},
        {".", 5, 0, FR_EINVAL},
        {"1.2.3", 5, 0, FR_EINVAL},
        {"1e", 5, 0, FR_EINVAL},
        {"1x", 5, 0, FR_EINVAL},
        {"0x10", 5, 0, FR_EINVAL},
        {"NaN", 5, 0, FR_EINVAL},
        {"123456", 5, 0, FR_ERANGE},
        {"9999.95", 5, 1, FR_ERANGE},
        {"100", 4, 2, FR_ERANGE},
        {"1e38", 38, 0, FR_ERANGE},
        {"100000000000000000000000000000000000000", 38, 0, FR_ERANGE},
        {"1e100000000", 38, 0, FR_ERANGE},
        {"1", 38, 38, FR_ERANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_i128 v;
        int rc = fr_decimal_parse(bad[i].s, strlen(bad[i].s), bad[i].p, bad[i].sc, &v, &err);
        if (rc != bad[i].rc) fail_msg("'%s': rc %d, expected %d", bad[i].s, rc, bad[i].rc);
    }
}

static void test_double_format(void **state)
{
    (void)state;
    struct {
        double f;
        bool is_float;
        const char *s;
    } cases[] = {
        {3.0, false, "3.0"},
        {-3.0, false, "-3.0"},
        {0.1, false, "0.1"},
        {0.0, false, "0.0"},
        {-0.0, false, "-0.0"},
        {1.5, false, "1.5"},
        {123.456, false, "123.456"},
        {0.001, false, "0.001"},
        {0.0001, false, "1.0E-4"},
        {9999999.0, false, "9999999.0"},
        {1e7, false, "1.0E7"},
        {1.2345678e7, false, "1.2345678E7"},
        {1e100, false, "1.0E100"},
        {-1.5e-300, false, "-1.5E-300"},
        {0.1 + 0.2, false, "0.30000000000000004"},
        {1.7976931348623157e308, false, "1.7976931348623157E308"},
        {4.9e-324, false, "4.9E-324"},
        {NAN, false, "NaN"},
        {INFINITY, false, "Infinity"},
        {-INFINITY, true, "-Infinity"},
        {(float)0.1, true, "0.1"},
        {(float)3.14159265, true, "3.1415927"},
        {(float)1e10, true, "1.0E10"},
        {(float)16777216.0, true, "1.6777216E7"},
        {100.0, true, "100.0"},
        {123456.0, false, "123456.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[40];
        int n = fr_double_format(cases[i].f, cases[i].is_float, buf, sizeof buf);
        assert_int_equal((size_t)n, strlen(buf));
        if (strcmp(buf, cases[i].s) != 0)
            fail_msg("case %zu: got %s, expected %s", i, buf, cases[i].s);
    }
    /* Random doubles and floats read back exactly. */
    unsigned seed = (unsigned)time(NULL);
    print_message("double_format seed %u\n", seed);
    srand(seed);
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
        double d;
        memcpy(&d, &bits, 8);
        if (!isfinite(d)) continue;
        char buf[40];
        fr_double_format(d, false, buf, sizeof buf);
        if (strtod(buf, NULL) != d) fail_msg("seed %u: %s does not read back", seed, buf);
        float f = (float)d;
        if (!isfinite(f)) continue;
        fr_double_format(f, true, buf, sizeof buf);
        if (strtof(buf, NULL) != f) fail_msg("seed %u: float %s does not read back", seed, buf);
    }
}

/* ---- values: parse and format ---------------------------------------------------------- */

static void test_value_constructors(void **state)
{
    (void)state;
    fr_value v = fr_value_null(T("INT"));
    assert_true(v.is_null);
    assert_string_equal(fmt(&v), "NULL");
    v = fr_value_int(T("BOOLEAN"), 5);
    assert_true(v.v.b);
    assert_string_equal(fmt(&v), "true");
    v = fr_value_int(T("DECIMAL(5,2)"), 1234);
    assert_string_equal(fmt(&v), "12.34");
    v = fr_value_int(T("DOUBLE"), 3);
    assert_string_equal(fmt(&v), "3.0");
    v = fr_value_int(T("FLOAT"), 16777217);
    assert_true(v.v.f == 16777216.0);
    v = fr_value_int(T("BIGINT"), INT64_MIN);
    assert_string_equal(fmt(&v), "-9223372036854775808");
    v = fr_value_double(T("FLOAT"), 0.1);
    assert_true(v.v.f == (double)0.1f);
    assert_string_equal(fmt(&v), "0.1");
    v = fr_value_double(T("DOUBLE"), 0.1);
    assert_true(v.v.f == 0.1);
    v = fr_value_str(T("STRING"), "hello", 5);
    assert_string_equal(fmt(&v), "hello");
    v = fr_value_str(T("BYTES"), "\x0a\x1b\xff", 3);
    assert_string_equal(fmt(&v), "\\x0a1bff");
    v = fr_value_str(T("BYTES"), "", 0);
    assert_string_equal(fmt(&v), "\\x");
    v = fr_value_bool(T("BOOLEAN"), false);
    assert_string_equal(fmt(&v), "false");
    v = fr_value_decimal(T("DECIMAL(38,0)"), fr_i128_pow10(38) - 1);
    assert_string_equal(fmt(&v), "99999999999999999999999999999999999999");
}

static void test_value_parse_integers(void **state)
{
    (void)state;
    fr_error err;
    roundtrip("TINYINT", "-128", "-128");
    roundtrip("TINYINT", "127", "127");
    roundtrip("TINYINT", "+5", "5");
    roundtrip("TINYINT", "-0", "0");
    roundtrip("SMALLINT", "-32768", "-32768");
    roundtrip("SMALLINT", "32767", "32767");
    roundtrip("INT", "-2147483648", "-2147483648");
    roundtrip("INT", "2147483647", "2147483647");
    roundtrip("INT", "  42 ", "42");
    roundtrip("INT", "007", "7");
    roundtrip("BIGINT", "-9223372036854775808", "-9223372036854775808");
    roundtrip("BIGINT", "9223372036854775807", "9223372036854775807");
    assert_int_equal(parse_rc("TINYINT", "128", &err), FR_ERANGE);
    assert_string_equal(err.msg, "value '128' is out of range for TINYINT");
    assert_int_equal(parse_rc("TINYINT", "-129", &err), FR_ERANGE);
    assert_int_equal(parse_rc("SMALLINT", "32768", &err), FR_ERANGE);
    assert_int_equal(parse_rc("SMALLINT", "-32769", &err), FR_ERANGE);
    assert_int_equal(parse_rc("INT", "2147483648", &err), FR_ERANGE);
    assert_int_equal(parse_rc("INT", "-2147483649", &err), FR_ERANGE);
    assert_int_equal(parse_rc("BIGINT", "9223372036854775808", &err), FR_ERANGE);
    assert_int_equal(parse_rc("BIGINT", "-9223372036854775809", &err), FR_ERANGE);
    assert_int_equal(parse_rc("BIGINT", "99999999999999999999999", &err), FR_ERANGE);
    const char *bad[] = {"", " ", "-", "+", "1.5", "1e3", "abc", "12a", "0x10", "1 2", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse_rc("INT", bad[i], &err);
        if (rc != FR_EINVAL) fail_msg("'%s': rc %d", bad[i], rc);
    }
    parse_rc("INT", "abc", &err);
    assert_string_equal(err.msg, "'abc' is not a valid INT");
    /* Embedded NUL is not part of a number. */
    fr_type t = T("INT");
    fr_value v;
    assert_int_equal(fr_value_parse("12\0" "3", 4, &t, &v, &err), FR_EINVAL);
    assert_int_equal(fr_value_parse("123", 2, &t, &v, &err), 0);
    assert_int_equal(v.v.i, 12);
}

static void test_value_parse_bool_float(void **state)
{
    (void)state;
    fr_error err;
    roundtrip("BOOLEAN", "true", "true");
    roundtrip("BOOLEAN", "TRUE", "true");
    roundtrip("BOOLEAN", "False", "false");
    roundtrip("BOOLEAN", "1", "true");
    roundtrip("BOOLEAN", "0", "false");
    assert_int_equal(parse_rc("BOOLEAN", "yes", &err), FR_EINVAL);
    assert_int_equal(parse_rc("BOOLEAN", "2", &err), FR_EINVAL);
    assert_int_equal(parse_rc("BOOLEAN", "truex", &err), FR_EINVAL);

    roundtrip("DOUBLE", "3", "3.0");
    roundtrip("DOUBLE", "-2.5", "-2.5");
    roundtrip("DOUBLE", "1e10", "1.0E10");
    roundtrip("DOUBLE", "1.0E-5", "1.0E-5");
    roundtrip("DOUBLE", ".5", "0.5");
    roundtrip("DOUBLE", "NaN", "NaN");
    roundtrip("DOUBLE", "Infinity", "Infinity");
    roundtrip("DOUBLE", "-infinity", "-Infinity");
    roundtrip("DOUBLE", "-inf", "-Infinity");
    roundtrip("DOUBLE", "4.9e-324", "4.9E-324");
    roundtrip("DOUBLE", "1e-400", "0.0");
    roundtrip("FLOAT", "0.1", "0.1");
    roundtrip("FLOAT", "3.4028235e38", "3.4028235E38");
    roundtrip("FLOAT", "16777217", "1.6777216E7");
    assert_int_equal(parse_rc("DOUBLE", "1e400", &err), FR_ERANGE);
    assert_int_equal(parse_rc("FLOAT", "1e39", &err), FR_ERANGE);
    assert_non_null(strstr(err.msg, "out of range for FLOAT"));
    const char *bad[] = {"", "e5", "1e", "0x1p3", "1.5f", "nan1", "-nan", "1,5", "inf inity", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse_rc("DOUBLE", bad[i], &err);
        if (rc != FR_EINVAL) fail_msg("'%s': rc %d", bad[i], rc);
    }
    char lng[500];
    memset(lng, '1', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    assert_int_equal(parse_rc("DOUBLE", lng, &err), FR_EINVAL);
}

static void test_value_parse_decimal(void **state)
{
    (void)state;
    fr_error err;
    roundtrip("DECIMAL(10,2)", "12.5", "12.50");
    fr_value v = parse_ok("DECIMAL(10,2)", "12.5");
    assert_true(v.v.d == 1250);
    roundtrip("DECIMAL(10,2)", "12.345", "12.35");
    roundtrip("DECIMAL(10,2)", "-12.345", "-12.35");
    roundtrip("DECIMAL(10,2)", " -0.001 ", "0.00");
    roundtrip("DECIMAL(38,0)", "99999999999999999999999999999999999999",
              "99999999999999999999999999999999999999");
    roundtrip("DECIMAL(38,38)", "-0.99999999999999999999999999999999999999",
              "-0.99999999999999999999999999999999999999");
    assert_int_equal(parse_rc("DECIMAL(5,2)", "1000", &err), FR_ERANGE);
    assert_string_equal(err.msg, "value '1000' is out of range for DECIMAL(5, 2)");
    assert_int_equal(parse_rc("DECIMAL(5,2)", "abc", &err), FR_EINVAL);
    assert_int_equal(parse_rc("DECIMAL(5,2)", "1.2.3", &err), FR_EINVAL);
}

static void test_value_parse_temporal(void **state)
{
    (void)state;
    fr_error err;
    roundtrip("DATE", "2026-01-01", "2026-01-01");
    roundtrip("DATE", "1970-01-01", "1970-01-01");
    roundtrip("DATE", "1969-12-31", "1969-12-31");
    roundtrip("DATE", "0001-01-01", "0001-01-01");
    roundtrip("DATE", "9999-12-31", "9999-12-31");
    roundtrip("DATE", "2024-02-29", "2024-02-29");
    roundtrip("DATE", "2000-02-29", "2000-02-29");
    roundtrip("DATE", "2026-1-5", "2026-01-05");
    roundtrip("DATE", "+10000-01-01", "+10000-01-01");
    roundtrip("DATE", "-0044-03-15", "-0044-03-15");
    roundtrip("DATE", "0000-02-29", "0000-02-29");
    fr_value v = parse_ok("DATE", "1969-12-31");
    assert_int_equal(v.v.i, -1);
    v = parse_ok("DATE", "2026-01-01");
    assert_int_equal(v.v.i, 20454);
    const char *bad_dates[] = {"2026-02-29", "2100-02-29", "2026-13-01", "2026-00-10",
                               "2026-04-31", "2026-01-00", "26-01-01",   "2026/01/01",
                               "2026-01-01x", "2026-01-01 10:00:00", "",  "2026-001-01"};
    for (size_t i = 0; i < sizeof bad_dates / sizeof bad_dates[0]; i++) {
        int rc = parse_rc("DATE", bad_dates[i], &err);
        if (rc != FR_EINVAL) fail_msg("'%s': rc %d", bad_dates[i], rc);
    }
    parse_rc("DATE", "2026-02-30", &err);
    assert_string_equal(err.msg, "'2026-02-30' is not a valid DATE: expected yyyy-mm-dd");
    assert_int_equal(parse_rc("DATE", "9999999-01-01", &err), FR_ERANGE);
    roundtrip("DATE", "5000000-01-01", "+5000000-01-01");

    roundtrip("TIME", "10:00:00", "10:00:00");
    roundtrip("TIME", "23:59:59.999", "23:59:59");
    roundtrip("TIME(3)", "23:59:59.999", "23:59:59.999");
    roundtrip("TIME(3)", "10:00:00.5", "10:00:00.500");
    roundtrip("TIME(3)", "10:00", "10:00:00.000");
    roundtrip("TIME(2)", "10:00:00.129", "10:00:00.12");
    roundtrip("TIME(9)", "00:00:00.000000001", "00:00:00.000000001");
    roundtrip("TIME(6)", "1:02:03.123456789", "01:02:03.123456");
    v = parse_ok("TIME(3)", "00:00:01.5");
    assert_int_equal(v.v.i, 1500);
    const char *bad_times[] = {"24:00:00", "10:60:00", "10:00:60", "10", "10:0", "10:00:00.",
                               "10:00:00.1234567890", "10:00:00Z", "-1:00:00", "aa:bb:cc"};
    for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
        int rc = parse_rc("TIME(9)", bad_times[i], &err);
        if (rc != FR_EINVAL) fail_msg("'%s': rc %d", bad_times[i], rc);
    }

    roundtrip("TIMESTAMP(3)", "2026-01-01 10:00:00.123", "2026-01-01 10:00:00.123");
    roundtrip("TIMESTAMP(3)", "2026-01-01T10:00:00.123Z", "2026-01-01 10:00:00.123");
    roundtrip("TIMESTAMP(0)", "2026-01-01 10:00:00.999", "2026-01-01 10:00:00");
    roundtrip("TIMESTAMP(3)", "2026-01-01", "2026-01-01 00:00:00.000");
    roundtrip("TIMESTAMP(6)", "2026-01-01 10:00:00.1234567", "2026-01-01 10:00:00.123456");
    roundtrip("TIMESTAMP(9)", "2026-01-01 10:00:00.123456789", "2026-01-01 10:00:00.123456789");
    roundtrip("TIMESTAMP(1)", "2026-01-01 10:00:00.19", "2026-01-01 10:00:00.1");
    roundtrip("TIMESTAMP(3)", "1969-12-31 23:59:59.999", "1969-12-31 23:59:59.999");
    roundtrip("TIMESTAMP(3)", "1900-01-01 00:00:00.001", "1900-01-01 00:00:00.001");
    roundtrip("TIMESTAMP(6)", "0001-01-01 00:00:00", "0001-01-01 00:00:00.000000");
    roundtrip("TIMESTAMP(6)", "9999-12-31 23:59:59.999999", "9999-12-31 23:59:59.999999");
    roundtrip("TIMESTAMP(9)", "1677-09-21 00:12:43.145224192", "1677-09-21 00:12:43.145224192");
    roundtrip("TIMESTAMP(9)", "2262-04-11 23:47:16.854775807", "2262-04-11 23:47:16.854775807");
    assert_int_equal(parse_rc("TIMESTAMP(9)", "2262-04-11 23:47:16.854775808", &err), FR_ERANGE);
    assert_int_equal(parse_rc("TIMESTAMP(9)", "1677-09-21 00:12:43.145224191", &err), FR_ERANGE);
    assert_int_equal(parse_rc("TIMESTAMP(9)", "3000-01-01", &err), FR_ERANGE);
    v = parse_ok("TIMESTAMP(3)", "1969-12-31 23:59:59.999");
    assert_int_equal(v.v.i, -1);
    v = parse_ok("TIMESTAMP(0)", "1970-01-01 00:00:01");
    assert_int_equal(v.v.i, 1);
    v = parse_ok("TIMESTAMP(6)", "1970-01-01 00:00:00.000001");
    assert_int_equal(v.v.i, 1);

    roundtrip("TIMESTAMP_LTZ(3)", "2026-01-01 10:00:00.123", "2026-01-01 10:00:00.123Z");
    roundtrip("TIMESTAMP_LTZ(3)", "2026-01-01T10:00:00.123Z", "2026-01-01 10:00:00.123Z");
    roundtrip("TIMESTAMP_LTZ(0)", "2026-01-01T10:00:00+02:00", "2026-01-01 08:00:00Z");
    roundtrip("TIMESTAMP_LTZ(0)", "2026-01-01T00:30:00-01:30", "2026-01-01 02:00:00Z");
    roundtrip("TIMESTAMP_LTZ(0)", "2026-01-01T00:30:00+0100", "2025-12-31 23:30:00Z");
    const char *bad_ts[] = {"2026-01-01 10:00:00+02:00", "2026-01-01X10:00:00",
                            "2026-01-01 10:00:00 ", "2026-01-01 25:00:00", "2026-01-01 10:00:00ZZ",
                            "2026-01-01  10:00:00", "2026-01-01T"};
    for (size_t i = 0; i < sizeof bad_ts / sizeof bad_ts[0]; i++) {
        fr_type t = T("TIMESTAMP(3)");
        fr_value x;
        /* parse without the trimming helper's view: pass exact bytes */
        int rc = fr_value_parse(bad_ts[i], strlen(bad_ts[i]), &t, &x, &err);
        if (i == 2) {
            assert_int_equal(rc, 0); /* surrounding spaces are trimmed */
            continue;
        }
        if (rc != FR_EINVAL) fail_msg("'%s': rc %d", bad_ts[i], rc);
    }
    assert_int_equal(parse_rc("TIMESTAMP_LTZ(3)", "2026-01-01 10:00:00+19:00", &err), FR_EINVAL);
}

static void test_value_parse_strings(void **state)
{
    (void)state;
    fr_type t = T("VARCHAR(9)");
    fr_value v;
    fr_error err;
    const char *s = "  hello  ";
    /* Strings are not trimmed by parse; they point into the input. */
    assert_int_equal(fr_value_parse(s, strlen(s), &t, &v, &err), 0);
    assert_ptr_equal(v.v.s.ptr, s);
    assert_int_equal(v.v.s.len, strlen(s));
    t = T("VARCHAR(8)");
    assert_int_equal(fr_value_parse(s, strlen(s), &t, &v, &err), FR_ERANGE);
    assert_string_equal(err.msg, "value '  hello  ' is longer than VARCHAR(8)");
    t = T("CHAR(2)");
    assert_int_equal(fr_value_parse("\xc3\xa9\xc3\xa9", 4, &t, &v, &err), 0);
    assert_int_equal(fr_value_parse("\xc3\xa9\xc3\xa9" "a", 5, &t, &v, &err), FR_ERANGE);
    t = T("BYTES");
    assert_int_equal(fr_value_parse("ab\0c", 4, &t, &v, &err), 0);
    assert_int_equal(v.v.s.len, 4);
    assert_string_equal(fmt(&v), "\\x61620063");
}

static void test_value_format_temporal_edges(void **state)
{
    (void)state;
    fr_value v = fr_value_int(T("DATE"), INT32_MIN);
    assert_string_equal(fmt(&v), "-5877641-06-23");
    v = fr_value_int(T("DATE"), INT32_MAX);
    assert_string_equal(fmt(&v), "+5881580-07-11");
    v = fr_value_int(T("TIMESTAMP(9)"), INT64_MIN);
    assert_string_equal(fmt(&v), "1677-09-21 00:12:43.145224192");
    v = fr_value_int(T("TIMESTAMP(9)"), INT64_MAX);
    assert_string_equal(fmt(&v), "2262-04-11 23:47:16.854775807");
    v = fr_value_int(T("TIMESTAMP(0)"), INT64_MIN);
    assert_non_null(fmt(&v));
    v = fr_value_int(T("TIMESTAMP_LTZ(0)"), -1);
    assert_string_equal(fmt(&v), "1969-12-31 23:59:59Z");
    /* TIMESTAMP(2) stored in milliseconds prints two digits. */
    v = fr_value_int(T("TIMESTAMP(2)"), 1999);
    assert_string_equal(fmt(&v), "1970-01-01 00:00:01.99");
    v = fr_value_int(T("TIME(0)"), 86399);
    assert_string_equal(fmt(&v), "23:59:59");
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    v = fr_value_int(T("TIME(0)"), 86400);
    assert_int_equal(fr_value_format(&v, &b, &err), FR_ERANGE);
    v = fr_value_int(T("TIME(3)"), -1);
    assert_int_equal(fr_value_format(&v, &b, &err), FR_ERANGE);
    /* Format appends. */
    v = fr_value_int(T("INT"), 1);
    assert_int_equal(fr_value_format(&v, &b, &err), 0);
    assert_int_equal(fr_value_format(&v, &b, &err), 0);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.data, "11", 2);
    fr_buf_free(&b);
    /* Formatting a value fails cleanly when the buffer cannot grow. */
    fr_alloc_fail_after(1);
    v = fr_value_str(T("STRING"), "abc", 3);
    assert_int_equal(fr_value_format(&v, &b, &err), FR_ENOMEM);
    fr_alloc_fail_after(0);
    fr_buf_free(&b);
}

/* ---- values: cast ---------------------------------------------------------------------- */

/* Casts v to type and returns the formatted result, or fails the test. */
static const char *cast_fmt(const fr_value *v, const char *type, fr_arena *a)
{
    fr_type to = T(type);
    fr_value out;
    fr_error err;
    if (fr_value_cast(v, &to, a, &out, &err) < 0) fail_msg("cast to %s: %s", type, err.msg);
    assert_true(fr_type_equal(&out.type, &to));
    return fmt(&out);
}

static int cast_rc(const fr_value *v, const char *type, fr_arena *a, fr_error *err)
{
    fr_type to = T(type);
    fr_value out;
    return fr_value_cast(v, &to, a, &out, err);
}

static void test_cast_numeric(void **state)
{
    (void)state;
    fr_arena *a = fr_arena_new(4096);
    fr_error err;
    fr_value v = fr_value_int(T("INT"), 127);
    assert_string_equal(cast_fmt(&v, "TINYINT", a), "127");
    v = fr_value_int(T("INT"), 128);
    assert_int_equal(cast_rc(&v, "TINYINT", a, &err), FR_ERANGE);
    assert_string_equal(err.msg, "value 128 is out of range for TINYINT");
    v = fr_value_int(T("BIGINT"), INT64_MIN);
    assert_int_equal(cast_rc(&v, "INT", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "BIGINT", a), "-9223372036854775808");
    assert_string_equal(cast_fmt(&v, "DECIMAL(19,0)", a), "-9223372036854775808");
    assert_int_equal(cast_rc(&v, "DECIMAL(18,0)", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "DECIMAL(38,19)", a),
                        "-9223372036854775808.0000000000000000000");
    assert_int_equal(cast_rc(&v, "DECIMAL(38,20)", a, &err), FR_ERANGE);
    v = fr_value_int(T("SMALLINT"), -32768);
    assert_string_equal(cast_fmt(&v, "INT", a), "-32768");
    assert_int_equal(cast_rc(&v, "TINYINT", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "-32768.0");
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "true");
    v = fr_value_int(T("INT"), 0);
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "false");
    v = fr_value_bool(T("BOOLEAN"), true);
    assert_string_equal(cast_fmt(&v, "TINYINT", a), "1");
    assert_string_equal(cast_fmt(&v, "DECIMAL(3,1)", a), "1.0");
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "1.0");
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "true");

    /* Decimals. */
    v = fr_value_decimal(T("DECIMAL(10,3)"), 12345);
    assert_string_equal(cast_fmt(&v, "DECIMAL(10,2)", a), "12.35");
    assert_string_equal(cast_fmt(&v, "DECIMAL(10,0)", a), "12");
    assert_string_equal(cast_fmt(&v, "DECIMAL(10,5)", a), "12.34500");
    assert_int_equal(cast_rc(&v, "DECIMAL(3,2)", a, &err), FR_ERANGE);
    assert_string_equal(err.msg, "value 12.345 is out of range for DECIMAL(3, 2)");
    assert_string_equal(cast_fmt(&v, "INT", a), "12");
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "12.345");
    assert_string_equal(cast_fmt(&v, "FLOAT", a), "12.345");
    v = fr_value_decimal(T("DECIMAL(10,3)"), -12999);
    assert_string_equal(cast_fmt(&v, "INT", a), "-12");
    assert_string_equal(cast_fmt(&v, "DECIMAL(10,2)", a), "-13.00");
    fr_i128 max38 = fr_i128_pow10(38) - 1;
    v = fr_value_decimal(T("DECIMAL(38,0)"), max38);
    assert_int_equal(cast_rc(&v, "BIGINT", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "1.0E38");
    assert_int_equal(cast_rc(&v, "DECIMAL(38,1)", a, &err), FR_ERANGE);
    v = fr_value_decimal(T("DECIMAL(38,38)"), -max38);
    assert_string_equal(cast_fmt(&v, "DECIMAL(38,2)", a), "-1.00");
    assert_string_equal(cast_fmt(&v, "INT", a), "0");
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "true");

    /* Doubles. */
    v = fr_value_double(T("DOUBLE"), -3.99);
    assert_string_equal(cast_fmt(&v, "INT", a), "-3");
    assert_string_equal(cast_fmt(&v, "DECIMAL(5,1)", a), "-4.0");
    assert_string_equal(cast_fmt(&v, "DECIMAL(5,2)", a), "-3.99");
    assert_string_equal(cast_fmt(&v, "FLOAT", a), "-3.99");
    v = fr_value_double(T("DOUBLE"), 2.5);
    assert_string_equal(cast_fmt(&v, "DECIMAL(5,0)", a), "3");
    v = fr_value_double(T("DOUBLE"), 0.1 + 0.2);
    assert_string_equal(cast_fmt(&v, "DECIMAL(38,20)", a), "0.30000000000000004000");
    v = fr_value_double(T("DOUBLE"), 1e300);
    assert_int_equal(cast_rc(&v, "BIGINT", a, &err), FR_ERANGE);
    assert_int_equal(cast_rc(&v, "DECIMAL(38,0)", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "FLOAT", a), "Infinity");
    v = fr_value_double(T("DOUBLE"), 9223372036854775807.0);
    assert_int_equal(cast_rc(&v, "BIGINT", a, &err), FR_ERANGE);
    v = fr_value_double(T("DOUBLE"), -9223372036854775808.0);
    assert_string_equal(cast_fmt(&v, "BIGINT", a), "-9223372036854775808");
    v = fr_value_double(T("DOUBLE"), NAN);
    assert_int_equal(cast_rc(&v, "INT", a, &err), FR_ERANGE);
    assert_int_equal(cast_rc(&v, "DECIMAL(5,0)", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "true");
    v = fr_value_double(T("DOUBLE"), 127.9);
    assert_string_equal(cast_fmt(&v, "TINYINT", a), "127");
    v = fr_value_double(T("DOUBLE"), 128.0);
    assert_int_equal(cast_rc(&v, "TINYINT", a, &err), FR_ERANGE);
    v = fr_value_double(T("FLOAT"), 0.1);
    assert_string_equal(cast_fmt(&v, "DECIMAL(5,3)", a), "0.100");
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "0.10000000149011612");
    fr_arena_free(a);
}

static void test_cast_strings(void **state)
{
    (void)state;
    fr_arena *a = fr_arena_new(4096);
    fr_error err;
    fr_value v = fr_value_str(T("STRING"), "abcdef", 6);
    assert_int_equal(cast_rc(&v, "VARCHAR(3)", a, &err), FR_ERANGE);
    assert_string_equal(err.msg, "value 'abcdef' is longer than VARCHAR(3)");
    assert_int_equal(cast_rc(&v, "CHAR(5)", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&v, "VARCHAR(6)", a), "abcdef");
    assert_string_equal(cast_fmt(&v, "CHAR(6)", a), "abcdef");
    assert_string_equal(cast_fmt(&v, "BYTES", a), "\\x616263646566");
    /* Lengths count characters, not bytes. */
    v = fr_value_str(T("STRING"), "h\xc3\xa9llo", 6);
    assert_string_equal(cast_fmt(&v, "VARCHAR(5)", a), "h\xc3\xa9llo");
    assert_int_equal(cast_rc(&v, "VARCHAR(4)", a, &err), FR_ERANGE);
    v = fr_value_str(T("BYTES"), "xyz", 3);
    assert_string_equal(cast_fmt(&v, "STRING", a), "xyz");

    /* To strings by formatting. */
    v = fr_value_int(T("INT"), -42);
    assert_string_equal(cast_fmt(&v, "STRING", a), "-42");
    assert_string_equal(cast_fmt(&v, "VARCHAR(3)", a), "-42");
    assert_int_equal(cast_rc(&v, "VARCHAR(2)", a, &err), FR_ERANGE);
    assert_string_equal(err.msg, "value '-42' is longer than VARCHAR(2)");
    assert_int_equal(cast_rc(&v, "BYTES", a, &err), FR_ETYPE);
    assert_int_equal(cast_rc(&v, "STRING", NULL, &err), FR_EINVAL);
    v = parse_ok("TIMESTAMP_LTZ(3)", "2026-01-01 10:00:00.5");
    assert_string_equal(cast_fmt(&v, "STRING", a), "2026-01-01 10:00:00.500Z");
    v = fr_value_null(T("INT"));
    fr_type to = T("STRING NOT NULL");
    fr_value out;
    assert_int_equal(fr_value_cast(&v, &to, a, &out, &err), 0);
    assert_true(out.is_null);
    assert_int_equal(out.type.id, FR_T_STRING);
    /* The formatted text lives in the arena and is NUL-terminated there. */
    v = fr_value_decimal(T("DECIMAL(5,2)"), -5);
    to = T("STRING");
    assert_int_equal(fr_value_cast(&v, &to, a, &out, &err), 0);
    assert_string_equal((const char *)out.v.s.ptr, "-0.05");

    /* From strings by parsing. */
    v = fr_value_str(T("STRING"), " 123 ", 5);
    assert_string_equal(cast_fmt(&v, "INT", a), "123");
    assert_string_equal(cast_fmt(&v, "DECIMAL(5,1)", a), "123.0");
    assert_string_equal(cast_fmt(&v, "DOUBLE", a), "123.0");
    assert_int_equal(cast_rc(&v, "TINYINT", a, &err), FR_OK);
    v = fr_value_str(T("STRING"), "300", 3);
    assert_int_equal(cast_rc(&v, "TINYINT", a, &err), FR_ERANGE);
    v = fr_value_str(T("VARCHAR(10)"), "2026-03-04", 10);
    assert_string_equal(cast_fmt(&v, "DATE", a), "2026-03-04");
    assert_string_equal(cast_fmt(&v, "TIMESTAMP(0)", a), "2026-03-04 00:00:00");
    v = fr_value_str(T("STRING"), "TRUE", 4);
    assert_string_equal(cast_fmt(&v, "BOOLEAN", a), "true");
    v = fr_value_str(T("STRING"), "abc", 3);
    assert_int_equal(cast_rc(&v, "INT", a, &err), FR_EINVAL);
    assert_string_equal(err.msg, "'abc' is not a valid INT");
    /* Casting an arena-less string to string is fine: nothing is formatted. */
    assert_string_equal(cast_fmt(&v, "STRING", NULL), "abc");

    fr_arena_free(a);
}

static void test_cast_temporal(void **state)
{
    (void)state;
    fr_arena *a = fr_arena_new(4096);
    fr_error err;
    fr_value d = parse_ok("DATE", "1969-12-31");
    assert_string_equal(cast_fmt(&d, "TIMESTAMP(3)", a), "1969-12-31 00:00:00.000");
    assert_string_equal(cast_fmt(&d, "TIMESTAMP_LTZ(0)", a), "1969-12-31 00:00:00Z");
    assert_string_equal(cast_fmt(&d, "DATE", a), "1969-12-31");
    assert_int_equal(cast_rc(&d, "TIME", a, &err), FR_ETYPE);
    assert_int_equal(cast_rc(&d, "INT", a, &err), FR_ETYPE);
    assert_string_equal(err.msg, "cannot cast DATE to INT");
    d = fr_value_int(T("DATE"), INT32_MAX);
    assert_int_equal(cast_rc(&d, "TIMESTAMP(9)", a, &err), FR_ERANGE);

    fr_value ts = parse_ok("TIMESTAMP(6)", "1969-12-31 23:59:59.999999");
    assert_string_equal(cast_fmt(&ts, "TIMESTAMP(3)", a), "1969-12-31 23:59:59.999");
    assert_string_equal(cast_fmt(&ts, "TIMESTAMP(0)", a), "1969-12-31 23:59:59");
    assert_string_equal(cast_fmt(&ts, "TIMESTAMP(9)", a), "1969-12-31 23:59:59.999999000");
    assert_string_equal(cast_fmt(&ts, "TIMESTAMP_LTZ(6)", a), "1969-12-31 23:59:59.999999Z");
    assert_string_equal(cast_fmt(&ts, "DATE", a), "1969-12-31");
    assert_string_equal(cast_fmt(&ts, "TIME(3)", a), "23:59:59.999");
    fr_value big = parse_ok("TIMESTAMP(6)", "9999-12-31 23:59:59");
    assert_int_equal(cast_rc(&big, "TIMESTAMP(9)", a, &err), FR_ERANGE);
    assert_string_equal(cast_fmt(&big, "DATE", a), "9999-12-31");
    fr_value ltz = parse_ok("TIMESTAMP_LTZ(3)", "2026-06-01T12:34:56.789Z");
    assert_string_equal(cast_fmt(&ltz, "TIMESTAMP(0)", a), "2026-06-01 12:34:56");
    fr_value t = parse_ok("TIME(3)", "12:34:56.789");
    assert_string_equal(cast_fmt(&t, "TIME(0)", a), "12:34:56");
    assert_string_equal(cast_fmt(&t, "TIME(6)", a), "12:34:56.789000");
    assert_int_equal(cast_rc(&t, "TIMESTAMP(3)", a, &err), FR_ETYPE);
    assert_int_equal(cast_rc(&t, "DATE", a, &err), FR_ETYPE);
    fr_value i = fr_value_int(T("INT"), 5);
    assert_int_equal(cast_rc(&i, "DATE", a, &err), FR_ETYPE);
    fr_value b = fr_value_str(T("BYTES"), "1", 1);
    assert_int_equal(cast_rc(&b, "INT", a, &err), FR_ETYPE);
    fr_arena_free(a);
}

/* ---- values: compare ------------------------------------------------------------------- */

static int cmp(const fr_value *a, const fr_value *b)
{
    int c = 99;
    fr_error err;
    if (fr_value_compare(a, b, &c, &err) < 0) fail_msg("compare: %s", err.msg);
    int r = 99;
    assert_int_equal(fr_value_compare(b, a, &r, &err), 0);
    assert_int_equal((c > 0) - (c < 0), -((r > 0) - (r < 0)));
    return (c > 0) - (c < 0);
}

static void test_compare(void **state)
{
    (void)state;
    fr_error err;
    fr_value i1 = fr_value_int(T("INT"), 12);
    fr_value i2 = fr_value_int(T("BIGINT"), 13);
    fr_value t1 = fr_value_int(T("TINYINT"), 12);
    assert_int_equal(cmp(&i1, &i2), -1);
    assert_int_equal(cmp(&i1, &t1), 0);
    fr_value bmin = fr_value_int(T("BIGINT"), INT64_MIN), bmax = fr_value_int(T("BIGINT"), INT64_MAX);
    assert_int_equal(cmp(&bmin, &bmax), -1);

    fr_value d1 = fr_value_decimal(T("DECIMAL(10,2)"), 1200);
    fr_value d2 = fr_value_decimal(T("DECIMAL(10,3)"), 12001);
    assert_int_equal(cmp(&i1, &d1), 0);
    assert_int_equal(cmp(&d1, &d2), -1);
    assert_int_equal(cmp(&i1, &d2), -1);
    fr_i128 max38 = fr_i128_pow10(38) - 1;
    fr_value dmax = fr_value_decimal(T("DECIMAL(38,0)"), max38);
    fr_value dtiny = fr_value_decimal(T("DECIMAL(38,38)"), max38);
    fr_value dneg = fr_value_decimal(T("DECIMAL(38,0)"), -max38);
    fr_value dnegtiny = fr_value_decimal(T("DECIMAL(38,38)"), -max38);
    assert_int_equal(cmp(&dmax, &dtiny), 1);
    assert_int_equal(cmp(&dneg, &dtiny), -1);
    assert_int_equal(cmp(&dneg, &dnegtiny), -1);
    assert_int_equal(cmp(&dmax, &bmax), 1);
    assert_int_equal(cmp(&dtiny, &bmin), 1);
    fr_value one38 = fr_value_decimal(T("DECIMAL(38,37)"), fr_i128_pow10(37));
    fr_value one = fr_value_int(T("INT"), 1);
    assert_int_equal(cmp(&one38, &one), 0);
    fr_value zero38 = fr_value_decimal(T("DECIMAL(38,38)"), 0);
    fr_value zero = fr_value_int(T("INT"), 0);
    assert_int_equal(cmp(&zero38, &zero), 0);

    fr_value f1 = fr_value_double(T("DOUBLE"), 12.0);
    fr_value f2 = fr_value_double(T("FLOAT"), 12.5);
    fr_value fn = fr_value_double(T("DOUBLE"), NAN);
    fr_value fi = fr_value_double(T("DOUBLE"), INFINITY);
    fr_value fz = fr_value_double(T("DOUBLE"), -0.0);
    assert_int_equal(cmp(&f1, &i1), 0);
    assert_int_equal(cmp(&f1, &d1), 0);
    assert_int_equal(cmp(&f2, &d2), 1);
    assert_int_equal(cmp(&fn, &fi), 1);
    assert_int_equal(cmp(&fn, &fn), 0);
    assert_int_equal(cmp(&fi, &dmax), 1);
    assert_int_equal(cmp(&fz, &zero), 0);

    fr_value bt = fr_value_bool(T("BOOLEAN"), true), bf = fr_value_bool(T("BOOLEAN"), false);
    assert_int_equal(cmp(&bf, &bt), -1);
    assert_int_equal(cmp(&bt, &bt), 0);

    fr_value s1 = fr_value_str(T("STRING"), "abc", 3);
    fr_value s2 = fr_value_str(T("VARCHAR(5)"), "abd", 3);
    fr_value s3 = fr_value_str(T("CHAR(2)"), "ab", 2);
    fr_value s4 = fr_value_str(T("STRING"), "", 0);
    fr_value s5 = fr_value_str(T("STRING"), "\xff", 1);
    assert_int_equal(cmp(&s1, &s2), -1);
    assert_int_equal(cmp(&s3, &s1), -1);
    assert_int_equal(cmp(&s4, &s3), -1);
    assert_int_equal(cmp(&s4, &s4), 0);
    assert_int_equal(cmp(&s5, &s1), 1);
    fr_value y1 = fr_value_str(T("BYTES"), "\x00\x01", 2);
    fr_value y2 = fr_value_str(T("BYTES"), "\x00", 1);
    assert_int_equal(cmp(&y1, &y2), 1);

    fr_value date = parse_ok("DATE", "2026-01-01");
    fr_value date0 = parse_ok("DATE", "1969-12-31");
    fr_value ts3 = parse_ok("TIMESTAMP(3)", "2026-01-01 00:00:00.000");
    fr_value ts9 = parse_ok("TIMESTAMP(9)", "2026-01-01 00:00:00.000000001");
    fr_value ts0 = parse_ok("TIMESTAMP(0)", "1969-12-31 23:59:59");
    fr_value ltz = parse_ok("TIMESTAMP_LTZ(6)", "2026-01-01 00:00:00");
    assert_int_equal(cmp(&date, &ts3), 0);
    assert_int_equal(cmp(&date, &ts9), -1);
    assert_int_equal(cmp(&ts3, &ts9), -1);
    assert_int_equal(cmp(&ts0, &date0), 1);
    assert_int_equal(cmp(&date0, &date), -1);
    assert_int_equal(cmp(&ltz, &ts3), 0);
    fr_value tm0 = parse_ok("TIME(0)", "10:00:00");
    fr_value tm9 = parse_ok("TIME(9)", "10:00:00.000000001");
    assert_int_equal(cmp(&tm0, &tm9), -1);
    fr_value bigts = fr_value_int(T("TIMESTAMP(0)"), INT64_MAX);
    fr_value bigts9 = fr_value_int(T("TIMESTAMP(9)"), INT64_MAX);
    assert_int_equal(cmp(&bigts, &bigts9), 1);

    /* Incomparable pairs. */
    int c;
    assert_int_equal(fr_value_compare(&i1, &s1, &c, &err), FR_ETYPE);
    assert_string_equal(err.msg, "cannot compare INT with STRING");
    assert_int_equal(fr_value_compare(&s1, &y1, &c, &err), FR_ETYPE);
    assert_int_equal(fr_value_compare(&bt, &one, &c, &err), FR_ETYPE);
    assert_int_equal(fr_value_compare(&tm0, &ts3, &c, &err), FR_ETYPE);
    assert_int_equal(fr_value_compare(&date, &i1, &c, &err), FR_ETYPE);
    fr_value n = fr_value_null(T("INT"));
    assert_int_equal(fr_value_compare(&n, &i1, &c, &err), FR_EINVAL);
}

/* Random parse/format/compare agreement for integers and decimals. */
static void test_random_decimal_roundtrip(void **state)
{
    (void)state;
    unsigned seed = (unsigned)time(NULL) ^ 0x5eed;
    print_message("decimal roundtrip seed %u\n", seed);
    srand(seed);
    fr_error err;
    for (int i = 0; i < 5000; i++) {
        int p = 1 + rand() % 38;
        int s = rand() % (p + 1);
        fr_i128 lim = fr_i128_pow10(p);
        fr_i128 u = 0;
        for (int k = 0; k < 3; k++) u = u * 1000000007 + rand();
        u %= lim;
        if (rand() & 1) u = -u;
        char txt[64];
        fr_decimal_format(u, s, txt, sizeof txt);
        fr_i128 back;
        if (fr_decimal_parse(txt, strlen(txt), p, s, &back, &err) < 0 || back != u)
            fail_msg("seed %u: %s (p=%d s=%d) does not round-trip: %s", seed, txt, p, s, err.msg);
        fr_value a = fr_value_decimal(fr_type_decimal(p, s), u);
        fr_value b = fr_value_decimal(fr_type_decimal(38, 38 - (p - s) < s ? s : 38 - (p - s)),
                                      0);
        fr_type wide = b.type;
        if (fr_value_cast(&a, &wide, NULL, &b, &err) < 0)
            fail_msg("seed %u: widen %s: %s", seed, txt, err.msg);
        int c = 1;
        assert_int_equal(fr_value_compare(&a, &b, &c, &err), 0);
        if (c != 0) fail_msg("seed %u: %s differs after widening", seed, txt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_parse_names),
        cmocka_unit_test(test_type_parse_errors),
        cmocka_unit_test(test_type_validate_and_props),
        cmocka_unit_test(test_schema_basic),
        cmocka_unit_test(test_schema_errors),
        cmocka_unit_test(test_schema_alloc_failure),
        cmocka_unit_test(test_schema_json_roundtrip),
        cmocka_unit_test(test_schema_json_malformed),
        cmocka_unit_test(test_calendar),
        cmocka_unit_test(test_decimal_helpers),
        cmocka_unit_test(test_double_format),
        cmocka_unit_test(test_value_constructors),
        cmocka_unit_test(test_value_parse_integers),
        cmocka_unit_test(test_value_parse_bool_float),
        cmocka_unit_test(test_value_parse_decimal),
        cmocka_unit_test(test_value_parse_temporal),
        cmocka_unit_test(test_value_parse_strings),
        cmocka_unit_test(test_value_format_temporal_edges),
        cmocka_unit_test(test_cast_numeric),
        cmocka_unit_test(test_cast_strings),
        cmocka_unit_test(test_cast_temporal),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_random_decimal_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
