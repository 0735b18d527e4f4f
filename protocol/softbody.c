/* A soft body's `create`: its mesh, given or generated, validated with
 * messages that name the field and the offending index. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_fields.h"
#include "options.h"

/* "vertices": [[x,y,z],…] and "tetrahedra": [i0,i1,i2,i3, …]. */
static cd_status read_given_mesh(const cJSON *obj, const cd_limits *lim, cd_tet_mesh *mesh,
                                 cd_error *err)
{
    const cJSON *vertices = cd_json_member(obj, "vertices");
    const cJSON *tetrahedra = cd_json_member(obj, "tetrahedra");
    if (!vertices)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "vertices: required (or \"shape\")");
    if (!tetrahedra)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "tetrahedra: required (or \"shape\")");
    cd_vec3 *v = NULL;
    uint32_t nv = 0, ni = 0;
    cd_status st = cd_json_vec3_array(vertices, "vertices", lim->max_list, &v, &nv, err);
    if (st != CD_OK)
        return st;
    if (nv > lim->max_particles) {
        free(v);
        return cd_fail(err, CD_E_LIMIT_EXCEEDED,
                       "vertices: %" PRIu32 " particles exceed the limit of %" PRIu32, nv,
                       lim->max_particles);
    }
    uint32_t *tets = NULL;
    if ((st = cd_json_index_array(tetrahedra, "tetrahedra", lim->max_list, &tets, &ni, err)) !=
        CD_OK) {
        free(v);
        return st;
    }
    mesh->vertices = malloc(sizeof(float) * 3u * (nv ? nv : 1));
    if (mesh->vertices == NULL) {
        free(v);
        free(tets);
        return cd_fail(err, CD_E_INTERNAL, "vertices: out of memory");
    }
    for (uint32_t i = 0; i < nv; i++)
        memcpy(&mesh->vertices[3 * i], &v[i], 3 * sizeof(float));
    free(v);
    mesh->vertex_count = nv;
    mesh->tets = tets;
    mesh->tet_count = ni / 4;
    if (ni % 4 != 0)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "tetrahedra: %" PRIu32 " indices is not a multiple of 4", ni);

    cd_mesh_fault mf;
    if (cd_tet_mesh_validate(mesh->vertices, nv, tets, mesh->tet_count, &mf) == CD_OK)
        return CD_OK;
    cd_field_fault fault;
    cd_mesh_fault_describe(&mf, tets, nv, &fault);
    return cd_fail_fault(err, CD_E_INVALID_ARGUMENT, &fault);
}

static cd_status read_int3(const cJSON *obj, const char *name, int64_t lo, int64_t hi,
                           uint32_t out[3], cd_error *err)
{
    const cJSON *item = cd_json_member(obj, name);
    if (!item)
        return CD_OK;
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be an array of 3 integers", name);
    for (int k = 0; k < 3; k++) {
        int64_t v;
        char label[32];
        snprintf(label, sizeof label, "%s[%d]", name, k);
        cd_status st = cd_json_int(cJSON_GetArrayItem(item, k), label, lo, hi, &v, err);
        if (st != CD_OK)
            return st;
        out[k] = (uint32_t)v;
    }
    return CD_OK;
}

typedef struct shape_params {
    cd_vec3 size, origin, center;
    float radius;
    int32_t resolution;
} shape_params;

/* The generators' parameters, as option rows (not the solver's options:
 * they shape the mesh and are gone once it is built). */
#define SHAPE_ROW(member, wire, kind_, lo, hi, lo_open)                                      \
    {.name = wire, .kind = kind_, .offset = offsetof(shape_params, member), .min = lo,      \
     .max = hi, .min_open = lo_open}
static const cd_option_spec box_fields[] = {
    SHAPE_ROW(size, "size", CD_OPTION_VEC3, 0, 0, false),
    SHAPE_ROW(origin, "origin", CD_OPTION_VEC3, 0, 0, false),
};
static const cd_option_spec ball_fields[] = {
    SHAPE_ROW(center, "center", CD_OPTION_VEC3, 0, 0, false),
    SHAPE_ROW(radius, "radius", CD_OPTION_FLOAT, 0, CD_WORLD_EXTENT, true),
    SHAPE_ROW(resolution, "resolution", CD_OPTION_INT, 2, 48, false),
};

enum { SHAPE_BOX, SHAPE_BALL }; /* cd_shape_wire's order */

/* A box reads size, origin and cells, a ball center, radius and resolution
 * (what the other shape would read is an unknown member). */
static cd_status generate_mesh(const cJSON *obj, const cJSON *shape, cd_tet_mesh *mesh,
                               cd_error *err)
{
    shape_params p = {.size = {1, 1, 1}, .origin = {0, 0, 0}, .center = {0, 0, 0},
                      .radius = 0.5f, .resolution = 6};
    int kind = SHAPE_BOX;
    cd_status st = cd_json_enum(shape, "shape", &cd_wire_enums[CD_ENUM_SHAPE], &kind, err);
    if (st != CD_OK)
        return st;
    if (kind == SHAPE_BOX) {
        st = cd_json_read_options(obj, box_fields, sizeof box_fields / sizeof box_fields[0], &p,
                                  NULL, err);
        uint32_t cells[3] = {4, 4, 4};
        if (st != CD_OK || (st = read_int3(obj, "cells", 1, 64, cells, err)) != CD_OK)
            return st;
        if (!(p.size.x > 0 && p.size.y > 0 && p.size.z > 0))
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "size: every side must be > 0");
        if (cd_mesh_box(p.origin, p.size, cells[0], cells[1], cells[2], mesh) != CD_OK)
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "origin: the box reaches outside the world box");
        return CD_OK;
    }
    st = cd_json_read_options(obj, ball_fields, sizeof ball_fields / sizeof ball_fields[0], &p,
                              NULL, err);
    if (st != CD_OK)
        return st;
    if (cd_mesh_ball(p.center, p.radius, (uint32_t)p.resolution, mesh) != CD_OK)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "center: the ball reaches outside the world box");
    return CD_OK;
}

cd_status cd_parse_softbody(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    req->as.create.type = CD_INSTANCE_SOFTBODY;
    req->as.create.def = cd_default_softbody_options();
    cd_status st = cd_parse_cloth_options(obj, false, &req->as.create.def, NULL, err);
    if (st != CD_OK)
        return st;
    const cJSON *shape = cd_json_member(obj, "shape");
    cd_tet_mesh *mesh = &req->as.create.mesh;
    st = shape ? generate_mesh(obj, shape, mesh, err) : read_given_mesh(obj, lim, mesh, err);
    if (st == CD_OK && mesh->vertex_count > lim->max_particles)
        st = cd_fail(err, CD_E_LIMIT_EXCEEDED,
                     "shape: %" PRIu32 " particles exceed the limit of %" PRIu32,
                     mesh->vertex_count, lim->max_particles);
    cd_field_fault fault;
    const cd_cloth_def *def = &req->as.create.def;
    if (st == CD_OK && cd_step_work_check(mesh->vertex_count, cd_substeps_bound(def),
                                          def->solver_iterations, lim->max_step_work,
                                          &fault) != CD_OK)
        st = cd_fail_fault(err, CD_E_LIMIT_EXCEEDED, &fault);
    return st;
}
