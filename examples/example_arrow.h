/* example_arrow.h — a small helper for the examples: builds a batch of rows as an Arrow
 * struct array through the Arrow C Data Interface (the ABI that firth.h declares), the way
 * an application without an Arrow library would hand rows to firth. Columns are BIGINT
 * ("l"), INT ("i"), DOUBLE ("g") or STRING ("u"); a NULL string is a null value.
 *
 * Ownership follows the C Data Interface: the schema and the array each have a release
 * callback that frees what they hold; firth_batch_import takes the array (and calls its
 * release when done) and leaves the schema to the caller. */
#ifndef FIRTH_EXAMPLE_ARROW_H
#define FIRTH_EXAMPLE_ARROW_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firth/firth.h"

typedef struct ex_column {
    const char *name;
    const char *format;  /* "l", "i", "g" or "u" */
    const void *values;  /* int64_t[n], int32_t[n], double[n] or const char *[n] */
} ex_column;

static inline void ex_release_array(struct ArrowArray *a)
{
    for (int64_t i = 0; i < a->n_children; i++) {
        if (a->children[i]->release) a->children[i]->release(a->children[i]);
        free(a->children[i]);
    }
    free(a->children);
    for (int64_t i = 0; i < a->n_buffers; i++) free((void *)a->buffers[i]);
    free(a->buffers);
    a->release = NULL;
}

static inline void ex_release_schema(struct ArrowSchema *s)
{
    for (int64_t i = 0; i < s->n_children; i++) {
        if (s->children[i]->release) s->children[i]->release(s->children[i]);
        free(s->children[i]);
    }
    free(s->children);
    s->release = NULL;
}

/* One column's array of n rows. Returns 0, or -1 when out of memory. */
static inline int ex_column_array(const ex_column *c, int64_t n, struct ArrowArray *a)
{
    memset(a, 0, sizeof *a);
    a->length = n;
    a->release = ex_release_array;
    if (strcmp(c->format, "u") == 0) {
        const char *const *v = c->values;
        a->n_buffers = 3;
        a->buffers = calloc(3, sizeof *a->buffers);
        if (!a->buffers) return -1;
        uint8_t *valid = calloc((size_t)(n + 7) / 8 + 1, 1);
        int32_t *offsets = malloc(sizeof *offsets * (size_t)(n + 1));
        size_t bytes = 0;
        for (int64_t i = 0; i < n; i++) bytes += v[i] ? strlen(v[i]) : 0;
        char *data = malloc(bytes + 1);
        a->buffers[0] = valid, a->buffers[1] = offsets, a->buffers[2] = data;
        if (!valid || !offsets || !data) return -1;
        offsets[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            size_t len = v[i] ? strlen(v[i]) : 0;
            if (v[i]) valid[i / 8] |= (uint8_t)(1u << (i % 8));
            else a->null_count++;
            memcpy(data + offsets[i], v[i] ? v[i] : "", len);
            offsets[i + 1] = offsets[i] + (int32_t)len;
        }
        return 0;
    }
    size_t width = strcmp(c->format, "i") == 0 ? 4 : 8;
    a->n_buffers = 2;
    a->buffers = calloc(2, sizeof *a->buffers);
    if (!a->buffers) return -1;
    void *values = malloc(width * (size_t)n + 1);
    a->buffers[1] = values;
    if (!values) return -1;
    memcpy(values, c->values, width * (size_t)n);
    return 0;
}

/* A struct array of n rows over the columns, and its schema. Returns 0 or -1. */
static inline int ex_make_batch(const ex_column *cols, int ncols, int64_t n, struct ArrowSchema *schema,
                         struct ArrowArray *array)
{
    memset(schema, 0, sizeof *schema);
    memset(array, 0, sizeof *array);
    schema->format = "+s";
    schema->release = ex_release_schema;
    schema->children = calloc((size_t)ncols, sizeof *schema->children);
    array->length = n;
    array->n_buffers = 1;
    array->buffers = calloc(1, sizeof *array->buffers); /* no nulls at the top level */
    array->release = ex_release_array;
    array->children = calloc((size_t)ncols, sizeof *array->children);
    if (!schema->children || !array->buffers || !array->children) goto fail;
    for (int i = 0; i < ncols; i++) {
        struct ArrowSchema *cs = calloc(1, sizeof *cs);
        struct ArrowArray *ca = calloc(1, sizeof *ca);
        if (!cs || !ca) {
            free(cs);
            free(ca);
            goto fail;
        }
        schema->children[schema->n_children++] = cs;
        array->children[array->n_children++] = ca;
        *cs = (struct ArrowSchema){.format = cols[i].format, .name = cols[i].name,
                                   .flags = ARROW_FLAG_NULLABLE, .release = ex_release_schema};
        if (ex_column_array(&cols[i], n, ca) < 0) goto fail;
    }
    return 0;
fail:
    if (schema->release) schema->release(schema);
    if (array->release) array->release(array);
    return -1;
}

/* Imports the columns as a firth_batch (NULL on failure, with err filled). */
static inline firth_batch *ex_batch(const ex_column *cols, int ncols, int64_t n, firth_error *err)
{
    struct ArrowSchema schema;
    struct ArrowArray array;
    if (ex_make_batch(cols, ncols, n, &schema, &array) < 0) {
        err->code = FIRTH_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory building a batch");
        return NULL;
    }
    firth_batch *b = NULL;
    int rc = firth_batch_import(&schema, &array, &b, err);
    schema.release(&schema);
    return rc == 0 ? b : NULL;
}

#endif
