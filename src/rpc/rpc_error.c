/* rpc_error.c — error codes on the wire: the mapping between firth's FR_E* statuses and
 * proto's ErrorCode, their names, and the Error message built from an fr_error and read
 * back into one.
 *
 * Invariant: statuses FR_EINVAL..FR_ESEQUENCE are codes 1..15 (asserted below), so the
 * mapping of those is a negation both ways and survives a round trip. */
#include "rpc/rpc.h"

#include <stdio.h>
#include <stdlib.h>

_Static_assert(FIRTH__ERROR_CODE__INVALID == -FR_EINVAL, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__NO_MEMORY == -FR_ENOMEM, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__IO_ERROR == -FR_EIO, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__NO_SPACE == -FR_ENOSPC, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__CORRUPT == -FR_ECORRUPT, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__NOT_FOUND == -FR_ENOTFOUND, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__ALREADY_EXISTS == -FR_EEXIST, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__OUT_OF_RANGE == -FR_ERANGE, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__LIMIT_EXCEEDED == -FR_ELIMIT, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__UNSUPPORTED == -FR_EUNSUPPORTED, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__SYNTAX_ERROR == -FR_ESYNTAX, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__TYPE_MISMATCH == -FR_ETYPE, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__BAD_STATE == -FR_ESTATE, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__DUPLICATE == -FR_EDUPLICATE, "wire codes follow FR_E*");
_Static_assert(FIRTH__ERROR_CODE__OUT_OF_ORDER == -FR_ESEQUENCE, "wire codes follow FR_E*");

Firth__ErrorCode fr_rpc_code_from_status(int status)
{
    if (status == 0) return FIRTH__ERROR_CODE__NONE;
    if (status <= FR_EINVAL && status >= FR_ESEQUENCE) return (Firth__ErrorCode)-status;
    return FIRTH__ERROR_CODE__UNKNOWN_ERROR;
}

int fr_rpc_status_from_code(int code)
{
    if (code == FIRTH__ERROR_CODE__NONE) return 0;
    if (code >= -FR_EINVAL && code <= -FR_ESEQUENCE) return -code;
    switch (code) {
    case FIRTH__ERROR_CODE__UNKNOWN_API:
    case FIRTH__ERROR_CODE__UNSUPPORTED_VERSION: return FR_EUNSUPPORTED;
    case FIRTH__ERROR_CODE__NOT_AUTHENTICATED:
    case FIRTH__ERROR_CODE__SHUTTING_DOWN: return FR_ESTATE;
    case FIRTH__ERROR_CODE__AUTHENTICATION_FAILED: return FR_EINVAL;
    default: return FR_EIO;
    }
}

const char *fr_rpc_code_name(int code)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&firth__error_code__descriptor, code);
    return v ? v->name : "UNKNOWN_ERROR";
}

/* Finds "line N, column M: " in msg (SQL errors start with it; a caller may have prefixed
 * context) and returns its numbers, or false. */
static bool fr_rpc_find_position(const char *msg, int *line, int *column)
{
    for (const char *s = strstr(msg, "line "); s; s = strstr(s + 1, "line ")) {
        char *end;
        long l = strtol(s + 5, &end, 10);
        if (end == s + 5 || l <= 0 || l > INT32_MAX || strncmp(end, ", column ", 9) != 0) continue;
        const char *c = end + 9;
        long col = strtol(c, &end, 10);
        if (end == c || col <= 0 || col > INT32_MAX || *end != ':') continue;
        *line = (int)l;
        *column = (int)col;
        return true;
    }
    return false;
}

void fr_rpc_error_set(Firth__Error *e, const fr_error *err)
{
    int status = err->code < 0 ? err->code : FR_EIO;
    e->code = fr_rpc_code_from_status(status);
    e->message = (char *)err->msg;
    int line = 0, column = 0;
    if (fr_rpc_find_position(err->msg, &line, &column)) {
        e->line = line;
        e->column = column;
    }
}

int fr_rpc_error_get(const Firth__Error *e, const char *what, fr_error *err)
{
    const char *msg = e->message && e->message[0] ? e->message : fr_rpc_code_name(e->code);
    if (e->code == FIRTH__ERROR_CODE__NONE)
        return fr_fail(err, FR_EIO, "%s: an error without a code: %s", what, msg);
    return fr_fail(err, fr_rpc_status_from_code(e->code), "%s: %s", what, msg);
}
