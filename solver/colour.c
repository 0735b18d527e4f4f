/* Graph colouring of the distance constraints, at build time.
 *
 * Each group (stretch, shear, bend) is coloured on its own, greedily in the
 * builders' array order: a constraint takes the first colour that has no
 * constraint on either of its particles. Within a colour no two
 * constraints share a particle, so the kernels may project 8 of them at
 * once and store their corrections lane by lane; colours run one after the
 * other, so it is still Gauss-Seidel (projecting a colour's constraints
 * together gives what projecting them one by one gives: they are
 * independent). A constraint keeps its array order inside its colour.
 *
 * The cloth builder already emits each family in colour order, so for a
 * grid the greedy colouring reproduces its order exactly (4 colours per
 * group: the same projections in the same sequence as before colouring).
 * An arbitrary mesh gets at most 2 x (largest vertex degree) - 1 colours
 * per group.
 *
 * Colours are found 64 at a time (one bit per colour in a per-particle
 * mask); constraints that find none of the 64 free wait for the next round
 * of 64, so any degree is handled. Tetrahedra are coloured likewise
 * (cd_colour_tets). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ROUND_COLOURS 64u

static uint32_t pad(uint32_t n)
{
    return (n + CD_LANES - 1) / CD_LANES * CD_LANES;
}

static void *aligned_array(size_t count, size_t size)
{
    size_t bytes = count * size;
    bytes = (bytes + 31u) / 32u * 32u;
    return aligned_alloc(32, bytes ? bytes : 32);
}

/* Colours constraints [begin, end) of `c`: colour_of[i - begin] gets the
 * group-local colour; returns the number of colours. `mask` holds n words. */
static uint32_t colour_group(const cd_distance *c, uint32_t begin, uint32_t end, uint32_t n,
                             uint64_t *mask, uint32_t *colour_of)
{
    const uint32_t m = end - begin;
    uint32_t left = m, colours = 0;
    for (uint32_t i = 0; i < m; i++)
        colour_of[i] = UINT32_MAX;
    for (uint32_t round = 0; left > 0; round++) {
        memset(mask, 0, sizeof(uint64_t) * n);
        for (uint32_t i = 0; i < m; i++) {
            if (colour_of[i] != UINT32_MAX)
                continue;
            const uint32_t a = c[begin + i].a, b = c[begin + i].b;
            const uint64_t taken = mask[a] | mask[b];
            if (taken == UINT64_MAX)
                continue; /* the next round */
            const uint32_t bit = (uint32_t)__builtin_ctzll(~taken);
            mask[a] |= 1ull << bit;
            mask[b] |= 1ull << bit;
            colour_of[i] = round * ROUND_COLOURS + bit;
            if (colour_of[i] + 1 > colours)
                colours = colour_of[i] + 1;
            left--;
        }
    }
    return colours;
}

/* Parts of a large instance (one with a team: team.c), as Jolt splits a
 * soft body's constraints into update groups: particles are cut into
 * `parts` ranges of consecutive indices (a grid's bands of rows), a
 * constraint with both ends in one range belongs to that part, any other
 * to the boundary. Parts share no particle, so a team solves them side by
 * side, each part's colours one after the other on one thread, and only
 * the small boundary waits for all of them: one wait per iteration
 * instead of one per colour (about 12 for a grid), and each part's
 * particles stay in one core's cache through its colours. The parts are
 * fixed by the instance, never by the threads, so the positions are the
 * same bits on 1 or N workers (and on each SIMD path: the scalar one runs
 * the same sequence). */
#define CD_PART_PARTICLES 4096u /* particles a part: 2 parts at least, CD_PARTS_MAX at most */
#define CD_PARTS_MAX 8u
/* A mesh whose numbering is not spatial would put most constraints on
 * the boundary, which one thread solves: it keeps the whole-colour
 * stages instead. */
#define CD_BOUNDARY_MAX_SHARE 8u /* at most 1/8 of the constraints */

static uint32_t part_of(uint32_t particle, uint32_t n, uint32_t parts)
{
    return (uint32_t)((uint64_t)particle * parts / n);
}

/* How many parts, and each constraint's (parts for the boundary). */
static uint32_t choose_parts(const cd_instance *inst, uint32_t *part)
{
    const uint32_t n = inst->particle_count, m = inst->constraint_count;
    if (inst->team == NULL) {
        memset(part, 0, sizeof(uint32_t) * m);
        return 0;
    }
    uint32_t parts = n / CD_PART_PARTICLES;
    parts = parts < CD_PARTS_MAX ? parts : CD_PARTS_MAX;
    parts = parts < 2 ? 2 : parts; /* from the team's smallest instance on */
    uint32_t boundary = 0;
    for (uint32_t i = 0; i < m; i++) {
        const uint32_t pa = part_of(inst->constraints[i].a, n, parts),
                       pb = part_of(inst->constraints[i].b, n, parts);
        part[i] = pa == pb ? pa : parts;
        boundary += pa != pb;
    }
    if (boundary > m / CD_BOUNDARY_MAX_SHARE) {
        memset(part, 0, sizeof(uint32_t) * m);
        return 0;
    }
    return parts;
}

bool cd_colour_constraints(cd_instance *inst)
{
    cd_constraints *out = &inst->coloured;
    const uint32_t n = inst->particle_count, m = inst->constraint_count;
    uint64_t *mask = malloc(sizeof(uint64_t) * (n ? n : 1));
    uint32_t *colour_of = malloc(sizeof(uint32_t) * (m ? m : 1));
    uint32_t *part = malloc(sizeof(uint32_t) * (m ? m : 1));
    uint32_t group_colours[CD_GROUP_COUNT], key_first[CD_GROUP_COUNT + 1];
    uint32_t *sizes = NULL, *colour_of_key = NULL;
    bool ok = mask != NULL && colour_of != NULL && part != NULL;

    /* Colour every group; a colour's constraints are then split by part:
     * key (group, part, colour), the keys of a group part-major. */
    const uint32_t parts = ok ? choose_parts(inst, part) : 0;

    const uint32_t span = parts + 1; /* parts and the boundary, or 1 */
    key_first[0] = 0;
    for (int g = 0; ok && g < CD_GROUP_COUNT; g++) {
        const cd_group *gr = &inst->groups[g];
        group_colours[g] = colour_group(inst->constraints, gr->begin, gr->end, n, mask,
                                        colour_of + gr->begin);
        key_first[g + 1] = key_first[g] + span * group_colours[g];
    }
    free(mask);
    const uint32_t keys = ok ? key_first[CD_GROUP_COUNT] : 0;
    if (ok) {
        for (int g = 0; g < CD_GROUP_COUNT; g++)
            for (uint32_t i = inst->groups[g].begin; i < inst->groups[g].end; i++)
                colour_of[i] = key_first[g] + part[i] * group_colours[g] + colour_of[i];
        sizes = calloc(keys ? keys : 1, sizeof(uint32_t));
        colour_of_key = malloc(sizeof(uint32_t) * (keys ? keys : 1));
        out->colours = malloc(sizeof(cd_colour) * (keys ? keys : 1));
        out->part_colour = parts ? malloc(sizeof(uint32_t) * (CD_GROUP_COUNT * span + 1)) : NULL;
        ok = sizes != NULL && colour_of_key != NULL && out->colours != NULL &&
             (parts == 0 || out->part_colour != NULL);
    }
    uint32_t slots = 0;
    if (ok) {
        for (int g = 0; g < CD_GROUP_COUNT; g++)
            for (uint32_t i = inst->groups[g].begin; i < inst->groups[g].end; i++)
                sizes[colour_of[i]]++;
        /* Empty keys (a part without a group's colour) take no colour. */
        uint32_t total = 0;
        for (int g = 0; g < CD_GROUP_COUNT; g++) {
            cd_group *gr = &inst->groups[g];
            gr->colour_begin = total;
            for (uint32_t k = key_first[g]; k < key_first[g + 1]; k++) {
                if (parts && (k - key_first[g]) % group_colours[g] == 0)
                    out->part_colour[g * span + (k - key_first[g]) / group_colours[g]] = total;
                colour_of_key[k] = total;
                if (sizes[k] == 0)
                    continue;
                out->colours[total++] = (cd_colour){.begin = slots, .count = sizes[k]};
                slots += pad(sizes[k]);
            }
            gr->colour_end = total;
            if (parts && group_colours[g] == 0)
                for (uint32_t p = 0; p < span; p++)
                    out->part_colour[g * span + p] = total;
        }
        if (parts)
            out->part_colour[CD_GROUP_COUNT * span] = total;
        out->part_count = parts;
        out->colour_count = total;
        out->slots = slots;
        out->a = aligned_array(slots, sizeof(uint32_t));
        out->b = aligned_array(slots, sizeof(uint32_t));
        out->rest = aligned_array(slots, sizeof(float));
        out->lambda = aligned_array(slots, sizeof(float));
        ok = out->a && out->b && out->rest && out->lambda;
    }
    if (ok) {
        /* Inert padding: particle 0 to itself, never stored back. */
        memset(out->a, 0, sizeof(uint32_t) * slots);
        memset(out->b, 0, sizeof(uint32_t) * slots);
        memset(out->rest, 0, sizeof(float) * slots);
        memset(out->lambda, 0, sizeof(float) * slots);
        memset(sizes, 0, sizeof(uint32_t) * (keys ? keys : 1)); /* fill counts */
        for (int g = 0; g < CD_GROUP_COUNT; g++)
            for (uint32_t i = inst->groups[g].begin; i < inst->groups[g].end; i++) {
                const uint32_t k = colour_of[i];
                const uint32_t slot = out->colours[colour_of_key[k]].begin + sizes[k]++;
                out->a[slot] = inst->constraints[i].a;
                out->b[slot] = inst->constraints[i].b;
                out->rest[slot] = inst->constraints[i].rest;
            }
        free(inst->constraints);
        inst->constraints = NULL;
    }
    free(sizes);
    free(colour_of_key);
    free(colour_of);
    free(part);
    return ok;
}

/* Tetrahedra (a soft body's material, material.c) the same way: a tet
 * takes the first colour none of whose tets shares one of its 4 vertices,
 * 64 colours a round. */
uint32_t cd_colour_tets(const uint32_t *tets, uint32_t count, uint32_t vertex_count,
                        uint32_t *order, cd_colour *colours)
{
    uint64_t *mask = malloc(sizeof(uint64_t) * (vertex_count ? vertex_count : 1));
    uint32_t *colour_of = malloc(sizeof(uint32_t) * (count ? count : 1));
    if (mask == NULL || colour_of == NULL) {
        free(mask);
        free(colour_of);
        return 0;
    }
    uint32_t left = count, total = 0;
    for (uint32_t t = 0; t < count; t++)
        colour_of[t] = UINT32_MAX;
    for (uint32_t round = 0; left > 0; round++) {
        memset(mask, 0, sizeof(uint64_t) * vertex_count);
        for (uint32_t t = 0; t < count; t++) {
            if (colour_of[t] != UINT32_MAX)
                continue;
            const uint32_t *q = &tets[4 * t];
            const uint64_t taken = mask[q[0]] | mask[q[1]] | mask[q[2]] | mask[q[3]];
            if (taken == UINT64_MAX)
                continue; /* the next round */
            const uint32_t bit = (uint32_t)__builtin_ctzll(~taken);
            for (int k = 0; k < 4; k++)
                mask[q[k]] |= 1ull << bit;
            colour_of[t] = round * ROUND_COLOURS + bit;
            total = colour_of[t] + 1 > total ? colour_of[t] + 1 : total;
            left--;
        }
    }
    free(mask);
    for (uint32_t k = 0; k < total; k++)
        colours[k] = (cd_colour){.begin = 0, .count = 0};
    for (uint32_t t = 0; t < count; t++)
        colours[colour_of[t]].count++;
    for (uint32_t k = 1; k < total; k++)
        colours[k].begin = colours[k - 1].begin + colours[k - 1].count;
    for (uint32_t k = 0; k < total; k++)
        colours[k].count = 0; /* fill counts */
    for (uint32_t t = 0; t < count; t++) {
        cd_colour *c = &colours[colour_of[t]];
        order[c->begin + c->count++] = t;
    }
    free(colour_of);
    return total;
}
