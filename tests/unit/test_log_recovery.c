/* test_log_recovery.c — what open does with a damaged log directory: a last batch torn at
 * every byte, a flipped byte anywhere in the last batch, damaged offset and time indexes, a
 * torn segment in the middle, a missing segment, leftover files. After each, the log must end
 * at the last good batch, serve only good data, and take appends at the right offset. */
#include "log_testkit.h"

#include <dirent.h>
#include <fcntl.h>

/* ---- a saved copy of a directory, to damage it again and again -------------------------- */

typedef struct snap_file {
    char name[256];
    uint8_t *data;
    size_t len;
} snap_file;

typedef struct snap {
    snap_file files[64];
    int n;
} snap;

static uint8_t *read_all(const char *path, size_t *len)
{
    uint8_t *data;
    fr_error err;
    int rc = fr_read_file(path, (size_t)1 << 30, &data, len, &err);
    if (rc != 0) fail_msg("read %s: %s", path, err.msg);
    return data;
}

static void write_all(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static void snap_take(snap *s, const char *dir)
{
    s->n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        assert_true(s->n < 64);
        snap_file *f = &s->files[s->n++];
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        f->data = read_all(path, &f->len);
    }
    closedir(d);
}

/* Puts the directory back as saved, rewriting only the files that differ (rewriting and
 * unlinking files is what costs time on a busy disk). */
static void snap_restore(const snap *s, const char *dir)
{
    for (int i = 0; i < s->n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, s->files[i].name);
        uint8_t *cur = NULL;
        size_t len = 0;
        fr_error err;
        bool same = fr_read_file(path, (size_t)1 << 30, &cur, &len, &err) == 0 &&
                    len == s->files[i].len && memcmp(cur, s->files[i].data, len) == 0;
        fr_free(cur);
        if (!same) write_all(path, s->files[i].data, s->files[i].len);
    }
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        bool kept = false;
        for (int i = 0; i < s->n && !kept; i++) kept = strcmp(s->files[i].name, e->d_name) == 0;
        if (!kept) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

static void snap_free(snap *s)
{
    for (int i = 0; i < s->n; i++) fr_free(s->files[i].data);
    s->n = 0;
}

/* ---- a log to damage -------------------------------------------------------------------- */

typedef struct fixture {
    char *dir;
    fr_schema *schema;
    fr_log_options o;
    int64_t end;          /* end offset */
    int64_t bases[256];   /* base offset of each batch */
    int nbatches;
    int64_t last_seg;     /* base of the last segment */
    int64_t last_pos;     /* byte position of the last batch in it */
    int64_t last_len;
    snap saved;
} fixture;

static void fixture_init(fixture *fx, const char *name, int nbatches, int64_t segment_bytes)
{
    memset(fx, 0, sizeof *fx);
    fx->dir = lt_tmpdir(name);
    fx->schema = lt_schema();
    fr_log_options_default(&fx->o);
    fx->o.segment_bytes = segment_bytes;
    fx->o.index_interval_bytes = 300;
    fx->o.flush = FR_FLUSH_NONE;
    fr_log *log = lt_open(fx->dir, &fx->o);
    int64_t id = 0;
    for (int i = 0; i < nbatches; i++) {
        int rows = 1 + i % 5;
        fx->bases[fx->nbatches++] = lt_append(log, fx->schema, id, rows);
        id += rows;
    }
    fx->end = id;
    fr_buf raw;
    fr_buf_init(&raw);
    fr_error err;
    assert_int_equal(fr_log_read_raw(log, id - 1, 1, &raw, &err), 0);
    fx->last_len = (int64_t)raw.len;
    fr_buf_free(&raw);
    fr_log_close(log);
    /* The last segment is the .log file with the greatest base. */
    for (int i = nbatches - 1; i >= 0; i--) {
        char path[4096];
        lt_path(path, sizeof path, fx->dir, fx->bases[i], ".log");
        int64_t size = lt_file_size(path);
        if (size >= 0) {
            fx->last_seg = fx->bases[i];
            fx->last_pos = size - fx->last_len;
            break;
        }
    }
    snap_take(&fx->saved, fx->dir);
}

static void fixture_free(fixture *fx)
{
    snap_free(&fx->saved);
    fr_schema_free(fx->schema);
    lt_rmdir(fx->dir);
}

/* The file of a segment: read, changed by the caller, written back. */
static uint8_t *load(const fixture *fx, int64_t base, const char *ext, size_t *len)
{
    char path[4096];
    lt_path(path, sizeof path, fx->dir, base, ext);
    return read_all(path, len);
}

static void store(const fixture *fx, int64_t base, const char *ext, const uint8_t *p, size_t n)
{
    char path[4096];
    lt_path(path, sizeof path, fx->dir, base, ext);
    write_all(path, p, n);
}

/* Every entry of a segment's index files names a batch start with its offset (and its
 * commit timestamp), in order. */
static void check_index_files(const fixture *fx, int64_t base)
{
    size_t loglen, ilen, tlen;
    uint8_t *log = load(fx, base, ".log", &loglen);
    uint8_t *idx = load(fx, base, ".index", &ilen);
    uint8_t *tix = load(fx, base, ".timeindex", &tlen);
    assert_int_equal(ilen % 8, 0);
    assert_int_equal(tlen % 12, 0);
    int64_t prev_pos = -1;
    for (size_t i = 0; i < ilen; i += 8) {
        uint32_t rel = fr_get_u32le(idx + i), pos = fr_get_u32le(idx + i + 4);
        assert_true((int64_t)pos > prev_pos);
        assert_true(pos < loglen);
        fr_rb_view v;
        fr_error err;
        assert_int_equal(fr_rb_decode(log + pos, loglen - pos, &v, &err), 0);
        assert_int_equal(v.base_offset, base + rel);
        prev_pos = pos;
    }
    int64_t prev_ts = INT64_MIN;
    for (size_t i = 0; i < tlen; i += 12) {
        int64_t ts = (int64_t)fr_get_u64le(tix + i);
        uint32_t rel = fr_get_u32le(tix + i + 8);
        assert_true(ts >= prev_ts);
        bool found = false;
        for (size_t pos = 0; pos < loglen;) {
            fr_rb_view v;
            fr_error err;
            assert_int_equal(fr_rb_decode(log + pos, loglen - pos, &v, &err), 0);
            if (v.base_offset == base + rel) {
                assert_int_equal(v.commit_timestamp, ts);
                found = true;
            }
            pos += (size_t)v.length;
        }
        assert_true(found);
        prev_ts = ts;
    }
    fr_free(log);
    fr_free(idx);
    fr_free(tix);
}

/* Opens the damaged log and checks that it ends at `end`, serves ids == offsets from every
 * few offsets, and appends at `end`. */
static void reopen_and_check(fixture *fx, int64_t end)
{
    fr_log *log = lt_open(fx->dir, &fx->o);
    if (fr_log_end_offset(log) != end)
        fail_msg("end offset %" PRId64 ", expected %" PRId64, fr_log_end_offset(log), end);
    for (int64_t from = 0; from < end; from += 13) lt_check_dense(log, fx->schema, from);
    if (end > 0) lt_check_dense(log, fx->schema, end - 1);
    assert_int_equal(lt_append(log, fx->schema, end, 2), end);
    lt_check_dense(log, fx->schema, end > 5 ? end - 5 : 0);
    fr_log_close(log);
    /* And once more: what recovery wrote is itself consistent. */
    log = lt_open(fx->dir, &fx->o);
    assert_int_equal(fr_log_end_offset(log), end + 2);
    fr_log_close(log);
}

/* ---- the tests -------------------------------------------------------------------------- */

static void test_torn_last_batch(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, "log-torn", 30, 8192);
    int64_t last_base = fx.bases[fx.nbatches - 1];
    for (int64_t cut = fx.last_pos; cut < fx.last_pos + fx.last_len; cut++) {
        snap_restore(&fx.saved, fx.dir);
        size_t len;
        uint8_t *p = load(&fx, fx.last_seg, ".log", &len);
        store(&fx, fx.last_seg, ".log", p, (size_t)cut);
        fr_free(p);
        reopen_and_check(&fx, last_base);
        char path[4096];
        lt_path(path, sizeof path, fx.dir, fx.last_seg, ".log");
        check_index_files(&fx, fx.last_seg);
    }
    /* Garbage after the last batch (a torn write of the next one) goes too. */
    snap_restore(&fx.saved, fx.dir);
    size_t len;
    uint8_t *p = load(&fx, fx.last_seg, ".log", &len);
    p = fr_realloc(p, len + 100);
    memset(p + len, 0xAB, 100);
    store(&fx, fx.last_seg, ".log", p, len + 100);
    fr_free(p);
    reopen_and_check(&fx, fx.end);
    fixture_free(&fx);
}

static void test_flipped_last_batch(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, "log-flip", 30, 8192);
    int64_t last_base = fx.bases[fx.nbatches - 1];
    for (int64_t i = 0; i < fx.last_len; i++) {
        if (i >= 8 && i < 16) continue; /* the commit timestamp is outside the CRC */
        snap_restore(&fx.saved, fx.dir);
        size_t len;
        uint8_t *p = load(&fx, fx.last_seg, ".log", &len);
        p[fx.last_pos + i] ^= (uint8_t)(1u << (i % 8));
        store(&fx, fx.last_seg, ".log", p, len);
        fr_free(p);
        reopen_and_check(&fx, last_base);
    }
    fixture_free(&fx);
}

/* Damage to the indexes of the last and of a middle segment never loses or bends data. */
static void test_damaged_indexes(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, "log-index", 60, 4096);
    int64_t segs[2] = { fx.last_seg, 0 };
    /* A middle segment: the one holding the 10th batch. */
    for (int i = 10; i >= 0; i--) {
        char path[4096];
        lt_path(path, sizeof path, fx.dir, fx.bases[i], ".log");
        if (lt_file_size(path) >= 0) {
            segs[1] = fx.bases[i];
            break;
        }
    }
    assert_true(segs[1] != fx.last_seg);
    for (int k = 0; k < 2; k++) {
        for (int variant = 0; variant < 6; variant++) {
            snap_restore(&fx.saved, fx.dir);
            size_t len;
            uint8_t *p = load(&fx, segs[k], ".index", &len);
            assert_true(len >= 16);
            switch (variant) {
            case 0: /* torn: a partial entry */
                len -= 3;
                break;
            case 1: /* garbage entries */
                for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(i * 37 + 11);
                break;
            case 2: /* an entry past the end of the log */
                p = fr_realloc(p, len + 8);
                fr_put_u32le(p + len, 1000000);
                fr_put_u32le(p + len + 4, 1 << 30);
                len += 8;
                break;
            case 3: { /* not monotonic */
                uint8_t t[8];
                memcpy(t, p, 8);
                memcpy(p, p + 8, 8);
                memcpy(p + 8, t, 8);
                break;
            }
            case 4: /* an entry off a batch boundary */
                fr_put_u32le(p + 4, fr_get_u32le(p + 4) + 8);
                break;
            case 5: /* the time index is garbage, the offset index intact */
                fr_free(p);
                p = load(&fx, segs[k], ".timeindex", &len);
                for (size_t i = 0; i < len; i++) p[i] ^= 0x5A;
                store(&fx, segs[k], ".timeindex", p, len);
                fr_free(p);
                p = NULL;
                break;
            }
            if (p) {
                store(&fx, segs[k], ".index", p, len);
                fr_free(p);
            }
            fr_log *log = lt_open(fx.dir, &fx.o);
            assert_int_equal(fr_log_end_offset(log), fx.end);
            for (int64_t from = 0; from < fx.end; from += 5) lt_check_dense(log, fx.schema, from);
            int64_t off;
            fr_error err;
            assert_int_equal(fr_log_offset_for_time(log, 0, &off, &err), 0);
            assert_int_equal(off, 0);
            fr_log_close(log);
            check_index_files(&fx, segs[k]);
        }
    }
    /* Missing index files are rebuilt. */
    snap_restore(&fx.saved, fx.dir);
    char path[4096];
    lt_path(path, sizeof path, fx.dir, fx.last_seg, ".index");
    unlink(path);
    lt_path(path, sizeof path, fx.dir, fx.last_seg, ".timeindex");
    unlink(path);
    reopen_and_check(&fx, fx.end);
    check_index_files(&fx, fx.last_seg);
    fixture_free(&fx);
}

/* A segment in the middle torn: it ends at its last good batch and later segments go (their
 * offsets would no longer follow). */
static void test_torn_middle_segment(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, "log-middle", 60, 4096);
    /* The segment holding batch 20 and the first batch of the next segment. */
    int64_t seg = -1, next_seg = -1;
    for (int i = 0; i < fx.nbatches; i++) {
        char path[4096];
        lt_path(path, sizeof path, fx.dir, fx.bases[i], ".log");
        if (lt_file_size(path) < 0) continue;
        if (i <= 20) seg = fx.bases[i];
        else if (next_seg < 0) next_seg = fx.bases[i];
    }
    assert_true(seg >= 0 && next_seg > seg && next_seg != fx.last_seg);
    /* The last batch of seg starts at the base of the batch before next_seg. */
    int last_in_seg = 0;
    while (fx.bases[last_in_seg + 1] < next_seg) last_in_seg++;
    size_t len;
    uint8_t *p = load(&fx, seg, ".log", &len);
    store(&fx, seg, ".log", p, len - 5);
    fr_free(p);
    reopen_and_check(&fx, fx.bases[last_in_seg]);
    char path[4096];
    lt_path(path, sizeof path, fx.dir, next_seg, ".log");
    assert_true(lt_file_size(path) < 0);

    /* A flipped byte in the body of a middle batch is found by the full check that follows
     * an index that does not match. */
    snap_restore(&fx.saved, fx.dir);
    p = load(&fx, seg, ".log", &len);
    p[len / 2] ^= 0x01;
    store(&fx, seg, ".log", p, len);
    fr_free(p);
    p = load(&fx, seg, ".index", &len);
    store(&fx, seg, ".index", p, len - 1);
    fr_free(p);
    fr_log *log = lt_open(fx.dir, &fx.o);
    int64_t end = fr_log_end_offset(log);
    assert_true(end > seg && end <= fx.bases[last_in_seg]);
    lt_check_dense(log, fx.schema, 0);
    fr_log_close(log);
    fixture_free(&fx);
}

/* A missing segment in the middle, an empty segment at the end, leftover files. */
static void test_missing_and_leftover_files(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, "log-files", 60, 4096);
    int64_t segs[32];
    int nsegs = 0;
    for (int i = 0; i < fx.nbatches; i++) {
        char path[4096];
        lt_path(path, sizeof path, fx.dir, fx.bases[i], ".log");
        if (lt_file_size(path) >= 0) segs[nsegs++] = fx.bases[i];
    }
    assert_true(nsegs >= 4);
    char path[4096];
    lt_path(path, sizeof path, fx.dir, segs[2], ".log");
    unlink(path);
    reopen_and_check(&fx, segs[2]);

    snap_restore(&fx.saved, fx.dir);
    /* A crash right after a roll leaves an empty segment file. */
    uint8_t none = 0;
    store(&fx, fx.end, ".log", &none, 0);
    lt_path(path, sizeof path, fx.dir, fx.end, ".log.tmp");
    write_all(path, (const uint8_t *)"junk", 4);
    lt_path(path, sizeof path, fx.dir, 99999, ".index");
    write_all(path, (const uint8_t *)"junkjunk", 8);
    reopen_and_check(&fx, fx.end);
    lt_path(path, sizeof path, fx.dir, fx.end, ".log.tmp");
    assert_true(lt_file_size(path) < 0);
    lt_path(path, sizeof path, fx.dir, 99999, ".index");
    assert_true(lt_file_size(path) < 0);

    /* A segment whose first batch is not at its base offset is emptied. */
    snap_restore(&fx.saved, fx.dir);
    size_t len;
    uint8_t *p = load(&fx, fx.last_seg, ".log", &len);
    store(&fx, fx.last_seg + 1, ".log", p, len);
    fr_free(p);
    lt_path(path, sizeof path, fx.dir, fx.last_seg, ".log");
    unlink(path);
    /* last_seg is gone, so the previous segment is the last; last_seg+1 does not follow. */
    reopen_and_check(&fx, fx.last_seg);
    fixture_free(&fx);
}

/* Index entries reach their files a few dozen at a time: a crash (here, a close that
 * writes nothing) leaves the files without the newest. Recovery adds them back, the same
 * entries a rebuild from the log gives, and the log reads and appends as before. */
static void test_index_tail_lost(void **state)
{
    (void)state;
    fixture fx;
    memset(&fx, 0, sizeof fx);
    fx.dir = lt_tmpdir("log-index-tail");
    fx.schema = lt_schema();
    fr_log_options_default(&fx.o);
    fx.o.index_interval_bytes = 300;
    fx.o.flush = FR_FLUSH_NONE;
    fr_log *log = lt_open(fx.dir, &fx.o);
    for (int i = 0; i < 150; i++, fx.end += 3)
        assert_int_equal(lt_append(log, fx.schema, fx.end, 3), fx.end);
    fr_log_close_noflush(log);
    size_t lost_i, lost_t;
    fr_free(load(&fx, 0, ".index", &lost_i));
    fr_free(load(&fx, 0, ".timeindex", &lost_t));
    reopen_and_check(&fx, fx.end);
    check_index_files(&fx, 0);
    size_t got_i, got_t;
    uint8_t *idx = load(&fx, 0, ".index", &got_i);
    uint8_t *tix = load(&fx, 0, ".timeindex", &got_t);
    /* The files held whole writes of 64 entries; the rest came back. */
    assert_true(got_i / 8 > 64);
    assert_int_equal(lost_i % (64 * 8), 0);
    assert_true(lost_i <= got_i && lost_t <= got_t);
    if ((got_i / 8) % 64 != 0) assert_true(lost_i < got_i);
    /* The same as a rebuild. */
    char path[4096];
    lt_path(path, sizeof path, fx.dir, 0, ".index");
    unlink(path);
    lt_path(path, sizeof path, fx.dir, 0, ".timeindex");
    unlink(path);
    fr_log_close(lt_open(fx.dir, &fx.o));
    size_t re_i, re_t;
    uint8_t *ri = load(&fx, 0, ".index", &re_i);
    uint8_t *rt = load(&fx, 0, ".timeindex", &re_t);
    assert_int_equal(re_i, got_i);
    assert_memory_equal(ri, idx, re_i);
    assert_int_equal(re_t, got_t);
    assert_memory_equal(rt, tix, re_t);
    fr_free(idx);
    fr_free(tix);
    fr_free(ri);
    fr_free(rt);
    fixture_free(&fx);
}

int main(void)
{
    fr_log_set_level(FR_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torn_last_batch),
        cmocka_unit_test(test_flipped_last_batch),
        cmocka_unit_test(test_damaged_indexes),
        cmocka_unit_test(test_torn_middle_segment),
        cmocka_unit_test(test_missing_and_leftover_files),
        cmocka_unit_test(test_index_tail_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
