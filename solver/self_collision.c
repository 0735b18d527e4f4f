/* Self-collision (the XPBD seed's selfDistance): unconnected particles
 * closer than self_distance push each other apart, weighted by inverse
 * mass. Particles joined by a constraint are exempt (for cloth: grid
 * neighbours within one cell and the skip-one bending partners; for soft
 * bodies: the mesh's edges), so that a sheet can lie flat instead of
 * inflating.
 *
 * As in Müller's "Ten Minute Physics" self-collision: a spatial hash of
 * dense arrays sized to the particle count is built from the current
 * positions and queried for the candidate pairs that could meet before the
 * next search: closer than self_distance plus the distance each of the two
 * can travel meanwhile. In every iteration of every substep those pairs
 * closer than self_distance are pushed apart. Travel is bounded by a
 * velocity cap while self-collision is on (integrate.c): at most half of
 * self_distance per substep, so that particles cannot jump through each
 * other between two checks. A slow cloth is searched once per step; while
 * any particle moves fast, the search is repeated every few substeps (as
 * often as every other), which keeps the reach, and so the candidates per
 * particle, small: a falling sheet whose particles all move together would
 * otherwise pair every particle with its neighbours several cells away.
 * Collision distance no larger than the rest spacing, and
 * substeps instead of continuous collision. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

/* The scalar test of a bucket's entries, for the search's loop. */
static uint32_t scalar_candidates(const cd_hash_entries *h, uint32_t e, uint32_t end,
                                  const cd_self_query *q, uint32_t *out);
#define SELF_SEARCH_FN static cd_self_found self_search
#define SELF_TEST scalar_candidates
#include "self_search.h"

static uint32_t scalar_candidates(const cd_hash_entries *h, uint32_t e, uint32_t end,
                                  const cd_self_query *q, uint32_t *out)
{
    const uint32_t stop = end - e > CD_SELF_CHUNK ? e + CD_SELF_CHUNK : end;
    uint32_t n = 0;
    for (; e < stop; e++)
        if (candidate(h, e, q))
            out[n++] = e;
    return n;
}

#define CD_PAIRS_PER_PARTICLE 48 /* candidate pairs kept per search, on average */
/* Hash entries the searches of one step may look at together, per particle
 * on average (one search looks at about 50 in a folded sheet): a bound on
 * the work of a pathological layout, such as a cloth crushed into a few
 * cells, however many times a fast cloth is searched within the step. Past
 * it the search stops, as when the pair list is full. */
#define CD_EXAMINED_PER_PARTICLE 2048

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
    const cd_constraints *c = &inst->coloured;
    for (uint32_t col = 0; col < c->colour_count; col++)
        for (uint32_t i = c->colours[col].begin; i < c->colours[col].begin + c->colours[col].count;
             i++) {
            inst->neighbour_start[c->a[i] + 1]++;
            inst->neighbour_start[c->b[i] + 1]++;
        }
    for (uint32_t i = 0; i < n; i++)
        inst->neighbour_start[i + 1] += inst->neighbour_start[i];
    uint32_t *fill = calloc(n, sizeof(uint32_t));
    if (fill == NULL)
        return false;
    for (uint32_t col = 0; col < c->colour_count; col++)
        for (uint32_t i = c->colours[col].begin; i < c->colours[col].begin + c->colours[col].count;
             i++) {
            const uint32_t a = c->a[i], b = c->b[i];
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

void cd_self_collision_release(cd_instance *inst)
{
    free(inst->hash_start);
    free(inst->hash_entries.cx); /* the block of all the entries' arrays */
    free(inst->self_move);
    free(inst->self_blocks);
    free(inst->pairs);
    free(inst->neighbour_start);
    free(inst->neighbours);
    inst->self_blocks = NULL;
    inst->hash_start = NULL;
    inst->hash_entries = (cd_hash_entries){0};
    inst->self_move = NULL;
    inst->pairs = NULL;
    inst->neighbour_start = inst->neighbours = NULL;
    inst->pair_count = inst->pair_cap = 0;
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
    /* One block for the entries' arrays, its padding zeroed: the AVX2
     * test reads it (and drops what it finds there). */
    const size_t per = (size_t)inst->particle_count + CD_HASH_PAD;
    char *block = calloc(CD_HASH_ARRAYS * per, sizeof(float));
    if (block != NULL) {
        _Static_assert(sizeof(int32_t) == sizeof(float) && sizeof(uint32_t) == sizeof(float),
                       "every field is 4 bytes");
        cd_hash_entries *h = &inst->hash_entries;
        h->cx = (int32_t *)(void *)block;
        h->cy = h->cx + per;
        h->cz = h->cy + per;
        h->particle = (uint32_t *)(void *)(h->cz + per);
        h->px = (float *)(void *)(h->particle + per);
        h->py = h->px + per;
        h->pz = h->py + per;
        h->move = h->pz + per;
    }
    inst->self_move = malloc(sizeof(float) * inst->particle_count);
    inst->self_blocks = malloc(sizeof(cd_self_found) * cd_particle_blocks(inst));
    inst->pair_cap = CD_PAIRS_PER_PARTICLE * inst->particle_count;
    inst->pairs = malloc(sizeof(uint32_t) * 2u * inst->pair_cap);
    if (inst->hash_start == NULL || inst->hash_entries.cx == NULL || inst->self_move == NULL ||
        inst->self_blocks == NULL || inst->pairs == NULL)
        return false;
    if (!cd_is_grid(inst))
        return build_neighbours(inst);
    return true;
}

size_t cd_self_collision_memory(const cd_instance *inst)
{
    if (inst->hash_start == NULL)
        return 0;
    const size_t n = inst->particle_count;
    size_t bytes = ((size_t)inst->hash_size + 1) * sizeof(uint32_t) +
                   (n + CD_HASH_PAD) * CD_HASH_ARRAYS * sizeof(float) + n * sizeof(float) +
                   cd_particle_blocks(inst) * sizeof(cd_self_found) +
                   (size_t)inst->pair_cap * 2 * sizeof(uint32_t);
    if (inst->neighbour_start != NULL)
        bytes += (n + 1 + 2 * (size_t)inst->constraint_count) * sizeof(uint32_t);
    return bytes;
}

/* Buckets the particles by cell (a counting sort). Each entry keeps its
 * cell, so that a query skips the other cells hashed to the same bucket. */
static void build_hash(cd_instance *inst, const cd_grid *g)
{
    const uint32_t n = inst->particle_count, size = inst->hash_size;
    uint32_t *start = inst->hash_start;
    memset(start, 0, sizeof(uint32_t) * (size + 1));
    for (uint32_t i = 0; i < n; i++) {
        const float *p = &inst->pos[3 * i];
        start[hash_cell(cell_of(g, 0, p[0]), cell_of(g, 1, p[1]), cell_of(g, 2, p[2]), size)]++;
    }
    /* start[h] becomes the end of bucket h, then its start. */
    for (uint32_t h = 1; h <= size; h++)
        start[h] += start[h - 1];
    const cd_hash_entries *h = &inst->hash_entries;
    for (uint32_t i = n; i-- > 0;) { /* so each bucket holds its particles in order */
        const float *p = &inst->pos[3 * i];
        const int32_t x = cell_of(g, 0, p[0]), y = cell_of(g, 1, p[1]), z = cell_of(g, 2, p[2]);
        const uint32_t e = --start[hash_cell(x, y, z, size)];
        h->cx[e] = x;
        h->cy[e] = y;
        h->cz[e] = z;
        h->particle[e] = i;
        h->px[e] = p[0];
        h->py[e] = p[1];
        h->pz[e] = p[2];
        h->move[e] = inst->self_move[i];
    }
}

/* Records every particle's last-substep move and the bounding box of the
 * positions (lo, hi); returns the largest move. */
static float record_moves(cd_instance *inst, float lo[3], float hi[3])
{
    const float *p = inst->pos, *q = inst->prev;
    float *move = inst->self_move;
    float largest = 0.0f;
    for (int a = 0; a < 3; a++) {
        lo[a] = INFINITY;
        hi[a] = -INFINITY;
    }
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        const float dx = p[3 * i] - q[3 * i], dy = p[3 * i + 1] - q[3 * i + 1],
                    dz = p[3 * i + 2] - q[3 * i + 2];
        move[i] = sqrtf(dx * dx + dy * dy + dz * dz);
        largest = move[i] > largest ? move[i] : largest;
        for (int a = 0; a < 3; a++) {
            lo[a] = p[3 * i + a] < lo[a] ? p[3 * i + a] : lo[a];
            hi[a] = p[3 * i + a] > hi[a] ? p[3 * i + a] : hi[a];
        }
    }
    return largest;
}

/* Particles [begin, end) searched on the process's path. */
static cd_self_found search_range(const cd_instance *inst, const cd_self_search *s,
                                  uint32_t begin, uint32_t end, uint32_t *out, uint32_t room,
                                  uint64_t budget)
{
#ifdef CD_HAVE_AVX2_KERNELS
    if (cd_solver_path_has_avx2())
        return cd_self_search_avx2(inst, s, begin, end, out, room, budget);
#endif
    return self_search(inst, s, begin, end, out, room, budget);
}

/* The search's pairs and statistics become the instance's. */
static void take_found(cd_instance *inst, cd_self_found got)
{
    inst->pair_count = got.pairs;
    inst->self_stats.examined += got.used;
    inst->self_stats.pairs += got.pairs;
    if (got.stop != CD_SELF_DONE)
        inst->self_stats.overflows++; /* out of budget or room: the rest wait for the next search */
    inst->self_budget = got.stop == CD_SELF_OUT_OF_BUDGET ? 0 : inst->self_budget - got.used;
}

/* A team searches blocks of particles at once, each into its own share of
 * the pair list and with twice its share of the budget. */
typedef struct team_search {
    const cd_self_search *search;
    uint32_t room;   /* pairs per block */
    uint64_t budget; /* entries per block */
} team_search;

static void search_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const team_search *t = ctx;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    inst->self_blocks[block] = search_range(inst, t->search, begin, end,
                                            inst->pairs + 2 * (size_t)block * t->room, t->room,
                                            t->budget);
}

/* A large instance's search, its blocks shared by the team's threads. The
 * result must be the serial search's to the bit, so the blocks' pairs are
 * joined in block order, which is particle order. That holds only when
 * no block stopped early and all of them together stayed within the
 * budget (then the serial search would not have stopped either); else
 * this returns false and the caller searches serially, as a crowd's
 * pathological search always did. */
static bool search_as_a_team(cd_instance *inst, const cd_self_search *s)
{
    const uint32_t blocks = cd_particle_blocks(inst);
    const team_search t = {.search = s, .room = inst->pair_cap / blocks,
                           .budget = inst->self_budget / blocks * 2};
    cd_team_run(inst, search_block, &t, blocks);
    uint64_t used = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        if (inst->self_blocks[b].stop != CD_SELF_DONE)
            return false;
        used += inst->self_blocks[b].used;
    }
    if (used > inst->self_budget)
        return false;
    uint32_t pairs = 0;
    for (uint32_t b = 0; b < blocks; b++) { /* to the left, in order: never over a later block */
        const uint32_t got = inst->self_blocks[b].pairs;
        memmove(inst->pairs + 2 * (size_t)pairs, inst->pairs + 2 * (size_t)b * t.room,
                sizeof(uint32_t) * 2u * got);
        pairs += got;
    }
    take_found(inst, (cd_self_found){.pairs = pairs, .stop = CD_SELF_DONE, .used = used});
    return true;
}

int cd_stage_find_self_pairs(cd_instance *inst, int remaining)
{
    const float d = inst->def.self_distance;
    /* How many substeps these pairs serve: as many as the fastest particle
     * needs to travel about d (at least 1, at most the rest of the step),
     * so that the reach stays within 3 d however fast the cloth moves. A
     * settled cloth is searched once per step, a falling one every other
     * substep (the velocity cap of integrate.c bounds a move to d / 2).
     *
     * A particle's travel over those k substeps is estimated as its last
     * move times k, with a margin of half as much again plus 0.1 d for
     * acceleration, within the cap. A pair is kept only when its two
     * particles could meet: closer than d plus their two travels, so slow
     * particles (most of a pile) keep few pairs. */
    inst->self_stats.searches++;
    inst->pair_count = 0;
    float lo[3], hi[3];
    const float fastest = 1.5f * record_moves(inst, lo, hi);
    float extent = 0.0f;
    for (int a = 0; a < 3; a++)
        extent = fmaxf(extent, hi[a] - lo[a]);
    if (!(extent < INFINITY) || !(fastest < INFINITY))
        return remaining; /* a blow-up: no pairs; the guard restores the step */
    int k = remaining;
    if (fastest * (float)remaining > 1.5f * d)
        k = (int)(1.5f * d / fastest);
    k = k < 1 ? 1 : k;
    const float scale = 1.5f * (float)k, margin = 0.1f * d, cap = 0.5f * d * (float)k;
    const float travel_max = fminf(fastest * (float)k + margin, cap);
    const float reach = d + 2.0f * travel_max;
    const float cell = fmaxf(reach, extent / CD_MAX_CELLS_PER_AXIS);
    const cd_grid grid = {.origin = {lo[0], lo[1], lo[2]}, .inv = 1.0f / cell};
    build_hash(inst, &grid);
    /* The step's budget, shared by its searches (the first one refills it). */
    if (remaining == inst->step_substeps)
        inst->self_budget = (uint64_t)CD_EXAMINED_PER_PARTICLE * inst->particle_count;
    const cd_self_search search = {.grid = grid, .d = d, .scale = scale, .margin = margin,
                                   .cap = cap, .travel_max = travel_max, .k = k};
    if (inst->team == NULL || !search_as_a_team(inst, &search))
        take_found(inst, search_range(inst, &search, 0, inst->particle_count, inst->pairs,
                                      inst->pair_cap, inst->self_budget));
    return k;
}

cd_self_collision_stats cd_instance_self_collision_stats(const cd_instance *inst)
{
    return inst->self_stats;
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
