/* What the client remembers about its connection so that a reconnect can
 * restore it: the subscriptions it holds (updated from the server's ok
 * replies, never from what was merely asked) and the token; and the frame
 * targets the caller registered. On a new connection `auth` goes first,
 * then one `subscribe` per subscription with its options; their replies
 * are the client's own (a refused token closes the client for good, a
 * subscription that cannot be renewed is dropped and reported as a
 * "resubscribe_failed" event, and so is, though kept, one renewed whose
 * shared-memory ring cannot be mapped). A subscribe reply naming a ring
 * has it mapped here, before any frame behind the reply is read. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The subscription to `instance`, or to the scene `scene` (not ""). */
static cdc_sub *find_sub(clothd_client *c, uint32_t instance, const char *scene)
{
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].instance == instance && strcmp(c->subs[i].scene, scene) == 0)
            return &c->subs[i];
    return NULL;
}

static void put_channels(cdc_jw *w, uint32_t channels)
{
    if (channels == 0)
        return;
    cdc_jw_key(w, "channels");
    cdc_jw_array_open(w);
    cdc_jw_string(w, "positions", 9);
    if (channels & CLOTHD_CHANNEL_VELOCITIES)
        cdc_jw_string(w, "velocities", 10);
    if (channels & CLOTHD_CHANNEL_NORMALS)
        cdc_jw_string(w, "normals", 7);
    cdc_jw_array_close(w);
}

void cdc_put_sub_opts(cdc_jw *w, const cdc_sub_opts *o)
{
    cdc_put_b(w, "quantize", o->quantize);
    cdc_put_i(w, "every", o->every);
    put_channels(w, o->channels);
    if (o->shm) {
        cdc_jw_key(w, "shm");
        cdc_jw_bool(w, true);
    }
}

static void put_sub(clothd_client *c, uint32_t instance, const char *scene, const cdc_sub_opts *o)
{
    cdc_sub *s = find_sub(c, instance, scene);
    if (s == NULL) {
        if (c->nsubs == c->subs_cap) {
            size_t cap = c->subs_cap ? c->subs_cap * 2 : 8;
            cdc_sub *p = realloc(c->subs, cap * sizeof *p);
            if (p == NULL)
                return; /* not renewed after a reconnect; nothing else is lost */
            c->subs = p;
            c->subs_cap = cap;
        }
        s = &c->subs[c->nsubs++];
        s->instance = instance;
        snprintf(s->scene, sizeof s->scene, "%s", scene);
    }
    s->opts = *o;
}

void cdc_sub_put(clothd_client *c, uint32_t instance, const cdc_sub_opts *o)
{
    put_sub(c, instance, "", o);
}

static void remove_sub(clothd_client *c, uint32_t instance, const char *scene)
{
    cdc_sub *s = find_sub(c, instance, scene);
    if (s != NULL)
        *s = c->subs[--c->nsubs];
}

void cdc_sub_remove(clothd_client *c, uint32_t instance)
{
    remove_sub(c, instance, "");
}

void cdc_sub_clear(clothd_client *c)
{
    c->nsubs = 0;
}

void cdc_subs_free(clothd_client *c)
{
    free(c->subs);
    free(c->targets);
    c->subs = NULL;
    c->targets = NULL;
    c->nsubs = c->subs_cap = c->ntargets = c->targets_cap = 0;
}

void cdc_sub_apply(clothd_client *c, cdc_entry *e, const cdc_jdoc *d, int root)
{
    switch (e->kind) {
    case CDC_K_DESTROY: {
        if (e->instance != 0)
            cdc_sub_remove(c, e->instance);
        int gone = cdc_jget(d, root, "destroyed"); /* a scene's: each id */
        for (int i = cdc_jfirst(d, gone); e->scene[0] && i >= 0 && i < (int)d->tok[gone].next;
             i = cdc_jnext(d, i)) {
            uint64_t id;
            if (cdc_juint(d, i, UINT32_MAX, &id))
                cdc_sub_remove(c, (uint32_t)id);
        }
        break;
    }
    case CDC_K_SUBSCRIBE: {
        int shm = cdc_jget(d, root, "shm");
        if (shm >= 0 && cdc_shm_attach(c, d, shm, &c->shm_error) != CLOTHD_OK)
            e->shm_failed = true; /* the server holds it anyway: kept, and its frames count as missed */
        bool all = false;
        if (cdc_jbool(d, cdc_jget(d, root, "all"), &all) && all)
            cdc_sub_put(c, 0, &e->sub);
        char scene[CLOTHD_SCENE_MAX + 1];
        if (cdc_jstr_copy(d, cdc_jget(d, root, "scene"), scene, sizeof scene, NULL)) {
            put_sub(c, 0, scene, &e->sub); /* renewed by name */
            break;
        }
        int list = cdc_jget(d, root, "instances");
        for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i)) {
            uint64_t id;
            if (cdc_juint(d, i, UINT32_MAX, &id))
                cdc_sub_put(c, (uint32_t)id, &e->sub);
        }
        break;
    }
    case CDC_K_UNSUBSCRIBE:
        if (e->all) {
            cdc_sub_clear(c);
            break;
        }
        if (e->scene[0] != '\0' && e->instance == 0 && e->nids == 0) {
            remove_sub(c, 0, e->scene);
            break;
        }
        if (e->instance != 0)
            cdc_sub_remove(c, e->instance);
        for (size_t i = 0; i < e->nids; i++)
            cdc_sub_remove(c, e->ids[i]);
        break;
    default:
        break;
    }
}

bool cdc_sub_renew(clothd_client *c)
{
    cdc_req r;
    cdc_entry *e;
    if (c->token != NULL) {
        if (cdc_req_begin(&r, c, CDC_K_AUTH, "auth", NULL) != CLOTHD_OK)
            return c->link != CDC_LINK_UP;
        cdc_put_str(&r.w, "token", c->token);
        r.role = CDC_ROLE_AUTH;
        if (cdc_req_end(&r, NULL, NULL, NULL) == CLOTHD_E_NOMEM)
            return false;
    }
    if (!cdc_hello_queue(c))
        return false;
    for (size_t i = 0; i < c->nsubs && c->link == CDC_LINK_UP; i++) {
        const cdc_sub *s = &c->subs[i];
        if (cdc_req_begin(&r, c, CDC_K_SUBSCRIBE, "subscribe", NULL) != CLOTHD_OK)
            return c->link != CDC_LINK_UP;
        if (s->instance != 0) {
            cdc_jw_key(&r.w, "instance");
            cdc_jw_u64(&r.w, s->instance);
        }
        if (s->scene[0] != '\0')
            cdc_put_str(&r.w, "scene", s->scene);
        cdc_put_sub_opts(&r.w, &s->opts);
        r.role = CDC_ROLE_RESUBSCRIBE;
        e = NULL;
        if (cdc_req_end(&r, NULL, &e, NULL) == CLOTHD_E_NOMEM)
            return false;
        if (e != NULL) {
            e->instance = s->instance;
            memcpy(e->scene, s->scene, sizeof e->scene);
        }
    }
    return true;
}

void cdc_internal_reply(clothd_client *c, cdc_entry *e, clothd_ticket t, const cdc_jdoc *d, int root)
{
    bool ok = false;
    cdc_jbool(d, cdc_jget(d, root, "ok"), &ok);
    clothd_error er;
    memset(&er, 0, sizeof er);
    if (!ok)
        cdc_reply_error(d, root, &er);
    cdc_role role = (cdc_role)e->role;
    uint32_t instance = e->instance;
    char scene[CLOTHD_SCENE_MAX + 1];
    memcpy(scene, e->scene, sizeof scene);
    cdc_entry_done(c, t);
    if (role == CDC_ROLE_HELLO) {
        cdc_hello_reply(c, d, root, ok, &er);
        return;
    }
    if (role == CDC_ROLE_AUTH) {
        if (ok) {
            int access = cdc_jget(d, root, "access");
            c->access = cdc_jstr_eq(d, access, "readonly") ? CLOTHD_ACCESS_READONLY : CLOTHD_ACCESS_FULL;
            return;
        }
        /* A refused token is refused again on every retry: give up. (The
         * connection limit's error, which has no id, lands here too.) */
        cdc_drop(c, er.code, true, "the server refused the connection: %s: %s", er.wire_code, er.message);
        return;
    }
    if (ok) {
        int shm = cdc_jget(d, root, "shm");
        if (shm < 0 || cdc_shm_attach(c, d, shm, &er) == CLOTHD_OK)
            return;
        /* Renewed, but its ring cannot be mapped: kept (the server holds
         * it; its frames count as missed), and reported. */
    } else {
        remove_sub(c, instance, scene);
    }
    if (c->on_event != NULL) {
        clothd_event ev;
        memset(&ev, 0, sizeof ev);
        ev.name = "resubscribe_failed";
        ev.instance.id = instance;
        ev.error = er;
        ev.json = d->text;
        ev.json_size = d->size;
        c->on_event(c->user, &ev);
    }
}

clothd_frame_target *cdc_target_of(clothd_client *c, uint32_t instance)
{
    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].instance == instance)
            return c->targets[i].t;
    return NULL;
}

clothd_code clothd_set_frame_target(clothd_client *c, clothd_instance inst, clothd_frame_target *t,
                                    clothd_error *err)
{
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    if (t != NULL && t->positions == NULL && t->capacity > 0)
        return cdc_fail(err, CLOTHD_E_USAGE, "target: positions is NULL with a capacity of %u",
                        (unsigned)t->capacity);
    for (size_t i = 0; i < c->ntargets; i++) {
        if (c->targets[i].instance != inst.id)
            continue;
        if (t != NULL)
            c->targets[i].t = t;
        else
            c->targets[i] = c->targets[--c->ntargets];
        cdc_ok(err);
        return CLOTHD_OK;
    }
    if (t == NULL) {
        cdc_ok(err);
        return CLOTHD_OK;
    }
    if (c->ntargets == c->targets_cap) {
        size_t cap = c->targets_cap ? c->targets_cap * 2 : 8;
        cdc_target *p = realloc(c->targets, cap * sizeof *p);
        if (p == NULL)
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory registering a frame target");
        c->targets = p;
        c->targets_cap = cap;
    }
    c->targets[c->ntargets].instance = inst.id;
    c->targets[c->ntargets].t = t;
    c->ntargets++;
    cdc_ok(err);
    return CLOTHD_OK;
}
