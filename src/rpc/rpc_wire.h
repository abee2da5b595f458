/* rpc_wire.h — reading the protobuf wire format by hand (internal to the rpc module), for
 * the messages whose record batches are left in their frame instead of being copied out by
 * protobuf-c: produce_log and put_kv requests (rpc_requests.c), fetch_log and lookup
 * responses (rpc_fetch.c).
 *
 * Wire format: each field is a varint key (number << 3 | wire type) and a value: a varint
 * (type 0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5). Groups
 * (3, 4) are not protobuf 3 and are refused, as is field number 0. The messages are built
 * as protobuf-c builds them (every part fr_malloc'd, strings NUL-terminated), so that
 * protobuf-c frees them; a field that appears twice is read as protobuf-c reads it (the
 * two must accept the same bodies with the same result): a scalar takes its last value, a
 * string its last value, and a message field is merged the way protobuf-c merges it (see
 * parse_error in rpc_fetch.c).
 *
 * Invariants: never reads outside the bytes given; every length is checked before use. */
#ifndef FIRTH_RPC_WIRE_H
#define FIRTH_RPC_WIRE_H

#include "rpc/rpc.h"

/* The memory one unpack may allocate: as fr_rpc_unpack's, FR_RPC_UNPACK_MEMORY_FACTOR
 * times the body plus FR_RPC_UNPACK_MEMORY_SLACK (a few bytes on the wire can ask for a
 * struct of a hundred). */
typedef struct fr_wire_budget {
    size_t used, limit;
} fr_wire_budget;

/* A span of wire bytes being read; `what` names the message in errors; the budget is the
 * whole unpack's. */
typedef struct fr_wire {
    const uint8_t *p;
    size_t n, at;
    const char *what;
    fr_wire_budget *budget;
} fr_wire;

/* The most memory unpacking a body of n bytes may allocate (rpc_message.c). */
size_t fr_rpc_unpack_limit(size_t n);
/* The api of a request frame, checked before its body is read: known (else UNKNOWN_API),
 * and a version this server speaks (else UNSUPPORTED_VERSION); NULL with *code and err set
 * otherwise (FR_EUNSUPPORTED). rpc_message.c. */
const fr_rpc_api_info *fr_rpc_request_api(const fr_rpc_frame *f, Firth__ErrorCode *code,
                                          fr_error *err);
/* The wire of a whole body of n bytes, with its budget (b, set up here). */
fr_wire fr_wire_start(const uint8_t *p, size_t n, const char *what, fr_wire_budget *b);
/* *out gets size bytes (fr_malloc'd) counted against the budget: FR_ELIMIT past it,
 * FR_ENOMEM. */
int fr_wire_alloc(const fr_wire *w, size_t size, void *out, fr_error *err);

enum { FR_WT_VARINT = 0, FR_WT_I64 = 1, FR_WT_LEN = 2, FR_WT_I32 = 5 };

/* FR_ECORRUPT naming the message, what is wrong and where. */
int fr_wire_corrupt(const fr_wire *w, const char *why, fr_error *err);
int fr_wire_varint(fr_wire *w, uint64_t *v, fr_error *err);
/* A field's key: *field (never 0) and *type. */
int fr_wire_key(fr_wire *w, uint32_t *field, int *type, fr_error *err);
/* A length-delimited value: *sub covers its bytes. */
int fr_wire_len(fr_wire *w, fr_wire *sub, fr_error *err);
/* Skips the value of a field the reader does not read. */
int fr_wire_skip(fr_wire *w, int type, fr_error *err);
int fr_wire_want(const fr_wire *w, int type, int want, fr_error *err);
/* A varint field (its wire type checked), as int64, or truncated to int32 as protobuf-c
 * does. */
int fr_wire_int64(fr_wire *w, int type, int64_t *v, fr_error *err);
int fr_wire_int32(fr_wire *w, int type, int32_t *v, fr_error *err);
/* A bool field, read as protobuf-c reads one: its value's bytes, of any wire type but a
 * group, are true when any has a bit set below its top one. */
int fr_wire_bool(fr_wire *w, int type, protobuf_c_boolean *v, fr_error *err);
/* One occurrence of a repeated int32 field, appended to the array *items of *n (capacity
 * *cap): a varint, or a length-delimited run of them (packed); protobuf-c takes either. */
int fr_wire_int32s(fr_wire *w, int type, int32_t **items, size_t *n, size_t *cap,
                   fr_error *err);
/* One occurrence of a repeated bool field, appended like fr_wire_int32s: as protobuf-c
 * reads it, a single value may also come as 4 or 8 fixed bytes, and a value is true when
 * any of its bytes has a bit set below the top one. */
int fr_wire_bools(fr_wire *w, int type, protobuf_c_boolean **items, size_t *n, size_t *cap,
                  fr_error *err);
/* A string field: a NUL-terminated copy replacing *s (protobuf-c's shared empty string or
 * an earlier copy). */
int fr_wire_string(fr_wire *w, int type, char **s, fr_error *err);
/* A bytes field left in place: *out points into the wire's bytes (not owned). */
int fr_wire_bytes_in_place(fr_wire *w, int type, ProtobufCBinaryData *out, fr_error *err);
/* A TablePath message merged into *path (allocated on first use). */
int fr_wire_path(fr_wire *w, int type, Firth__TablePath **path, fr_error *err);
/* A message's reader of one field: reads the value of `field` (of wire type `type`) from
 * w into the message m, or returns FR_WIRE_UNKNOWN to have it skipped. */
#define FR_WIRE_UNKNOWN 1
typedef int (*fr_wire_field_fn)(fr_wire *w, uint32_t field, int type, void *m, fr_error *err);
/* Reads every field of the message in w with fn. */
int fr_wire_fields(fr_wire w, fr_wire_field_fn fn, void *m, fr_error *err);

/* The next element of a repeated message field (its wire type checked): a new message of
 * type d, initialized, appended to the array *items of *n (capacity *cap) and returned in
 * *out; *sub covers its bytes. */
int fr_wire_element(fr_wire *w, int type, const ProtobufCMessageDescriptor *d, void ***items,
                    size_t *n, size_t *cap, fr_wire *sub, void **out, fr_error *err);

/* rpc_fetch.c: whether m is a response unpacked in place (fetch_log or lookup, holding its
 * frame), and the clearing of its fields that point into the frame before protobuf-c
 * frees it (fr_rpc_free). */
bool fr_rpc_kept(const ProtobufCMessage *m);
void fr_rpc_kept_release(ProtobufCMessage *m);

#endif
