/* base_logger.c — leveled logging to stderr.
 *
 * Each line is formatted into a stack buffer and written with one write(2), so lines from
 * several threads never interleave. The level is an atomic; until fr_log_set_level is
 * called it comes from the environment variable FIRTH_LOG_LEVEL (read once, at the first
 * line logged), else the default level (INFO, or what fr_log_set_default_level chose).
 * Lines longer than the buffer are cut and end in "...". No allocation happens here, so
 * logging works while allocation failures are being injected. */
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define FR_LOG_LINE_BYTES_MAX 4096

static _Atomic int fr_log_level_cur = -1; /* -1: not decided yet */
static _Atomic int fr_log_level_default = FR_LOG_INFO;
static pthread_once_t fr_log_env_once = PTHREAD_ONCE_INIT;

static void fr_log_read_env(void)
{
    fr_log_level dflt = (fr_log_level)atomic_load(&fr_log_level_default);
    fr_log_level lvl = dflt;
    const char *env = getenv("FIRTH_LOG_LEVEL");
    if (env && *env && fr_log_level_parse(env, &lvl) < 0) lvl = dflt;
    int unset = -1;
    atomic_compare_exchange_strong(&fr_log_level_cur, &unset, (int)lvl);
}

void fr_log_set_level(fr_log_level level)
{
    atomic_store(&fr_log_level_cur, (int)level);
}

void fr_log_set_default_level(fr_log_level level)
{
    atomic_store(&fr_log_level_default, (int)level);
}

int fr_log_level_parse(const char *s, fr_log_level *out)
{
    static const char *const names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (fr_log_level)i;
            return FR_OK;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = FR_LOG_WARN;
        return FR_OK;
    }
    return FR_EINVAL;
}

static fr_log_level fr_log_level_get(void)
{
    int lvl = atomic_load(&fr_log_level_cur);
    if (lvl < 0) {
        pthread_once(&fr_log_env_once, fr_log_read_env);
        lvl = atomic_load(&fr_log_level_cur);
    }
    return (fr_log_level)lvl;
}

void fr_logmsg(fr_log_level level, const char *fmt, ...)
{
    static const char *const tags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
    if (level < FR_LOG_DEBUG || level > FR_LOG_ERROR) return;
    if (level < fr_log_level_get()) return;

    char line[FR_LOG_LINE_BYTES_MAX];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, tags[level]);
    size_t len = n > 0 ? (size_t)n : 0;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + len, sizeof line - len, fmt, ap);
    va_end(ap);
    if (m < 0) m = 0;
    if ((size_t)m >= sizeof line - len) {
        len = sizeof line - 5;
        memcpy(line + len, "...", 3);
        len += 3;
    } else {
        len += (size_t)m;
    }
    line[len++] = '\n';
    /* A short write to stderr is not worth retrying beyond EINTR; logging never fails. */
    const char *p = line;
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        p += w;
        len -= (size_t)w;
    }
}
