/* Access control: tokens, the `auth` command and what each connection may
 * send (the security model is in PROTOCOL.md, "Security").
 *
 * With no token configured every connection has full access (the default
 * bind is loopback; any other bind needs a token or --insecure). With a
 * token, a connection may send only `auth` until it presents one: the full
 * token allows everything, the read-only token the commands whose row in
 * protocol/commands.h says CD_ACCESS_READ. Tokens are compared in constant
 * time, and each bad token pauses the connection for longer (100 ms doubling
 * to 2 s); the 10th closes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CD_AUTH_MIN_TOKEN 16u
#define CD_AUTH_MAX_FAILURES 10u
#define CD_AUTH_PAUSE_MS 100u
#define CD_AUTH_PAUSE_MAX_MS 2000u

/* Reads a token from the first line of `path` (CR/LF stripped), or takes
 * `env` when no path was given; checks its length and bytes. */
static bool load_token(const char *path, const char *env_name, cd_token *out, FILE *err)
{
    char buf[CD_TOKEN_MAX + 2];
    const char *source = path;
    size_t len = 0;
    if (path[0] != '\0') {
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
            fprintf(err, "clothd: %s: cannot read the token file\n", path);
            return false;
        }
        len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *nl = memchr(buf, '\n', len);
        if (nl != NULL)
            len = (size_t)(nl - buf);
        else if (len > CD_TOKEN_MAX)
            len = CD_TOKEN_MAX + 1;
        if (len > 0 && buf[len - 1] == '\r')
            len--;
    } else {
        const char *value = getenv(env_name);
        if (value == NULL || value[0] == '\0')
            return true; /* not configured */
        source = env_name;
        len = strlen(value);
        if (len > CD_TOKEN_MAX)
            len = CD_TOKEN_MAX + 1;
        memcpy(buf, value, len < sizeof buf ? len : sizeof buf - 1);
    }
    if (len < CD_AUTH_MIN_TOKEN || len > CD_TOKEN_MAX) {
        fprintf(err, "clothd: %s: a token must be %u to %u bytes long\n", source,
                CD_AUTH_MIN_TOKEN, CD_TOKEN_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x21 || c == 0x7F) {
            fprintf(err, "clothd: %s: a token holds no spaces or control characters\n", source);
            return false;
        }
    }
    memcpy(out->bytes, buf, len);
    out->len = len;
    return true;
}

/* 127.0.0.0/8 and ::1 (names are not resolved: --bind takes addresses). */
static bool is_loopback(const char *bind)
{
    return strncmp(bind, "127.", 4) == 0 || strcmp(bind, "::1") == 0;
}

bool cd_auth_configure(cd_server *server, FILE *err)
{
    const cd_server_options *o = &server->opts;
    if (!load_token(o->token_file, "CLOTHD_TOKEN", &server->full_token, err) ||
        !load_token(o->readonly_token_file, "CLOTHD_READONLY_TOKEN", &server->readonly_token, err))
        return false;
    if (server->readonly_token.len > 0 && server->full_token.len == 0) {
        fprintf(err, "clothd: a read-only token needs a full token too (--token-file)\n");
        return false;
    }
    if (server->full_token.len > 0 && server->readonly_token.len == server->full_token.len &&
        memcmp(server->full_token.bytes, server->readonly_token.bytes, server->full_token.len) == 0) {
        fprintf(err, "clothd: the read-only token must differ from the full one\n");
        return false;
    }
    if (server->full_token.len == 0 && !is_loopback(o->bind) && !o->insecure) {
        fprintf(err,
                "clothd: --bind %s is not a loopback address: give --token-file (or "
                "CLOTHD_TOKEN), or --insecure to serve it without authentication\n",
                o->bind);
        return false;
    }
    return true;
}

cd_access_level cd_auth_initial_access(const cd_server *server)
{
    return server->full_token.len > 0 ? CD_CONN_ACCESS_NONE : CD_CONN_ACCESS_FULL;
}

/* Equal in a time that depends on the configured token's length only. */
static bool token_equals(const cd_token *token, const char *given, size_t given_len)
{
    if (token->len == 0)
        return false;
    volatile unsigned char diff = (unsigned char)(token->len != given_len);
    for (size_t i = 0; i < token->len; i++)
        diff |= (unsigned char)(token->bytes[i] ^ (i < given_len ? (unsigned char)given[i] : 0u));
    return diff == 0;
}

bool cd_auth_allows(cd_conn *conn, const cd_request *req)
{
    if (conn->access == CD_CONN_ACCESS_FULL || req->cmd == CD_CMD_AUTH)
        return true;
    const char *name = cd_command_name(req->cmd);
    if (conn->access == CD_CONN_ACCESS_NONE) {
        cd_reply_fail(conn, req, CD_E_UNAUTHORIZED, "cmd: \"%s\" needs auth first", name);
        return false;
    }
    if (cd_command_is_read_only(req->cmd))
        return true;
    cd_reply_fail(conn, req, CD_E_UNAUTHORIZED,
                  "cmd: \"%s\" is not allowed with the read-only token", name);
    return false;
}

cd_dispatch_result cd_cmd_auth(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    const char *token = req->as.auth.token;
    const size_t len = req->as.auth.len;
    if (server->full_token.len == 0) {
        conn->access = CD_CONN_ACCESS_FULL; /* nothing to check: everyone has full access */
    } else if (token_equals(&server->full_token, token, len)) {
        conn->access = CD_CONN_ACCESS_FULL;
    } else if (token_equals(&server->readonly_token, token, len)) {
        conn->access = CD_CONN_ACCESS_READ;
    } else {
        /* A failed auth leaves the connection's access as it was. */
        conn->auth_failures++;
        cd_reply_fail(conn, req, CD_E_UNAUTHORIZED, "token: wrong token");
        if (conn->auth_failures >= CD_AUTH_MAX_FAILURES) {
            cd_conn_close_after_writes(conn);
        } else {
            unsigned shift = conn->auth_failures - 1u;
            uint64_t pause = (uint64_t)CD_AUTH_PAUSE_MS << (shift < 5 ? shift : 5);
            cd_conn_pause(conn, pause < CD_AUTH_PAUSE_MAX_MS ? pause : CD_AUTH_PAUSE_MAX_MS);
        }
        return CD_DISPATCH_DONE;
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "access", conn->access == CD_CONN_ACCESS_FULL ? "full" : "readonly");
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
