/* rpc.h — firth's native protocol: frames, the incremental frame reader, the api table, and
 * packing and unpacking of the protobuf bodies defined in proto/firth.proto (compiled by
 * protoc-c into firth.pb-c.h, which this header includes: the server and the client build
 * and read the generated message structs directly). docs/PROTOCOL.md is the reference.
 *
 * A frame on the wire (all integers big-endian):
 *   request:  int32 length | int16 api key | int16 api version | int32 request id | body
 *   response: int32 length | int8 result   | int32 request id  | body
 * `length` counts the bytes after itself and is at most frame_bytes_max.
 *
 * Invariants: no function here reads outside the bytes it is given; every length from the
 * wire is checked against the input and a named limit before anything is allocated for it;
 * the frame reader never holds more than 4 + frame_bytes_max bytes; an unpacked message
 * has passed the protobuf decoder and the checks of its api (fr_rpc_request_unpack).
 *
 * Thread: everything is reentrant; a reader or a message belongs to one thread at a time. */
#ifndef FIRTH_RPC_H
#define FIRTH_RPC_H

#include "base/base.h"

#include <sys/uio.h>
#include "firth.pb-c.h"

/* ---- limits ---------------------------------------------------------------------------- */

#define FR_RPC_FRAME_BYTES_MAX_DEFAULT (100 << 20) /* the `length` field's default limit */
#define FR_RPC_FRAME_BYTES_MIN 1024                /* the least frame_bytes_max allowed */
#define FR_RPC_REQUEST_HEADER_BYTES 12             /* length, api key, version, request id */
#define FR_RPC_RESPONSE_HEADER_BYTES 9             /* length, result, request id */
#define FR_RPC_READ_CHUNK_BYTES (64 << 10)         /* the least the reader offers a read */
#define FR_RPC_READ_LEARN_BYTES (4 << 20)          /* the most it offers, from a frame's size */

/* Limits on what a request may hold (checked by fr_rpc_request_unpack). */
#define FR_RPC_ITEMS_MAX 65536            /* buckets, tables, keys batches... per request */
#define FR_RPC_NAME_BYTES_MAX 255         /* a database, table or column name */
#define FR_RPC_COLUMNS_MAX 4096           /* projection and target column indexes */
#define FR_RPC_OPTIONS_MAX 1024           /* table options of a create */
#define FR_RPC_OPTION_BYTES_MAX 65536     /* one option key or value */
#define FR_RPC_JSON_BYTES_MAX (16 << 20)  /* a schema as JSON */
#define FR_RPC_SQL_BYTES_MAX (16 << 20)   /* SQL text, and a fetch filter */
#define FR_RPC_RECORDS_BYTES_MAX (64 << 20) /* one record batch (FR_RB_BYTES_MAX) */
#define FR_RPC_WAIT_MS_MAX 600000         /* a fetch's max_wait_ms: 10 minutes */
#define FR_RPC_AUTH_BYTES_MAX 65536
/* Tiered offsets in a lake_snapshot answer, which a client takes at most: the most one lake
 * snapshot's summary may hold (the lake's FR_ICE_OFFSETS_MAX). */
#define FR_RPC_LAKE_OFFSETS_MAX 1000000
/* Unpacking may allocate at most UNPACK_MEMORY_FACTOR * body bytes + UNPACK_MEMORY_SLACK:
 * protobuf lets a few bytes on the wire (an empty sub-message) become a struct of a hundred
 * in memory, and a frame of 100 MB must not become gigabytes. */
#define FR_RPC_UNPACK_MEMORY_FACTOR 8
#define FR_RPC_UNPACK_MEMORY_SLACK (1 << 20)

/* ---- apis ------------------------------------------------------------------------------ */

/* The api key of a request header; the same numbers as proto's ApiKey (asserted). */
typedef enum fr_rpc_api {
    FR_RPC_API_VERSIONS = 0,
    FR_RPC_METADATA = 1,
    FR_RPC_CREATE_DATABASE = 2,
    FR_RPC_DROP_DATABASE = 3,
    FR_RPC_LIST_DATABASES = 4,
    FR_RPC_CREATE_TABLE = 5,
    FR_RPC_DROP_TABLE = 6,
    FR_RPC_LIST_TABLES = 7,
    FR_RPC_GET_TABLE_INFO = 8,
    FR_RPC_PRODUCE_LOG = 9,
    FR_RPC_PUT_KV = 10,
    FR_RPC_FETCH_LOG = 11,
    FR_RPC_LOOKUP = 12,
    FR_RPC_PREFIX_LOOKUP = 13,
    FR_RPC_LIST_OFFSETS = 14,
    FR_RPC_EXECUTE_SQL = 15,
    FR_RPC_AUTHENTICATE = 16,
    FR_RPC_LAKE_SNAPSHOT = 17,
    FR_RPC_API_COUNT
} fr_rpc_api;

/* What the protocol knows of an api. Static data: lives forever. */
typedef struct fr_rpc_api_info {
    fr_rpc_api key;
    const char *name;            /* "produce_log" */
    int16_t min_version;
    int16_t max_version;
    const ProtobufCMessageDescriptor *request;
    const ProtobufCMessageDescriptor *response;
    bool streams;                /* the response may come as PART frames before the last */
} fr_rpc_api_info;

/* The api of a key, or NULL when the key is unknown (a server answers UNKNOWN_API). */
const fr_rpc_api_info *fr_rpc_api_lookup(int api_key);
/* "produce_log"; "api 77" for an unknown key (a static string for known keys, else one
 * in a thread-local buffer that lives until the next call on the thread). */
const char *fr_rpc_api_name(int api_key);

/* ---- error codes ----------------------------------------------------------------------- */

/* The wire code of an FR_E* status (0 -> NONE; FR_EINVAL -> INVALID ...). */
Firth__ErrorCode fr_rpc_code_from_status(int status);
/* The FR_E* status of a wire code: 1..14 map back exactly; UNKNOWN_API and
 * UNSUPPORTED_VERSION -> FR_EUNSUPPORTED; NOT_AUTHENTICATED, SHUTTING_DOWN -> FR_ESTATE;
 * AUTHENTICATION_FAILED -> FR_EINVAL; NONE -> 0; anything else -> FR_EIO. */
int fr_rpc_status_from_code(int code);
/* "INVALID", "UNKNOWN_API"; "UNKNOWN_ERROR" for a code not in the enum. */
const char *fr_rpc_code_name(int code);

/* Fills e (an Error message the caller initialized; its strings point into err, which must
 * outlive e) from a failure: code, message, and for a message holding "line N, column M:"
 * (SQL errors, perhaps after some context), line and column. */
void fr_rpc_error_set(Firth__Error *e, const fr_error *err);
/* Turns an Error from the wire into an fr_error: the status of its code and its message,
 * prefixed with what ("produce_log: "). Returns the (negative) status; an Error whose code
 * is NONE still fails, as FR_EIO ("an error without a code"). */
int fr_rpc_error_get(const Firth__Error *e, const char *what, fr_error *err);

/* ---- frames ---------------------------------------------------------------------------- */

typedef enum fr_rpc_direction {
    FR_RPC_REQUEST,  /* client to server */
    FR_RPC_RESPONSE, /* server to client */
} fr_rpc_direction;

/* A response's result type (int8 on the wire). A request is answered by zero or more PART
 * frames (streaming apis only) and then exactly one SUCCESS or ERROR frame. */
typedef enum fr_rpc_result {
    FR_RPC_SUCCESS = 0, /* body: the api's response message; the request is done */
    FR_RPC_ERROR = 1,   /* body: an Error message; the request is done */
    FR_RPC_PART = 2,    /* body: the api's response message; more frames follow */
} fr_rpc_result;

/* A response with request id -1 and result ERROR concerns the connection (a bad frame):
 * the server closes it after sending that frame. Requests carry ids >= 0. */
#define FR_RPC_CONNECTION_REQUEST_ID (-1)

/* A decoded frame. body points into the bytes it was decoded from. */
typedef struct fr_rpc_frame {
    fr_rpc_direction direction;
    int16_t api_key;      /* requests */
    int16_t api_version;  /* requests */
    fr_rpc_result result; /* responses */
    int32_t request_id;
    const uint8_t *body;
    size_t body_len;
} fr_rpc_frame;

static inline size_t fr_rpc_header_bytes(fr_rpc_direction d) {
    return d == FR_RPC_REQUEST ? FR_RPC_REQUEST_HEADER_BYTES : FR_RPC_RESPONSE_HEADER_BYTES;
}

/* Checks a frame_bytes_max: within FR_RPC_FRAME_BYTES_MIN..INT32_MAX (FR_EINVAL), so that
 * an error frame always fits. */
int fr_rpc_check_frame_limit(int64_t frame_bytes_max, fr_error *err);

/* Writes a frame header for body_len bytes of body. FR_ELIMIT when the frame's length field
 * would exceed frame_bytes_max; FR_EINVAL for a negative request id in a request, a result
 * out of range, or request id -1 with another result than ERROR. */
int fr_rpc_request_header_encode(uint8_t out[FR_RPC_REQUEST_HEADER_BYTES], int api_key,
                                 int api_version, int32_t request_id, size_t body_len,
                                 int64_t frame_bytes_max, fr_error *err);
int fr_rpc_response_header_encode(uint8_t out[FR_RPC_RESPONSE_HEADER_BYTES],
                                  fr_rpc_result result, int32_t request_id, size_t body_len,
                                  int64_t frame_bytes_max, fr_error *err);

/* Reads the length prefix at p[0..4): *length is the count of bytes after it. FR_ECORRUPT
 * for a negative length or one shorter than the rest of the header, FR_ELIMIT above
 * frame_bytes_max; messages give the length and the limit. */
int fr_rpc_frame_length(fr_rpc_direction d, const uint8_t p[4], int64_t frame_bytes_max,
                        int32_t *length, fr_error *err);
/* Decodes one whole frame: p holds exactly 4 + length bytes. Checks the length as above
 * and the header fields: FR_ECORRUPT for a negative request id in a request, an unknown
 * result type, or a request id of -1 on a response that is not an ERROR. The api key and
 * version are not checked here (see fr_rpc_request_unpack): a server answers a well-framed
 * request for an unknown api with an error and keeps the connection. */
int fr_rpc_frame_decode(fr_rpc_direction d, const uint8_t *p, size_t n,
                        int64_t frame_bytes_max, fr_rpc_frame *out, fr_error *err);

/* Appends a whole request frame (header and packed body) to out. FR_ELIMIT when it does not
 * fit frame_bytes_max. body's descriptor must be the api's request (asserted). */
int fr_rpc_write_request(fr_buf *out, fr_rpc_api api, int api_version, int32_t request_id,
                         const ProtobufCMessage *body, int64_t frame_bytes_max,
                         fr_error *err);
/* A frame as a list of pieces: large bytes fields (record batches) are referenced
 * where they are, not copied; the rest is copied into `copied`. iov[0..niov) is the whole
 * frame, to hand to writev/sendmsg while the referenced bytes live. */
typedef struct fr_rpc_gather_part_t {
    size_t off;          /* in copied, when ext is NULL */
    const uint8_t *ext;  /* referenced bytes, or NULL */
    size_t len;
} fr_rpc_gather_part_t;
typedef struct fr_rpc_gather {
    fr_buf copied;
    fr_rpc_gather_part_t *parts;
    int nparts, cap;
    size_t total;        /* bytes of the frame */
    struct iovec *iov;
    int niov;
} fr_rpc_gather;
void fr_rpc_gather_init(fr_rpc_gather *g);
void fr_rpc_gather_free(fr_rpc_gather *g);
/* fr_rpc_write_request into an empty g (fr_rpc_gather_init), with the same bytes on the wire;
 * body's bytes fields must live, unchanged, as long as g is used. */
int fr_rpc_write_request_gather(fr_rpc_gather *g, fr_rpc_api api, int api_version,
                                int32_t request_id, const ProtobufCMessage *body,
                                int64_t frame_bytes_max, fr_error *err);
/* fr_rpc_write_response into an empty g, the same way (a fetch's record batches are sent
 * from the buffers they were read into). */
int fr_rpc_write_response_gather(fr_rpc_gather *g, fr_rpc_result result, int32_t request_id,
                                 const ProtobufCMessage *body, int64_t frame_bytes_max,
                                 fr_error *err);
/* Appends a whole response frame: result SUCCESS or PART with the api's response message,
 * ERROR with an Error message (asserted). FR_ELIMIT when it does not fit frame_bytes_max. */
int fr_rpc_write_response(fr_buf *out, fr_rpc_result result, int32_t request_id,
                          const ProtobufCMessage *body, int64_t frame_bytes_max,
                          fr_error *err);
/* Appends an ERROR frame for request_id describing failure (see fr_rpc_error_set) with
 * code, or with the code of failure's status when code is NONE (pass the code that
 * fr_rpc_request_unpack gave: UNKNOWN_API is not a status). It always fits a valid
 * frame_bytes_max. */
int fr_rpc_write_error(fr_buf *out, int32_t request_id, Firth__ErrorCode code,
                       const fr_error *failure, fr_error *err);

/* ---- the incremental frame reader ------------------------------------------------------ */

/* Cuts a byte stream (from a socket) into frames. Two ways to give it bytes:
 *   - fr_rpc_reader_space + fr_rpc_reader_commit: read straight into its buffer (libuv's
 *     alloc_cb and read_cb);
 *   - fr_rpc_reader_feed: copy bytes in.
 * and one way to take frames: fr_rpc_reader_next, until it returns 0.
 *
 * Memory: an empty reader offers the size of the last whole frame (a read chunk at least,
 * FR_RPC_READ_LEARN_BYTES at most); the buffer grows with the frame being read (a reader
 * of requests doubles it, up to 4 + its length; a reader of responses goes to 4 + its
 * length at once) and never past 4 + frame_bytes_max; a length over the limit is
 * refused as soon as its four bytes arrive. When every byte has been taken, a buffer larger
 * than that offer is given back at the next space/feed, and fr_rpc_reader_trim gives back any buffer (for idle
 * connections). Space is 0 only when whole frames wait to be taken: a caller that stops
 * taking frames (to bound work in flight) stops the flow of bytes with it.
 *
 * After a framing error the reader is failed: every later call returns the same error. */
typedef struct fr_rpc_reader fr_rpc_reader;

int fr_rpc_reader_new(fr_rpc_direction d, int64_t frame_bytes_max, fr_rpc_reader **out,
                      fr_error *err);
void fr_rpc_reader_free(fr_rpc_reader *r); /* NULL is fine */

/* Where the next bytes should go: *p and *n (n may be 0, see above). The space lives until
 * the next call on the reader. Errors: a framing error found in the bytes buffered
 * (FR_ECORRUPT, FR_ELIMIT), FR_ENOMEM. Frames returned by fr_rpc_reader_next before this
 * call are no longer valid after it. */
int fr_rpc_reader_space(fr_rpc_reader *r, uint8_t **p, size_t *n, fr_error *err);
/* Says that n bytes were written at the space (n <= the space's size, asserted). */
void fr_rpc_reader_commit(fr_rpc_reader *r, size_t n);
/* Copies as many of p[0..n) in as there is space for; *used tells how many (less than n
 * only when whole frames wait to be taken). Invalidates frames as fr_rpc_reader_space. */
int fr_rpc_reader_feed(fr_rpc_reader *r, const uint8_t *p, size_t n, size_t *used,
                       fr_error *err);
/* Takes the next whole frame: returns 1 and fills *out (body valid until the next
 * space/feed/trim/free), 0 when more bytes are needed, or a negative framing error. */
int fr_rpc_reader_next(fr_rpc_reader *r, fr_rpc_frame *out, fr_error *err);
/* Bytes received and not yet taken as frames, and bytes of buffer held. */
size_t fr_rpc_reader_buffered(const fr_rpc_reader *r);
size_t fr_rpc_reader_capacity(const fr_rpc_reader *r);
/* Keeps the body of frame f (non-empty), the one fr_rpc_reader_next just returned, beyond
 * the reader's next read: returns memory the caller owns (fr_free) and points *body at the
 * body within it. When the reader holds nothing but f and f fills at least half of its
 * buffer, that is the buffer itself (the reader starts afresh: a large frame is not copied
 * again); otherwise a copy of the body. NULL when out of memory. */
uint8_t *fr_rpc_reader_keep(fr_rpc_reader *r, const fr_rpc_frame *f, uint8_t **body);
/* The reader's buffers come from pool and go back to it rather than to the allocator; the
 * memory fr_rpc_reader_keep hands out may be given back too (fr_bufpool_give of a buffer
 * whose cap is the size fr_rpc_reader_kept_cap says). pool must outlive the reader. */
void fr_rpc_reader_set_pool(fr_rpc_reader *r, fr_bufpool *pool);
/* The capacity of memory fr_rpc_reader_keep returned for frame f: the reader's whole buffer
 * or the copy's size. Call it right after the keep, with the frame it was given. */
size_t fr_rpc_reader_kept_cap(const fr_rpc_reader *r);
/* Gives the buffer back when nothing is buffered. Invalidates frames. */
void fr_rpc_reader_trim(fr_rpc_reader *r);

/* ---- message bodies -------------------------------------------------------------------- */

/* Packs m and appends it to out. */
int fr_rpc_pack(const ProtobufCMessage *m, fr_buf *out, fr_error *err);

/* Unpacks p[0..n) as a message of descriptor d, with fr_malloc and the memory bound above.
 * *out is the caller's (fr_rpc_free). Malformed protobuf is FR_ECORRUPT naming `what`
 * ("produce_log request: malformed protobuf body of 17 bytes"); the memory bound
 * FR_ELIMIT; allocation failure FR_ENOMEM. */
int fr_rpc_unpack(const ProtobufCMessageDescriptor *d, const char *what, const uint8_t *p,
                  size_t n, ProtobufCMessage **out, fr_error *err);
/* Frees an unpacked message (NULL is fine). Only for messages from fr_rpc_unpack and the
 * functions below: messages built by hand are the builder's to free. */
void fr_rpc_free(ProtobufCMessage *m);

/* Unpacks the body of a request frame for its api: the api must be known (FR_EUNSUPPORTED,
 * *code UNKNOWN_API) and the version within its range (FR_EUNSUPPORTED, *code
 * UNSUPPORTED_VERSION; api_versions takes any version >= 0); the body must be well-formed (as fr_rpc_unpack) and pass the api's
 * checks: names present and within FR_RPC_NAME_BYTES_MAX, counts within FR_RPC_ITEMS_MAX,
 * buckets >= 0, partition ids >= -1, offsets >= 0, column indexes in range, records
 * within FR_RPC_RECORDS_BYTES_MAX, enums known, waits within FR_RPC_WAIT_MS_MAX
 * (FR_EINVAL or FR_ELIMIT, naming the api and the item). code (may be NULL) receives the
 * wire code to answer with. The message type is the api's request (cast it:
 * (Firth__ProduceLogRequest *)msg). */
int fr_rpc_request_unpack(const fr_rpc_frame *f, ProtobufCMessage **out,
                          Firth__ErrorCode *code, fr_error *err);
/* Whether api's requests carry record batches that fr_rpc_request_unpack_in_place leaves
 * in place: produce_log and put_kv. */
bool fr_rpc_request_in_place(fr_rpc_api api);
/* fr_rpc_request_unpack for a produce_log or put_kv request, without copying its record
 * batches: each bucket's records point into f->body, which must live, unchanged, as long
 * as the message. The same checks and errors; free the message with
 * fr_rpc_request_free_in_place, never fr_rpc_free (rpc_requests.c). */
int fr_rpc_request_unpack_in_place(const fr_rpc_frame *f, ProtobufCMessage **out,
                                   Firth__ErrorCode *code, fr_error *err);
void fr_rpc_request_free_in_place(ProtobufCMessage *m);
/* fr_rpc_response_unpack for a SUCCESS frame of fetch_log, without copying its record
 * batches: each bucket's records point into f->body, which lies in `block` (fr_malloc'd
 * memory of `cap` bytes that the message takes over, whatever the outcome; NULL when the
 * body is empty). Free the message with fr_rpc_free, which frees the block with it
 * (rpc_fetch.c). Errors: FR_ECORRUPT for a malformed body, FR_ELIMIT, FR_ENOMEM. */
int fr_rpc_fetch_unpack(const fr_rpc_frame *f, uint8_t *block, size_t cap,
                        Firth__FetchLogResponse **out, fr_error *err);
/* The same for a SUCCESS frame of lookup: each bucket's rows point into the block. */
int fr_rpc_lookup_unpack(const fr_rpc_frame *f, uint8_t *block, size_t cap,
                         Firth__LookupResponse **out, fr_error *err);
/* Takes the block back from a message of fr_rpc_fetch_unpack or fr_rpc_lookup_unpack, once
 * its batches are no longer needed: the fields that pointed into it are emptied, and the
 * block (of *cap bytes) is the caller's. NULL for any other message, or when the body was
 * empty. The message is still to be freed with fr_rpc_free. */
uint8_t *fr_rpc_kept_take(ProtobufCMessage *m, size_t *cap);
/* Unpacks the body of a response frame to a request of api: the api's response message for
 * SUCCESS and PART (PART only for an api that streams: FR_ECORRUPT otherwise), an
 * Firth__Error for ERROR. */
int fr_rpc_response_unpack(fr_rpc_api api, const fr_rpc_frame *f, ProtobufCMessage **out,
                           fr_error *err);
/* The checks of fr_rpc_request_unpack alone, for a request message of api built in this
 * process (a client checks what it sends). */
int fr_rpc_request_check(fr_rpc_api api, const ProtobufCMessage *m, fr_error *err);

#endif
