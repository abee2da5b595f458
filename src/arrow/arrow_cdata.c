/* arrow_cdata.c — the Arrow C Data Interface: batches exported as a struct array (one child
 * per column) and struct arrays imported as batches.
 *
 * Export shares memory: every exported array (the parent and each child, since a consumer
 * may move children out on their own) holds a reference on the batch, so the batch's
 * buffers live until the last release. Each schema and array node owns a private block
 * with its strings and buffer pointers. Import keeps the producer's buffers where they
 * satisfy the batch invariants and copies only what does not (bitmaps at odd offsets,
 * offsets not starting at 0, misaligned values). */
#include <stdio.h>
#include <stdlib.h>

#include "arrow/arrow_internal.h"

#define FR_CDATA_FORMAT_MAX 32

/* ---- formats ----------------------------------------------------------------------------- */

static const char *fr_cdata_unit(int precision)
{
    return precision == 0 ? "s" : precision <= 3 ? "m" : precision <= 6 ? "u" : "n";
}

static void fr_cdata_format(const fr_type *t, char *out, size_t cap)
{
    const char *f = "";
    switch (t->id) {
    case FR_T_BOOLEAN: f = "b"; break;
    case FR_T_TINYINT: f = "c"; break;
    case FR_T_SMALLINT: f = "s"; break;
    case FR_T_INT: f = "i"; break;
    case FR_T_BIGINT: f = "l"; break;
    case FR_T_FLOAT: f = "f"; break;
    case FR_T_DOUBLE: f = "g"; break;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: f = "u"; break;
    case FR_T_BYTES: f = "z"; break;
    case FR_T_DATE: f = "tdD"; break;
    case FR_T_DECIMAL: snprintf(out, cap, "d:%d,%d", t->precision, t->scale); return;
    case FR_T_TIME: snprintf(out, cap, "tt%s", fr_cdata_unit(t->precision)); return;
    case FR_T_TIMESTAMP: snprintf(out, cap, "ts%s:", fr_cdata_unit(t->precision)); return;
    case FR_T_TIMESTAMP_LTZ: snprintf(out, cap, "ts%s:UTC", fr_cdata_unit(t->precision)); return;
    }
    snprintf(out, cap, "%s", f);
}

static int fr_cdata_unit_precision(char c)
{
    return c == 's' ? 0 : c == 'm' ? 3 : c == 'u' ? 6 : c == 'n' ? 9 : -1;
}

/* Parses a C Data format string of the types firth has. */
static int fr_cdata_parse_format(const char *f, const char *name, fr_type *t, fr_error *err)
{
    static const struct {
        const char *format;
        fr_type_id id;
    } simple[] = {{"b", FR_T_BOOLEAN}, {"c", FR_T_TINYINT}, {"s", FR_T_SMALLINT}, {"i", FR_T_INT},
                  {"l", FR_T_BIGINT}, {"f", FR_T_FLOAT}, {"g", FR_T_DOUBLE}, {"u", FR_T_STRING},
                  {"z", FR_T_BYTES}, {"tdD", FR_T_DATE}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (strcmp(f, simple[i].format) == 0) {
            *t = fr_type_of(simple[i].id);
            return 0;
        }
    }
    if (f[0] == 'd' && f[1] == ':') {
        char *end;
        long p = strtol(f + 2, &end, 10), s = -1;
        if (*end == ',') s = strtol(end + 1, &end, 10);
        /* "d:p,s,128" is the same type; other widths are not firth's. */
        if (*end == ',' && strcmp(end, ",128") == 0) end += 4;
        FR_CHECK(*end == '\0' && p >= 1 && p <= FR_DECIMAL_PRECISION_MAX && s >= 0 && s <= p,
                 FR_EUNSUPPORTED, err, "column %s: Arrow decimal format '%s' is not supported", name, f);
        *t = fr_type_decimal((int)p, (int)s);
        return 0;
    }
    if (f[0] == 't' && f[1] == 't' && f[2] && !f[3] && fr_cdata_unit_precision(f[2]) >= 0) {
        *t = fr_type_time_like(FR_T_TIME, fr_cdata_unit_precision(f[2]));
        return 0;
    }
    if (f[0] == 't' && f[1] == 's' && f[2] && f[3] == ':' && fr_cdata_unit_precision(f[2]) >= 0) {
        *t = fr_type_time_like(f[4] ? FR_T_TIMESTAMP_LTZ : FR_T_TIMESTAMP, fr_cdata_unit_precision(f[2]));
        return 0;
    }
    return fr_fail(err, FR_EUNSUPPORTED, "column %s: Arrow format '%s' is not a type firth has", name, f);
}

/* ---- export: schema ---------------------------------------------------------------------- */

typedef struct fr_cschema_priv {
    char format[FR_CDATA_FORMAT_MAX];
    char *name;
    char *metadata;
    struct ArrowSchema **children; /* parent only */
    struct ArrowSchema *child_structs;
    int64_t nchildren;
} fr_cschema_priv;

static void fr_cschema_release(struct ArrowSchema *s)
{
    if (!s || !s->release) return;
    fr_cschema_priv *p = s->private_data;
    for (int64_t i = 0; i < p->nchildren; i++)
        if (p->child_structs[i].release) p->child_structs[i].release(&p->child_structs[i]);
    fr_free(p->children);
    fr_free(p->child_structs);
    fr_free(p->name);
    fr_free(p->metadata);
    fr_free(p);
    s->release = NULL;
}

/* The metadata blob of one "firth.type" key: int32 count, then int32 length and bytes of
 * each key and value. */
static char *fr_cdata_type_metadata(const fr_type *t)
{
    char text[64];
    int len = fr_type_format(t, false, text, sizeof text);
    if (len < 0 || (size_t)len >= sizeof text) return NULL;
    size_t klen = strlen(FR_ARROW_TYPE_KEY);
    char *m = fr_malloc(12 + klen + (size_t)len);
    if (!m) return NULL;
    fr_put_u32le((uint8_t *)m, 1);
    fr_put_u32le((uint8_t *)m + 4, (uint32_t)klen);
    memcpy(m + 8, FR_ARROW_TYPE_KEY, klen);
    fr_put_u32le((uint8_t *)m + 8 + klen, (uint32_t)len);
    memcpy(m + 12 + klen, text, (size_t)len);
    return m;
}

static int fr_cschema_init(struct ArrowSchema *s, const char *format, const char *name,
                           const fr_type *t, fr_error *err)
{
    memset(s, 0, sizeof *s);
    fr_cschema_priv *p = fr_calloc(1, sizeof *p);
    if (!p) return fr_fail(err, FR_ENOMEM, "out of memory exporting a schema");
    snprintf(p->format, sizeof p->format, "%s", format);
    p->name = fr_strdup(name);
    bool meta = t && fr_arrow_needs_type_key(t);
    if (meta) p->metadata = fr_cdata_type_metadata(t);
    if (!p->name || (meta && !p->metadata)) {
        fr_free(p->name);
        fr_free(p->metadata);
        fr_free(p);
        return fr_fail(err, FR_ENOMEM, "out of memory exporting a schema");
    }
    s->format = p->format;
    s->name = p->name;
    s->metadata = p->metadata;
    s->flags = t && t->nullable ? ARROW_FLAG_NULLABLE : 0;
    s->private_data = p;
    s->release = fr_cschema_release;
    return 0;
}

static int fr_cdata_export_schema(const fr_schema *schema, struct ArrowSchema *out, fr_error *err)
{
    FR_TRY(fr_cschema_init(out, "+s", "", NULL, err));
    fr_cschema_priv *p = out->private_data;
    int n = fr_schema_num_fields(schema);
    p->children = fr_calloc(n ? (size_t)n : 1, sizeof *p->children);
    p->child_structs = fr_calloc(n ? (size_t)n : 1, sizeof *p->child_structs);
    if (!p->children || !p->child_structs) {
        fr_cschema_release(out);
        return fr_fail(err, FR_ENOMEM, "out of memory exporting a schema of %d columns", n);
    }
    for (int i = 0; i < n; i++) {
        const fr_field *f = fr_schema_field(schema, i);
        char format[FR_CDATA_FORMAT_MAX];
        fr_cdata_format(&f->type, format, sizeof format);
        int rc = fr_cschema_init(&p->child_structs[i], format, f->name, &f->type, err);
        if (rc < 0) {
            fr_cschema_release(out);
            return rc;
        }
        p->children[i] = &p->child_structs[i];
        p->nchildren = i + 1;
    }
    out->n_children = n;
    out->children = p->children;
    return 0;
}

/* ---- export: array ----------------------------------------------------------------------- */

typedef struct fr_carray_priv {
    fr_batch *batch;
    const void *buffers[3];
    struct ArrowArray **children; /* parent only */
    struct ArrowArray *child_structs;
    int64_t nchildren;
} fr_carray_priv;

static void fr_carray_release(struct ArrowArray *a)
{
    if (!a || !a->release) return;
    fr_carray_priv *p = a->private_data;
    for (int64_t i = 0; i < p->nchildren; i++)
        if (p->child_structs[i].release) p->child_structs[i].release(&p->child_structs[i]);
    fr_free(p->children);
    fr_free(p->child_structs);
    fr_batch_free(p->batch);
    fr_free(p);
    a->release = NULL;
}

static int fr_carray_init(struct ArrowArray *a, const fr_batch *b, int64_t null_count, int nbuffers,
                          fr_error *err)
{
    memset(a, 0, sizeof *a);
    fr_carray_priv *p = fr_calloc(1, sizeof *p);
    if (!p) return fr_fail(err, FR_ENOMEM, "out of memory exporting a batch");
    p->batch = fr_batch_ref(b);
    a->length = b->rows;
    a->null_count = null_count;
    a->n_buffers = nbuffers;
    a->buffers = p->buffers;
    a->private_data = p;
    a->release = fr_carray_release;
    return 0;
}

static int fr_cdata_export_array(const fr_batch *b, struct ArrowArray *out, fr_error *err)
{
    FR_TRY(fr_carray_init(out, b, 0, 1, err));
    fr_carray_priv *p = out->private_data;
    p->children = fr_calloc(b->ncols ? (size_t)b->ncols : 1, sizeof *p->children);
    p->child_structs = fr_calloc(b->ncols ? (size_t)b->ncols : 1, sizeof *p->child_structs);
    if (!p->children || !p->child_structs) {
        fr_carray_release(out);
        return fr_fail(err, FR_ENOMEM, "out of memory exporting a batch of %d columns", b->ncols);
    }
    for (int i = 0; i < b->ncols; i++) {
        const fr_column *c = &b->cols[i];
        struct ArrowArray *child = &p->child_structs[i];
        int rc = fr_carray_init(child, b, c->null_count, fr_arrow_nbuffers(&c->type), err);
        if (rc < 0) {
            fr_carray_release(out);
            return rc;
        }
        fr_carray_priv *cp = child->private_data;
        cp->buffers[0] = c->validity;
        if (child->n_buffers == 3) {
            cp->buffers[1] = c->offsets;
            cp->buffers[2] = c->values;
        } else {
            cp->buffers[1] = c->values;
        }
        p->children[i] = child;
        p->nchildren = i + 1;
    }
    out->n_children = b->ncols;
    out->children = p->children;
    return 0;
}

int fr_batch_export(const fr_batch *b, struct ArrowSchema *schema, struct ArrowArray *array,
                    fr_error *err)
{
    FR_TRY(fr_cdata_export_schema(b->schema, schema, err));
    int rc = fr_cdata_export_array(b, array, err);
    if (rc < 0) fr_cschema_release(schema);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------ */

/* Reads "firth.type" from a C Data metadata blob (bounds-checked: the producer may be
 * foreign code). */
static void fr_cdata_read_metadata(const char *blob, fr_type *t)
{
    if (!blob) return;
    const uint8_t *m = (const uint8_t *)blob;
    int32_t n = (int32_t)fr_get_u32le(m);
    size_t pos = 4;
    for (int32_t i = 0; i < n && i < 1024; i++) {
        int32_t klen = (int32_t)fr_get_u32le(m + pos);
        if (klen < 0 || klen > 4096) return;
        const char *key = (const char *)m + pos + 4;
        pos += 4 + (size_t)klen;
        int32_t vlen = (int32_t)fr_get_u32le(m + pos);
        if (vlen < 0 || vlen > 4096) return;
        const char *value = (const char *)m + pos + 4;
        pos += 4 + (size_t)vlen;
        if ((size_t)klen == strlen(FR_ARROW_TYPE_KEY) && memcmp(key, FR_ARROW_TYPE_KEY, (size_t)klen) == 0)
            fr_arrow_apply_type_key(t, value, (size_t)vlen);
    }
}

/* A copy of n bits of src from bit off, in memory owned by b. */
static int fr_cdata_copy_bits(fr_batch *b, const uint8_t *src, int64_t off, int64_t n,
                              const uint8_t **out, fr_error *err)
{
    void *raw;
    uint8_t *copy = fr_arrow_alloc((size_t)fr_bitmap_bytes(n), &raw);
    if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory importing a bitmap");
    FR_TRY(fr_batch_own(b, raw, err));
    memset(copy, 0, (size_t)fr_bitmap_bytes(n));
    fr_bits_copy(copy, 0, src, off, n);
    *out = copy;
    return 0;
}

/* A bitmap of rows bits starting at bit off of src, shared when byte-aligned. */
static int fr_cdata_bits(fr_batch *b, const uint8_t *src, int64_t off, int64_t rows,
                         const uint8_t **out, fr_error *err)
{
    if ((off & 7) == 0) {
        *out = src + (off >> 3);
        return 0;
    }
    return fr_cdata_copy_bits(b, src, off, rows, out, err);
}

static int fr_cdata_import_column(fr_batch *b, int col, const struct ArrowArray *a, int64_t off,
                                  fr_error *err)
{
    fr_column *c = &b->cols[col];
    const char *name = fr_schema_field(b->schema, col)->name;
    int64_t rows = b->rows;
    int nbuf = fr_arrow_nbuffers(&c->type);
    FR_CHECK(a->release && a->n_buffers == nbuf && a->n_children == 0 && !a->dictionary && a->buffers,
             FR_EINVAL, err, "column %s: C Data array has %lld buffers and %lld children, expected %d and 0",
             name, (long long)a->n_buffers, (long long)a->n_children, nbuf);
    FR_CHECK(a->offset >= 0 && a->length >= 0 && off >= a->offset && a->length >= off - a->offset + rows,
             FR_EINVAL, err, "column %s: C Data array of %lld values is shorter than the batch", name,
             (long long)a->length);
    const uint8_t *validity = a->buffers[0];
    if (validity && rows > 0) {
        int64_t nulls = rows - fr_bits_count(validity, off, rows);
        if (nulls > 0) {
            FR_CHECK(c->type.nullable, FR_EINVAL, err, "column %s is NOT NULL but has nulls", name);
            FR_TRY(fr_cdata_bits(b, validity, off, rows, &c->validity, err));
            c->null_count = nulls;
        }
    }
    const uint8_t *values = a->buffers[nbuf - 1];
    if (rows == 0) return 0;
    if (fr_arrow_phys(&c->type) == FR_PHYS_BOOL) {
        FR_CHECK(values, FR_EINVAL, err, "column %s: C Data array has no values buffer", name);
        return fr_cdata_bits(b, values, off, rows, &c->values, err);
    }
    if (fr_arrow_phys(&c->type) == FR_PHYS_FIXED) {
        FR_CHECK(values, FR_EINVAL, err, "column %s: C Data array has no values buffer", name);
        size_t width = (size_t)fr_arrow_width(&c->type);
        const uint8_t *v = values + (size_t)off * width;
        if (((uintptr_t)v & (width > 8 ? 7 : width - 1)) == 0) {
            c->values = v;
            return 0;
        }
        void *raw;
        uint8_t *copy = fr_arrow_alloc((size_t)rows * width, &raw);
        if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory importing column %s", name);
        FR_TRY(fr_batch_own(b, raw, err));
        memcpy(copy, v, (size_t)rows * width);
        c->values = copy;
        return 0;
    }
    const int32_t *o = (const int32_t *)a->buffers[1];
    FR_CHECK(o && ((uintptr_t)o & 3) == 0, FR_EINVAL, err, "column %s: C Data offsets missing or misaligned", name);
    o += off;
    FR_CHECK(o[0] >= 0 && (values || o[rows] == o[0]), FR_EINVAL, err, "column %s: bad C Data offsets", name);
    for (int64_t i = 0; i < rows; i++)
        FR_CHECK(o[i + 1] >= o[i], FR_EINVAL, err, "column %s: C Data offsets decrease at row %lld", name, (long long)i);
    if (o[0] == 0) {
        c->offsets = o;
        c->values = values;
        return 0;
    }
    void *raw;
    int32_t *copy = (int32_t *)fr_arrow_alloc(4 * (size_t)(rows + 1), &raw);
    if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory importing column %s", name);
    FR_TRY(fr_batch_own(b, raw, err));
    for (int64_t i = 0; i <= rows; i++) copy[i] = o[i] - o[0];
    c->offsets = copy;
    c->values = values ? values + o[0] : NULL; /* no data buffer: every string is empty */
    return 0;
}

/* Builds the schema of a struct array's children. */
static int fr_cdata_import_schema(const struct ArrowSchema *s, fr_schema **out, fr_error *err)
{
    FR_CHECK(s && s->release && s->format && strcmp(s->format, "+s") == 0, FR_EINVAL, err,
             "C Data import needs a struct array (format \"+s\")");
    FR_CHECK(s->n_children >= 0 && s->n_children <= FR_SCHEMA_COLUMNS_MAX && (s->children || !s->n_children),
             FR_EINVAL, err, "C Data struct of %lld children is outside 0..%d", (long long)s->n_children,
             FR_SCHEMA_COLUMNS_MAX);
    int n = (int)s->n_children;
    fr_field *fields = fr_calloc(n ? (size_t)n : 1, sizeof *fields);
    if (!fields) return fr_fail(err, FR_ENOMEM, "out of memory importing a schema");
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const struct ArrowSchema *c = s->children[i];
        if (!c || !c->format || c->n_children != 0 || c->dictionary) {
            rc = fr_fail(err, FR_EUNSUPPORTED, "C Data column %d is nested or dictionary-encoded", i);
            goto fail;
        }
        const char *name = c->name ? c->name : "";
        FR_GOTO(fr_cdata_parse_format(c->format, name, &fields[i].type, err));
        fields[i].type.nullable = (c->flags & ARROW_FLAG_NULLABLE) != 0;
        fr_cdata_read_metadata(c->metadata, &fields[i].type);
        fields[i].name = (char *)name;
    }
    rc = fr_schema_new(fields, n, 0, out, err);
fail:
    fr_free(fields);
    return rc;
}

int fr_batch_import(struct ArrowSchema *schema, struct ArrowArray *array, fr_batch **out,
                    fr_error *err)
{
    fr_schema *s = NULL;
    fr_batch *b = NULL;
    int rc = 0;
    FR_CHECK(array && array->release, FR_EINVAL, err, "C Data import of a released array");
    FR_GOTO(fr_cdata_import_schema(schema, &s, err));
    if (array->n_children != schema->n_children || array->n_buffers != 1 || array->length < 0 ||
        array->offset < 0 || (array->n_children && !array->children)) {
        rc = fr_fail(err, FR_EINVAL, "C Data struct array does not match its schema");
        goto fail;
    }
    if (array->buffers && array->buffers[0] && array->null_count != 0 &&
        fr_bits_count(array->buffers[0], array->offset, array->length) != array->length) {
        rc = fr_fail(err, FR_EUNSUPPORTED, "C Data struct array with null rows cannot be imported");
        goto fail;
    }
    FR_GOTO(fr_batch_alloc(s, array->length, &b, err));
    for (int i = 0; i < b->ncols; i++)
        FR_GOTO(fr_cdata_import_column(b, i, array->children[i], array->offset + array->children[i]->offset, err));
    fr_batch_seal(b);
    b->imported = *array; /* moved: released with the batch */
    array->release = NULL;
    fr_schema_free(s);
    *out = b;
    return 0;
fail:
    fr_batch_free(b);
    fr_schema_free(s);
    array->release(array);
    array->release = NULL;
    return rc;
}
