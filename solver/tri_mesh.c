/* Triangle meshes for cloth: validation of a user's mesh and the edges it
 * derives (each unique edge with the one or two triangles that share it
 * and the vertices across from it), which mesh_cloth.c turns into
 * constraints.
 *
 * A mesh is refused, with the first fault in this order, when it has
 * fewer than 3 vertices or no triangle, a vertex outside the world box, an
 * index out of range, a zero-area triangle, a triangle given twice (in any
 * vertex order), an edge shared by more than two triangles (non-manifold:
 * no cloth folds that way, and "across the edge" would be ambiguous), a
 * vertex no triangle uses (it would have no mass and no constraint), or a
 * non-finite UV. Orientation is not checked: a cape or a skirt may be
 * wound either way, and nothing in the solve depends on it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

/* A triangle whose doubled area is below this fraction of its longest
 * edge squared is a sliver (an angle under ~1e-5 rad): degenerate. */
#define CD_TRI_MIN_SINE 1e-5f

static cd_vec3 vertex(const float *v, uint32_t i)
{
    return cd_v3_load(&v[3 * i]);
}

static float max3(float a, float b, float c)
{
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

bool cd_triangle_degenerate(cd_vec3 a, cd_vec3 b, cd_vec3 c)
{
    const cd_vec3 ab = cd_v3_sub(b, a), ac = cd_v3_sub(c, a), bc = cd_v3_sub(c, b);
    const cd_vec3 n = cd_v3_cross(ab, ac);
    const float n2 = cd_v3_dot(n, n);
    const float e2 = max3(cd_v3_dot(ab, ab), cd_v3_dot(ac, ac), cd_v3_dot(bc, bc));
    return !(n2 > CD_AERO_MIN_NORMAL2 && n2 > CD_TRI_MIN_SINE * CD_TRI_MIN_SINE * e2 * e2);
}

/* One side of an edge: the edge (lo < hi), its triangle and the vertex
 * across. Sorted by (lo, hi, triangle), equal edges sit together. */
typedef struct half_edge {
    uint32_t lo, hi, triangle, across;
} half_edge;

static int compare_half_edges(const void *pa, const void *pb)
{
    const half_edge *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return a->triangle < b->triangle ? -1 : a->triangle > b->triangle;
}

cd_mesh_edge *cd_tri_mesh_edges(const uint32_t *triangles, uint32_t triangle_count,
                                uint32_t *edge_count, uint32_t *non_manifold)
{
    const size_t halves = 3u * (size_t)triangle_count;
    half_edge *h = malloc(sizeof(half_edge) * (halves ? halves : 1));
    cd_mesh_edge *edges = malloc(sizeof(cd_mesh_edge) * (halves ? halves : 1));
    if (h == NULL || edges == NULL) {
        free(h);
        free(edges);
        return NULL;
    }
    for (uint32_t t = 0; t < triangle_count; t++)
        for (uint32_t k = 0; k < 3; k++) {
            const uint32_t a = triangles[3 * t + k], b = triangles[3 * t + (k + 1) % 3];
            h[3 * t + k] = (half_edge){.lo = a < b ? a : b,
                                       .hi = a < b ? b : a,
                                       .triangle = t,
                                       .across = triangles[3 * t + (k + 2) % 3]};
        }
    qsort(h, halves, sizeof *h, compare_half_edges);
    uint32_t n = 0;
    *non_manifold = UINT32_MAX;
    for (size_t i = 0; i < halves;) {
        size_t j = i + 1;
        while (j < halves && h[j].lo == h[i].lo && h[j].hi == h[i].hi)
            j++;
        cd_mesh_edge *e = &edges[n];
        *e = (cd_mesh_edge){.a = h[i].lo,
                            .b = h[i].hi,
                            .triangles = (uint32_t)(j - i),
                            .triangle = {h[i].triangle, UINT32_MAX},
                            .across = {h[i].across, UINT32_MAX}};
        if (j - i >= 2) {
            e->triangle[1] = h[i + 1].triangle;
            e->across[1] = h[i + 1].across;
        }
        if (j - i > 2 && *non_manifold == UINT32_MAX)
            *non_manifold = n;
        n++;
        i = j;
    }
    free(h);
    *edge_count = n;
    return edges;
}

/* A triangle's vertices in increasing order, and its index. */
typedef struct sorted_triangle {
    uint32_t v[3];
    uint32_t index;
} sorted_triangle;

static int compare_sorted(const void *pa, const void *pb)
{
    const sorted_triangle *a = pa, *b = pb;
    for (int k = 0; k < 3; k++)
        if (a->v[k] != b->v[k])
            return a->v[k] < b->v[k] ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static void sort3(uint32_t v[3])
{
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (v[j] > v[j + 1]) {
                uint32_t t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
}

/* The first triangle that repeats an earlier one: fault index = the later,
 * other = the earlier. False when none (or out of memory: *oom). */
static bool find_duplicate(const cd_tri_mesh *m, cd_tri_fault *fault, bool *oom)
{
    sorted_triangle *s = malloc(sizeof *s * m->triangle_count);
    if (s == NULL) {
        *oom = true;
        return false;
    }
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        memcpy(s[t].v, &m->triangles[3 * t], sizeof s[t].v);
        sort3(s[t].v);
        s[t].index = t;
    }
    qsort(s, m->triangle_count, sizeof *s, compare_sorted);
    bool found = false;
    for (uint32_t i = 1; i < m->triangle_count; i++) {
        if (memcmp(s[i].v, s[i - 1].v, sizeof s[i].v) != 0)
            continue;
        /* Report the lowest later index of any repeated set. */
        uint32_t later = s[i].index, earlier = s[i - 1].index;
        if (!found || later < fault->index) {
            *fault = (cd_tri_fault){.kind = CD_TRI_DUPLICATE, .index = later, .other = earlier};
            found = true;
        }
    }
    free(s);
    return found;
}

cd_status cd_tri_mesh_validate(const cd_tri_mesh *m, cd_tri_fault *fault)
{
    *fault = (cd_tri_fault){.kind = CD_TRI_OK};
    if (m->vertex_count < 3) {
        fault->kind = CD_TRI_TOO_FEW_VERTICES;
        return CD_E_INVALID_ARGUMENT;
    }
    if (m->triangle_count < 1) {
        fault->kind = CD_TRI_NO_TRIANGLES;
        return CD_E_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < m->vertex_count; i++)
        if (!cd_vec3_in_world(vertex(m->vertices, i))) {
            *fault = (cd_tri_fault){.kind = CD_TRI_BAD_VERTEX, .index = i};
            return CD_E_INVALID_ARGUMENT;
        }
    for (uint32_t i = 0; i < 3u * m->triangle_count; i++)
        if (m->triangles[i] >= m->vertex_count) {
            *fault = (cd_tri_fault){.kind = CD_TRI_INDEX_OUT_OF_RANGE, .index = i};
            return CD_E_INVALID_ARGUMENT;
        }
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        const uint32_t *q = &m->triangles[3 * t];
        if (q[0] == q[1] || q[1] == q[2] || q[0] == q[2] ||
            cd_triangle_degenerate(vertex(m->vertices, q[0]), vertex(m->vertices, q[1]),
                                   vertex(m->vertices, q[2]))) {
            *fault = (cd_tri_fault){.kind = CD_TRI_DEGENERATE, .index = t};
            return CD_E_INVALID_ARGUMENT;
        }
    }
    bool oom = false;
    if (find_duplicate(m, fault, &oom))
        return CD_E_INVALID_ARGUMENT;
    if (oom)
        return CD_E_INTERNAL;
    uint32_t edge_count = 0, bad = UINT32_MAX;
    cd_mesh_edge *edges = cd_tri_mesh_edges(m->triangles, m->triangle_count, &edge_count, &bad);
    if (edges == NULL)
        return CD_E_INTERNAL;
    if (bad != UINT32_MAX) {
        *fault = (cd_tri_fault){.kind = CD_TRI_NON_MANIFOLD,
                                .index = edges[bad].a,
                                .other = edges[bad].b,
                                .count = edges[bad].triangles};
        free(edges);
        return CD_E_INVALID_ARGUMENT;
    }
    free(edges);
    uint8_t *used = calloc(m->vertex_count, 1);
    if (used == NULL)
        return CD_E_INTERNAL;
    for (uint32_t i = 0; i < 3u * m->triangle_count; i++)
        used[m->triangles[i]] = 1;
    uint32_t unused = UINT32_MAX;
    for (uint32_t i = 0; i < m->vertex_count && unused == UINT32_MAX; i++)
        if (!used[i])
            unused = i;
    free(used);
    if (unused != UINT32_MAX) {
        *fault = (cd_tri_fault){.kind = CD_TRI_UNUSED_VERTEX, .index = unused};
        return CD_E_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; m->uvs != NULL && i < 2u * m->vertex_count; i++)
        if (!cd_float_is_valid(m->uvs[i])) {
            *fault = (cd_tri_fault){.kind = CD_TRI_BAD_UV, .index = i};
            return CD_E_INVALID_ARGUMENT;
        }
    return CD_OK;
}

void cd_tri_fault_describe(const cd_tri_fault *f, const cd_tri_mesh *m, cd_field_fault *fault)
{
    const cd_status bad = CD_E_INVALID_ARGUMENT;
    char field[48];
    switch (f->kind) {
    case CD_TRI_TOO_FEW_VERTICES:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "vertices", "a mesh needs at least 3 vertices");
        return;
    case CD_TRI_NO_TRIANGLES:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "triangles", "a mesh needs at least 1 triangle");
        return;
    case CD_TRI_BAD_VERTEX:
        snprintf(field, sizeof field, "vertices[%" PRIu32 "]", f->index);
        cd_fault_set(fault, bad, CD_FAULT_MESH, field,
                     "outside the world box (|x|, |y|, |z| <= %g m)", (double)CD_WORLD_EXTENT);
        return;
    case CD_TRI_INDEX_OUT_OF_RANGE:
        snprintf(field, sizeof field, "triangles[%" PRIu32 "]", f->index);
        cd_fault_set(fault, bad, CD_FAULT_MESH, field,
                     "index %" PRIu32 " out of range (%" PRIu32 " vertices)",
                     m->triangles[f->index], m->vertex_count);
        return;
    case CD_TRI_DEGENERATE:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "triangles",
                     "triangle %" PRIu32 " is degenerate (zero area)", f->index);
        return;
    case CD_TRI_DUPLICATE:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "triangles",
                     "triangle %" PRIu32 " repeats triangle %" PRIu32, f->index, f->other);
        return;
    case CD_TRI_NON_MANIFOLD:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "triangles",
                     "edge %" PRIu32 "-%" PRIu32 " is shared by %" PRIu32
                     " triangles (non-manifold: at most 2)",
                     f->index, f->other, f->count);
        return;
    case CD_TRI_UNUSED_VERTEX:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "vertices",
                     "vertex %" PRIu32 " belongs to no triangle", f->index);
        return;
    case CD_TRI_BAD_UV:
        snprintf(field, sizeof field, "uvs[%" PRIu32 "]", f->index);
        cd_fault_set(fault, bad, CD_FAULT_MESH, field, "must be a finite number");
        return;
    case CD_TRI_OK:
        break;
    }
    cd_fault_set(fault, bad, CD_FAULT_MESH, "triangles", "invalid mesh");
}
