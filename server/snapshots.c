/* save, load, autosave and the load at start-up: the solver's snapshots
 * (solver/snapshot.c) in files under --data-dir (snapshot_file.c).
 *
 * A save is Redis's BGSAVE in two halves. On the loop thread the instances
 * are serialised into a buffer: `save` touches its instances, so it waits
 * for a running step of theirs, and nothing steps while the loop copies,
 * so the buffer is whole steps' state (Redis gets the same from fork's
 * copy-on-write image). The file is then written, fsync'ed and renamed on
 * libuv's thread pool while the loop serves everyone else; the client's
 * reply comes when the file is on disk, and its next lines wait for it
 * (replies stay in order). 64 capes of 32 x 32 hold the loop for the
 * serialisation only (bench/README.md).
 *
 * Autosave is the same save of every instance under the name "autosave",
 * every --autosave seconds once no step is running (one at a time), and
 * once more at SIGTERM after the pool has been joined (never mid-step)
 * and after any file still being written, so that the last one wins. At
 * start the newest snapshot that loads whole is loaded; a damaged one is
 * skipped with a warning, as Redis refuses a corrupt RDB with a clear
 * message.
 *
 * A save with "memory":true keeps the bytes in memory for the connection
 * that saved them instead (a viewer's reset points): no file, no
 * --data-dir, never loaded at start, gone with the connection; all of them
 * together hold at most --max-total-particles particles. A load with
 * "restore":true puts each saved instance back in place of the live one of
 * its id, the others left alone (CD_SNAPSHOT_RESTORE). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/snapshot.h"
#include "internal.h"

#define AUTOSAVE_NAME "autosave"

struct cd_save_job {
    uv_work_t work; /* work.data == this */
    cd_server *server;
    cd_conn *conn; /* the client to answer; NULL: an autosave, or it has gone */
    cJSON *req_id; /* owned copy */
    char name[CD_SNAPSHOT_NAME_MAX + 1];
    uint64_t seq;
    uint8_t *data;
    size_t len;
    uint32_t instances;
    uint64_t started_ns;
    double serialise_ms;
    /* Written on the pool's thread, read in the after-work callback. */
    bool ok;
    char err[200];
};

static uint64_t next_seq;

struct cd_memory_snapshot {
    cd_memory_snapshot *next;
    char name[CD_SNAPSHOT_NAME_MAX + 1];
    uint8_t *data;
    size_t len;
    uint64_t particles;
};

static cd_memory_snapshot **find_memory(cd_conn *conn, const char *name)
{
    cd_memory_snapshot **at = &conn->memory_snapshots;
    while (*at != NULL && strcmp((*at)->name, name) != 0)
        at = &(*at)->next;
    return at;
}

static void log_saved(cd_server *server, const cd_save_job *job, double total_ms)
{
    if (cd_log_begin(&server->log, CD_LOG_INFO, "snapshot-saved")) {
        cd_log_str(&server->log, "name", job->name);
        cd_log_uint(&server->log, "instances", job->instances);
        cd_log_uint(&server->log, "bytes", job->len);
        cd_log_fixed(&server->log, "serialise_ms", job->serialise_ms, 2);
        cd_log_fixed(&server->log, "ms", total_ms, 2);
        cd_log_end(&server->log);
    }
}

static void free_job(cd_save_job *job)
{
    free(job->data);
    cJSON_Delete(job->req_id);
    free(job);
}

/* Serialises `ids` into a new job (the loop thread's half of a save);
 * NULL with `err` and *code. */
static cd_save_job *serialise(cd_server *server, const char *name, const cd_id *ids, uint32_t count,
                              cd_status *code, char *err, size_t cap)
{
    cd_save_job *job = calloc(1, sizeof *job);
    if (job == NULL) {
        *code = CD_E_INTERNAL;
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    job->started_ns = uv_hrtime();
    cd_field_fault fault;
    /* Each instance's scene and lifetime go with it (scenes.c). */
    cd_snapshot_tag *tags = malloc((count ? count : 1) * sizeof *tags);
    for (uint32_t i = 0; i < count && tags != NULL; i++)
        cd_scenes_tag(server, ids[i], &tags[i]);
    cd_status st = CD_E_INTERNAL;
    if (tags != NULL)
        st = cd_snapshot_save_tagged(server->world, ids, count, tags, &job->data, &job->len,
                                     &fault);
    else
        fault = (cd_field_fault){.kind = CD_FAULT_MEMORY, .field = "snapshot",
                                 .reason = "out of memory"};
    free(tags);
    if (st != CD_OK) {
        *code = st;
        snprintf(err, cap, "%.47s: %.150s", fault.field, fault.reason);
        free(job);
        return NULL;
    }
    job->server = server;
    job->work.data = job;
    job->instances = count;
    job->seq = ++next_seq;
    snprintf(job->name, sizeof job->name, "%s", name);
    job->serialise_ms = (double)(uv_hrtime() - job->started_ns) / 1e6;
    return job;
}

/* On libuv's thread pool: the file. */
static void write_job(uv_work_t *work)
{
    cd_save_job *job = work->data;
    const cd_server *server = job->server;
    job->ok = cd_snapshot_file_write(server->opts.data_dir, job->name, job->seq, job->data, job->len,
                                     server->opts.crash_at, job->err, sizeof job->err);
}

static void autosave_now(cd_server *server);

/* Back on the loop: the log line, the reply, and whoever waited. */
static void job_written(uv_work_t *work, int status)
{
    cd_save_job *job = work->data;
    cd_server *server = job->server;
    server->saves_writing--;
    if (job->conn == NULL && strcmp(job->name, AUTOSAVE_NAME) == 0)
        server->autosave_writing = false;
    if (status != 0 && job->ok == false && job->err[0] == '\0')
        snprintf(job->err, sizeof job->err, "%s", uv_strerror(status));
    const double ms = (double)(uv_hrtime() - job->started_ns) / 1e6;
    if (job->ok)
        log_saved(server, job, ms);
    else if (cd_log_begin(&server->log, CD_LOG_ERROR, "snapshot-failed")) {
        cd_log_str(&server->log, "name", job->name);
        cd_log_str(&server->log, "reason", job->err);
        cd_log_end(&server->log);
    }
    cd_conn *conn = job->conn;
    if (conn != NULL) {
        conn->own_save = NULL;
        conn->resume = true;
        if (job->ok) {
            cJSON *reply = cd_reply_ok(job->req_id);
            cJSON_AddStringToObject(reply, "name", job->name);
            cJSON_AddNumberToObject(reply, "instances", job->instances);
            cJSON_AddNumberToObject(reply, "bytes", (double)job->len);
            cd_conn_send_reply(conn, reply);
        } else {
            cd_error e;
            cd_fail(&e, CD_E_INTERNAL, "save: %s", job->err);
            cd_conn_send_error(conn, job->req_id, &e);
        }
    }
    free_job(job);
    if (server->final_autosave && server->saves_writing == 0)
        autosave_now(server); /* stopping: the last one, now that the others are on disk */
    else if (!server->shutting_down)
        cd_server_resume_deferred(server);
}

/* Hands the file's half to the thread pool; false (job freed) when libuv
 * refuses, with `err`. */
static bool start_write(cd_server *server, cd_save_job *job, char *err, size_t cap)
{
    int rc = uv_queue_work(server->loop, &job->work, write_job, job_written);
    if (rc != 0) {
        snprintf(err, cap, "cannot start the write: %s", uv_strerror(rc));
        free_job(job);
        return false;
    }
    server->saves_writing++;
    return true;
}

static bool require_data_dir(cd_conn *conn, const cd_request *req)
{
    if (conn->server->opts.data_dir[0] != '\0')
        return true;
    cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                  "name: snapshots are off (clothd was started without --data-dir)");
    return false;
}

/* "memory":true: serialised now and kept for this connection under its
 * name (replacing one of that name); the reply at once. */
static void save_memory(cd_conn *conn, const cd_request *req, const cd_id *ids, uint32_t count)
{
    cd_server *server = conn->server;
    const char *name = req->as.save.name;
    uint64_t particles = 0;
    for (uint32_t i = 0; i < count; i++)
        particles += cd_instance_particle_count(cd_world_get(server->world, ids[i]));
    cd_memory_snapshot **at = find_memory(conn, name);
    const uint64_t held = server->memory_snapshot_particles - (*at != NULL ? (*at)->particles : 0);
    const uint64_t limit = server->opts.max_total_particles;
    if (limit != 0 && held + particles > limit) {
        cd_reply_fail(conn, req, CD_E_LIMIT_EXCEEDED,
                      "memory: %" PRIu64 " particles in the memory snapshots would exceed "
                      "--max-total-particles (%" PRIu64 ")",
                      held + particles, limit);
        return;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    cd_field_fault fault;
    cd_status st = cd_snapshot_save(server->world, ids, count, &data, &len, &fault);
    cd_memory_snapshot *snap = st == CD_OK ? *at : NULL;
    if (st == CD_OK && snap == NULL && (snap = calloc(1, sizeof *snap)) != NULL) {
        snprintf(snap->name, sizeof snap->name, "%s", name);
        *at = snap;
    }
    if (st != CD_OK || snap == NULL) {
        free(data);
        if (st == CD_OK)
            cd_reply_fail(conn, req, CD_E_INTERNAL, "save: out of memory");
        else
            cd_reply_fail(conn, req, st, "save: %.47s: %.150s", fault.field, fault.reason);
        return;
    }
    free(snap->data);
    server->memory_snapshot_particles = held + particles;
    snap->data = data;
    snap->len = len;
    snap->particles = particles;
    if (cd_log_begin(&server->log, CD_LOG_DEBUG, "snapshot-saved")) {
        cd_log_str(&server->log, "name", name);
        cd_log_str(&server->log, "memory", "true");
        cd_log_uint(&server->log, "instances", count);
        cd_log_uint(&server->log, "bytes", len);
        cd_log_end(&server->log);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "name", name);
    cJSON_AddNumberToObject(reply, "instances", count);
    cJSON_AddNumberToObject(reply, "bytes", (double)len);
    cd_conn_send_reply(conn, reply);
}

cd_dispatch_result cd_cmd_save(cd_conn *conn, const cd_request *req)
{
    if (!req->as.save.memory && !require_data_dir(conn, req))
        return CD_DISPATCH_DONE;
    uint32_t count = 0;
    cd_id *ids = cd_resolve_ids(conn, req, &req->as.save.instances, &count);
    if (ids == NULL)
        return CD_DISPATCH_DONE;
    if (req->as.save.memory) {
        save_memory(conn, req, ids, count);
        free(ids);
        return CD_DISPATCH_DONE;
    }
    cd_status code = CD_E_INTERNAL;
    char err[200];
    cd_save_job *job = serialise(conn->server, req->as.save.name, ids, count, &code, err, sizeof err);
    free(ids);
    if (job != NULL && req->id != NULL && (job->req_id = cJSON_Duplicate(req->id, true)) == NULL) {
        free_job(job);
        job = NULL;
        snprintf(err, sizeof err, "out of memory");
    }
    if (job != NULL) {
        job->conn = conn;
        if (start_write(conn->server, job, err, sizeof err)) {
            conn->own_save = job;
            return CD_DISPATCH_STARTED; /* the reply comes with the file */
        }
    }
    cd_reply_fail(conn, req, code, "save: %s", err);
    return CD_DISPATCH_DONE;
}

void cd_snapshots_forget_conn(cd_conn *conn)
{
    if (conn->own_save != NULL) {
        conn->own_save->conn = NULL;
        conn->own_save = NULL;
    }
    while (conn->memory_snapshots != NULL) {
        cd_memory_snapshot *snap = conn->memory_snapshots;
        conn->memory_snapshots = snap->next;
        conn->server->memory_snapshot_particles -= snap->particles;
        free(snap->data);
        free(snap);
    }
}

/* After a load: instances that are gone leave their scenes and every
 * subscription; the loaded ones join their saved scenes (an ephemeral one
 * is tied to the loading connection), and subscribers see their state at
 * once. */
static void announce_load(cd_server *server, cd_conn *conn, const cd_id *old, uint32_t old_count,
                          const cd_snapshot_loaded *loaded, bool replace)
{
    const cd_id *ids = loaded->ids;
    const uint32_t count = loaded->info.instances;
    /* A replace destroyed every old instance, even those whose ids came
     * back; subscriptions to such an id go on. */
    for (uint32_t i = 0; i < old_count; i++) {
        if (replace)
            cd_scenes_forget(server, old[i]);
        if (cd_world_get(server->world, old[i]) == NULL)
            cd_dispatch_forget_instance(server, old[i]);
    }
    /* An instance restored in place (restore) keeps its scene and its tie;
     * one that comes back from nothing joins its saved scene. */
    for (uint32_t i = 0; i < count; i++)
        if (replace || cd_scenes_of(server, ids[i]) == NULL)
            cd_scenes_adopt(server, ids[i], &loaded->tags[i], conn);
    for (cd_conn *c = server->conns; c != NULL; c = c->next)
        for (uint32_t i = 0; i < count && !c->closing; i++)
            if (c->sub_all || cd_conn_subscription(c, ids[i]) != NULL)
                cd_stepper_send_current(c, cd_world_get(server->world, ids[i]));
}

cd_dispatch_result cd_cmd_load(cd_conn *conn, const cd_request *req)
{
    const bool memory = req->as.load.memory;
    if (!memory && !require_data_dir(conn, req))
        return CD_DISPATCH_DONE;
    cd_server *server = conn->server;
    const char *name = req->as.load.name;
    uint8_t *data = NULL;
    size_t len = 0;
    if (memory) {
        const cd_memory_snapshot *snap = *find_memory(conn, name);
        if (snap == NULL) {
            cd_reply_fail(conn, req, CD_E_NOT_FOUND,
                          "name: no memory snapshot \"%s\" on this connection", name);
            return CD_DISPATCH_DONE;
        }
        data = snap->data; /* the connection's: not freed here */
        len = snap->len;
    } else {
        char err[200];
        cd_file_status fs = cd_snapshot_file_read(server->opts.data_dir, name, &data, &len, err,
                                                  sizeof err);
        if (fs != CD_FILE_OK) {
            cd_reply_fail(conn, req, fs == CD_FILE_MISSING ? CD_E_NOT_FOUND : CD_E_INTERNAL,
                          "name: no snapshot \"%s\" (%s)", name, err);
            return CD_DISPATCH_DONE;
        }
    }
    const uint32_t live = cd_world_count(server->world);
    cd_id *old = malloc(sizeof *old * (live ? live : 1));
    if (old == NULL) {
        if (!memory)
            free(data);
        cd_reply_fail(conn, req, CD_E_INTERNAL, "load: out of memory");
        return CD_DISPATCH_DONE;
    }
    const uint32_t old_count = cd_world_list(server->world, old, live);
    cd_snapshot_loaded loaded;
    cd_field_fault fault;
    const cd_snapshot_mode mode = req->as.load.replace   ? CD_SNAPSHOT_REPLACE
                                  : req->as.load.restore ? CD_SNAPSHOT_RESTORE
                                                         : CD_SNAPSHOT_ADD;
    cd_status st = cd_snapshot_load(server->world, data, len, mode, &loaded, &fault);
    if (!memory)
        free(data);
    if (st != CD_OK) {
        cd_error e;
        cd_fail_fault(&e, st, &fault);
        cd_reply_fail(conn, req, st, "snapshot \"%s\": %s", name, e.message);
        free(old);
        return CD_DISPATCH_DONE;
    }
    /* Its instances are gone, or back at another state: the journal ends here. */
    if (req->as.load.replace || cd_recording_holds(server, loaded.ids, loaded.info.instances))
        cd_recording_shutdown(server);
    const cd_snapshot_info info = loaded.info;
    const cd_id *ids = loaded.ids;
    announce_load(server, conn, old, old_count, &loaded, req->as.load.replace);
    free(old);
    if (cd_log_begin(&server->log, CD_LOG_INFO, "snapshot-loaded")) {
        cd_log_str(&server->log, "name", name);
        cd_log_uint(&server->log, "instances", info.instances);
        cd_log_uint(&server->log, "particles", info.particles);
        cd_log_str(&server->log, "replace", req->as.load.replace ? "true" : "false");
        cd_log_str(&server->log, "restore", req->as.load.restore ? "true" : "false");
        cd_log_str(&server->log, "memory", memory ? "true" : "false");
        cd_log_end(&server->log);
    }
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "name", name);
    cJSON *arr = cJSON_AddArrayToObject(reply, "instances");
    for (uint32_t i = 0; i < info.instances; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    cJSON_AddNumberToObject(reply, "particles", (double)info.particles);
    cd_conn_send_reply(conn, reply);
    cd_snapshot_loaded_free(&loaded);
    return CD_DISPATCH_DONE;
}

/* Every instance under "autosave": serialised now, written on the pool
 * (synchronously when stopping: the loop is closing). Logged either way. */
static void autosave(cd_server *server, bool background)
{
    server->autosave_due = false;
    const uint32_t live = cd_world_count(server->world);
    cd_id *ids = malloc(sizeof *ids * (live ? live : 1));
    cd_status code = CD_E_INTERNAL;
    char err[200] = "out of memory";
    cd_save_job *job = ids == NULL ? NULL
                                   : serialise(server, AUTOSAVE_NAME, ids,
                                               cd_world_list(server->world, ids, live), &code, err,
                                               sizeof err);
    free(ids);
    if (job != NULL && background) {
        if (start_write(server, job, err, sizeof err)) {
            server->autosave_writing = true;
            return;
        }
        job = NULL;
    }
    if (job != NULL) {
        write_job(&job->work);
        server->saves_writing++;
        job_written(&job->work, 0); /* logs and frees */
        return;
    }
    if (cd_log_begin(&server->log, CD_LOG_ERROR, "snapshot-failed")) {
        cd_log_str(&server->log, "name", AUTOSAVE_NAME);
        cd_log_str(&server->log, "reason", err);
        cd_log_end(&server->log);
    }
}

static void autosave_now(cd_server *server)
{
    server->final_autosave = false;
    autosave(server, false);
}

static void on_autosave(uv_timer_t *timer)
{
    cd_server *server = timer->data;
    if (server->autosave_writing)
        return; /* the last one is still being written: the next tick */
    if (server->busy_count > 0)
        server->autosave_due = true; /* after the running steps */
    else
        autosave(server, true);
}

void cd_snapshots_steps_idle(cd_server *server)
{
    if (server->autosave_due && server->busy_count == 0 && !server->shutting_down &&
        !server->autosave_writing)
        autosave(server, true);
}

void cd_snapshots_stop(cd_server *server)
{
    if (server->opts.autosave == 0 || server->opts.data_dir[0] == '\0')
        return;
    if (server->saves_writing > 0)
        server->final_autosave = true; /* job_written runs it after the last write */
    else
        autosave_now(server);
}

static void load_newest(cd_server *server)
{
    const uint32_t removed = cd_snapshot_file_clean(server->opts.data_dir);
    if (removed > 0 && cd_log_begin(&server->log, CD_LOG_WARN, "snapshot-temporaries-removed")) {
        cd_log_str(&server->log, "dir", server->opts.data_dir);
        cd_log_uint(&server->log, "files", removed);
        cd_log_end(&server->log);
    }
    char(*names)[CD_SNAPSHOT_NAME_MAX + 1] = NULL;
    const uint32_t count = cd_data_file_list(server->opts.data_dir, ".cds", &names);
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *data = NULL;
        size_t len = 0;
        char err[240];
        cd_snapshot_loaded loaded = {0};
        cd_field_fault fault;
        cd_status st = CD_E_INTERNAL;
        if (cd_snapshot_file_read(server->opts.data_dir, names[i], &data, &len, err,
                                  sizeof err) == CD_FILE_OK) {
            st = cd_snapshot_load(server->world, data, len, CD_SNAPSHOT_REPLACE, &loaded, &fault);
            if (st != CD_OK) {
                cd_error e;
                cd_fail_fault(&e, st, &fault);
                snprintf(err, sizeof err, "%s", e.message);
            }
            free(data);
        }
        if (st == CD_OK) {
            /* Ephemeral instances are not restored: their connection is
             * gone with the server that saved them. */
            uint32_t dropped = 0;
            for (uint32_t k = 0; k < loaded.info.instances; k++)
                dropped += !cd_scenes_adopt(server, loaded.ids[k], &loaded.tags[k], NULL);
            if (dropped > 0 && cd_log_begin(&server->log, CD_LOG_INFO, "snapshot-ephemeral-dropped")) {
                cd_log_str(&server->log, "name", names[i]);
                cd_log_uint(&server->log, "instances", dropped);
                cd_log_end(&server->log);
            }
            if (cd_log_begin(&server->log, CD_LOG_INFO, "snapshot-loaded")) {
                cd_log_str(&server->log, "name", names[i]);
                cd_log_str(&server->log, "dir", server->opts.data_dir);
                cd_log_uint(&server->log, "instances", loaded.info.instances);
                cd_log_uint(&server->log, "particles", loaded.info.particles);
                cd_log_str(&server->log, "simd", loaded.info.simd);
                cd_log_end(&server->log);
            }
            if (strcmp(loaded.info.simd, cd_solver_simd_path()) != 0 &&
                cd_log_begin(&server->log, CD_LOG_WARN, "snapshot-simd")) {
                cd_log_str(&server->log, "saved", loaded.info.simd);
                cd_log_str(&server->log, "running", cd_solver_simd_path());
                cd_log_str(&server->log, "note", "steps may differ from the saved run's in the last bits");
                cd_log_end(&server->log);
            }
            cd_snapshot_loaded_free(&loaded);
            break;
        }
        if (cd_log_begin(&server->log, CD_LOG_WARN, "snapshot-skipped")) {
            cd_log_str(&server->log, "name", names[i]);
            cd_log_str(&server->log, "reason", err);
            cd_log_end(&server->log);
        }
    }
    if (count == 0 && cd_log_begin(&server->log, CD_LOG_INFO, "snapshot-none")) {
        cd_log_str(&server->log, "dir", server->opts.data_dir);
        cd_log_end(&server->log);
    }
    free(names);
}

void cd_snapshots_start(cd_server *server)
{
    uv_timer_init(server->loop, &server->autosave_timer);
    server->autosave_timer.data = server;
    if (server->opts.data_dir[0] == '\0')
        return;
    load_newest(server);
    if (server->opts.autosave > 0) {
        const uint64_t ms = (uint64_t)server->opts.autosave * 1000u;
        uv_timer_start(&server->autosave_timer, on_autosave, ms, ms);
    }
}
