/* Step batches: a `step` request becomes one job per instance on the worker
 * pool. Every instance of a batch stays marked busy until the batch's LAST
 * job is back and the batch is finished: finishing reads every instance of
 * the batch (impulses for the reply, frames for the subscribers), so none of
 * them may be destroyed or changed before that, even when its own job
 * returned long before. Commands that touch them wait (are deferred) until
 * then. When the last job is back, the requester gets its reply and then
 * every subscriber gets the new frames, each encoded once and shared. */
#include <stdlib.h>

#include "internal.h"

typedef struct cd_step_job {
    cd_job job; /* first: the pool hands back &job */
    cd_instance *inst;
    cd_id id;
    float dt;
    cd_vec3 global_wind; /* snapshot: the global wind may change mid-step */
    cd_step_result result;
    cd_batch *batch;
} cd_step_job;

struct cd_batch {
    cd_server *server;
    cd_conn *conn; /* NULL once the requester has gone */
    cJSON *req_id;
    cd_batch *next;
    uint32_t count, pending;
    cd_step_job jobs[];
};

static void finish_batch(cd_server *server, cd_batch *batch);

static void run_step_job(cd_job *job)
{
    cd_step_job *sj = (cd_step_job *)job;
    sj->result = cd_instance_step(sj->inst, sj->dt, sj->global_wind);
}

cd_dispatch_result cd_stepper_start(cd_conn *conn, const cJSON *req_id, float dt,
                                    const cd_id *ids, uint32_t count)
{
    cd_server *server = conn->server;
    cd_batch *batch = calloc(1, sizeof *batch + count * sizeof(cd_step_job));
    if (batch == NULL) {
        cd_error err;
        cd_fail(&err, CD_E_INTERNAL, "step: out of memory");
        cd_conn_send_error(conn, req_id, &err);
        return CD_DISPATCH_DONE;
    }
    batch->server = server;
    batch->conn = conn;
    batch->req_id = req_id ? cJSON_Duplicate(req_id, 1) : NULL;
    batch->count = batch->pending = count;
    batch->next = server->batches;
    server->batches = batch;
    conn->own_batch = batch;

    const cd_vec3 wind = cd_world_global_wind(server->world);
    for (uint32_t i = 0; i < count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        sj->job.run = run_step_job;
        sj->inst = cd_world_get(server->world, ids[i]);
        sj->id = ids[i];
        sj->dt = dt;
        sj->global_wind = wind;
        sj->batch = batch;
        cd_server_set_busy(server, ids[i], true);
    }
    for (uint32_t i = 0; i < count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        /* Busy instances bound the jobs in flight by the pool's capacity;
         * should a submit still fail, the step runs here (same result). */
        if (!cd_pool_submit(server->pool, &sj->job)) {
            run_step_job(&sj->job);
            batch->pending--;
        }
    }
    if (batch->pending == 0) {
        finish_batch(server, batch);
        return CD_DISPATCH_DONE;
    }
    return CD_DISPATCH_STARTED;
}

void cd_stepper_send_current(cd_conn *conn, const cd_instance *inst)
{
    const cd_frame_options *opts = cd_conn_subscription(conn, cd_instance_id(inst));
    cd_frame_buf *frame = cd_frame_buf_encode(inst, opts != NULL && opts->quantize);
    if (frame == NULL)
        return;
    cd_conn_send_frame(conn, frame);
    cd_frame_buf_unref(frame);
}

/* The new frame to every subscriber whose `every` takes it. Each form
 * (plain, quantized) is encoded at most once and shared by reference. */
static void fan_out(cd_server *server, const cd_instance *inst)
{
    cd_frame_buf *forms[2] = {NULL, NULL}; /* [quantize] */
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    for (cd_conn *conn = server->conns; conn != NULL; conn = conn->next) {
        const cd_frame_options *opts = cd_conn_subscription(conn, info.id);
        if (opts == NULL || info.frame % opts->every != 0)
            continue;
        cd_frame_buf **frame = &forms[opts->quantize ? 1 : 0];
        if (*frame == NULL && (*frame = cd_frame_buf_encode(inst, opts->quantize)) == NULL)
            continue; /* out of memory: this subscriber skips the frame */
        cd_conn_send_frame(conn, *frame);
    }
    cd_frame_buf_unref(forms[0]);
    cd_frame_buf_unref(forms[1]);
}

static void unlink_batch(cd_server *server, cd_batch *batch)
{
    for (cd_batch **p = &server->batches; *p != NULL; p = &(*p)->next) {
        if (*p == batch) {
            *p = batch->next;
            return;
        }
    }
}

static void free_batch(cd_batch *batch)
{
    cJSON_Delete(batch->req_id);
    free(batch);
}

static void add_xyz(cJSON *obj, const char *name, cd_vec3 v)
{
    const float xyz[3] = {v.x, v.y, v.z};
    cd_reply_add_floats(obj, name, xyz, 1);
}

/* "impulses": what every coupled collider of the batch received. */
static void add_impulses(cJSON *reply, const cd_batch *batch)
{
    cJSON *arr = cJSON_AddArrayToObject(reply, "impulses");
    cd_collider_impulse impulses[CD_MAX_COLLIDERS];
    for (uint32_t i = 0; i < batch->count; i++) {
        const cd_step_job *sj = &batch->jobs[i];
        if (sj->result.unstable || sj->result.sleeping)
            continue;
        uint32_t n = cd_instance_collider_impulses(sj->inst, impulses, CD_MAX_COLLIDERS);
        for (uint32_t k = 0; k < n && k < CD_MAX_COLLIDERS; k++) {
            cJSON *item = cJSON_CreateObject();
            cJSON_AddItemToArray(arr, item);
            cJSON_AddNumberToObject(item, "instance", sj->id);
            cJSON_AddNumberToObject(item, "collider", impulses[k].collider);
            add_xyz(item, "linear", impulses[k].linear);
            add_xyz(item, "angular", impulses[k].angular);
        }
    }
}

static void finish_batch(cd_server *server, cd_batch *batch)
{
    unlink_batch(server, batch);
    cd_conn *conn = batch->conn;
    if (conn != NULL) {
        cJSON *reply = cd_reply_ok(batch->req_id);
        cJSON *unstable = cJSON_AddArrayToObject(reply, "unstable");
        cJSON *sleeping = cJSON_AddArrayToObject(reply, "sleeping");
        uint32_t stepped = 0;
        for (uint32_t i = 0; i < batch->count; i++) {
            if (batch->jobs[i].result.unstable)
                cJSON_AddItemToArray(unstable, cJSON_CreateNumber(batch->jobs[i].id));
            else
                stepped++;
            if (batch->jobs[i].result.sleeping)
                cJSON_AddItemToArray(sleeping, cJSON_CreateNumber(batch->jobs[i].id));
        }
        cJSON_AddNumberToObject(reply, "stepped", stepped);
        add_impulses(reply, batch);
        conn->own_batch = NULL;
        conn->resume = true;
        cd_conn_send_reply(conn, reply);
    }
    /* A sleeping instance did not move: no new frame to send. */
    for (uint32_t i = 0; i < batch->count; i++)
        if (!batch->jobs[i].result.unstable && !batch->jobs[i].result.sleeping)
            fan_out(server, batch->jobs[i].inst);
    /* Only now may other requests touch (or destroy) these instances. */
    for (uint32_t i = 0; i < batch->count; i++)
        cd_server_set_busy(server, batch->jobs[i].id, false);
    free_batch(batch);
}

void cd_stepper_drain(cd_server *server)
{
    if (server->pool == NULL) {
        /* Shutting down: the workers are joined; drop what is left. */
        while (server->batches != NULL) {
            cd_batch *batch = server->batches;
            server->batches = batch->next;
            free_batch(batch);
        }
        return;
    }
    bool finished = false;
    cd_job *job;
    while ((job = cd_pool_take_done(server->pool)) != NULL) {
        cd_step_job *sj = (cd_step_job *)job;
        cd_batch *batch = sj->batch;
        if (--batch->pending == 0) {
            finish_batch(server, batch);
            finished = true;
        }
    }
    if (finished)
        cd_server_resume_deferred(server);
}

void cd_stepper_forget_conn(cd_conn *conn)
{
    if (conn->own_batch != NULL) {
        conn->own_batch->conn = NULL;
        conn->own_batch = NULL;
    }
}
