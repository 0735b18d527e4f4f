/* Tetrahedral meshes for soft bodies: validation of user meshes, the box
 * and ball generators, and what a mesh derives once at creation (unique
 * edges, surface triangles, signed volumes).
 *
 * Box: a grid of nx x ny x nz cubes, each split into 5 tetrahedra: a
 * central one on four of the cube's corners no two of which share an edge,
 * and the four corner tets around it. Cubes alternate, mirrored in x when
 * x + y + z is odd, so that every face diagonal joins two vertices of odd
 * x + y + z and neighbouring cubes agree (the mesh is conforming). Linear
 * tets are too stiff in bending (they lock), and how much depends on the
 * split: a cantilever of 4 cells across deflected 0.79 of the beam formula
 * with 6 Kuhn tets per cube (all alike), 0.86 with Kuhn's split mirrored
 * cube by cube and 0.89 with this one (a static linear finite-element
 * solve of each split; tests/test_solver_material.c, PROTOCOL.md).
 * Ball: the tetrahedra of a grid over the ball's bounding cube split as
 * Kuhn's 6 around each cube's main diagonal (every cube alike), whose
 * centroids lie inside the ball, less the shell's slivers
 * (trim_shell_slivers), and then its surface vertices moved onto the
 * sphere (smooth_ball_surface): the carved lattice alone is faceted and
 * spiky, like crumpled paper. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

#define CD_MIN_TET_VOLUME 1e-12f

float cd_tet_volume(cd_vec3 a, cd_vec3 b, cd_vec3 c, cd_vec3 d)
{
    return cd_v3_dot(cd_v3_sub(b, a), cd_v3_cross(cd_v3_sub(c, a), cd_v3_sub(d, a))) / 6.0f;
}

static cd_vec3 vertex(const float *v, uint32_t i)
{
    return cd_v3_load(&v[3 * i]);
}

cd_status cd_tet_mesh_validate(const float *vertices, uint32_t vertex_count,
                               const uint32_t *tets, uint32_t tet_count, cd_mesh_fault *fault)
{
    *fault = (cd_mesh_fault){.kind = CD_MESH_OK, .index = 0};
    if (vertex_count < 4) {
        fault->kind = CD_MESH_TOO_FEW_VERTICES;
        return CD_E_INVALID_ARGUMENT;
    }
    if (tet_count < 1) {
        fault->kind = CD_MESH_NO_TETRAHEDRA;
        return CD_E_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < vertex_count; i++) {
        if (!cd_vec3_in_world(vertex(vertices, i))) {
            *fault = (cd_mesh_fault){.kind = CD_MESH_BAD_VERTEX, .index = i};
            return CD_E_INVALID_ARGUMENT;
        }
    }
    for (uint32_t t = 0; t < tet_count; t++) {
        const uint32_t *q = &tets[4 * t];
        for (int k = 0; k < 4; k++) {
            if (q[k] >= vertex_count) {
                *fault = (cd_mesh_fault){.kind = CD_MESH_INDEX_OUT_OF_RANGE, .index = 4 * t + k};
                return CD_E_INVALID_ARGUMENT;
            }
        }
        float v = cd_tet_volume(vertex(vertices, q[0]), vertex(vertices, q[1]),
                                vertex(vertices, q[2]), vertex(vertices, q[3]));
        if (!(fabsf(v) > CD_MIN_TET_VOLUME)) {
            *fault = (cd_mesh_fault){.kind = CD_MESH_DEGENERATE_TET, .index = t};
            return CD_E_INVALID_ARGUMENT;
        }
        if (v < 0.0f) {
            *fault = (cd_mesh_fault){.kind = CD_MESH_INVERTED_TET, .index = t};
            return CD_E_INVALID_ARGUMENT;
        }
    }
    return CD_OK;
}

/* ---- generators ----------------------------------------------------------- */

/* Corner bits: x = 1, y = 2, z = 4. */
static const int kuhn[6][4] = {
    /* every tet runs from corner 0 to 7 */
    {0, 1, 3, 7}, {0, 1, 5, 7}, {0, 2, 3, 7}, {0, 2, 6, 7}, {0, 4, 5, 7}, {0, 4, 6, 7},
};
static const int five[5][4] = {
    /* the central tet on the corners of odd bit count, then the corners */
    {1, 2, 4, 7}, {0, 1, 2, 4}, {3, 1, 2, 7}, {5, 1, 4, 7}, {6, 2, 4, 7},
};

typedef enum cube_split { SPLIT_KUHN, SPLIT_FIVE } cube_split;

/* Appends the tets of cube (x, y, z), positively oriented. */
static void push_cube(uint32_t *tets, uint32_t *n, const float *verts, uint32_t nx, uint32_t ny,
                      uint32_t x, uint32_t y, uint32_t z, cube_split split)
{
    const int count = split == SPLIT_KUHN ? 6 : 5;
    const int mirror = split == SPLIT_FIVE && ((x + y + z) & 1u) ? 1 : 0;
    for (int t = 0; t < count; t++) {
        uint32_t q[4];
        for (int k = 0; k < 4; k++) {
            const int c = (split == SPLIT_KUHN ? kuhn[t][k] : five[t][k]) ^ mirror;
            q[k] = ((z + ((c >> 2) & 1)) * (ny + 1) + (y + ((c >> 1) & 1))) * (nx + 1) +
                   (x + (c & 1));
        }
        if (cd_tet_volume(vertex(verts, q[0]), vertex(verts, q[1]), vertex(verts, q[2]),
                          vertex(verts, q[3])) < 0.0f) {
            uint32_t swap = q[2];
            q[2] = q[3];
            q[3] = swap;
        }
        memcpy(&tets[4 * *n], q, sizeof q);
        (*n)++;
    }
}

static bool grid_vertices(cd_vec3 origin, cd_vec3 size, uint32_t nx, uint32_t ny, uint32_t nz,
                          float **out)
{
    uint32_t count = (nx + 1) * (ny + 1) * (nz + 1);
    float *v = malloc(sizeof(float) * 3u * count);
    if (v == NULL)
        return false;
    for (uint32_t z = 0; z <= nz; z++)
        for (uint32_t y = 0; y <= ny; y++)
            for (uint32_t x = 0; x <= nx; x++) {
                uint32_t i = (z * (ny + 1) + y) * (nx + 1) + x;
                cd_v3_store(&v[3 * i], cd_v3(origin.x + size.x * (float)x / (float)nx,
                                             origin.y + size.y * (float)y / (float)ny,
                                             origin.z + size.z * (float)z / (float)nz));
            }
    *out = v;
    return true;
}

static cd_status split_box(cd_vec3 origin, cd_vec3 size, uint32_t nx, uint32_t ny, uint32_t nz,
                           cube_split split, cd_tet_mesh *out)
{
    *out = (cd_tet_mesh){0};
    if (nx < 1 || ny < 1 || nz < 1 || nx > 64 || ny > 64 || nz > 64 || !(size.x > 0.0f) ||
        !(size.y > 0.0f) || !(size.z > 0.0f) || !cd_vec3_in_world(origin) ||
        !cd_vec3_in_world(cd_v3_add(origin, size)))
        return CD_E_INVALID_ARGUMENT;
    if (!grid_vertices(origin, size, nx, ny, nz, &out->vertices))
        return CD_E_INTERNAL;
    out->vertex_count = (nx + 1) * (ny + 1) * (nz + 1);
    out->tets = malloc(sizeof(uint32_t) * 4u * 6u * nx * ny * nz);
    if (out->tets == NULL) {
        cd_mesh_free(out);
        return CD_E_INTERNAL;
    }
    for (uint32_t z = 0; z < nz; z++)
        for (uint32_t y = 0; y < ny; y++)
            for (uint32_t x = 0; x < nx; x++)
                push_cube(out->tets, &out->tet_count, out->vertices, nx, ny, x, y, z, split);
    return CD_OK;
}

cd_status cd_mesh_box(cd_vec3 origin, cd_vec3 size, uint32_t nx, uint32_t ny, uint32_t nz,
                      cd_tet_mesh *out)
{
    return split_box(origin, size, nx, ny, nz, SPLIT_FIVE, out);
}

/* Smallest tet volume a smoothed ball keeps, as a fraction of a lattice
 * tet's (a cube's sixth): moving surface vertices onto the sphere may
 * flatten a tet; such a tet keeps its vertices where the lattice had them. */
#define CD_BALL_MIN_TET_SHARE 0.1f
#define CD_BALL_ROUNDS 12

static bool tet_thick_enough(const cd_tet_mesh *m, const uint32_t *q, float min_volume)
{
    return cd_tet_volume(vertex(m->vertices, q[0]), vertex(m->vertices, q[1]),
                         vertex(m->vertices, q[2]), vertex(m->vertices, q[3])) > min_volume;
}

/* Moves every vertex of the mesh's surface radially onto the sphere. A
 * tet this flattens below CD_BALL_MIN_TET_SHARE of a lattice tet (or turns
 * inside out) has its vertices moved halfway back to the lattice, round
 * after round (a vertex ends as close to the sphere as its tets allow);
 * after CD_BALL_ROUNDS rounds, what is still bad goes all the way back: a
 * bad tet has a moved vertex (the lattice's tets are all fine), so each
 * such round puts one back for good. */
static bool smooth_ball_surface(cd_tet_mesh *m, cd_vec3 centre, float radius)
{
    uint32_t tri_count = 0;
    uint32_t *tris = cd_tet_surface(m->tets, m->tet_count, &tri_count);
    float *lattice = malloc(sizeof(float) * 3u * m->vertex_count);
    uint8_t *on_surface = calloc(m->vertex_count, 1);
    if (tris == NULL || lattice == NULL || on_surface == NULL) {
        free(tris);
        free(lattice);
        free(on_surface);
        return false;
    }
    memcpy(lattice, m->vertices, sizeof(float) * 3u * m->vertex_count);
    for (uint32_t i = 0; i < 3 * tri_count; i++)
        on_surface[tris[i]] = 1;
    free(tris);
    float smallest = INFINITY; /* the lattice's tet volume, before any move */
    for (uint32_t t = 0; t < m->tet_count; t++) {
        const uint32_t *q = &m->tets[4 * t];
        smallest = fminf(smallest, cd_tet_volume(vertex(m->vertices, q[0]), vertex(m->vertices, q[1]),
                                                 vertex(m->vertices, q[2]), vertex(m->vertices, q[3])));
    }
    const float min_volume = CD_BALL_MIN_TET_SHARE * smallest;
    for (uint32_t i = 0; i < m->vertex_count; i++) {
        if (!on_surface[i])
            continue;
        const cd_vec3 d = cd_v3_sub(vertex(m->vertices, i), centre);
        const float len = cd_v3_length(d);
        if (len > 1e-12f)
            cd_v3_store(&m->vertices[3 * i], cd_v3_add(centre, cd_v3_scale(d, radius / len)));
    }
    bool restored = true;
    for (int round = 0; restored; round++) {
        restored = false;
        for (uint32_t t = 0; t < m->tet_count; t++) {
            const uint32_t *q = &m->tets[4 * t];
            if (tet_thick_enough(m, q, min_volume))
                continue;
            for (int k = 0; k < 4; k++) {
                float *v = &m->vertices[3 * q[k]];
                const float *l = &lattice[3 * q[k]];
                for (int a = 0; a < 3; a++)
                    v[a] = round < CD_BALL_ROUNDS ? 0.5f * (v[a] + l[a]) : l[a];
            }
            restored = true;
        }
    }
    free(lattice);
    free(on_surface);
    return true;
}

/* Drops the carved lattice's shell slivers: tets whose four vertices are
 * all on the surface. Moved onto the sphere, four close points are nearly
 * coplanar, so every such tet would be flattened and hold its vertices
 * back on the lattice (at 8 cells, 264 of 1,656 tets, leaving the surface
 * 3.6% of the radius off the sphere on average, 12.8% at worst). Dropping
 * one brings vertices below it to the surface, so this repeats until none
 * is left, unless that would leave less than half the tets (a ball of 2
 * or 3 cells keeps its slivers, and the rollback of smooth_ball_surface
 * keeps them thick). False when out of memory. */
static inline bool is_sliver(const uint8_t *on_surface, const uint32_t *q)
{
    return on_surface[q[0]] && on_surface[q[1]] && on_surface[q[2]] && on_surface[q[3]];
}

static bool trim_shell_slivers(cd_tet_mesh *m)
{
    uint8_t *on_surface = malloc(m->vertex_count);
    if (on_surface == NULL)
        return false;
    for (;;) {
        uint32_t tri_count = 0;
        uint32_t *tris = cd_tet_surface(m->tets, m->tet_count, &tri_count);
        if (tris == NULL) {
            free(on_surface);
            return false;
        }
        memset(on_surface, 0, m->vertex_count);
        for (uint32_t i = 0; i < 3 * tri_count; i++)
            on_surface[tris[i]] = 1;
        free(tris);
        uint32_t kept = 0;
        for (uint32_t t = 0; t < m->tet_count; t++)
            kept += !is_sliver(on_surface, &m->tets[4 * t]);
        if (kept == m->tet_count || 2 * kept < m->tet_count)
            break;
        kept = 0;
        for (uint32_t t = 0; t < m->tet_count; t++)
            if (!is_sliver(on_surface, &m->tets[4 * t]))
                memmove(&m->tets[4 * kept++], &m->tets[4 * t], 4 * sizeof(uint32_t));
        m->tet_count = kept;
    }
    free(on_surface);
    return true;
}

cd_status cd_mesh_ball(cd_vec3 centre, float radius, uint32_t resolution, cd_tet_mesh *out)
{
    *out = (cd_tet_mesh){0};
    if (resolution < 2 || resolution > 48 || !(radius > 0.0f) ||
        !cd_vec3_in_world(cd_v3_add(centre, cd_v3(radius, radius, radius))) ||
        !cd_vec3_in_world(cd_v3_sub(centre, cd_v3(radius, radius, radius))))
        return CD_E_INVALID_ARGUMENT;
    cd_tet_mesh box;
    const float d = 2.0f * radius;
    cd_status st = split_box(cd_v3_sub(centre, cd_v3(radius, radius, radius)), cd_v3(d, d, d),
                             resolution, resolution, resolution, SPLIT_KUHN, &box);
    if (st != CD_OK)
        return st;
    /* Keep the tets whose centroid is inside; then drop unused vertices. */
    uint32_t kept = 0;
    for (uint32_t t = 0; t < box.tet_count; t++) {
        const uint32_t *q = &box.tets[4 * t];
        cd_vec3 c = cd_v3(0, 0, 0);
        for (int k = 0; k < 4; k++)
            c = cd_v3_add(c, vertex(box.vertices, q[k]));
        if (cd_v3_length(cd_v3_sub(cd_v3_scale(c, 0.25f), centre)) <= radius)
            memmove(&box.tets[4 * kept++], q, 4 * sizeof(uint32_t));
    }
    box.tet_count = kept;
    uint32_t *remap = trim_shell_slivers(&box) ? malloc(sizeof(uint32_t) * box.vertex_count) : NULL;
    if (remap == NULL) {
        cd_mesh_free(&box);
        return CD_E_INTERNAL;
    }
    for (uint32_t i = 0; i < box.vertex_count; i++)
        remap[i] = UINT32_MAX;
    uint32_t used = 0;
    kept = box.tet_count;
    for (uint32_t i = 0; i < 4 * kept; i++)
        if (remap[box.tets[i]] == UINT32_MAX)
            remap[box.tets[i]] = 0; /* mark; numbered below in vertex order */
    for (uint32_t i = 0; i < box.vertex_count; i++) {
        if (remap[i] == UINT32_MAX)
            continue;
        remap[i] = used;
        memmove(&box.vertices[3 * used], &box.vertices[3 * i], 3 * sizeof(float));
        used++;
    }
    for (uint32_t i = 0; i < 4 * kept; i++)
        box.tets[i] = remap[box.tets[i]];
    free(remap);
    box.vertex_count = used;
    box.tet_count = kept;
    if (!smooth_ball_surface(&box, centre, radius)) {
        cd_mesh_free(&box);
        return CD_E_INTERNAL;
    }
    *out = box;
    return CD_OK;
}

void cd_mesh_free(cd_tet_mesh *mesh)
{
    if (mesh == NULL)
        return;
    free(mesh->vertices);
    free(mesh->tets);
    *mesh = (cd_tet_mesh){0};
}

/* ---- derived topology ------------------------------------------------------ */

static int compare_pairs(const void *a, const void *b)
{
    const uint32_t *p = a, *q = b;
    if (p[0] != q[0])
        return p[0] < q[0] ? -1 : 1;
    return p[1] < q[1] ? -1 : (p[1] > q[1] ? 1 : 0);
}

uint32_t *cd_tet_edges(const uint32_t *tets, uint32_t tet_count, uint32_t *edge_count)
{
    static const int pairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
    uint32_t *e = malloc(sizeof(uint32_t) * 2u * 6u * tet_count);
    if (e == NULL)
        return NULL;
    for (uint32_t t = 0; t < tet_count; t++)
        for (int k = 0; k < 6; k++) {
            uint32_t a = tets[4 * t + pairs[k][0]], b = tets[4 * t + pairs[k][1]];
            e[12 * t + 2 * k] = a < b ? a : b;
            e[12 * t + 2 * k + 1] = a < b ? b : a;
        }
    qsort(e, 6u * tet_count, 2 * sizeof(uint32_t), compare_pairs);
    uint32_t n = 0;
    for (uint32_t i = 0; i < 6u * tet_count; i++) {
        if (n > 0 && e[2 * (n - 1)] == e[2 * i] && e[2 * (n - 1) + 1] == e[2 * i + 1])
            continue;
        e[2 * n] = e[2 * i];
        e[2 * n + 1] = e[2 * i + 1];
        n++;
    }
    *edge_count = n;
    return e;
}

/* A face as its sorted vertices plus the outward-ordered original. */
typedef struct face_key {
    uint32_t sorted[3];
    uint32_t tri[3];
} face_key;

static int compare_faces(const void *a, const void *b)
{
    const face_key *p = a, *q = b;
    for (int k = 0; k < 3; k++)
        if (p->sorted[k] != q->sorted[k])
            return p->sorted[k] < q->sorted[k] ? -1 : 1;
    return 0;
}

static void sort3(uint32_t v[3])
{
    uint32_t t;
    if (v[0] > v[1]) { t = v[0]; v[0] = v[1]; v[1] = t; }
    if (v[1] > v[2]) { t = v[1]; v[1] = v[2]; v[2] = t; }
    if (v[0] > v[1]) { t = v[0]; v[0] = v[1]; v[1] = t; }
}

uint32_t *cd_tet_surface(const uint32_t *tets, uint32_t tet_count, uint32_t *triangle_count)
{
    /* For a positively oriented tet (a, b, c, d), these faces wind
     * counter-clockwise seen from outside. */
    static const int faces[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
    face_key *f = malloc(sizeof(face_key) * 4u * tet_count);
    if (f == NULL)
        return NULL;
    for (uint32_t t = 0; t < tet_count; t++)
        for (int k = 0; k < 4; k++) {
            face_key *key = &f[4 * t + k];
            for (int j = 0; j < 3; j++)
                key->tri[j] = key->sorted[j] = tets[4 * t + faces[k][j]];
            sort3(key->sorted);
        }
    qsort(f, 4u * tet_count, sizeof *f, compare_faces);
    uint32_t *out = malloc(sizeof(uint32_t) * 3u * 4u * tet_count);
    if (out == NULL) {
        free(f);
        return NULL;
    }
    uint32_t n = 0, total = 4u * tet_count;
    for (uint32_t i = 0; i < total;) {
        uint32_t j = i + 1;
        while (j < total && compare_faces(&f[i], &f[j]) == 0)
            j++;
        if (j - i == 1) { /* a face of one tet only: on the surface */
            memcpy(&out[3 * n], f[i].tri, sizeof f[i].tri);
            n++;
        }
        i = j;
    }
    free(f);
    *triangle_count = n;
    return out;
}
