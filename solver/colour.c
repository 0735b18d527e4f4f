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

bool cd_colour_constraints(cd_instance *inst)
{
    cd_constraints *out = &inst->coloured;
    const uint32_t n = inst->particle_count, m = inst->constraint_count;
    uint64_t *mask = malloc(sizeof(uint64_t) * (n ? n : 1));
    uint32_t *colour_of = malloc(sizeof(uint32_t) * (m ? m : 1));
    uint32_t group_colours[CD_GROUP_COUNT];
    uint32_t *sizes = NULL;
    bool ok = mask != NULL && colour_of != NULL;

    /* Colour every group, then count the slots each colour needs. */
    uint32_t total = 0;
    for (int g = 0; ok && g < CD_GROUP_COUNT; g++) {
        const cd_group *gr = &inst->groups[g];
        group_colours[g] = colour_group(inst->constraints, gr->begin, gr->end, n, mask,
                                        colour_of + gr->begin);
        total += group_colours[g];
    }
    free(mask);
    if (ok) {
        sizes = calloc(total ? total : 1, sizeof(uint32_t));
        out->colours = malloc(sizeof(cd_colour) * (total ? total : 1));
        ok = sizes != NULL && out->colours != NULL;
    }
    uint32_t slots = 0;
    if (ok) {
        uint32_t first = 0;
        for (int g = 0; g < CD_GROUP_COUNT; g++) {
            cd_group *gr = &inst->groups[g];
            for (uint32_t i = gr->begin; i < gr->end; i++)
                sizes[first + colour_of[i]]++;
            gr->colour_begin = first;
            gr->colour_end = first + group_colours[g];
            first += group_colours[g];
        }
        for (uint32_t k = 0; k < total; k++) {
            out->colours[k] = (cd_colour){.begin = slots, .count = sizes[k]};
            slots += pad(sizes[k]);
        }
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
        memset(sizes, 0, sizeof(uint32_t) * (total ? total : 1)); /* fill counts */
        for (int g = 0; g < CD_GROUP_COUNT; g++) {
            const cd_group *gr = &inst->groups[g];
            for (uint32_t i = gr->begin; i < gr->end; i++) {
                const uint32_t k = gr->colour_begin + colour_of[i];
                const uint32_t slot = out->colours[k].begin + sizes[k]++;
                out->a[slot] = inst->constraints[i].a;
                out->b[slot] = inst->constraints[i].b;
                out->rest[slot] = inst->constraints[i].rest;
            }
        }
        free(inst->constraints);
        inst->constraints = NULL;
    }
    free(sizes);
    free(colour_of);
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
