/* Mesh cloth construction: particles at the mesh's vertices, constraints
 * derived from its edges, mass by triangle area.
 *
 *   structural  every edge but a quad's diagonal          stretch group
 *   shear       a quad's diagonal edge, and the distance   shear group
 *               between the two vertices across it
 *   bending     through each vertex, between the far ends   bend group
 *               of two structural edges within 30 degrees
 *               of a straight line (NvCloth's cooker)
 *
 * "A quad's diagonal": the edge is the longest edge of both of its
 * triangles and the distance across it is within 25% of its own length,
 * the shape of two triangles an artist's quad was split into. A rectangle
 * triangulated like the grid then gets exactly the grid's table
 * (structural, both diagonals, skip-one bending; in another order), and
 * hangs like it (tests/test_solver_mesh_cloth.c); a mesh of any other
 * shape gets bending along every nearly straight line of edges, three
 * through each vertex of an even triangulation. Distances rather than
 * dihedral angles keep the one kernel (its colours, its SIMD path) for
 * every constraint; DESIGN.md has the measurements.
 *
 * Mass is lumped by area: a third of each triangle's share of the total
 * mass goes to each of its corners. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

#define QUAD_DIAGONALS_WITHIN 0.25f
/* Two edges out of a vertex at least 150 degrees apart make a straight
 * line for bending: cos 150 degrees. */
#define STRAIGHT_COS (-0.8660254f)

static cd_vec3 rest_of(const cd_instance *inst, uint32_t i)
{
    return cd_v3_load(&inst->rest[3 * i]);
}

static float rest_distance(const cd_instance *inst, uint32_t a, uint32_t b)
{
    return cd_v3_length(cd_v3_sub(rest_of(inst, b), rest_of(inst, a)));
}

/* True when `e` is the longest edge of triangle t (whose third vertex is
 * `across`), strictly. */
static bool longest_in(const cd_instance *inst, const cd_mesh_edge *e, uint32_t across)
{
    const float l = rest_distance(inst, e->a, e->b);
    return l > rest_distance(inst, e->a, across) && l > rest_distance(inst, e->b, across);
}

static bool quad_diagonal(const cd_instance *inst, const cd_mesh_edge *e)
{
    if (e->triangles != 2 || !longest_in(inst, e, e->across[0]) ||
        !longest_in(inst, e, e->across[1]))
        return false;
    const float l = rest_distance(inst, e->a, e->b);
    const float other = rest_distance(inst, e->across[0], e->across[1]);
    return fabsf(other - l) <= QUAD_DIAGONALS_WITHIN * l;
}

static cd_distance link(const cd_instance *inst, uint32_t a, uint32_t b)
{
    return (cd_distance){.a = a, .b = b, .rest = rest_distance(inst, a, b), .lambda = 0.0f};
}

static int compare_pairs(const void *pa, const void *pb)
{
    const uint32_t *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* The bending pairs: for each structural edge (v, a), the structural edge
 * (v, b) most nearly opposite, when within 30 degrees of a straight line;
 * (a, b) as a sorted pair, each once, in increasing order. Uses the edge
 * graph (edge_start, edge_to: every edge, diagonals included, which are
 * skipped, as are the shortcuts). Returns how many (at most 2 per edge) in *out (malloc'd). */
static uint32_t bending_pairs(const cd_instance *inst, const cd_mesh_edge *edges,
                              const uint8_t *diagonal, const uint8_t *kind_to, uint32_t count,
                              uint32_t **out)
{
    uint32_t *pairs = malloc(sizeof(uint32_t) * 4u * (count ? count : 1));
    if (pairs == NULL)
        return UINT32_MAX;
    uint32_t n = 0;
    for (uint32_t e = 0; e < count; e++) {
        if (diagonal[e])
            continue;
        for (int end = 0; end < 2; end++) {
            const uint32_t v = end ? edges[e].b : edges[e].a, a = end ? edges[e].a : edges[e].b;
            const cd_vec3 va = cd_v3_normalize_or(cd_v3_sub(rest_of(inst, a), rest_of(inst, v)),
                                                  cd_v3(0, 0, 0));
            float best = STRAIGHT_COS;
            uint32_t partner = UINT32_MAX;
            for (uint32_t k = inst->edge_start[v]; k < inst->edge_start[v + 1]; k++) {
                const uint32_t b = inst->edge_to[k];
                if (b == a || kind_to[k] != 0) /* structural edges only */
                    continue;
                const cd_vec3 vb = cd_v3_normalize_or(
                    cd_v3_sub(rest_of(inst, b), rest_of(inst, v)), cd_v3(0, 0, 0));
                const float c = cd_v3_dot(va, vb);
                if (c <= best) { /* ties: the last in the list, a fixed order */
                    best = c;
                    partner = b;
                }
            }
            if (partner != UINT32_MAX) {
                pairs[2 * n] = a < partner ? a : partner;
                pairs[2 * n + 1] = a < partner ? partner : a;
                n++;
            }
        }
    }
    qsort(pairs, n, 2 * sizeof(uint32_t), compare_pairs);
    uint32_t unique = 0;
    for (uint32_t i = 0; i < n; i++)
        if (unique == 0 || compare_pairs(&pairs[2 * i], &pairs[2 * (unique - 1)]) != 0) {
            pairs[2 * unique] = pairs[2 * i];
            pairs[2 * unique + 1] = pairs[2 * i + 1];
            unique++;
        }
    *out = pairs;
    return unique;
}

/* Fills the builders' list group by group; returns how many. */
static uint32_t emit_constraints(cd_instance *inst, const cd_mesh_edge *edges, uint32_t count,
                                 const uint8_t *diagonal, const uint32_t *bends,
                                 uint32_t bend_count)
{
    cd_distance *c = inst->constraints;
    cd_group *g = inst->groups;
    uint32_t n = 0;
    g[CD_GROUP_STRETCH].begin = n;
    for (uint32_t e = 0; e < count; e++)
        if (!diagonal[e])
            c[n++] = link(inst, edges[e].a, edges[e].b);
    g[CD_GROUP_STRETCH].end = g[CD_GROUP_SHEAR].begin = n;
    for (uint32_t e = 0; e < count; e++)
        if (diagonal[e]) {
            c[n++] = link(inst, edges[e].a, edges[e].b);
            c[n++] = link(inst, edges[e].across[0], edges[e].across[1]);
        }
    g[CD_GROUP_SHEAR].end = g[CD_GROUP_BEND].begin = n;
    for (uint32_t i = 0; i < bend_count; i++)
        c[n++] = link(inst, bends[2 * i], bends[2 * i + 1]);
    g[CD_GROUP_BEND].end = n;
    return n;
}

/* The mesh as a graph (CSR) for the tethers' search (pins.c) and the
 * bending pairs: every edge, and the shortcut across every edge two
 * triangles share (the straight line over both), so that distances along
 * the graph are within 8% of straight lines over flat cloth (the octile
 * metric of a grid with both diagonals) instead of 41% (edges alone, one
 * diagonal per cell). *kind_to (malloc'd) tells each entry: 0 a
 * structural edge, 1 a quad's diagonal, 2 a shortcut. */
static bool build_edge_graph(cd_instance *inst, uint32_t n, const cd_mesh_edge *edges,
                             uint32_t count, const uint8_t *diagonal, uint8_t **kind_to)
{
    uint32_t links = 0;
    for (uint32_t e = 0; e < count; e++)
        links += edges[e].triangles == 2 ? 2 : 1;
    inst->edge_start = calloc((size_t)n + 1, sizeof(uint32_t));
    inst->edge_to = malloc(sizeof(uint32_t) * 2u * links);
    inst->edge_length = malloc(sizeof(float) * 2u * links);
    inst->geodesic = malloc(sizeof(float) * n);
    inst->heap = malloc(sizeof(cd_heap_entry) * (n + 2u * (size_t)links));
    *kind_to = malloc(2u * links);
    uint32_t *fill = calloc(n, sizeof(uint32_t));
    bool ok = inst->edge_start && inst->edge_to && inst->edge_length && inst->geodesic &&
              inst->heap && *kind_to && fill;
    if (ok) {
        for (uint32_t e = 0; e < count; e++) {
            inst->edge_start[edges[e].a + 1]++;
            inst->edge_start[edges[e].b + 1]++;
            if (edges[e].triangles == 2) {
                inst->edge_start[edges[e].across[0] + 1]++;
                inst->edge_start[edges[e].across[1] + 1]++;
            }
        }
        for (uint32_t i = 0; i < n; i++)
            inst->edge_start[i + 1] += inst->edge_start[i];
        for (uint32_t e = 0; e < count; e++)
            for (int k = 0; k < (edges[e].triangles == 2 ? 2 : 1); k++) {
                const uint32_t ends[2] = {k ? edges[e].across[0] : edges[e].a,
                                          k ? edges[e].across[1] : edges[e].b};
                const float l = rest_distance(inst, ends[0], ends[1]);
                for (int j = 0; j < 2; j++) {
                    const uint32_t slot = inst->edge_start[ends[j]] + fill[ends[j]]++;
                    inst->edge_to[slot] = ends[1 - j];
                    inst->edge_length[slot] = l;
                    (*kind_to)[slot] = k ? 2 : diagonal[e];
                }
            }
    }
    free(fill);
    return ok;
}

/* Frees what cd_mesh_cloth_derive builds. */
static void free_derived(cd_instance *inst)
{
    free(inst->edge_start);
    free(inst->edge_to);
    free(inst->edge_length);
    free(inst->geodesic);
    free(inst->heap);
    inst->edge_start = inst->edge_to = NULL;
    inst->edge_length = inst->geodesic = NULL;
    inst->heap = NULL;
    cd_constraints *c = &inst->coloured;
    free(c->a);
    free(c->b);
    free(c->rest);
    free(c->lambda);
    free(c->colours);
    free(c->part_colour);
    free(c->compliance_scale);
    *c = (cd_constraints){0};
}

bool cd_mesh_cloth_derive(cd_instance *inst)
{
    const uint32_t n = inst->particle_count, m = inst->triangle_count;
    uint32_t edge_count = 0, non_manifold = 0, bend_count = 0;
    free_derived(inst);
    cd_mesh_edge *edges = cd_tri_mesh_edges(inst->triangles, m, &edge_count, &non_manifold);
    uint8_t *diagonal = edges ? calloc(edge_count ? edge_count : 1, 1) : NULL;
    uint8_t *kind_to = NULL;
    uint32_t *bends = NULL;
    bool ok = edges && diagonal;
    for (uint32_t e = 0; ok && e < edge_count; e++)
        diagonal[e] = quad_diagonal(inst, &edges[e]);
    ok = ok && build_edge_graph(inst, n, edges, edge_count, diagonal, &kind_to);
    if (ok) {
        bend_count = bending_pairs(inst, edges, diagonal, kind_to, edge_count, &bends);
        ok = bend_count != UINT32_MAX;
    }
    uint32_t constraints = bend_count;
    for (uint32_t e = 0; ok && e < edge_count; e++)
        constraints += diagonal[e] ? 2 : 1;
    if (ok) {
        free(inst->constraints);
        inst->constraint_count = constraints;
        inst->constraints = malloc(sizeof(cd_distance) * (constraints ? constraints : 1));
        ok = inst->constraints != NULL;
    }
    if (ok) {
        uint32_t emitted = emit_constraints(inst, edges, edge_count, diagonal, bends, bend_count);
        assert(emitted == constraints);
        (void)emitted;
        inst->max_self_distance = INFINITY;
        for (uint32_t e = 0; e < edge_count; e++) {
            const float l = rest_distance(inst, edges[e].a, edges[e].b);
            inst->max_self_distance = l < inst->max_self_distance ? l : inst->max_self_distance;
        }
    }
    free(edges);
    free(diagonal);
    free(kind_to);
    free(bends);
    return ok && cd_colour_constraints(inst);
}

bool cd_mesh_cloth_build(cd_instance *inst, const cd_tri_mesh *mesh, const cd_cloth_def *options)
{
    const uint32_t n = mesh->vertex_count, m = mesh->triangle_count;
    inst->type = CD_INSTANCE_CLOTH;
    inst->width = (int32_t)n;
    inst->height = 1;
    inst->triangle_count = m;
    inst->triangles = malloc(sizeof(uint32_t) * 3u * m);
    inst->rest = malloc(sizeof(float) * 3u * n);
    if (mesh->uvs != NULL)
        inst->uvs = malloc(sizeof(float) * 2u * n);
    if (!inst->triangles || !inst->rest || (mesh->uvs != NULL && !inst->uvs) ||
        !cd_instance_alloc(inst, n, 0))
        return false;
    memcpy(inst->triangles, mesh->triangles, sizeof(uint32_t) * 3u * m);
    memcpy(inst->rest, mesh->vertices, sizeof(float) * 3u * n);
    if (mesh->uvs != NULL)
        memcpy(inst->uvs, mesh->uvs, sizeof(float) * 2u * n);
    memcpy(inst->pos, mesh->vertices, sizeof(float) * 3u * n);
    memcpy(inst->prev, mesh->vertices, sizeof(float) * 3u * n);
    if (!cd_mesh_cloth_derive(inst))
        return false;

    inst->def = *options;
    inst->def.width = (int32_t)n;
    inst->def.height = 1;
    inst->def.spacing = inst->max_self_distance;
    inst->def.origin = cd_v3(0, 0, 0);
    inst->def.right = cd_v3(1, 0, 0);
    inst->def.down = cd_v3(0, -1, 0);
    cd_apply_options(inst, options);
    inst->enabled = true;
    /* selfDistance beyond the shortest edge is refused by the caller. */
    return options->self_distance <= 0.0f || options->self_distance > inst->max_self_distance ||
           cd_self_collision_reserve(inst);
}

float cd_triangle_area(const float *pos, const uint32_t *tri)
{
    const cd_vec3 a = cd_v3_load(&pos[3 * tri[0]]);
    const cd_vec3 ab = cd_v3_sub(cd_v3_load(&pos[3 * tri[1]]), a);
    const cd_vec3 ac = cd_v3_sub(cd_v3_load(&pos[3 * tri[2]]), a);
    return 0.5f * cd_v3_length(cd_v3_cross(ab, ac));
}
