/* net.h on POSIX systems (Linux, macOS, the BSDs): BSD sockets (TCP, and
 * AF_UNIX for `clothd --unix`), poll(2), clock_gettime. MSG_NOSIGNAL where
 * it exists, SO_NOSIGPIPE on macOS. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

_Static_assert(sizeof(struct sockaddr_un) <= sizeof(((cdc_addr *)0)->bytes), "cdc_addr holds a sockaddr_un");

static void say(char *msg, size_t cap, const char *what, int code)
{
    char text[128] = "";
    if (strerror_r(code, text, sizeof text) != 0)
        snprintf(text, sizeof text, "error %d", code);
    snprintf(msg, cap, "%s: %s", what, text);
}

bool cdc_net_init(char *msg, size_t cap)
{
    (void)msg;
    (void)cap;
    return true;
}

void cdc_net_cleanup(void) {}

bool cdc_net_resolve(const char *host, uint16_t port, cdc_addr *out, size_t max, size_t *n, char *msg,
                     size_t cap)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(msg, cap, "resolve %s: %s", host, gai_strerror(rc));
        return false;
    }
    *n = 0;
    for (struct addrinfo *ai = res; ai != NULL && *n < max; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof out[0].bytes)
            continue;
        out[*n].family = ai->ai_family;
        out[*n].len = (unsigned)ai->ai_addrlen;
        memcpy(out[*n].bytes, ai->ai_addr, ai->ai_addrlen);
        (*n)++;
    }
    freeaddrinfo(res);
    if (*n == 0) {
        snprintf(msg, cap, "resolve %s: no address", host);
        return false;
    }
    return true;
}

bool cdc_net_unix_addr(const char *path, cdc_addr *out, char *msg, size_t cap)
{
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof un.sun_path) { /* the terminating zero stays */
        snprintf(msg, cap, "the path is %zu bytes; a Unix socket path holds 1 to %zu", n, sizeof un.sun_path - 1);
        return false;
    }
    un.sun_family = AF_UNIX;
    memcpy(un.sun_path, path, n);
    memset(out, 0, sizeof *out);
    out->family = AF_UNIX;
    out->len = (unsigned)sizeof un;
    memcpy(out->bytes, &un, sizeof un);
    return true;
}

void cdc_net_addr_text(const cdc_addr *a, char *out, size_t cap)
{
    char ip[64] = "?";
    unsigned port = 0;
    if (a->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)a->bytes;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        port = ntohs(in->sin_port);
        snprintf(out, cap, "%s:%u", ip, port);
    } else if (a->family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)a->bytes;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        port = ntohs(in6->sin6_port);
        snprintf(out, cap, "[%s]:%u", ip, port);
    } else if (a->family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)a->bytes;
        snprintf(out, cap, "unix:%.*s", (int)sizeof un->sun_path, un->sun_path);
    } else {
        snprintf(out, cap, "(family %d)", a->family);
    }
}

cdc_net_result cdc_net_connect_start(const cdc_addr *a, int rcvbuf, clothd_socket *s, char *msg, size_t cap)
{
    bool tcp = a->family != AF_UNIX;
    int fd = socket(a->family, SOCK_STREAM, tcp ? IPPROTO_TCP : 0);
    if (fd < 0) {
        say(msg, cap, "socket", errno);
        return CDC_NET_ERROR;
    }
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        say(msg, cap, "fcntl", errno);
        close(fd);
        return CDC_NET_ERROR;
    }
    int one = 1;
    if (tcp)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#ifdef SO_NOSIGPIPE
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    char where[128];
    cdc_net_addr_text(a, where, sizeof where);
    if (connect(fd, (const struct sockaddr *)(const void *)a->bytes, (socklen_t)a->len) == 0) {
        *s = fd;
        return CDC_NET_OK;
    }
    /* (A Unix socket whose backlog is full fails with EAGAIN at once, and
     * nothing is pending: an error like a refusal, retried by a reconnect.) */
    if (errno == EINPROGRESS || errno == EINTR) {
        *s = fd;
        return CDC_NET_AGAIN;
    }
    char what[160];
    snprintf(what, sizeof what, "connect %s", where);
    say(msg, cap, what, errno);
    close(fd);
    return CDC_NET_ERROR;
}

cdc_net_result cdc_net_connect_finish(clothd_socket s, const cdc_addr *a, char *msg, size_t cap)
{
    int code = 0;
    socklen_t len = sizeof code;
    if (getsockopt(s, SOL_SOCKET, SO_ERROR, &code, &len) < 0)
        code = errno;
    if (code == 0)
        return CDC_NET_OK;
    char where[128], what[160];
    cdc_net_addr_text(a, where, sizeof where);
    snprintf(what, sizeof what, "connect %s", where);
    say(msg, cap, what, code);
    return CDC_NET_ERROR;
}

cdc_net_result cdc_net_send(clothd_socket s, const void *p, size_t n, size_t *sent, char *msg, size_t cap)
{
    *sent = 0;
    for (;;) {
        ssize_t k = send(s, p, n, MSG_NOSIGNAL);
        if (k >= 0) {
            *sent = (size_t)k;
            return CDC_NET_OK;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return CDC_NET_AGAIN;
        say(msg, cap, "send", errno);
        return CDC_NET_ERROR;
    }
}

cdc_net_result cdc_net_recv(clothd_socket s, void *p, size_t n, size_t *got, char *msg, size_t cap)
{
    *got = 0;
    for (;;) {
        ssize_t k = recv(s, p, n, 0);
        if (k > 0) {
            *got = (size_t)k;
            return CDC_NET_OK;
        }
        if (k == 0)
            return CDC_NET_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return CDC_NET_AGAIN;
        say(msg, cap, "recv", errno);
        return CDC_NET_ERROR;
    }
}

int cdc_net_wait(clothd_socket s, int want, int timeout_ms)
{
    struct pollfd pfd = {s, 0, 0};
    if (want & CLOTHD_WANT_READ)
        pfd.events |= POLLIN;
    if (want & CLOTHD_WANT_WRITE)
        pfd.events |= POLLOUT;
    int64_t deadline = timeout_ms < 0 ? -1 : cdc_net_now_ms() + timeout_ms;
    for (;;) {
        int rc = poll(&pfd, 1, timeout_ms);
        if (rc >= 0)
            break;
        if (errno != EINTR)
            return -1;
        if (deadline >= 0) {
            int64_t left = deadline - cdc_net_now_ms();
            timeout_ms = left > 0 ? (int)left : 0;
        }
    }
    int ready = 0;
    if (pfd.revents & (POLLIN | POLLERR | POLLHUP))
        ready |= CLOTHD_WANT_READ;
    if (pfd.revents & (POLLOUT | POLLERR | POLLHUP))
        ready |= CLOTHD_WANT_WRITE;
    return ready & (want | CLOTHD_WANT_READ);
}

void cdc_net_close(clothd_socket s)
{
    if (s >= 0)
        close(s);
}

int64_t cdc_net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cdc_net_sleep_ms(int ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#else
typedef int cdc_net_posix_unused; /* ISO C wants a declaration in every file */
#endif
