/* The read-only requests: get, topology and status. They build the
 * larger replies (positions, triangles, the console block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Integers as a raw JSON array: a large mesh's indices without a cJSON
 * node per number. */
static bool add_uints(cJSON *obj, const char *name, const uint32_t *values, size_t count)
{
    char *text = malloc(count * 11 + 3);
    if (text == NULL)
        return false;
    size_t o = 0;
    text[o++] = '[';
    for (size_t i = 0; i < count; i++)
        o += (size_t)sprintf(text + o, i ? ",%u" : "%u", values[i]);
    text[o++] = ']';
    text[o] = '\0';
    cJSON *raw = cJSON_CreateRaw(text);
    free(text);
    return raw != NULL && cJSON_AddItemToObject(obj, name, raw);
}

/* What a renderer needs once: triangles, and for cloth the seed's UVs. */
cd_dispatch_result cd_cmd_topology(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    uint32_t n = cd_instance_triangles(inst, NULL, 0);
    uint32_t *tris = malloc(sizeof(uint32_t) * 3u * (n ? n : 1));
    float *uvs = malloc(sizeof(float) * 2u * (info.particles ? info.particles : 1));
    cJSON *reply = cd_reply_ok(req->id);
    bool ok = tris != NULL && uvs != NULL;
    if (ok) {
        cd_instance_triangles(inst, tris, n);
        cJSON_AddNumberToObject(reply, "instance", info.id);
        cJSON_AddStringToObject(reply, "type", cd_instance_type_name(info.type));
        cJSON_AddNumberToObject(reply, "particles", info.particles);
        ok = add_uints(reply, "triangles", tris, 3u * (size_t)n);
    }
    if (ok && cd_instance_uvs(inst, uvs))
        ok = cd_reply_add_float_list(reply, "uvs", uvs, 2u * (size_t)info.particles);
    /* The painted properties, each as one value per vertex (uvs has room). */
    for (int k = 0; ok && k < CD_PAINT_COUNT; k++)
        if (cd_instance_painted(inst, (cd_paint)k, uvs))
            ok = cd_reply_add_float_list(reply, cd_paint_specs[k].name, uvs, info.particles);
    if (ok)
        cJSON_AddBoolToObject(reply, "skinned", cd_instance_skinned(inst));
    free(tris);
    free(uvs);
    if (!ok) {
        cJSON_Delete(reply);
        cd_reply_fail(conn, req, CD_E_INTERNAL, "topology: out of memory");
        return CD_DISPATCH_DONE;
    }
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* "colliders": every live collider with its shape, for viewers: each
 * has position, normal, radius and height; a tapered capsule also its
 * radius2, a box its halfExtents and rotation (and as normal its own +y
 * axis). */
static void add_colliders(cJSON *reply, const cd_instance *inst)
{
    cd_id ids[CD_MAX_COLLIDERS];
    cd_collider_def defs[CD_MAX_COLLIDERS];
    uint32_t n = cd_instance_list_colliders(inst, ids, defs, CD_MAX_COLLIDERS);
    cJSON *arr = cJSON_AddArrayToObject(reply, "colliders");
    for (uint32_t i = 0; i < n && i < CD_MAX_COLLIDERS; i++) {
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, item);
        cJSON_AddNumberToObject(item, "collider", ids[i]);
        cJSON_AddStringToObject(item, "type", cd_collider_type_name((int)defs[i].type));
        cd_add_vec3(item, "position", defs[i].position);
        cd_add_vec3(item, "normal", defs[i].normal);
        cJSON_AddNumberToObject(item, "radius", defs[i].radius);
        cJSON_AddNumberToObject(item, "height", defs[i].height);
        if (defs[i].type == CD_COLLIDER_TAPERED_CAPSULE)
            cJSON_AddNumberToObject(item, "radius2", defs[i].radius2);
        if (defs[i].type == CD_COLLIDER_BOX) {
            cd_add_vec3(item, "halfExtents", defs[i].half_extents);
            const cd_quat q = defs[i].rotation;
            const float xyzw[4] = {q.x, q.y, q.z, q.w};
            cd_reply_add_float_list(item, "rotation", xyzw, 4);
        }
    }
}

/* "scene" and "ephemeral" (destroyed when a connection closes). */
static void add_scene(cJSON *obj, const cd_server *server, cd_id id)
{
    const cd_scene *scene = cd_scenes_of(server, id);
    cJSON_AddStringToObject(obj, "scene", scene != NULL ? scene->name : CD_SCENE_DEFAULT);
    cJSON_AddBoolToObject(obj, "ephemeral", cd_scenes_ephemeral(server, id));
}

/* "velocities" and "normals" when the request asks for them: the same
 * values a frame's channels carry (solver/render.c defines them). */
/* The positions (in world coordinates: the solver's are local) and the
 * channels asked for. */
static bool add_channels(cJSON *reply, const cd_instance *inst, const cd_get_options *want,
                         uint32_t particles)
{
    float *values = malloc(sizeof(float) * 3u * (particles ? particles : 1));
    bool ok = values != NULL;
    if (ok) {
        cd_instance_copy_positions(inst, values);
        ok = cd_reply_add_floats(reply, "positions", values, particles);
    }
    if (ok && want->velocities) {
        cd_instance_velocities(inst, values);
        ok = cd_reply_add_floats(reply, "velocities", values, particles);
    }
    if (ok && want->normals) {
        cd_instance_normals(inst, values);
        ok = cd_reply_add_floats(reply, "normals", values, particles);
    }
    free(values);
    return ok;
}

cd_dispatch_result cd_cmd_get(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddNumberToObject(reply, "instance", info.id);
    cJSON_AddStringToObject(reply, "type", cd_instance_type_name(info.type));
    add_scene(reply, conn->server, info.id);
    cJSON_AddNumberToObject(reply, "width", info.width);
    cJSON_AddNumberToObject(reply, "height", info.height);
    cJSON_AddNumberToObject(reply, "frame", (double)info.frame);
    cJSON_AddNumberToObject(reply, "time", info.time);
    cJSON_AddBoolToObject(reply, "enabled", info.enabled);
    cJSON_AddBoolToObject(reply, "unstable", info.unstable);
    cJSON_AddBoolToObject(reply, "sleeping", info.sleeping);
    cJSON_AddNumberToObject(reply, "kineticEnergy", info.kinetic_energy);
    const cd_cloth_def def = cd_instance_def(inst);
    /* Its own level, the one its last step ran at, and whether a budget
     * lowered that one (as Chaos Cloth tells a requested LOD from the
     * current one). */
    cJSON_AddNumberToObject(reply, "lod", def.lod);
    cJSON_AddNumberToObject(reply, "currentLod", info.lod);
    cJSON_AddBoolToObject(reply, "degraded", info.lod_degraded);
    cJSON_AddNumberToObject(reply, "priority", def.priority);
    cJSON_AddStringToObject(reply, "windModel", cd_wind_model_name(def.wind_model));
    cd_add_vec3(reply, "wind", cd_instance_wind(inst));
    cd_add_vec3(reply, "gravity", def.gravity);
    if (!add_channels(reply, inst, &req->as.get, info.particles)) {
        cJSON_Delete(reply);
        cd_reply_fail(conn, req, CD_E_INTERNAL, "get: out of memory");
        return CD_DISPATCH_DONE;
    }
    cJSON *pinned = cJSON_AddArrayToObject(reply, "pinned");
    for (uint32_t i = 0; i < info.particles; i++)
        if (cd_instance_is_pinned(inst, i))
            cJSON_AddItemToArray(pinned, cJSON_CreateNumber(i));
    add_colliders(reply, inst);
    if (def.self_distance > 0.0f) {
        const cd_self_collision_stats st = cd_instance_self_collision_stats(inst);
        cJSON *self = cJSON_AddObjectToObject(reply, "selfCollision");
        cJSON_AddNumberToObject(self, "searches", (double)st.searches);
        cJSON_AddNumberToObject(self, "pairs", (double)st.pairs);
        cJSON_AddNumberToObject(self, "overflows", (double)st.overflows);
    }
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* Every instance, or with "scene" those of one scene; the scenes. */
cd_dispatch_result cd_cmd_status(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    uint32_t n = cd_world_count(server->world);
    cd_id *ids = malloc((n ? n : 1) * sizeof *ids);
    cd_instance_info *infos = malloc((n ? n : 1) * sizeof *infos);
    char *text = NULL;
    cJSON *reply = cd_reply_ok(req->id);
    if (ids == NULL || infos == NULL)
        goto oom;
    n = cd_world_list(server->world, ids, n);
    if (req->has_scene)
        n = cd_scenes_filter(server, req->scene, ids, n);
    cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
    for (uint32_t i = 0; i < n; i++) {
        cd_instance_get_info(cd_world_get(server->world, ids[i]), &infos[i]);
        const cd_instance_info *info = &infos[i];
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, item);
        cJSON_AddNumberToObject(item, "instance", info->id);
        cJSON_AddStringToObject(item, "type", cd_instance_type_name(info->type));
        add_scene(item, server, info->id);
        cJSON_AddNumberToObject(item, "particles", info->particles);
        cJSON_AddNumberToObject(item, "constraints", info->constraints);
        cJSON_AddNumberToObject(item, "colliders", info->colliders);
        cJSON_AddBoolToObject(item, "enabled", info->enabled);
        cJSON_AddBoolToObject(item, "unstable", info->unstable);
        cJSON_AddBoolToObject(item, "sleeping", info->sleeping);
        cJSON_AddNumberToObject(item, "frame", (double)info->frame);
        cJSON_AddNumberToObject(item, "kineticEnergy", info->kinetic_energy);
    }
    cJSON_AddNumberToObject(reply, "workers", server->opts.workers);
    cJSON_AddStringToObject(reply, "simd", cd_solver_simd_path());
    cd_add_vec3(reply, "globalWind", cd_world_global_wind(server->world));
    cJSON_AddStringToObject(reply, "version", CD_VERSION_STRING);
    cJSON_AddBoolToObject(reply, "debug", server->debug);
    if (!cd_scenes_add_list(server, reply, req->has_scene ? req->scene : NULL))
        goto oom;
    text = cd_status_text(infos, n);
    if (text == NULL)
        goto oom;
    cJSON_AddStringToObject(reply, "text", text);
    cd_conn_send_reply(conn, reply);
    free(text);
    free(ids);
    free(infos);
    return CD_DISPATCH_DONE;
oom:
    cJSON_Delete(reply);
    free(ids);
    free(infos);
    cd_reply_fail(conn, req, CD_E_INTERNAL, "status: out of memory");
    return CD_DISPATCH_DONE;
}

