/* The HTTP ports for orchestrators and scrapers, on the server's own libuv
 * loop: --health-port serves GET /healthz and /readyz, --metrics-port
 * serves GET /metrics (Prometheus text); one port may serve all three.
 *
 *   /healthz  200 "ok": the loop answered, so it is alive.
 *   /readyz   200 "ready" while the server listens and is under its
 *             limits (connections, instances, particles of all instances);
 *             503 "not ready: <why>" otherwise, e.g. at --max-connections.
 *   /metrics  200, the text exposition format 0.0.4 (metrics.c).
 *   anything else 404; a method other than GET or HEAD 405; a request
 *   line that is not HTTP/1.x 400.
 *
 * This is not a general HTTP server: one request per connection, answered
 * with "Connection: close". The request head (request line and headers)
 * must fit CD_HTTP_REQUEST_MAX bytes (else 431) and arrive within
 * CD_HTTP_TIMEOUT_MS of the connect, or --line-timeout when shorter (else
 * 408); a body is never read. At most
 * CD_HTTP_MAX_CONNS connections at once; more are closed unanswered. After
 * the response the write side is shut down and input is read and dropped
 * until the client closes (or the timer ends it), so that closing never
 * resets a connection whose response the client has not read yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CD_HTTP_REQUEST_MAX 4096u
#define CD_HTTP_TIMEOUT_MS 5000u
#define CD_HTTP_LINGER_MS 1000u
#define CD_HTTP_MAX_CONNS 32u

enum { SERVES_HEALTH = 1u, SERVES_METRICS = 2u };

typedef struct cd_http_listener {
    uv_tcp_t tcp;
    cd_health *health;
    unsigned serves;
    char address[CD_ADDR_TEXT_MAX]; /* "127.0.0.1:8080", "[::1]:8080" */
} cd_http_listener;

typedef struct cd_http_conn cd_http_conn;
struct cd_http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the request's deadline, then the linger after the response */
    cd_health *health;
    cd_http_conn *prev, *next;
    unsigned serves;
    unsigned handles; /* open handles of this connection */
    bool answered;    /* a response is queued: input is dropped */
    bool closing;
    char peer[CD_ADDR_TEXT_MAX];
    char *response;
    uv_write_t write;
    uv_shutdown_t shutdown;
    size_t len;
    char buf[CD_HTTP_REQUEST_MAX];
};

struct cd_health {
    cd_server *server;
    cd_http_listener listeners[2];
    unsigned listener_count;
    cd_http_conn *conns;
    unsigned conn_count;
    unsigned handles; /* open handles (listeners and connections) */
    bool closing;     /* freed when the last handle is closed */
};

/* ---- handles and their lifetime ---------------------------------------- */

static void health_handle_closed(cd_health *h)
{
    h->handles--;
    if (h->closing && h->handles == 0) {
        h->server->health = NULL;
        free(h);
    }
}

static void on_listener_closed(uv_handle_t *handle)
{
    cd_http_listener *l = handle->data;
    health_handle_closed(l->health);
}

static void on_conn_handle_closed(uv_handle_t *handle)
{
    cd_http_conn *c = handle->data;
    cd_health *h = c->health;
    if (--c->handles == 0) {
        if (c->prev != NULL)
            c->prev->next = c->next;
        else
            h->conns = c->next;
        if (c->next != NULL)
            c->next->prev = c->prev;
        h->conn_count--;
        free(c->response);
        free(c);
    }
    health_handle_closed(h);
}

static void close_conn(cd_http_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

/* ---- responses ------------------------------------------------------------ */

static void on_timer(uv_timer_t *timer);

static void on_shutdown(uv_shutdown_t *req, int status)
{
    cd_http_conn *c = req->data;
    if (status < 0 && !c->closing)
        close_conn(c);
}

static void on_written(uv_write_t *req, int status)
{
    cd_http_conn *c = req->data;
    if (c->closing)
        return;
    c->shutdown.data = c;
    if (status < 0 || uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        close_conn(c);
    /* else: the client's close ends it (on_read), or the linger timer does */
}

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* Queues the whole response (status line, headers, the body unless
 * head_only); the connection closes once it is written. */
static void respond(cd_http_conn *c, int status, const char *type, const char *body, size_t body_len,
                    bool head_only)
{
    if (c->answered || c->closing)
        return;
    c->answered = true; /* from now on input is read and dropped */
    char head[320];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
                     status, reason_of(status), type, body_len,
                     status == 405 ? "Allow: GET, HEAD\r\n" : "");
    const size_t send_body = head_only ? 0 : body_len;
    c->response = malloc((size_t)n + send_body);
    if (n < 0 || (size_t)n >= sizeof head || c->response == NULL) {
        close_conn(c);
        return;
    }
    memcpy(c->response, head, (size_t)n);
    memcpy(c->response + n, body, send_body);
    uv_buf_t buf = uv_buf_init(c->response, (unsigned)((size_t)n + send_body));
    c->write.data = c;
    if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
        close_conn(c);
        return;
    }
    uv_timer_start(&c->timer, on_timer, CD_HTTP_LINGER_MS, 0);
}

static void respond_text(cd_http_conn *c, int status, const char *text, bool head_only)
{
    respond(c, status, "text/plain; charset=utf-8", text, strlen(text), head_only);
}

/* Why the server should not get new work now; NULL when it is ready. */
static const char *not_ready(const cd_server *s, char *why, size_t cap)
{
    const cd_server_options *o = &s->opts;
    const uint64_t particles = cd_world_total_particles(s->world);
    const uint32_t instances = cd_world_count(s->world);
    if (s->shutting_down)
        snprintf(why, cap, "shutting down");
    else if (!uv_is_active((const uv_handle_t *)&s->listener))
        snprintf(why, cap, "not listening");
    else if (s->conn_count >= o->max_connections)
        snprintf(why, cap, "connections: %u of %u (--max-connections)", s->conn_count,
                 o->max_connections);
    else if (instances >= o->max_instances)
        snprintf(why, cap, "instances: %u of %u (--max-instances)", instances, o->max_instances);
    else if (particles >= o->max_total_particles)
        snprintf(why, cap, "particles: %llu of %u (--max-total-particles)",
                 (unsigned long long)particles, o->max_total_particles);
    else
        return NULL;
    return why;
}

static void log_request(cd_http_conn *c, const char *method, const char *route, int status)
{
    cd_log *log = &c->health->server->log;
    if (!cd_log_begin(log, CD_LOG_DEBUG, "http"))
        return;
    cd_log_str(log, "peer", c->peer);
    cd_log_str(log, "method", method);
    cd_log_str(log, "path", route);
    cd_log_uint(log, "status", (uint64_t)status);
    cd_log_end(log);
}

/* The request head is complete in buf: answers it. Only the request line
 * is read; the path is matched up to a '?'. Nothing the client sent is
 * logged but the method and path when they are known ones. */
static void route(cd_http_conn *c)
{
    cd_server *server = c->health->server;
    size_t end = 0;
    while (end < c->len && c->buf[end] != '\r' && c->buf[end] != '\n')
        end++;
    c->buf[end] = '\0'; /* end < len: a head ends with a line break */
    char *save = NULL;
    char *method = strtok_r(c->buf, " ", &save);
    char *target = method ? strtok_r(NULL, " ", &save) : NULL;
    char *version = target ? strtok_r(NULL, " ", &save) : NULL;
    if (version == NULL || strtok_r(NULL, " ", &save) != NULL ||
        (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)) {
        respond_text(c, 400, "bad request\n", false);
        log_request(c, "-", "-", 400);
        return;
    }
    const bool head = strcmp(method, "HEAD") == 0;
    const char *known_method = head ? "HEAD" : strcmp(method, "GET") == 0 ? "GET" : NULL;
    target[strcspn(target, "?")] = '\0';
    const char *known_path = NULL;
    if ((c->serves & SERVES_HEALTH) && strcmp(target, "/healthz") == 0)
        known_path = "/healthz";
    else if ((c->serves & SERVES_HEALTH) && strcmp(target, "/readyz") == 0)
        known_path = "/readyz";
    else if ((c->serves & SERVES_METRICS) && strcmp(target, "/metrics") == 0)
        known_path = "/metrics";
    int status = 200;
    if (known_method == NULL) {
        status = 405;
        respond_text(c, status, "method not allowed\n", false);
    } else if (known_path == NULL) {
        status = 404;
        respond_text(c, status, "not found\n", head);
    } else if (strcmp(known_path, "/healthz") == 0) {
        respond_text(c, status, "ok\n", head);
    } else if (strcmp(known_path, "/readyz") == 0) {
        char why[160], body[200];
        if (not_ready(server, why, sizeof why) != NULL) {
            status = 503;
            snprintf(body, sizeof body, "not ready: %s\n", why);
            respond_text(c, status, body, head);
        } else {
            respond_text(c, status, "ready\n", head);
        }
    } else {
        size_t len = 0;
        char *text = cd_metrics_prometheus(server, &len);
        if (text == NULL) {
            status = 500;
            respond_text(c, status, "out of memory\n", head);
        } else {
            respond(c, status, "text/plain; version=0.0.4; charset=utf-8", text, len, head);
            free(text);
        }
    }
    log_request(c, known_method ? known_method : "other", known_path ? known_path : "other", status);
}

/* ---- input ---------------------------------------------------------------- */

static void on_timer(uv_timer_t *timer)
{
    cd_http_conn *c = timer->data;
    if (c->answered) {
        close_conn(c); /* the linger is over */
        return;
    }
    respond_text(c, 408, "request timeout\n", false);
    log_request(c, "-", "-", 408);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    cd_http_conn *c = handle->data;
    if (c->answered)
        c->len = 0; /* read and dropped */
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len));
}

/* Does buf hold a complete request head (an empty line after it)? */
static bool head_complete(const cd_http_conn *c)
{
    for (size_t i = 1; i < c->len; i++) {
        if (c->buf[i] != '\n')
            continue;
        if (c->buf[i - 1] == '\n' || (i >= 2 && c->buf[i - 1] == '\r' && c->buf[i - 2] == '\n'))
            return true;
    }
    return false;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    cd_http_conn *c = stream->data;
    if (nread < 0) {
        close_conn(c);
        return;
    }
    if (c->answered || c->closing)
        return;
    c->len += (size_t)nread;
    if (head_complete(c)) {
        route(c);
    } else if (c->len == sizeof c->buf) {
        respond_text(c, 431, "request head too large\n", false);
        log_request(c, "-", "-", 431);
    }
}

static void on_connection(uv_stream_t *listener, int status)
{
    cd_http_listener *l = listener->data;
    cd_health *h = l->health;
    if (status < 0 || h->closing)
        return;
    cd_http_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->health = h;
    c->serves = l->serves;
    uv_tcp_init(h->server->loop, &c->tcp);
    uv_timer_init(h->server->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->handles = 2;
    h->handles += 2;
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->conn_count++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0 || h->conn_count > CD_HTTP_MAX_CONNS) {
        close_conn(c);
        return;
    }
    cd_peer_text(&c->tcp, c->peer);
    const uint64_t line_ms = (uint64_t)h->server->opts.line_timeout * 1000u;
    uv_timer_start(&c->timer, on_timer, line_ms < CD_HTTP_TIMEOUT_MS ? line_ms : CD_HTTP_TIMEOUT_MS, 0);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        close_conn(c);
}

/* ---- listeners ------------------------------------------------------------ */

static bool add_listener(cd_health *h, const char *bind, int port, unsigned serves, const char *flag)
{
    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(bind, port, (struct sockaddr_in *)&addr);
    if (rc != 0)
        rc = uv_ip6_addr(bind, port, (struct sockaddr_in6 *)&addr);
    if (rc != 0) {
        fprintf(stderr, "clothd: --http-bind %s: not an IP address\n", bind);
        return false;
    }
    cd_http_listener *l = &h->listeners[h->listener_count++];
    l->health = h;
    l->serves = serves;
    uv_tcp_init(h->server->loop, &l->tcp);
    l->tcp.data = l;
    h->handles++;
    rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, 64, on_connection);
    if (rc != 0) {
        fprintf(stderr, "clothd: cannot listen on %s:%d (%s): %s\n", bind, port, flag, uv_strerror(rc));
        return false;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    memset(&bound, 0, sizeof bound);
    uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&bound, &len);
    cd_addr_text(&bound, l->address);
    return true;
}

bool cd_health_start(cd_server *server)
{
    const cd_server_options *o = &server->opts;
    if (o->health_port < 0 && o->metrics_port < 0)
        return true;
    cd_health *h = calloc(1, sizeof *h);
    if (h == NULL) {
        fprintf(stderr, "clothd: out of memory at start-up\n");
        return false;
    }
    h->server = server;
    server->health = h;
    const char *bind = o->http_bind[0] != '\0' ? o->http_bind : o->bind;
    const bool shared = o->health_port >= 0 && o->metrics_port == o->health_port;
    if (o->health_port >= 0 &&
        !add_listener(h, bind, o->health_port, SERVES_HEALTH | (shared ? SERVES_METRICS : 0u),
                      "--health-port"))
        return false;
    if (o->metrics_port >= 0 && !shared &&
        !add_listener(h, bind, o->metrics_port, SERVES_METRICS, "--metrics-port"))
        return false;
    return true;
}

static const cd_http_listener *listener_serving(const cd_server *server, unsigned what)
{
    const cd_health *h = server->health;
    for (unsigned i = 0; h != NULL && i < h->listener_count; i++)
        if (h->listeners[i].serves & what)
            return &h->listeners[i];
    return NULL;
}

const char *cd_health_address(const cd_server *server, bool metrics)
{
    const cd_http_listener *l = listener_serving(server, metrics ? SERVES_METRICS : SERVES_HEALTH);
    return l != NULL ? l->address : "";
}

void cd_health_announce(const cd_server *server, FILE *out)
{
    const cd_health *h = server->health;
    for (unsigned i = 0; h != NULL && i < h->listener_count; i++) {
        const cd_http_listener *l = &h->listeners[i];
        if (l->serves == (SERVES_HEALTH | SERVES_METRICS))
            fprintf(out, "clothd health and metrics on http://%s (/healthz, /readyz, /metrics)\n",
                    l->address);
        else if (l->serves == SERVES_HEALTH)
            fprintf(out, "clothd health on http://%s (/healthz, /readyz)\n", l->address);
        else
            fprintf(out, "clothd metrics on http://%s (/metrics)\n", l->address);
    }
}

void cd_health_close(cd_server *server)
{
    cd_health *h = server->health;
    if (h == NULL || h->closing)
        return;
    h->closing = true;
    for (unsigned i = 0; i < h->listener_count; i++)
        uv_close((uv_handle_t *)&h->listeners[i].tcp, on_listener_closed);
    for (cd_http_conn *c = h->conns; c != NULL; c = c->next)
        close_conn(c);
    if (h->handles == 0) {
        server->health = NULL;
        free(h);
    }
}
