/* The Unix-socket listener (--unix PATH), beside the TCP one: the same
 * protocol, byte for byte, for clients on the same host, as Redis offers
 * `unixsocket` beside its port: who may connect is the file's permissions,
 * no port is exposed, and round trips are a little shorter (bench/
 * README.md, section 6).
 *
 * At start-up a socket file left at PATH by a server that is gone is
 * replaced; a live one (a connect succeeds) or anything that is not a
 * socket is refused, so two servers never steal each other's path. The
 * file gets --unix-mode's permissions before the socket listens (no one
 * can connect before listen(), so there is no window with the umask's),
 * and is removed when the server stops. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

/* Prints why `path` cannot be served and returns `rc`. */
static int refuse(const char *path, int rc, const char *why)
{
    fprintf(stderr, "clothd: --unix %s: %s\n", path, why != NULL ? why : uv_strerror(rc));
    return rc;
}

/* 0 when PATH is free (a stale socket file removed), else a libuv error,
 * printed: PATH holds something to keep, or could not be checked. */
static int clear_stale_socket(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : refuse(path, uv_translate_sys_error(errno), NULL);
    if (!S_ISSOCK(st.st_mode))
        return refuse(path, UV_EEXIST, "the path exists and is not a socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, path, strlen(path) + 1); /* fits: the option's size */
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = fd >= 0 && connect(fd, (const struct sockaddr *)&addr, sizeof addr) == 0;
    if (fd >= 0)
        close(fd);
    if (live)
        return refuse(path, UV_EADDRINUSE, "another server is listening there");
    return unlink(path) == 0 || errno == ENOENT ? 0
                                                : refuse(path, uv_translate_sys_error(errno), NULL);
}

int cd_listen_unix(cd_server *server, uv_connection_cb on_connection)
{
    const char *path = server->opts.unix_path;
    if (path[0] == '\0')
        return 0;
    int rc = clear_stale_socket(path);
    if (rc != 0)
        return rc;
    rc = uv_pipe_init(server->loop, &server->unix_listener, 0);
    if (rc == 0) {
        server->unix_listener.data = server;
        rc = uv_pipe_bind(&server->unix_listener, path);
    }
    if (rc == 0) {
        server->unix_bound = true;
        rc = chmod(path, (mode_t)server->opts.unix_mode) == 0 ? 0 : uv_translate_sys_error(errno);
    }
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server->unix_listener, 128, on_connection);
    if (rc != 0)
        fprintf(stderr, "clothd: cannot listen on unix:%s: %s\n", path, uv_strerror(rc));
    return rc; /* 0: announced after the TCP banner (server.c) */
}

void cd_unix_remove(cd_server *server)
{
    if (server->unix_bound) {
        unlink(server->opts.unix_path);
        server->unix_bound = false;
    }
}
