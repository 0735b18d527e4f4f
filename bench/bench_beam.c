/* A cantilever of the box generator against Euler-Bernoulli (issue 10;
 * solver/material.c): a 1 x 0.1 x 0.1 m beam of 1000 kg/m^3, cells across
 * its depth, 10 x as many along, its x = 0 face pinned, bending under its
 * own weight. Prints the free end's mean deflection over w L^4 / (8 E I)
 * once at rest, and the thread CPU of a step and of one tet's solve.
 *
 *   bench_beam                 the sweep of bench/README.md (make bench-beam)
 *   bench_beam CELLS WIDE E NU HZ SUBSTEPS ITERATIONS SECONDS RETENTION
 *
 * Each run takes a few seconds to a minute of one core. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../solver/solver.h"

typedef struct beam_run {
    unsigned cells, wide;
    float youngs, nu;
    float hz;
    int substeps, iterations;
    float seconds, retention;
} beam_run;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run(const beam_run *r)
{
    const float len = 1.0f, depth = 0.1f, rho = 1000.0f, g = 9.81f;
    cd_world_def wd = cd_default_world_def();
    cd_world *world = cd_world_create(&wd);
    cd_tet_mesh m;
    if (world == NULL || cd_mesh_box((cd_vec3){0, -0.5f * depth, -0.5f * depth},
                                     (cd_vec3){len, depth, depth}, 10 * r->cells, r->cells,
                                     r->wide, &m) != CD_OK)
        return 1;
    cd_cloth_def d = cd_default_softbody_options();
    d.mass = rho * len * depth * depth;
    d.youngs_modulus = r->youngs;
    d.poisson_ratio = r->nu;
    d.substeps = r->substeps;
    d.solver_iterations = r->iterations;
    d.velocity_retention = r->retention;
    d.sleep_threshold = 0.0f;
    d.tethers = false;
    cd_id id;
    if (cd_world_create_softbody(world, &m, &d, &id) != CD_OK)
        return 1;
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t i = 0; i < m.vertex_count; i++)
        if (m.vertices[3 * i] < 1e-6f)
            cd_instance_pin(inst, i, NULL);
    const double inertia = (double)depth * depth * depth * depth / 12.0;
    const double beam = (double)rho * g * depth * depth * len * len * len * len /
                        (8.0 * r->youngs * inertia);
    const float dt = 1.0f / r->hz;
    const int steps = (int)(r->seconds * r->hz + 0.5f);
    double spent = 0.0, tip = 0.0;
    int unstable = 0;
    for (int s = 1; s <= steps; s++) {
        const double t0 = cpu_now();
        unstable |= cd_instance_step(inst, dt, (cd_vec3){0, 0, 0}).unstable;
        spent += cpu_now() - t0;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < m.vertex_count; i++)
        if (m.vertices[3 * i] > len - 1e-4f) {
            tip -= cd_instance_position(inst, i).y;
            k++;
        }
    tip /= k;
    const double per_step = spent / steps;
    printf("BEAM {\"cells\":%u,\"wide\":%u,\"E\":%g,\"nu\":%g,\"hz\":%g,\"substeps\":%d,"
           "\"iterations\":%d,\"seconds\":%g,\"particles\":%u,\"tets\":%u,\"unstable\":%d,"
           "\"tip_m\":%.5f,\"beam_m\":%.5f,\"ratio\":%.4f,\"ms_per_step\":%.3f,"
           "\"ns_per_tet_pass\":%.1f}\n",
           r->cells, r->wide, r->youngs, r->nu, r->hz, r->substeps, r->iterations, r->seconds,
           m.vertex_count, m.tet_count, unstable, tip, beam, tip / beam, 1e3 * per_step,
           1e9 * per_step / ((double)r->substeps * r->iterations * m.tet_count));
    fflush(stdout);
    cd_mesh_free(&m);
    cd_world_destroy(world);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 10) {
        const beam_run r = {(unsigned)atoi(argv[1]), (unsigned)atoi(argv[2]), strtof(argv[3], NULL),
                            strtof(argv[4], NULL), strtof(argv[5], NULL), atoi(argv[6]),
                            atoi(argv[7]), strtof(argv[8], NULL), strtof(argv[9], NULL)};
        return run(&r);
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [CELLS WIDE E NU HZ SUBSTEPS ITERATIONS SECONDS RETENTION]\n",
                argv[0]);
        return 2;
    }
    /* Converged (twice the iterations moves the tip < 1%), then the same
     * beams at the soft-body default budget (2 x 8 at 60 Hz). */
    static const beam_run sweep[] = {
        {1, 1, 3e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},  {2, 1, 3e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},
        {2, 1, 6e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},  {3, 1, 3e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},
        {4, 1, 3e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},  {4, 1, 3e7f, 0.3f, 120, 64, 16, 0.4f, 1e-12f},
        {5, 1, 3e7f, 0.3f, 120, 64, 10, 0.4f, 1e-12f}, {6, 1, 3e7f, 0.3f, 120, 64, 12, 0.4f, 1e-12f},
        {4, 4, 3e7f, 0.3f, 120, 64, 8, 0.4f, 1e-12f},  {1, 1, 3e7f, 0.3f, 60, 2, 8, 2.0f, 1e-12f},
        {4, 1, 3e7f, 0.3f, 60, 2, 8, 2.0f, 1e-12f},    {4, 1, 3e7f, 0.3f, 60, 8, 8, 2.0f, 1e-12f},
    };
    for (size_t k = 0; k < sizeof sweep / sizeof sweep[0]; k++)
        if (run(&sweep[k]) != 0)
            return 1;
    return 0;
}
