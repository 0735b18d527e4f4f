/* The commands that change the simulation (create, destroy, set, pin,
 * unpin, transform, attach, wind, gravity, the colliders, enable) and the
 * small ones (debug, ping, auth): for each, the request's fields in the
 * order of PROTOCOL.md's tables and the decoder of its reply. Only the
 * options the caller set are written. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(KIND, CMD)                                                                           \
    cdc_req r;                                                                                     \
    clothd_code rc = cdc_req_begin(&r, c, (KIND), (CMD), err);                                     \
    if (rc != CLOTHD_OK)                                                                           \
        return rc

static void put_instance(cdc_jw *w, clothd_instance inst)
{
    cdc_jw_key(w, "instance");
    cdc_jw_u64(w, inst.id);
}

/* A create's scene and lifetime (only what was set is written). */
static void put_placement(cdc_jw *w, const char *scene, bool ephemeral)
{
    cdc_put_str(w, "scene", scene);
    if (ephemeral) {
        cdc_jw_key(w, "ephemeral");
        cdc_jw_bool(w, true);
    }
}

static void put_id(cdc_jw *w, const char *key, uint32_t id)
{
    cdc_jw_key(w, key);
    cdc_jw_u64(w, id);
}

/* A list field: sent when the pointer is set (even with no entries). */
#define PUT_LIST(w, key, ptr, n, fn)                                                               \
    do {                                                                                           \
        if ((ptr) != NULL)                                                                         \
            fn((w), (key), (ptr), (n));                                                            \
    } while (0)

static const char *wind_model_name(clothd_wind_model m)
{
    return m == CLOTHD_WIND_AERO        ? "aero"
           : m == CLOTHD_WIND_CONSTANT  ? "constant"
           : m == CLOTHD_WIND_DRAG_LIFT ? "dragLift"
                                        : NULL;
}

static void put_material(cdc_jw *w, const clothd_material *m)
{
    cdc_put_f(w, "mass", m->mass);
    cdc_put_f(w, "stiffness", m->stiffness);
    cdc_put_f(w, "bendStiffness", m->bend_stiffness);
    cdc_put_f(w, "damping", m->damping);
    cdc_put_i(w, "solverIterations", m->solver_iterations);
    cdc_put_v3(w, "gravity", m->gravity);
    cdc_put_f(w, "stretchCompliance", m->stretch_compliance);
    cdc_put_f(w, "bendCompliance", m->bend_compliance);
    cdc_put_i(w, "iterations", m->iterations);
    cdc_put_i(w, "substeps", m->substeps);
    cdc_put_f(w, "solverFrequency", m->solver_frequency);
    cdc_put_f(w, "velocityRetention", m->velocity_retention);
    cdc_put_f(w, "thickness", m->thickness);
    cdc_put_f(w, "particleMass", m->particle_mass);
    cdc_put_str(w, "windModel", wind_model_name(m->wind_model));
    cdc_put_f(w, "airDensity", m->air_density);
    cdc_put_f(w, "drag", m->drag);
    cdc_put_f(w, "lift", m->lift);
    cdc_put_b(w, "tethers", m->tethers);
    cdc_put_f(w, "tetherScale", m->tether_scale);
    cdc_put_f(w, "sleepThreshold", m->sleep_threshold);
    cdc_put_f(w, "selfDistance", m->self_distance);
    cdc_put_f(w, "volumeStiffness", m->volume_stiffness);
    cdc_put_f(w, "volumeCompliance", m->volume_compliance);
    cdc_put_i(w, "lod", m->lod);
    cdc_put_f(w, "priority", m->priority);
    cdc_put_garment_material(w, m);
}

static clothd_code check_material(const clothd_material *m, clothd_error *err)
{
    if ((unsigned)m->wind_model > CLOTHD_WIND_DRAG_LIFT)
        return cdc_fail(err, CLOTHD_E_USAGE, "windModel: %d is no clothd_wind_model", (int)m->wind_model);
    return cdc_check_paint(m, err);
}

/* ---- create ---- */

clothd_cloth_options clothd_cloth_default(void)
{
    clothd_cloth_options o;
    memset(&o, 0, sizeof o);
    return o;
}

clothd_softbody_options clothd_softbody_default(void)
{
    clothd_softbody_options o;
    memset(&o, 0, sizeof o);
    return o;
}

clothd_code clothd_send_create_cloth(clothd_client *c, const clothd_cloth_options *o, clothd_ticket *ticket,
                                     clothd_error *err)
{
    clothd_cloth_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    if (check_material(&o->material, err) != CLOTHD_OK)
        return CLOTHD_E_USAGE;
    BEGIN(CDC_K_CREATE, "create");
    cdc_put_i(&r.w, "width", o->width);
    cdc_put_i(&r.w, "height", o->height);
    cdc_put_f(&r.w, "spacing", o->spacing);
    cdc_put_v3(&r.w, "origin", o->origin);
    cdc_put_v3(&r.w, "right", o->right);
    cdc_put_v3(&r.w, "down", o->down);
    put_material(&r.w, &o->material);
    put_placement(&r.w, o->scene, o->ephemeral);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_send_create_softbody(clothd_client *c, const clothd_softbody_options *o,
                                        clothd_ticket *ticket, clothd_error *err)
{
    clothd_softbody_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    if (check_material(&o->material, err) != CLOTHD_OK)
        return CLOTHD_E_USAGE;
    if ((unsigned)o->shape > CLOTHD_SHAPE_BALL)
        return cdc_fail(err, CLOTHD_E_USAGE, "shape: %d is no clothd_shape", (int)o->shape);
    BEGIN(CDC_K_CREATE, "create");
    cdc_put_str(&r.w, "type", "softbody");
    cdc_put_str(&r.w, "shape", o->shape == CLOTHD_SHAPE_BOX ? "box" : o->shape == CLOTHD_SHAPE_BALL ? "ball" : NULL);
    cdc_put_v3(&r.w, "size", o->size);
    if (o->cells.set) {
        cdc_jw_key(&r.w, "cells");
        cdc_jw_array_open(&r.w);
        for (int k = 0; k < 3; k++)
            cdc_jw_i64(&r.w, o->cells.value[k]);
        cdc_jw_array_close(&r.w);
    }
    cdc_put_v3(&r.w, "origin", o->origin);
    cdc_put_f(&r.w, "radius", o->radius);
    cdc_put_i(&r.w, "resolution", o->resolution);
    cdc_put_v3(&r.w, "center", o->center);
    PUT_LIST(&r.w, "vertices", o->vertices, o->vertex_count, cdc_put_vec3s);
    PUT_LIST(&r.w, "tetrahedra", o->tetrahedra, 4 * o->tetrahedron_count, cdc_put_u32s);
    put_material(&r.w, &o->material);
    put_placement(&r.w, o->scene, o->ephemeral);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_send_create_mesh_cloth(clothd_client *c, const clothd_mesh_cloth_options *o,
                                          clothd_ticket *ticket, clothd_error *err)
{
    if (o == NULL || o->vertices == NULL || o->triangles == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "vertices, triangles: a mesh cloth needs both");
    if (check_material(&o->material, err) != CLOTHD_OK)
        return CLOTHD_E_USAGE;
    BEGIN(CDC_K_CREATE, "create");
    cdc_put_str(&r.w, "type", "cloth");
    cdc_put_floats(&r.w, "vertices", o->vertices, 3 * o->vertex_count); /* flat: x, y, z per vertex */
    cdc_put_u32s(&r.w, "triangles", o->triangles, 3 * o->triangle_count);
    PUT_LIST(&r.w, "uvs", o->uvs, 2 * o->vertex_count, cdc_put_floats);
    put_material(&r.w, &o->material);
    put_placement(&r.w, o->scene, o->ephemeral);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code need_u32(const cdc_jdoc *d, int root, const char *key, uint32_t *out, clothd_error *err)
{
    uint64_t v;
    if (!cdc_juint(d, cdc_jget(d, root, key), UINT32_MAX, &v))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: no unsigned integer \"%s\"", key);
    *out = (uint32_t)v;
    return CLOTHD_OK;
}

static clothd_code decode_created(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                  clothd_error *err)
{
    (void)c;
    (void)arg;
    clothd_created tmp, *o = out ? out : &tmp;
    clothd_code rc = need_u32(d, root, "instance", &o->instance.id, err);
    if (rc == CLOTHD_OK)
        rc = need_u32(d, root, "particles", &o->particles, err);
    if (rc == CLOTHD_OK)
        rc = need_u32(d, root, "constraints", &o->constraints, err);
    return rc;
}

clothd_code clothd_recv_create(clothd_client *c, clothd_ticket ticket, clothd_created *out, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_CREATE), c ? cdc_deadline(c) : -1, false, decode_created,
                       out, sizeof *out, NULL, err);
}

clothd_code clothd_create_cloth(clothd_client *c, const clothd_cloth_options *o, clothd_created *out,
                                clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_create_cloth(c, o, &ticket_, err), CDC_K_CREATE, decode_created, out,
                 sizeof *out, NULL);
}

clothd_code clothd_create_mesh_cloth(clothd_client *c, const clothd_mesh_cloth_options *o, clothd_created *out,
                                     clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_create_mesh_cloth(c, o, &ticket_, err), CDC_K_CREATE, decode_created,
                 out, sizeof *out, NULL);
}

clothd_code clothd_create_softbody(clothd_client *c, const clothd_softbody_options *o, clothd_created *out,
                                   clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_create_softbody(c, o, &ticket_, err), CDC_K_CREATE, decode_created,
                 out, sizeof *out, NULL);
}

/* ---- destroy, set ---- */

clothd_code clothd_send_destroy(clothd_client *c, clothd_instance inst, clothd_ticket *ticket,
                                clothd_error *err)
{
    BEGIN(CDC_K_DESTROY, "destroy");
    put_instance(&r.w, inst);
    cdc_entry *e = NULL;
    rc = cdc_req_end(&r, ticket, &e, err);
    if (e != NULL)
        e->instance = inst.id; /* its subscription goes with it */
    return rc;
}

clothd_code clothd_destroy(clothd_client *c, clothd_instance inst, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_destroy(c, inst, &ticket_, err), CDC_K_DESTROY, NULL, none, 0, NULL);
}

/* What a scene's destroy hands back: the ids. */
typedef struct destroyed_out {
    clothd_instance *ids;
    size_t count;
} destroyed_out;

static clothd_code decode_destroyed(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                    clothd_error *err)
{
    (void)c;
    (void)arg;
    destroyed_out *o = out;
    int list = cdc_jget(d, root, "destroyed");
    size_t n = 0;
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i))
        n++;
    o->ids = NULL;
    o->count = 0;
    if (n > 0 && (o->ids = calloc(n, sizeof *o->ids)) == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i)) {
        uint64_t id;
        if (cdc_juint(d, i, UINT32_MAX, &id))
            o->ids[o->count++].id = (uint32_t)id;
    }
    return CLOTHD_OK;
}

static clothd_code send_destroy_scene(clothd_client *c, const char *scene, clothd_ticket *ticket,
                                      clothd_error *err)
{
    if (scene == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "scene: NULL");
    BEGIN(CDC_K_DESTROY, "destroy");
    cdc_put_str(&r.w, "scene", scene);
    cdc_entry *e = NULL;
    rc = cdc_req_end(&r, ticket, &e, err);
    if (e != NULL) /* the subscriptions of the ids the reply lists go */
        snprintf(e->scene, sizeof e->scene, "%s", scene);
    return rc;
}

static clothd_code destroy_scene(clothd_client *c, const char *scene, destroyed_out *got, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_destroy_scene(c, scene, &ticket_, err), CDC_K_DESTROY, decode_destroyed, got,
                 sizeof *got, NULL);
}

clothd_code clothd_destroy_scene(clothd_client *c, const char *scene, clothd_instance **ids, size_t *count,
                                 clothd_error *err)
{
    destroyed_out got = {NULL, 0};
    const clothd_code rc = destroy_scene(c, scene, &got, err);
    if (count != NULL)
        *count = rc == CLOTHD_OK ? got.count : 0;
    if (ids != NULL && rc == CLOTHD_OK)
        *ids = got.ids;
    else
        free(got.ids);
    return rc;
}

/* ---- scene ---- */

typedef struct scene_out {
    bool held;
    size_t instances;
} scene_out;

static clothd_code decode_scene(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                clothd_error *err)
{
    (void)c;
    (void)arg;
    (void)err;
    scene_out *o = out;
    cdc_jbool(d, cdc_jget(d, root, "ephemeral"), &o->held);
    int list = cdc_jget(d, root, "instances");
    o->instances = 0;
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i))
        o->instances++;
    return CLOTHD_OK;
}

static clothd_code send_scene(clothd_client *c, const char *scene, clothd_opt_b ephemeral,
                              clothd_ticket *ticket, clothd_error *err)
{
    if (scene == NULL && (c == NULL || c->scene == NULL))
        return cdc_fail(err, CLOTHD_E_USAGE, "scene: NULL and no current scene");
    BEGIN(CDC_K_SCENE, "scene");
    cdc_put_str(&r.w, "scene", scene);
    cdc_put_b(&r.w, "ephemeral", ephemeral);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code scene_request(clothd_client *c, const char *scene, clothd_opt_b ephemeral, scene_out *got,
                                 clothd_error *err)
{
    CDC_BLOCKING(c, err, send_scene(c, scene, ephemeral, &ticket_, err), CDC_K_SCENE, decode_scene, got,
                 sizeof *got, NULL);
}

clothd_code clothd_scene(clothd_client *c, const char *scene, clothd_opt_b ephemeral, bool *held,
                         size_t *instances, clothd_error *err)
{
    scene_out got = {false, 0};
    const clothd_code rc = scene_request(c, scene, ephemeral, &got, err);
    if (held != NULL)
        *held = got.held;
    if (instances != NULL)
        *instances = got.instances;
    return rc;
}

clothd_code clothd_send_set(clothd_client *c, clothd_instance inst, const clothd_material *m,
                            clothd_ticket *ticket, clothd_error *err)
{
    clothd_material none;
    if (m == NULL) {
        memset(&none, 0, sizeof none);
        m = &none;
    }
    if (check_material(m, err) != CLOTHD_OK)
        return CLOTHD_E_USAGE;
    BEGIN(CDC_K_SET, "set");
    put_instance(&r.w, inst);
    put_material(&r.w, m);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_set(clothd_client *c, clothd_instance inst, const clothd_material *m, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_set(c, inst, m, &ticket_, err), CDC_K_SET, NULL, none, 0, NULL);
}

/* ---- pin, unpin, attach, transform ---- */

clothd_code clothd_send_pin(clothd_client *c, clothd_instance inst, const clothd_pin_options *o,
                            clothd_ticket *ticket, clothd_error *err)
{
    clothd_pin_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_PIN, "pin");
    put_instance(&r.w, inst);
    cdc_put_u(&r.w, "particle", o->particle);
    cdc_put_v3(&r.w, "position", o->position);
    PUT_LIST(&r.w, "particles", o->particles, o->particle_count, cdc_put_u32s);
    PUT_LIST(&r.w, "positions", o->positions, o->particle_count, cdc_put_vec3s);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_count(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                clothd_error *err)
{
    (void)c;
    (void)arg;
    static const char *const keys[] = {"pinned", "unpinned", "attached"};
    for (size_t k = 0; k < 3; k++) {
        uint64_t v;
        if (cdc_juint(d, cdc_jget(d, root, keys[k]), UINT32_MAX, &v)) {
            if (out != NULL)
                *(uint32_t *)out = (uint32_t)v;
            return CLOTHD_OK;
        }
    }
    return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: no \"pinned\", \"unpinned\" or \"attached\" count");
}

#define COUNT_KINDS (CDC_KIND_BIT(CDC_K_PIN) | CDC_KIND_BIT(CDC_K_UNPIN) | CDC_KIND_BIT(CDC_K_ATTACH))

clothd_code clothd_recv_count(clothd_client *c, clothd_ticket ticket, uint32_t *count, clothd_error *err)
{
    return cdc_collect(c, ticket, COUNT_KINDS, c ? cdc_deadline(c) : -1, false, decode_count, count,
                       sizeof *count, NULL, err);
}

clothd_code clothd_pin(clothd_client *c, clothd_instance inst, const clothd_pin_options *o, uint32_t *pinned,
                       clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_pin(c, inst, o, &ticket_, err), CDC_K_PIN, decode_count, pinned,
                 sizeof *pinned, NULL);
}

clothd_code clothd_send_unpin(clothd_client *c, clothd_instance inst, const clothd_unpin_options *o,
                              clothd_ticket *ticket, clothd_error *err)
{
    clothd_unpin_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_UNPIN, "unpin");
    put_instance(&r.w, inst);
    cdc_put_u(&r.w, "particle", o->particle);
    PUT_LIST(&r.w, "particles", o->particles, o->particle_count, cdc_put_u32s);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_unpin(clothd_client *c, clothd_instance inst, const clothd_unpin_options *o,
                         uint32_t *unpinned, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_unpin(c, inst, o, &ticket_, err), CDC_K_UNPIN, decode_count, unpinned,
                 sizeof *unpinned, NULL);
}

clothd_code clothd_send_attach(clothd_client *c, clothd_instance inst, const char *name,
                               const clothd_attach_options *o, clothd_ticket *ticket, clothd_error *err)
{
    clothd_attach_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_ATTACH, "attach");
    put_instance(&r.w, inst);
    cdc_put_str(&r.w, "name", name);
    cdc_put_u(&r.w, "particle", o->particle);
    cdc_put_v3(&r.w, "offset", o->offset);
    PUT_LIST(&r.w, "particles", o->particles, o->particle_count, cdc_put_u32s);
    PUT_LIST(&r.w, "offsets", o->offsets, o->particle_count, cdc_put_vec3s);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_attach(clothd_client *c, clothd_instance inst, const char *name,
                          const clothd_attach_options *o, uint32_t *attached, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_attach(c, inst, name, o, &ticket_, err), CDC_K_ATTACH, decode_count,
                 attached, sizeof *attached, NULL);
}

clothd_code clothd_send_transform(clothd_client *c, clothd_instance inst, const char *name,
                                  const clothd_transform_options *o, clothd_ticket *ticket, clothd_error *err)
{
    clothd_transform_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_TRANSFORM, "transform");
    put_instance(&r.w, inst);
    cdc_put_str(&r.w, "name", name);
    cdc_put_v3(&r.w, "position", o->position);
    if (o->rotation.set)
        cdc_put_floats(&r.w, "rotation", o->rotation.value, 4);
    cdc_put_b(&r.w, "inertiaFrame", o->inertia_frame);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_transform(clothd_client *c, clothd_instance inst, const char *name,
                             const clothd_transform_options *o, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_transform(c, inst, name, o, &ticket_, err), CDC_K_TRANSFORM, NULL, none,
                 0, NULL);
}

/* ---- wind, gravity ---- */

clothd_code clothd_send_wind(clothd_client *c, clothd_instance inst, const float wind[3], clothd_ticket *ticket,
                             clothd_error *err)
{
    BEGIN(CDC_K_WIND, "wind");
    r.scoped = inst.id != 0; /* the global wind belongs to no scene */
    if (inst.id != 0)
        put_instance(&r.w, inst);
    if (wind != NULL)
        cdc_put_floats(&r.w, "wind", wind, 3);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_wind(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                               clothd_error *err)
{
    (void)c;
    (void)arg;
    float tmp[3];
    if (!cdc_jvec3(d, cdc_jget(d, root, "wind"), out ? (float *)out : tmp))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: no vec3 \"wind\"");
    return CLOTHD_OK;
}

clothd_code clothd_recv_wind(clothd_client *c, clothd_ticket ticket, float stored[3], clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_WIND), c ? cdc_deadline(c) : -1, false, decode_wind,
                       stored, stored ? 3 * sizeof(float) : 0, NULL, err);
}

clothd_code clothd_wind(clothd_client *c, clothd_instance inst, const float wind[3], float stored[3],
                        clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_wind(c, inst, wind, &ticket_, err), CDC_K_WIND, decode_wind, stored,
                 stored ? 3 * sizeof(float) : 0, NULL);
}

clothd_code clothd_send_gravity(clothd_client *c, clothd_instance inst, const float gravity[3],
                                clothd_ticket *ticket, clothd_error *err)
{
    BEGIN(CDC_K_GRAVITY, "gravity");
    put_instance(&r.w, inst);
    if (gravity != NULL)
        cdc_put_floats(&r.w, "gravity", gravity, 3);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_gravity(clothd_client *c, clothd_instance inst, const float gravity[3], clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_gravity(c, inst, gravity, &ticket_, err), CDC_K_GRAVITY, NULL, none, 0,
                 NULL);
}

/* ---- colliders ---- */

static const char *collider_type_name(clothd_collider_type t)
{
    switch (t) {
    case CLOTHD_COLLIDER_SPHERE:
        return "sphere";
    case CLOTHD_COLLIDER_CAPSULE:
        return "capsule";
    case CLOTHD_COLLIDER_PLANE:
        return "plane";
    case CLOTHD_COLLIDER_TAPERED_CAPSULE:
        return "taperedCapsule";
    case CLOTHD_COLLIDER_BOX:
        return "box";
    default:
        return NULL;
    }
}

clothd_code clothd_send_add_collider(clothd_client *c, clothd_instance inst, const clothd_collider_options *o,
                                     clothd_ticket *ticket, clothd_error *err)
{
    clothd_collider_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    if ((unsigned)o->type > CLOTHD_COLLIDER_BOX)
        return cdc_fail(err, CLOTHD_E_USAGE, "type: %d is no clothd_collider_type", (int)o->type);
    BEGIN(CDC_K_ADD_COLLIDER, "addCollider");
    put_instance(&r.w, inst);
    cdc_put_str(&r.w, "type", collider_type_name(o->type));
    cdc_put_v3(&r.w, "position", o->position);
    cdc_put_v3(&r.w, "normal", o->normal);
    cdc_put_f(&r.w, "radius", o->radius);
    cdc_put_f(&r.w, "height", o->height);
    cdc_put_f(&r.w, "friction", o->friction);
    cdc_put_f(&r.w, "staticFriction", o->static_friction);
    cdc_put_f(&r.w, "coupling", o->coupling);
    cdc_put_f(&r.w, "radius2", o->radius2);
    cdc_put_v3(&r.w, "halfExtents", o->half_extents);
    if (o->rotation.set)
        cdc_put_floats(&r.w, "rotation", o->rotation.value, 4);
    cdc_put_str(&r.w, "attachment", o->attachment);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_collider(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                   clothd_error *err)
{
    (void)c;
    (void)arg;
    uint32_t id = 0;
    clothd_code rc = need_u32(d, root, "collider", &id, err);
    if (rc == CLOTHD_OK && out != NULL)
        ((clothd_collider *)out)->id = id;
    return rc;
}

clothd_code clothd_recv_add_collider(clothd_client *c, clothd_ticket ticket, clothd_collider *out,
                                     clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_ADD_COLLIDER), c ? cdc_deadline(c) : -1, false,
                       decode_collider, out, sizeof *out, NULL, err);
}

clothd_code clothd_add_collider(clothd_client *c, clothd_instance inst, const clothd_collider_options *o,
                                clothd_collider *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_add_collider(c, inst, o, &ticket_, err), CDC_K_ADD_COLLIDER,
                 decode_collider, out, sizeof *out, NULL);
}

clothd_code clothd_send_move_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                      const clothd_move_options *o, clothd_ticket *ticket, clothd_error *err)
{
    clothd_move_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_MOVE_COLLIDER, "moveCollider");
    put_instance(&r.w, inst);
    put_id(&r.w, "collider", col.id);
    cdc_put_v3(&r.w, "position", o->position);
    cdc_put_v3(&r.w, "normal", o->normal);
    if (o->rotation.set)
        cdc_put_floats(&r.w, "rotation", o->rotation.value, 4);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_move_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                 const clothd_move_options *o, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_move_collider(c, inst, col, o, &ticket_, err), CDC_K_MOVE_COLLIDER, NULL,
                 none, 0, NULL);
}

clothd_code clothd_send_remove_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                        clothd_ticket *ticket, clothd_error *err)
{
    BEGIN(CDC_K_REMOVE_COLLIDER, "removeCollider");
    put_instance(&r.w, inst);
    put_id(&r.w, "collider", col.id);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_remove_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                   clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_remove_collider(c, inst, col, &ticket_, err), CDC_K_REMOVE_COLLIDER, NULL,
                 none, 0, NULL);
}

/* ---- enable, debug, ping, auth ---- */

clothd_code clothd_send_enable(clothd_client *c, clothd_instance inst, bool enabled, clothd_ticket *ticket,
                               clothd_error *err)
{
    BEGIN(CDC_K_ENABLE, "enable");
    put_instance(&r.w, inst);
    cdc_jw_key(&r.w, "enabled");
    cdc_jw_bool(&r.w, enabled);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_flag(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                               clothd_error *err)
{
    (void)c;
    (void)arg;
    bool v;
    if (!cdc_jbool(d, cdc_jget(d, root, "enabled"), &v))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: no boolean \"enabled\"");
    if (out != NULL)
        *(bool *)out = v;
    return CLOTHD_OK;
}

clothd_code clothd_recv_flag(clothd_client *c, clothd_ticket ticket, bool *flag, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_ENABLE) | CDC_KIND_BIT(CDC_K_DEBUG),
                       c ? cdc_deadline(c) : -1, false, decode_flag, flag, sizeof *flag, NULL, err);
}

clothd_code clothd_enable(clothd_client *c, clothd_instance inst, bool enabled, bool *now, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_enable(c, inst, enabled, &ticket_, err), CDC_K_ENABLE, decode_flag, now,
                 sizeof *now, NULL);
}

clothd_code clothd_send_debug(clothd_client *c, clothd_opt_b enabled, clothd_ticket *ticket, clothd_error *err)
{
    BEGIN(CDC_K_DEBUG, "debug");
    cdc_put_b(&r.w, "enabled", enabled);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_debug(clothd_client *c, clothd_opt_b enabled, bool *now, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_debug(c, enabled, &ticket_, err), CDC_K_DEBUG, decode_flag, now,
                 sizeof *now, NULL);
}

clothd_code clothd_send_ping(clothd_client *c, clothd_ticket *ticket, clothd_error *err)
{
    BEGIN(CDC_K_PING, "ping");
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_pong(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                               clothd_error *err)
{
    (void)c;
    (void)out;
    (void)arg;
    bool pong = false;
    if (!cdc_jbool(d, cdc_jget(d, root, "pong"), &pong) || !pong)
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: ping without \"pong\":true");
    return CLOTHD_OK;
}

clothd_code clothd_ping(clothd_client *c, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_ping(c, &ticket_, err), CDC_K_PING, decode_pong, none, 0, NULL);
}

static clothd_code send_auth(clothd_client *c, const char *token, clothd_ticket *ticket, clothd_error *err)
{
    if (token == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "token: NULL");
    BEGIN(CDC_K_AUTH, "auth");
    cdc_put_str(&r.w, "token", token);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_access(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                 clothd_error *err)
{
    int access = cdc_jget(d, root, "access");
    clothd_access granted;
    if (cdc_jstr_eq(d, access, "full"))
        granted = CLOTHD_ACCESS_FULL;
    else if (cdc_jstr_eq(d, access, "readonly"))
        granted = CLOTHD_ACCESS_READONLY;
    else
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: \"access\" is neither \"full\" nor \"readonly\"");
    char *copy = malloc(strlen(arg) + 1);
    if (copy == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory keeping the token");
    strcpy(copy, arg);
    free(c->token);
    c->token = copy; /* presented again after every reconnect */
    c->access = granted;
    if (out != NULL)
        *(clothd_access *)out = granted;
    return CLOTHD_OK;
}

static clothd_code auth_request(clothd_client *c, const char *token, clothd_access *granted, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_auth(c, token, &ticket_, err), CDC_K_AUTH, decode_access, granted,
                 sizeof *granted, token);
}

clothd_code clothd_auth(clothd_client *c, const char *token, clothd_access *granted, clothd_error *err)
{
    clothd_code rc = auth_request(c, token, granted, err);
    /* A hello refused before auth is asked again: now the features are known. */
    if (rc == CLOTHD_OK && c->info.hello == CLOTHD_HELLO_UNKNOWN && cdc_hello_wanted(c))
        clothd_hello(c, (clothd_opt_b){false, false}, NULL, NULL);
    return rc;
}
