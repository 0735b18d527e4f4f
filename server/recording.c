/* record and replay (issue 13): a journal of everything that changes the
 * recorded instances, from a snapshot of them, and its replay into new
 * instances, bit for bit.
 *
 * `record` writes the START record (a snapshot of the instances, the
 * build and the SIMD path), then the loop appends, in the order the loop
 * applies them: every request that changes a recorded instance (its line
 * as the client sent it, COMMAND) and every step of recorded instances
 * (the instances, dt, the global wind the step got and the level of
 * detail each ran at, the budget's decisions, STEP); a binary
 * request (skin, bulk pin) is kept as its bytes. Commands of
 * an instance never run while it is being stepped (they are deferred), so
 * the journal's order is each instance's order. A request that failed is
 * recorded too: replayed on the same state it fails the same way.
 *
 * `replay` loads the START snapshot under new ids, then runs the records
 * on the loop thread through the same handlers as a client's requests (a
 * sink connection takes their replies) and steps the instances itself,
 * until the requested frame (the number of STEP records applied): a step
 * is a pure function of the instance, dt and the global wind, so the
 * replayed positions are the recorded ones bit for bit on the same build
 * and SIMD path. Subscribers receive each replayed frame. The replay holds
 * the loop while it runs (about 0.1 ms a frame of a 32 x 32 cape).
 *
 * `journals` lists the journals of --data-dir and the recording in
 * progress, so that a viewer can offer them (its timeline replays them). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/snapshot.h"
#include "internal.h"

enum { REC_START = 1, REC_COMMAND = 2, REC_STEP = 3, REC_STOP = 4 };

struct cd_recording {
    int fd;
    char name[CD_SNAPSHOT_NAME_MAX + 1];
    uint64_t frames; /* STEP records written */
    uint64_t records, bytes;
    cd_id *ids; /* the recorded instances */
    uint32_t count;
};

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(p, v);
}

static float get_f32(const uint8_t *p)
{
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static void recording_free(cd_recording *r)
{
    if (r != NULL)
        free(r->ids);
    free(r);
}

/* Appends a record; on failure the recording ends (logged). */
static void append(cd_server *server, uint8_t kind, const void *body, size_t len)
{
    cd_recording *r = server->recording;
    char err[200];
    if (cd_journal_append(r->fd, kind, body, len, err, sizeof err)) {
        r->records++;
        r->bytes += 9 + len;
        return;
    }
    if (cd_log_begin(&server->log, CD_LOG_ERROR, "record-failed")) {
        cd_log_str(&server->log, "name", r->name);
        cd_log_str(&server->log, "reason", err);
        cd_log_uint(&server->log, "frames", r->frames);
        cd_log_end(&server->log);
    }
    cd_journal_close(r->fd, err, sizeof err);
    recording_free(r);
    server->recording = NULL;
}

static bool recorded(const cd_recording *r, cd_id id)
{
    for (uint32_t i = 0; i < r->count; i++)
        if (r->ids[i] == id)
            return true;
    return false;
}

bool cd_recording_holds(const cd_server *server, const cd_id *ids, uint32_t count)
{
    for (uint32_t i = 0; server->recording != NULL && i < count; i++)
        if (recorded(server->recording, ids[i]))
            return true;
    return false;
}

/* What a recording keeps: the requests that change one instance. The
 * global wind is not among them: each STEP holds the wind its step got. */
static bool changes_an_instance(cd_command cmd)
{
    switch (cmd) {
    case CD_CMD_DESTROY:
    case CD_CMD_PIN:
    case CD_CMD_UNPIN:
    case CD_CMD_WIND:
    case CD_CMD_GRAVITY:
    case CD_CMD_ADD_COLLIDER:
    case CD_CMD_MOVE_COLLIDER:
    case CD_CMD_REMOVE_COLLIDER:
    case CD_CMD_ENABLE:
    case CD_CMD_SET:
    case CD_CMD_TRANSFORM:
    case CD_CMD_ATTACH:
    case CD_CMD_SKIN:
    case CD_CMD_TELEPORT:
        return true;
    default:
        return false;
    }
}

void cd_recording_destroyed(cd_server *server, cd_id id)
{
    cd_recording *r = server->recording;
    if (r == NULL || !recorded(r, id))
        return;
    uint8_t body[8 + 48];
    put_u64(body, r->frames);
    const int n = snprintf((char *)body + 8, sizeof body - 8, "{\"cmd\":\"destroy\",\"instance\":%u}", id);
    append(server, REC_COMMAND, body, 8 + (size_t)n);
}

bool cd_recording_wants_lines(const cd_server *server)
{
    return server->recording != NULL;
}

void cd_recording_command(cd_server *server, const cd_request *req)
{
    cd_recording *r = server->recording;
    if (r == NULL || req->line == NULL || !changes_an_instance(req->cmd) || !req->has_instance ||
        !recorded(r, req->instance))
        return;
    const size_t n = req->line_len;
    uint8_t *body = malloc(8 + n);
    if (body == NULL) {
        append(server, REC_STOP, NULL, 0); /* cannot keep the journal whole */
        return;
    }
    put_u64(body, r->frames);
    memcpy(body + 8, req->line, n);
    append(server, REC_COMMAND, body, 8 + n);
    free(body);
}

void cd_recording_step(cd_server *server, const cd_id *ids, const int32_t *levels, uint32_t count,
                       float dt)
{
    cd_recording *r = server->recording;
    if (r == NULL)
        return;
    uint32_t hits = 0;
    for (uint32_t i = 0; i < count; i++)
        hits += recorded(r, ids[i]);
    if (hits == 0)
        return;
    if (levels == NULL) {
        append(server, REC_STOP, NULL, 0); /* cannot keep the journal whole */
        return;
    }
    const size_t len = 8 + 4 + 12 + 4 + 5 * (size_t)hits;
    uint8_t *body = malloc(len);
    if (body == NULL) {
        append(server, REC_STOP, NULL, 0);
        return;
    }
    const cd_vec3 wind = cd_world_global_wind(server->world);
    put_u64(body, r->frames + 1);
    put_f32(body + 8, dt);
    put_f32(body + 12, wind.x);
    put_f32(body + 16, wind.y);
    put_f32(body + 20, wind.z);
    put_u32(body + 24, hits);
    uint8_t *p = body + 28, *level = body + 28 + 4 * (size_t)hits;
    for (uint32_t i = 0; i < count; i++)
        if (recorded(r, ids[i])) {
            put_u32(p, ids[i]);
            p += 4;
            *level++ = (uint8_t)levels[i]; /* the level it steps at (the budget's choice) */
        }
    r->frames++;
    append(server, REC_STEP, body, len);
    free(body);
}

static void finish(cd_server *server, cJSON *reply)
{
    cd_recording *r = server->recording;
    uint8_t body[8];
    put_u64(body, r->frames);
    append(server, REC_STOP, body, sizeof body);
    if ((r = server->recording) == NULL)
        return; /* append failed and logged */
    char err[200];
    const bool ok = cd_journal_close(r->fd, err, sizeof err);
    if (cd_log_begin(&server->log, ok ? CD_LOG_INFO : CD_LOG_ERROR, "record-stopped")) {
        cd_log_str(&server->log, "name", r->name);
        cd_log_uint(&server->log, "frames", r->frames);
        cd_log_uint(&server->log, "records", r->records);
        cd_log_uint(&server->log, "bytes", r->bytes + 16);
        if (!ok)
            cd_log_str(&server->log, "reason", err);
        cd_log_end(&server->log);
    }
    if (reply != NULL) {
        cJSON_AddStringToObject(reply, "name", r->name);
        cJSON_AddNumberToObject(reply, "frames", (double)r->frames);
        cJSON_AddNumberToObject(reply, "records", (double)r->records);
        cJSON_AddNumberToObject(reply, "bytes", (double)(r->bytes + 16));
    }
    recording_free(r);
    server->recording = NULL;
}

void cd_recording_shutdown(cd_server *server)
{
    if (server->recording != NULL)
        finish(server, NULL);
}

static bool require_data_dir(cd_conn *conn, const cd_request *req)
{
    if (conn->server->opts.data_dir[0] != '\0')
        return true;
    cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                  "name: journals are off (clothd was started without --data-dir)");
    return false;
}

cd_dispatch_result cd_cmd_record(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    if (req->as.record.stop) {
        if (server->recording == NULL) {
            cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT, "stop: nothing is being recorded");
            return CD_DISPATCH_DONE;
        }
        cJSON *reply = cd_reply_ok(req->id);
        finish(server, reply);
        cd_conn_send_reply(conn, reply);
        return CD_DISPATCH_DONE;
    }
    if (!require_data_dir(conn, req))
        return CD_DISPATCH_DONE;
    if (server->recording != NULL) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "name: already recording \"%s\" (record {\"stop\":true} first)",
                      server->recording->name);
        return CD_DISPATCH_DONE;
    }
    uint32_t count = 0;
    cd_id *ids = cd_resolve_ids(conn, req, &req->as.record.instances, &count);
    if (ids == NULL)
        return CD_DISPATCH_DONE;
    /* START: the build, the SIMD path, a snapshot of the instances. */
    uint8_t *snap = NULL;
    size_t snap_len = 0;
    cd_field_fault fault;
    /* Each instance's scene and lifetime go with it (scenes.c). */
    cd_snapshot_tag *tags = malloc((count ? count : 1) * sizeof *tags);
    for (uint32_t i = 0; i < count && tags != NULL; i++)
        cd_scenes_tag(server, ids[i], &tags[i]);
    cd_status st = CD_E_INTERNAL;
    if (tags != NULL)
        st = cd_snapshot_save_tagged(server->world, ids, count, tags, &snap, &snap_len, &fault);
    else
        fault = (cd_field_fault){.kind = CD_FAULT_MEMORY, .field = "record",
                                 .reason = "out of memory"};
    free(tags);
    if (st != CD_OK) {
        free(ids);
        cd_reply_fail(conn, req, st, "record: %s: %s", fault.field, fault.reason);
        return CD_DISPATCH_DONE;
    }
    const char *simd = cd_solver_simd_path(), *version = CD_VERSION_STRING;
    const size_t head = 2 + strlen(simd) + strlen(version);
    uint8_t *body = malloc(head + snap_len);
    cd_recording *r = calloc(1, sizeof *r);
    char err[200] = "out of memory";
    int fd = -1;
    if (body != NULL && r != NULL)
        fd = cd_journal_create(server->opts.data_dir, req->as.record.name, err, sizeof err);
    if (fd < 0) {
        free(ids);
        free(snap);
        free(body);
        free(r);
        cd_reply_fail(conn, req, CD_E_INTERNAL, "record: %s", err);
        return CD_DISPATCH_DONE;
    }
    size_t at = 0;
    body[at++] = (uint8_t)strlen(simd);
    memcpy(body + at, simd, strlen(simd));
    at += strlen(simd);
    body[at++] = (uint8_t)strlen(version);
    memcpy(body + at, version, strlen(version));
    at += strlen(version);
    memcpy(body + at, snap, snap_len);
    free(snap);
    *r = (cd_recording){.fd = fd, .ids = ids, .count = count};
    snprintf(r->name, sizeof r->name, "%s", req->as.record.name);
    server->recording = r;
    append(server, REC_START, body, at + snap_len);
    free(body);
    if (server->recording == NULL) {
        cd_reply_fail(conn, req, CD_E_INTERNAL, "record: the journal could not be written (see the log)");
        return CD_DISPATCH_DONE;
    }
    if (cd_log_begin(&server->log, CD_LOG_INFO, "record-started")) {
        cd_log_str(&server->log, "name", r->name);
        cd_log_uint(&server->log, "instances", count);
        cd_log_end(&server->log);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "name", r->name);
    cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
    for (uint32_t i = 0; i < count; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    cJSON_AddNumberToObject(reply, "bytes", (double)(r->bytes + 16));
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* ---- replay ---------------------------------------------------------------- */

typedef struct replay_state {
    cd_server *server;
    cd_conn sink; /* takes the replayed requests' replies */
    cd_id *from, *to; /* recorded id -> replayed id */
    uint32_t count;
} replay_state;

static cd_id replayed_id(const replay_state *rs, cd_id id)
{
    for (uint32_t i = 0; i < rs->count; i++)
        if (rs->from[i] == id)
            return rs->to[i];
    return 0;
}

static void replay_command(replay_state *rs, const uint8_t *line, size_t len)
{
    cd_request req;
    cd_error err;
    /* A binary request (skin, bulk pin) starts with 0x89, never a JSON line. */
    const cd_status parsed =
        len > 0 && line[0] == 0x89
            ? cd_binary_request_parse(line, len, &rs->server->limits, &req, &err)
            : cd_request_parse((const char *)line, len, &rs->server->limits, &req, &err);
    if (parsed == CD_OK && req.has_instance &&
        (req.instance = replayed_id(rs, req.instance)) != 0) {
        /* A command of a list (destroy) holds the instance there too. */
        cd_id_list *list = (cd_id_list *)cd_request_instances(&req);
        if (list != NULL && !list->all && list->count == 1)
            list->ids[0] = req.instance;
        cd_dispatch_apply(&rs->sink, &req);
    }
    cd_request_free(&req);
}

static void replay_step(replay_state *rs, const uint8_t *body, size_t len)
{
    if (len < 28)
        return;
    const float dt = get_f32(body + 8);
    const cd_vec3 wind = {get_f32(body + 12), get_f32(body + 16), get_f32(body + 20)};
    const uint32_t n = get_u32(body + 24);
    /* The levels of detail the steps ran at follow the ids (a record
     * written before them has none: each instance's own level). */
    const uint8_t *levels = len >= 28 + 5 * (size_t)n ? body + 28 + 4 * (size_t)n : NULL;
    cd_server *server = rs->server;
    for (uint32_t i = 0; i < n && 28 + 4 * (size_t)i + 4 <= len; i++) {
        cd_instance *inst = cd_world_get(server->world, replayed_id(rs, get_u32(body + 28 + 4 * i)));
        if (inst == NULL)
            continue;
        cd_step_result res = cd_instance_step_lod(inst, dt, wind, levels ? levels[i] : 0);
        if (res.sleeping || res.unstable)
            continue;
        /* As a step batch finishes (stepper.c): the frame of the step, then
         * the tear and its topology event. */
        for (cd_conn *c = server->conns; c != NULL; c = c->next)
            if (!c->closing && (c->sub_all || cd_conn_subscription(c, cd_instance_id(inst)) != NULL))
                cd_stepper_send_current(c, inst);
        if (cd_world_tear(server->world, cd_instance_id(inst)) != 0)
            cd_announce_topology(server, inst);
    }
}

cd_dispatch_result cd_cmd_replay(cd_conn *conn, const cd_request *req)
{
    if (!require_data_dir(conn, req))
        return CD_DISPATCH_DONE;
    cd_server *server = conn->server;
    const char *name = req->as.replay.name;
    uint8_t *data = NULL;
    size_t len = 0;
    char err[240];
    cd_file_status fs = cd_data_file_read(server->opts.data_dir, name, ".cdj", &data, &len, err, sizeof err);
    if (fs != CD_FILE_OK) {
        cd_reply_fail(conn, req, fs == CD_FILE_MISSING ? CD_E_NOT_FOUND : CD_E_INTERNAL,
                      "name: no journal \"%s\" (%s)", name, err);
        return CD_DISPATCH_DONE;
    }
    cd_status st = cd_journal_check_preamble(data, len, err, sizeof err);
    size_t at = 0;
    cd_journal_rec rec;
    if (st == CD_OK && (cd_journal_record(data, len, &at, &rec) != CD_JOURNAL_RECORD ||
                        rec.kind != REC_START || rec.len < 2 || rec.len < 2u + rec.body[0] ||
                        rec.len < 2u + rec.body[0] + rec.body[1 + rec.body[0]])) {
        snprintf(err, sizeof err, "record 0: the START record is missing or damaged");
        st = CD_E_INVALID_ARGUMENT;
    }
    if (st != CD_OK) {
        free(data);
        cd_reply_fail(conn, req, st, "journal \"%s\": %s", name, err);
        return CD_DISPATCH_DONE;
    }
    char simd[32] = "", version[32] = "";
    snprintf(simd, sizeof simd, "%.*s", (int)rec.body[0], (const char *)rec.body + 1);
    const uint8_t *v = rec.body + 1 + rec.body[0];
    snprintf(version, sizeof version, "%.*s", (int)v[0], (const char *)v + 1);
    const size_t head = 2u + rec.body[0] + v[0];
    cd_snapshot_loaded loaded;
    cd_field_fault fault;
    st = cd_snapshot_load(server->world, rec.body + head, rec.len - head, CD_SNAPSHOT_NEW_IDS, &loaded,
                          &fault);
    if (st != CD_OK) {
        free(data);
        cd_error e;
        cd_fail_fault(&e, st, &fault);
        cd_reply_fail(conn, req, st, "journal \"%s\": START: %s", name, e.message);
        return CD_DISPATCH_DONE;
    }
    replay_state rs = {.server = server, .from = loaded.saved_ids, .to = loaded.ids,
                       .count = loaded.info.instances};
    rs.sink.server = server;
    rs.sink.sink = true;
    /* They join their recorded scenes; an ephemeral one is tied to the
     * connection that asked for the replay (scenes.c). */
    for (uint32_t i = 0; i < rs.count; i++)
        cd_scenes_adopt(server, rs.to[i], &loaded.tags[i], conn);
    /* Viewers see the replayed instances from their first state. */
    for (cd_conn *c = server->conns; c != NULL; c = c->next)
        for (uint32_t i = 0; i < rs.count && !c->closing; i++)
            if (cd_conn_subscription(c, rs.to[i]) != NULL)
                cd_stepper_send_current(c, cd_world_get(server->world, rs.to[i]));
    uint64_t frames = 0;
    bool complete = false;
    size_t torn_at = 0;
    const uint64_t to = req->as.replay.has_to ? req->as.replay.to : UINT64_MAX;
    /* Applied up to the `to`-th step (the state right after it); the rest
     * is only read, to tell how long and how whole the journal is. */
    uint64_t journal_frames = 0;
    for (;;) {
        const size_t offset = at;
        cd_journal_next next = cd_journal_record(data, len, &at, &rec);
        if (next == CD_JOURNAL_TORN)
            torn_at = offset;
        if (next != CD_JOURNAL_RECORD)
            break;
        if (rec.kind == REC_STOP) {
            complete = true;
            break;
        }
        const bool apply = journal_frames < to;
        if (rec.kind == REC_STEP)
            journal_frames++;
        if (!apply)
            continue;
        if (rec.kind == REC_COMMAND && rec.len >= 8)
            replay_command(&rs, rec.body + 8, rec.len - 8);
        else if (rec.kind == REC_STEP) {
            replay_step(&rs, rec.body, rec.len);
            frames++;
        }
    }
    free(data);
    /* Held where the replay left them: no step moves them until enabled
     * (a viewer's timeline shows this frame while others step everything). */
    for (uint32_t i = 0; i < rs.count && !req->as.replay.enabled; i++) {
        cd_instance *inst = cd_world_get(server->world, rs.to[i]);
        if (inst != NULL)
            cd_instance_set_enabled(inst, false);
    }
    if (cd_log_begin(&server->log, CD_LOG_INFO, "replayed")) {
        cd_log_str(&server->log, "name", name);
        cd_log_uint(&server->log, "instances", rs.count);
        cd_log_uint(&server->log, "frames", frames);
        cd_log_end(&server->log);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "name", name);
    cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
    cJSON *was = cJSON_AddArrayToObject(reply, "recorded");
    for (uint32_t i = 0; i < rs.count; i++) {
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(rs.to[i]));
        cJSON_AddItemToArray(was, cJSON_CreateNumber(rs.from[i]));
    }
    cJSON_AddNumberToObject(reply, "frames", (double)frames);
    cJSON_AddNumberToObject(reply, "journalFrames", (double)journal_frames);
    cJSON_AddBoolToObject(reply, "complete", complete);
    if (torn_at != 0)
        cJSON_AddNumberToObject(reply, "tornAt", (double)torn_at);
    cJSON_AddStringToObject(reply, "simd", simd);
    cJSON_AddStringToObject(reply, "version", version);
    if (strcmp(simd, cd_solver_simd_path()) != 0 || strcmp(version, CD_VERSION_STRING) != 0) {
        char warning[160];
        snprintf(warning, sizeof warning,
                 "recorded by clothd %s on %s, replayed by %s on %s: positions may differ in the last bits",
                 version, simd, CD_VERSION_STRING, cd_solver_simd_path());
        cJSON_AddStringToObject(reply, "warning", warning);
    }
    cd_snapshot_loaded_free(&loaded);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* ---- journals ---------------------------------------------------------------- */

cd_dispatch_result cd_cmd_journals(cd_conn *conn, const cd_request *req)
{
    if (!require_data_dir(conn, req))
        return CD_DISPATCH_DONE;
    cd_server *server = conn->server;
    char(*names)[CD_SNAPSHOT_NAME_MAX + 1] = NULL;
    const uint32_t count = cd_data_file_list(server->opts.data_dir, ".cdj", &names);
    cJSON *reply = cd_reply_ok(req->id);
    cJSON *arr = cJSON_AddArrayToObject(reply, "journals");
    for (uint32_t i = 0; i < count; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(names[i]));
    free(names);
    const cd_recording *r = server->recording;
    if (r == NULL) {
        cJSON_AddNullToObject(reply, "recording");
    } else {
        cJSON *rec = cJSON_AddObjectToObject(reply, "recording");
        cJSON_AddStringToObject(rec, "name", r->name);
        cJSON_AddNumberToObject(rec, "frames", (double)r->frames);
        cJSON_AddNumberToObject(rec, "bytes", (double)(r->bytes + 16));
    }
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
