/* save and load (snapshots), record and replay (journals) in the server's
 * --data-dir (PROTOCOL.md). The server checks names (a file name, never a
 * path); the client only refuses NULL. */
#include <string.h>

#include "internal.h"

typedef struct snapshot_reply {
    uint32_t instances;
    uint64_t bytes;
} snapshot_reply;

static clothd_code send_save(clothd_client *c, const char *name, const clothd_instance *instances,
                             size_t count, clothd_ticket *ticket, clothd_error *err)
{
    if (name == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "name: NULL");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_SAVE, "save", err);
    if (rc != CLOTHD_OK)
        return rc;
    cdc_put_str(&r.w, "name", name);
    if (instances != NULL)
        cdc_put_instances(&r.w, "instances", instances, count);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_saved(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                clothd_error *err)
{
    (void)c;
    (void)arg;
    snapshot_reply *o = out;
    uint64_t n = 0, bytes = 0;
    if (!cdc_juint(d, cdc_jget(d, root, "instances"), UINT32_MAX, &n) ||
        !cdc_juint(d, cdc_jget(d, root, "bytes"), UINT64_MAX, &bytes))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: save without \"instances\" and \"bytes\"");
    o->instances = (uint32_t)n;
    o->bytes = bytes;
    return CLOTHD_OK;
}

static clothd_code save_blocking(clothd_client *c, const char *name, const clothd_instance *instances,
                                 size_t count, snapshot_reply *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_save(c, name, instances, count, &ticket_, err), CDC_K_SAVE, decode_saved, out,
                 sizeof *out, NULL);
}

clothd_code clothd_save(clothd_client *c, const char *name, const clothd_instance *instances, size_t count,
                        uint32_t *saved, uint64_t *bytes, clothd_error *err)
{
    snapshot_reply reply;
    clothd_code rc = save_blocking(c, name, instances, count, &reply, err);
    if (rc == CLOTHD_OK && saved != NULL)
        *saved = reply.instances;
    if (rc == CLOTHD_OK && bytes != NULL)
        *bytes = reply.bytes;
    return rc;
}

static clothd_code send_load(clothd_client *c, const char *name, bool replace, clothd_ticket *ticket,
                             clothd_error *err)
{
    if (name == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "name: NULL");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_LOAD, "load", err);
    if (rc != CLOTHD_OK)
        return rc;
    cdc_put_str(&r.w, "name", name);
    if (replace)
        cdc_put_b(&r.w, "replace", clothd_b(true));
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_loaded(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                 clothd_error *err)
{
    (void)c;
    (void)arg;
    const int list = cdc_jget(d, root, "instances");
    if (list < 0 || cdc_jtype_of(d, list) != CDC_JARRAY)
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: load without \"instances\"");
    ((snapshot_reply *)out)->instances = (uint32_t)d->tok[list].count;
    return CLOTHD_OK;
}

static clothd_code load_blocking(clothd_client *c, const char *name, bool replace, snapshot_reply *out,
                                 clothd_error *err)
{
    CDC_BLOCKING(c, err, send_load(c, name, replace, &ticket_, err), CDC_K_LOAD, decode_loaded, out,
                 sizeof *out, NULL);
}

clothd_code clothd_load(clothd_client *c, const char *name, bool replace, uint32_t *loaded, clothd_error *err)
{
    snapshot_reply reply;
    clothd_code rc = load_blocking(c, name, replace, &reply, err);
    if (rc == CLOTHD_OK && loaded != NULL)
        *loaded = reply.instances;
    return rc;
}

/* ---- record, replay ---- */

static clothd_code send_record(clothd_client *c, const char *name, const clothd_instance *instances,
                               size_t count, bool stop, clothd_ticket *ticket, clothd_error *err)
{
    if (!stop && name == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "name: NULL");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_RECORD, "record", err);
    if (rc != CLOTHD_OK)
        return rc;
    if (stop) {
        cdc_put_b(&r.w, "stop", clothd_b(true));
    } else {
        cdc_put_str(&r.w, "name", name);
        if (instances != NULL)
            cdc_put_instances(&r.w, "instances", instances, count);
    }
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_recorded(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                   clothd_error *err)
{
    (void)c;
    (void)arg;
    uint64_t frames = 0;
    const int tok = cdc_jget(d, root, "frames");
    if (tok >= 0 && !cdc_juint(d, tok, UINT64_MAX, &frames))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: \"frames\" is no count");
    ((snapshot_reply *)out)->bytes = frames;
    return CLOTHD_OK;
}

static clothd_code record_blocking(clothd_client *c, const char *name, const clothd_instance *instances,
                                   size_t count, bool stop, snapshot_reply *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_record(c, name, instances, count, stop, &ticket_, err), CDC_K_RECORD,
                 decode_recorded, out, sizeof *out, NULL);
}

clothd_code clothd_record(clothd_client *c, const char *name, const clothd_instance *instances, size_t count,
                          clothd_error *err)
{
    snapshot_reply reply;
    return record_blocking(c, name, instances, count, false, &reply, err);
}

clothd_code clothd_record_stop(clothd_client *c, uint64_t *frames, clothd_error *err)
{
    snapshot_reply reply;
    clothd_code rc = record_blocking(c, NULL, NULL, 0, true, &reply, err);
    if (rc == CLOTHD_OK && frames != NULL)
        *frames = reply.bytes; /* decode_recorded keeps "frames" there */
    return rc;
}

typedef struct replay_reply {
    clothd_replayed info;
    clothd_instance *ids;
    size_t cap;
} replay_reply;

static clothd_code send_replay(clothd_client *c, const char *name, int64_t to, clothd_ticket *ticket,
                               clothd_error *err)
{
    if (name == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "name: NULL");
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_REPLAY, "replay", err);
    if (rc != CLOTHD_OK)
        return rc;
    cdc_put_str(&r.w, "name", name);
    if (to >= 0) {
        cdc_jw_key(&r.w, "to");
        cdc_jw_u64(&r.w, (uint64_t)to);
    }
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_replayed(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                   clothd_error *err)
{
    (void)c;
    const replay_reply *want = arg;
    clothd_replayed *o = out;
    const int list = cdc_jget(d, root, "instances");
    if (list < 0 || cdc_jtype_of(d, list) != CDC_JARRAY ||
        !cdc_juint(d, cdc_jget(d, root, "frames"), UINT64_MAX, &o->frames) ||
        !cdc_juint(d, cdc_jget(d, root, "journalFrames"), UINT64_MAX, &o->journal_frames) ||
        !cdc_jbool(d, cdc_jget(d, root, "complete"), &o->complete))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: replay without its members");
    o->other_build = cdc_jget(d, root, "warning") >= 0;
    const size_t n = d->tok[list].count;
    int i = cdc_jfirst(d, list);
    for (size_t k = 0; k < n; k++, i = cdc_jnext(d, i)) {
        uint64_t id = 0;
        if (!cdc_juint(d, i, UINT32_MAX, &id))
            return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: instances[%zu] is no id", k);
        if (want->ids != NULL && k < want->cap)
            want->ids[k].id = (uint32_t)id;
    }
    o->instances = (uint32_t)n;
    return CLOTHD_OK;
}

static clothd_code replay_blocking(clothd_client *c, const char *name, int64_t to, const replay_reply *want,
                                   clothd_replayed *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_replay(c, name, to, &ticket_, err), CDC_K_REPLAY, decode_replayed, out,
                 sizeof *out, want);
}

clothd_code clothd_replay(clothd_client *c, const char *name, int64_t to, clothd_instance *ids, size_t cap,
                          clothd_replayed *out, clothd_error *err)
{
    replay_reply want = {.ids = ids, .cap = cap};
    clothd_replayed info;
    clothd_code rc = replay_blocking(c, name, to, &want, &info, err);
    if (rc == CLOTHD_OK && out != NULL)
        *out = info;
    return rc;
}
