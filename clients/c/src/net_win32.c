/* net.h on Windows: Winsock 2 (WSAPoll, ioctlsocket, closesocket), the
 * monotonic GetTickCount64. The one file that knows about Windows; the
 * library links ws2_32. Checked by cross-compiling with mingw-w64
 * (`make c-mingw`). */
#if defined(_WIN32)
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0600 /* Vista: WSAPoll, inet_ntop */
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "net.h"

static void say(char *msg, size_t cap, const char *what, int code)
{
    char text[160] = "";
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
                             (DWORD)code, 0, text, (DWORD)sizeof text, NULL);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == '.'))
        text[--n] = '\0';
    if (n == 0)
        snprintf(text, sizeof text, "WSA error %d", code);
    snprintf(msg, cap, "%s: %s", what, text);
}

bool cdc_net_init(char *msg, size_t cap)
{
    WSADATA data;
    int rc = WSAStartup(MAKEWORD(2, 2), &data);
    if (rc != 0) {
        say(msg, cap, "WSAStartup", rc);
        return false;
    }
    return true;
}

void cdc_net_cleanup(void)
{
    WSACleanup();
}

bool cdc_net_resolve(const char *host, uint16_t port, cdc_addr *out, size_t max, size_t *n, char *msg,
                     size_t cap)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        char what[300];
        snprintf(what, sizeof what, "resolve %s", host);
        say(msg, cap, what, rc);
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

/* clothd's --unix is a Unix-domain socket on the server's host, which
 * runs on Linux (libuv would make it a named pipe on Windows): this build
 * has no AF_UNIX connect, and says so. */
bool cdc_net_unix_addr(const char *path, cdc_addr *out, char *msg, size_t cap)
{
    (void)path;
    (void)out;
    snprintf(msg, cap, "Unix sockets are not supported by the Windows build of libclothd");
    return false;
}

void cdc_net_addr_text(const cdc_addr *a, char *out, size_t cap)
{
    char ip[64] = "?";
    if (a->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)a->bytes;
        inet_ntop(AF_INET, (void *)&in->sin_addr, ip, sizeof ip);
        snprintf(out, cap, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (a->family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)a->bytes;
        inet_ntop(AF_INET6, (void *)&in6->sin6_addr, ip, sizeof ip);
        snprintf(out, cap, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    } else {
        snprintf(out, cap, "(family %d)", a->family);
    }
}

cdc_net_result cdc_net_connect_start(const cdc_addr *a, int rcvbuf, clothd_socket *s, char *msg, size_t cap)
{
    SOCKET fd = socket(a->family, SOCK_STREAM, IPPROTO_TCP);
    if (fd == INVALID_SOCKET) {
        say(msg, cap, "socket", WSAGetLastError());
        return CDC_NET_ERROR;
    }
    u_long nonblocking = 1;
    if (ioctlsocket(fd, FIONBIO, &nonblocking) != 0) {
        say(msg, cap, "ioctlsocket", WSAGetLastError());
        closesocket(fd);
        return CDC_NET_ERROR;
    }
    BOOL one = TRUE;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, (const char *)&one, sizeof one);
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, (const char *)&rcvbuf, sizeof rcvbuf);
    if (connect(fd, (const struct sockaddr *)(const void *)a->bytes, (int)a->len) == 0) {
        *s = (clothd_socket)fd;
        return CDC_NET_OK;
    }
    int code = WSAGetLastError();
    if (code == WSAEWOULDBLOCK || code == WSAEINPROGRESS) {
        *s = (clothd_socket)fd;
        return CDC_NET_AGAIN;
    }
    char where[80], what[100];
    cdc_net_addr_text(a, where, sizeof where);
    snprintf(what, sizeof what, "connect %s", where);
    say(msg, cap, what, code);
    closesocket(fd);
    return CDC_NET_ERROR;
}

cdc_net_result cdc_net_connect_finish(clothd_socket s, const cdc_addr *a, char *msg, size_t cap)
{
    int code = 0;
    int len = sizeof code;
    if (getsockopt((SOCKET)s, SOL_SOCKET, SO_ERROR, (char *)&code, &len) != 0)
        code = WSAGetLastError();
    if (code == 0)
        return CDC_NET_OK;
    char where[80], what[100];
    cdc_net_addr_text(a, where, sizeof where);
    snprintf(what, sizeof what, "connect %s", where);
    say(msg, cap, what, code);
    return CDC_NET_ERROR;
}

cdc_net_result cdc_net_send(clothd_socket s, const void *p, size_t n, size_t *sent, char *msg, size_t cap)
{
    *sent = 0;
    int len = n > 0x40000000 ? 0x40000000 : (int)n;
    int k = send((SOCKET)s, (const char *)p, len, 0);
    if (k != SOCKET_ERROR) {
        *sent = (size_t)k;
        return CDC_NET_OK;
    }
    int code = WSAGetLastError();
    if (code == WSAEWOULDBLOCK)
        return CDC_NET_AGAIN;
    say(msg, cap, "send", code);
    return CDC_NET_ERROR;
}

cdc_net_result cdc_net_recv(clothd_socket s, void *p, size_t n, size_t *got, char *msg, size_t cap)
{
    *got = 0;
    int len = n > 0x40000000 ? 0x40000000 : (int)n;
    int k = recv((SOCKET)s, (char *)p, len, 0);
    if (k > 0) {
        *got = (size_t)k;
        return CDC_NET_OK;
    }
    if (k == 0)
        return CDC_NET_EOF;
    int code = WSAGetLastError();
    if (code == WSAEWOULDBLOCK)
        return CDC_NET_AGAIN;
    say(msg, cap, "recv", code);
    return CDC_NET_ERROR;
}

int cdc_net_wait(clothd_socket s, int want, int timeout_ms)
{
    WSAPOLLFD pfd;
    memset(&pfd, 0, sizeof pfd);
    pfd.fd = (SOCKET)s;
    if (want & CLOTHD_WANT_READ)
        pfd.events |= POLLRDNORM;
    if (want & CLOTHD_WANT_WRITE)
        pfd.events |= POLLWRNORM;
    int rc = WSAPoll(&pfd, 1, timeout_ms);
    if (rc < 0)
        return -1;
    int ready = 0;
    if (pfd.revents & (POLLRDNORM | POLLERR | POLLHUP))
        ready |= CLOTHD_WANT_READ;
    if (pfd.revents & (POLLWRNORM | POLLERR | POLLHUP))
        ready |= CLOTHD_WANT_WRITE;
    return ready & (want | CLOTHD_WANT_READ);
}

void cdc_net_close(clothd_socket s)
{
    if (s != CLOTHD_NO_SOCKET)
        closesocket((SOCKET)s);
}

int64_t cdc_net_now_ms(void)
{
    return (int64_t)GetTickCount64();
}

void cdc_net_sleep_ms(int ms)
{
    if (ms > 0)
        Sleep((DWORD)ms);
}

#else
typedef int cdc_net_win32_unused; /* ISO C wants a declaration in every file */
#endif
