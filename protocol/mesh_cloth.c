/* A mesh cloth's `create`: a cloth given as vertices and triangles (and
 * optionally UVs) instead of a width x height grid. Faults name the field
 * and, where there is one, the index. */
#include <inttypes.h>
#include <stdlib.h>

#include "json_fields.h"
#include "options.h"

#define BIT(opt) ((uint64_t)1 << (opt))

/* A grid's layout rows mean nothing to a mesh: its vertices are its layout. */
static cd_status refuse_layout(uint64_t present, cd_error *err)
{
    for (int i = 0; i < CD_OPT_COUNT; i++)
        if ((present & BIT(i)) && (cd_cloth_option_specs[i].flags & CD_OPTION_LAYOUT))
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: not used with \"vertices\" (a mesh cloth's vertices are its "
                           "layout)",
                           cd_cloth_option_specs[i].name);
    return CD_OK;
}

static cd_status read_mesh(const cJSON *obj, const cd_limits *lim, cd_tri_mesh *mesh,
                           cd_error *err)
{
    const cJSON *triangles = cd_json_member(obj, "triangles");
    const cJSON *uvs = cd_json_member(obj, "uvs");
    if (!triangles)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "triangles: required with \"vertices\"");
    float *v = NULL;
    uint32_t nv = 0;
    cd_status st = cd_json_points(cd_json_member(obj, "vertices"), "vertices", lim->max_list, &v,
                                  &nv, err);
    if (st != CD_OK)
        return st;
    mesh->vertices = v;
    mesh->vertex_count = nv;
    if (nv > lim->max_particles)
        return cd_fail(err, CD_E_LIMIT_EXCEEDED,
                       "vertices: %" PRIu32 " particles exceed the limit of %" PRIu32, nv,
                       lim->max_particles);
    uint32_t *t = NULL, ni = 0;
    if ((st = cd_json_index_array(triangles, "triangles", lim->max_list, &t, &ni, err)) != CD_OK)
        return st;
    mesh->triangles = t;
    mesh->triangle_count = ni / 3;
    if (ni % 3 != 0)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "triangles: %" PRIu32 " indices is not a multiple of 3", ni);
    if (uvs != NULL) {
        float *uv = NULL;
        uint32_t nuv = 0;
        if ((st = cd_json_float_array(uvs, "uvs", lim->max_list, NULL, &uv, &nuv, err)) != CD_OK)
            return st;
        mesh->uvs = uv;
        if (nuv != 2u * nv)
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "uvs: %" PRIu32 " values for %" PRIu32 " vertices (2 per vertex)", nuv,
                           nv);
    }
    cd_tri_fault tf;
    if ((st = cd_tri_mesh_validate(mesh, &tf)) == CD_OK)
        return CD_OK;
    if (st != CD_E_INVALID_ARGUMENT)
        return cd_fail(err, st, "vertices: out of memory");
    cd_field_fault fault;
    cd_tri_fault_describe(&tf, mesh, &fault);
    return cd_fail_fault(err, CD_E_INVALID_ARGUMENT, &fault);
}

cd_status cd_parse_mesh_cloth(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    req->as.create.type = CD_INSTANCE_CLOTH;
    req->as.create.def = cd_default_cloth_def();
    uint64_t present = 0;
    cd_status st = cd_parse_cloth_options(obj, false, &req->as.create.def, &present, err);
    if (st == CD_OK)
        st = refuse_layout(present, err);
    if (st == CD_OK)
        st = read_mesh(obj, lim, &req->as.create.cloth_mesh, err);
    cd_field_fault fault;
    const cd_cloth_def *def = &req->as.create.def;
    if (st == CD_OK && cd_step_work_check(req->as.create.cloth_mesh.vertex_count,
                                          cd_substeps_bound(def), def->solver_iterations,
                                          lim->max_step_work, &fault) != CD_OK)
        st = cd_fail_fault(err, CD_E_LIMIT_EXCEEDED, &fault);
    return st;
}

void cd_tri_mesh_free(cd_tri_mesh *mesh)
{
    /* The parser's arrays: const to the solver, owned by the request. */
    free((void *)mesh->vertices);
    free((void *)mesh->triangles);
    free((void *)mesh->uvs);
    *mesh = (cd_tri_mesh){0};
}
