/* kv_merge.c — the merge engines: what row an upsert leaves behind when its key already
 * holds a row, and what a partial delete leaves. The write path (kv_write.c) handles new
 * keys, whole-row deletes and the changelog; these functions only compute cells.
 *
 * The rules are Apache Fluss's row mergers (docs/TABLES.md, "Merge engines"):
 *   last_row     the new row; with target columns, the targets from the new row and the
 *                other columns from the stored row;
 *   first_row    the stored row;
 *   versioned    the new row when its version >= the stored version, where a NULL version
 *                counts as the smallest value of the column's type; else the stored row;
 *   aggregation  the key columns from the new row, every other column aggregated (with
 *                target columns: only the targets, the others keep the stored value). */
#include "kv/kv_int.h"

/* A version as Fluss compares it: NULL is the type's minimum. */
static int64_t merge_version(const fr_value *v)
{
    if (!v->is_null) return v->v.i;
    return v->type.id == FR_T_INT ? INT32_MIN : INT64_MIN;
}

static int merge_aggregate(const fr_kv *kv, const fr_value *old, const fr_value *in,
                           const bool *targets, fr_arena *arena, fr_value *out, fr_error *err)
{
    for (int c = 0; c < kv->ncols; c++) {
        if (kv->is_pk[c]) {
            out[c] = in[c];
        } else if (targets && !targets[c]) {
            out[c] = old[c];
        } else {
            const fr_field *f = fr_schema_field(kv->schema, c);
            int rc = kv_agg_apply(kv->aggs[c], &f->type, kv->delims[c], &old[c], &in[c],
                                  arena, &out[c], err);
            if (rc < 0)
                return fr_error_wrap(err, "%s: column %s (%s)", kv->name, f->name,
                                     fr_agg_fn_name(kv->aggs[c]));
        }
    }
    return FR_OK;
}

int kv_merge_upsert(const fr_kv *kv, const fr_value *old, const fr_value *in,
                    const bool *targets, fr_arena *arena, fr_value *out, fr_error *err)
{
    size_t bytes = (size_t)kv->ncols * sizeof *out;
    switch (kv->merge) {
    case FR_MERGE_LAST_ROW:
        for (int c = 0; c < kv->ncols; c++) out[c] = targets && !targets[c] ? old[c] : in[c];
        return FR_OK;
    case FR_MERGE_FIRST_ROW:
        memcpy(out, old, bytes);
        return FR_OK;
    case FR_MERGE_VERSIONED: {
        int v = kv->version_column;
        bool replace = merge_version(&old[v]) <= merge_version(&in[v]);
        memcpy(out, replace ? in : old, bytes);
        return FR_OK;
    }
    case FR_MERGE_AGGREGATION:
        return merge_aggregate(kv, old, in, targets, arena, out, err);
    }
    assert(!"unknown merge engine");
    return FR_OK;
}

void kv_merge_partial_delete(const fr_kv *kv, const fr_value *old, const bool *targets,
                             fr_value *out, bool *remove)
{
    *remove = true;
    for (int c = 0; c < kv->ncols; c++)
        if (!targets[c] && !old[c].is_null) *remove = false;
    if (*remove) return;
    for (int c = 0; c < kv->ncols; c++) {
        out[c] = old[c];
        if (targets[c] && !kv->is_pk[c]) out[c].is_null = true;
    }
}
