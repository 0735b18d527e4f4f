/* The render triangles, defined once (private to the solver).
 *
 * A renderer's triangles are the instance's own list (inst->triangles: a
 * soft body's surface faces, a mesh cloth's triangles, a tearable or torn
 * grid's), else, for a plain grid (cd_is_grid), its implicit
 * triangulation: two per cell, tl bl tr and tr bl br, cells in row order.
 * `topology` (cd_instance_triangles) and the vertex normals
 * (cd_instance_normals) both walk them with this cursor, so the normals
 * are always those of the triangles a client draws. The cursor
 * walks the grid cell by cell (no division per triangle: the normals pass
 * runs after every step that has a subscriber asking for them). */
#ifndef CLOTHD_SOLVER_RENDER_H
#define CLOTHD_SOLVER_RENDER_H

#include <stdbool.h>
#include <string.h>

#include "internal.h"

typedef struct cd_render_cursor {
    const uint32_t *list; /* inst->triangles, or NULL: a plain grid */
    uint32_t left;        /* triangles still to come */
    uint32_t width;       /* grid: particles per row */
    uint32_t tl;          /* grid: the current cell's top-left particle */
    uint32_t x;           /* grid: its column */
    bool second;          /* grid: the cell's tr bl br triangle is next */
} cd_render_cursor;

static inline uint32_t cd_render_triangle_count(const cd_instance *inst)
{
    if (!cd_is_grid(inst))
        return inst->triangle_count;
    if (inst->width < 2 || inst->height < 2)
        return 0;
    return 2u * (uint32_t)(inst->width - 1) * (uint32_t)(inst->height - 1);
}

static inline cd_render_cursor cd_render_begin(const cd_instance *inst)
{
    return (cd_render_cursor){.list = cd_is_grid(inst) ? NULL : inst->triangles,
                              .left = cd_render_triangle_count(inst),
                              .width = (uint32_t)inst->width};
}

/* The next triangle as three particle indices; false after the last. */
static inline bool cd_render_next(cd_render_cursor *c, uint32_t out[3])
{
    if (c->left == 0)
        return false;
    c->left--;
    if (c->list != NULL) {
        memcpy(out, c->list, 3 * sizeof(uint32_t));
        c->list += 3;
        return true;
    }
    const uint32_t tl = c->tl, tr = tl + 1, bl = tl + c->width;
    if (!c->second) {
        out[0] = tl, out[1] = bl, out[2] = tr;
        c->second = true;
        return true;
    }
    out[0] = tr, out[1] = bl, out[2] = bl + 1;
    c->second = false;
    c->tl++;
    if (++c->x == c->width - 1) { /* the row's last cell: on to the next row */
        c->x = 0;
        c->tl++;
    }
    return true;
}

#endif
