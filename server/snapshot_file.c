/* Snapshot files under --data-dir, written the way Redis writes its RDB:
 * to a temporary name in the same folder, fsync'ed, renamed over the old
 * file, and the folder fsync'ed so that the rename itself is durable. A
 * crash at any point leaves either the old file or the new one under the
 * name, never a torn one; a leftover temporary (".NAME.cds.SEQ.tmp") is
 * never read, as no snapshot name starts with a dot.
 *
 * Names are the client's, checked by the protocol (cd_snapshot_name_ok):
 * never a path, so never outside the folder.
 *
 * --crash-at STAGE (tests only) aborts the process at that point of every
 * write: "mid-write" after half the bytes, "write" before the fsync,
 * "fsync" before the rename, "rename" before the folder's fsync. The e2e
 * tests then restart clothd on the folder and prove it loads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../solver/snapshot.h"
#include "internal.h"

#define EXT ".cds"

static void crash_if(const char *crash_at, const char *stage)
{
    if (crash_at[0] != '\0' && strcmp(crash_at, stage) == 0) {
        fprintf(stderr, "clothd: --crash-at %s: aborting\n", stage);
        abort();
    }
}

static bool write_all(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return false;
        }
        data += n;
        len -= (size_t)n;
    }
    return true;
}

bool cd_snapshot_file_write(const char *dir, const char *name, uint64_t seq, const uint8_t *data,
                            size_t len, const char *crash_at, char *err, size_t cap)
{
    char path[4200], tmp[4200];
    snprintf(path, sizeof path, "%s/%s" EXT, dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s" EXT ".%" PRIu64 ".tmp", dir, name, seq);
    const char *stage = "create";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto fail;
    stage = "write";
    if (crash_at[0] != '\0' && strcmp(crash_at, "mid-write") == 0) {
        write_all(fd, data, len / 2);
        crash_if(crash_at, "mid-write");
    }
    if (!write_all(fd, data, len))
        goto fail;
    crash_if(crash_at, "write");
    stage = "fsync";
    if (fsync(fd) != 0)
        goto fail;
    crash_if(crash_at, "fsync");
    stage = "close";
    const int rc = close(fd);
    fd = -1;
    if (rc != 0)
        goto fail;
    stage = "rename";
    if (rename(tmp, path) != 0)
        goto fail;
    crash_if(crash_at, "rename");
    /* The rename is durable once the folder is. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        snprintf(err, cap, "fsync of %s: %s (the snapshot is written; a power loss may lose it)",
                 dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return false;
    }
    close(dfd);
    return true;

fail:;
    const int saved = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    snprintf(err, cap, "%s %s: %s (nothing saved; \"%s\" is as it was)", stage,
             strcmp(stage, "rename") == 0 ? path : tmp, strerror(saved), name);
    return false;
}

cd_file_status cd_snapshot_file_read(const char *dir, const char *name, uint8_t **data,
                                     size_t *len, char *err, size_t cap)
{
    return cd_data_file_read(dir, name, EXT, data, len, err, cap);
}

cd_file_status cd_data_file_read(const char *dir, const char *name, const char *ext, uint8_t **data,
                                 size_t *len, char *err, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int saved = errno;
        snprintf(err, cap, "%s: %s", path, strerror(saved));
        if (fd >= 0)
            close(fd);
        return saved == ENOENT ? CD_FILE_MISSING : CD_FILE_ERROR;
    }
    uint8_t *buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    const int saved = errno;
    close(fd);
    if (buf == NULL || got != (size_t)st.st_size) {
        snprintf(err, cap, "%s: %s", path, buf == NULL ? "out of memory" : strerror(saved));
        free(buf);
        return CD_FILE_ERROR;
    }
    *data = buf;
    *len = got;
    return CD_FILE_OK;
}

typedef struct candidate {
    char name[CD_SNAPSHOT_NAME_MAX + 1];
    struct timespec mtime;
} candidate;

static int newest_first(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
    return strcmp(x->name, y->name);
}

uint32_t cd_data_file_list(const char *dir, const char *ext, char (**names)[CD_SNAPSHOT_NAME_MAX + 1])
{
    const size_t ext_len = strlen(ext);
    *names = NULL;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    candidate *list = NULL;
    uint32_t count = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t n = strlen(e->d_name);
        if (n <= ext_len || strcmp(e->d_name + n - ext_len, ext) != 0)
            continue;
        candidate c = {0};
        if (n - ext_len > CD_SNAPSHOT_NAME_MAX)
            continue;
        memcpy(c.name, e->d_name, n - ext_len);
        struct stat st;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!cd_snapshot_name_ok(c.name) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        c.mtime = st.st_mtim;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            candidate *grown = realloc(list, cap * sizeof *grown);
            if (grown == NULL)
                break;
            list = grown;
        }
        list[count++] = c;
    }
    closedir(d);
    if (count == 0) {
        free(list);
        return 0;
    }
    qsort(list, count, sizeof *list, newest_first);
    *names = malloc(count * sizeof **names);
    if (*names == NULL) {
        free(list);
        return 0;
    }
    for (uint32_t i = 0; i < count; i++)
        memcpy((*names)[i], list[i].name, sizeof list[i].name);
    free(list);
    return count;
}

uint32_t cd_snapshot_file_clean(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    uint32_t removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *n = e->d_name;
        const size_t len = strlen(n);
        if (n[0] != '.' || len < 5 || strcmp(n + len - 4, ".tmp") != 0 || strstr(n, EXT ".") == NULL)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        removed += unlink(path) == 0;
    }
    closedir(d);
    return removed;
}
