/* The self-collision search's loop over the particles (self_collision.c
 * says what it keeps and why), with the helpers it shares with the rest of
 * self_collision.c. Compiled twice: self_collision.c includes it with the
 * scalar test of a bucket's entries, self_collision_avx2.c with the AVX2
 * one, so that on AVX2 the test is inlined into the loop and its
 * broadcasts leave the loop (as a call per bucket, it cost more than the
 * test itself: a particle looks at 8 buckets of a few entries each).
 *
 * Before including it, define SELF_SEARCH_FN as the function's head
 * without its parameters (`static cd_self_found self_search`) and SELF_TEST as the
 * test: SELF_TEST(h, e, end, q, out) puts the indices of the candidates
 * among the entries [e, min(end, e + CD_SELF_CHUNK)) into out, in order,
 * and returns how many. Both tests keep the same candidates, so both
 * loops keep the same pairs in the same order. */
#ifndef CLOTHD_SOLVER_SELF_SEARCH_H
#define CLOTHD_SOLVER_SELF_SEARCH_H

#include <math.h>

#include "internal.h"

/* Cell coordinates stay below 2^20 across the instance's bounding box, so
 * they are exact in a float and never overflow, whatever selfDistance or
 * the spread of the particles. */
#define CD_MAX_CELLS_PER_AXIS 1048576.0f

static inline uint32_t hash_cell(int32_t x, int32_t y, int32_t z, uint32_t size)
{
    uint32_t h = (uint32_t)x * 92837111u ^ (uint32_t)y * 689287499u ^ (uint32_t)z * 283923481u;
    return h & (size - 1);
}

/* Clamped, so that a coordinate a little outside the box (a reach beyond
 * its edge) stays a small integer, and a NaN (a blow-up in progress, which
 * the guard will undo) is a valid one. */
static inline int32_t cell_of(const cd_grid *g, int axis, float v)
{
    const float f = floorf((v - g->origin[axis]) * g->inv);
    if (!(f > -2.0f))
        return -2;
    return f > CD_MAX_CELLS_PER_AXIS + 2.0f ? (int32_t)CD_MAX_CELLS_PER_AXIS + 2 : (int32_t)f;
}

/* A grid's particles joined by a constraint are exempt: those within one
 * cell, and the skip-one bending partners. Of those after i, the index
 * differences j - i (the search pairs i only with later particles), or
 * -1 where i has none (at the sheet's edge): (1, 0), (2, 0), (-1, 1),
 * (0, 1), (1, 1) and (0, 2) in (dx, dy). Given i's column, a difference
 * is one (dx, dy), so j is joined to i exactly when j - i is one of them. */
static inline void grid_joined(const cd_instance *inst, uint32_t i, int32_t joined[CD_SELF_JOINED])
{
    static const int8_t offsets[CD_SELF_JOINED][2] = {{1, 0}, {2, 0}, {-1, 1},
                                                      {0, 1}, {1, 1}, {0, 2}};
    const int32_t w = inst->width, x = (int32_t)(i % (uint32_t)w);
    for (int k = 0; k < CD_SELF_JOINED; k++) {
        const int32_t dx = offsets[k][0], dy = offsets[k][1];
        joined[k] = x + dx >= 0 && x + dx < w ? dy * w + dx : -1;
    }
}

/* A mesh's or soft body's particles joined by a constraint (its edges)
 * are exempt. */
static inline bool mesh_connected(const cd_instance *inst, uint32_t i, uint32_t j)
{
    const uint32_t *b = &inst->neighbours[inst->neighbour_start[i]];
    const uint32_t *e = &inst->neighbours[inst->neighbour_start[i + 1]];
    for (; b < e; b++)
        if (*b == j)
            return true;
    return false;
}

/* Is entry e a candidate of q's particle i: a later particle (each pair
 * once), in the cell looked at (not another one hashed to the same
 * bucket), not joined to i on a grid, that could meet i before the next
 * search. The AVX2 test does the same IEEE operations
 * (self_collision_avx2.c). */
static inline bool candidate(const cd_hash_entries *h, uint32_t e, const cd_self_query *q)
{
    if (h->particle[e] <= q->i || h->cx[e] != q->x || h->cy[e] != q->y || h->cz[e] != q->z)
        return false;
    const int32_t delta = (int32_t)(h->particle[e] - q->i);
    for (int k = 0; k < CD_SELF_JOINED; k++)
        if (delta == q->joined[k])
            return false;
    const float dx = h->px[e] - q->xi, dy = h->py[e] - q->yi, dz = h->pz[e] - q->zi;
    const float d2 = dx * dx + dy * dy + dz * dz;
    if (d2 >= q->reach_i_max * q->reach_i_max)
        return false;
    const float meet = q->reach_i + fminf(h->move[e] * q->scale + q->margin, q->cap);
    return d2 < meet * meet;
}

#endif

/* The loop itself, once per includer: particles [begin, end), their pairs
 * into out (room for `room`), looking at no more than `budget` hash
 * entries; it stops at the bucket that would exceed the budget, or at
 * the pair for which there is no room. */
SELF_SEARCH_FN(const cd_instance *inst, const cd_self_search *s, uint32_t begin, uint32_t end,
               uint32_t *out, uint32_t room, uint64_t budget)
{
    const uint32_t size = inst->hash_size;
    const float *pos = inst->pos, *move = inst->self_move;
    const cd_hash_entries *h = &inst->hash_entries;
    const cd_grid *grid = &s->grid;
    const bool on_grid = cd_is_grid(inst);
    const float scale = s->scale, margin = s->margin, cap = s->cap;
    cd_self_found got = {.pairs = 0, .stop = CD_SELF_DONE, .used = 0};
    for (uint32_t i = begin; i < end; i++) {
        cd_self_query q = {.i = i, .xi = pos[3 * i], .yi = pos[3 * i + 1], .zi = pos[3 * i + 2],
                           .scale = scale, .margin = margin, .cap = cap};
        q.reach_i = s->d + fminf(move[i] * scale + margin, cap);
        q.reach_i_max = q.reach_i + s->travel_max;
        if (on_grid)
            grid_joined(inst, i, q.joined);
        else
            for (int c = 0; c < CD_SELF_JOINED; c++)
                q.joined[c] = -1; /* a mesh's neighbours are looked up below */
        /* The cells that the box of half-side reach_i_max around the
         * particle touches: no more than 3 a side, as the cells are at
         * least as large as the reach, and 2 for most slow particles. */
        const int32_t x0 = cell_of(grid, 0, q.xi - q.reach_i_max),
                      x1 = cell_of(grid, 0, q.xi + q.reach_i_max);
        const int32_t y0 = cell_of(grid, 1, q.yi - q.reach_i_max),
                      y1 = cell_of(grid, 1, q.yi + q.reach_i_max);
        const int32_t z0 = cell_of(grid, 2, q.zi - q.reach_i_max),
                      z1 = cell_of(grid, 2, q.zi + q.reach_i_max);
        for (q.z = z0; q.z <= z1; q.z++)
            for (q.y = y0; q.y <= y1; q.y++)
                for (q.x = x0; q.x <= x1; q.x++) {
                    const uint32_t b = hash_cell(q.x, q.y, q.z, size);
                    const uint32_t first = inst->hash_start[b], last = inst->hash_start[b + 1];
                    if (last - first > budget - got.used) {
                        got.stop = CD_SELF_OUT_OF_BUDGET; /* a pathological crowd */
                        return got;
                    }
                    got.used += last - first;
                    for (uint32_t e = first; e < last; e += CD_SELF_CHUNK) {
                        uint32_t found[CD_SELF_CHUNK];
                        const uint32_t count = SELF_TEST(h, e, last, &q, found);
                        for (uint32_t f = 0; f < count; f++) {
                            const uint32_t j = h->particle[found[f]];
                            if (!on_grid && mesh_connected(inst, i, j))
                                continue;
                            if (got.pairs == room) {
                                got.stop = CD_SELF_OUT_OF_ROOM;
                                return got;
                            }
                            out[2 * got.pairs] = i;
                            out[2 * got.pairs + 1] = j;
                            got.pairs++;
                        }
                    }
                }
    }
    return got;
}
