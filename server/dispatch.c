/* Runs one parsed request against the world and answers it.
 *
 * Every row of CD_COMMAND_MAP (protocol/commands.h) has its handler
 * cd_cmd_<name> here (or in queries.c), reached through `handlers`; the
 * row's TOUCHES_* kind says which instances must not be mid-step (such a
 * request is deferred and retried when the step is back).
 *
 * The parser has already checked shapes and ranges; what is checked here
 * needs the world: that instances and colliders exist, that particle
 * indices are in range, and the world's limits. When the solver refuses,
 * it names the field and says why (cd_field_fault); the reply carries its
 * words, never a guess. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- helpers ----------------------------------------------------------- */

void cd_reply_fail(cd_conn *conn, const cd_request *req, cd_status code, const char *fmt, ...)
{
    char message[sizeof ((cd_error *)0)->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    cd_error err;
    cd_fail(&err, code, "%s", message); /* keeps messages to one line */
    cd_conn_send_error(conn, req->id, &err);
}

/* The solver's fault, as it words it (cd_fail_fault adds a limit's flag). */
static void reply_fault(cd_conn *conn, const cd_request *req, cd_status code,
                        const cd_field_fault *fault)
{
    cd_error err;
    cd_fail_fault(&err, code, fault);
    cd_conn_send_error(conn, req->id, &err);
}

static void reply_ok(cd_conn *conn, const cd_request *req)
{
    cd_conn_send_reply(conn, cd_reply_ok(req->id));
}

void cd_add_vec3(cJSON *obj, const char *name, cd_vec3 v)
{
    const float xyz[3] = {v.x, v.y, v.z};
    cd_reply_add_floats(obj, name, xyz, 1);
}

const char *cd_instance_type_name(cd_instance_type type)
{
    return type == CD_INSTANCE_CLOTH ? "cloth" : "softbody";
}

cd_instance *cd_require_instance(cd_conn *conn, const cd_request *req)
{
    if (!req->has_instance) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT, "instance: required");
        return NULL;
    }
    cd_instance *inst = cd_world_get(conn->server->world, req->instance);
    if (inst == NULL)
        cd_reply_fail(conn, req, CD_E_NOT_FOUND, "instance: no instance %u", req->instance);
    else if (!cd_in_scene(conn->server, req, req->instance)) {
        cd_reply_fail(conn, req, CD_E_NOT_FOUND, "instance: instance %u is not in scene \"%s\"",
                      req->instance, req->scene);
        return NULL;
    }
    return inst;
}

bool cd_in_scene(const cd_server *server, const cd_request *req, cd_id id)
{
    if (!req->has_scene)
        return true;
    const cd_scene *scene = cd_scenes_of(server, id);
    return scene != NULL && strcmp(scene->name, req->scene) == 0;
}

/* A live instance being stepped. A client's id is looked up first: only a
 * live instance has a busy mark to read. */
static bool is_busy(const cd_server *server, cd_id id)
{
    return cd_world_get(server->world, id) != NULL && cd_server_is_busy(server, id);
}

/* Does running `req` now read or write an instance that is being stepped?
 * The command's row says what it touches (protocol/commands.h). */
static bool touches_busy(const cd_server *server, const cd_request *req)
{
    if (server->busy_count == 0)
        return false;
    switch (cd_command_touches(req->cmd)) {
    case CD_TOUCHES_NONE:
        return false;
    case CD_TOUCHES_ALL:
        return true;
    case CD_TOUCHES_ONE:
    case CD_TOUCHES_OPTIONAL:
        return req->has_instance && is_busy(server, req->instance);
    case CD_TOUCHES_LISTED: {
        const cd_id_list *list = cd_request_instances(req);
        if (list != NULL && list->all && req->has_scene)
            return cd_scenes_busy(server, req->scene);
        if (list == NULL || list->all)
            return true;
        for (uint32_t i = 0; i < list->count; i++)
            if (is_busy(server, list->ids[i]))
                return true;
        return false;
    }
    }
    return true;
}

/* Checks every particle index of a pin/unpin before any is applied, so a
 * request is applied whole or not at all. */
static bool check_particles(cd_conn *conn, const cd_request *req, const cd_instance *inst)
{
    uint32_t n = cd_instance_particle_count(inst);
    const cd_vec3 *positions = req->cmd == CD_CMD_PIN ? req->as.pin.positions : NULL;
    for (uint32_t i = 0; i < req->as.pin.count; i++) {
        if (positions != NULL && !cd_vec3_in_world(positions[i])) {
            if (req->as.pin.count == 1)
                cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                           "position: outside the world box (|x|, |y|, |z| <= %g m)",
                           (double)CD_WORLD_EXTENT);
            else
                cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                           "positions[%u]: outside the world box (|x|, |y|, |z| <= %g m)", i,
                           (double)CD_WORLD_EXTENT);
            return false;
        }
        uint32_t p = req->as.pin.particles[i];
        if (p < n)
            continue;
        if (req->as.pin.count == 1)
            cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                       "particle: index %u out of range (%u particles)", p, n);
        else
            cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                       "particles[%u]: index %u out of range (%u particles)", i, p, n);
        return false;
    }
    return true;
}

/* ---- commands ---------------------------------------------------------- */

cd_dispatch_result cd_cmd_create(cd_conn *conn, const cd_request *req)
{
    cd_world *world = conn->server->world;
    const cd_cloth_def *def = &req->as.create.def;
    const bool soft = req->as.create.type == CD_INSTANCE_SOFTBODY;
    const bool mesh = req->as.create.cloth_mesh.vertex_count > 0;
    const uint32_t vertices = soft   ? req->as.create.mesh.vertex_count
                              : mesh ? req->as.create.cloth_mesh.vertex_count
                                     : (uint32_t)def->width * (uint32_t)def->height;
    if (!cd_paint_fits(conn, req, &req->as.create.paint, vertices))
        return CD_DISPATCH_DONE;
    const char *scene = req->has_scene ? req->scene : CD_SCENE_DEFAULT;
    cd_error err;
    if (!cd_scenes_room(conn->server, scene, &err)) {
        cd_conn_send_error(conn, req->id, &err);
        return CD_DISPATCH_DONE;
    }
    cd_id id = 0;
    cd_field_fault fault;
    cd_status st = soft   ? cd_world_create_softbody_ex(world, &req->as.create.mesh, def, &id, &fault)
                   : mesh ? cd_world_create_mesh_cloth_ex(world, &req->as.create.cloth_mesh, def,
                                                          &id, &fault)
                          : cd_world_create_cloth_ex(world, def, &id, &fault);
    if (st == CD_OK && (st = cd_apply_paint(cd_world_get(world, id), &req->as.create.paint,
                                            &fault)) != CD_OK)
        cd_world_destroy_instance(world, id);
    if (st != CD_OK) {
        /* The solver names the field and says why. */
        reply_fault(conn, req, st, &fault);
        return CD_DISPATCH_DONE;
    }
    if (!cd_scenes_add(conn->server, id, scene, req->as.create.ephemeral ? conn : NULL, true,
                       &err)) {
        cd_world_destroy_instance(world, id);
        cd_conn_send_error(conn, req->id, &err);
        return CD_DISPATCH_DONE;
    }
    cd_instance_info info;
    cd_instance_get_info(cd_world_get(world, id), &info);
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddNumberToObject(reply, "instance", id);
    cJSON_AddNumberToObject(reply, "particles", info.particles);
    cJSON_AddNumberToObject(reply, "constraints", info.constraints);
    cJSON_AddStringToObject(reply, "scene", scene);
    cJSON_AddBoolToObject(reply, "ephemeral", req->as.create.ephemeral);
    cd_conn_send_reply(conn, reply);

    /* Subscribers to "all" or to its scene see the new instance from its
     * first state. */
    for (cd_conn *c = conn->server->conns; c != NULL; c = c->next)
        if (cd_conn_subscription(c, id) != NULL)
            cd_stepper_send_current(c, cd_world_get(world, id));
    return CD_DISPATCH_DONE;
}

/* One instance, a list, or every instance of a scene; the reply lists the
 * destroyed ids. */
cd_dispatch_result cd_cmd_destroy(cd_conn *conn, const cd_request *req)
{
    uint32_t count = 0;
    cd_id *ids = cd_resolve_ids(conn, req, &req->as.destroy.instances, &count);
    if (ids == NULL)
        return CD_DISPATCH_DONE;
    /* One instance's request line is journaled as it is (dispatch); the
     * others get a destroy each. */
    for (uint32_t i = 0; i < count; i++)
        cd_scenes_destroy(conn->server, ids[i], !req->has_instance);
    cJSON *reply = cd_reply_ok(req->id);
    cJSON *arr = cJSON_AddArrayToObject(reply, "destroyed");
    for (uint32_t i = 0; i < count; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    free(ids);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

static cd_dispatch_result pin_or_unpin(cd_conn *conn, const cd_request *req, bool pin)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL || !check_particles(conn, req, inst))
        return CD_DISPATCH_DONE;
    for (uint32_t i = 0; i < req->as.pin.count; i++) {
        uint32_t p = req->as.pin.particles[i];
        if (!pin)
            cd_instance_unpin(inst, p);
        else
            cd_instance_pin(inst, p, req->as.pin.positions ? &req->as.pin.positions[i] : NULL);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddNumberToObject(reply, pin ? "pinned" : "unpinned", req->as.pin.count);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_pin(cd_conn *conn, const cd_request *req)
{
    return pin_or_unpin(conn, req, true);
}

cd_dispatch_result cd_cmd_unpin(cd_conn *conn, const cd_request *req)
{
    return pin_or_unpin(conn, req, false);
}

static bool has_subscriptions(const cd_conn *conn)
{
    return conn->sub_all || conn->sub_count > 0 || conn->scene_sub_count > 0;
}

/* Sends a copy of `event` to every connection but `from` that holds a
 * subscription (the viewers), then frees it. */
static void broadcast_event(cd_conn *from, cJSON *event)
{
    /* Coalescing key: the event's kind and instance (a lagging viewer keeps
     * only the newest of each). Printed once, copied per connection. */
    const cJSON *instance = cJSON_GetObjectItemCaseSensitive(event, "instance");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "event"));
    uint32_t kind = name != NULL && strcmp(name, "debug") == 0 ? CD_EVENT_KIND_DEBUG
                                                               : CD_EVENT_KIND_WIND;
    uint64_t key = cd_event_key(kind, cJSON_IsNumber(instance) ? (cd_id)instance->valuedouble : 0);
    size_t len = 0;
    char *line = cd_reply_print(event, &len);
    if (line == NULL)
        return;
    for (cd_conn *c = from->server->conns; c != NULL; c = c->next)
        if (c != from && !c->closing && has_subscriptions(c))
            cd_conn_send_event(c, key, line, len);
    free(line);
}

static bool same_vec3(cd_vec3 a, cd_vec3 b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

/* A change of wind is announced to the viewers, as the debug flag is. */
cd_dispatch_result cd_cmd_wind(cd_conn *conn, const cd_request *req)
{
    cd_vec3 wind = req->as.wind.wind;
    bool changed;
    if (!req->has_instance) {
        changed = !same_vec3(cd_world_global_wind(conn->server->world), wind);
        cd_world_set_global_wind(conn->server->world, wind);
    } else {
        cd_instance *inst = cd_require_instance(conn, req);
        if (inst == NULL)
            return CD_DISPATCH_DONE;
        changed = !same_vec3(cd_instance_wind(inst), wind);
        cd_instance_set_wind(inst, wind);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cd_add_vec3(reply, "wind", wind);
    cd_conn_send_reply(conn, reply);
    if (!changed)
        return CD_DISPATCH_DONE;
    cJSON *event = cJSON_CreateObject();
    cJSON_AddStringToObject(event, "event", "wind");
    if (req->has_instance)
        cJSON_AddNumberToObject(event, "instance", req->instance);
    cd_add_vec3(event, "wind", wind);
    broadcast_event(conn, event);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_gravity(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_instance_set_gravity(inst, req->as.gravity.gravity);
    reply_ok(conn, req);
    return CD_DISPATCH_DONE;
}

/* The handle of the request's named transform, or 0 after replying
 * not_found. */
static uint32_t require_transform(cd_conn *conn, const cd_request *req, const cd_instance *inst,
                                  const char *field, const char *name)
{
    uint32_t handle = cd_instance_find_transform(inst, name);
    if (handle == 0)
        cd_reply_fail(conn, req, CD_E_NOT_FOUND, "%s: no transform \"%s\" on instance %u", field,
                   name, req->instance);
    return handle;
}

cd_dispatch_result cd_cmd_add_collider(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_collider_def def = req->as.add_collider.def;
    if (req->as.add_collider.attachment[0] != '\0') {
        def.attachment = require_transform(conn, req, inst, "attachment",
                                           req->as.add_collider.attachment);
        if (def.attachment == 0)
            return CD_DISPATCH_DONE;
    }
    cd_field_fault fault;
    cd_status st = cd_collider_def_check(&def, &fault);
    if (st != CD_OK) {
        reply_fault(conn, req, st, &fault);
        return CD_DISPATCH_DONE;
    }
    cd_id collider = 0;
    st = cd_instance_add_collider(inst, &def, &collider);
    if (st == CD_E_LIMIT_EXCEEDED) {
        cd_reply_fail(conn, req, st, "collider: at most %d colliders per instance",
                   CD_MAX_COLLIDERS);
        return CD_DISPATCH_DONE;
    }
    if (st != CD_OK) {
        cd_reply_fail(conn, req, st, "addCollider: %s", cd_status_message(st));
        return CD_DISPATCH_DONE;
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddNumberToObject(reply, "collider", collider);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_move_collider(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    const cd_id collider = req->as.move_collider.collider;
    cd_collider_def now;
    if (cd_instance_get_collider(inst, collider, &now) != CD_OK) {
        cd_reply_fail(conn, req, CD_E_NOT_FOUND, "collider: no collider %u on instance %u",
                      collider, req->instance);
        return CD_DISPATCH_DONE;
    }
    /* A box turns by its rotation, the others by their normal (checked
     * before anything moves: a refused request changes nothing). */
    const bool box = now.type == CD_COLLIDER_BOX;
    if (req->as.move_collider.has_normal && box) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "normal: collider %u is a box, which turns by \"rotation\"", collider);
        return CD_DISPATCH_DONE;
    }
    if (req->as.move_collider.has_rotation && !box) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "rotation: collider %u is a %s, which turns by \"normal\"", collider,
                      cd_collider_type_name((int)now.type));
        return CD_DISPATCH_DONE;
    }
    const cd_vec3 *position =
        req->as.move_collider.has_position ? &req->as.move_collider.position : NULL;
    const cd_vec3 *normal =
        req->as.move_collider.has_normal ? &req->as.move_collider.normal : NULL;
    cd_status st = CD_OK;
    if (position != NULL || normal != NULL)
        st = cd_instance_move_collider(inst, collider, position, normal);
    if (st == CD_OK && req->as.move_collider.has_rotation)
        st = cd_instance_turn_collider(inst, collider, req->as.move_collider.rotation);
    if (st != CD_OK)
        cd_reply_fail(conn, req, st, "moveCollider: %s", cd_status_message(st));
    else
        reply_ok(conn, req);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_remove_collider(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_id collider = req->as.remove_collider.collider;
    if (cd_instance_remove_collider(inst, collider) != CD_OK)
        cd_reply_fail(conn, req, CD_E_NOT_FOUND, "collider: no collider %u on instance %u",
                   collider, req->instance);
    else
        reply_ok(conn, req);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_set(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    if (!cd_paint_fits(conn, req, &req->as.set.paint, cd_instance_particle_count(inst)))
        return CD_DISPATCH_DONE;
    cd_cloth_def def = cd_instance_def(inst);
    cd_cloth_def_merge(&def, &req->as.set.def, req->as.set.present);
    cd_field_fault fault;
    cd_status st = cd_instance_configure_ex(inst, &def, &fault);
    if (st == CD_OK) /* values were checked by the parser: only memory can fail */
        st = cd_apply_paint(inst, &req->as.set.paint, &fault);
    if (st != CD_OK) {
        reply_fault(conn, req, st, &fault);
        return CD_DISPATCH_DONE;
    }
    reply_ok(conn, req);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_transform(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    uint32_t handle = 0;
    cd_status st = cd_instance_set_transform(inst, req->as.transform.name,
                                             req->as.transform.position,
                                             req->as.transform.rotation, &handle);
    if (st == CD_E_LIMIT_EXCEEDED)
        cd_reply_fail(conn, req, st, "name: at most %d transforms per instance", CD_MAX_TRANSFORMS);
    else if (st != CD_OK)
        cd_reply_fail(conn, req, st, "position: outside the world box (|x|, |y|, |z| <= %g m)",
                   (double)CD_WORLD_EXTENT);
    else
        reply_ok(conn, req);
    if (st == CD_OK && req->as.transform.has_frame) {
        /* true: this transform is the inertia frame; false: it is not. */
        const uint32_t current = cd_instance_inertia_frame(inst);
        cd_instance_set_inertia_frame(inst, req->as.transform.frame ? handle
                                            : current == handle      ? 0
                                                                     : current);
    }
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_attach(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL || !check_particles(conn, req, inst))
        return CD_DISPATCH_DONE;
    uint32_t handle = require_transform(conn, req, inst, "name", req->as.attach.name);
    if (handle == 0)
        return CD_DISPATCH_DONE;
    for (uint32_t i = 0; i < req->as.attach.count; i++) {
        const cd_vec3 *local = req->as.attach.positions ? &req->as.attach.positions[i] : NULL;
        if (cd_instance_attach(inst, req->as.attach.particles[i], handle, local) != CD_OK) {
            /* Only an offset that puts the particle outside the world box. */
            cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                       "offsets[%u]: puts the particle outside the world box", i);
            return CD_DISPATCH_DONE;
        }
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddNumberToObject(reply, "attached", req->as.attach.count);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_enable(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_instance_set_enabled(inst, req->as.enable.enabled);
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddBoolToObject(reply, "enabled", req->as.enable.enabled);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

cd_id *cd_resolve_ids(cd_conn *conn, const cd_request *req, const cd_id_list *list,
                          uint32_t *count)
{
    cd_world *world = conn->server->world;
    uint32_t n = list->all ? cd_world_count(world) : list->count;
    cd_id *ids = malloc((n ? n : 1) * sizeof *ids);
    if (ids == NULL) {
        cd_reply_fail(conn, req, CD_E_INTERNAL, "instances: out of memory");
        return NULL;
    }
    if (list->all) {
        *count = cd_world_list(world, ids, n);
        if (req->has_scene) /* every instance of the scene */
            *count = cd_scenes_filter(conn->server, req->scene, ids, *count);
        return ids;
    }
    for (uint32_t i = 0; i < n; i++) {
        cd_id id = list->ids[i];
        if (cd_world_get(world, id) == NULL) {
            if (req->has_instance)
                cd_reply_fail(conn, req, CD_E_NOT_FOUND, "instance: no instance %u", id);
            else
                cd_reply_fail(conn, req, CD_E_NOT_FOUND, "instances[%u]: no instance %u", i, id);
            free(ids);
            return NULL;
        }
        if (!cd_in_scene(conn->server, req, id)) {
            if (req->has_instance)
                cd_reply_fail(conn, req, CD_E_NOT_FOUND,
                              "instance: instance %u is not in scene \"%s\"", id, req->scene);
            else
                cd_reply_fail(conn, req, CD_E_NOT_FOUND,
                              "instances[%u]: instance %u is not in scene \"%s\"", i, id,
                              req->scene);
            free(ids);
            return NULL;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (ids[j] == id) {
                cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                           "instances[%u]: instance %u listed twice", i, id);
                free(ids);
                return NULL;
            }
        }
        ids[i] = id;
    }
    *count = n;
    return ids;
}

cd_dispatch_result cd_cmd_step(cd_conn *conn, const cd_request *req)
{
    uint32_t count = 0;
    cd_id *ids = cd_resolve_ids(conn, req, &req->as.step.instances, &count);
    if (ids == NULL)
        return CD_DISPATCH_DONE;
    uint32_t enabled = 0;
    for (uint32_t i = 0; i < count; i++)
        if (cd_instance_enabled(cd_world_get(conn->server->world, ids[i])))
            ids[enabled++] = ids[i];
    cd_dispatch_result r = CD_DISPATCH_DONE;
    if (enabled == 0) {
        cJSON *reply = cd_reply_ok(req->id);
        cJSON_AddNumberToObject(reply, "stepped", 0);
        cJSON_AddArrayToObject(reply, "unstable");
        cd_conn_send_reply(conn, reply);
    } else {
        const float budget = req->as.step.has_budget ? req->as.step.budget_ms
                                                     : (float)conn->server->opts.step_budget_ms;
        r = cd_stepper_start(conn, req->id, req->as.step.dt, budget, ids, enabled);
    }
    free(ids);
    return r;
}

static bool add_subscription(cd_conn *conn, cd_id id, const cd_frame_options *options)
{
    for (uint32_t i = 0; i < conn->sub_count; i++) {
        if (conn->subs[i].instance == id) {
            conn->subs[i].options = *options;
            return true;
        }
    }
    if (conn->sub_count == conn->sub_cap) {
        uint32_t cap = conn->sub_cap ? conn->sub_cap * 2 : 8;
        cd_subscription *grown = realloc(conn->subs, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        conn->subs = grown;
        conn->sub_cap = cap;
    }
    conn->subs[conn->sub_count++] = (cd_subscription){.instance = id, .options = *options};
    return true;
}

static void remove_subscription(cd_conn *conn, cd_id id)
{
    for (uint32_t i = 0; i < conn->sub_count; i++) {
        if (conn->subs[i].instance == id) {
            conn->subs[i] = conn->subs[--conn->sub_count];
            return;
        }
    }
}

/* A subscription to a scene, by name (it need not exist yet); false when
 * out of memory or over CD_SCENE_SUBS_MAX (the error is sent). */
static bool add_scene_subscription(cd_conn *conn, const cd_request *req,
                                   const cd_frame_options *options)
{
    for (uint32_t i = 0; i < conn->scene_sub_count; i++) {
        if (strcmp(conn->scene_subs[i].name, req->scene) == 0) {
            conn->scene_subs[i].options = *options;
            return true;
        }
    }
    if (conn->scene_sub_count == CD_SCENE_SUBS_MAX) {
        cd_reply_fail(conn, req, CD_E_LIMIT_EXCEEDED,
                      "scene: at most %u scene subscriptions per connection", CD_SCENE_SUBS_MAX);
        return false;
    }
    if (conn->scene_sub_count == conn->scene_sub_cap) {
        uint32_t cap = conn->scene_sub_cap ? conn->scene_sub_cap * 2 : 4;
        cd_scene_sub *grown = realloc(conn->scene_subs, cap * sizeof *grown);
        if (grown == NULL) {
            cd_reply_fail(conn, req, CD_E_INTERNAL, "subscribe: out of memory");
            return false;
        }
        conn->scene_subs = grown;
        conn->scene_sub_cap = cap;
    }
    cd_scene_sub *sub = &conn->scene_subs[conn->scene_sub_count++];
    snprintf(sub->name, sizeof sub->name, "%s", req->scene);
    sub->options = *options;
    return true;
}

static void remove_scene_subscription(cd_conn *conn, const char *name)
{
    for (uint32_t i = 0; i < conn->scene_sub_count; i++) {
        if (strcmp(conn->scene_subs[i].name, name) == 0) {
            conn->scene_subs[i] = conn->scene_subs[--conn->scene_sub_count];
            return;
        }
    }
}

/* "instance" or "instances" or neither (= all) as one list. */
static cd_id_list subscription_list(const cd_request *req)
{
    if (req->has_instance)
        return (cd_id_list){.all = false, .count = 1, .ids = (cd_id *)&req->instance};
    return req->as.subscribe.instances;
}

/* "shm": a client on this host, and the ring made; else the error sent. */
static bool shm_ready(cd_conn *conn, const cd_request *req)
{
    cd_error err;
    if (!cd_conn_is_local(conn))
        cd_fail(&err, CD_E_INVALID_ARGUMENT,
                "shm: only for a client on clothd's host (the Unix socket or a loopback address)");
    else if (cd_shm_open(conn->server, &err))
        return true;
    cd_conn_send_error(conn, req->id, &err);
    return false;
}

cd_dispatch_result cd_cmd_subscribe(cd_conn *conn, const cd_request *req)
{
    cd_id_list list = subscription_list(req);
    uint32_t count = 0;
    cd_id *ids = cd_resolve_ids(conn, req, &list, &count);
    if (ids == NULL)
        return CD_DISPATCH_DONE;
    const bool shm = req->as.subscribe.options.shm;
    if (shm && !shm_ready(conn, req)) {
        free(ids);
        return CD_DISPATCH_DONE;
    }
    /* A scene's: its instances now and those created in it later. */
    const bool scene = list.all && req->has_scene;
    if (scene && !add_scene_subscription(conn, req, &req->as.subscribe.options)) {
        free(ids);
        return CD_DISPATCH_DONE;
    }
    if (list.all && !scene) {
        conn->sub_all = true;
        conn->all_options = req->as.subscribe.options;
    }
    for (uint32_t i = 0; i < count && !list.all; i++) {
        if (!add_subscription(conn, ids[i], &req->as.subscribe.options)) {
            cd_reply_fail(conn, req, CD_E_INTERNAL, "subscribe: out of memory");
            free(ids);
            return CD_DISPATCH_DONE;
        }
    }
    cJSON *reply = cd_reply_ok(req->id);
    if (scene) {
        cJSON_AddStringToObject(reply, "scene", req->scene);
        cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
        for (uint32_t i = 0; i < count; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    } else if (list.all) {
        cJSON_AddBoolToObject(reply, "all", true);
    } else {
        cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
        for (uint32_t i = 0; i < count; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    }
    if (shm) {
        cJSON *ring = cJSON_AddObjectToObject(reply, "shm");
        cJSON_AddStringToObject(ring, "name", conn->server->shm_name);
        cJSON_AddNumberToObject(ring, "size", (double)conn->server->shm.size);
    }
    cd_conn_send_reply(conn, reply);
    for (uint32_t i = 0; i < count; i++)
        cd_stepper_send_current(conn, cd_world_get(conn->server->world, ids[i]));
    free(ids);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_unsubscribe(cd_conn *conn, const cd_request *req)
{
    cd_id_list list = subscription_list(req);
    cd_server *server = conn->server;
    if (list.all && req->has_scene) {
        /* The scene's subscription and those of its instances by name. */
        remove_scene_subscription(conn, req->scene);
        for (uint32_t i = 0; i < conn->sub_count;) {
            if (cd_in_scene(server, req, conn->subs[i].instance))
                conn->subs[i] = conn->subs[--conn->sub_count];
            else
                i++;
        }
    } else if (list.all) {
        conn->sub_all = false;
        conn->sub_count = 0;
        conn->scene_sub_count = 0;
    } else {
        for (uint32_t i = 0; i < list.count; i++) {
            if (cd_world_get(server->world, list.ids[i]) != NULL &&
                !cd_in_scene(server, req, list.ids[i])) {
                cd_reply_fail(conn, req, CD_E_NOT_FOUND,
                              "instances[%u]: instance %u is not in scene \"%s\"", i,
                              list.ids[i], req->scene);
                return CD_DISPATCH_DONE;
            }
        }
        for (uint32_t i = 0; i < list.count; i++)
            remove_subscription(conn, list.ids[i]);
    }
    reply_ok(conn, req);
    return CD_DISPATCH_DONE;
}

/* The viewers' debug overlay (the seed's cloth_debug): a server-wide flag;
 * a change is announced to every subscribed connection as an event. */
cd_dispatch_result cd_cmd_debug(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    bool changed = req->as.debug.has_enabled && req->as.debug.enabled != server->debug;
    if (req->as.debug.has_enabled)
        server->debug = req->as.debug.enabled;
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddBoolToObject(reply, "enabled", server->debug);
    cd_conn_send_reply(conn, reply);
    if (!changed)
        return CD_DISPATCH_DONE;
    cJSON *event = cJSON_CreateObject();
    cJSON_AddStringToObject(event, "event", "debug");
    cJSON_AddBoolToObject(event, "enabled", server->debug);
    broadcast_event(conn, event);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_ping(cd_conn *conn, const cd_request *req)
{
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddBoolToObject(reply, "pong", true);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* ---- entry points ------------------------------------------------------ */

/* One handler per row of CD_COMMAND_MAP: cd_cmd_<name>. */
typedef cd_dispatch_result (*command_handler)(cd_conn *conn, const cd_request *req);

static const command_handler handlers[CD_CMD_COUNT] = {
#define HANDLER_ENTRY(ID, name, wire, rule, touches, access, payload) [CD_CMD_##ID] = cd_cmd_##name,
    CD_COMMAND_MAP(HANDLER_ENTRY)
#undef HANDLER_ENTRY
};

cd_dispatch_result cd_dispatch(cd_conn *conn, cd_request *req)
{
    if ((unsigned)req->cmd >= CD_CMD_COUNT) {
        cd_reply_fail(conn, req, CD_E_UNKNOWN_COMMAND, "cmd: unknown command");
        return CD_DISPATCH_DONE;
    }
    if (!cd_auth_allows(conn, req))
        return CD_DISPATCH_DONE;
    if (touches_busy(conn->server, req))
        return CD_DISPATCH_DEFER;
    cd_recording_command(conn->server, req); /* in the order it runs */
    return handlers[req->cmd](conn, req);
}

cd_dispatch_result cd_dispatch_apply(cd_conn *conn, const cd_request *req)
{
    return (unsigned)req->cmd < CD_CMD_COUNT ? handlers[req->cmd](conn, req) : CD_DISPATCH_DONE;
}

void cd_dispatch_forget_instance(cd_server *server, cd_id instance)
{
    for (cd_conn *conn = server->conns; conn != NULL; conn = conn->next) {
        remove_subscription(conn, instance);
        for (uint32_t i = 0; i < conn->slot_count; i++) {
            if (conn->slots[i].instance != instance)
                continue;
            cd_frame_buf_unref(conn->slots[i].frame);
            conn->slot_count--;
            for (uint32_t j = i; j < conn->slot_count; j++)
                conn->slots[j] = conn->slots[j + 1];
            break;
        }
    }
}
