/* Painted per-vertex properties on the wire (create and set), and the
 * `skin` command's arrays. A property is a number (every vertex), an
 * array of one number per vertex, or null (unpainted again); its rows are
 * the solver's (cd_paint_specs: names, ranges). The vertex count is the
 * instance's, checked where it is known (server/dispatch.c). */
#include <inttypes.h>
#include <stdlib.h>

#include "json_fields.h"
#include "options.h"

cd_status cd_parse_paint(const cJSON *obj, const cd_limits *lim, cd_paint_request *paint,
                         cd_error *err)
{
    for (int k = 0; k < CD_PAINT_COUNT; k++) {
        const cd_paint_spec *spec = &cd_paint_specs[k];
        const cJSON *item = cd_json_member(obj, spec->name);
        if (item == NULL)
            continue;
        paint->given[k] = true;
        if (cJSON_IsNull(item))
            continue; /* values NULL: clear */
        const cd_float_range range = {.min = spec->min, .max = spec->max,
                                      .has_min = true, .has_max = true};
        cd_status st;
        if (cJSON_IsArray(item)) {
            st = cd_json_float_array(item, spec->name, lim->max_list, &range, &paint->values[k],
                                     &paint->count[k], err);
            if (st == CD_OK && paint->count[k] == 0)
                st = cd_fail(err, CD_E_INVALID_ARGUMENT,
                             "%s: one value per vertex, or a number for all", spec->name);
        } else {
            paint->values[k] = malloc(sizeof(float));
            if (paint->values[k] == NULL)
                return cd_fail(err, CD_E_INTERNAL, "%s: out of memory", spec->name);
            paint->count[k] = 1;
            st = cd_json_float(item, spec->name, &range, paint->values[k], err);
        }
        if (st != CD_OK)
            return st;
    }
    return CD_OK;
}

void cd_paint_request_free(cd_paint_request *paint)
{
    for (int k = 0; k < CD_PAINT_COUNT; k++)
        free(paint->values[k]);
    *paint = (cd_paint_request){0};
}

cd_status cd_paint_check_count(const cd_paint_request *paint, uint32_t vertices, cd_error *err)
{
    for (int k = 0; k < CD_PAINT_COUNT; k++)
        if (paint->values[k] != NULL && paint->count[k] != 1 && paint->count[k] != vertices)
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: %" PRIu32 " values for %" PRIu32
                           " vertices (one per vertex, or one for all)",
                           cd_paint_specs[k].name, paint->count[k], vertices);
    return CD_OK;
}

/* skin {"positions": [...], "normals": [...]}: points, flat or nested. */
cd_status cd_parse_skin(const cJSON *obj, const cd_limits *lim, cd_request *req, cd_error *err)
{
    const cJSON *positions = cd_json_member(obj, "positions");
    if (positions == NULL)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "positions: required");
    cd_status st = cd_json_points(positions, "positions", lim->max_list, &req->as.skin.positions,
                                  &req->as.skin.count, err);
    const cJSON *normals = cd_json_member(obj, "normals");
    if (st == CD_OK && normals != NULL)
        st = cd_json_points(normals, "normals", lim->max_list, &req->as.skin.normals,
                            &req->as.skin.normal_count, err);
    if (st == CD_OK && normals != NULL && req->as.skin.normal_count != req->as.skin.count)
        st = cd_fail(err, CD_E_INVALID_ARGUMENT,
                     "normals: %" PRIu32 " normals for %" PRIu32 " positions",
                     req->as.skin.normal_count, req->as.skin.count);
    return st;
}
