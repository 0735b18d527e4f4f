/* Small helpers shared by the solver's Criterion suites: a world, a cloth,
 * a particle's position. Everything here is static inline so each test file
 * takes only what it uses. */
#ifndef CLOTHD_TESTS_SOLVER_FIXTURES_H
#define CLOTHD_TESTS_SOLVER_FIXTURES_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../solver/solver.h"

/* The server's fixed step. */
#define FX_DT (1.0f / 60.0f)
#define FX_G 9.81

static inline cd_vec3 fx_v3(float x, float y, float z)
{
    return (cd_vec3){x, y, z};
}

static inline cd_vec3 fx_no_wind(void)
{
    return (cd_vec3){0.0f, 0.0f, 0.0f};
}

static inline cd_world *fx_world(void)
{
    cd_world_def def = cd_default_world_def();
    cd_world *world = cd_world_create(&def);
    cr_assert_not_null(world, "the default world def is valid");
    return world;
}

static inline cd_instance *fx_cloth(cd_world *world, const cd_cloth_def *def)
{
    cd_id id = 0;
    cd_status st = cd_world_create_cloth(world, def, &id);
    cr_assert_eq(st, CD_OK, "cloth def accepted (%s)", cd_status_name(st));
    cd_instance *inst = cd_world_get(world, id);
    cr_assert_not_null(inst);
    return inst;
}

/* FNV-1a, 64-bit, over a byte range: positions hashed for bit-identity. */
static inline uint64_t fx_fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The seed's stepping, one substep of 4 iterations (clothd's default until
 * issue 10 made small automatic substeps the default): the mechanics tests
 * that count what one step or one pass does are written in it. */
static inline cd_cloth_def fx_seed_def(void)
{
    cd_cloth_def d = cd_default_cloth_def();
    d.substeps = 1;
    d.solver_iterations = 4;
    return d;
}

/* A grid particle's mass as the builder lumps it (solver/options.c): a
 * third of each adjacent triangle, the grid's cells split tl-bl-tr and
 * tr-bl-br, so a cell hands its tl and br corners one sixth of its mass
 * and its bl and tr corners two. */
static inline double fx_grid_mass(uint32_t w, uint32_t h, double total, uint32_t i)
{
    const uint32_t x = i % w, y = i / w;
    const bool left = x > 0, right = x + 1 < w, up = y > 0, below = y + 1 < h;
    const int sixths = (left && up) * 1 + (right && up) * 2 + (left && below) * 2 +
                       (right && below) * 1;
    return total * sixths / (6.0 * (w - 1) * (h - 1));
}

static inline cd_vec3 fx_pos(const cd_instance *inst, uint32_t i)
{
    return cd_instance_position(inst, i);
}

static inline double fx_dist(cd_vec3 a, cd_vec3 b)
{
    double dx = (double)a.x - b.x, dy = (double)a.y - b.y, dz = (double)a.z - b.z;
    return sqrt(dx * dx + dy * dy + dz * dz);
}

/* Copies an instance's positions into `out` (3 floats per particle). */
static inline void fx_snapshot(const cd_instance *inst, float *out)
{
    cd_instance_copy_positions(inst, out);
}

/* True when the positions (world) are those in `world`, bit for bit. */
static inline bool fx_same_positions(const cd_instance *inst, const float *world)
{
    const size_t n = 3u * cd_instance_particle_count(inst);
    float *now = malloc(sizeof(float) * (n ? n : 1));
    cd_instance_copy_positions(inst, now);
    const bool same = memcmp(now, world, sizeof(float) * n) == 0;
    free(now);
    return same;
}

/* True when every coordinate is finite. */
static inline bool fx_all_finite(const cd_instance *inst)
{
    const float *p = cd_instance_local_positions(inst);
    for (uint32_t i = 0; i < 3u * cd_instance_particle_count(inst); i++)
        if (!isfinite(p[i]))
            return false;
    return true;
}

#endif
