/* The garment bench (issue 14): what a cape on a walking character costs
 * per step, beside a 45 x 45 grid of about the same particle count with the
 * same body, self-collision and settings (pinned along its top instead of
 * skinned), and what one `skin` update of the cape costs: the solver's
 * cd_instance_skin, and the JSON request as the server parses it.
 *
 * Samples alternate between the two scenes (the machine is shared and
 * noisy: compare the ratio), each the median of 7 runs of 120 steps after
 * 60 steps of warm-up. Prints one line per figure. */
#include <stdio.h>
#include <time.h>

#include "../protocol/protocol.h"
#include "garment.h"

#define WARMUP 60
#define STEPS 120
#define SAMPLES 7

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare);
    return v[n / 2];
}

/* The grid beside it: 45 x 45 at 2 cm, pinned along its top row, the same
 * 8 capsules (the body standing still), the same self-collision. */
static cd_instance *grid_scene(cd_world *world, const garment_scene *g, float self_distance)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 45;
    def.spacing = GARMENT_S;
    def.mass = 0.8f;
    def.origin = (cd_vec3){-0.44f, 1.35f, -0.2f};
    def.self_distance = self_distance;
    def.thickness = 0.01f;
    def.sleep_threshold = 0.0f; /* a standing sheet would sleep and cost nothing */
    cd_id id;
    if (cd_world_create_cloth_ex(world, &def, &id, NULL) != CD_OK)
        return NULL;
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t x = 0; x < 45; x++)
        cd_instance_pin(inst, x, NULL);
    uint32_t bones[GARMENT_BONES];
    static const char *const names[GARMENT_BONES] = {"torso", "hips", "leftLeg", "rightLeg"};
    for (int b = 0; b < GARMENT_BONES; b++)
        cd_instance_set_transform(inst, names[b], (cd_vec3){0, b == 0 ? 1.1f : 0.75f, 0},
                                  (cd_quat){0, 0, 0, 1}, &bones[b]);
    for (int k = 0; k < 8; k++) {
        cd_collider_def c = g->body[k];
        c.attachment = bones[k < 4 ? (k == 1 ? 1 : 0) : 2 + (k % 2)];
        cd_id cid;
        cd_instance_add_collider(inst, &c, &cid);
    }
    return inst;
}

static double time_garment(garment_scene *g)
{
    const double t0 = now();
    for (int s = 0; s < STEPS; s++) {
        cd_instance_step(g->inst, 1.0f / 60.0f, (cd_vec3){0, 0, 0});
        garment_move(g);
    }
    return (now() - t0) / STEPS;
}

static double time_grid(cd_instance *inst)
{
    const double t0 = now();
    for (int s = 0; s < STEPS; s++)
        cd_instance_step(inst, 1.0f / 60.0f, (cd_vec3){0, 0, 0});
    return (now() - t0) / STEPS;
}

/* One skin update: the solver's call alone, and the JSON line parsed as
 * the server parses it (flat positions and normals, 9 significant digits). */
static void time_skin(garment_scene *g, double *solver_us, double *json_us, size_t *bytes)
{
    const int reps = 200;
    double t0 = now();
    for (int r = 0; r < reps; r++)
        cd_instance_skin(g->inst, g->skin, g->normal, NULL);
    *solver_us = 1e6 * (now() - t0) / reps;

    size_t cap = 64 + (size_t)g->vertices * 6 * 18;
    char *line = malloc(cap);
    size_t n = (size_t)snprintf(line, cap, "{\"cmd\":\"skin\",\"instance\":1,\"positions\":[");
    for (int part = 0; part < 2; part++) {
        const float *v = part ? g->normal : g->skin;
        for (uint32_t i = 0; i < 3 * g->vertices; i++)
            n += (size_t)snprintf(line + n, cap - n, "%s%.9g", i ? "," : "", (double)v[i]);
        n += (size_t)snprintf(line + n, cap - n, part ? "]}" : "],\"normals\":[");
    }
    *bytes = n;
    const cd_limits lim = cd_default_limits();
    t0 = now();
    for (int r = 0; r < reps / 10; r++) {
        cd_request req;
        cd_error err;
        cd_request_parse(line, n, &lim, &req, &err);
        cd_request_free(&req);
    }
    *json_us = 1e6 * (now() - t0) / (reps / 10);
    free(line);
}

/* Cape and grid, alternating; median us per step of each. */
static bool compare_scenes(float self_distance, double *cape_us, double *grid_us,
                           garment_scene *keep)
{
    cd_world_def wd = cd_default_world_def();
    cd_world *world = cd_world_create(&wd);
    garment_scene g;
    if (world == NULL || !garment_create(world, &g, self_distance))
        return false;
    cd_instance *grid = grid_scene(world, &g, self_distance);
    if (grid == NULL)
        return false;
    for (int s = 0; s < WARMUP; s++) {
        cd_instance_step(g.inst, 1.0f / 60.0f, (cd_vec3){0, 0, 0});
        garment_move(&g);
        cd_instance_step(grid, 1.0f / 60.0f, (cd_vec3){0, 0, 0});
    }
    double cape[SAMPLES], sheet[SAMPLES];
    for (int k = 0; k < SAMPLES; k++) {
        cape[k] = time_garment(&g);
        sheet[k] = time_grid(grid);
    }
    *cape_us = 1e6 * median(cape, SAMPLES);
    *grid_us = 1e6 * median(sheet, SAMPLES);
    if (keep != NULL) {
        *keep = g; /* the world stays for the skin timing */
        return true;
    }
    garment_free(&g);
    cd_world_destroy(world);
    return true;
}

int main(void)
{
    garment_scene g;
    double cape_us, grid_us, plain_cape_us, plain_grid_us;
    if (!compare_scenes(0.0f, &plain_cape_us, &plain_grid_us, NULL) ||
        !compare_scenes(0.8f * GARMENT_S, &cape_us, &grid_us, &g)) {
        fprintf(stderr, "bench_garment: a scene was refused\n");
        return 1;
    }
    double skin_us, json_us;
    size_t bytes;
    time_skin(&g, &skin_us, &json_us, &bytes);
    printf("simd path: %s\n", cd_solver_simd_path());
    printf("cape: %u vertices, %u triangles, 8 capsules, skinned: %.1f us/step; with "
           "self-collision %.1f us/step\n",
           g.vertices, cd_instance_triangles(g.inst, NULL, 0), plain_cape_us, cape_us);
    printf("grid: 45 x 45 = 2025 particles, pinned, the same body: %.1f us/step; with "
           "self-collision %.1f us/step\n",
           plain_grid_us, grid_us);
    printf("cape / grid: %.2f; with self-collision %.2f\n", plain_cape_us / plain_grid_us,
           cape_us / grid_us);
    printf("skin update, solver (cd_instance_skin, %u vertices with normals): %.1f us\n",
           g.vertices, skin_us);
    printf("skin update, JSON request (%zu bytes) parsed: %.1f us\n", bytes, json_us);
    garment_free(&g);
    return 0;
}
