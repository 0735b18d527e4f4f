/* clothd protocol — the cloth options of `create` and `set` (private). */
#ifndef CLOTHD_PROTOCOL_OPTIONS_H
#define CLOTHD_PROTOCOL_OPTIONS_H

#include "protocol.h"

/* Reads the cloth fields of `obj` over `def` (which holds the defaults).
 * `for_set`: the layout fields are refused ("width: fixed at creation").
 * *present receives the fields given (bits of CD_OPT_*). Pairs that name
 * one setting twice (stiffness / stretchCompliance, bendStiffness /
 * bendCompliance, damping / velocityRetention, solverIterations /
 * iterations) are refused together. */
cd_status cd_parse_cloth_options(const cJSON *obj, bool for_set, cd_cloth_def *def,
                                 uint64_t *present, cd_error *err);



/* The rest of a soft body's `create`: the options (seed soft-body
 * defaults) and the mesh, given as "vertices" + "tetrahedra" or generated
 * from "shape" ("box": size, cells, origin; "ball": radius, resolution,
 * center). Fills req->as.create. */
/* The painted properties of create and set (paint.c): each given one's
 * values (owned; NULL with `given`: clear it), 1 value or one per vertex. */
cd_status cd_parse_paint(const cJSON *obj, const cd_limits *lim, cd_paint_request *paint,
                         cd_error *err);
void cd_paint_request_free(cd_paint_request *paint);
cd_status cd_parse_skin(const cJSON *obj, const cd_limits *lim, cd_request *req, cd_error *err);
/* create {"type":"cloth","vertices":...,"triangles":...}: fills
 * req->as.create.def and cloth_mesh (owned: cd_tri_mesh_free). */
cd_status cd_parse_mesh_cloth(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err);
void cd_tri_mesh_free(cd_tri_mesh *mesh);
cd_status cd_parse_softbody(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err);
#endif
