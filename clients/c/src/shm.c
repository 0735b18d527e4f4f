/* Shared-memory frames (subscribe's "shm"; PROTOCOL.md "Shared-memory
 * frames"): the ring a subscribe reply names, mapped read-only once per
 * connection, and the copy of one frame out of it for each 56-byte
 * reference the socket brings (frame.c then delivers the copy as any
 * frame).
 *
 * The server writes frames at running positions and never waits for a
 * reader. A reader copies a frame out, then, after an acquire fence, loads
 * the ring's `claimed` counter: the copy is whole iff claimed <= position +
 * size (nothing written since reaches back to it); otherwise the server
 * overwrote it meanwhile and the frame is missed. Only the copy is ever
 * decoded, so a torn frame cannot reach the caller. server/shm_ring.c is
 * the writer and the reference reader this file follows (not linked: the
 * library stands alone).
 *
 * The object is /dev/shm + name (clothd runs on Linux; it makes the object
 * with shm_open, which is that path there). The Windows build maps nothing
 * and refuses shm when subscribing. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ring's header page (PROTOCOL.md): its fields' offsets. */
enum { RING_HEADER = 4096, OFF_VERSION = 4, OFF_DATA = 8, OFF_SIZE = 16, OFF_CLAIMED = 24, OFF_PUBLISHED = 32 };
#define RING_MAGIC "CLSM"
#define RING_VERSION 1u
#define RING_DIR "/dev/shm"

/* A header counter: a native u64, 8-aligned (the map is page-aligned). */
static uint64_t counter(const unsigned char *map, size_t offset, int order)
{
    return __atomic_load_n((const uint64_t *)(const void *)(map + offset), order);
}

#if defined(_WIN32)

clothd_code cdc_shm_supported(clothd_error *err)
{
    return cdc_fail(err, CLOTHD_E_USAGE,
                    "shm: shared-memory frames need clothd's POSIX host; the Windows build of libclothd has none "
                    "(subscribe without shm)");
}

static clothd_code map_ring(cdc_shm *r, const char *name, uint64_t size, clothd_error *err)
{
    (void)r;
    (void)name;
    (void)size;
    return cdc_shm_supported(err);
}

static void unmap_ring(cdc_shm *r)
{
    r->map = NULL;
}

#else

clothd_code cdc_shm_supported(clothd_error *err)
{
    cdc_ok(err);
    return CLOTHD_OK;
}

static uint64_t field64(const unsigned char *map, size_t offset)
{
    uint64_t v;
    memcpy(&v, map + offset, sizeof v);
    return v;
}

static void say_errno(char *text, size_t cap, int code)
{
    if (strerror_r(code, text, cap) != 0)
        snprintf(text, cap, "error %d", code);
}

/* Maps RING_DIR + name whole and checks its header against the reply. */
static clothd_code map_ring(cdc_shm *r, const char *name, uint64_t size, clothd_error *err)
{
    char path[sizeof RING_DIR + sizeof r->name];
    snprintf(path, sizeof path, "%s%s", RING_DIR, name);
    if (size > (uint64_t)SIZE_MAX - RING_HEADER)
        return cdc_fail(err, CLOTHD_E_USAGE, "shm: a ring of %llu bytes does not fit this process",
                        (unsigned long long)size);
    const size_t total = RING_HEADER + (size_t)size;
    char why[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say_errno(why, sizeof why, errno);
        return cdc_fail(err, CLOTHD_E_IO, "shm: cannot open %s (the ring subscribe named): %s", path, why);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < total) {
        close(fd);
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "shm: %s is not a ring of %llu bytes (4096 + size %llu)", path,
                        (unsigned long long)total, (unsigned long long)size);
    }
    void *map = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
    const int saved = errno;
    close(fd);
    if (map == MAP_FAILED) {
        say_errno(why, sizeof why, saved);
        return cdc_fail(err, CLOTHD_E_IO, "shm: cannot map %s (%zu bytes): %s", path, total, why);
    }
    const unsigned char *m = map;
    uint32_t version;
    memcpy(&version, m + OFF_VERSION, sizeof version);
    if (memcmp(m, RING_MAGIC, 4) != 0 || version != RING_VERSION || field64(m, OFF_DATA) != RING_HEADER ||
        field64(m, OFF_SIZE) != size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL,
                 "shm: %s is not a clothd ring this client reads (magic %02x %02x %02x %02x, version %u, "
                 "data at %llu, size %llu; want \"CLSM\", 1, 4096, %llu)",
                 path, m[0], m[1], m[2], m[3], (unsigned)version, (unsigned long long)field64(m, OFF_DATA),
                 (unsigned long long)field64(m, OFF_SIZE), (unsigned long long)size);
        munmap(map, total);
        return CLOTHD_E_PROTOCOL;
    }
    r->map = m;
    r->size = size;
    snprintf(r->name, sizeof r->name, "%s", name);
    return CLOTHD_OK;
}

static void unmap_ring(cdc_shm *r)
{
    if (r->map != NULL)
        munmap((void *)(uintptr_t)r->map, RING_HEADER + (size_t)r->size);
    r->map = NULL;
}

#endif

/* A name shm_open would take: "/" then a file name ("." and ".." are not). */
static bool name_valid(const char *name, size_t len)
{
    if (len < 2 || strlen(name) != len || name[0] != '/' || memchr(name + 1, '/', len - 1) != NULL)
        return false;
    return strcmp(name, "/.") != 0 && strcmp(name, "/..") != 0;
}

clothd_code cdc_shm_attach(clothd_client *c, const cdc_jdoc *d, int shm, clothd_error *err)
{
    char name[sizeof c->shm.name];
    size_t len = 0;
    uint64_t size = 0;
    const int name_tok = cdc_jget(d, shm, "name");
    const long name_size = cdc_jstr_size(d, name_tok);
    if (name_size < 0 || (size_t)name_size >= sizeof name ||
        !cdc_jstr_copy(d, name_tok, name, sizeof name, &len) || !name_valid(name, len) ||
        !cdc_juint(d, cdc_jget(d, shm, "size"), UINT64_MAX, &size) || size == 0)
        return cdc_fail(err, CLOTHD_E_PROTOCOL,
                        "shm: the subscribe reply's \"shm\" is not {\"name\":\"/NAME\",\"size\":BYTES}");
    if (c->shm.map != NULL && strcmp(c->shm.name, name) == 0 && c->shm.size == size) {
        cdc_ok(err);
        return CLOTHD_OK;
    }
    cdc_shm_detach(c);
    clothd_code rc = map_ring(&c->shm, name, size, err);
    if (rc == CLOTHD_OK)
        cdc_ok(err);
    return rc;
}

void cdc_shm_detach(clothd_client *c)
{
    unmap_ring(&c->shm);
    c->shm.size = 0;
    c->shm.name[0] = '\0';
}

void cdc_shm_free(clothd_client *c)
{
    cdc_shm_detach(c);
    free(c->shm.copy);
    c->shm.copy = NULL;
    c->shm.copy_cap = 0;
}

cdc_shm_result cdc_shm_copy(clothd_client *c, uint64_t position, uint32_t length, const unsigned char **out,
                            clothd_error *err)
{
    cdc_shm *r = &c->shm;
    if (r->map == NULL)
        return CDC_SHM_MISSED; /* a ring this client could not map: its error was reported */
    if (length == 0 || length > r->size || position % r->size + length > r->size ||
        position > UINT64_MAX - r->size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "shm: a reference to %lu bytes at position %llu, outside the ring of %llu",
                 (unsigned long)length, (unsigned long long)position, (unsigned long long)r->size);
        return CDC_SHM_BROKEN;
    }
    if (counter(r->map, OFF_PUBLISHED, __ATOMIC_ACQUIRE) < position + length) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "shm: a reference to position %llu, which the ring has not published",
                 (unsigned long long)position);
        return CDC_SHM_BROKEN;
    }
    if (r->copy_cap < length) {
        unsigned char *p = realloc(r->copy, length);
        if (p == NULL) {
            cdc_fail(err, CLOTHD_E_NOMEM, "out of memory copying a %lu-byte frame out of the ring",
                     (unsigned long)length);
            return CDC_SHM_BROKEN;
        }
        r->copy = p;
        r->copy_cap = length;
    }
    memcpy(r->copy, r->map + RING_HEADER + position % r->size, length);
    /* The copy's loads stay before the claim's load: a byte the writer
     * changed meanwhile comes with a claim that reaches back here. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (counter(r->map, OFF_CLAIMED, __ATOMIC_RELAXED) > position + r->size)
        return CDC_SHM_MISSED;
    *out = r->copy;
    return CDC_SHM_WHOLE;
}
