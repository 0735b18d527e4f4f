/* Journal files (<--data-dir>/<name>.cdj): what `record` appends and
 * `replay` reads. Append-only, as Redis's AOF, but each record framed and
 * checksummed so that a crash loses at most the record being written and a
 * reader knows exactly where the whole ones end:
 *
 *   preamble  8-byte magic 89 43 44 4A 0D 0A 1A 0A ("\x89CDJ\r\n\x1a\n"),
 *             u32 version (1), u32 CRC-32C of those 12 bytes
 *   record    u32 length L, u32 CRC-32C of the L bytes, then L bytes:
 *             u8 kind, its body (PROTOCOL.md, "Journal files")
 *
 * Records are written with one write() each on the loop thread (a few
 * microseconds; bench/README.md) and not fsync'ed one by one: a process
 * crash keeps everything written, a power loss what the system had
 * flushed; `record {"stop":true}` fsyncs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../solver/snapshot.h"
#include "internal.h"

static const uint8_t journal_magic[8] = {0x89, 'C', 'D', 'J', '\r', '\n', 0x1A, '\n'};
#define JOURNAL_VERSION 1u
#define PREAMBLE_SIZE 16u
#define RECORD_HEAD 8u

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

int cd_journal_create(const char *dir, const char *name, char *err, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.cdj", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    uint8_t pre[PREAMBLE_SIZE];
    memcpy(pre, journal_magic, 8);
    put_u32(pre + 8, JOURNAL_VERSION);
    put_u32(pre + 12, cd_crc32c(0, pre, 12));
    if (fd < 0 || !write_all(fd, pre, sizeof pre)) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

bool cd_journal_append(int fd, uint8_t kind, const void *body, size_t len, char *err, size_t cap)
{
    uint8_t stack[512];
    const size_t total = RECORD_HEAD + 1 + len;
    uint8_t *rec = total <= sizeof stack ? stack : malloc(total);
    if (rec == NULL) {
        snprintf(err, cap, "out of memory for a record of %zu bytes", len);
        return false;
    }
    put_u32(rec, (uint32_t)(1 + len));
    rec[RECORD_HEAD] = kind;
    if (len > 0)
        memcpy(rec + RECORD_HEAD + 1, body, len);
    put_u32(rec + 4, cd_crc32c(0, rec + RECORD_HEAD, 1 + len));
    const bool ok = write_all(fd, rec, total); /* one write: a record lands whole or torn at the end */
    if (!ok)
        snprintf(err, cap, "%s", strerror(errno));
    if (rec != stack)
        free(rec);
    return ok;
}

bool cd_journal_close(int fd, char *err, size_t cap)
{
    bool ok = fsync(fd) == 0;
    if (!ok)
        snprintf(err, cap, "fsync: %s", strerror(errno));
    if (close(fd) != 0 && ok) {
        snprintf(err, cap, "close: %s", strerror(errno));
        ok = false;
    }
    return ok;
}

cd_status cd_journal_check_preamble(const uint8_t *data, size_t len, char *err, size_t cap)
{
    if (len < PREAMBLE_SIZE) {
        snprintf(err, cap, "header: truncated (%zu bytes, the preamble takes %u)", len, PREAMBLE_SIZE);
        return CD_E_INVALID_ARGUMENT;
    }
    if (memcmp(data, journal_magic, 8) != 0) {
        snprintf(err, cap, "header: not a clothd journal (wrong magic)");
        return CD_E_INVALID_ARGUMENT;
    }
    if (get_u32(data + 12) != cd_crc32c(0, data, 12)) {
        snprintf(err, cap, "header: checksum mismatch: the file is damaged");
        return CD_E_INVALID_ARGUMENT;
    }
    if (get_u32(data + 8) != JOURNAL_VERSION) {
        snprintf(err, cap, "header: journal version %u is %s than this clothd reads (%u)",
                 get_u32(data + 8), get_u32(data + 8) > JOURNAL_VERSION ? "newer" : "other",
                 JOURNAL_VERSION);
        return CD_E_INVALID_ARGUMENT;
    }
    return CD_OK;
}

cd_journal_next cd_journal_record(const uint8_t *data, size_t len, size_t *at, cd_journal_rec *out)
{
    if (*at < PREAMBLE_SIZE)
        *at = PREAMBLE_SIZE;
    if (*at == len)
        return CD_JOURNAL_END;
    const size_t left = len - *at;
    if (left < RECORD_HEAD + 1)
        return CD_JOURNAL_TORN;
    const uint8_t *p = data + *at;
    const uint32_t n = get_u32(p);
    if (n == 0 || n > left - RECORD_HEAD)
        return CD_JOURNAL_TORN;
    if (get_u32(p + 4) != cd_crc32c(0, p + RECORD_HEAD, n))
        return CD_JOURNAL_TORN;
    out->kind = p[RECORD_HEAD];
    out->body = p + RECORD_HEAD + 1;
    out->len = n - 1u;
    out->offset = *at;
    *at += RECORD_HEAD + n;
    return CD_JOURNAL_RECORD;
}
