/* Soft-body construction: particles at the mesh's vertices, one distance
 * constraint per unique edge (the stretch group; shear and bending groups
 * stay empty), one volume constraint per tetrahedron, and the mass spread
 * by tetrahedron volume (each tet gives a quarter of its share to each of
 * its vertices). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

cd_cloth_def cd_default_softbody_options(void)
{
    cd_cloth_def d = cd_default_cloth_def();
    d.mass = 5.0f;
    d.stiffness = 0.8f;
    d.volume_stiffness = 0.9f;
    d.damping = 0.02f;
    d.velocity_retention = 0.2975531f; /* 0.98^60: the seed's 0.02 a step at 60 Hz, per second */
    d.solver_iterations = 8;
    /* Measured (tests/test_solver_softbody.c): a dropped ball keeps 93% of
     * its volume with one substep, 98% with two. */
    d.substeps = 2;
    /* Chosen when a ball resting on a floor kept a contact jitter of a few
     * cm/s (contact after the passes only: collide.c); kept at 0.05. */
    d.sleep_threshold = 0.05f;
    return d;
}

bool cd_softbody_build(cd_instance *inst, const cd_tet_mesh *mesh, const cd_cloth_def *options)
{
    const uint32_t n = mesh->vertex_count;
    uint32_t edge_count = 0;
    uint32_t *edges = cd_tet_edges(mesh->tets, mesh->tet_count, &edge_count);
    inst->triangles = cd_tet_surface(mesh->tets, mesh->tet_count, &inst->triangle_count);

    inst->type = CD_INSTANCE_SOFTBODY;
    inst->width = (int32_t)n;
    inst->height = 1;
    inst->tet_count = mesh->tet_count;
    inst->rest = malloc(sizeof(float) * 3u * n);
    inst->tets = malloc(sizeof(cd_tet) * mesh->tet_count);
    inst->contact_depth = calloc(n ? n : 1, sizeof(float));
    if (!cd_instance_alloc(inst, n, edge_count) || !edges || !inst->triangles || !inst->rest ||
        !inst->tets || !inst->contact_depth) {
        free(edges);
        return false;
    }
    memcpy(inst->pos, mesh->vertices, sizeof(float) * 3u * n);
    memcpy(inst->prev, mesh->vertices, sizeof(float) * 3u * n);
    memcpy(inst->rest, mesh->vertices, sizeof(float) * 3u * n);

    inst->max_self_distance = INFINITY;
    for (uint32_t e = 0; e < edge_count; e++) {
        uint32_t a = edges[2 * e], b = edges[2 * e + 1];
        float rest = cd_v3_length(cd_v3_sub(cd_v3_load(&inst->rest[3 * b]),
                                            cd_v3_load(&inst->rest[3 * a])));
        inst->constraints[e] = (cd_distance){.a = a, .b = b, .rest = rest, .lambda = 0.0f};
        inst->max_self_distance = rest < inst->max_self_distance ? rest : inst->max_self_distance;
    }
    free(edges);
    inst->groups[CD_GROUP_STRETCH] = (cd_group){.begin = 0, .end = edge_count};
    inst->groups[CD_GROUP_SHEAR] = (cd_group){.begin = edge_count, .end = edge_count};
    inst->groups[CD_GROUP_BEND] = (cd_group){.begin = edge_count, .end = edge_count};
    if (!cd_colour_constraints(inst))
        return false;

    inst->rest_volume = 0.0f;
    for (uint32_t t = 0; t < mesh->tet_count; t++) {
        cd_tet *tet = &inst->tets[t];
        memcpy(tet->v, &mesh->tets[4 * t], sizeof tet->v);
        tet->rest_volume = cd_tet_volume(cd_v3_load(&inst->rest[3 * tet->v[0]]),
                                         cd_v3_load(&inst->rest[3 * tet->v[1]]),
                                         cd_v3_load(&inst->rest[3 * tet->v[2]]),
                                         cd_v3_load(&inst->rest[3 * tet->v[3]]));
        tet->lambda = 0.0f;
        inst->rest_volume += tet->rest_volume;
    }

    inst->def = *options;
    inst->def.width = (int32_t)n;
    inst->def.height = 1;
    inst->def.spacing = 1.0f;
    inst->def.origin = cd_v3(0, 0, 0);
    inst->def.right = cd_v3(1, 0, 0);
    inst->def.down = cd_v3(0, -1, 0);
    cd_apply_options(inst, options);
    if (options->youngs_modulus > 0.0f && !cd_material_reserve(inst))
        return false;
    inst->enabled = true;
    /* selfDistance beyond the shortest edge is refused by the caller
     * (cd_world_create_softbody_ex) before any buffer is reserved. */
    return options->self_distance <= 0.0f || options->self_distance > inst->max_self_distance ||
           cd_self_collision_reserve(inst);
}
