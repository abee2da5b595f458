/* base_error.c — status-code names and the fr_error helpers. An fr_error is owned by the
 * caller; these functions only write into it, and they always leave msg NUL-terminated. */
#include "base/base.h"

#include <errno.h>
#include <stdio.h>

int fr_fail(fr_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

/* Writes "a: b" into msg, cutting at the message size (a long message is cut, never
 * overflowed). */
static void fr_join(char msg[FR_ERROR_MSG_MAX], const char *a, const char *b)
{
    size_t cap = FR_ERROR_MSG_MAX - 1, n = 0;
    const char *parts[3] = {a, ": ", b};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(parts[i]);
        if (len > cap - n) len = cap - n;
        memmove(msg + n, parts[i], len);
        n += len;
    }
    msg[n] = '\0';
}

static int fr_code_from_errno(int errnum)
{
    switch (errnum) {
    case ENOSPC:
    case EDQUOT:
        return FR_ENOSPC;
    case ENOENT:
        return FR_ENOTFOUND;
    case EEXIST:
        return FR_EEXIST;
    case ENOMEM:
        return FR_ENOMEM;
    default:
        return FR_EIO;
    }
}

int fr_fail_errno(fr_error *err, int errnum, const char *fmt, ...)
{
    int code = fr_code_from_errno(errnum);
    if (err) {
        char prefix[FR_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        char ebuf[128];
        /* The GNU strerror_r returns a pointer that may or may not be ebuf. */
        const char *reason = strerror_r(errnum, ebuf, sizeof ebuf);
        fr_join(err->msg, prefix, reason);
        err->code = code;
    }
    return code;
}

int fr_error_wrap(fr_error *err, const char *fmt, ...)
{
    if (!err) return FR_OK;
    char prefix[FR_ERROR_MSG_MAX];
    char old[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    fr_join(err->msg, prefix, old);
    return err->code;
}

void fr_error_clear(fr_error *err)
{
    if (!err) return;
    err->code = FR_OK;
    err->msg[0] = '\0';
}

const char *fr_strcode(int code)
{
    switch (code) {
    case FR_OK: return "OK";
    case FR_EINVAL: return "EINVAL";
    case FR_ENOMEM: return "ENOMEM";
    case FR_EIO: return "EIO";
    case FR_ENOSPC: return "ENOSPC";
    case FR_ECORRUPT: return "ECORRUPT";
    case FR_ENOTFOUND: return "ENOTFOUND";
    case FR_EEXIST: return "EEXIST";
    case FR_ERANGE: return "ERANGE";
    case FR_ELIMIT: return "ELIMIT";
    case FR_EUNSUPPORTED: return "EUNSUPPORTED";
    case FR_ESYNTAX: return "ESYNTAX";
    case FR_ETYPE: return "ETYPE";
    case FR_ESTATE: return "ESTATE";
    case FR_EDUPLICATE: return "EDUPLICATE";
    case FR_ESEQUENCE: return "ESEQUENCE";
    default: return "EUNKNOWN";
    }
}
