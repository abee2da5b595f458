/* types_schema.c — immutable schemas: an id and an ordered list of named, typed fields.
 *
 * Invariants: every name is 1..FR_NAME_BYTES_MAX bytes without control characters, names
 * are unique ignoring ASCII case, every type validates, and the field count is at most
 * FR_SCHEMA_COLUMNS_MAX. A schema owns its field array and every name; nothing changes after
 * creation, so schemas may be read from any thread. Being immutable, a schema is shared
 * rather than copied: a clone is one more reference (every batch holds its schema, and
 * copying one per decoded batch cost more than decoding a small batch's values), freed
 * with the last. */
#include "types/types.h"

#include <stdatomic.h>
#include <strings.h>

struct fr_schema {
    atomic_int refs; /* owners: fr_schema_new's and each clone's */
    int32_t id;
    int nfields;
    fr_field fields[];
};

static int fr_schema_check_name(const char *name, int i, fr_error *err)
{
    FR_CHECK(name != NULL, FR_EINVAL, err, "column %d has no name", i + 1);
    size_t len = strlen(name);
    FR_CHECK(len >= 1, FR_EINVAL, err, "column %d has an empty name", i + 1);
    FR_CHECK(len <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
             "column %d: name of %zu bytes is longer than %d bytes", i + 1, len,
             FR_NAME_BYTES_MAX);
    for (size_t k = 0; k < len; k++) {
        unsigned char c = (unsigned char)name[k];
        FR_CHECK(c >= 0x20 && c != 0x7f, FR_EINVAL, err,
                 "column %d: name contains the control character 0x%02x", i + 1, c);
    }
    return FR_OK;
}

void fr_schema_free(fr_schema *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) > 1) return;
    for (int i = 0; i < s->nfields; i++) fr_free(s->fields[i].name);
    fr_free(s);
}

int fr_schema_new(const fr_field *fields, int nfields, int32_t schema_id, fr_schema **out,
                  fr_error *err)
{
    FR_CHECK(nfields >= 0 && nfields <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "a schema has %d columns; the limit is %d", nfields, FR_SCHEMA_COLUMNS_MAX);
    for (int i = 0; i < nfields; i++) {
        FR_TRY(fr_schema_check_name(fields[i].name, i, err));
        if (fr_type_validate(&fields[i].type, err) < 0)
            return fr_error_wrap(err, "column %s", fields[i].name);
        /* Quadratic, but bounded by the column limit and run once per schema version. */
        for (int j = 0; j < i; j++)
            FR_CHECK(strcasecmp(fields[i].name, fields[j].name) != 0, FR_EINVAL, err,
                     "duplicate column name '%s'", fields[i].name);
    }
    fr_schema *s = fr_calloc(1, sizeof *s + (size_t)nfields * sizeof(fr_field));
    FR_CHECK(s != NULL, FR_ENOMEM, err, "out of memory creating a schema of %d columns", nfields);
    atomic_init(&s->refs, 1);
    s->id = schema_id;
    for (int i = 0; i < nfields; i++) {
        s->fields[i].type = fields[i].type;
        s->fields[i].name = fr_strdup(fields[i].name);
        if (!s->fields[i].name) {
            s->nfields = i;
            fr_schema_free(s);
            return fr_fail(err, FR_ENOMEM, "out of memory creating a schema of %d columns",
                           nfields);
        }
    }
    s->nfields = nfields;
    *out = s;
    return FR_OK;
}

fr_schema *fr_schema_clone(const fr_schema *s)
{
    fr_schema *shared = (fr_schema *)s; /* immutable: only the count changes */
    atomic_fetch_add_explicit(&shared->refs, 1, memory_order_relaxed);
    return shared;
}

int fr_schema_num_fields(const fr_schema *s)
{
    return s->nfields;
}

const fr_field *fr_schema_field(const fr_schema *s, int i)
{
    if (i < 0 || i >= s->nfields) return NULL;
    return &s->fields[i];
}

int fr_schema_find(const fr_schema *s, const char *name)
{
    for (int i = 0; i < s->nfields; i++)
        if (strcasecmp(s->fields[i].name, name) == 0) return i;
    return -1;
}

int32_t fr_schema_id(const fr_schema *s)
{
    return s->id;
}

int fr_schema_project(const fr_schema *s, const int *cols, int ncols, fr_schema **out,
                      fr_error *err)
{
    FR_CHECK(ncols >= 0 && ncols <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "a projection of %d columns exceeds the limit of %d", ncols, FR_SCHEMA_COLUMNS_MAX);
    fr_field *f = fr_malloc((size_t)(ncols ? ncols : 1) * sizeof *f);
    FR_CHECK(f != NULL, FR_ENOMEM, err, "out of memory projecting a schema");
    for (int i = 0; i < ncols; i++) {
        if (cols[i] < 0 || cols[i] >= s->nfields) {
            fr_free(f);
            return fr_fail(err, FR_ERANGE, "projected column index %d is out of range 0..%d",
                           cols[i], s->nfields - 1);
        }
        f[i] = s->fields[cols[i]];
    }
    int rc = fr_schema_new(f, ncols, s->id, out, err);
    fr_free(f);
    return rc;
}

bool fr_schema_equal(const fr_schema *a, const fr_schema *b)
{
    if (a->nfields != b->nfields) return false;
    for (int i = 0; i < a->nfields; i++) {
        const fr_field *x = &a->fields[i], *y = &b->fields[i];
        if (strcmp(x->name, y->name) != 0) return false;
        if (!fr_type_equal(&x->type, &y->type)) return false;
        if (x->type.nullable != y->type.nullable) return false;
    }
    return true;
}
