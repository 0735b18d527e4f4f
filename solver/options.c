/* The live options of an instance: how the seed's stiffness and the XPBD
 * seed's compliance map onto the constraint groups, masses, and the checks
 * shared by create and configure. */
#include "internal.h"
#include "vec3.h"

#define CD_SHEAR_FACTOR 0.8f /* the seed: shear stiffness is 0.8 x stiffness */

static bool in_range(float v, float lo, float hi)
{
    return v >= lo && v <= hi; /* false for NaN */
}

bool cd_options_are_valid(const cd_cloth_def *def)
{
    const float inf = INFINITY;
    return cd_float_is_valid(def->mass) && def->mass > 0.0f && in_range(def->stiffness, 0, 1) &&
           in_range(def->bend_stiffness, 0, 1) && in_range(def->damping, 0, 1) &&
           def->solver_iterations >= 1 && def->solver_iterations <= 256 &&
           cd_vec3_is_valid(def->gravity) &&
           (def->stretch_compliance == CD_UNSET || in_range(def->stretch_compliance, 0, 1e9f)) &&
           (def->bend_compliance == CD_UNSET || in_range(def->bend_compliance, 0, 1e9f)) &&
           def->substeps >= 1 && def->substeps <= 64 &&
           (def->velocity_retention == CD_UNSET ||
            (def->velocity_retention > 0.0f && def->velocity_retention <= 1.0f)) &&
           in_range(def->thickness, 0, 1e3f) && def->particle_mass > 0.0f &&
           def->particle_mass < inf && (def->wind_model == CD_WIND_AERO ||
                                        def->wind_model == CD_WIND_CONSTANT) &&
           in_range(def->air_density, 0, 1e4f) && in_range(def->drag, 0, 1e3f) &&
           in_range(def->lift, 0, 1e3f) && in_range(def->tether_scale, 1, 1e3f) &&
           in_range(def->sleep_threshold, 0, 1e3f) && in_range(def->self_distance, 0, 1e3f) &&
           in_range(def->volume_stiffness, 0, 1) &&
           (def->volume_compliance == CD_UNSET || in_range(def->volume_compliance, 0, 1e9f));
}

/* Real masses (1/kg): compliance is then in metres per newton. Cloth
 * spreads its mass evenly; a soft body by tetrahedron volume, a quarter of
 * each tet's share to each of its vertices (a vertex of no tet gets the
 * average). */
static void assign_masses(cd_instance *inst, float mass)
{
    const uint32_t n = inst->particle_count;
    const float average = mass / (float)n;
    for (uint32_t i = 0; i < n; i++)
        inst->own_inv_mass[i] = 0.0f; /* used as the mass accumulator first */
    if (inst->tet_count > 0 && inst->rest_volume > 0.0f) {
        for (uint32_t t = 0; t < inst->tet_count; t++) {
            const cd_tet *tet = &inst->tets[t];
            float share = 0.25f * mass * tet->rest_volume / inst->rest_volume;
            for (int k = 0; k < 4; k++)
                inst->own_inv_mass[tet->v[k]] += share;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        float m = inst->own_inv_mass[i] > 0.0f ? inst->own_inv_mass[i] : average;
        inst->own_inv_mass[i] = 1.0f / m;
        if (!inst->pinned[i])
            inst->inv_mass[i] = inst->own_inv_mass[i];
    }
}

void cd_apply_options(cd_instance *inst, const cd_cloth_def *def)
{
    /* Keep the layout: it is fixed at creation. */
    cd_cloth_def merged = *def;
    merged.width = inst->def.width;
    merged.height = inst->def.height;
    merged.spacing = inst->def.spacing;
    merged.origin = inst->def.origin;
    merged.right = inst->def.right;
    merged.down = inst->def.down;
    bool tethers_changed = merged.tethers != inst->def.tethers ||
                           merged.tether_scale != inst->def.tether_scale;
    inst->def = merged;

    cd_group *g = inst->groups;
    g[CD_GROUP_STRETCH].stiffness = def->stiffness;
    g[CD_GROUP_SHEAR].stiffness = def->stiffness * CD_SHEAR_FACTOR;
    g[CD_GROUP_BEND].stiffness = def->bend_stiffness;
    g[CD_GROUP_STRETCH].compliance = def->stretch_compliance;
    g[CD_GROUP_SHEAR].compliance = def->stretch_compliance;
    g[CD_GROUP_BEND].compliance = def->bend_compliance;

    assign_masses(inst, def->mass);
    if (tethers_changed || !inst->started)
        inst->tethers_dirty = true;
    cd_instance_wake(inst);
}

cd_status cd_instance_configure(cd_instance *inst, const cd_cloth_def *def)
{
    if (!cd_options_are_valid(def))
        return CD_E_INVALID_ARGUMENT;
    if (def->self_distance > 0.0f && !cd_self_collision_reserve(inst))
        return CD_E_INTERNAL;
    cd_apply_options(inst, def);
    return CD_OK;
}

cd_cloth_def cd_instance_def(const cd_instance *inst)
{
    return inst->def;
}

void cd_instance_wake(cd_instance *inst)
{
    inst->sleeping = false;
    inst->still_time = 0.0f;
}
