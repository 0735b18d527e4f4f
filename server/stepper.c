/* Step batches: a `step` request becomes one job per instance on the worker
 * pool. Every instance of a batch stays marked busy until the batch's LAST
 * job is back and the batch is finished: finishing reads every instance of
 * the batch (impulses for the reply, frames for the subscribers), so none of
 * them may be destroyed or changed before that, even when its own job
 * returned long before. Commands that touch them wait (are deferred) until
 * then. When the last job is back, the requester gets its reply and then
 * every subscriber gets the new frames.
 *
 * Frames are encoded on the workers. When a batch starts, the loop thread
 * looks at the subscriptions and allocates, per instance, a buffer for each
 * form (plain or quantized, with or without velocities and normals: the
 * frame flags) that some subscriber will take from this step
 * (`every` decides from the frame number the step will reach); an instance
 * nobody subscribes to gets none. The worker that steps the instance fills
 * them right after the step (no allocation there; the velocities and
 * normals are computed once into arrays allocated with the buffers). At
 * the end the loop thread only hands references to the subscribers'
 * connections, which gather them into one write per wake-up. A
 * subscription that appeared since the start (or a buffer that could not
 * be allocated) is served by encoding on the loop thread, as before.
 *
 * A small batch runs inline: when the work of all its instances (particles
 * x substeps x iterations, summed) is at most CD_INLINE_WORK, the loop
 * thread steps them itself instead of a pool round trip, whose fixed cost
 * (a semaphore wake-up, two thread switches, an eventfd write and a second
 * loop iteration; 20-40 us of CPU on the development machine) is more
 * than such a step. The result is the same bits: a step is a pure function
 * of the instance, whichever thread runs it.
 *
 * One wake-up per batch, not per job: the pool calls the server's notify
 * after each job it queues as done, and cd_stepper_job_done_wakes answers
 * whether the loop must be woken: only for the job that completes its
 * batch. Each batch counts its jobs not yet through that call
 * (`unnotified`); the worker decrements it after the job is queued as done,
 * so when it reaches zero every job of the batch is in the done ring, and
 * that worker wakes the loop. A worker may still be decrementing when the
 * loop (woken by another batch) has already drained and finished the
 * batch: a finished batch whose count is not zero yet is kept on a list and
 * freed by a later drain (the last decrement wakes the loop for it).
 *
 * The reply is printed directly (no cJSON tree): this is the one reply a
 * game server asks for every frame. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "internal.h"

/* Work (particles x substeps x iterations) up to which a batch is stepped
 * on the loop thread: 1,024 is a 16 x 16 cloth at 4 iterations, about
 * 20-50 us of step, the same order as a pool round trip's fixed cost. */
#define CD_INLINE_WORK 1024u

typedef struct cd_step_job {
    cd_job job; /* first: the pool hands back &job */
    cd_instance *inst;
    cd_id id;
    float dt;
    cd_vec3 global_wind; /* snapshot: the global wind may change mid-step */
    cd_step_result result;
    uint32_t torn; /* vertices split after the step (tearing) */
    int32_t level; /* the level of detail to step at */
    cd_batch *batch;
    /* [flags]: prepared by the loop thread, filled by the worker after the
     * step (when it moved); NULL when no subscriber wants that form. */
    cd_frame_buf *forms[CD_FRAME_FORMS];
    /* [flags]: room the loop thread reserved in the shared-memory ring for
     * the "shm" subscribers of that form, filled by the worker too (no
     * copy at fan-out); NULL: none. */
    uint8_t *shared[CD_FRAME_FORMS];
    uint64_t shared_at[CD_FRAME_FORMS]; /* its ring position */
    /* The velocities and normals those forms carry, computed once. */
    cd_frame_channels channels;
    /* A helper job (after the batch's `count` step jobs): takes blocks of
     * the step of `inst` that this ticket names (solver.h); 0: a step. */
    uint64_t help_ticket;
} cd_step_job;

struct cd_batch {
    cd_server *server;
    uint32_t unnotified; /* atomic: jobs the pool has not yet notified for */
    cd_conn *conn; /* NULL once the requester has gone */
    char *id_text; /* the request's id as printed in the reply; NULL: none */
    char id_int[16]; /* id_text of an integer id (no allocation) */
    cd_batch *next;
    uint64_t started; /* uv_hrtime() at the start, for clothd_step_duration_seconds */
    float budget_ms;  /* the soft budget; 0: none */
    double actual_ms; /* from the start to the reply, set when it finishes */
    uint64_t planned; /* the plan's predicted cost units (budget.c) */
    uint32_t rate_ps; /* the rate it was planned at, ps per unit */
    uint32_t count;     /* instances: jobs[0, count) step them */
    uint32_t job_count; /* with the helper jobs after them */
    uint32_t pending;
    cd_step_job jobs[];
};

static void finish_batch(cd_server *server, cd_batch *batch);
static void free_batch(cd_batch *batch);

/* The batch of the job this worker thread ran last, for the notify that the
 * pool makes right after queuing it as done. */
static _Thread_local cd_batch *worker_batch;

static void run_step_job(cd_job *job)
{
    cd_step_job *sj = (cd_step_job *)job;
    worker_batch = sj->batch;
    if (sj->help_ticket != 0) {
        cd_instance_help_step(sj->inst, sj->help_ticket);
        return;
    }
    sj->result = cd_instance_step_lod(sj->inst, sj->dt, sj->global_wind, sj->level);
    if (sj->result.unstable || sj->result.sleeping)
        return; /* nothing moved: no frame is sent */
    cd_frame_channels_compute(&sj->channels, sj->inst);
    cd_shm_ring_before_writes(); /* before any room in the ring is written */
    for (uint32_t f = 0; f < CD_FRAME_FORMS; f++) {
        if (sj->forms[f] != NULL)
            cd_frame_buf_fill(sj->forms[f], sj->inst, &sj->channels);
        if (sj->shared[f] == NULL)
            continue;
        if (sj->forms[f] != NULL) /* the same bytes: copied, not encoded again */
            memcpy(sj->shared[f], sj->forms[f]->data, sj->forms[f]->len);
        else
            cd_frame_fill_bytes(sj->shared[f], (uint16_t)f, sj->inst, &sj->channels);
    }
}

/* The frame buffers the subscribers will take from this step of `sj`: one
 * per form socket subscribers want, and room in the shared-memory ring per
 * form "shm" subscribers want (a batch whose frames outgrow the ring
 * overwrites its own first ones, which their readers then find missed, as
 * with any ring too small for a step). */
static void prepare_frames(cd_server *server, cd_step_job *sj)
{
    cd_instance_info info;
    cd_instance_get_info(sj->inst, &info);
    const uint64_t next = info.frame + 1; /* the frame this step reaches */
    bool want[CD_FRAME_FORMS] = {false}, want_shared[CD_FRAME_FORMS] = {false};
    uint16_t channels = 0;
    if (next % cd_lod_frame_interval(sj->level) != 0)
        return; /* a coarse level sends fewer frames */
    for (cd_conn *conn = server->conns; conn != NULL; conn = conn->next) {
        const cd_frame_options *opts = cd_conn_subscription(conn, sj->id);
        if (opts != NULL && next % opts->every == 0) {
            (opts->shm ? want_shared : want)[cd_frame_options_flags(opts)] = true;
            channels |= opts->channels;
        }
    }
    /* Out of memory for the channels: their forms are encoded at the end. */
    const bool have_channels = cd_frame_channels_alloc(&sj->channels, info.particles, channels);
    cd_shm_ring *ring = &server->shm;
    for (uint32_t f = 0; f < CD_FRAME_FORMS; f++) {
        if (!have_channels && (f & ~CD_FRAME_FLAG_QUANTIZED) != 0)
            continue;
        const size_t len = cd_frame_size_flags(info.particles, (uint16_t)f);
        if (want_shared[f] && ring->map != NULL)
            sj->shared[f] = cd_shm_ring_reserve(ring, (uint32_t)len, &sj->shared_at[f]);
        if (sj->shared[f] == NULL)
            want[f] |= want_shared[f]; /* over a quarter of the ring: sent as it is */
        if (want[f])
            sj->forms[f] = cd_frame_buf_alloc(sj->id, info.particles, (uint16_t)f);
    }
}

/* What one step of `inst` at `level` asks for: particles x substeps x
 * iterations. */
static uint64_t step_work(const cd_instance *inst, float dt, int32_t level)
{
    const cd_cloth_def def = cd_instance_def(inst);
    int32_t substeps, iterations;
    cd_lod_counts(&def, dt, level, &substeps, &iterations);
    return (uint64_t)cd_instance_particle_count(inst) * (uint64_t)substeps *
           (uint64_t)iterations;
}

/* The request's id as cJSON prints it in a reply: an integer as "%d" into
 * `small` (cJSON's own test: the double equals its int), the rest through
 * cJSON itself, malloc'd. NULL on OOM. */
static char *print_id(const cJSON *id, char small[16])
{
    if (cJSON_IsNumber(id) && id->valuedouble == (double)id->valueint) {
        snprintf(small, 16, "%d", id->valueint);
        return small;
    }
    char *printed = cJSON_PrintUnformatted(id);
    if (printed == NULL)
        return NULL;
    char *text = strdup(printed); /* ours to free() whatever cJSON's hooks are */
    cJSON_free(printed);
    return text;
}

/* A job of `batch` finished (or dropped) on the loop thread: no notify
 * comes for it. Should it be the batch's last count, no worker wakes the
 * loop for the jobs already done. */
static void job_done_here(cd_server *server, cd_batch *batch)
{
    batch->pending--;
    if (__atomic_sub_fetch(&batch->unnotified, 1, __ATOMIC_ACQ_REL) == 0 && batch->pending > 0)
        uv_async_send(&server->wake);
}

/* Each job's level of detail: the one its step will run at
 * (cd_instance_step_level: its own, or one finer than its last step's),
 * lowered by the budget when one applies (budget.c), so that the frames
 * prepared and the inline decision see the step's real level. False on
 * out of memory. */
static bool plan_levels(cd_server *server, cd_batch *batch)
{
    for (uint32_t i = 0; i < batch->count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        sj->level = cd_instance_step_level(sj->inst, cd_instance_def(sj->inst).lod);
    }
    if (!(batch->budget_ms > 0.0f))
        return true;
    cd_budget_item *items = malloc(batch->count * sizeof *items);
    cd_budget_rank *ranks = malloc(batch->count * sizeof *ranks);
    if (items == NULL || ranks == NULL) {
        free(items);
        free(ranks);
        return false;
    }
    for (uint32_t i = 0; i < batch->count; i++) {
        const cd_step_job *sj = &batch->jobs[i];
        items[i].priority = cd_instance_def(sj->inst).priority;
        items[i].base = sj->level; /* the finest it can run at now */
        for (int32_t k = 0; k < CD_LOD_LEVELS; k++)
            items[i].cost[k] = cd_instance_step_cost(sj->inst, sj->dt, k);
    }
    /* The rate as the batches before this one measured it (or fixed). */
    const cd_budget_rate *rate = &server->budget_rate;
    batch->rate_ps = rate->ps;
    const uint64_t budget = cd_budget_ms_to_units(
        (double)batch->budget_ms * cd_budget_rate_target_pct(rate) / 100.0, rate->ps);
    batch->planned = cd_budget_plan(items, batch->count, budget, CD_BUDGET_FLOOR, ranks);
    for (uint32_t i = 0; i < batch->count; i++)
        batch->jobs[i].level = items[i].level;
    free(items);
    free(ranks);
    return true;
}

/* A recording journals the step with the level each instance steps at
 * (recording.c): the budget's decisions are recorded, so that a replay
 * reproduces them whatever its own batches would plan. */
static void record_step(cd_server *server, const cd_batch *batch, const cd_id *ids, float dt)
{
    if (server->recording == NULL)
        return;
    int32_t small[64];
    int32_t *levels = batch->count <= 64 ? small : malloc(batch->count * sizeof *levels);
    if (levels == NULL) {
        cd_recording_step(server, ids, NULL, batch->count, dt); /* ends the journal */
        return;
    }
    for (uint32_t i = 0; i < batch->count; i++)
        levels[i] = batch->jobs[i].level;
    cd_recording_step(server, ids, levels, batch->count, dt);
    if (levels != small)
        free(levels);
}

cd_dispatch_result cd_stepper_start(cd_conn *conn, const cJSON *req_id, float dt,
                                    float budget_ms, const cd_id *ids, uint32_t count)
{
    cd_server *server = conn->server;
    /* A large instance's step is helped by the pool's other workers. */
    const uint32_t helpers_each = cd_pool_workers(server->pool) - 1;
    uint32_t helpers = 0;
    for (uint32_t i = 0; i < count && helpers_each > 0; i++)
        if (cd_instance_help_ticket(cd_world_get(server->world, ids[i])) != 0)
            helpers += helpers_each;
    cd_batch *batch = calloc(1, sizeof *batch + (count + helpers) * sizeof(cd_step_job));
    if (batch == NULL) {
        cd_error err;
        cd_fail(&err, CD_E_INTERNAL, "step: out of memory");
        cd_conn_send_error(conn, req_id, &err);
        return CD_DISPATCH_DONE;
    }
    batch->server = server;
    batch->conn = conn;
    batch->started = uv_hrtime();
    batch->budget_ms = budget_ms;
    batch->id_text = req_id ? print_id(req_id, batch->id_int) : NULL;
    if (req_id != NULL && batch->id_text == NULL) {
        free(batch);
        cd_conn_close(conn); /* out of memory, as for any reply */
        return CD_DISPATCH_DONE;
    }
    batch->count = count;
    batch->job_count = batch->pending = count + helpers;
    __atomic_store_n(&batch->unnotified, batch->job_count, __ATOMIC_RELAXED);
    batch->next = server->batches;
    server->batches = batch;
    conn->own_batch = batch;

    const cd_vec3 wind = cd_world_global_wind(server->world);
    uint64_t work = 0;
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
    if (!plan_levels(server, batch)) {
        for (uint32_t i = 0; i < count; i++)
            cd_server_set_busy(server, ids[i], false);
        server->batches = batch->next;
        conn->own_batch = NULL;
        free_batch(batch);
        cd_error err;
        cd_fail(&err, CD_E_INTERNAL, "step: out of memory");
        cd_conn_send_error(conn, req_id, &err);
        return CD_DISPATCH_DONE;
    }
    record_step(server, batch, ids, dt);
    for (uint32_t i = 0; i < count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        prepare_frames(server, sj);
        if (work <= CD_INLINE_WORK)
            work += step_work(sj->inst, dt, sj->level);
    }
    const bool inline_batch = work <= CD_INLINE_WORK;
    uint32_t helper = count;
    for (uint32_t i = 0; i < count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        /* The ticket names the step about to start: read before the step
         * job is queued (a worker may finish it at once). */
        const uint64_t ticket = helpers > 0 ? cd_instance_help_ticket(sj->inst) : 0;
        /* Busy instances bound the jobs in flight by the pool's capacity;
         * should a submit still fail, the step runs here (same result). */
        const bool pooled = !inline_batch && cd_pool_submit(server->pool, &sj->job);
        /* Its helpers follow it in the queue: a worker free before the
         * step ends joins it, a later one finds it over and returns. */
        for (uint32_t h = 0; ticket != 0 && h < helpers_each; h++) {
            cd_step_job *hj = &batch->jobs[helper++];
            *hj = (cd_step_job){.job.run = run_step_job, .inst = sj->inst, .id = sj->id,
                                .batch = batch, .help_ticket = ticket};
            if (!pooled || !cd_pool_submit(server->pool, &hj->job))
                job_done_here(server, batch); /* never run: the step needs no helper */
        }
        if (!pooled) {
            run_step_job(&sj->job);
            job_done_here(server, batch);
        }
    }
    if (batch->pending == 0) {
        finish_batch(server, batch);
        conn->resume = false; /* its connection goes on with its next line now */
        return CD_DISPATCH_DONE;
    }
    return CD_DISPATCH_STARTED;
}

void cd_stepper_send_current(cd_conn *conn, const cd_instance *inst)
{
    const cd_frame_options *opts = cd_conn_subscription(conn, cd_instance_id(inst));
    cd_frame_buf *frame = cd_frame_buf_encode(inst, opts != NULL ? cd_frame_options_flags(opts) : 0);
    if (frame == NULL)
        return;
    cd_frame_buf *ref = NULL;
    cd_conn_send_frame(conn, opts != NULL && opts->shm ? cd_shm_reference(conn->server, frame, &ref)
                                                       : frame);
    cd_frame_buf_unref(ref);
    cd_frame_buf_unref(frame);
}

/* The new frame to every subscriber whose `every` takes it. Each form
 * (plain or quantized, with or without velocities and normals) was encoded
 * at most once, by the worker, and is shared by reference; a form nobody
 * asked for at the start is encoded here. A "shm" subscriber gets a
 * reference to the form's one copy in the shared-memory ring. */
static void fan_out(cd_server *server, cd_step_job *sj)
{
    cd_frame_buf **forms = sj->forms; /* [flags] */
    cd_frame_buf *refs[CD_FRAME_FORMS] = {NULL}; /* [flags]: in the shared-memory ring */
    cd_instance_info info;
    cd_instance_get_info(sj->inst, &info);
    for (uint32_t f = 0; f < CD_FRAME_FORMS && server->shm.map != NULL; f++) {
        if (sj->shared[f] == NULL)
            continue; /* the worker filled the form's room in the ring */
        const cd_frame_header named = {
            .version = CD_FRAME_VERSION, .flags = (uint16_t)f, .instance = info.id,
            .frame = info.frame, .time = info.time, .count = info.particles,
            .length = (uint32_t)cd_frame_size_flags(info.particles, (uint16_t)f)};
        cd_shm_ring_publish(&server->shm, sj->shared_at[f] + named.length);
        refs[f] = cd_frame_buf_alloc_shared(&named, sj->shared_at[f]);
    }
    for (cd_conn *conn = server->conns; conn != NULL; conn = conn->next) {
        const cd_frame_options *opts = cd_conn_subscription(conn, info.id);
        if (opts == NULL || info.frame % opts->every != 0 ||
            info.frame % cd_lod_frame_interval(sj->result.lod) != 0)
            continue;
        const uint16_t flags = cd_frame_options_flags(opts);
        cd_frame_buf **frame = &forms[flags];
        if (opts->shm && refs[flags] != NULL) {
            cd_conn_send_frame(conn, refs[flags]);
            continue;
        }
        if (*frame == NULL && (*frame = cd_frame_buf_encode(sj->inst, flags)) == NULL)
            continue; /* out of memory: this subscriber skips the frame */
        cd_conn_send_frame(conn, opts->shm ? cd_shm_reference(server, *frame, &refs[flags]) : *frame);
    }
    for (uint32_t f = 0; f < CD_FRAME_FORMS; f++)
        cd_frame_buf_unref(refs[f]);
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

bool cd_stepper_job_done_wakes(void)
{
    cd_batch *batch = worker_batch;
    worker_batch = NULL;
    /* After this decrement the batch may be freed at any moment. */
    return batch == NULL || __atomic_sub_fetch(&batch->unnotified, 1, __ATOMIC_ACQ_REL) == 0;
}

/* The job's references to its frames, its rooms in the shared-memory ring
 * (left unreferenced: nobody reads them) and its channel arrays (again: a
 * no-op). */
static void release_frames(cd_step_job *sj)
{
    for (uint32_t f = 0; f < CD_FRAME_FORMS; f++) {
        cd_frame_buf_unref(sj->forms[f]);
        sj->forms[f] = NULL;
        sj->shared[f] = NULL;
    }
    cd_frame_channels_free(&sj->channels);
}

static void free_batch(cd_batch *batch)
{
    for (uint32_t i = 0; i < batch->count; i++)
        release_frames(&batch->jobs[i]);
    if (batch->id_text != batch->id_int)
        free(batch->id_text);
    free(batch);
}

/* ---- the reply, printed directly ------------------------------------------ */

/* A growing line; `failed` once out of memory (everything after is dropped). */
typedef struct cd_line {
    char *text;
    size_t len, cap;
    bool failed;
} cd_line;

static bool line_room(cd_line *line, size_t more)
{
    if (line->failed)
        return false;
    if (line->len + more <= line->cap)
        return true;
    size_t cap = line->cap * 2;
    while (cap < line->len + more)
        cap *= 2;
    char *grown = realloc(line->text, cap);
    if (grown == NULL) {
        line->failed = true;
        return false;
    }
    line->text = grown;
    line->cap = cap;
    return true;
}

static void line_put(cd_line *line, const char *text, size_t n)
{
    if (line_room(line, n)) {
        memcpy(line->text + line->len, text, n);
        line->len += n;
    }
}

#define LINE_LITERAL(line, lit) line_put((line), (lit), sizeof(lit) - 1)

static void line_uint(cd_line *line, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    if (line_room(line, n))
        for (size_t i = 0; i < n; i++)
            line->text[line->len++] = digits[n - 1 - i];
}

/* A float as every float reply prints it (protocol/reply.c): "%.9g", which
 * identifies it exactly, or null when it is not finite. */
static void line_float(cd_line *line, float v)
{
    if (!isfinite(v)) {
        LINE_LITERAL(line, "null");
        return;
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%.9g", (double)v);
    if (n > 0 && (size_t)n < sizeof text)
        line_put(line, text, (size_t)n);
}

static void line_vec3(cd_line *line, cd_vec3 v)
{
    LINE_LITERAL(line, "[");
    line_float(line, v.x);
    LINE_LITERAL(line, ",");
    line_float(line, v.y);
    LINE_LITERAL(line, ",");
    line_float(line, v.z);
    LINE_LITERAL(line, "]");
}

/* The ids of the batch's jobs whose result has `unstable` (or `sleeping`). */
static void line_ids(cd_line *line, const cd_batch *batch, bool unstable)
{
    bool first = true;
    LINE_LITERAL(line, "[");
    for (uint32_t i = 0; i < batch->count; i++) {
        const cd_step_result *r = &batch->jobs[i].result;
        if (!(unstable ? r->unstable : r->sleeping))
            continue;
        if (!first)
            LINE_LITERAL(line, ",");
        line_uint(line, batch->jobs[i].id);
        first = false;
    }
    LINE_LITERAL(line, "]");
}

/* "impulses": what every coupled collider of the batch received. */
static void line_impulses(cd_line *line, const cd_batch *batch)
{
    cd_collider_impulse impulses[CD_MAX_COLLIDERS];
    bool first = true;
    LINE_LITERAL(line, "[");
    for (uint32_t i = 0; i < batch->count; i++) {
        const cd_step_job *sj = &batch->jobs[i];
        if (sj->result.unstable || sj->result.sleeping)
            continue;
        uint32_t n = cd_instance_collider_impulses(sj->inst, impulses, CD_MAX_COLLIDERS);
        for (uint32_t k = 0; k < n && k < CD_MAX_COLLIDERS; k++) {
            if (!first)
                LINE_LITERAL(line, ",");
            LINE_LITERAL(line, "{\"instance\":");
            line_uint(line, sj->id);
            LINE_LITERAL(line, ",\"collider\":");
            line_uint(line, impulses[k].collider);
            LINE_LITERAL(line, ",\"linear\":");
            line_vec3(line, impulses[k].linear);
            LINE_LITERAL(line, ",\"angular\":");
            line_vec3(line, impulses[k].angular);
            LINE_LITERAL(line, "}");
            first = false;
        }
    }
    LINE_LITERAL(line, "]");
}

/* ,"torn":[…]: the instances that tore after this step; nothing when none
 * did (replies of cloths that cannot tear are as they always were). */
static void line_torn(cd_line *line, const cd_batch *batch)
{
    bool first = true;
    for (uint32_t i = 0; i < batch->count; i++) {
        if (batch->jobs[i].torn == 0)
            continue;
        if (first)
            LINE_LITERAL(line, ",\"torn\":[");
        else
            LINE_LITERAL(line, ",");
        line_uint(line, batch->jobs[i].id);
        first = false;
    }
    if (!first)
        LINE_LITERAL(line, "]");
}

/* The budget stepped it below its own level, or it is coming back from
 * that one level a step (cd_instance_step_lod), and it moved. */
static bool is_degraded(const cd_step_job *sj)
{
    return !sj->result.unstable && !sj->result.sleeping && sj->result.degraded;
}

/* Milliseconds to 6 significant digits (a float's own digits would print
 * a budget of 0.05 as 0.0500000007). */
static void line_ms(cd_line *line, double ms)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%.6g", isfinite(ms) ? ms : 0.0);
    if (n > 0 && (size_t)n < sizeof text)
        line_put(line, text, (size_t)n);
}

/* With a budget: "budgetMs", "predictedMs" (the plan's cost at the rate
 * it was planned at), "actualMs" (from the start of the batch to now, wall
 * time) and "degraded": the instances the budget stepped at a coarser
 * level than their own, with that level. */
static void line_budget(cd_line *line, const cd_batch *batch)
{
    LINE_LITERAL(line, ",\"budgetMs\":");
    line_ms(line, batch->budget_ms);
    LINE_LITERAL(line, ",\"predictedMs\":");
    line_ms(line, cd_budget_units_to_ms(batch->planned, batch->rate_ps));
    LINE_LITERAL(line, ",\"actualMs\":");
    line_ms(line, batch->actual_ms);
    LINE_LITERAL(line, ",\"degraded\":[");
    bool first = true;
    for (uint32_t i = 0; i < batch->count; i++) {
        const cd_step_job *sj = &batch->jobs[i];
        if (!is_degraded(sj))
            continue;
        if (!first)
            LINE_LITERAL(line, ",");
        LINE_LITERAL(line, "{\"instance\":");
        line_uint(line, sj->id);
        LINE_LITERAL(line, ",\"lod\":");
        line_uint(line, (uint64_t)sj->result.lod);
        LINE_LITERAL(line, "}");
        first = false;
    }
    LINE_LITERAL(line, "]");
}

/* {"id":…,"ok":true,"unstable":[…],"sleeping":[…],"stepped":N,"impulses":[…]}
 * and its newline: the members in the order the cJSON version printed; then
 * the budget's when one applied. */
/* `warnings`: the request's, printed (NULL: none). */
static char *step_reply(const cd_batch *batch, const char *warnings, size_t *len)
{
    cd_line line = {.text = malloc(256), .cap = 256};
    if (line.text == NULL)
        return NULL;
    if (batch->id_text != NULL) {
        LINE_LITERAL(&line, "{\"id\":");
        line_put(&line, batch->id_text, strlen(batch->id_text));
        LINE_LITERAL(&line, ",\"ok\":true");
    } else {
        LINE_LITERAL(&line, "{\"ok\":true");
    }
    uint32_t stepped = 0;
    for (uint32_t i = 0; i < batch->count; i++)
        stepped += batch->jobs[i].result.unstable ? 0 : 1;
    LINE_LITERAL(&line, ",\"unstable\":");
    line_ids(&line, batch, true);
    LINE_LITERAL(&line, ",\"sleeping\":");
    line_ids(&line, batch, false);
    LINE_LITERAL(&line, ",\"stepped\":");
    line_uint(&line, stepped);
    LINE_LITERAL(&line, ",\"impulses\":");
    line_impulses(&line, batch);
    line_torn(&line, batch);
    if (batch->budget_ms > 0.0f)
        line_budget(&line, batch);
    if (warnings != NULL) {
        LINE_LITERAL(&line, ",\"warnings\":");
        line_put(&line, warnings, strlen(warnings));
    }
    LINE_LITERAL(&line, "}\n");
    if (line.failed) {
        free(line.text);
        return NULL;
    }
    *len = line.len;
    return line.text;
}

static void finish_batch(cd_server *server, cd_batch *batch)
{
    unlink_batch(server, batch);
    cd_metrics_step(server, batch->conn, batch->started, batch->count);
    /* Tearing changes the topology: between steps, on this thread (no
     * worker holds the instance any more), before the reply names it. The
     * frames the workers filled carry the state before the tear: a torn
     * instance's are dropped and encoded again here (fan_out), so its
     * subscribers' last frame has the particles its new topology names
     * (a page that drew the last frame with the new triangles found two
     * particles missing and fell back to points until the next step). */
    for (uint32_t i = 0; i < batch->count; i++) {
        cd_step_job *sj = &batch->jobs[i];
        if (!sj->result.unstable && !sj->result.sleeping &&
            (sj->torn = cd_world_tear(server->world, sj->id)) != 0)
            release_frames(sj);
    }
    batch->actual_ms = (double)(uv_hrtime() - batch->started) * 1e-6;
    if (batch->budget_ms > 0.0f) {
        uint32_t degraded = 0;
        for (uint32_t i = 0; i < batch->count; i++)
            degraded += is_degraded(&batch->jobs[i]);
        cd_metrics_budget(server, batch->budget_ms, batch->actual_ms, degraded);
        /* What this batch took per unit, for the plans after it. */
        cd_budget_rate_add(&server->budget_rate, batch->planned, batch->actual_ms);
    }
    cd_conn *conn = batch->conn;
    if (conn != NULL) {
        size_t len = 0;
        char *warnings = cd_conn_take_warnings(conn);
        char *line = step_reply(batch, warnings, &len);
        free(warnings);
        conn->own_batch = NULL;
        conn->resume = true;
        cd_conn_send_line(conn, line, len); /* NULL (out of memory) closes */
    }
    /* A sleeping instance did not move: no new frame to send. */
    for (uint32_t i = 0; i < batch->count; i++)
        if (!batch->jobs[i].result.unstable && !batch->jobs[i].result.sleeping)
            fan_out(server, &batch->jobs[i]);
    for (uint32_t i = 0; i < batch->count; i++)
        if (batch->jobs[i].torn != 0)
            cd_announce_topology(server, batch->jobs[i].inst);
    /* Only now may other requests touch (or destroy) these instances. */
    for (uint32_t i = 0; i < batch->count; i++) {
        cd_server_set_busy(server, batch->jobs[i].id, false);
        release_frames(&batch->jobs[i]);
    }
    /* Instances whose connection closed while they were being stepped. */
    cd_scenes_reap(server);
    /* A worker may not yet be through its notify for this batch. */
    if (__atomic_load_n(&batch->unnotified, __ATOMIC_ACQUIRE) == 0) {
        free_batch(batch);
    } else {
        batch->next = server->finished;
        server->finished = batch;
    }
}

/* Frees the finished batches no worker touches any more. */
static void free_finished(cd_server *server, bool all)
{
    for (cd_batch **p = &server->finished; *p != NULL;) {
        cd_batch *batch = *p;
        if (all || __atomic_load_n(&batch->unnotified, __ATOMIC_ACQUIRE) == 0) {
            *p = batch->next;
            free_batch(batch);
        } else {
            p = &batch->next;
        }
    }
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
        free_finished(server, true);
        return;
    }
    free_finished(server, false);
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
