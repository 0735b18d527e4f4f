/* The socket layer: everything that differs between POSIX sockets and
 * Winsock, behind one small interface (net_posix.c, net_win32.c). Sockets
 * are non-blocking; nothing here raises SIGPIPE. Error texts are written
 * into the caller's buffer, never kept in a global. */
#ifndef CLOTHD_CLIENT_NET_H
#define CLOTHD_CLIENT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clothd/client.h"

#define CDC_MAX_ADDRS 8

typedef struct cdc_addr {
    int family;
    unsigned len;
    unsigned char bytes[128]; /* a struct sockaddr_storage's worth */
} cdc_addr;

typedef enum cdc_net_result {
    CDC_NET_OK,
    CDC_NET_AGAIN,  /* would block / in progress */
    CDC_NET_EOF,    /* the peer closed (recv only) */
    CDC_NET_ERROR,  /* msg says why */
} cdc_net_result;

/* Once per client (Winsock's WSAStartup is reference counted). */
bool cdc_net_init(char *msg, size_t cap);
void cdc_net_cleanup(void);

/* The addresses of host:port (TCP), at most `max`. */
bool cdc_net_resolve(const char *host, uint16_t port, cdc_addr *out, size_t max, size_t *n, char *msg,
                     size_t cap);
/* The address of the Unix-domain socket at `path`; false (msg says why:
 * longer than the socket address holds, or no Unix sockets in this build)
 * when there is none. */
bool cdc_net_unix_addr(const char *path, cdc_addr *out, char *msg, size_t cap);
/* "127.0.0.1:7878", "[::1]:7878" or "unix:/run/clothd.sock". */
void cdc_net_addr_text(const cdc_addr *a, char *out, size_t cap);

/* Starts a non-blocking connect: OK (connected at once), AGAIN (wait for
 * writable, then cdc_net_connect_finish) or ERROR. *s is set on OK/AGAIN. */
cdc_net_result cdc_net_connect_start(const cdc_addr *a, int rcvbuf, clothd_socket *s, char *msg, size_t cap);
cdc_net_result cdc_net_connect_finish(clothd_socket s, const cdc_addr *a, char *msg, size_t cap);

cdc_net_result cdc_net_send(clothd_socket s, const void *p, size_t n, size_t *sent, char *msg, size_t cap);
cdc_net_result cdc_net_recv(clothd_socket s, void *p, size_t n, size_t *got, char *msg, size_t cap);

/* Waits up to timeout_ms (< 0: forever) for CLOTHD_WANT_* on s; returns the
 * ready set (an error or hang-up counts as readable and writable), 0 on
 * timeout, -1 on failure. */
int cdc_net_wait(clothd_socket s, int want, int timeout_ms);

void cdc_net_close(clothd_socket s);

/* A monotonic clock in milliseconds, and a sleep. */
int64_t cdc_net_now_ms(void);
void cdc_net_sleep_ms(int ms);

#endif
