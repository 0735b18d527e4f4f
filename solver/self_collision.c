/* Self-collision (the XPBD seed's selfDistance): unconnected particles
 * closer than self_distance push each other apart, weighted by inverse
 * mass. Particles joined by a constraint are exempt (for cloth: grid
 * neighbours within one cell and the skip-one bending partners; for soft
 * bodies: the mesh's edges), so that a sheet can lie flat instead of
 * inflating.
 *
 * As in Müller's "Ten Minute Physics" self-collision: once per step, a
 * spatial hash of dense arrays sized to the particle count is built from
 * the positions at the step's start and queried for the candidate pairs
 * closer than reach = self_distance + 2 x (the distance a particle can
 * travel in the step); in every substep those pairs closer than
 * self_distance are pushed apart. Travel is bounded by a velocity cap
 * while self-collision is on (integrate.c): at most half of self_distance
 * per substep, so that particles cannot jump through each other between
 * two checks. Collision distance no larger than the rest spacing, and
 * substeps instead of continuous collision. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

#define CD_PAIRS_PER_PARTICLE 48 /* candidate pairs kept per step, on average */

static uint32_t hash_cell(int32_t x, int32_t y, int32_t z, uint32_t size)
{
    uint32_t h = (uint32_t)x * 92837111u ^ (uint32_t)y * 689287499u ^ (uint32_t)z * 283923481u;
    return h & (size - 1);
}

static int32_t cell_of(float v, float inv_cell)
{
    return (int32_t)floorf(v * inv_cell);
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : (x > y);
}

/* Soft bodies: every particle's edge neighbours, sorted. */
static bool build_neighbours(cd_instance *inst)
{
    const uint32_t n = inst->particle_count, m = inst->constraint_count;
    inst->neighbour_start = calloc(n + 1, sizeof(uint32_t));
    inst->neighbours = malloc(sizeof(uint32_t) * 2u * (m ? m : 1));
    if (inst->neighbour_start == NULL || inst->neighbours == NULL)
        return false;
    for (uint32_t c = 0; c < m; c++) {
        inst->neighbour_start[inst->constraints[c].a + 1]++;
        inst->neighbour_start[inst->constraints[c].b + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        inst->neighbour_start[i + 1] += inst->neighbour_start[i];
    uint32_t *fill = calloc(n, sizeof(uint32_t));
    if (fill == NULL)
        return false;
    for (uint32_t c = 0; c < m; c++) {
        uint32_t a = inst->constraints[c].a, b = inst->constraints[c].b;
        inst->neighbours[inst->neighbour_start[a] + fill[a]++] = b;
        inst->neighbours[inst->neighbour_start[b] + fill[b]++] = a;
    }
    free(fill);
    for (uint32_t i = 0; i < n; i++)
        qsort(&inst->neighbours[inst->neighbour_start[i]],
              inst->neighbour_start[i + 1] - inst->neighbour_start[i], sizeof(uint32_t),
              compare_u32);
    return true;
}

bool cd_self_collision_reserve(cd_instance *inst)
{
    if (inst->hash_start != NULL)
        return true;
    uint32_t size = 1;
    while (size < 2 * inst->particle_count)
        size <<= 1;
    inst->hash_size = size;
    inst->hash_start = calloc(size + 1, sizeof(uint32_t));
    inst->hash_entries = malloc(sizeof(uint32_t) * inst->particle_count);
    inst->pair_cap = CD_PAIRS_PER_PARTICLE * inst->particle_count;
    inst->pairs = malloc(sizeof(uint32_t) * 2u * inst->pair_cap);
    if (inst->hash_start == NULL || inst->hash_entries == NULL || inst->pairs == NULL)
        return false;
    if (inst->type == CD_INSTANCE_SOFTBODY)
        return build_neighbours(inst);
    return true;
}

/* Joined by a constraint, hence exempt. */
static bool connected(const cd_instance *inst, uint32_t i, uint32_t j)
{
    if (inst->type == CD_INSTANCE_CLOTH) {
        const int32_t w = inst->width;
        int32_t dx = (int32_t)(i % (uint32_t)w) - (int32_t)(j % (uint32_t)w);
        int32_t dy = (int32_t)(i / (uint32_t)w) - (int32_t)(j / (uint32_t)w);
        int32_t ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
        return (ax <= 1 && ay <= 1) || (ax == 2 && ay == 0) || (ax == 0 && ay == 2);
    }
    const uint32_t *b = &inst->neighbours[inst->neighbour_start[i]];
    const uint32_t *e = &inst->neighbours[inst->neighbour_start[i + 1]];
    for (; b < e; b++)
        if (*b == j)
            return true;
    return false;
}

static void build_hash(cd_instance *inst, float cell)
{
    inst->hash_cell = cell;
    const float inv = 1.0f / cell;
    const uint32_t n = inst->particle_count, size = inst->hash_size;
    uint32_t *start = inst->hash_start;
    memset(start, 0, sizeof(uint32_t) * (size + 1));
    for (uint32_t i = 0; i < n; i++) {
        const float *p = &inst->pos[3 * i];
        start[hash_cell(cell_of(p[0], inv), cell_of(p[1], inv), cell_of(p[2], inv), size)]++;
    }
    /* Counting sort: start[h] becomes the end of bucket h, then its start. */
    for (uint32_t h = 1; h <= size; h++)
        start[h] += start[h - 1];
    for (uint32_t i = n; i-- > 0;) {
        const float *p = &inst->pos[3 * i];
        uint32_t h = hash_cell(cell_of(p[0], inv), cell_of(p[1], inv), cell_of(p[2], inv), size);
        inst->hash_entries[--start[h]] = i;
    }
}

/* How far particle i may travel in this step: its last substep's move
 * times the substeps, with a margin for acceleration, within the cap. */
static float travel_of(const cd_instance *inst, uint32_t i, float substeps, float cap)
{
    const float *p = &inst->pos[3 * i], *q = &inst->prev[3 * i];
    const float dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
    float t = sqrtf(dx * dx + dy * dy + dz * dz) * substeps * 1.5f + 0.1f * inst->def.self_distance;
    return t < cap ? t : cap;
}

void cd_stage_find_self_pairs(cd_instance *inst, float dt, float h)
{
    const float d = inst->def.self_distance;
    /* The velocity cap bounds a particle's travel over the step; the hash
     * cell covers the fastest particle, while each pair is kept only when
     * its two particles could actually meet: closer than d plus their own
     * travels. Slow particles (most of a pile) keep few pairs. */
    const float substeps = dt / h;
    const float cap = 0.5f * d * substeps;
    const float travel = fminf(inst->last_speed * dt * 1.5f + 0.1f * d, cap);
    const float reach = d + 2.0f * travel;
    build_hash(inst, reach);
    const float inv = 1.0f / reach;
    const uint32_t size = inst->hash_size;
    const float *pos = inst->pos;
    inst->pair_count = 0;
    (void)cell_of;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        /* The cell is as large as the reach, so every neighbour within it
         * lies in the 2x2x2 block of cells around the particle's corner. */
        int32_t lo[3];
        for (int a = 0; a < 3; a++) {
            float f = pos[3 * i + a] * inv;
            lo[a] = (int32_t)floorf(f - 0.5f);
        }
        uint32_t seen[8];
        int nseen = 0;
        for (int32_t z = lo[2]; z <= lo[2] + 1; z++)
            for (int32_t y = lo[1]; y <= lo[1] + 1; y++)
                for (int32_t x = lo[0]; x <= lo[0] + 1; x++) {
                    uint32_t b = hash_cell(x, y, z, size);
                    bool dup = false;
                    for (int k = 0; k < nseen && !dup; k++)
                        dup = seen[k] == b; /* two cells, one bucket */
                    if (dup)
                        continue;
                    seen[nseen++] = b;
                    for (uint32_t e = inst->hash_start[b]; e < inst->hash_start[b + 1]; e++) {
                        const uint32_t j = inst->hash_entries[e];
                        if (j <= i) /* each pair once */
                            continue;
                        const float dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1],
                                    dz = pos[3 * j + 2] - pos[3 * i + 2];
                        const float meet = d + travel_of(inst, i, substeps, cap) +
                                           travel_of(inst, j, substeps, cap);
                        if (dx * dx + dy * dy + dz * dz >= meet * meet || connected(inst, i, j))
                            continue;
                        if (inst->pair_count == inst->pair_cap)
                            return; /* full: the farthest-down pairs wait a step */
                        inst->pairs[2 * inst->pair_count] = i;
                        inst->pairs[2 * inst->pair_count + 1] = j;
                        inst->pair_count++;
                    }
                }
    }
}

void cd_stage_self_collide(cd_instance *inst)
{
    const float d = inst->def.self_distance;
    float *pos = inst->pos;
    const float *w = inst->inv_mass;
    for (uint32_t k = 0; k < inst->pair_count; k++) {
        const uint32_t i = inst->pairs[2 * k], j = inst->pairs[2 * k + 1];
        float *pi = &pos[3 * i], *pj = &pos[3 * j];
        const float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        const float wsum = w[i] + w[j];
        if (d2 >= d * d || !(d2 > 1e-18f) || wsum == 0.0f)
            continue;
        const float dist = sqrtf(d2);
        const float s = (d - dist) / dist / wsum;
        cd_move_pair(pi, pj, dx, dy, dz, s * w[i], s * w[j]);
    }
}
