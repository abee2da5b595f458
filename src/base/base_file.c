/* base_file.c — durable file helpers: directory creation, atomic whole-file replacement,
 * bounded whole-file reads and tree removal. Every system call error becomes an fr_error
 * naming the path. */
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define FR_PATH_BYTES_MAX 4096

int fr_mkdirs(const char *path, fr_error *err)
{
    size_t len = strlen(path);
    FR_CHECK(len > 0 && len < FR_PATH_BYTES_MAX, FR_EINVAL, err,
             "mkdir: path of %zu bytes is empty or too long", len);
    char buf[FR_PATH_BYTES_MAX];
    memcpy(buf, path, len + 1);
    /* Create each prefix ending before a '/', then the whole path. */
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        if (buf[i - 1] == '/') continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return fr_fail_errno(err, errno, "mkdir %s", buf);
        buf[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0) return fr_fail_errno(err, errno, "stat %s", path);
    FR_CHECK(S_ISDIR(st.st_mode), FR_EEXIST, err, "mkdir %s: exists and is not a directory",
             path);
    return FR_OK;
}

int fr_fsync_dir(const char *dir, fr_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fr_fail_errno(err, errno, "open directory %s", dir);
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        return fr_fail_errno(err, e, "fsync directory %s", dir);
    }
    close(fd);
    return FR_OK;
}

static int fr_write_all(int fd, const void *data, size_t n, const char *path, fr_error *err)
{
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "write %s", path);
        }
        p += w;
        n -= (size_t)w;
    }
    return FR_OK;
}

int fr_write_file_atomic(const char *path, const void *data, size_t n, fr_error *err)
{
    char tmp[FR_PATH_BYTES_MAX];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FR_CHECK(len > 0 && (size_t)len < sizeof tmp, FR_EINVAL, err, "path too long: %s", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fr_fail_errno(err, errno, "create %s", tmp);
    int rc = fr_write_all(fd, data, n, tmp, err);
    if (rc == FR_OK && fsync(fd) != 0) rc = fr_fail_errno(err, errno, "fsync %s", tmp);
    if (close(fd) != 0 && rc == FR_OK) rc = fr_fail_errno(err, errno, "close %s", tmp);
    if (rc == FR_OK && rename(tmp, path) != 0)
        rc = fr_fail_errno(err, errno, "rename %s to %s", tmp, path);
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    char dir[FR_PATH_BYTES_MAX];
    memcpy(dir, path, strlen(path) + 1);
    return fr_fsync_dir(dirname(dir), err);
}

int fr_read_file(const char *path, size_t max_bytes, uint8_t **out, size_t *len, fr_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fr_fail_errno(err, errno, "open %s", path);
    fr_buf b;
    fr_buf_init(&b);
    int rc = FR_OK;
    for (;;) {
        FR_GOTO(fr_buf_reserve(&b, 65536, err));
        ssize_t r = read(fd, b.data + b.len, b.cap - b.len);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = fr_fail_errno(err, errno, "read %s", path);
            goto fail;
        }
        if (r == 0) break;
        b.len += (size_t)r;
        if (b.len > max_bytes) {
            rc = fr_fail(err, FR_ELIMIT, "file %s is larger than the limit of %zu bytes", path,
                         max_bytes);
            goto fail;
        }
    }
    close(fd);
    *out = fr_buf_steal(&b, len);
    if (!*out) return fr_fail(err, FR_ENOMEM, "out of memory reading %s", path);
    return FR_OK;
fail:
    close(fd);
    fr_buf_free(&b);
    return rc;
}

static int fr_remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int r = (flag == FTW_DP) ? rmdir(p) : unlink(p);
    return (r != 0 && errno != ENOENT) ? -1 : 0;
}

int fr_remove_tree(const char *path, fr_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return FR_OK;
        return fr_fail_errno(err, errno, "stat %s", path);
    }
    if (nftw(path, fr_remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
        return fr_fail_errno(err, errno, "remove %s", path);
    return FR_OK;
}

bool fr_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void fr_iov_advance(struct iovec **iov, int *n, size_t done)
{
    struct iovec *v = *iov;
    while (*n > 0 && done >= v->iov_len) {
        done -= v->iov_len;
        v++;
        (*n)--;
    }
    if (*n > 0) {
        v->iov_base = (uint8_t *)v->iov_base + done;
        v->iov_len -= done;
    }
    *iov = v;
}
