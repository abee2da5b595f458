/* lake_iceberg_int.h — internals shared by the Iceberg files of the lake module: the parsed
 * table metadata, data and delete file descriptions as manifests hold them, manifest-list
 * entries, single-value (bound) serialization, and small helpers (UUIDs, paths, a byte-key
 * hash map).
 *
 * Invariants: a fr_ice_meta always describes one published, fully checked metadata file;
 * everything a fr_ice_file or fr_ice_manifest points to lives in the arena that read or
 * built it. */
#ifndef FIRTH_LAKE_ICEBERG_INT_H
#define FIRTH_LAKE_ICEBERG_INT_H

#include <jansson.h>

#include "lake/lake.h"

#define FR_ICE_META_BYTES_MAX (64 << 20)     /* a metadata JSON file */
#define FR_ICE_AVRO_BYTES_MAX (256 << 20)    /* a manifest or manifest list */
#define FR_ICE_SNAPSHOTS_MAX 1000000
#define FR_ICE_OFFSETS_MAX 1000000           /* tiered offsets in one summary */
#define FR_ICE_PARTITION_FIELDS_MAX 64
#define FR_ICE_BOUND_BYTES_MAX 64            /* longer string/binary bounds are cut */
#define FR_ICE_VERSION_MAX 1000000000
#define FR_ICE_FIRST_PARTITION_FIELD_ID 1000
#define FR_ICE_SUMMARY_OFFSETS_KEY "firth.tiered-offsets"
#define FR_ICE_PROP_SCHEMA "firth.schema"
#define FR_ICE_MANIFESTS_MERGE_MIN 64
#define FR_ICE_SNAPSHOTS_KEEP 100  /* snapshots kept in the metadata; older ones expire */
#define FR_ICE_METADATA_KEEP 100   /* earlier metadata files kept (Iceberg's default) */

/* ---- parsed metadata ------------------------------------------------------------------- */

typedef struct fr_ice_snap {
    int64_t id;
    int64_t parent_id; /* -1: none */
    int64_t seq;
    int64_t ts_ms;
    const char *manifest_list; /* points into the metadata's JSON */
    json_t *summary;           /* borrowed from the metadata's JSON */
} fr_ice_snap;

typedef struct fr_ice_meta {
    int refs;            /* the table and its open scans each hold one */
    json_t *root;        /* the whole document (owned): commits copy and extend it */
    int64_t version;     /* N of vN.metadata.json */
    char *file;          /* the path it was read from (owned) */
    const char *uuid;    /* into root */
    const char *location;
    int64_t last_seq;
    int64_t current_id;  /* -1: no snapshot */
    int32_t schema_id;
    int32_t last_column_id;
    int32_t last_partition_id;
    fr_schema *schema;   /* the lake schema (owned) */
    int32_t *field_ids;  /* one per column (owned) */
    int *part_cols;      /* identity partition source columns (owned) */
    int32_t *part_ids;   /* their partition field ids */
    int npart;
    int32_t spec_id;
    int *key_cols;       /* identifier fields (owned) */
    int nkey;
    fr_ice_snap *snaps;  /* oldest first (owned array) */
    int nsnaps;
} fr_ice_meta;

/* Drops one reference; the last frees m. */
void fr_ice_meta_free(fr_ice_meta *m);
static inline fr_ice_meta *fr_ice_meta_ref(fr_ice_meta *m)
{
    m->refs++;
    return m;
}
/* Parses and checks a metadata document. name is used in messages. Errors: FR_ECORRUPT. */
int fr_ice_meta_parse(const char *text, size_t len, const char *name, fr_ice_meta **out,
                      fr_error *err);
/* Builds the JSON document of a new table (no snapshot). */
int fr_ice_meta_create_json(const fr_lake_spec *spec, const char *location, json_t **out,
                            fr_error *err);
/* The snapshot with this id, or NULL. */
const fr_ice_snap *fr_ice_meta_snap(const fr_ice_meta *m, int64_t id);
/* Fills a fr_lake_snapshot from a parsed snapshot (offsets allocated with fr_malloc). */
int fr_ice_snap_describe(const fr_ice_snap *s, fr_lake_snapshot *out, fr_error *err);
/* The Iceberg schema JSON of the metadata's current schema (borrowed), and its partition
 * fields array (borrowed), for manifest headers. */
json_t *fr_ice_meta_schema_json(const fr_ice_meta *m);
json_t *fr_ice_meta_spec_fields_json(const fr_ice_meta *m);
/* The Iceberg type name of a firth type ("long", "decimal(10, 2)"), into out. */
int fr_ice_type_name(const fr_type *t, char *out, size_t cap, fr_error *err);

/* Publishing: `<meta_dir>/v<version>.metadata.json` is created from text without ever
 * replacing an existing file (FR_ESTATE when it exists), durably; then the version hint. */
int fr_ice_publish_metadata(const char *meta_dir, int64_t version, const char *text,
                            size_t len, fr_error *err);
int fr_ice_write_version_hint(const char *meta_dir, int64_t version, fr_error *err);
/* Finds the newest published version (*version 0: none) starting at the version hint, and
 * reads it. *out NULL when there is none. */
int fr_ice_read_newest(const char *meta_dir, fr_ice_meta **out, fr_error *err);

/* ---- manifests ------------------------------------------------------------------------- */

typedef struct fr_ice_col_stat {
    int32_t field_id;
    int64_t size;     /* -1: absent */
    int64_t values;   /* -1: absent */
    int64_t nulls;    /* -1: absent */
    const uint8_t *lower, *upper; /* NULL: absent */
    int32_t lower_len, upper_len;
} fr_ice_col_stat;

typedef struct fr_ice_file {
    int status;       /* 0 existing, 1 added, 2 deleted */
    int64_t snapshot_id;
    int64_t seq, file_seq;
    int content;      /* 0 data, 1 position deletes, 2 equality deletes */
    const char *path; /* as written in the manifest (a URI) */
    int64_t records;
    int64_t file_bytes;
    fr_value *part;   /* one per partition field; strings point into the arena */
    int npart;
    fr_ice_col_stat *stats;
    int nstats;
    int64_t *splits;
    int nsplits;
    int32_t *eq_ids;
    int neq;
} fr_ice_file;

/* The summary of one partition field over a manifest's files (manifest list field 507). */
typedef struct fr_ice_field_summary {
    bool contains_null;
    int contains_nan;                 /* -1: unknown (null) */
    const uint8_t *lower, *upper;     /* NULL: absent */
    int32_t lower_len, upper_len;
} fr_ice_field_summary;

typedef struct fr_ice_manifest {
    const char *path;
    int64_t length;
    int32_t spec_id;
    int content;      /* 0 data, 1 deletes */
    int64_t seq, min_seq;
    int64_t added_snapshot_id;
    int32_t added_files, existing_files, deleted_files;
    int64_t added_rows, existing_rows, deleted_rows;
    fr_ice_field_summary *parts;      /* one per partition field; NULL: not written */
    int nparts;
} fr_ice_manifest;

/* The partition field types of a table: the source column types (identity transforms). */
typedef struct fr_ice_part_spec {
    int n;
    const fr_type *types;
    const int32_t *field_ids;
    const char *const *names;
} fr_ice_part_spec;

/* Writes a manifest (Avro object container file, deflate) of files at path, durably. The
 * header carries the metadata keys the spec requires. *length gets its size. */
int fr_avro_write_manifest(const char *path, const fr_ice_meta *m, const fr_ice_part_spec *ps,
                           int content, const fr_ice_file *files, int nfiles,
                           int64_t *length, fr_error *err);
/* Writes a manifest list of manifests at path, durably. parent_id -1: none. */
int fr_avro_write_manifest_list(const char *path, int64_t snapshot_id, int64_t parent_id,
                                int64_t seq, const fr_ice_manifest *mans, int n,
                                fr_error *err);
/* Reads a manifest list from bytes. Strings live in arena. name is used in messages. */
int fr_avro_read_manifest_list(const uint8_t *p, size_t n, const char *name, fr_arena *arena,
                               fr_ice_manifest **out, int *count, fr_error *err);
/* Reads a manifest from bytes, with the table's partition fields. Entries with a null
 * snapshot id or sequence numbers inherit them from man (may be NULL: no inheritance, and
 * nulls are then FR_ECORRUPT). */
int fr_avro_read_manifest(const uint8_t *p, size_t n, const char *name,
                          const fr_ice_part_spec *ps, const fr_ice_manifest *man,
                          fr_arena *arena, fr_ice_file **out, int *count, fr_error *err);
/* Reads a whole file (at most FR_ICE_AVRO_BYTES_MAX) and calls the readers above. */
int fr_avro_load_manifest_list(const char *path, fr_arena *arena, fr_ice_manifest **out,
                               int *count, fr_error *err);
int fr_avro_load_manifest(const char *path, const fr_ice_part_spec *ps,
                          const fr_ice_manifest *man, fr_arena *arena, fr_ice_file **out,
                          int *count, fr_error *err);

/* ---- values, paths, ids ---------------------------------------------------------------- */

/* Iceberg's binary single-value serialization of a non-null value of type t (Appendix D),
 * appended to out. Strings and bytes longer than FR_ICE_BOUND_BYTES_MAX: as a lower bound
 * they are cut to a UTF-8 prefix; as an upper bound, *skip is set (no bound written). */
int fr_ice_bound_encode(const fr_value *v, bool upper, fr_buf *out, bool *skip, fr_error *err);
/* Decodes a bound of type t; strings point into p. */
int fr_ice_bound_decode(const uint8_t *p, size_t n, const fr_type *t, fr_value *out,
                        fr_error *err);
/* Appends a self-delimiting encoding of partition values (NULLs allowed) that is equal for
 * equal tuples: the key of grouping files by partition. */
int fr_ice_part_key(const fr_value *vals, int n, fr_buf *out, fr_error *err);
/* A random version 4 UUID in its 36-character text form (out has 37 bytes). */
int fr_ice_uuid(char *out, fr_error *err);
/* A random positive 63-bit id. */
int fr_ice_random_id(int64_t *out, fr_error *err);
/* The local path of a file named in metadata: "file:///x", "file:/x" and "/x" all give
 * "/x". NULL for other schemes. Points into uri. */
const char *fr_ice_local_path(const char *uri);

/* A hash map from byte strings to int64 values. Keys are copied into its arena. */
typedef struct fr_ice_map fr_ice_map;
fr_ice_map *fr_ice_map_new(void);
void fr_ice_map_free(fr_ice_map *m);
/* Inserts key or finds it: *slot points at its value (new keys start at init). */
int fr_ice_map_put(fr_ice_map *m, const void *key, size_t len, int64_t init, int64_t **slot,
                   fr_error *err);
/* The value of key, or NULL. */
int64_t *fr_ice_map_get(const fr_ice_map *m, const void *key, size_t len);
size_t fr_ice_map_count(const fr_ice_map *m);

/* ---- the table ------------------------------------------------------------------------- */

struct fr_iceberg_table {
    char *dir;            /* <warehouse>/<db>/<table> */
    char *meta_dir;       /* dir/metadata */
    char *data_dir;       /* dir/data */
    char *uri;            /* "file://" + the real path of dir: the base of new files' URIs */
    fr_ice_meta *meta;    /* the newest metadata read */
    fr_schema *schema;    /* the lake schema, fixed while the table is open */
    fr_type *part_types;  /* partition field types, names: the view manifests need */
    const char **part_names;
    fr_ice_part_spec ps;
    fr_schema *del_schema; /* key columns, then partition columns that are no key column */
    int *del_cols;        /* lake column of each delete-schema column */
    int32_t *del_ids;
    int *del_part_pos;    /* position in the delete schema of each partition field */
    bool has_popts;
    fr_parquet_options popts;
    int64_t target_file_bytes;
    bool stale;           /* a commit published a version that meta is not: refresh first */
    int crash_after;      /* test hook */
    int merge_min;        /* manifests of one kind beyond which a commit merges them */
    int snapshots_keep;   /* FR_ICE_SNAPSHOTS_KEEP, or a test's */
    int metadata_keep;    /* FR_ICE_METADATA_KEEP, or a test's */
};

/* Makes m (a reference the caller hands over) the table's metadata, after checking that its
 * schema, partition spec and key are the ones the table was opened with (FR_EUNSUPPORTED
 * otherwise; m is then dropped). */
int fr_ice_table_adopt(fr_iceberg_table *t, fr_ice_meta *m, fr_error *err);
/* Refreshes t when a commit left it behind what it published. */
int fr_ice_table_catch_up(fr_iceberg_table *t, fr_error *err);
/* The manifests of snapshot s (read from its manifest list; strings in arena). */
int fr_ice_snap_manifests(const fr_ice_snap *s, fr_arena *arena, fr_ice_manifest **out,
                          int *n, fr_error *err);
/* Builds "<location>/<sub>/<name>" (URI) and "<dir>/<sub>/<name>" (local path). */
int fr_ice_file_names(const fr_iceberg_table *t, const char *sub, const char *name,
                      fr_arena *arena, const char **uri, const char **path, fr_error *err);

/* ---- tests ----------------------------------------------------------------------------- */

/* Test hook: makes the next fr_iceberg_commit_finish of t stop with FR_EIO right after the
 * given step, leaving its files as a crash would: 1 data files closed, 2 manifests
 * written, 3 manifest list written, 4 metadata published (before the version hint).
 * 0 turns it off. */
void fr_iceberg_test_crash_after(fr_iceberg_table *t, int step);
/* Test hook: a commit that would leave more than n manifests of one kind (data, deletes) in
 * the list merges the older ones into one (FR_ICE_MANIFESTS_MERGE_MIN by default). */
void fr_iceberg_test_merge_min(fr_iceberg_table *t, int n);
/* Test hook: keep this many snapshots and earlier metadata files instead of the defaults. */
void fr_iceberg_test_history(fr_iceberg_table *t, int snapshots_keep, int metadata_keep);

#endif
