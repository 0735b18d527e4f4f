/* The connection: connecting and reconnecting (a small state machine that
 * never blocks longer than the caller's deadline), writing the queued
 * requests, reading, and splitting the byte stream into its two kinds of
 * message by their first byte: '{' a JSON line (a reply, kept for its
 * ticket, or an event), 0x89 a binary frame (PROTOCOL.md, Transport).
 *
 * A blocking wait names the ticket it waits for (c->awaiting): that reply
 * is left in place in the input buffer and dispatching stops right after
 * it, so the caller decodes it from the parse already made, without a copy;
 * what follows is dispatched once the caller is done (cdc_collect).
 * Other replies are copied into their ticket's slot. A drop fails every
 * waiting ticket; with automatic reconnect the client then connects again,
 * presents its token and renews its subscriptions (subs.c); a shared-memory
 * ring is unmapped by the drop and mapped again from the renewed replies. */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK 65536
#define READ_ROUNDS 64    /* recv calls per wake-up at most */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

int64_t cdc_deadline(const clothd_client *c)
{
    return c->timeout_ms < 0 ? -1 : cdc_net_now_ms() + c->timeout_ms;
}

static int remaining(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t left = deadline - cdc_net_now_ms();
    if (left <= 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

clothd_code cdc_closed_error(const clothd_client *c, clothd_error *err)
{
    return cdc_fail(err, CLOTHD_E_CLOSED, "connection closed: %s", c->close_reason);
}

void cdc_drop(clothd_client *c, clothd_code code, bool fatal, const char *fmt, ...)
{
    if (c->link == CDC_LINK_CLOSED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->close_reason, sizeof c->close_reason, fmt, ap);
    va_end(ap);
    c->close_code = code;
    if (c->sock != CLOTHD_NO_SOCKET)
        cdc_net_close(c->sock);
    c->sock = CLOTHD_NO_SOCKET;
    /* The memory stays: a reply left in place remains readable. */
    cdc_buf_clear(&c->in);
    cdc_buf_clear(&c->out);
    c->peer_closed = false;
    c->send_failed = false;
    c->peer_reason[0] = '\0';
    c->access = CLOTHD_ACCESS_NONE;
    cdc_shm_detach(c); /* the next connection's subscribe replies name the ring again */
    bool again = c->reconnect && !fatal && !c->initial;
    cdc_ring_fail_waiting(c, code, again);
    if (!again) {
        c->link = CDC_LINK_CLOSED;
        return;
    }
    int64_t now = cdc_net_now_ms();
    c->link = CDC_LINK_RETRY;
    c->retry_at = now;
    c->give_up_at = c->reconnect_timeout_ms < 0 ? -1 : now + c->reconnect_timeout_ms;
    c->backoff_ms = BACKOFF_MIN_MS;
    c->addr_next = 0;
}

void cdc_link_start(clothd_client *c, bool initial)
{
    c->initial = initial;
    c->link = CDC_LINK_RETRY;
    c->retry_at = cdc_net_now_ms();
    c->give_up_at = -1;
    c->backoff_ms = BACKOFF_MIN_MS;
    c->addr_next = 0;
}

/* Every address failed: try again later, or give up. */
static void retry_later(clothd_client *c, const char *why)
{
    int64_t now = cdc_net_now_ms();
    c->addr_next = 0;
    if (c->initial) {
        c->link = CDC_LINK_CLOSED;
        c->close_code = CLOTHD_E_IO;
        snprintf(c->close_reason, sizeof c->close_reason, "%s", why);
        return;
    }
    if (c->give_up_at >= 0 && now + c->backoff_ms > c->give_up_at) {
        c->link = CDC_LINK_CLOSED;
        c->close_code = CLOTHD_E_CLOSED;
        snprintf(c->close_reason, sizeof c->close_reason,
                 "reconnect: gave up after %d ms; last attempt: %s", c->reconnect_timeout_ms, why);
        return;
    }
    c->link = CDC_LINK_RETRY;
    c->retry_at = now + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void connected(clothd_client *c)
{
    c->link = CDC_LINK_UP;
    c->peer_closed = false;
    c->send_failed = false;
    c->peer_reason[0] = '\0';
    cdc_buf_clear(&c->in);
    cdc_buf_clear(&c->out);
    if (!c->initial)
        c->stats.reconnects++;
    if (!cdc_sub_renew(c))
        cdc_drop(c, CLOTHD_E_NOMEM, true, "out of memory renewing the subscriptions");
}

/* Starts connecting to the next address. */
static void attempt(clothd_client *c)
{
    char msg[300] = "no address to connect to";
    while (c->addr_next < c->naddrs) {
        clothd_socket s = CLOTHD_NO_SOCKET;
        cdc_net_result r = cdc_net_connect_start(&c->addrs[c->addr_next++], c->rcvbuf, &s, msg, sizeof msg);
        if (r == CDC_NET_OK) {
            c->sock = s;
            connected(c);
            return;
        }
        if (r == CDC_NET_AGAIN) {
            c->sock = s;
            c->link = CDC_LINK_CONNECTING;
            return;
        }
    }
    retry_later(c, msg);
}

/* The connect in progress is writable (or failed). */
static void finish_connect(clothd_client *c)
{
    char msg[300];
    if (cdc_net_connect_finish(c->sock, &c->addrs[c->addr_next - 1], msg, sizeof msg) == CDC_NET_OK) {
        connected(c);
        return;
    }
    cdc_net_close(c->sock);
    c->sock = CLOTHD_NO_SOCKET;
    if (c->addr_next < c->naddrs)
        attempt(c);
    else
        retry_later(c, msg);
}

void cdc_flush_some(clothd_client *c)
{
    while (c->link == CDC_LINK_UP && cdc_buf_avail(&c->out) > 0) {
        size_t sent = 0;
        char msg[200];
        cdc_net_result r = cdc_net_send(c->sock, cdc_buf_head(&c->out), cdc_buf_avail(&c->out), &sent,
                                        msg, sizeof msg);
        if (r == CDC_NET_AGAIN)
            return;
        if (r == CDC_NET_ERROR) {
            /* The server is gone or going: what it sent before is still
             * to be read (an error reply before it closed), so read on. */
            cdc_buf_clear(&c->out);
            c->send_failed = true;
            snprintf(c->peer_reason, sizeof c->peer_reason, "%s", msg);
            return;
        }
        cdc_buf_consume(&c->out, sent);
        c->stats.bytes_out += sent;
    }
}

static void handle_event(clothd_client *c, const char *line, size_t len)
{
    const cdc_jdoc *d = &c->doc;
    c->stats.events++;
    if (c->on_event == NULL)
        return;
    clothd_event ev;
    memset(&ev, 0, sizeof ev);
    char name[64] = "";
    cdc_jstr_copy(d, cdc_jget(d, 0, "event"), name, sizeof name, NULL);
    ev.name = name;
    uint64_t id = 0;
    if (cdc_juint(d, cdc_jget(d, 0, "instance"), UINT32_MAX, &id))
        ev.instance.id = (uint32_t)id;
    cdc_jvec3(d, cdc_jget(d, 0, "wind"), ev.wind);
    cdc_jbool(d, cdc_jget(d, 0, "enabled"), &ev.enabled);
    ev.json = line;
    ev.json_size = len;
    c->on_event(c->user, &ev);
}

static void keep_reply(clothd_client *c, cdc_entry *e, clothd_ticket t, const char *line, size_t len)
{
    if (t == c->awaiting) {
        e->in_place = true;
        e->ref = line;
        e->len = len;
        e->state = CDC_ARRIVED;
        c->stop_batch = true;
        return;
    }
    if (e->cap < len + 1) {
        char *p = realloc(e->line, len + 1);
        if (p == NULL) {
            cdc_drop(c, CLOTHD_E_NOMEM, true, "out of memory keeping a reply of %zu bytes", len);
            return;
        }
        e->line = p;
        e->cap = len + 1;
    }
    memcpy(e->line, line, len);
    e->line[len] = '\0';
    e->len = len;
    e->state = CDC_ARRIVED;
}

/* The reply's "warnings" (members the server did not read): counted, and
 * each handed to on_warning. */
static void report_warnings(clothd_client *c, clothd_ticket t, const cdc_jdoc *d)
{
    int list = cdc_jget(d, 0, "warnings");
    if (list < 0 || cdc_jtype_of(d, list) != CDC_JARRAY)
        return;
    for (int i = cdc_jfirst(d, list); i >= 0 && (uint32_t)i < d->tok[list].next; i = cdc_jnext(d, i)) {
        char text[512];
        if (!cdc_jstr_copy(d, i, text, sizeof text, NULL))
            continue;
        c->stats.warnings++;
        if (c->on_warning != NULL)
            c->on_warning(c->user, t, text);
    }
}

static void handle_line(clothd_client *c, const char *line, size_t len)
{
    cdc_jdoc *d = &c->doc;
    char msg[160];
    if (!cdc_jparse(d, line, len, msg, sizeof msg)) {
        cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a line from the server is not valid JSON (%s)", msg);
        return;
    }
    if (cdc_jtype_of(d, 0) != CDC_JOBJECT) {
        cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a line from the server is not a JSON object");
        return;
    }
    int ok_tok = cdc_jget(d, 0, "ok");
    if (ok_tok < 0 && cdc_jget(d, 0, "event") >= 0) {
        handle_event(c, line, len);
        return;
    }
    bool ok;
    if (!cdc_jbool(d, ok_tok, &ok)) {
        cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a reply without a boolean \"ok\"");
        return;
    }
    c->stats.replies++;
    clothd_ticket t = 0;
    cdc_entry *e = cdc_ring_next_waiting(c, &t);
    int id_tok = cdc_jget(d, 0, "id");
    if (e == NULL) {
        if (!ok && id_tok < 0) {
            /* Said before closing (the connection limit): the reason of the close. */
            clothd_error notice;
            cdc_reply_error(d, 0, &notice);
            snprintf(c->peer_reason, sizeof c->peer_reason, "the server said %.31s: %.250s", notice.wire_code,
                     notice.message);
            return;
        }
        cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a reply to no request");
        return;
    }
    if (e->any_id) {
        /* clothd_send_line: the line chose its id (or none). */
    } else if (id_tok >= 0) {
        uint64_t id = 0;
        if (!cdc_juint(d, id_tok, UINT64_MAX, &id) || id != t) {
            cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a reply with id %.*s where %llu was due",
                     (int)d->tok[id_tok].len, d->text + d->tok[id_tok].start, (unsigned long long)t);
            return;
        }
    } else if (ok) {
        cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: an ok reply without the request's id %llu",
                 (unsigned long long)t);
        return;
    }
    report_warnings(c, t, d);
    if (e->role != CDC_ROLE_USER) {
        cdc_internal_reply(c, e, t, d, 0);
        return;
    }
    if (ok)
        cdc_sub_apply(c, e, d, 0);
    if (e->discard) {
        if (!ok) {
            clothd_error er;
            cdc_reply_error(d, 0, &er);
            cdc_async_push(c, &er);
        } else if (e->shm_failed) {
            cdc_async_push(c, &c->shm_error);
        }
        cdc_entry_done(c, t);
        return;
    }
    keep_reply(c, e, t, line, len);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void cdc_dispatch_buffered(clothd_client *c, int *handled)
{
    c->stop_batch = false;
    while (c->link == CDC_LINK_UP && !c->stop_batch) {
        size_t avail = cdc_buf_avail(&c->in);
        if (avail == 0)
            break;
        const char *p = cdc_buf_head(&c->in);
        if (p[0] == '{') {
            const char *nl = memchr(p, '\n', avail);
            if (nl == NULL) {
                if (avail > c->max_message)
                    cdc_drop(c, CLOTHD_E_PROTOCOL, true,
                             "protocol: a reply line longer than %zu bytes (max_message)", c->max_message);
                break;
            }
            size_t len = (size_t)(nl - p);
            cdc_buf_consume(&c->in, len + 1); /* the bytes stay until the next read */
            if (len > 0 && p[len - 1] == '\r')
                len--;
            handle_line(c, p, len);
        } else if ((unsigned char)p[0] == 0x89) {
            if (avail < 40)
                break;
            uint32_t size = le32((const unsigned char *)p + 8);
            if (size < 40 || size > c->max_message) {
                cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: a frame of %lu bytes (40 to %zu allowed)",
                         (unsigned long)size, c->max_message);
                break;
            }
            if (avail < size)
                break;
            cdc_buf_consume(&c->in, size);
            c->stats.frames++;
            cdc_frame_dispatch(c, (const unsigned char *)p, size);
        } else {
            cdc_drop(c, CLOTHD_E_PROTOCOL, true,
                     "protocol: byte 0x%02x where a message starts (a reply starts with '{', a frame with 0x89)",
                     (unsigned)(unsigned char)p[0]);
            break;
        }
        if (handled != NULL)
            (*handled)++;
    }
    if (c->link == CDC_LINK_UP && c->peer_closed && !c->stop_batch) {
        size_t left = cdc_buf_avail(&c->in);
        if (left > 0)
            cdc_drop(c, CLOTHD_E_CLOSED, false, "the server closed the connection in the middle of a %s (%zu bytes of it came)",
                     cdc_buf_head(&c->in)[0] == '{' ? "reply" : "frame", left);
        else if (c->peer_reason[0] != '\0')
            cdc_drop(c, CLOTHD_E_CLOSED, false, "%s", c->peer_reason);
        else
            cdc_drop(c, CLOTHD_E_CLOSED, false, "the server closed the connection");
    }
}

static void read_some(clothd_client *c, int *handled)
{
    for (int round = 0; round < READ_ROUNDS && !c->peer_closed; round++) {
        if (!cdc_buf_reserve(&c->in, READ_CHUNK)) {
            cdc_drop(c, CLOTHD_E_NOMEM, true, "out of memory reading");
            return;
        }
        size_t room = c->in.cap - c->in.len, got = 0;
        char msg[200];
        cdc_net_result r = cdc_net_recv(c->sock, c->in.data + c->in.len, room, &got, msg, sizeof msg);
        if (r == CDC_NET_AGAIN)
            break;
        if (r == CDC_NET_EOF || r == CDC_NET_ERROR) {
            c->peer_closed = true;
            if (r == CDC_NET_ERROR && c->peer_reason[0] == '\0')
                snprintf(c->peer_reason, sizeof c->peer_reason, "%s", msg);
            break;
        }
        c->in.len += got;
        c->stats.bytes_in += got;
        if (got < room)
            break; /* drained for now */
    }
    cdc_dispatch_buffered(c, handled);
}

clothd_code cdc_io(clothd_client *c, int64_t deadline, int *handled, clothd_error *err)
{
    int transitions = 0;
    for (; c->link != CDC_LINK_UP; transitions++) {
        if (c->link == CDC_LINK_CLOSED)
            return cdc_closed_error(c, err);
        if (transitions > 2 * CDC_MAX_ADDRS + 2)
            return CLOTHD_OK; /* come back later */
        if (c->link == CDC_LINK_RETRY) {
            int64_t now = cdc_net_now_ms();
            if (now < c->retry_at) {
                int wait = (int)(c->retry_at - now);
                int left = remaining(deadline);
                cdc_net_sleep_ms(left >= 0 && left < wait ? left : wait);
                if (cdc_net_now_ms() < c->retry_at)
                    return CLOTHD_OK;
            }
            attempt(c);
            continue;
        }
        /* CONNECTING */
        int ready = cdc_net_wait(c->sock, CLOTHD_WANT_WRITE, remaining(deadline));
        if (ready == 0)
            return CLOTHD_OK;
        finish_connect(c);
    }
    cdc_flush_some(c);
    if (transitions > 0)
        return CLOTHD_OK; /* just connected: the caller looks again before anything waits */
    int want = CLOTHD_WANT_READ;
    if (cdc_buf_avail(&c->out) > 0 && !c->send_failed)
        want |= CLOTHD_WANT_WRITE;
    int ready = c->peer_closed ? CLOTHD_WANT_READ : cdc_net_wait(c->sock, want, remaining(deadline));
    if (ready < 0) {
        cdc_drop(c, CLOTHD_E_IO, false, "poll failed on the connection");
    } else {
        if (ready & CLOTHD_WANT_WRITE)
            cdc_flush_some(c);
        if (ready & CLOTHD_WANT_READ)
            read_some(c, handled);
    }
    if (c->link == CDC_LINK_CLOSED)
        return cdc_closed_error(c, err);
    return CLOTHD_OK;
}

clothd_code cdc_wait_link(clothd_client *c, int64_t deadline, clothd_error *err)
{
    while (c->link != CDC_LINK_UP) {
        if (c->link == CDC_LINK_CLOSED)
            return cdc_closed_error(c, err);
        if (deadline >= 0 && cdc_net_now_ms() >= deadline) {
            clothd_code rc = cdc_fail(err, CLOTHD_E_TIMEOUT, "timeout: still reconnecting (%s)", c->close_reason);
            if (err != NULL)
                err->reconnecting = true;
            return rc;
        }
        clothd_code rc = cdc_io(c, deadline, NULL, err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    return CLOTHD_OK;
}
