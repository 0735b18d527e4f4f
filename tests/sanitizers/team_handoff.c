/* One large instance stepped by several threads (solver/team.c) under
 * ThreadSanitizer: `make e2e-tsan` and `make check` build it with
 * -fsanitize=thread. A plain program, as pool_handoff.c is (Criterion's
 * runner cannot start under TSan).
 *
 * A 96 x 96 curtain (9,216 particles: a team of blocks) with a pinned top
 * row, tethers, self-collision, a ball with friction and aerodynamic wind
 * is stepped 40 times on a 4-worker pool, each step's job followed by 3
 * helper jobs, as the server queues them; then a twin is stepped alone on this thread.
 * Blocks write plain (non-atomic) positions on whichever thread claims
 * them, so any missing happens-before between a stage and the next, or a
 * step and its helpers, is a race TSan reports; the two final position
 * arrays must also be equal byte for byte. Exits 0 when clean. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../server/pool.h"
#include "../../solver/solver.h"

enum { SIDE = 96, STEPS = 40, HELPERS = 3 };
static const float DT = 1.0f / 60.0f;

typedef struct team_job {
    cd_job job;
    cd_instance *inst;
    uint64_t ticket; /* 0: the step itself */
} team_job;

static void run(cd_job *job)
{
    team_job *tj = (team_job *)job;
    const cd_vec3 still = {0, 0, 0};
    if (tj->ticket == 0)
        (void)cd_instance_step(tj->inst, DT, still);
    else
        (void)cd_instance_help_step(tj->inst, tj->ticket);
}

static cd_instance *curtain(cd_world *world)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = SIDE;
    def.spacing = 0.02f;
    def.origin = (cd_vec3){-0.95f, 2.2f, 0.0f};
    def.wind_model = CD_WIND_AERO;
    def.sleep_threshold = 0.0f;
    def.self_distance = 0.016f; /* its pair searches run in blocks too */
    cd_id id = 0;
    if (cd_world_create_cloth(world, &def, &id) != CD_OK)
        return NULL;
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t x = 0; x < SIDE; x += 5)
        cd_instance_pin(inst, x, NULL);
    cd_collider_def ball = cd_default_collider_def(CD_COLLIDER_SPHERE);
    ball.position = (cd_vec3){0.0f, 1.2f, 0.3f};
    ball.radius = 0.4f;
    ball.friction = 0.3f;
    cd_id cid;
    cd_instance_add_collider(inst, &ball, &cid);
    cd_instance_set_wind(inst, (cd_vec3){2.0f, 0.0f, 1.5f});
    return inst;
}

int main(void)
{
    cd_world_def wdef = cd_default_world_def();
    cd_world *world = cd_world_create(&wdef);
    cd_pool *pool = cd_pool_create(HELPERS + 1, 8, NULL, NULL);
    cd_instance *shared = world ? curtain(world) : NULL;
    cd_instance *alone = world ? curtain(world) : NULL;
    if (pool == NULL || shared == NULL || alone == NULL) {
        fprintf(stderr, "team_handoff: cannot set up\n");
        return 1;
    }
    uint64_t helped = 0;
    for (int step = 0; step < STEPS; step++) {
        team_job jobs[HELPERS + 1];
        cd_job *list[HELPERS + 1];
        const uint64_t ticket = cd_instance_help_ticket(shared);
        for (int k = 0; k <= HELPERS; k++) {
            jobs[k] = (team_job){.job = {.run = run}, .inst = shared, .ticket = k ? ticket : 0};
            list[k] = &jobs[k].job;
        }
        cd_pool_run_batch(pool, list, HELPERS + 1);
        helped += ticket != 0;
        const cd_vec3 still = {0, 0, 0};
        (void)cd_instance_step(alone, DT, still);
    }
    const size_t bytes = sizeof(float) * 3 * SIDE * SIDE;
    /* The same steps: the same anchor, so the local positions compare. */
    const int same = memcmp(cd_instance_local_positions(shared), cd_instance_local_positions(alone),
                            bytes) == 0;
    printf("team_handoff: %d steps of a %dx%d curtain with %d helpers each (%llu helped), "
           "positions %s\n",
           STEPS, SIDE, SIDE, HELPERS, (unsigned long long)helped,
           same ? "equal to a lone step's" : "DIFFER");
    cd_pool_destroy(pool);
    cd_world_destroy(world);
    return same && helped == STEPS ? 0 : 1;
}
