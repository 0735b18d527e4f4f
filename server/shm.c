/* Shared-memory frames (subscribe's "shm"): the server's one ring, made
 * when the first such subscription asks for it, named /clothd-<pid>-<hex>
 * (mode 0600: readers run as clothd's user), removed when the server
 * stops. A frame copied in once serves every subscriber of its form; each
 * gets a 56-byte reference through its socket, queued and bounded like any
 * frame (the slow-subscriber rules apply to references).
 *
 * The server only writes the object and never reads back what a client
 * could have written there (its positions are its own copy), so a client
 * that maps it writable can spoil other readers' frames but not the
 * server. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "internal.h"

/* "clothd-<pid>-…" (without the slash of the shm_open name) whose process
 * is gone, or is us before we made ours: a crashed server's. */
static bool stale(const char *entry)
{
    char *end;
    if (strncmp(entry, "clothd-", 7) != 0)
        return false;
    errno = 0;
    long pid = strtol(entry + 7, &end, 10);
    if (errno != 0 || end == entry + 7 || *end != '-' || pid <= 0)
        return false;
    return pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

void cd_shm_sweep(void)
{
    DIR *dir = opendir("/dev/shm");
    if (dir == NULL)
        return;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (!stale(e->d_name))
            continue;
        char name[NAME_MAX + 2];
        snprintf(name, sizeof name, "/%s", e->d_name);
        shm_unlink(name);
    }
    closedir(dir);
}

bool cd_shm_open(cd_server *server, cd_error *err)
{
    cd_shm_ring *ring = &server->shm;
    if (ring->map != NULL)
        return true;
    if (server->opts.shm_mb == 0) {
        cd_fail(err, CD_E_INVALID_ARGUMENT, "shm: this server has no shared memory (--shm-mb 0)");
        return false;
    }
    uint32_t nonce;
    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != (ssize_t)sizeof nonce)
        nonce = (uint32_t)time(NULL) ^ (uint32_t)clock();
    snprintf(server->shm_name, sizeof server->shm_name, "/clothd-%ld-%08x", (long)getpid(),
             (unsigned)nonce);
    const uint64_t size = (uint64_t)server->opts.shm_mb << 20;
    const size_t total = CD_SHM_HEADER_SIZE + (size_t)size;
    int fd = shm_open(server->shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        cd_fail(err, CD_E_INTERNAL, "shm: cannot create %s: %s", server->shm_name, strerror(errno));
        server->shm_name[0] = '\0';
        return false;
    }
    void *map = MAP_FAILED;
    int rc = ftruncate(fd, (off_t)total);
    if (rc == 0)
        map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int saved = errno;
    close(fd);
    if (rc != 0 || map == MAP_FAILED) {
        shm_unlink(server->shm_name);
        cd_fail(err, CD_E_INTERNAL, "shm: cannot map %zu bytes: %s", total, strerror(saved));
        server->shm_name[0] = '\0';
        return false;
    }
    cd_shm_ring_format(ring, map, size, (uint32_t)getpid());
    return true;
}

void cd_shm_close(cd_server *server)
{
    if (server->shm.map == NULL)
        return;
    munmap(server->shm.map, CD_SHM_HEADER_SIZE + (size_t)server->shm.size);
    shm_unlink(server->shm_name);
    server->shm = (cd_shm_ring){0};
    server->shm_name[0] = '\0';
}

bool cd_conn_is_local(cd_conn *conn)
{
    if (conn->over_unix)
        return true;
    struct sockaddr_storage addr;
    int len = sizeof addr;
    if (conn->sink || uv_tcp_getpeername(&conn->socket.tcp, (struct sockaddr *)&addr, &len) != 0)
        return false;
    if (addr.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&addr;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (addr.ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)&addr)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

cd_frame_buf *cd_shm_reference(cd_server *server, cd_frame_buf *frame, cd_frame_buf **ref)
{
    if (*ref != NULL)
        return *ref;
    uint64_t position;
    cd_frame_header named;
    if (server->shm.map == NULL || frame->len > UINT32_MAX ||
        cd_frame_decode_header(frame->data, frame->len, &named, NULL) != CD_OK ||
        !cd_shm_ring_put(&server->shm, frame->data, (uint32_t)frame->len, &position))
        return frame; /* too large for the ring: the frame itself */
    *ref = cd_frame_buf_alloc_shared(&named, position);
    return *ref != NULL ? *ref : frame;
}
