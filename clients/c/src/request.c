/* Requests and replies, command-independent: a request is built straight
 * into the output buffer ({"id":<ticket>,"cmd":...}) and dropped whole if a
 * field cannot be written; a reply is collected by waiting for its ticket,
 * checking "ok" and decoding the members. Also the escape hatches for
 * commands this client does not know (clothd_send_json, clothd_send_line). */
#include "internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [CDC_K_CREATE] = "create",
    [CDC_K_DESTROY] = "destroy",
    [CDC_K_PIN] = "pin",
    [CDC_K_UNPIN] = "unpin",
    [CDC_K_WIND] = "wind",
    [CDC_K_GRAVITY] = "gravity",
    [CDC_K_ADD_COLLIDER] = "addCollider",
    [CDC_K_MOVE_COLLIDER] = "moveCollider",
    [CDC_K_REMOVE_COLLIDER] = "removeCollider",
    [CDC_K_ENABLE] = "enable",
    [CDC_K_STEP] = "step",
    [CDC_K_GET] = "get",
    [CDC_K_SUBSCRIBE] = "subscribe",
    [CDC_K_UNSUBSCRIBE] = "unsubscribe",
    [CDC_K_STATUS] = "status",
    [CDC_K_DEBUG] = "debug",
    [CDC_K_SET] = "set",
    [CDC_K_TRANSFORM] = "transform",
    [CDC_K_ATTACH] = "attach",
    [CDC_K_TOPOLOGY] = "topology",
    [CDC_K_PING] = "ping",
    [CDC_K_AUTH] = "auth",
    [CDC_K_STATS] = "stats",
    [CDC_K_SAVE] = "save",
    [CDC_K_LOAD] = "load",
    [CDC_K_RECORD] = "record",
    [CDC_K_REPLAY] = "replay",
    [CDC_K_SKIN] = "skin",
    [CDC_K_TELEPORT] = "teleport",
    [CDC_K_SCENE] = "scene",
    [CDC_K_SCENES] = "scenes",
    [CDC_K_HELLO] = "hello",
    [CDC_K_RAW] = "a raw request",
};

/* The feature a command needs whatever its fields (PROTOCOL.md "hello"), or NULL. */
static const char *kind_feature(cdc_kind kind)
{
    switch (kind) {
    case CDC_K_SCENE:
    case CDC_K_SCENES:
        return "scenes";
    case CDC_K_SAVE:
    case CDC_K_LOAD:
        return "snapshots";
    case CDC_K_RECORD:
    case CDC_K_REPLAY:
        return "recording";
    case CDC_K_SKIN:
        return "skin";
    default:
        return NULL;
    }
}

/* The features a request needs by what it carries: a member's bytes as the
 * writer puts them (a key's quotes appear unescaped only as a key). */
static const struct {
    const char *text;
    const char *feature;
} member_features[] = {
    {",\"scene\":", "scenes"},
    {",\"ephemeral\":true", "ephemeral"},
    {",\"type\":\"softbody\"", "softbody"},
    {",\"triangles\":", "mesh"},
    {",\"maxDistance\":", "mesh"},
    {",\"backstopDistance\":", "mesh"},
    {",\"backstopRadius\":", "mesh"},
    {",\"invMassScale\":", "mesh"},
    {",\"stretchComplianceScale\":", "mesh"},
    {",\"bendComplianceScale\":", "mesh"},
    {",\"budgetMs\":", "budget"},
    {",\"lod\":", "budget"},
    {",\"priority\":", "budget"},
    {",\"shm\":true", "shm"},
};

clothd_code cdc_req_begin(cdc_req *r, clothd_client *c, cdc_kind kind, const char *cmd, clothd_error *err)
{
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    const char *feature = kind_feature(kind);
    if (feature != NULL) {
        clothd_code rc = cdc_need(c, feature, kind_names[kind], err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    if (c->link == CDC_LINK_CLOSED)
        return cdc_closed_error(c, err);
    if (c->link != CDC_LINK_UP) {
        clothd_code rc = cdc_fail(err, CLOTHD_E_CLOSED, "not connected: reconnecting (%s)", c->close_reason);
        if (err != NULL)
            err->reconnecting = true;
        return rc;
    }
    r->c = c;
    r->kind = kind;
    r->role = CDC_ROLE_USER;
    r->scoped = cdc_kind_takes_scene(kind);
    r->mark = cdc_buf_avail(&c->out);
    cdc_jw_init(&r->w, &c->out);
    cdc_jw_object_open(&r->w);
    cdc_jw_key(&r->w, "id");
    cdc_jw_u64(&r->w, c->next_ticket);
    if (cmd != NULL) {
        cdc_jw_key(&r->w, "cmd");
        cdc_jw_string(&r->w, cmd, strlen(cmd));
    }
    return CLOTHD_OK;
}

static void cut(cdc_req *r)
{
    r->c->out.len = r->c->out.off + r->mark;
    if (r->c->out.len == r->c->out.off)
        cdc_buf_clear(&r->c->out);
}

/* Queues the entry of a request whose bytes are in the output buffer. */
static clothd_code queue(cdc_req *r, clothd_ticket *ticket, cdc_entry **entry_out, clothd_error *err)
{
    clothd_client *c = r->c;
    cdc_entry *e = cdc_ring_push(c, r->kind);
    if (e == NULL) {
        cut(r);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory queueing a request");
    }
    e->role = (uint8_t)r->role;
    e->discard = ticket == NULL && r->role == CDC_ROLE_USER;
    c->stats.requests++;
    if (ticket != NULL)
        *ticket = c->next_ticket - 1;
    if (entry_out != NULL)
        *entry_out = e;
    cdc_flush_some(c);
    cdc_ok(err);
    return CLOTHD_OK;
}

/* Whether the request written so far holds `text` (",\"scene\":"). A
 * string value holds its quotes escaped, so a key's bytes appear only as a
 * key. */
static bool holds(const cdc_req *r, const char *text)
{
    const size_t n = strlen(text);
    const char *p = r->c->out.data + r->c->out.off + r->mark;
    const char *end = r->c->out.data + r->c->out.len;
    for (; end - p >= (ptrdiff_t)n; p++)
        if (memcmp(p, text, n) == 0)
            return true;
    return false;
}

static bool names_scene(const cdc_req *r)
{
    return holds(r, member_features[0].text);
}

/* CLOTHD_OK when the server has every feature the request's members need
 * (a user's request of a command this client knows). */
static clothd_code check_members(const cdc_req *r, clothd_error *err)
{
    if (r->role != CDC_ROLE_USER || r->kind == CDC_K_RAW || r->c->info.hello == CLOTHD_HELLO_UNKNOWN)
        return CLOTHD_OK;
    for (size_t i = 0; i < sizeof member_features / sizeof member_features[0]; i++) {
        if (!holds(r, member_features[i].text))
            continue;
        clothd_code rc = cdc_need(r->c, member_features[i].feature, kind_names[r->kind], err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    return CLOTHD_OK;
}

clothd_code cdc_req_end(cdc_req *r, clothd_ticket *ticket, cdc_entry **entry_out, clothd_error *err)
{
    /* The client's scene, on user requests only (a renewed subscription
     * names its instance and must not be held to whatever scene is
     * current), and not over a scene the request names itself. */
    if (r->scoped && r->role == CDC_ROLE_USER && r->c->scene != NULL && !names_scene(r))
        cdc_put_str(&r->w, "scene", r->c->scene);
    if (r->w.fault == CDC_JW_OK) {
        clothd_code rc = check_members(r, err);
        if (rc != CLOTHD_OK) {
            cut(r);
            return rc;
        }
    }
    cdc_jw_object_close(&r->w);
    if (r->w.fault == CDC_JW_OK && !cdc_buf_append(&r->c->out, "\n", 1))
        r->w.fault = CDC_JW_NOMEM;
    if (r->w.fault != CDC_JW_OK) {
        cut(r);
        const char *key = r->w.last_key ? r->w.last_key : kind_names[r->kind];
        switch (r->w.fault) {
        case CDC_JW_NOT_FINITE:
            return cdc_fail(err, CLOTHD_E_USAGE, "%s: not a finite number (JSON cannot carry it)", key);
        case CDC_JW_BAD_STRING:
            return cdc_fail(err, CLOTHD_E_USAGE, "%s: not valid UTF-8", key);
        case CDC_JW_TOO_DEEP:
            return cdc_fail(err, CLOTHD_E_USAGE, "%s: nested too deep", key);
        default:
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory writing a request");
        }
    }
    return queue(r, ticket, entry_out, err);
}

clothd_code cdc_req_begin_binary(cdc_req *r, clothd_client *c, cdc_kind kind, clothd_error *err)
{
    clothd_code rc = cdc_req_begin(r, c, kind, NULL, err);
    if (rc == CLOTHD_OK)
        cut(r); /* no JSON envelope: the caller appends the whole message */
    return rc;
}

/* The header's u32 request id is the ticket; a ticket beyond it (after 4
 * billion requests) goes as 0, and the reply (then without "id") is matched
 * by its place alone, as clothd_send_line's are. */
uint32_t cdc_req_binary_id(const cdc_req *r)
{
    return r->c->next_ticket <= UINT32_MAX ? (uint32_t)r->c->next_ticket : 0;
}

clothd_code cdc_req_end_binary(cdc_req *r, bool ok, clothd_ticket *ticket, clothd_error *err)
{
    if (!ok) {
        cut(r);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory writing a %s request", kind_names[r->kind]);
    }
    bool anonymous = cdc_req_binary_id(r) == 0;
    cdc_entry *e = NULL;
    clothd_code rc = queue(r, ticket, &e, err);
    if (e != NULL && anonymous)
        e->any_id = true;
    return rc;
}

clothd_code cdc_collect(clothd_client *c, clothd_ticket t, uint64_t kinds, int64_t deadline, bool raw,
                        cdc_decode_fn fn, void *out, size_t out_size, const void *arg, clothd_error *err)
{
    if (out != NULL)
        memset(out, 0, out_size);
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    cdc_entry *e = cdc_entry_of(c, t);
    if (e == NULL || e->role != CDC_ROLE_USER || e->discard)
        return cdc_fail(err, CLOTHD_E_USAGE, "ticket %llu: unknown, collected or discarded",
                        (unsigned long long)t);
    if (kinds != 0 && !(kinds & CDC_KIND_BIT(e->kind)))
        return cdc_fail(err, CLOTHD_E_USAGE, "ticket %llu: the reply of %s, not of this recv",
                        (unsigned long long)t, kind_names[e->kind]);
    c->awaiting = t;
    while ((e = cdc_entry_of(c, t)) != NULL && e->state == CDC_WAITING) {
        if (deadline >= 0 && cdc_net_now_ms() >= deadline) {
            c->awaiting = 0;
            return cdc_fail(err, CLOTHD_E_TIMEOUT, "timeout: no reply to %s (ticket %llu) within %d ms",
                            kind_names[e->kind], (unsigned long long)t, c->timeout_ms);
        }
        clothd_code rc = cdc_io(c, deadline, NULL, err);
        e = cdc_entry_of(c, t);
        if (rc != CLOTHD_OK && (e == NULL || e->state == CDC_WAITING)) {
            c->awaiting = 0;
            return rc;
        }
    }
    c->awaiting = 0;
    if (e == NULL)
        return cdc_fail(err, CLOTHD_E_CLOSED, "ticket %llu: lost with the connection (%s)",
                        (unsigned long long)t, c->close_reason);
    clothd_code rc;
    if (e->state == CDC_FAILED) {
        rc = cdc_fail(err, e->fail, "%s: no reply, the connection dropped (%s)", kind_names[e->kind],
                      c->close_reason);
        if (err != NULL)
            err->reconnecting = e->reconnecting;
    } else {
        const char *line = e->in_place ? e->ref : e->line;
        char msg[160];
        if ((!e->in_place || c->doc.text != line) && !cdc_jparse(&c->doc, line, e->len, msg, sizeof msg)) {
            rc = cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: %s", msg); /* cannot happen: parsed once */
        } else {
            bool ok = false;
            cdc_jbool(&c->doc, cdc_jget(&c->doc, 0, "ok"), &ok);
            rc = ok ? CLOTHD_OK : cdc_reply_error(&c->doc, 0, err);
            if (rc == CLOTHD_OK && e->shm_failed) /* the server subscribed; its ring cannot be read */
                rc = cdc_fail(err, c->shm_error.code, "%s", c->shm_error.message);
            if ((rc == CLOTHD_OK || raw) && fn != NULL) {
                clothd_code drc = fn(c, &c->doc, 0, out, arg, rc == CLOTHD_OK ? err : NULL);
                if (rc == CLOTHD_OK)
                    rc = drc;
            }
            if (rc == CLOTHD_OK)
                cdc_ok(err);
        }
    }
    cdc_entry_done(c, t);
    cdc_dispatch_buffered(c, NULL);
    return rc;
}

clothd_code clothd_recv(clothd_client *c, clothd_ticket ticket, clothd_error *err)
{
    return cdc_collect(c, ticket, 0, c ? cdc_deadline(c) : -1, false, NULL, NULL, 0, NULL, err);
}

/* ---- field writers ---- */

void cdc_put_f(cdc_jw *w, const char *key, clothd_opt_f v)
{
    if (v.set) {
        cdc_jw_key(w, key);
        cdc_jw_float(w, v.value);
    }
}

void cdc_put_i(cdc_jw *w, const char *key, clothd_opt_i v)
{
    if (v.set) {
        cdc_jw_key(w, key);
        cdc_jw_i64(w, v.value);
    }
}

void cdc_put_u(cdc_jw *w, const char *key, clothd_opt_u v)
{
    if (v.set) {
        cdc_jw_key(w, key);
        cdc_jw_u64(w, v.value);
    }
}

void cdc_put_b(cdc_jw *w, const char *key, clothd_opt_b v)
{
    if (v.set) {
        cdc_jw_key(w, key);
        cdc_jw_bool(w, v.value);
    }
}

void cdc_put_v3(cdc_jw *w, const char *key, clothd_opt_v3 v)
{
    if (v.set)
        cdc_put_floats(w, key, v.value, 3);
}

void cdc_put_floats(cdc_jw *w, const char *key, const float *v, size_t n)
{
    cdc_jw_key(w, key);
    cdc_jw_array_open(w);
    for (size_t i = 0; i < n; i++)
        cdc_jw_float(w, v[i]);
    cdc_jw_array_close(w);
}

void cdc_put_vec3s(cdc_jw *w, const char *key, const float *v, size_t count)
{
    cdc_jw_key(w, key);
    cdc_jw_array_open(w);
    for (size_t i = 0; i < count; i++) {
        cdc_jw_array_open(w);
        for (int k = 0; k < 3; k++)
            cdc_jw_float(w, v[3 * i + (size_t)k]);
        cdc_jw_array_close(w);
    }
    cdc_jw_array_close(w);
}

void cdc_put_u32s(cdc_jw *w, const char *key, const uint32_t *v, size_t n)
{
    cdc_jw_key(w, key);
    cdc_jw_array_open(w);
    for (size_t i = 0; i < n; i++)
        cdc_jw_u64(w, v[i]);
    cdc_jw_array_close(w);
}

void cdc_put_instances(cdc_jw *w, const char *key, const clothd_instance *v, size_t n)
{
    cdc_jw_key(w, key);
    cdc_jw_array_open(w);
    for (size_t i = 0; i < n; i++)
        cdc_jw_u64(w, v[i].id);
    cdc_jw_array_close(w);
}

void cdc_put_str(cdc_jw *w, const char *key, const char *s)
{
    if (s != NULL) {
        cdc_jw_key(w, key);
        cdc_jw_string(w, s, strlen(s));
    }
}

/* ---- commands this header does not know ---- */

clothd_code clothd_send_json(clothd_client *c, const char *cmd, const char *members, clothd_ticket *ticket,
                             clothd_error *err)
{
    if (cmd == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "cmd: NULL");
    size_t mlen = members ? strlen(members) : 0;
    if (mlen > 0 && (memchr(members, '\n', mlen) || memchr(members, '\r', mlen)))
        return cdc_fail(err, CLOTHD_E_USAGE, "members: a request is one line (no raw newline)");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_RAW, cmd, err);
    if (rc != CLOTHD_OK)
        return rc;
    if (mlen > 0 && (!cdc_buf_append(&c->out, ",", 1) || !cdc_buf_append(&c->out, members, mlen)))
        r.w.fault = CDC_JW_NOMEM;
    cdc_jw_object_close(&r.w);
    if (r.w.fault != CDC_JW_OK) {
        cut(&r);
        return cdc_fail(err, r.w.fault == CDC_JW_NOMEM ? CLOTHD_E_NOMEM : CLOTHD_E_USAGE,
                        r.w.fault == CDC_JW_NOMEM ? "out of memory writing a request" : "cmd: not valid UTF-8");
    }
    /* The whole line must be one strict JSON object. */
    size_t start = c->out.off + r.mark;
    cdc_jdoc doc = {0};
    char msg[160];
    size_t len = c->out.len - start;
    bool valid = cdc_jparse(&doc, c->out.data + start, len, msg, sizeof msg);
    cdc_jdoc_free(&doc);
    if (!valid) {
        cut(&r);
        return cdc_fail(err, CLOTHD_E_USAGE, "members: the request would not be valid JSON (%s)", msg);
    }
    if (!cdc_buf_append(&c->out, "\n", 1)) {
        cut(&r);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory writing a request");
    }
    return queue(&r, ticket, NULL, err);
}

clothd_code clothd_send_line(clothd_client *c, const char *line, size_t len, clothd_ticket *ticket,
                             clothd_error *err)
{
    if (line == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "line: NULL");
    if (memchr(line, '\n', len) != NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "line: holds a newline (one request per call)");
    bool blank = true;
    for (size_t i = 0; i < len && blank; i++)
        blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
    if (blank)
        return cdc_fail(err, CLOTHD_E_USAGE, "line: blank (the server answers no blank line)");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_RAW, NULL, err);
    if (rc != CLOTHD_OK)
        return rc;
    cut(&r); /* drop the envelope begin wrote: the line goes as it is */
    if (!cdc_buf_append(&c->out, line, len) || !cdc_buf_append(&c->out, "\n", 1)) {
        cut(&r);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory writing a request");
    }
    cdc_entry *e = NULL;
    rc = queue(&r, ticket, &e, err);
    if (e != NULL)
        e->any_id = true; /* its reply echoes whatever id the line has, or none */
    return rc;
}

typedef struct raw_out {
    char *line;
    size_t len;
} raw_out;

static clothd_code decode_raw(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                              clothd_error *err)
{
    (void)c;
    (void)root;
    (void)arg;
    raw_out *r = out;
    r->line = malloc(d->size + 1);
    if (r->line == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory copying a reply");
    memcpy(r->line, d->text, d->size);
    r->line[d->size] = '\0';
    r->len = d->size;
    return CLOTHD_OK;
}

clothd_code clothd_recv_json(clothd_client *c, clothd_ticket ticket, char **line, size_t *len,
                             clothd_error *err)
{
    raw_out r;
    clothd_code rc = cdc_collect(c, ticket, 0, c ? cdc_deadline(c) : -1, true, decode_raw, &r, sizeof r,
                                 NULL, err);
    if (line != NULL)
        *line = r.line;
    else
        free(r.line);
    if (len != NULL)
        *len = r.len;
    return rc;
}

clothd_code clothd_request_json(clothd_client *c, const char *cmd, const char *members, char **line,
                                size_t *len, clothd_error *err)
{
    if (line != NULL)
        *line = NULL;
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    int64_t deadline = cdc_deadline(c);
    clothd_ticket t = 0;
    clothd_code rc = cdc_wait_link(c, deadline, err);
    if (rc == CLOTHD_OK)
        rc = clothd_send_json(c, cmd, members, &t, err);
    if (rc != CLOTHD_OK)
        return rc;
    raw_out r;
    rc = cdc_collect(c, t, 0, deadline, true, decode_raw, &r, sizeof r, NULL, err);
    if (rc == CLOTHD_E_TIMEOUT)
        clothd_discard(c, t);
    if (line != NULL)
        *line = r.line;
    else
        free(r.line);
    if (len != NULL)
        *len = r.len;
    return rc;
}

void clothd_free(void *p)
{
    free(p);
}
