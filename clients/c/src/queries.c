/* The commands with list-shaped replies: step (unstable, sleeping,
 * impulses), get (positions straight into the caller's buffer when one is
 * given), subscribe and unsubscribe (which also keep the client's list of
 * subscriptions), status and topology; and the functions that free what
 * their replies own. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(KIND, CMD)                                                                           \
    cdc_req r;                                                                                     \
    clothd_code rc = cdc_req_begin(&r, c, (KIND), (CMD), err);                                     \
    if (rc != CLOTHD_OK)                                                                           \
        return rc

static clothd_code malformed(clothd_error *err, const char *what)
{
    return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: %s", what);
}

static clothd_code nomem(clothd_error *err)
{
    return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory decoding a reply");
}

static size_t list_size(const cdc_jdoc *d, int tok)
{
    return tok >= 0 && cdc_jtype_of(d, tok) == CDC_JARRAY ? d->tok[tok].count : 0;
}

/* An array of unsigned 32-bit integers (absent: none); *out NULL when empty. */
static clothd_code read_u32s(const cdc_jdoc *d, int tok, uint32_t **out, size_t *n, clothd_error *err)
{
    *out = NULL;
    *n = 0;
    if (tok < 0)
        return CLOTHD_OK;
    if (cdc_jtype_of(d, tok) != CDC_JARRAY)
        return malformed(err, "an id list is not an array");
    size_t count = d->tok[tok].count;
    if (count == 0)
        return CLOTHD_OK;
    uint32_t *v = malloc(count * sizeof *v);
    if (v == NULL)
        return nomem(err);
    size_t k = 0;
    for (int i = cdc_jfirst(d, tok); k < count; i = cdc_jnext(d, i), k++) {
        uint64_t u;
        if (!cdc_juint(d, i, UINT32_MAX, &u)) {
            free(v);
            return malformed(err, "a list entry is not an unsigned 32-bit integer");
        }
        v[k] = (uint32_t)u;
    }
    *out = v;
    *n = count;
    return CLOTHD_OK;
}

/* An array of instance ids. */
static clothd_code read_ids(const cdc_jdoc *d, int tok, clothd_instance **out, size_t *n, clothd_error *err)
{
    uint32_t *v;
    clothd_code rc = read_u32s(d, tok, &v, n, err);
    *out = NULL;
    if (rc != CLOTHD_OK || v == NULL)
        return rc;
    *out = malloc(*n * sizeof **out);
    if (*out == NULL) {
        free(v);
        *n = 0;
        return nomem(err);
    }
    for (size_t k = 0; k < *n; k++)
        (*out)[k].id = v[k];
    free(v);
    return CLOTHD_OK;
}

static clothd_kind kind_of(const cdc_jdoc *d, int tok)
{
    if (cdc_jstr_eq(d, tok, "cloth"))
        return CLOTHD_KIND_CLOTH;
    if (cdc_jstr_eq(d, tok, "softbody"))
        return CLOTHD_KIND_SOFTBODY;
    return CLOTHD_KIND_UNKNOWN;
}

/* ---- step ---- */

clothd_code clothd_send_step(clothd_client *c, const clothd_step_options *o, clothd_ticket *ticket,
                             clothd_error *err)
{
    BEGIN(CDC_K_STEP, "step");
    if (o != NULL) {
        cdc_put_f(&r.w, "dt", o->dt);
        if (o->instance.id != 0) {
            cdc_jw_key(&r.w, "instance");
            cdc_jw_u64(&r.w, o->instance.id);
        }
        if (o->instances != NULL)
            cdc_put_instances(&r.w, "instances", o->instances, o->instance_count);
        cdc_put_f(&r.w, "budgetMs", o->budget_ms);
        cdc_put_str(&r.w, "scene", o->scene);
    }
    return cdc_req_end(&r, ticket, NULL, err);
}

void clothd_step_result_free(clothd_step_result *s)
{
    if (s == NULL)
        return;
    free(s->unstable);
    free(s->sleeping);
    free(s->impulses);
    free(s->degraded);
    free(s->torn);
    memset(s, 0, sizeof *s);
}

/* The budget's members, when the step had one. */
static clothd_code decode_budget(const cdc_jdoc *d, int root, clothd_step_result *s, clothd_error *err)
{
    const int budget = cdc_jget(d, root, "budgetMs");
    if (budget < 0)
        return CLOTHD_OK;
    if (!cdc_jfloat(d, budget, &s->budget_ms) ||
        !cdc_jfloat(d, cdc_jget(d, root, "predictedMs"), &s->predicted_ms) ||
        !cdc_jfloat(d, cdc_jget(d, root, "actualMs"), &s->actual_ms))
        return malformed(err, "a budgeted step without predictedMs and actualMs");
    s->has_budget = true;
    const int list = cdc_jget(d, root, "degraded");
    const size_t n = list_size(d, list);
    if (n == 0)
        return CLOTHD_OK;
    if ((s->degraded = calloc(n, sizeof *s->degraded)) == NULL)
        return nomem(err);
    int i = cdc_jfirst(d, list);
    for (size_t k = 0; k < n; k++, i = cdc_jnext(d, i)) {
        uint64_t inst, lod;
        if (!cdc_juint(d, cdc_jget(d, i, "instance"), UINT32_MAX, &inst) ||
            !cdc_juint(d, cdc_jget(d, i, "lod"), 3, &lod))
            return malformed(err, "a degraded entry without instance and lod");
        s->degraded[k].instance.id = (uint32_t)inst;
        s->degraded[k].lod = (int32_t)lod;
    }
    s->degraded_count = n;
    return CLOTHD_OK;
}

static clothd_code decode_step(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                               clothd_error *err)
{
    (void)c;
    (void)arg;
    uint64_t stepped;
    if (!cdc_juint(d, cdc_jget(d, root, "stepped"), UINT32_MAX, &stepped))
        return malformed(err, "step without \"stepped\"");
    if (out == NULL)
        return CLOTHD_OK;
    clothd_step_result *s = out;
    s->stepped = (uint32_t)stepped;
    clothd_code rc = read_ids(d, cdc_jget(d, root, "unstable"), &s->unstable, &s->unstable_count, err);
    if (rc == CLOTHD_OK)
        rc = read_ids(d, cdc_jget(d, root, "sleeping"), &s->sleeping, &s->sleeping_count, err);
    if (rc == CLOTHD_OK) /* absent unless a cloth tore */
        rc = read_ids(d, cdc_jget(d, root, "torn"), &s->torn, &s->torn_count, err);
    int imp = cdc_jget(d, root, "impulses");
    size_t n = list_size(d, imp);
    if (rc == CLOTHD_OK && n > 0) {
        s->impulses = calloc(n, sizeof *s->impulses);
        if (s->impulses == NULL)
            rc = nomem(err);
        int i = cdc_jfirst(d, imp);
        for (size_t k = 0; rc == CLOTHD_OK && k < n; k++, i = cdc_jnext(d, i)) {
            clothd_impulse *m = &s->impulses[k];
            uint64_t inst, col;
            if (!cdc_juint(d, cdc_jget(d, i, "instance"), UINT32_MAX, &inst) ||
                !cdc_juint(d, cdc_jget(d, i, "collider"), UINT32_MAX, &col) ||
                !cdc_jvec3(d, cdc_jget(d, i, "linear"), m->linear) ||
                !cdc_jvec3(d, cdc_jget(d, i, "angular"), m->angular)) {
                rc = malformed(err, "an impulse without instance, collider, linear and angular");
                break;
            }
            m->instance.id = (uint32_t)inst;
            m->collider.id = (uint32_t)col;
        }
        s->impulse_count = n;
    }
    if (rc == CLOTHD_OK)
        rc = decode_budget(d, root, s, err);
    if (rc != CLOTHD_OK)
        clothd_step_result_free(s);
    return rc;
}

clothd_code clothd_recv_step(clothd_client *c, clothd_ticket ticket, clothd_step_result *out, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_STEP), c ? cdc_deadline(c) : -1, false, decode_step, out,
                       sizeof *out, NULL, err);
}

clothd_code clothd_step(clothd_client *c, const clothd_step_options *o, clothd_step_result *out,
                        clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_step(c, o, &ticket_, err), CDC_K_STEP, decode_step, out, sizeof *out, NULL);
}

/* ---- get ---- */

clothd_code clothd_send_get_ex(clothd_client *c, clothd_instance inst, const clothd_get_options *o,
                               clothd_ticket *ticket, clothd_error *err)
{
    BEGIN(CDC_K_GET, "get");
    cdc_jw_key(&r.w, "instance");
    cdc_jw_u64(&r.w, inst.id);
    if (o != NULL && o->velocities) {
        cdc_jw_key(&r.w, "velocities");
        cdc_jw_bool(&r.w, true);
    }
    if (o != NULL && o->normals) {
        cdc_jw_key(&r.w, "normals");
        cdc_jw_bool(&r.w, true);
    }
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_send_get(clothd_client *c, clothd_instance inst, clothd_ticket *ticket, clothd_error *err)
{
    return clothd_send_get_ex(c, inst, NULL, ticket, err);
}

void clothd_instance_state_free(clothd_instance_state *s)
{
    if (s == NULL)
        return;
    if (s->positions_owned_)
        free(s->positions);
    free(s->velocities);
    free(s->normals);
    free(s->pinned);
    free(s->colliders);
    memset(s, 0, sizeof *s);
}

static clothd_collider_type collider_type_of(const cdc_jdoc *d, int tok)
{
    if (cdc_jstr_eq(d, tok, "sphere"))
        return CLOTHD_COLLIDER_SPHERE;
    if (cdc_jstr_eq(d, tok, "capsule"))
        return CLOTHD_COLLIDER_CAPSULE;
    if (cdc_jstr_eq(d, tok, "plane"))
        return CLOTHD_COLLIDER_PLANE;
    if (cdc_jstr_eq(d, tok, "taperedCapsule"))
        return CLOTHD_COLLIDER_TAPERED_CAPSULE;
    if (cdc_jstr_eq(d, tok, "box"))
        return CLOTHD_COLLIDER_BOX;
    return CLOTHD_COLLIDER_UNSET;
}

static clothd_code read_positions(const cdc_jdoc *d, int tok, const clothd_get_options *o,
                                  clothd_instance_state *s, clothd_error *err)
{
    if (tok < 0 || cdc_jtype_of(d, tok) != CDC_JARRAY || d->tok[tok].count % 3 != 0)
        return malformed(err, "get without a \"positions\" array of 3 numbers per particle");
    size_t n = d->tok[tok].count / 3;
    if (o != NULL && o->positions != NULL) {
        if (o->capacity < n)
            return cdc_fail(err, CLOTHD_E_USAGE, "positions: %zu particles do not fit a buffer of %zu", n,
                            o->capacity);
        s->positions = o->positions;
    } else if (n > 0) {
        s->positions = malloc(3 * n * sizeof(float));
        if (s->positions == NULL)
            return nomem(err);
        s->positions_owned_ = true;
    }
    s->particle_count = n;
    int i = cdc_jfirst(d, tok);
    for (size_t k = 0; k < 3 * n; k++, i = cdc_jnext(d, i))
        if (!cdc_jfloat(d, i, &s->positions[k]))
            return malformed(err, "a position is not a number");
    return CLOTHD_OK;
}

/* "velocities" or "normals" when the reply has them: 3 floats per particle,
 * allocated. */
static clothd_code read_triplets(const cdc_jdoc *d, int tok, const char *name, size_t particles,
                                 float **out, clothd_error *err)
{
    if (tok < 0)
        return CLOTHD_OK;
    if (cdc_jtype_of(d, tok) != CDC_JARRAY || d->tok[tok].count != 3 * particles)
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "protocol: get's \"%s\" is not 3 numbers per particle", name);
    *out = malloc(3 * (particles ? particles : 1) * sizeof(float));
    if (*out == NULL)
        return nomem(err);
    int i = cdc_jfirst(d, tok);
    for (size_t k = 0; k < 3 * particles; k++, i = cdc_jnext(d, i))
        if (!cdc_jfloat(d, i, &(*out)[k]))
            return cdc_fail(err, CLOTHD_E_PROTOCOL, "protocol: get's \"%s\" holds a non-number", name);
    return CLOTHD_OK;
}

static clothd_code decode_get(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                              clothd_error *err)
{
    (void)c;
    clothd_instance_state tmp, *s = out ? out : &tmp;
    memset(s, 0, sizeof *s);
    uint64_t v;
    if (!cdc_juint(d, cdc_jget(d, root, "instance"), UINT32_MAX, &v))
        return malformed(err, "get without \"instance\"");
    s->instance.id = (uint32_t)v;
    s->kind = kind_of(d, cdc_jget(d, root, "type"));
    if (cdc_juint(d, cdc_jget(d, root, "width"), UINT32_MAX, &v))
        s->width = (uint32_t)v;
    if (cdc_juint(d, cdc_jget(d, root, "height"), UINT32_MAX, &v))
        s->height = (uint32_t)v;
    if (cdc_juint(d, cdc_jget(d, root, "frame"), UINT64_MAX, &v))
        s->frame = v;
    cdc_jdouble(d, cdc_jget(d, root, "time"), &s->time);
    cdc_jbool(d, cdc_jget(d, root, "enabled"), &s->enabled);
    cdc_jbool(d, cdc_jget(d, root, "unstable"), &s->unstable);
    cdc_jbool(d, cdc_jget(d, root, "sleeping"), &s->sleeping);
    if (cdc_juint(d, cdc_jget(d, root, "lod"), UINT32_MAX, &v))
        s->lod = s->current_lod = (uint32_t)v;
    if (cdc_juint(d, cdc_jget(d, root, "currentLod"), UINT32_MAX, &v))
        s->current_lod = (uint32_t)v;
    cdc_jbool(d, cdc_jget(d, root, "degraded"), &s->lod_degraded);
    cdc_jfloat(d, cdc_jget(d, root, "priority"), &s->priority);
    int wm = cdc_jget(d, root, "windModel");
    s->wind_model = cdc_jstr_eq(d, wm, "aero")       ? CLOTHD_WIND_AERO
                    : cdc_jstr_eq(d, wm, "constant") ? CLOTHD_WIND_CONSTANT
                    : cdc_jstr_eq(d, wm, "dragLift") ? CLOTHD_WIND_DRAG_LIFT
                                                     : CLOTHD_WIND_UNSET;
    cdc_jvec3(d, cdc_jget(d, root, "wind"), s->wind);
    cdc_jvec3(d, cdc_jget(d, root, "gravity"), s->gravity);
    clothd_code rc = read_positions(d, cdc_jget(d, root, "positions"), arg, s, err);
    if (rc == CLOTHD_OK)
        rc = read_triplets(d, cdc_jget(d, root, "velocities"), "velocities", s->particle_count,
                           &s->velocities, err);
    if (rc == CLOTHD_OK)
        rc = read_triplets(d, cdc_jget(d, root, "normals"), "normals", s->particle_count, &s->normals,
                           err);
    if (rc == CLOTHD_OK)
        rc = read_u32s(d, cdc_jget(d, root, "pinned"), &s->pinned, &s->pinned_count, err);
    int cols = cdc_jget(d, root, "colliders");
    size_t n = list_size(d, cols);
    if (rc == CLOTHD_OK && n > 0) {
        s->colliders = calloc(n, sizeof *s->colliders);
        if (s->colliders == NULL)
            rc = nomem(err);
        int i = cdc_jfirst(d, cols);
        for (size_t k = 0; rc == CLOTHD_OK && k < n; k++, i = cdc_jnext(d, i)) {
            clothd_collider_info *ci = &s->colliders[k];
            uint64_t id;
            if (!cdc_juint(d, cdc_jget(d, i, "collider"), UINT32_MAX, &id)) {
                rc = malformed(err, "a collider without its id");
                break;
            }
            ci->collider.id = (uint32_t)id;
            ci->type = collider_type_of(d, cdc_jget(d, i, "type"));
            cdc_jvec3(d, cdc_jget(d, i, "position"), ci->position);
            cdc_jvec3(d, cdc_jget(d, i, "normal"), ci->normal);
            cdc_jfloat(d, cdc_jget(d, i, "radius"), &ci->radius);
            cdc_jfloat(d, cdc_jget(d, i, "height"), &ci->height);
            cdc_jfloat(d, cdc_jget(d, i, "radius2"), &ci->radius2);
            cdc_jvec3(d, cdc_jget(d, i, "halfExtents"), ci->half_extents);
            const int q = cdc_jget(d, i, "rotation");
            if (q >= 0 && cdc_jtype_of(d, q) == CDC_JARRAY && d->tok[q].count == 4) {
                int e = cdc_jfirst(d, q);
                for (int j = 0; j < 4; j++, e = cdc_jnext(d, e))
                    cdc_jfloat(d, e, &ci->rotation[j]);
            }
        }
        s->collider_count = n;
    }
    int self = cdc_jget(d, root, "selfCollision");
    if (rc == CLOTHD_OK && self >= 0) {
        s->has_self_collision = true;
        cdc_juint(d, cdc_jget(d, self, "searches"), UINT64_MAX, &s->self_searches);
        cdc_juint(d, cdc_jget(d, self, "pairs"), UINT64_MAX, &s->self_pairs);
        cdc_juint(d, cdc_jget(d, self, "overflows"), UINT64_MAX, &s->self_overflows);
    }
    if (rc != CLOTHD_OK || s == &tmp)
        clothd_instance_state_free(s);
    return rc;
}

clothd_code clothd_recv_get(clothd_client *c, clothd_ticket ticket, const clothd_get_options *o,
                            clothd_instance_state *out, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_GET), c ? cdc_deadline(c) : -1, false, decode_get, out,
                       sizeof *out, o, err);
}

clothd_code clothd_get(clothd_client *c, clothd_instance inst, const clothd_get_options *o,
                       clothd_instance_state *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_get_ex(c, inst, o, &ticket_, err), CDC_K_GET, decode_get, out, sizeof *out,
                 o);
}

/* ---- subscribe, unsubscribe ---- */

static void put_which(cdc_jw *w, const clothd_subscribe_options *o)
{
    if (o->instance.id != 0) {
        cdc_jw_key(w, "instance");
        cdc_jw_u64(w, o->instance.id);
    }
    if (o->instances != NULL)
        cdc_put_instances(w, "instances", o->instances, o->instance_count);
    cdc_put_str(w, "scene", o->scene);
}

clothd_code clothd_send_subscribe(clothd_client *c, const clothd_subscribe_options *o, clothd_ticket *ticket,
                                  clothd_error *err)
{
    clothd_subscribe_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    const cdc_sub_opts opts = {o->quantize, o->every, o->channels, o->shm.set && o->shm.value};
    if (opts.shm) {
        clothd_code unsupported = cdc_shm_supported(err);
        if (unsupported != CLOTHD_OK)
            return unsupported;
    }
    BEGIN(CDC_K_SUBSCRIBE, "subscribe");
    put_which(&r.w, o);
    cdc_put_sub_opts(&r.w, &opts);
    cdc_entry *e = NULL;
    rc = cdc_req_end(&r, ticket, &e, err);
    if (e != NULL) /* kept for a reconnect once the server says ok */
        e->sub = opts;
    return rc;
}

static clothd_code decode_subscribed(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                     clothd_error *err)
{
    (void)c;
    (void)arg;
    (void)err;
    if (out != NULL) {
        clothd_subscribed *s = out;
        cdc_jbool(d, cdc_jget(d, root, "all"), &s->all);
        s->instance_count = list_size(d, cdc_jget(d, root, "instances"));
    }
    return CLOTHD_OK;
}

clothd_code clothd_recv_subscribe(clothd_client *c, clothd_ticket ticket, clothd_subscribed *out,
                                  clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_SUBSCRIBE), c ? cdc_deadline(c) : -1, false,
                       decode_subscribed, out, sizeof *out, NULL, err);
}

clothd_code clothd_subscribe(clothd_client *c, const clothd_subscribe_options *o, clothd_subscribed *out,
                             clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_subscribe(c, o, &ticket_, err), CDC_K_SUBSCRIBE, decode_subscribed, out,
                 sizeof *out, NULL);
}

clothd_code clothd_send_unsubscribe(clothd_client *c, const clothd_subscribe_options *o, clothd_ticket *ticket,
                                    clothd_error *err)
{
    clothd_subscribe_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    uint32_t *ids = NULL;
    if (o->instances != NULL && o->instance_count > 0) {
        ids = malloc(o->instance_count * sizeof *ids);
        if (ids == NULL)
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        for (size_t i = 0; i < o->instance_count; i++)
            ids[i] = o->instances[i].id;
    }
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_UNSUBSCRIBE, "unsubscribe", err);
    if (rc != CLOTHD_OK) {
        free(ids);
        return rc;
    }
    put_which(&r.w, o);
    cdc_entry *e = NULL;
    rc = cdc_req_end(&r, ticket, &e, err);
    if (e == NULL) {
        free(ids);
        return rc;
    }
    /* What to forget once the server says ok. */
    e->all = o->instance.id == 0 && o->instances == NULL && o->scene == NULL;
    e->instance = o->instance.id;
    if (o->scene != NULL)
        snprintf(e->scene, sizeof e->scene, "%s", o->scene);
    e->ids = ids;
    e->nids = ids ? o->instance_count : 0;
    return rc;
}

clothd_code clothd_unsubscribe(clothd_client *c, const clothd_subscribe_options *o, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_unsubscribe(c, o, &ticket_, err), CDC_K_UNSUBSCRIBE, NULL, none, 0, NULL);
}

/* ---- status ---- */

clothd_code clothd_send_status(clothd_client *c, clothd_ticket *ticket, clothd_error *err)
{
    return clothd_send_status_scene(c, NULL, ticket, err);
}

clothd_code clothd_send_status_scene(clothd_client *c, const char *scene, clothd_ticket *ticket,
                                     clothd_error *err)
{
    BEGIN(CDC_K_STATUS, "status");
    cdc_put_str(&r.w, "scene", scene);
    return cdc_req_end(&r, ticket, NULL, err);
}

void clothd_status_free(clothd_status *s)
{
    if (s == NULL)
        return;
    free(s->instances);
    free(s->text);
    memset(s, 0, sizeof *s);
}

static clothd_code decode_status(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                 clothd_error *err)
{
    (void)c;
    (void)arg;
    clothd_status tmp, *s = out ? out : &tmp;
    memset(s, 0, sizeof *s);
    uint64_t v;
    clothd_code rc = CLOTHD_OK;
    int list = cdc_jget(d, root, "instances");
    size_t n = list_size(d, list);
    if (n > 0 && (s->instances = calloc(n, sizeof *s->instances)) == NULL)
        rc = nomem(err);
    int i = cdc_jfirst(d, list);
    for (size_t k = 0; rc == CLOTHD_OK && k < n; k++, i = cdc_jnext(d, i)) {
        clothd_instance_summary *m = &s->instances[k];
        if (!cdc_juint(d, cdc_jget(d, i, "instance"), UINT32_MAX, &v)) {
            rc = malformed(err, "a status entry without \"instance\"");
            break;
        }
        m->instance.id = (uint32_t)v;
        m->kind = kind_of(d, cdc_jget(d, i, "type"));
        if (cdc_juint(d, cdc_jget(d, i, "particles"), UINT32_MAX, &v))
            m->particles = (uint32_t)v;
        if (cdc_juint(d, cdc_jget(d, i, "constraints"), UINT32_MAX, &v))
            m->constraints = (uint32_t)v;
        if (cdc_juint(d, cdc_jget(d, i, "colliders"), UINT32_MAX, &v))
            m->colliders = (uint32_t)v;
        cdc_jbool(d, cdc_jget(d, i, "enabled"), &m->enabled);
        cdc_jbool(d, cdc_jget(d, i, "unstable"), &m->unstable);
        cdc_jbool(d, cdc_jget(d, i, "sleeping"), &m->sleeping);
        cdc_juint(d, cdc_jget(d, i, "frame"), UINT64_MAX, &m->frame);
        if (!cdc_jstr_copy(d, cdc_jget(d, i, "scene"), m->scene, sizeof m->scene, NULL))
            snprintf(m->scene, sizeof m->scene, "default"); /* a server before scenes */
        cdc_jbool(d, cdc_jget(d, i, "ephemeral"), &m->ephemeral);
    }
    s->instance_count = n;
    if (cdc_juint(d, cdc_jget(d, root, "workers"), UINT32_MAX, &v))
        s->workers = (uint32_t)v;
    cdc_jvec3(d, cdc_jget(d, root, "globalWind"), s->global_wind);
    cdc_jstr_copy(d, cdc_jget(d, root, "version"), s->version, sizeof s->version, NULL);
    cdc_jstr_copy(d, cdc_jget(d, root, "simd"), s->simd, sizeof s->simd, NULL);
    cdc_jbool(d, cdc_jget(d, root, "debug"), &s->debug);
    int text = cdc_jget(d, root, "text");
    long size = cdc_jstr_size(d, text);
    if (rc == CLOTHD_OK && size >= 0) {
        s->text = malloc((size_t)size + 1);
        if (s->text == NULL)
            rc = nomem(err);
        else
            cdc_jstr_copy(d, text, s->text, (size_t)size + 1, NULL);
    }
    if (rc != CLOTHD_OK || s == &tmp)
        clothd_status_free(s);
    return rc;
}

clothd_code clothd_recv_status(clothd_client *c, clothd_ticket ticket, clothd_status *out, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_STATUS), c ? cdc_deadline(c) : -1, false, decode_status,
                       out, sizeof *out, NULL, err);
}

clothd_code clothd_get_status(clothd_client *c, clothd_status *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_status(c, &ticket_, err), CDC_K_STATUS, decode_status, out, sizeof *out,
                 NULL);
}

clothd_code clothd_get_status_scene(clothd_client *c, const char *scene, clothd_status *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_status_scene(c, scene, &ticket_, err), CDC_K_STATUS, decode_status, out,
                 sizeof *out, NULL);
}

/* ---- topology ---- */

clothd_code clothd_send_topology(clothd_client *c, clothd_instance inst, clothd_ticket *ticket,
                                 clothd_error *err)
{
    BEGIN(CDC_K_TOPOLOGY, "topology");
    cdc_jw_key(&r.w, "instance");
    cdc_jw_u64(&r.w, inst.id);
    return cdc_req_end(&r, ticket, NULL, err);
}

void clothd_topology_free(clothd_topology *t)
{
    if (t == NULL)
        return;
    free(t->triangles);
    free(t->uvs);
    cdc_free_painted(t);
    memset(t, 0, sizeof *t);
}

static clothd_code decode_topology(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                   clothd_error *err)
{
    (void)c;
    (void)arg;
    clothd_topology tmp, *t = out ? out : &tmp;
    memset(t, 0, sizeof *t);
    uint64_t v;
    if (cdc_juint(d, cdc_jget(d, root, "instance"), UINT32_MAX, &v))
        t->instance.id = (uint32_t)v;
    t->kind = kind_of(d, cdc_jget(d, root, "type"));
    if (cdc_juint(d, cdc_jget(d, root, "particles"), UINT32_MAX, &v))
        t->particles = (uint32_t)v;
    size_t n = 0;
    int tris = cdc_jget(d, root, "triangles");
    if (tris < 0 || list_size(d, tris) % 3 != 0)
        return malformed(err, "topology without \"triangles\" (3 indices each)");
    clothd_code rc = read_u32s(d, tris, &t->triangles, &n, err);
    t->triangle_count = n / 3;
    int uvs = cdc_jget(d, root, "uvs");
    size_t m = list_size(d, uvs);
    if (rc == CLOTHD_OK && m % 2 != 0)
        rc = malformed(err, "topology's \"uvs\" are not pairs");
    if (rc == CLOTHD_OK && m > 0) {
        t->uvs = malloc(m * sizeof(float));
        if (t->uvs == NULL)
            rc = nomem(err);
        int i = cdc_jfirst(d, uvs);
        for (size_t k = 0; rc == CLOTHD_OK && k < m; k++, i = cdc_jnext(d, i))
            if (!cdc_jfloat(d, i, &t->uvs[k]))
                rc = malformed(err, "a uv is not a number");
        t->uv_count = m / 2;
    }
    if (rc == CLOTHD_OK)
        rc = cdc_read_painted(d, root, t, err);
    if (rc != CLOTHD_OK || t == &tmp)
        clothd_topology_free(t);
    return rc;
}

clothd_code clothd_recv_topology(clothd_client *c, clothd_ticket ticket, clothd_topology *out,
                                 clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_TOPOLOGY), c ? cdc_deadline(c) : -1, false,
                       decode_topology, out, sizeof *out, NULL, err);
}

clothd_code clothd_get_topology(clothd_client *c, clothd_instance inst, clothd_topology *out,
                                clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_topology(c, inst, &ticket_, err), CDC_K_TOPOLOGY, decode_topology, out,
                 sizeof *out, NULL);
}
