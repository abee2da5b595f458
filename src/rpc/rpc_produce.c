/* rpc_produce.c — unpacking a produce_log request without copying its record batches.
 *
 * protobuf-c copies every bytes field out of the body it unpacks; for produce_log that is
 * every record batch, the bulk of the data path's bytes. This file reads the protobuf wire
 * format of ProduceLogRequest (proto/firth.proto) itself and leaves each ProduceBucket's
 * `records` pointing into the body, which the caller keeps until it frees the message.
 * Everything else is built as protobuf-c would build it (fr_malloc'd, fields it does not
 * know skipped), and the request passes the same checks (fr_rpc_request_check).
 *
 * Wire format: each field is a varint key (number << 3 | wire type) and a value: a varint
 * (type 0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5). Groups
 * (3, 4) are not protobuf 3 and are refused, as is field number 0. A scalar field that
 * appears twice takes its last value; a message field that appears twice is merged, as the
 * protobuf specification says.
 *
 * Invariants: never reads outside the body; every length is checked before it is used. */
#include "rpc/rpc.h"

#include <assert.h>
#include <stdio.h>

typedef struct wire {
    const uint8_t *p;
    size_t n, at;
} wire;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int corrupt(const wire *w, const char *what, fr_error *err)
{
    return fr_fail(err, FR_ECORRUPT, "produce_log request: malformed protobuf body (%s at "
                   "byte %zu of %zu)", what, w->at, w->n);
}

static int get_varint(wire *w, uint64_t *v, fr_error *err)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (w->at >= w->n) return corrupt(w, "truncated varint", err);
        uint8_t b = w->p[w->at++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return corrupt(w, "varint over 10 bytes", err);
}

/* Reads a key: *field and *type. As protobuf-c does (and the two must agree on what they
 * take), a key has at most 5 bytes and its field number keeps the low 32 bits; numbers
 * above the specification's 2^29 - 1 are unknown fields, skipped like any other. */
static int get_key(wire *w, uint32_t *field, int *type, fr_error *err)
{
    size_t start = w->at;
    uint64_t key;
    FR_TRY(get_varint(w, &key, err));
    if (w->at - start > 5) return corrupt(w, "field key over 5 bytes", err);
    *type = (int)(key & 7);
    FR_CHECK((uint32_t)(key >> 3) != 0, FR_ECORRUPT, err,
             "produce_log request: malformed protobuf body (field number 0 at byte %zu)",
             start);
    *field = (uint32_t)(key >> 3);
    return 0;
}

/* A length-delimited value: *sub covers its bytes. */
static int get_len(wire *w, wire *sub, fr_error *err)
{
    uint64_t len;
    FR_TRY(get_varint(w, &len, err));
    if (len > w->n - w->at) return corrupt(w, "length past the end", err);
    *sub = (wire){w->p + w->at, (size_t)len, 0};
    w->at += (size_t)len;
    return 0;
}

/* Skips the value of a field this file does not read. */
static int skip(wire *w, int type, fr_error *err)
{
    uint64_t v;
    wire sub;
    switch (type) {
    case WT_VARINT: return get_varint(w, &v, err);
    case WT_LEN: return get_len(w, &sub, err);
    case WT_I64:
    case WT_I32: {
        size_t k = type == WT_I64 ? 8 : 4;
        if (k > w->n - w->at) return corrupt(w, "truncated fixed-width value", err);
        w->at += k;
        return 0;
    }
    default: return corrupt(w, "unsupported wire type", err);
    }
}

static int want_type(wire *w, int type, int want, fr_error *err)
{
    return type == want ? 0 : corrupt(w, "a field with the wrong wire type", err);
}

/* A string field: a NUL-terminated copy replacing *s. */
static int get_string(wire *w, int type, char **s, fr_error *err)
{
    wire sub;
    FR_TRY(want_type(w, type, WT_LEN, err));
    FR_TRY(get_len(w, &sub, err));
    char *copy = fr_malloc(sub.n + 1);
    FR_CHECK(copy, FR_ENOMEM, err, "produce_log request: out of memory");
    memcpy(copy, sub.p, sub.n);
    copy[sub.n] = '\0';
    /* An unset string is protobuf-c's shared empty string, not ours to free. */
    static const Firth__TablePath unset = FIRTH__TABLE_PATH__INIT;
    if (*s != unset.database) fr_free(*s);
    *s = copy;
    return 0;
}

static int parse_path(wire w, Firth__TablePath *path, fr_error *err)
{
    while (w.at < w.n) {
        uint32_t field;
        int type;
        FR_TRY(get_key(&w, &field, &type, err));
        if (field == 1) FR_TRY(get_string(&w, type, &path->database, err));
        else if (field == 2) FR_TRY(get_string(&w, type, &path->table, err));
        else FR_TRY(skip(&w, type, err));
    }
    return 0;
}

static int parse_bucket(wire w, Firth__ProduceBucket *b, fr_error *err)
{
    while (w.at < w.n) {
        uint32_t field;
        int type;
        uint64_t v;
        wire sub;
        FR_TRY(get_key(&w, &field, &type, err));
        switch (field) {
        case 1:
            FR_TRY(want_type(&w, type, WT_VARINT, err));
            FR_TRY(get_varint(&w, &v, err));
            b->partition_id = (int64_t)v;
            break;
        case 2:
            FR_TRY(want_type(&w, type, WT_VARINT, err));
            FR_TRY(get_varint(&w, &v, err));
            b->bucket = (int32_t)(uint32_t)v;
            break;
        case 3:
            FR_TRY(want_type(&w, type, WT_LEN, err));
            FR_TRY(get_len(&w, &sub, err));
            b->records.data = sub.n ? (uint8_t *)sub.p : NULL; /* in place: not owned */
            b->records.len = sub.n;
            break;
        default:
            FR_TRY(skip(&w, type, err));
        }
    }
    return 0;
}

/* Adds a new, initialized bucket entry to m. */
static int add_bucket(Firth__ProduceLogRequest *m, size_t *cap, Firth__ProduceBucket **out,
                      fr_error *err)
{
    if (m->n_buckets == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        Firth__ProduceBucket **nb = fr_realloc(m->buckets, ncap * sizeof *nb);
        FR_CHECK(nb, FR_ENOMEM, err, "produce_log request: out of memory");
        m->buckets = nb;
        *cap = ncap;
    }
    Firth__ProduceBucket *b = fr_malloc(sizeof *b);
    FR_CHECK(b, FR_ENOMEM, err, "produce_log request: out of memory");
    firth__produce_bucket__init(b);
    m->buckets[m->n_buckets++] = b;
    *out = b;
    return 0;
}

static int parse_request(wire w, Firth__ProduceLogRequest *m, fr_error *err)
{
    size_t cap = 0;
    while (w.at < w.n) {
        uint32_t field;
        int type;
        uint64_t v;
        wire sub;
        Firth__ProduceBucket *b = NULL;
        FR_TRY(get_key(&w, &field, &type, err));
        switch (field) {
        case 1:
            FR_TRY(want_type(&w, type, WT_LEN, err));
            FR_TRY(get_len(&w, &sub, err));
            if (!m->path) {
                m->path = fr_malloc(sizeof *m->path);
                FR_CHECK(m->path, FR_ENOMEM, err, "produce_log request: out of memory");
                firth__table_path__init(m->path);
            }
            FR_TRY(parse_path(sub, m->path, err));
            break;
        case 2:
        case 3:
            FR_TRY(want_type(&w, type, WT_VARINT, err));
            FR_TRY(get_varint(&w, &v, err));
            if (field == 2) m->table_id = (int64_t)v;
            else m->writer_id = (int64_t)v;
            break;
        case 4:
            FR_TRY(want_type(&w, type, WT_LEN, err));
            FR_TRY(get_len(&w, &sub, err));
            FR_TRY(add_bucket(m, &cap, &b, err));
            FR_TRY(parse_bucket(sub, b, err));
            break;
        default:
            FR_TRY(skip(&w, type, err));
        }
    }
    return 0;
}

void fr_rpc_produce_free(Firth__ProduceLogRequest *m)
{
    if (!m) return;
    /* The records point into the body: not the message's to free. */
    for (size_t i = 0; i < m->n_buckets; i++) {
        if (!m->buckets[i]) continue;
        m->buckets[i]->records.data = NULL;
        m->buckets[i]->records.len = 0;
    }
    fr_rpc_free(&m->base);
}

int fr_rpc_produce_unpack(const fr_rpc_frame *f, Firth__ProduceLogRequest **out,
                          Firth__ErrorCode *code, fr_error *err)
{
    assert(f->direction == FR_RPC_REQUEST && f->api_key == FR_RPC_PRODUCE_LOG);
    Firth__ErrorCode local;
    if (!code) code = &local;
    *code = FIRTH__ERROR_CODE__NONE;
    const fr_rpc_api_info *info = fr_rpc_api_lookup(FR_RPC_PRODUCE_LOG);
    if (f->api_version < info->min_version || f->api_version > info->max_version) {
        *code = FIRTH__ERROR_CODE__UNSUPPORTED_VERSION;
        return fr_fail(err, FR_EUNSUPPORTED,
                       "%s version %d is not supported (this server speaks %d..%d)", info->name,
                       f->api_version, info->min_version, info->max_version);
    }
    Firth__ProduceLogRequest *m = fr_malloc(sizeof *m);
    if (!m) {
        *code = fr_rpc_code_from_status(FR_ENOMEM);
        return fr_fail(err, FR_ENOMEM, "produce_log request: out of memory");
    }
    firth__produce_log_request__init(m);
    int rc = parse_request((wire){f->body, f->body_len, 0}, m, err);
    if (rc == 0) rc = fr_rpc_request_check(FR_RPC_PRODUCE_LOG, &m->base, err);
    if (rc < 0) {
        fr_rpc_produce_free(m);
        *code = fr_rpc_code_from_status(rc);
        return rc;
    }
    *out = m;
    return 0;
}
