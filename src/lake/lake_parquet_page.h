/* lake_parquet_page.h — decoding the pages of one column chunk into Arrow-layout buffers
 * (private to the lake module; used by lake_parquet_read.c and the page fuzz target). */
#ifndef FIRTH_LAKE_PARQUET_PAGE_H
#define FIRTH_LAKE_PARQUET_PAGE_H

#include "lake/lake_parquet_int.h"

/* How one leaf column is read: its firth type and its Parquet storage. */
typedef struct pq_colr {
    fr_type type;
    int physical;
    int32_t type_length;
    int32_t field_id; /* -1: none */
    int dw;           /* firth bytes per value; 0 var-width; -1 BOOLEAN bitmap */
    int pw;           /* Parquet PLAIN bytes per value; 0 BYTE_ARRAY; -1 BOOLEAN bits */
} pq_colr;

void pq_colr_init(pq_colr *c, const pq_schema_elem *e, const fr_type *t);

/* Scratch memory reused across chunks (one per reader). */
typedef struct pq_scratch {
    fr_buf page;  /* a decompressed page */
    fr_buf dict;  /* the decompressed dictionary page */
    fr_buf dictv; /* dictionary entries in firth form (fixed) or offsets + lengths (var) */
    fr_buf defs;  /* definition levels of a page, one byte each */
    fr_buf idx;   /* dictionary indexes of a page */
    fr_buf dense; /* BOOLEAN values of a page, one byte each */
    size_t data_hint; /* expected bytes of a var-width chunk's values (0: unknown), so that
                       * the output is allocated once rather than grown by copying */
} pq_scratch;
void pq_scratch_free(pq_scratch *s);

/* Decodes the pages of one column chunk (bytes[0, len), `rows` values) into three buffers
 * (validity, offsets, values: fr_batch_from_buffers's layout, fr_malloc'd, owned by the
 * caller even on failure) and the null count. Bad pages are FR_ECORRUPT, encodings and
 * codecs firth does not read FR_EUNSUPPORTED. */
int pq_read_chunk(const pq_colr *c, int codec, const uint8_t *bytes, size_t len, int64_t rows,
                  pq_scratch *s, uint8_t **bufs, int64_t *nulls, fr_error *err);

/* A big-endian two's complement integer of n (1..16) bytes. */
fr_i128 pq_be_to_i128(const uint8_t *p, size_t n);

#endif
