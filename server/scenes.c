/* Scenes and lifetimes: which scene each instance belongs to, which
 * connection (if any) it is tied to, and the one way an instance is
 * destroyed (by a request, by its scene, by its connection closing).
 *
 * The solver knows nothing of this: a scene is the server's label on an
 * instance slot, kept in a table indexed like the busy marks (cd_id_index),
 * so every lookup is O(1) and a client's id is checked against the table
 * before it is read. A scene exists while it holds an instance or a
 * connection holds it (`scene` with "ephemeral"); at most --max-instances
 * scenes are made by requests, so scenes are bounded by the same flag as
 * the instances (a load may pass it: it adds at most one per instance).
 *
 * Lifetimes are ZooKeeper's ephemeral nodes, opt-in: an instance created
 * with "ephemeral", or any instance of a scene a connection holds, is
 * destroyed when that connection closes. That happens in the connection's
 * close callback, never inside a request that may still read the instance
 * (Redis frees its clients at such a safe point too). An instance a step
 * batch holds is not destroyed then: it is marked doomed and destroyed by
 * cd_scenes_reap when its batch is back (stepper.c), exactly as a
 * `destroy` request waits for the step (the request is deferred instead).
 *
 * A snapshot keeps each instance's scene and lifetime in the instance's
 * tag (solver/snapshot.h): byte 0 holds the flags (bit 0: ephemeral), the
 * rest the scene's name; an instance of the default scene that nobody
 * holds has no tag, so such snapshots are the bytes they always were. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TAG_EPHEMERAL 0x01u

static uint32_t name_hash(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static cd_scene_table *table(cd_server *server)
{
    return &server->scenes;
}

bool cd_scenes_init(cd_server *server)
{
    cd_scene_table *t = table(server);
    memset(t, 0, sizeof *t);
    t->slots = server->opts.max_instances + 1u;
    t->id = calloc(t->slots, sizeof *t->id);
    t->scene = calloc(t->slots, sizeof *t->scene);
    t->owner = calloc(t->slots, sizeof *t->owner);
    t->doomed = calloc(t->slots, 1);
    return t->id != NULL && t->scene != NULL && t->owner != NULL && t->doomed != NULL;
}

void cd_scenes_free(cd_server *server)
{
    cd_scene_table *t = table(server);
    free(t->scenes);
    free(t->id);
    free(t->scene);
    free(t->owner);
    free(t->doomed);
    memset(t, 0, sizeof *t);
}

/* The record of the scene named `name`, or UINT32_MAX. */
static uint32_t find(const cd_scene_table *t, const char *name)
{
    const uint32_t h = name_hash(name);
    for (uint32_t i = 0; i < t->scene_cap; i++)
        if (t->scenes[i].used && t->scenes[i].hash == h && strcmp(t->scenes[i].name, name) == 0)
            return i;
    return UINT32_MAX;
}

const cd_scene *cd_scenes_find(const cd_server *server, const char *name)
{
    const uint32_t i = find(&server->scenes, name);
    return i == UINT32_MAX ? NULL : &server->scenes.scenes[i];
}

static bool over_limit(const cd_server *server, cd_error *err)
{
    if (server->scenes.scene_count < server->opts.max_instances)
        return false;
    cd_fail(err, CD_E_LIMIT_EXCEEDED, "scene: at most %u scenes (--max-instances)",
            server->opts.max_instances);
    return true;
}

/* The record of `name`, made when there is none; UINT32_MAX with `err`. */
static uint32_t find_or_make(cd_server *server, const char *name, bool limit, cd_error *err)
{
    cd_scene_table *t = table(server);
    uint32_t i = find(t, name);
    if (i != UINT32_MAX)
        return i;
    if (limit && over_limit(server, err))
        return UINT32_MAX;
    for (i = 0; i < t->scene_cap && t->scenes[i].used; i++)
        ;
    if (i == t->scene_cap) {
        const uint32_t cap = t->scene_cap ? t->scene_cap * 2 : 8;
        cd_scene *grown = realloc(t->scenes, cap * sizeof *grown);
        if (grown == NULL) {
            cd_fail(err, CD_E_INTERNAL, "scene: out of memory");
            return UINT32_MAX;
        }
        memset(grown + t->scene_cap, 0, (cap - t->scene_cap) * sizeof *grown);
        t->scenes = grown;
        t->scene_cap = cap;
    }
    cd_scene *s = &t->scenes[i];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->hash = name_hash(name);
    s->used = true;
    t->scene_count++;
    return i;
}

/* A scene nobody holds and that holds nothing is gone. */
static void drop_if_empty(cd_scene_table *t, uint32_t i)
{
    if (t->scenes[i].used && t->scenes[i].instances == 0 && t->scenes[i].owner == NULL) {
        t->scenes[i].used = false;
        t->scene_count--;
    }
}

bool cd_scenes_room(cd_server *server, const char *scene, cd_error *err)
{
    return find(table(server), scene) != UINT32_MAX || !over_limit(server, err);
}

bool cd_scenes_add(cd_server *server, cd_id id, const char *scene, cd_conn *owner, bool limit,
                   cd_error *err)
{
    cd_scene_table *t = table(server);
    const uint32_t slot = cd_id_index(id);
    if (slot == 0 || slot >= t->slots) {
        cd_fail(err, CD_E_INTERNAL, "scene: instance %u has no slot in the table", id);
        return false;
    }
    const uint32_t i = find_or_make(server, scene, limit, err);
    if (i == UINT32_MAX)
        return false;
    t->id[slot] = id;
    t->scene[slot] = i;
    t->owner[slot] = owner;
    t->doomed[slot] = 0;
    t->scenes[i].instances++;
    if (owner != NULL)
        owner->owned++;
    return true;
}

/* The slot of a live id in the table, or 0. */
static uint32_t slot_of(const cd_scene_table *t, cd_id id)
{
    const uint32_t slot = cd_id_index(id);
    return slot != 0 && slot < t->slots && t->id[slot] == id ? slot : 0;
}

const cd_scene *cd_scenes_of(const cd_server *server, cd_id id)
{
    const cd_scene_table *t = &server->scenes;
    const uint32_t slot = slot_of(t, id);
    return slot ? &t->scenes[t->scene[slot]] : NULL;
}

bool cd_scenes_ephemeral(const cd_server *server, cd_id id)
{
    const cd_scene_table *t = &server->scenes;
    const uint32_t slot = slot_of(t, id);
    return slot && (t->owner[slot] != NULL || t->scenes[t->scene[slot]].owner != NULL);
}

uint32_t cd_scenes_filter(const cd_server *server, const char *name, cd_id *ids, uint32_t count)
{
    const cd_scene_table *t = &server->scenes;
    const uint32_t i = find(t, name);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < count && i != UINT32_MAX; k++) {
        const uint32_t slot = slot_of(t, ids[k]);
        if (slot && t->scene[slot] == i)
            ids[kept++] = ids[k];
    }
    return kept;
}

bool cd_scenes_busy(const cd_server *server, const char *name)
{
    const cd_scene_table *t = &server->scenes;
    const uint32_t i = find(t, name);
    if (i == UINT32_MAX || server->busy_count == 0)
        return false;
    for (uint32_t slot = 1; slot < t->slots; slot++)
        if (t->id[slot] != 0 && t->scene[slot] == i && cd_server_is_busy(server, t->id[slot]))
            return true;
    return false;
}

void cd_scenes_forget(cd_server *server, cd_id id)
{
    cd_scene_table *t = table(server);
    const uint32_t slot = slot_of(t, id);
    if (slot == 0)
        return;
    if (t->owner[slot] != NULL)
        t->owner[slot]->owned--;
    if (t->doomed[slot])
        t->doomed_count--;
    const uint32_t i = t->scene[slot];
    t->scenes[i].instances--;
    drop_if_empty(t, i);
    t->id[slot] = 0;
    t->owner[slot] = NULL;
    t->doomed[slot] = 0;
}

void cd_scenes_destroy(cd_server *server, cd_id id, bool journal)
{
    if (journal)
        cd_recording_destroyed(server, id);
    cd_world_destroy_instance(server->world, id);
    cd_scenes_forget(server, id);
    cd_dispatch_forget_instance(server, id);
}

/* Destroys the instance in `slot` now, or once its batch is back;
 * counts which in `now`, `later`. */
static void doom(cd_server *server, uint32_t slot, const cd_conn *leaving, uint32_t *now,
                 uint32_t *later)
{
    cd_scene_table *t = table(server);
    const cd_id id = t->id[slot];
    if (!cd_server_is_busy(server, id)) {
        cd_scenes_destroy(server, id, true);
        ++*now;
        return;
    }
    ++*later;
    if (t->owner[slot] == leaving) { /* the connection is being freed */
        t->owner[slot]->owned--;
        t->owner[slot] = NULL;
    }
    if (!t->doomed[slot]) {
        t->doomed[slot] = 1;
        t->doomed_count++;
    }
}

void cd_scenes_release_conn(cd_server *server, cd_conn *conn)
{
    cd_scene_table *t = table(server);
    if (conn->owned == 0)
        return;
    uint32_t now = 0, later = 0, scenes = 0;
    /* The scenes it holds: every instance of each, whoever created it. */
    for (uint32_t i = 0; i < t->scene_cap && conn->owned > 0; i++) {
        if (!t->scenes[i].used || t->scenes[i].owner != conn)
            continue;
        t->scenes[i].owner = NULL;
        conn->owned--;
        scenes++;
        for (uint32_t slot = 1; slot < t->slots && t->scenes[i].used; slot++)
            if (t->id[slot] != 0 && t->scene[slot] == i && !t->doomed[slot])
                doom(server, slot, conn, &now, &later);
        drop_if_empty(t, i);
    }
    /* Its own ephemeral instances. */
    for (uint32_t slot = 1; slot < t->slots && conn->owned > 0; slot++)
        if (t->id[slot] != 0 && t->owner[slot] == conn)
            doom(server, slot, conn, &now, &later);
    if (cd_log_begin(&server->log, CD_LOG_INFO, "ephemeral-released")) {
        cd_log_str(&server->log, "peer", conn->stats.peer);
        cd_log_uint(&server->log, "scenes", scenes);
        cd_log_uint(&server->log, "destroyed", now);
        cd_log_uint(&server->log, "after_step", later);
        cd_log_end(&server->log);
    }
}

void cd_scenes_reap(cd_server *server)
{
    cd_scene_table *t = table(server);
    for (uint32_t slot = 1; slot < t->slots && t->doomed_count > 0; slot++)
        if (t->doomed[slot] && !cd_server_is_busy(server, t->id[slot]))
            cd_scenes_destroy(server, t->id[slot], true);
}

void cd_scenes_tag(const cd_server *server, cd_id id, cd_snapshot_tag *tag)
{
    tag->len = 0;
    const cd_scene *scene = cd_scenes_of(server, id);
    const bool ephemeral = cd_scenes_ephemeral(server, id);
    if (scene == NULL || (!ephemeral && strcmp(scene->name, CD_SCENE_DEFAULT) == 0))
        return; /* no tag: the default scene, nobody's */
    const size_t n = strlen(scene->name);
    tag->bytes[0] = ephemeral ? TAG_EPHEMERAL : 0u;
    memcpy(tag->bytes + 1, scene->name, n);
    tag->len = (uint32_t)(1 + n);
}

bool cd_scenes_adopt(cd_server *server, cd_id id, const cd_snapshot_tag *tag, cd_conn *owner)
{
    char name[CD_SCENE_NAME_MAX + 1] = CD_SCENE_DEFAULT;
    bool ephemeral = false;
    if (tag != NULL && tag->len > 1 && tag->len - 1 <= CD_SCENE_NAME_MAX) {
        char given[CD_SCENE_NAME_MAX + 1];
        memcpy(given, tag->bytes + 1, tag->len - 1);
        given[tag->len - 1] = '\0';
        if (cd_scene_name_ok(given)) /* a forged file's bad name: the default scene */
            memcpy(name, given, sizeof name);
    }
    if (tag != NULL && tag->len > 0)
        ephemeral = (tag->bytes[0] & TAG_EPHEMERAL) != 0;
    cd_error err;
    if ((ephemeral && owner == NULL) ||
        !cd_scenes_add(server, id, name, ephemeral ? owner : NULL, false, &err)) {
        cd_world_destroy_instance(server->world, id);
        return false;
    }
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const cd_scene *const *)a)->name, (*(const cd_scene *const *)b)->name);
}

bool cd_scenes_add_list(const cd_server *server, cJSON *reply, const char *only)
{
    const cd_scene_table *t = &server->scenes;
    const cd_scene **sorted = malloc((t->scene_count ? t->scene_count : 1) * sizeof *sorted);
    cJSON *arr = cJSON_AddArrayToObject(reply, "scenes");
    if (sorted == NULL || arr == NULL) {
        free(sorted);
        return false;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->scene_cap && n < t->scene_count; i++)
        if (t->scenes[i].used && (only == NULL || strcmp(t->scenes[i].name, only) == 0))
            sorted[n++] = &t->scenes[i];
    qsort(sorted, n, sizeof *sorted, by_name);
    for (uint32_t i = 0; i < n; i++) {
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, item);
        cJSON_AddStringToObject(item, "scene", sorted[i]->name);
        cJSON_AddNumberToObject(item, "instances", sorted[i]->instances);
        cJSON_AddBoolToObject(item, "ephemeral", sorted[i]->owner != NULL);
    }
    free(sorted);
    return true;
}

const cd_frame_options *cd_scenes_subscription(const cd_conn *conn, const cd_scene *scene)
{
    if (scene == NULL)
        return NULL;
    for (uint32_t i = 0; i < conn->scene_sub_count; i++)
        if (strcmp(conn->scene_subs[i].name, scene->name) == 0)
            return &conn->scene_subs[i].options;
    return NULL;
}

/* ---- the scene and scenes commands ---------------------------------------- */

/* scene: holds or lets go of a scene ("ephemeral"), or only tells about it. */
cd_dispatch_result cd_cmd_scene(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    cd_scene_table *t = table(server);
    uint32_t i = find(t, req->scene);
    if (req->as.scene.has_ephemeral) {
        if (i != UINT32_MAX && t->scenes[i].owner != NULL && t->scenes[i].owner != conn) {
            cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                          "scene: \"%s\" is tied to another connection", req->scene);
            return CD_DISPATCH_DONE;
        }
        if (req->as.scene.ephemeral) {
            cd_error err;
            if (i == UINT32_MAX && (i = find_or_make(server, req->scene, true, &err)) == UINT32_MAX) {
                cd_conn_send_error(conn, req->id, &err);
                return CD_DISPATCH_DONE;
            }
            if (t->scenes[i].owner == NULL) {
                t->scenes[i].owner = conn;
                conn->owned++;
            }
        } else if (i != UINT32_MAX && t->scenes[i].owner == conn) {
            t->scenes[i].owner = NULL;
            conn->owned--;
            drop_if_empty(t, i);
            if (!t->scenes[i].used)
                i = UINT32_MAX;
        }
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "scene", req->scene);
    cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
    for (uint32_t slot = 1; slot < t->slots && i != UINT32_MAX; slot++)
        if (t->id[slot] != 0 && t->scene[slot] == i)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(t->id[slot]));
    const cd_conn *owner = i != UINT32_MAX ? t->scenes[i].owner : NULL;
    cJSON_AddBoolToObject(reply, "ephemeral", owner != NULL);
    cJSON_AddBoolToObject(reply, "owned", owner == conn);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_scenes(cd_conn *conn, const cd_request *req)
{
    cJSON *reply = cd_reply_ok(req->id);
    if (!cd_scenes_add_list(conn->server, reply, req->has_scene ? req->scene : NULL)) {
        cJSON_Delete(reply);
        cd_reply_fail(conn, req, CD_E_INTERNAL, "scenes: out of memory");
        return CD_DISPATCH_DONE;
    }
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
