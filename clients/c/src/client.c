/* The client's life: options and their defaults, connecting (resolve once,
 * or the Unix socket's address; connect, `auth`, `hello`), closing, and the game-loop entry points (clothd_poll,
 * clothd_fd, clothd_wants, clothd_flush) plus the client's state and
 * counters. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_MAX_MESSAGE ((size_t)256 * 1024 * 1024)

clothd_options clothd_options_default(void)
{
    clothd_options o;
    memset(&o, 0, sizeof o);
    return o;
}

static char *copy_string(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* What errors call the server: "host:port", "[v6]:port" or "unix:PATH" (malloc'd). */
static char *endpoint_text(const clothd_client *c)
{
    bool v6 = c->unix_path == NULL && strchr(c->host, ':') != NULL;
    const char *name = c->unix_path ? c->unix_path : c->host;
    size_t cap = strlen(name) + 16;
    char *text = malloc(cap);
    if (text == NULL)
        return NULL;
    if (c->unix_path != NULL)
        snprintf(text, cap, "unix:%s", name);
    else
        snprintf(text, cap, "%s%s%s:%u", v6 ? "[" : "", name, v6 ? "]" : "", (unsigned)c->port);
    return text;
}

clothd_code clothd_connect(const clothd_options *o, clothd_client **out, clothd_error *err)
{
    if (out == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "out: NULL");
    *out = NULL;
    clothd_options defaults = clothd_options_default();
    if (o == NULL)
        o = &defaults;
    const char *token = o->token;
    if (token == NULL && o->token_from_env) {
        token = getenv(CLOTHD_TOKEN_ENV);
        if (token != NULL && token[0] == '\0')
            token = NULL;
    }
    clothd_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    c->sock = CLOTHD_NO_SOCKET;
    c->next_ticket = 1;
    c->first = 1;
    c->host = copy_string(o->host ? o->host : CLOTHD_DEFAULT_HOST);
    c->token = copy_string(token);
    c->unix_path = copy_string(o->unix_path);
    c->port = o->port ? o->port : CLOTHD_DEFAULT_PORT;
    if (c->host == NULL || (token != NULL && c->token == NULL) || (o->unix_path != NULL && c->unix_path == NULL) ||
        (c->endpoint = endpoint_text(c)) == NULL) {
        clothd_close(c);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    }
    c->timeout_ms = o->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : o->timeout_ms;
    c->reconnect = o->reconnect;
    c->reconnect_timeout_ms = o->reconnect_timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : o->reconnect_timeout_ms;
    c->rcvbuf = o->rcvbuf;
    c->max_message = o->max_message ? o->max_message : DEFAULT_MAX_MESSAGE;
    c->on_frame = o->on_frame;
    c->on_event = o->on_event;
    c->on_warning = o->on_warning;
    c->user = o->user;
    c->link = CDC_LINK_CLOSED;
    c->strict = o->strict;
    c->no_hello = o->no_hello;
    size_t nrequire = o->require != NULL ? o->require_count : 0;
    if (nrequire > CLOTHD_MAX_FEATURES) {
        clothd_close(c);
        return cdc_fail(err, CLOTHD_E_USAGE, "require: %zu features, at most %d", nrequire, CLOTHD_MAX_FEATURES);
    }
    if (nrequire > 0 || c->strict) {
        c->require = calloc(nrequire + 1, sizeof *c->require);
        if (c->require == NULL) {
            clothd_close(c);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < nrequire; i++) {
        const char *f = o->require[i];
        if (f == NULL || f[0] == '\0' || strlen(f) > CLOTHD_FEATURE_NAME_MAX) {
            clothd_close(c);
            return cdc_fail(err, CLOTHD_E_USAGE, "require[%zu]: not a feature name", i);
        }
        if ((c->require[c->nrequire++] = copy_string(f)) == NULL) {
            clothd_close(c);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
    }
    bool strict_listed = false;
    for (size_t i = 0; i < c->nrequire; i++)
        strict_listed = strict_listed || strcmp(c->require[i], "strict") == 0;
    if (c->strict && !strict_listed && (c->require[c->nrequire++] = copy_string("strict")) == NULL) {
        clothd_close(c);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    }

    char msg[300];
    if (!cdc_net_init(msg, sizeof msg)) {
        clothd_close(c);
        return cdc_fail(err, CLOTHD_E_IO, "%s", msg);
    }
    c->net_ready = true;
    if (c->unix_path != NULL) {
        if (!cdc_net_unix_addr(c->unix_path, &c->addrs[0], msg, sizeof msg)) {
            clothd_code rc = cdc_fail(err, CLOTHD_E_USAGE, "unix_path: %s: \"%.200s\"", msg, c->unix_path);
            clothd_close(c);
            return rc;
        }
        c->naddrs = 1;
    } else if (!cdc_net_resolve(c->host, c->port, c->addrs, CDC_MAX_ADDRS, &c->naddrs, msg, sizeof msg)) {
        clothd_code rc = cdc_fail(err, CLOTHD_E_IO, "cannot connect to clothd at %s: %s", c->endpoint, msg);
        clothd_close(c);
        return rc;
    }
    /* Connect, then wait for the replies to `auth` and `hello`, which the
     * connection starts with. */
    int64_t deadline = cdc_deadline(c);
    cdc_link_start(c, true);
    clothd_code rc = CLOTHD_OK;
    while (rc == CLOTHD_OK && (c->link != CDC_LINK_UP || c->count > 0)) {
        if (c->link == CDC_LINK_CLOSED)
            break;
        if (deadline >= 0 && cdc_net_now_ms() >= deadline) {
            rc = cdc_fail(err, CLOTHD_E_TIMEOUT, "timeout: connecting to %s took over %d ms", c->endpoint,
                          c->timeout_ms);
            break;
        }
        rc = cdc_io(c, deadline, NULL, err);
    }
    if (c->link == CDC_LINK_CLOSED) {
        clothd_code code = c->close_code ? c->close_code : CLOTHD_E_CLOSED;
        if (code == CLOTHD_E_IO) /* no server: say which one was asked for */
            rc = cdc_fail(err, code, "cannot connect to clothd at %s: %s", c->endpoint, c->close_reason);
        else if (code <= CLOTHD_WIRE_CODE_COUNT || code == CLOTHD_E_INCOMPATIBLE) /* the server's answer */
            rc = cdc_fail(err, code, "%s", c->close_reason);
        else
            rc = cdc_closed_error(c, err);
    }
    if (rc != CLOTHD_OK) {
        clothd_close(c);
        return rc;
    }
    c->initial = false; /* from now on a drop may reconnect */
    *out = c;
    cdc_ok(err);
    return CLOTHD_OK;
}

void clothd_close(clothd_client *c)
{
    if (c == NULL)
        return;
    if (c->sock != CLOTHD_NO_SOCKET)
        cdc_net_close(c->sock);
    if (c->net_ready)
        cdc_net_cleanup();
    cdc_buf_free(&c->in);
    cdc_buf_free(&c->out);
    cdc_jdoc_free(&c->doc);
    cdc_ring_free(c);
    cdc_subs_free(c);
    cdc_shm_free(c);
    free(c->host);
    free(c->unix_path);
    free(c->endpoint);
    free(c->token);
    free(c->scene);
    for (size_t i = 0; i < c->nrequire; i++)
        free(c->require[i]);
    free(c->require);
    free(c);
}

clothd_link clothd_link_state(const clothd_client *c)
{
    if (c == NULL || c->link == CDC_LINK_CLOSED)
        return CLOTHD_LINK_CLOSED;
    return c->link == CDC_LINK_UP ? CLOTHD_LINK_CONNECTED : CLOTHD_LINK_RECONNECTING;
}

clothd_access clothd_access_granted(const clothd_client *c)
{
    return c ? c->access : CLOTHD_ACCESS_NONE;
}

clothd_client_stats clothd_get_client_stats(const clothd_client *c)
{
    clothd_client_stats s;
    memset(&s, 0, sizeof s);
    return c ? c->stats : s;
}

clothd_socket clothd_fd(const clothd_client *c)
{
    return c != NULL && c->link == CDC_LINK_UP ? c->sock : CLOTHD_NO_SOCKET;
}

int clothd_wants(const clothd_client *c)
{
    if (c == NULL || c->link != CDC_LINK_UP)
        return 0;
    return CLOTHD_WANT_READ | (cdc_buf_avail(&c->out) > 0 && !c->send_failed ? CLOTHD_WANT_WRITE : 0);
}

clothd_code clothd_poll(clothd_client *c, int timeout_ms, int *handled, clothd_error *err)
{
    if (handled != NULL)
        *handled = 0;
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    int64_t deadline = timeout_ms < 0 ? -1 : cdc_net_now_ms() + timeout_ms;
    int n = 0;
    clothd_code rc = cdc_io(c, deadline, &n, err);
    /* A reconnect that just came up, or a partial message: one more look. */
    if (rc == CLOTHD_OK && n == 0 && c->link == CDC_LINK_UP && (deadline < 0 || cdc_net_now_ms() < deadline))
        rc = cdc_io(c, deadline, &n, err);
    if (handled != NULL)
        *handled = n;
    if (rc == CLOTHD_OK)
        cdc_ok(err);
    return rc;
}

clothd_code clothd_flush(clothd_client *c, clothd_error *err)
{
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    int64_t deadline = cdc_deadline(c);
    while (c->link == CDC_LINK_UP && cdc_buf_avail(&c->out) > 0 && !c->send_failed) {
        if (deadline >= 0 && cdc_net_now_ms() >= deadline)
            return cdc_fail(err, CLOTHD_E_TIMEOUT, "timeout: %zu bytes still unsent after %d ms",
                            cdc_buf_avail(&c->out), c->timeout_ms);
        clothd_code rc = cdc_io(c, deadline, NULL, err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    if (c->link == CDC_LINK_CLOSED)
        return cdc_closed_error(c, err);
    cdc_ok(err);
    return CLOTHD_OK;
}
