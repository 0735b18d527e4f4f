/* A subscriber process for bench/bench_server.py, in C: what a game server
 * on clothd's host runs. It does what the Python subscriber beside it does
 * (bench_server.py, subscriber_main), at a C program's cost per frame, so
 * that the bench can tell the server's cost of subscribers from the
 * readers' own interpreter.
 *
 *   bench_subscriber ADDRESS MODE     ADDRESS: a TCP port on 127.0.0.1, or
 *                                     unix:PATH; MODE: plain, quantize, shm
 *
 * It subscribes to every instance, prints "ready", and reads every frame
 * as fast as it can until stdin closes; then prints "frames missed bytes
 * cpu_seconds". A shared-memory reference is resolved as PROTOCOL.md
 * "Shared-memory frames" says: the frame copied out of the ring, then the
 * claimed counter checked; an overwritten one is missed. */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#define BUF_SIZE (4u << 20)
#define MAX_INSTANCES 65536u

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t u64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int connect_to(const char *address)
{
    if (strncmp(address, "unix:", 5) == 0) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        snprintf(un.sun_path, sizeof un.sun_path, "%s", address + 5);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        return fd >= 0 && connect(fd, (struct sockaddr *)&un, sizeof un) == 0 ? fd : -1;
    }
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(address))};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    return fd >= 0 && connect(fd, (struct sockaddr *)&in, sizeof in) == 0 ? fd : -1;
}

/* The ring a subscribe reply names ("shm":{"name":"/clothd-…","size":N}). */
static const uint8_t *open_ring(const char *reply, size_t len, uint64_t *size)
{
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), reply);
    const char *name = strstr(line, "\"name\":\"");
    const char *sz = strstr(line, "\"size\":");
    if (name == NULL || sz == NULL)
        return NULL;
    name += 8;
    char path[300];
    snprintf(path, sizeof path, "/dev/shm%.*s", (int)strcspn(name, "\""), name);
    *size = strtoull(sz + 7, NULL, 10);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    void *map = mmap(NULL, 4096 + *size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return map == MAP_FAILED ? NULL : map;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_subscriber ADDRESS plain|quantize|shm\n");
        return 2;
    }
    const char *mode = argv[2];
    int fd = connect_to(argv[1]);
    if (fd < 0) {
        perror("bench_subscriber: connect");
        return 1;
    }
    const char *request = strcmp(mode, "shm") == 0        ? "{\"id\":1,\"cmd\":\"subscribe\",\"shm\":true}\n"
                          : strcmp(mode, "quantize") == 0 ? "{\"id\":1,\"cmd\":\"subscribe\",\"quantize\":true}\n"
                                                          : "{\"id\":1,\"cmd\":\"subscribe\"}\n";
    if (write(fd, request, strlen(request)) != (ssize_t)strlen(request))
        return 1;
    printf("ready\n");
    fflush(stdout);
    const double cpu0 = cpu_seconds();
    uint8_t *buf = malloc(BUF_SIZE), *copy = malloc(BUF_SIZE);
    uint64_t *last = calloc(MAX_INSTANCES, sizeof *last); /* frame + 1; 0: none yet */
    if (buf == NULL || copy == NULL || last == NULL)
        return 1;
    const uint8_t *ring = NULL;
    uint64_t ring_size = 0, frames = 0, missed = 0, total = 0;
    size_t have = 0;
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 || fds[1].revents)
            break;
        ssize_t n = read(fd, buf + have, BUF_SIZE - have);
        if (n <= 0)
            break;
        total += (uint64_t)n;
        have += (size_t)n;
        size_t pos = 0;
        while (pos < have) {
            const uint8_t *m = buf + pos;
            if (m[0] != 0x89) {
                const uint8_t *nl = memchr(m, '\n', have - pos);
                if (nl == NULL)
                    break;
                if (ring == NULL && strcmp(mode, "shm") == 0)
                    ring = open_ring((const char *)m, (size_t)(nl - m), &ring_size);
                pos += (size_t)(nl - m) + 1;
                continue;
            }
            if (have - pos < 40 || have - pos < u32_at(m + 8))
                break;
            const uint32_t length = u32_at(m + 8), inst = u32_at(m + 12);
            const uint64_t frame = u64_at(m + 16);
            pos += length;
            if ((m[6] & 0x08) && ring != NULL) { /* a reference: copy out, then check */
                const uint64_t at = u64_at(m + 40);
                const uint32_t flen = u32_at(m + 48);
                memcpy(copy, ring + 4096 + at % ring_size, flen);
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                total += flen;
                if (__atomic_load_n((const uint64_t *)(const void *)(ring + 24), __ATOMIC_RELAXED) >
                    at + ring_size)
                    continue; /* overwritten meanwhile: missed */
            }
            if (inst < MAX_INSTANCES) {
                if (last[inst] != 0 && frame > last[inst])
                    missed += frame - last[inst];
                last[inst] = frame + 1;
            }
            frames++;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        if (have == BUF_SIZE) {
            fprintf(stderr, "bench_subscriber: a message larger than the buffer\n");
            return 1;
        }
    }
    close(fd);
    printf("%llu %llu %llu %.6f\n", (unsigned long long)frames, (unsigned long long)missed,
           (unsigned long long)total, cpu_seconds() - cpu0);
    return 0;
}
