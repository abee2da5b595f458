/* rpc_message.c — the api table (names, versions, message types) and the packing and
 * unpacking of protobuf bodies through protobuf-c, with firth's allocator.
 *
 * Invariants: every message this file unpacks was allocated through fr_malloc within a
 * budget proportional to its bytes (FR_RPC_UNPACK_MEMORY_FACTOR) and is freed with
 * fr_rpc_free; a request message handed out has passed fr_rpc_request_check. No message
 * in proto/firth.proto contains itself, so protobuf-c's recursion over sub-messages is
 * bounded by the schema, not by the input. */
#include "rpc/rpc_wire.h"

#include <assert.h>
#include <stdio.h>

/* rpc.h's api keys are proto's ApiKey values. */
#define FR_RPC_SAME_KEY(a, b) _Static_assert((int)(a) == (int)(b), #a " matches proto")
FR_RPC_SAME_KEY(FR_RPC_API_VERSIONS, FIRTH__API_KEY__API_VERSIONS);
FR_RPC_SAME_KEY(FR_RPC_METADATA, FIRTH__API_KEY__METADATA);
FR_RPC_SAME_KEY(FR_RPC_CREATE_DATABASE, FIRTH__API_KEY__CREATE_DATABASE);
FR_RPC_SAME_KEY(FR_RPC_DROP_DATABASE, FIRTH__API_KEY__DROP_DATABASE);
FR_RPC_SAME_KEY(FR_RPC_LIST_DATABASES, FIRTH__API_KEY__LIST_DATABASES);
FR_RPC_SAME_KEY(FR_RPC_CREATE_TABLE, FIRTH__API_KEY__CREATE_TABLE);
FR_RPC_SAME_KEY(FR_RPC_DROP_TABLE, FIRTH__API_KEY__DROP_TABLE);
FR_RPC_SAME_KEY(FR_RPC_LIST_TABLES, FIRTH__API_KEY__LIST_TABLES);
FR_RPC_SAME_KEY(FR_RPC_GET_TABLE_INFO, FIRTH__API_KEY__GET_TABLE_INFO);
FR_RPC_SAME_KEY(FR_RPC_PRODUCE_LOG, FIRTH__API_KEY__PRODUCE_LOG);
FR_RPC_SAME_KEY(FR_RPC_PUT_KV, FIRTH__API_KEY__PUT_KV);
FR_RPC_SAME_KEY(FR_RPC_FETCH_LOG, FIRTH__API_KEY__FETCH_LOG);
FR_RPC_SAME_KEY(FR_RPC_LOOKUP, FIRTH__API_KEY__LOOKUP);
FR_RPC_SAME_KEY(FR_RPC_PREFIX_LOOKUP, FIRTH__API_KEY__PREFIX_LOOKUP);
FR_RPC_SAME_KEY(FR_RPC_LIST_OFFSETS, FIRTH__API_KEY__LIST_OFFSETS);
FR_RPC_SAME_KEY(FR_RPC_EXECUTE_SQL, FIRTH__API_KEY__EXECUTE_SQL);
FR_RPC_SAME_KEY(FR_RPC_AUTHENTICATE, FIRTH__API_KEY__AUTHENTICATE);
FR_RPC_SAME_KEY(FR_RPC_LAKE_SNAPSHOT, FIRTH__API_KEY__LAKE_SNAPSHOT);

/* One api: its key, name, the stem of its generated message names (firth__produce_log ->
 * firth__produce_log_request__descriptor, ..._response__descriptor), and whether it streams. */
#define FR_RPC_API(key, name, stem, streams)                                                       \
    [key] = { key, name, 0, 0, &stem##_request__descriptor, &stem##_response__descriptor, streams }

/* Indexed by api key. Every api is at version 0 for now: a version is added when the
 * meaning of a request changes (docs/PROTOCOL.md, section 7). */
static const fr_rpc_api_info fr_rpc_apis[FR_RPC_API_COUNT] = {
    FR_RPC_API(FR_RPC_API_VERSIONS, "api_versions", firth__api_versions, false),
    FR_RPC_API(FR_RPC_METADATA, "metadata", firth__metadata, false),
    FR_RPC_API(FR_RPC_CREATE_DATABASE, "create_database", firth__create_database, false),
    FR_RPC_API(FR_RPC_DROP_DATABASE, "drop_database", firth__drop_database, false),
    FR_RPC_API(FR_RPC_LIST_DATABASES, "list_databases", firth__list_databases, false),
    FR_RPC_API(FR_RPC_CREATE_TABLE, "create_table", firth__create_table, false),
    FR_RPC_API(FR_RPC_DROP_TABLE, "drop_table", firth__drop_table, false),
    FR_RPC_API(FR_RPC_LIST_TABLES, "list_tables", firth__list_tables, false),
    FR_RPC_API(FR_RPC_GET_TABLE_INFO, "get_table_info", firth__get_table_info, false),
    FR_RPC_API(FR_RPC_PRODUCE_LOG, "produce_log", firth__produce_log, false),
    FR_RPC_API(FR_RPC_PUT_KV, "put_kv", firth__put_kv, false),
    FR_RPC_API(FR_RPC_FETCH_LOG, "fetch_log", firth__fetch_log, false),
    FR_RPC_API(FR_RPC_LOOKUP, "lookup", firth__lookup, false),
    FR_RPC_API(FR_RPC_PREFIX_LOOKUP, "prefix_lookup", firth__prefix_lookup, false),
    FR_RPC_API(FR_RPC_LIST_OFFSETS, "list_offsets", firth__list_offsets, false),
    FR_RPC_API(FR_RPC_EXECUTE_SQL, "execute_sql", firth__execute_sql, true),
    FR_RPC_API(FR_RPC_AUTHENTICATE, "authenticate", firth__authenticate, false),
    FR_RPC_API(FR_RPC_LAKE_SNAPSHOT, "lake_snapshot", firth__lake_snapshot, false),
};

const fr_rpc_api_info *fr_rpc_api_lookup(int api_key)
{
    if (api_key < 0 || api_key >= FR_RPC_API_COUNT) return NULL;
    assert(fr_rpc_apis[api_key].name && (int)fr_rpc_apis[api_key].key == api_key);
    return &fr_rpc_apis[api_key];
}

const char *fr_rpc_api_name(int api_key)
{
    const fr_rpc_api_info *info = fr_rpc_api_lookup(api_key);
    if (info) return info->name;
    static __thread char name[24];
    snprintf(name, sizeof name, "api %d", api_key);
    return name;
}

/* ---- allocation ------------------------------------------------------------------------ */

/* The allocator of one unpack: counts what protobuf-c asks for against a budget, so that an
 * over-budget or failed allocation can be told from malformed bytes afterwards. */
typedef struct fr_rpc_budget {
    size_t used, limit;
    bool over, nomem;
} fr_rpc_budget;

static void *fr_rpc_alloc(void *data, size_t size)
{
    fr_rpc_budget *b = data;
    if (size > b->limit - b->used) {
        b->over = true;
        return NULL;
    }
    void *p = fr_malloc(size ? size : 1);
    if (!p) {
        b->nomem = true;
        return NULL;
    }
    b->used += size;
    return p;
}

static void fr_rpc_dealloc(void *data, void *p)
{
    (void)data;
    fr_free(p);
}

static void *fr_rpc_alloc_unbounded(void *data, size_t size)
{
    (void)data;
    return fr_malloc(size ? size : 1);
}

static ProtobufCAllocator fr_rpc_free_allocator = { fr_rpc_alloc_unbounded, fr_rpc_dealloc, NULL };

int fr_rpc_pack(const ProtobufCMessage *m, fr_buf *out, fr_error *err)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n == 0) return 0; /* an empty message: nothing to write, maybe no buffer yet */
    FR_TRY(fr_buf_reserve(out, n, err));
    size_t packed = protobuf_c_message_pack(m, out->data + out->len);
    assert(packed == n);
    out->len += packed;
    return 0;
}

/* protobuf-c keeps fields it does not know, so that they pack again; it also keeps field
 * number 0 when the tag is spelled with more than one byte, which is not protobuf (and
 * which it refuses in one byte). Refuse it everywhere in the tree. */
static bool fr_rpc_has_field_zero(const ProtobufCMessage *m, int depth)
{
    if (depth > 16) return true; /* no message of firth.proto nests this deep */
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0) return true;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *subs = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t j = 0; j < n; j++)
                if (fr_rpc_has_field_zero(subs[j], depth + 1)) return true;
        } else {
            const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
            if (sub && fr_rpc_has_field_zero(sub, depth + 1)) return true;
        }
    }
    return false;
}

size_t fr_rpc_unpack_limit(size_t n)
{
    size_t factor_room = (SIZE_MAX - FR_RPC_UNPACK_MEMORY_SLACK) / FR_RPC_UNPACK_MEMORY_FACTOR;
    return (n < factor_room ? n * FR_RPC_UNPACK_MEMORY_FACTOR : SIZE_MAX / 2) +
           FR_RPC_UNPACK_MEMORY_SLACK;
}

int fr_rpc_unpack(const ProtobufCMessageDescriptor *d, const char *what, const uint8_t *p, size_t n,
                  ProtobufCMessage **out, fr_error *err)
{
    fr_rpc_budget budget = { .limit = fr_rpc_unpack_limit(n) };
    ProtobufCAllocator a = { fr_rpc_alloc, fr_rpc_dealloc, &budget };
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &a, n, p);
    if (!m) {
        if (budget.nomem)
            return fr_fail(err, FR_ENOMEM, "%s: out of memory unpacking %zu bytes", what, n);
        if (budget.over)
            return fr_fail(err, FR_ELIMIT,
                           "%s: unpacking %zu bytes needs more than %zu bytes of memory", what, n,
                           budget.limit);
        return fr_fail(err, FR_ECORRUPT, "%s: malformed protobuf body of %zu bytes", what, n);
    }
    if (fr_rpc_has_field_zero(m, 0)) {
        fr_rpc_free(m);
        return fr_fail(err, FR_ECORRUPT,
                       "%s: malformed protobuf body of %zu bytes (a field numbered 0)", what, n);
    }
    *out = m;
    return 0;
}

void fr_rpc_free(ProtobufCMessage *m)
{
    if (!m) return;
    /* A response unpacked in place: its batches lie in its frame, which protobuf-c frees as
     * the message's unknown field. */
    if (fr_rpc_kept(m)) fr_rpc_kept_release(m);
    protobuf_c_message_free_unpacked(m, &fr_rpc_free_allocator);
}

/* ---- request and response bodies -------------------------------------------------------- */

const fr_rpc_api_info *fr_rpc_request_api(const fr_rpc_frame *f, Firth__ErrorCode *code,
                                          fr_error *err)
{
    assert(f->direction == FR_RPC_REQUEST);
    *code = FIRTH__ERROR_CODE__NONE;
    const fr_rpc_api_info *info = fr_rpc_api_lookup(f->api_key);
    if (!info) {
        *code = FIRTH__ERROR_CODE__UNKNOWN_API;
        fr_fail(err, FR_EUNSUPPORTED, "unknown api key %d (this server knows 0..%d)",
                f->api_key, FR_RPC_API_COUNT - 1);
        return NULL;
    }
    /* ApiVersions is how a client learns the versions: every version of it is answered
     * (with this server's newest response), so it must never be refused for its version. */
    bool any_version = info->key == FR_RPC_API_VERSIONS && f->api_version >= 0;
    if (!any_version &&
        (f->api_version < info->min_version || f->api_version > info->max_version)) {
        *code = FIRTH__ERROR_CODE__UNSUPPORTED_VERSION;
        fr_fail(err, FR_EUNSUPPORTED,
                "%s version %d is not supported (this server speaks %d..%d)", info->name,
                f->api_version, info->min_version, info->max_version);
        return NULL;
    }
    return info;
}

int fr_rpc_request_unpack(const fr_rpc_frame *f, ProtobufCMessage **out, Firth__ErrorCode *code,
                          fr_error *err)
{
    Firth__ErrorCode local;
    if (!code) code = &local;
    const fr_rpc_api_info *info = fr_rpc_request_api(f, code, err);
    if (!info) return FR_EUNSUPPORTED;
    char what[48];
    snprintf(what, sizeof what, "%s request", info->name);
    ProtobufCMessage *m = NULL;
    int rc = fr_rpc_unpack(info->request, what, f->body, f->body_len, &m, err);
    if (rc == 0) rc = fr_rpc_request_check(info->key, m, err);
    if (rc < 0) {
        fr_rpc_free(m);
        *code = fr_rpc_code_from_status(rc);
        return rc;
    }
    *out = m;
    return 0;
}

int fr_rpc_response_unpack(fr_rpc_api api, const fr_rpc_frame *f, ProtobufCMessage **out,
                           fr_error *err)
{
    assert(f->direction == FR_RPC_RESPONSE);
    const fr_rpc_api_info *info = fr_rpc_api_lookup((int)api);
    assert(info);
    char what[48];
    snprintf(what, sizeof what, "%s response", info->name);
    if (f->result == FR_RPC_ERROR)
        return fr_rpc_unpack(&firth__error__descriptor, what, f->body, f->body_len, out, err);
    FR_CHECK(f->result != FR_RPC_PART || info->streams, FR_ECORRUPT, err,
             "%s: a PART frame for an api that does not stream", what);
    return fr_rpc_unpack(info->response, what, f->body, f->body_len, out, err);
}
