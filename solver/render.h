/* The render triangles, defined once (private to the solver).
 *
 * A renderer's triangles are the instance's own list when it has one
 * (inst->triangles: a soft body's surface faces, or any mesh), else the
 * cloth grid's implicit triangulation: two per cell, tl bl tr and tr bl br.
 * `topology` (cd_instance_triangles) and the vertex normals
 * (cd_instance_normals) both read them here, so the normals are always
 * those of the triangles a client draws. */
#ifndef CLOTHD_SOLVER_RENDER_H
#define CLOTHD_SOLVER_RENDER_H

#include <string.h>

#include "internal.h"

static inline uint32_t cd_render_triangle_count(const cd_instance *inst)
{
    if (inst->triangles != NULL)
        return inst->triangle_count;
    if (inst->width < 2 || inst->height < 2)
        return 0;
    return 2u * (uint32_t)(inst->width - 1) * (uint32_t)(inst->height - 1);
}

/* Triangle t (< cd_render_triangle_count) as three particle indices. */
static inline void cd_render_triangle(const cd_instance *inst, uint32_t t, uint32_t out[3])
{
    if (inst->triangles != NULL) {
        memcpy(out, &inst->triangles[3 * (size_t)t], 3 * sizeof(uint32_t));
        return;
    }
    const uint32_t w = (uint32_t)inst->width, cell = t / 2;
    const uint32_t tl = (cell / (w - 1)) * w + cell % (w - 1), tr = tl + 1, bl = tl + w;
    if ((t & 1u) == 0) {
        out[0] = tl, out[1] = bl, out[2] = tr;
    } else {
        out[0] = tr, out[1] = bl, out[2] = bl + 1;
    }
}

#endif
