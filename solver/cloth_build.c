/* Cloth construction: the particle grid and the seed's constraint table.
 *
 *   structural  (x,y)-(x+1,y), (x,y)-(x,y+1)     rest s,      stiffness
 *   shear       (x,y)-(x+1,y+1), (x+1,y)-(x,y+1) rest s*sqrt2, stiffness*0.8
 *   bending     (x,y)-(x+2,y), (x,y)-(x,y+2)     rest 2s,     bendStiffness
 *
 * Constraints are emitted in that order, one group per family pair
 * (structural first, which cd_instance_max_structural_strain relies on),
 * each family in two colours (see push_family); colour.c then stores each
 * group colour by colour for the kernels. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

static uint32_t cloth_constraint_count(uint32_t w, uint32_t h)
{
    return (w - 1) * h + w * (h - 1) + 2 * (w - 1) * (h - 1) + (w - 2) * h + w * (h - 2);
}

/* One family of the table: for every grid cell (x, y) where both ends
 * exist, particle (x + ax, y + ay) joined to (x + bx, y + by).
 *
 * The family is emitted in two colours, (coord / period) % 2 along
 * `colour_x ? x : y`, chosen so that no two constraints of one colour share
 * a particle. Consecutive projections are then independent and the CPU
 * overlaps them instead of waiting on the previous store; it is still
 * Gauss-Seidel, in a fixed order, so still deterministic. */
typedef struct cd_family {
    uint32_t ax, ay, bx, by;
    bool colour_x;
    uint32_t period;
} cd_family;

static void push_family(cd_distance *c, uint32_t *n, uint32_t w, uint32_t h, cd_family f,
                        float rest)
{
    const uint32_t nx = w - (f.ax > f.bx ? f.ax : f.bx);
    const uint32_t ny = h - (f.ay > f.by ? f.ay : f.by);
    for (uint32_t colour = 0; colour < 2; colour++)
        for (uint32_t y = 0; y < ny; y++)
            for (uint32_t x = 0; x < nx; x++) {
                if (((f.colour_x ? x : y) / f.period) % 2 != colour)
                    continue;
                c[(*n)++] = (cd_distance){.a = (y + f.ay) * w + x + f.ax,
                                          .b = (y + f.by) * w + x + f.bx,
                                          .rest = rest,
                                          .lambda = 0.0f};
            }
}

static void build_constraints(cd_instance *inst, const cd_cloth_def *def)
{
    const uint32_t w = (uint32_t)def->width, h = (uint32_t)def->height;
    const float s = def->spacing;
    cd_distance *c = inst->constraints;
    cd_group *g = inst->groups;
    uint32_t n = 0;

    /*                                        a       b    colour along, period */
    g[CD_GROUP_STRETCH].begin = n;
    push_family(c, &n, w, h, (cd_family){0, 0, 1, 0, true, 1}, s);
    push_family(c, &n, w, h, (cd_family){0, 0, 0, 1, false, 1}, s);
    g[CD_GROUP_STRETCH].end = g[CD_GROUP_SHEAR].begin = n;
    push_family(c, &n, w, h, (cd_family){0, 0, 1, 1, false, 1}, s * sqrtf(2.0f));
    push_family(c, &n, w, h, (cd_family){1, 0, 0, 1, false, 1}, s * sqrtf(2.0f));
    g[CD_GROUP_SHEAR].end = g[CD_GROUP_BEND].begin = n;
    push_family(c, &n, w, h, (cd_family){0, 0, 2, 0, true, 2}, 2.0f * s);
    push_family(c, &n, w, h, (cd_family){0, 0, 0, 2, false, 2}, 2.0f * s);
    g[CD_GROUP_BEND].end = n;

    assert(n == inst->constraint_count);
}

cd_vec3 cd_rest_position(const cd_instance *inst, uint32_t particle)
{
    if (inst->rest != NULL)
        return cd_v3_load(&inst->rest[3 * particle]);
    const uint32_t w = (uint32_t)inst->width;
    const float s = inst->def.spacing;
    return cd_v3((float)(particle % w) * s, (float)(particle / w) * s, 0.0f);
}

cd_vec3 cd_initial_position(const cd_instance *inst, uint32_t particle)
{
    if (inst->rest != NULL)
        return cd_v3_load(&inst->rest[3 * particle]);
    const cd_vec3 r = cd_rest_position(inst, particle);
    const cd_cloth_def *d = &inst->def;
    return cd_v3_add(d->origin, cd_v3_add(cd_v3_scale(d->right, r.x), cd_v3_scale(d->down, r.y)));
}

bool cd_cloth_build(cd_instance *inst, const cd_cloth_def *def)
{
    const uint32_t w = (uint32_t)def->width, h = (uint32_t)def->height;
    const uint32_t n = w * h;

    inst->type = CD_INSTANCE_CLOTH;
    inst->max_self_distance = def->spacing;
    inst->width = def->width;
    inst->height = def->height;
    if (!cd_instance_alloc(inst, n, cloth_constraint_count(w, h)))
        return false;

    const cd_vec3 right = cd_v3_normalize_or(def->right, cd_v3(1, 0, 0));
    const cd_vec3 down = cd_v3_normalize_or(def->down, cd_v3(0, -1, 0));
    /* Laid out around the anchor (anchor.c), not in the world: positions
     * near the origin are rounded finely, so the particles start at their
     * rest lengths to 1e-7 rather than to the float spacing of the world
     * coordinates (5e-7 m at 10 m), which the solver would then fight. */
    const cd_vec3 centre = cd_v3_add(def->origin,
                                     cd_v3_add(cd_v3_scale(right, 0.5f * (float)(w - 1) * def->spacing),
                                               cd_v3_scale(down, 0.5f * (float)(h - 1) * def->spacing)));
    inst->anchor = cd_v3(roundf(centre.x), roundf(centre.y), roundf(centre.z));
    const cd_vec3 corner = cd_v3_sub(def->origin, inst->anchor);
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            uint32_t i = y * w + x;
            cd_vec3 p = cd_v3_add(corner,
                                  cd_v3_add(cd_v3_scale(right, (float)x * def->spacing),
                                            cd_v3_scale(down, (float)y * def->spacing)));
            cd_v3_store(&inst->pos[3 * i], p);
            cd_v3_store(&inst->prev[3 * i], p);
        }
    }
    build_constraints(inst, def);
    if (!cd_colour_constraints(inst))
        return false;

    inst->def = *def;
    inst->def.right = right;
    inst->def.down = down;
    cd_apply_options(inst, def);
    inst->enabled = true;
    return def->self_distance <= 0.0f || cd_self_collision_reserve(inst);
}

bool cd_instance_alloc(cd_instance *inst, uint32_t particles, uint32_t constraints)
{
    inst->particle_count = particles;
    inst->constraint_count = constraints;
    inst->pos = malloc(sizeof(float) * 3u * particles);
    inst->prev = malloc(sizeof(float) * 3u * particles);
    inst->residual = calloc(3u * (size_t)particles, sizeof(float));
    inst->inv_mass = malloc(sizeof(float) * particles);
    inst->own_inv_mass = malloc(sizeof(float) * particles);
    inst->pinned = calloc(particles, 1);
    inst->tether_anchor = malloc(sizeof(uint32_t) * particles);
    inst->tether_length = malloc(sizeof(float) * particles);
    inst->constraints = malloc(sizeof(cd_distance) * (constraints ? constraints : 1));
    if (!inst->pos || !inst->prev || !inst->residual || !inst->inv_mass || !inst->own_inv_mass || !inst->pinned ||
        !inst->tether_anchor || !inst->tether_length || !inst->constraints)
        return false;
    if (particles >= CD_TEAM_MIN_PARTICLES) {
        const uint32_t blocks = cd_particle_blocks(inst);
        inst->team = cd_team_create();
        inst->block_guard = malloc(sizeof(cd_guard_sums) * blocks);
        if (!inst->team || !inst->block_guard)
            return false;
    }
    for (uint32_t i = 0; i < particles; i++)
        inst->tether_anchor[i] = CD_NO_ANCHOR;
    return true;
}

void cd_instance_free(cd_instance *inst)
{
    if (inst == NULL)
        return;
    free(inst->pos);
    free(inst->prev);
    free(inst->residual);
    free(inst->inv_mass);
    free(inst->own_inv_mass);
    free(inst->pinned);
    free(inst->tether_anchor);
    free(inst->tether_length);
    free(inst->constraints);
    free(inst->coloured.a);
    free(inst->coloured.b);
    free(inst->coloured.rest);
    free(inst->coloured.lambda);
    free(inst->coloured.compliance_scale);
    free(inst->coloured.colours);
    free(inst->coloured.part_colour);
    free(inst->rest);
    free(inst->tets);
    free(inst->elements);
    free(inst->element_colours);
    free(inst->contact_depth);
    free(inst->triangles);
    free(inst->uvs);
    free(inst->edge_start);
    free(inst->edge_to);
    free(inst->edge_length);
    free(inst->geodesic);
    free(inst->heap);
    free(inst->hash_start);
    free(inst->hash_entries.cx); /* the block of all the entries' arrays */
    free(inst->self_move);
    free(inst->self_blocks);
    free(inst->neighbour_start);
    free(inst->neighbours);
    free(inst->pairs);
    free(inst->pins);
    cd_skin_free(inst);
    free(inst->colliders);
    cd_team_free(inst->team);
    free(inst->block_guard);
    free(inst);
}
