/* lake_parquet_meta.c — decoding of Parquet's FileMetaData and PageHeader (parquet.thrift)
 * with the Thrift compact reader. Only the fields firth uses are kept; the rest are skipped
 * (depth-limited). Arrays are allocated from the caller's arena with counts checked against
 * the bytes left, so a small input cannot ask for a large allocation. */
#include "lake/lake_parquet_int.h"
#include "lake/lake_thrift.h"

/* Runs the body for each field of a struct (type and id of the field in scope); the body
 * consumes the field's value. */
#define PQ_STRUCT_LOOP(r, last, type, id, ...)                                                \
    do {                                                                                     \
        int16_t last;                                                                        \
        FR_TRY(fr_thrift_r_struct_begin(r, &last));                                          \
        for (;;) {                                                                           \
            int type;                                                                        \
            int16_t id;                                                                      \
            FR_TRY(fr_thrift_r_field(r, &last, &type, &id));                                 \
            if (type == FR_TT_STOP) break;                                                   \
            __VA_ARGS__                                                                      \
        }                                                                                    \
        fr_thrift_r_struct_end(r);                                                           \
    } while (0)

static int expect_struct(fr_thrift_r *r, int type)
{
    if (type != FR_TT_STRUCT)
        return fr_fail(r->err, FR_ECORRUPT, "%s: struct expected at byte %zu", r->what,
                       fr_thrift_r_used(r));
    return 0;
}

static void *arena_array(fr_arena *a, int32_t n, size_t size)
{
    return fr_arena_alloc(a, (size_t)(n > 0 ? n : 1) * size);
}

static int oom(fr_thrift_r *r) { return fr_fail(r->err, FR_ENOMEM, "%s: out of memory", r->what); }

static int decode_stats(fr_thrift_r *r, pq_stats *s)
{
    const uint8_t *dmin = NULL, *dmax = NULL, *nmin = NULL, *nmax = NULL;
    size_t dmin_len = 0, dmax_len = 0, nmin_len = 0, nmax_len = 0;
    memset(s, 0, sizeof *s);
    s->null_count = -1;
    PQ_STRUCT_LOOP(r, last, type, id, {
        switch (id) {
        case 1: FR_TRY(fr_thrift_r_binary(r, type, &dmax, &dmax_len)); break;
        case 2: FR_TRY(fr_thrift_r_binary(r, type, &dmin, &dmin_len)); break;
        case 3: FR_TRY(fr_thrift_r_int(r, type, &s->null_count)); break;
        case 5: FR_TRY(fr_thrift_r_binary(r, type, &nmax, &nmax_len)); break;
        case 6: FR_TRY(fr_thrift_r_binary(r, type, &nmin, &nmin_len)); break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    if (nmin || nmax) {
        s->min = nmin, s->min_len = nmin_len, s->has_min = nmin != NULL;
        s->max = nmax, s->max_len = nmax_len, s->has_max = nmax != NULL;
    } else if (dmin || dmax) {
        s->min = dmin, s->min_len = dmin_len, s->has_min = dmin != NULL;
        s->max = dmax, s->max_len = dmax_len, s->has_max = dmax != NULL;
        s->deprecated = true;
    }
    return 0;
}

static int decode_unit(fr_thrift_r *r, int *unit)
{
    PQ_STRUCT_LOOP(r, last, type, id, {
        if (id >= 1 && id <= 3) *unit = id;
        FR_TRY(fr_thrift_r_skip(r, type, false));
    });
    return 0;
}

static int decode_time_like(fr_thrift_r *r, pq_schema_elem *e)
{
    PQ_STRUCT_LOOP(r, last, type, id, {
        if (id == 1) FR_TRY(fr_thrift_r_bool(r, type, false, &e->lt_adjusted));
        else if (id == 2 && type == FR_TT_STRUCT) FR_TRY(decode_unit(r, &e->lt_unit));
        else FR_TRY(fr_thrift_r_skip(r, type, false));
    });
    return 0;
}

static int decode_logical(fr_thrift_r *r, pq_schema_elem *e)
{
    PQ_STRUCT_LOOP(r, last, type, id, {
        if (type != FR_TT_STRUCT) {
            FR_TRY(fr_thrift_r_skip(r, type, false));
            continue;
        }
        e->logical = id;
        switch (id) {
        case PQ_LT_DECIMAL:
            PQ_STRUCT_LOOP(r, l2, t2, i2, {
                if (i2 == 1) FR_TRY(fr_thrift_r_i32(r, t2, &e->lt_scale));
                else if (i2 == 2) FR_TRY(fr_thrift_r_i32(r, t2, &e->lt_precision));
                else FR_TRY(fr_thrift_r_skip(r, t2, false));
            });
            break;
        case PQ_LT_TIME:
        case PQ_LT_TIMESTAMP:
            FR_TRY(decode_time_like(r, e));
            break;
        case PQ_LT_INTEGER:
            PQ_STRUCT_LOOP(r, l2, t2, i2, {
                int64_t v;
                if (i2 == 1) {
                    FR_TRY(fr_thrift_r_int(r, t2, &v));
                    e->lt_bits = (int)v;
                } else if (i2 == 2) {
                    FR_TRY(fr_thrift_r_bool(r, t2, false, &e->lt_signed));
                } else {
                    FR_TRY(fr_thrift_r_skip(r, t2, false));
                }
            });
            break;
        default:
            FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    return 0;
}

static int decode_schema_elem(fr_thrift_r *r, pq_schema_elem *e)
{
    memset(e, 0, sizeof *e);
    e->type = e->repetition = e->converted = -1;
    e->field_id = -1;
    e->scale = e->precision = -1;
    bool has_name = false;
    PQ_STRUCT_LOOP(r, last, type, id, {
        int32_t v;
        switch (id) {
        case 1: FR_TRY(fr_thrift_r_i32(r, type, &v)); e->type = v < 0 || v > 7 ? 99 : v; break;
        case 2: FR_TRY(fr_thrift_r_i32(r, type, &e->type_length)); break;
        case 3: FR_TRY(fr_thrift_r_i32(r, type, &v)); e->repetition = v < 0 || v > 2 ? 99 : v; break;
        case 4: FR_TRY(fr_thrift_r_binary(r, type, &e->name, &e->name_len)); has_name = true; break;
        case 5: FR_TRY(fr_thrift_r_i32(r, type, &e->num_children)); break;
        case 6: FR_TRY(fr_thrift_r_i32(r, type, &v)); e->converted = v < 0 || v > 21 ? 99 : v; break;
        case 7: FR_TRY(fr_thrift_r_i32(r, type, &e->scale)); break;
        case 8: FR_TRY(fr_thrift_r_i32(r, type, &e->precision)); break;
        case 9: FR_TRY(fr_thrift_r_i32(r, type, &e->field_id)); break;
        case 10: FR_TRY(expect_struct(r, type)); FR_TRY(decode_logical(r, e)); break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    if (!has_name)
        return fr_fail(r->err, FR_ECORRUPT, "%s: schema element without a name", r->what);
    if (e->num_children < 0)
        return fr_fail(r->err, FR_ECORRUPT, "%s: negative num_children", r->what);
    return 0;
}

static int decode_column_meta(fr_thrift_r *r, pq_chunk *c)
{
    c->has_meta = true;
    PQ_STRUCT_LOOP(r, last, type, id, {
        int32_t v;
        switch (id) {
        case 1: FR_TRY(fr_thrift_r_i32(r, type, &v)); c->type = v; break;
        case 3: {
            int elem;
            int32_t n;
            FR_TRY(fr_thrift_r_list(r, type, &elem, &n));
            c->path_len = n;
            for (int32_t i = 0; i < n; i++) {
                const uint8_t *p;
                size_t len;
                FR_TRY(fr_thrift_r_binary(r, elem, &p, &len));
                if (i == 0) c->path0 = p, c->path0_len = len;
            }
            break;
        }
        case 4: FR_TRY(fr_thrift_r_i32(r, type, &v)); c->codec = v; break;
        case 5: FR_TRY(fr_thrift_r_int(r, type, &c->num_values)); break;
        case 6: FR_TRY(fr_thrift_r_int(r, type, &c->total_uncompressed)); break;
        case 7: FR_TRY(fr_thrift_r_int(r, type, &c->total_compressed)); break;
        case 9: FR_TRY(fr_thrift_r_int(r, type, &c->data_page_offset)); break;
        case 11: FR_TRY(fr_thrift_r_int(r, type, &c->dictionary_page_offset)); break;
        case 12: FR_TRY(expect_struct(r, type)); FR_TRY(decode_stats(r, &c->stats)); break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    return 0;
}

static int decode_chunk(fr_thrift_r *r, pq_chunk *c, bool *encrypted)
{
    memset(c, 0, sizeof *c);
    c->type = -1;
    c->dictionary_page_offset = -1;
    c->stats.null_count = -1;
    PQ_STRUCT_LOOP(r, last, type, id, {
        if (id == 3 && type == FR_TT_STRUCT) FR_TRY(decode_column_meta(r, c));
        else {
            if (id == 8 || id == 9) *encrypted = true;
            FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    return 0;
}

static int decode_row_group(fr_thrift_r *r, fr_arena *arena, pq_row_group *g, bool *encrypted)
{
    memset(g, 0, sizeof *g);
    g->file_offset = -1;
    g->num_rows = -1;
    PQ_STRUCT_LOOP(r, last, type, id, {
        switch (id) {
        case 1: {
            int elem;
            FR_TRY(fr_thrift_r_list(r, type, &elem, &g->ncols));
            if (elem != FR_TT_STRUCT && g->ncols > 0) return expect_struct(r, elem);
            g->cols = arena_array(arena, g->ncols, sizeof *g->cols);
            if (!g->cols) return oom(r);
            for (int32_t i = 0; i < g->ncols; i++) FR_TRY(decode_chunk(r, &g->cols[i], encrypted));
            break;
        }
        case 2: FR_TRY(fr_thrift_r_int(r, type, &g->total_byte_size)); break;
        case 3: FR_TRY(fr_thrift_r_int(r, type, &g->num_rows)); break;
        case 5: FR_TRY(fr_thrift_r_int(r, type, &g->file_offset)); break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    return 0;
}

int pq_meta_decode(const uint8_t *p, size_t n, fr_arena *arena, pq_file_meta *m,
                   const char *what, fr_error *err)
{
    fr_thrift_r rd, *r = &rd;
    fr_thrift_r_init(r, p, n, what, err);
    memset(m, 0, sizeof *m);
    m->num_rows = -1;
    bool has_schema = false, has_rgs = false;
    PQ_STRUCT_LOOP(r, last, type, id, {
        int elem;
        switch (id) {
        case 1: FR_TRY(fr_thrift_r_i32(r, type, &m->version)); break;
        case 2:
            FR_TRY(fr_thrift_r_list(r, type, &elem, &m->nschema));
            if (elem != FR_TT_STRUCT && m->nschema > 0) return expect_struct(r, elem);
            m->schema = arena_array(arena, m->nschema, sizeof *m->schema);
            if (!m->schema) return oom(r);
            for (int32_t i = 0; i < m->nschema; i++) FR_TRY(decode_schema_elem(r, &m->schema[i]));
            has_schema = true;
            break;
        case 3: FR_TRY(fr_thrift_r_int(r, type, &m->num_rows)); break;
        case 4:
            FR_TRY(fr_thrift_r_list(r, type, &elem, &m->nrgs));
            if (elem != FR_TT_STRUCT && m->nrgs > 0) return expect_struct(r, elem);
            if (m->nrgs > FR_PARQUET_ROW_GROUPS_MAX)
                return fr_fail(err, FR_ECORRUPT, "%s: %d row groups exceed the limit of %d",
                               what, m->nrgs, FR_PARQUET_ROW_GROUPS_MAX);
            m->rgs = arena_array(arena, m->nrgs, sizeof *m->rgs);
            if (!m->rgs) return oom(r);
            for (int32_t i = 0; i < m->nrgs; i++)
                FR_TRY(decode_row_group(r, arena, &m->rgs[i], &m->encrypted));
            has_rgs = true;
            break;
        case 6: FR_TRY(fr_thrift_r_binary(r, type, &m->created_by, &m->created_by_len)); break;
        case 7:
            FR_TRY(fr_thrift_r_list(r, type, &elem, &m->ncolumn_orders));
            for (int32_t i = 0; i < m->ncolumn_orders; i++) FR_TRY(fr_thrift_r_skip(r, elem, true));
            break;
        case 8: m->encrypted = true; FR_TRY(fr_thrift_r_skip(r, type, false)); break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    if (!has_schema || !has_rgs || m->num_rows < 0)
        return fr_fail(err, FR_ECORRUPT, "%s: FileMetaData lacks its schema, row groups or row count",
                       what);
    return 0;
}

int pq_page_header_decode(const uint8_t *p, size_t n, pq_page_header *h, size_t *used,
                          const char *what, fr_error *err)
{
    fr_thrift_r rd, *r = &rd;
    fr_thrift_r_init(r, p, n, what, err);
    memset(h, 0, sizeof *h);
    h->type = -1;
    h->encoding = h->def_encoding = -1;
    h->is_compressed = true;
    bool has_sizes[2] = {false, false};
    PQ_STRUCT_LOOP(r, last, type, id, {
        int32_t v;
        switch (id) {
        case 1: FR_TRY(fr_thrift_r_i32(r, type, &h->type)); break;
        case 2: FR_TRY(fr_thrift_r_i32(r, type, &h->uncompressed_size)); has_sizes[0] = true; break;
        case 3: FR_TRY(fr_thrift_r_i32(r, type, &h->compressed_size)); has_sizes[1] = true; break;
        case 4: FR_TRY(fr_thrift_r_i32(r, type, &v)); h->crc = (uint32_t)v; h->has_crc = true; break;
        case 5:
            FR_TRY(expect_struct(r, type));
            h->has_data = true;
            PQ_STRUCT_LOOP(r, l2, t2, i2, {
                if (i2 == 1) FR_TRY(fr_thrift_r_i32(r, t2, &h->num_values));
                else if (i2 == 2) FR_TRY(fr_thrift_r_i32(r, t2, &h->encoding));
                else if (i2 == 3) FR_TRY(fr_thrift_r_i32(r, t2, &h->def_encoding));
                else FR_TRY(fr_thrift_r_skip(r, t2, false));
            });
            break;
        case 7:
            FR_TRY(expect_struct(r, type));
            h->has_dict = true;
            PQ_STRUCT_LOOP(r, l2, t2, i2, {
                if (i2 == 1) FR_TRY(fr_thrift_r_i32(r, t2, &h->num_values));
                else if (i2 == 2) FR_TRY(fr_thrift_r_i32(r, t2, &h->encoding));
                else FR_TRY(fr_thrift_r_skip(r, t2, false));
            });
            break;
        case 8:
            FR_TRY(expect_struct(r, type));
            h->has_v2 = true;
            PQ_STRUCT_LOOP(r, l2, t2, i2, {
                switch (i2) {
                case 1: FR_TRY(fr_thrift_r_i32(r, t2, &h->num_values)); break;
                case 2: FR_TRY(fr_thrift_r_i32(r, t2, &h->num_nulls)); break;
                case 3: FR_TRY(fr_thrift_r_i32(r, t2, &h->num_rows)); break;
                case 4: FR_TRY(fr_thrift_r_i32(r, t2, &h->encoding)); break;
                case 5: FR_TRY(fr_thrift_r_i32(r, t2, &h->def_bytes)); break;
                case 6: FR_TRY(fr_thrift_r_i32(r, t2, &h->rep_bytes)); break;
                case 7: FR_TRY(fr_thrift_r_bool(r, t2, false, &h->is_compressed)); break;
                default: FR_TRY(fr_thrift_r_skip(r, t2, false));
                }
            });
            break;
        default: FR_TRY(fr_thrift_r_skip(r, type, false));
        }
    });
    if (!has_sizes[0] || !has_sizes[1] || h->type < 0)
        return fr_fail(err, FR_ECORRUPT, "%s: page header lacks its type or sizes", what);
    if (h->uncompressed_size < 0 || h->compressed_size < 0 ||
        h->uncompressed_size > FR_PARQUET_PAGE_BYTES_MAX || h->compressed_size > FR_PARQUET_PAGE_BYTES_MAX)
        return fr_fail(err, FR_ECORRUPT, "%s: page sizes %d/%d outside 0..%d", what,
                       h->compressed_size, h->uncompressed_size, FR_PARQUET_PAGE_BYTES_MAX);
    if (h->num_values < 0 || h->num_nulls < 0 || h->num_rows < 0 || h->def_bytes < 0 || h->rep_bytes < 0)
        return fr_fail(err, FR_ECORRUPT, "%s: negative count in a page header", what);
    *used = fr_thrift_r_used(r);
    return 0;
}
