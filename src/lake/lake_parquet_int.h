/* lake_parquet_int.h — what the Parquet files of the lake module share (private): the
 * decoded footer (FileMetaData) and page headers, the mapping between firth types and
 * Parquet types, the RLE/bit-packed hybrid codec, and page compression.
 *
 * Decoded metadata points into the footer bytes it was decoded from (names, statistics);
 * its arrays live in an arena. Enum values are those of parquet.thrift. */
#ifndef FIRTH_LAKE_PARQUET_INT_H
#define FIRTH_LAKE_PARQUET_INT_H

#include "firth/firth.h" /* FIRTH_VERSION, for created_by */
#include "lake/lake.h"

/* parquet.thrift's Type */
enum { PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3, PQ_FLOAT = 4, PQ_DOUBLE = 5,
       PQ_BYTE_ARRAY = 6, PQ_FLBA = 7 };
/* ConvertedType */
enum { PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4,
       PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6, PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8,
       PQ_CT_TIMESTAMP_MILLIS = 9, PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11,
       PQ_CT_UINT_16 = 12, PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15,
       PQ_CT_INT_16 = 16, PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19,
       PQ_CT_BSON = 20, PQ_CT_INTERVAL = 21 };
/* LogicalType union member ids */
enum { PQ_LT_NONE = 0, PQ_LT_STRING = 1, PQ_LT_MAP = 2, PQ_LT_LIST = 3, PQ_LT_ENUM = 4,
       PQ_LT_DECIMAL = 5, PQ_LT_DATE = 6, PQ_LT_TIME = 7, PQ_LT_TIMESTAMP = 8,
       PQ_LT_INTEGER = 10, PQ_LT_UNKNOWN = 11, PQ_LT_JSON = 12, PQ_LT_BSON = 13,
       PQ_LT_UUID = 14, PQ_LT_FLOAT16 = 15 };
/* TimeUnit union member ids */
enum { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
/* Encoding */
enum { PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
       PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
       PQ_ENC_DELTA_BYTE_ARRAY = 7, PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9 };
/* CompressionCodec beyond the public enum */
enum { PQ_CODEC_GZIP = 2, PQ_CODEC_LZ4_RAW = 7 };
/* PageType */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

#define PQ_MAGIC "PAR1"
#define PQ_CREATED_BY "firth version " FIRTH_VERSION " (build release)"
/* Statistics of strings and bytes longer than this are not written (min/max absent). */
#define PQ_STATS_BYTES_MAX 256

typedef struct pq_stats {
    const uint8_t *min, *max; /* min_value/max_value, or the deprecated min/max */
    size_t min_len, max_len;
    bool has_min, has_max;
    bool deprecated;          /* min/max came from the deprecated fields 1 and 2 */
    int64_t null_count;       /* -1: absent */
} pq_stats;

typedef struct pq_schema_elem {
    int type;                 /* -1: absent (a group) */
    int32_t type_length;
    int repetition;           /* -1: absent */
    const uint8_t *name;
    size_t name_len;
    int32_t num_children;
    int converted;            /* -1: absent */
    int32_t scale, precision;
    int32_t field_id;         /* -1: absent */
    int logical;              /* PQ_LT_*; PQ_LT_NONE when absent */
    int32_t lt_scale, lt_precision;
    bool lt_adjusted;
    int lt_unit;              /* PQ_UNIT_* */
    int lt_bits;
    bool lt_signed;
} pq_schema_elem;

typedef struct pq_chunk {
    int type;
    int codec;
    int64_t num_values;
    int64_t total_uncompressed, total_compressed;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1: absent */
    int32_t path_len;
    const uint8_t *path0;           /* first element of path_in_schema */
    size_t path0_len;
    bool has_meta;
    pq_stats stats;
} pq_chunk;

typedef struct pq_row_group {
    pq_chunk *cols;
    int32_t ncols;
    int64_t num_rows;
    int64_t total_byte_size;
    int64_t file_offset; /* -1: absent */
} pq_row_group;

typedef struct pq_file_meta {
    int32_t version;
    pq_schema_elem *schema;
    int32_t nschema;
    int64_t num_rows;
    pq_row_group *rgs;
    int32_t nrgs;
    const uint8_t *created_by;
    size_t created_by_len;
    int32_t ncolumn_orders;
    bool encrypted;
} pq_file_meta;

/* Decodes a FileMetaData struct from p[0, n) into *m; arrays come from arena, byte fields
 * point into p. FR_ECORRUPT on any malformed input (naming `what`). */
int pq_meta_decode(const uint8_t *p, size_t n, fr_arena *arena, pq_file_meta *m,
                   const char *what, fr_error *err);

typedef struct pq_page_header {
    int type;
    int32_t uncompressed_size, compressed_size;
    bool has_crc;
    uint32_t crc;
    int32_t num_values;       /* data, data v2 and dictionary pages */
    int encoding;
    int def_encoding;         /* v1 */
    int32_t num_nulls, num_rows; /* v2 */
    int32_t def_bytes, rep_bytes; /* v2 */
    bool is_compressed;       /* v2 (default true) */
    bool has_data, has_dict, has_v2;
} pq_page_header;

/* Decodes a PageHeader at the start of p[0, n); *used is its size. */
int pq_page_header_decode(const uint8_t *p, size_t n, pq_page_header *h, size_t *used,
                          const char *what, fr_error *err);

/* ---- types ------------------------------------------------------------------------------- */

/* How a firth type is stored in Parquet. */
typedef struct pq_type_map {
    int physical;      /* PQ_* */
    int32_t type_length; /* FLBA only */
    int converted;     /* -1: none */
    int logical;       /* PQ_LT_* */
    int unit;          /* TIME/TIMESTAMP */
    int bits;          /* INTEGER */
    int64_t scale_up;  /* value multiplier from firth to Parquet (TIME(0), TIMESTAMP(0): 1000) */
} pq_type_map;
void pq_type_of(const fr_type *t, pq_type_map *m);
/* Bytes of the smallest two's complement that holds every DECIMAL(precision) value. */
int pq_decimal_bytes(int precision);
/* Maps a leaf schema element to a firth type; FR_EUNSUPPORTED naming the column. */
int pq_type_from_elem(const pq_schema_elem *e, const char *name, fr_type *out, fr_error *err);

/* ---- RLE / bit-packed hybrid --------------------------------------------------------------- */

/* Appends the hybrid encoding of v[0..n) with the given bit width (1..32), no length prefix. */
int pq_rle_encode(const uint32_t *v, int64_t n, int bit_width, fr_buf *out, fr_error *err);
/* The same for 8-bit values (definition levels). */
int pq_rle_encode_u8(const uint8_t *v, int64_t n, int bit_width, fr_buf *out, fr_error *err);
/* Decodes exactly n values (0..32 bits) from p[0, len) into out; FR_ECORRUPT when the input
 * ends first. Trailing bytes are allowed. */
int pq_rle_decode(const uint8_t *p, size_t len, int bit_width, uint32_t *out, int64_t n,
                  fr_error *err);
int pq_rle_decode_u8(const uint8_t *p, size_t len, int bit_width, uint8_t *out, int64_t n,
                     fr_error *err);

/* CRC-32 (zlib's) of a page's bytes after its header, as PageHeader.crc holds it. */
uint32_t pq_crc32(const uint8_t *p, size_t n);

/* ---- compression --------------------------------------------------------------------------- */

typedef struct pq_compressor pq_compressor;
int pq_compressor_new(int codec, int zstd_level, pq_compressor **out, fr_error *err);
void pq_compressor_free(pq_compressor *c);
/* Compresses p[0, n) into out (reset first). UNCOMPRESSED copies. */
int pq_compress(pq_compressor *c, const uint8_t *p, size_t n, fr_buf *out, fr_error *err);
/* Compresses the concatenation of a[0, alen) and b[0, blen) (either may be empty). */
int pq_compress2(pq_compressor *c, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                 fr_buf *out, fr_error *err);
/* Decompresses exactly `expect` bytes into dst. FR_ECORRUPT on a size mismatch or bad data,
 * FR_EUNSUPPORTED for codecs firth does not read. */
int pq_decompress(int codec, const uint8_t *p, size_t n, uint8_t *dst, size_t expect,
                  fr_error *err);
const char *pq_codec_name(int codec);

#endif
