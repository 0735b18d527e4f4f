/* The options of an instance and of a collider: the table of
 * options_table.h as data, the defaults and checks it defines, and how the
 * seed's stiffness and the XPBD seed's compliance map onto the constraint
 * groups and masses. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "render.h"
#include "vec3.h"

#define CD_SHEAR_FACTOR 0.8f /* the seed: shear stiffness is 0.8 x stiffness */

/* ---- the table as data ---- */

#define CD_ENDS_CLOSED 0u
#define CD_ENDS_OPEN_MIN 1u
#define CD_ENDS_OPEN_MAX 2u
#define CD_DEFAULTS(...) {__VA_ARGS__}

#define CD_OPTION_ROW(type, ID, member_, wire, kind_, min_, max_, ends, def, flags_)               \
    {.name = wire,                                                                                 \
     .kind = CD_OPTION_##kind_,                                                                    \
     .offset = offsetof(type, member_),                                                            \
     .min = (min_),                                                                                \
     .max = (max_),                                                                                \
     .min_open = (CD_ENDS_##ends & CD_ENDS_OPEN_MIN) != 0,                                         \
     .max_open = (CD_ENDS_##ends & CD_ENDS_OPEN_MAX) != 0,                                         \
     .flags = (flags_),                                                                            \
     .defaults = CD_DEFAULTS def},
#define CD_CLOTH_ROW(...) CD_OPTION_ROW(cd_cloth_def, __VA_ARGS__)
#define CD_COLLIDER_ROW(...) CD_OPTION_ROW(cd_collider_def, __VA_ARGS__)

const cd_option_spec cd_cloth_option_specs[CD_OPT_COUNT] = {CD_CLOTH_OPTION_MAP(CD_CLOTH_ROW)};
const cd_option_spec cd_collider_option_specs[CD_COLLIDER_OPT_COUNT] = {
    CD_COLLIDER_OPTION_MAP(CD_COLLIDER_ROW)};

/* Every member of the row's kind has the size the kind says. */
#define CD_CHECK_SIZE(type, ID, member, wire, kind, min, max, ends, def, flags)                    \
    _Static_assert(sizeof(((type *)0)->member) == CD_KIND_SIZE_##kind, #member " has its kind's size");
#define CD_KIND_SIZE_INT sizeof(int32_t)
#define CD_KIND_SIZE_FLOAT sizeof(float)
#define CD_KIND_SIZE_VEC3 sizeof(cd_vec3)
#define CD_KIND_SIZE_POINT sizeof(cd_vec3)
#define CD_KIND_SIZE_DIRECTION sizeof(cd_vec3)
#define CD_KIND_SIZE_BOOL sizeof(bool)
#define CD_KIND_SIZE_WIND_MODEL sizeof(cd_wind_model)
#define CD_KIND_SIZE_EXTENTS sizeof(cd_vec3)
#define CD_KIND_SIZE_ROTATION sizeof(cd_quat)
#define CD_CHECK_CLOTH(...) CD_CHECK_SIZE(cd_cloth_def, __VA_ARGS__)
#define CD_CHECK_COLLIDER(...) CD_CHECK_SIZE(cd_collider_def, __VA_ARGS__)
CD_CLOTH_OPTION_MAP(CD_CHECK_CLOTH)
CD_COLLIDER_OPTION_MAP(CD_CHECK_COLLIDER)

size_t cd_option_size(const cd_option_spec *spec)
{
    switch (spec->kind) {
    case CD_OPTION_INT: return sizeof(int32_t);
    case CD_OPTION_FLOAT: return sizeof(float);
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT:
    case CD_OPTION_DIRECTION:
    case CD_OPTION_EXTENTS: return sizeof(cd_vec3);
    case CD_OPTION_BOOL: return sizeof(bool);
    case CD_OPTION_WIND_MODEL: return sizeof(cd_wind_model);
    case CD_OPTION_ROTATION: return sizeof(cd_quat);
    }
    return 0;
}

const char *cd_collider_type_name(int type)
{
    static const char *const names[] = {
#define CD_COLLIDER_TYPE_NAME(ID, wire) [CD_COLLIDER_##ID] = wire,
        CD_COLLIDER_TYPE_MAP(CD_COLLIDER_TYPE_NAME)
#undef CD_COLLIDER_TYPE_NAME
    };
    return type >= 0 && type < CD_COLLIDER_TYPE_COUNT ? names[type] : NULL;
}

const char *cd_wind_model_name(int model)
{
    switch (model) {
    case CD_WIND_AERO: return "aero";
    case CD_WIND_CONSTANT: return "constant";
    case CD_WIND_DRAG_LIFT: return "dragLift";
    }
    return NULL;
}

const char *cd_wind_model_names(void)
{
    return "\"aero\", \"constant\" or \"dragLift\"";
}

void cd_describe_range(char *buf, size_t cap, bool integer, double min, double max,
                       bool min_open, bool max_open)
{
    const char *what = integer ? "an integer" : "a number";
    if (integer && max >= (double)INT32_MAX)
        snprintf(buf, cap, "%s %s %.15g", what, min_open ? ">" : ">=", min);
    else
        snprintf(buf, cap, "%s in %c%.15g, %.15g%c", what, min_open ? '(' : '[', min, max,
                 max_open ? ')' : ']');
}

void cd_option_describe(const cd_option_spec *spec, char *buf, size_t cap)
{
    cd_describe_range(buf, cap, spec->kind == CD_OPTION_INT, spec->min, spec->max, spec->min_open,
                      spec->max_open);
}

bool cd_option_in_range(const cd_option_spec *spec, double v)
{
    if (spec->min_open ? !(v > spec->min) : !(v >= spec->min))
        return false;
    return spec->max_open ? v < spec->max : v <= spec->max;
}

/* Writes the row's default into the struct at `base`. */
static void write_default(void *base, const cd_option_spec *spec)
{
    unsigned char *dst = (unsigned char *)base + spec->offset;
    const double *d = spec->defaults;
    switch (spec->kind) {
    case CD_OPTION_INT: {
        int32_t v = (int32_t)d[0];
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CD_OPTION_FLOAT: {
        float v = (float)d[0];
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT:
    case CD_OPTION_DIRECTION:
    case CD_OPTION_EXTENTS: {
        cd_vec3 v = {(float)d[0], (float)d[1], (float)d[2]};
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CD_OPTION_ROTATION: {
        cd_quat v = {(float)d[0], (float)d[1], (float)d[2], (float)d[3]};
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CD_OPTION_BOOL: {
        bool v = d[0] != 0.0;
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CD_OPTION_WIND_MODEL: {
        cd_wind_model v = (cd_wind_model)(int)d[0];
        memcpy(dst, &v, sizeof v);
        break;
    }
    }
}

cd_cloth_def cd_default_cloth_def(void)
{
    cd_cloth_def def;
    memset(&def, 0, sizeof def);
    for (int i = 0; i < CD_OPT_COUNT; i++)
        write_default(&def, &cd_cloth_option_specs[i]);
    return def;
}

cd_collider_def cd_default_collider_def(cd_collider_type type)
{
    cd_collider_def def;
    memset(&def, 0, sizeof def);
    for (int i = 0; i < CD_COLLIDER_OPT_COUNT; i++)
        write_default(&def, &cd_collider_option_specs[i]);
    def.type = type;
    def.attachment = 0;
    return def;
}

/* ---- checks ---- */

cd_status cd_fault_set(cd_field_fault *fault, cd_status code, cd_fault_kind kind,
                       const char *field, const char *fmt, ...)
{
    if (fault == NULL)
        return code;
    fault->kind = kind;
    snprintf(fault->field, sizeof fault->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault->reason, sizeof fault->reason, fmt, ap);
    va_end(ap);
    return code;
}

/* A rotation: four finite numbers, not zero, of unit length within
 * CD_ROTATION_UNIT_TOLERANCE (a quaternion further off is a mistake, Euler
 * angles or an unnormalised blend, not a rotation to guess from). */
static cd_status check_rotation(const cd_option_spec *spec, cd_quat q, cd_field_fault *fault)
{
    if (!cd_float_is_valid(q.x) || !cd_float_is_valid(q.y) || !cd_float_is_valid(q.z) ||
        !cd_float_is_valid(q.w))
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                            "must be a quaternion [x, y, z, w] of 4 finite numbers");
    const double length = sqrt((double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z +
                               (double)q.w * q.w);
    if (length == 0.0)
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                            "must not be zero-length");
    if (fabs(length - 1.0) > CD_ROTATION_UNIT_TOLERANCE)
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                            "must be a unit quaternion (length within %g of 1, not %.6g)",
                            CD_ROTATION_UNIT_TOLERANCE, length);
    return CD_OK;
}

/* One row of the struct at `base`. */
static cd_status check_row(const void *base, const cd_option_spec *spec, cd_field_fault *fault)
{
    const unsigned char *src = (const unsigned char *)base + spec->offset;
    char range[96];
    switch (spec->kind) {
    case CD_OPTION_INT: {
        int32_t v;
        memcpy(&v, src, sizeof v);
        if (cd_option_in_range(spec, (double)v))
            return CD_OK;
        cd_option_describe(spec, range, sizeof range);
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name, "must be %s",
                         range);
    }
    case CD_OPTION_FLOAT: {
        float v;
        memcpy(&v, src, sizeof v);
        if ((spec->flags & CD_OPTION_UNSET_OK) && v == CD_UNSET)
            return CD_OK;
        if (!cd_float_is_valid(v))
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                             "must be finite");
        if (cd_option_in_range(spec, (double)v))
            return CD_OK;
        cd_option_describe(spec, range, sizeof range);
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name, "must be %s",
                         range);
    }
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT:
    case CD_OPTION_DIRECTION: {
        cd_vec3 v;
        memcpy(&v, src, sizeof v);
        if (!cd_vec3_is_valid(v))
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                             "must be an array of 3 finite numbers");
        if (spec->kind == CD_OPTION_POINT && !cd_vec3_in_world(v))
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                             "outside the world box (|x|, |y|, |z| <= %g m)",
                             (double)CD_WORLD_EXTENT);
        if (spec->kind == CD_OPTION_DIRECTION && v.x == 0.0f && v.y == 0.0f && v.z == 0.0f)
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                             "must not be zero-length");
        return CD_OK;
    }
    case CD_OPTION_EXTENTS: {
        cd_vec3 v;
        memcpy(&v, src, sizeof v);
        if (!cd_vec3_is_valid(v))
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                                "must be an array of 3 finite numbers");
        if (cd_option_in_range(spec, v.x) && cd_option_in_range(spec, v.y) &&
            cd_option_in_range(spec, v.z))
            return CD_OK;
        cd_option_describe(spec, range, sizeof range);
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                            "each must be %s", range);
    }
    case CD_OPTION_ROTATION: {
        cd_quat q;
        memcpy(&q, src, sizeof q);
        return check_rotation(spec, q, fault);
    }
    case CD_OPTION_BOOL:
        return CD_OK;
    case CD_OPTION_WIND_MODEL: {
        cd_wind_model v;
        memcpy(&v, src, sizeof v);
        if (cd_wind_model_name((int)v) != NULL)
            return CD_OK;
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                         "must be %s", cd_wind_model_names());
    }
    }
    return CD_OK;
}

/* The rows of `specs` whose flags have none of `skip`. */
static cd_status check_rows(const void *base, const cd_option_spec *specs, int count,
                            unsigned skip, cd_field_fault *fault)
{
    for (int i = 0; i < count; i++) {
        if (specs[i].flags & skip)
            continue;
        cd_status st = check_row(base, &specs[i], fault);
        if (st != CD_OK)
            return st;
    }
    return CD_OK;
}

/* Non-zero and not parallel: otherwise particles would coincide. Both are
 * normalised first, so the cross product's length is the sine between them. */
static bool axes_span_a_plane(cd_vec3 right, cd_vec3 down)
{
    cd_vec3 zero = cd_v3(0, 0, 0);
    cd_vec3 r = cd_v3_normalize_or(right, zero), d = cd_v3_normalize_or(down, zero);
    return cd_v3_length(cd_v3_cross(r, d)) > 1e-3f;
}

/* True when every particle of the grid starts inside the instability
 * guard's box: a cloth laid out beyond it would trip the guard on every
 * step and could never be simulated. The grid is affine, so its corners
 * bound it; they are computed as cd_cloth_build computes positions. */
static bool grid_in_world(const cd_cloth_def *def)
{
    const cd_vec3 right = cd_v3_normalize_or(def->right, cd_v3(1, 0, 0));
    const cd_vec3 down = cd_v3_normalize_or(def->down, cd_v3(0, -1, 0));
    const float xs[2] = {0.0f, (float)(def->width - 1) * def->spacing};
    const float ys[2] = {0.0f, (float)(def->height - 1) * def->spacing};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            cd_vec3 p = cd_v3_add(def->origin,
                                  cd_v3_add(cd_v3_scale(right, xs[i]), cd_v3_scale(down, ys[j])));
            if (!cd_vec3_in_world(p))
                return false;
        }
    return true;
}

cd_status cd_cloth_options_check(const cd_cloth_def *def, cd_field_fault *fault)
{
    return check_rows(def, cd_cloth_option_specs, CD_OPT_COUNT, CD_OPTION_LAYOUT | CD_OPTION_ALIAS,
                      fault);
}

cd_status cd_self_distance_check(float self_distance, float bound, bool cloth,
                                 cd_field_fault *fault)
{
    if (self_distance <= bound)
        return CD_OK;
    return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "selfDistance",
                     "must be at most the %s (%g m)",
                     cloth ? "spacing" : "shortest edge of the mesh", (double)bound);
}

cd_status cd_cloth_def_check(const cd_cloth_def *def, cd_field_fault *fault)
{
    cd_status st = check_rows(def, cd_cloth_option_specs, CD_OPT_COUNT, CD_OPTION_ALIAS, fault);
    if (st == CD_OK)
        st = cd_self_distance_check(def->self_distance, def->spacing, true, fault);
    if (st != CD_OK)
        return st;
    if (!axes_span_a_plane(def->right, def->down))
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_LAYOUT, "down",
                         "must not be parallel to right");
    if (!grid_in_world(def))
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_LAYOUT, "origin",
                         "the cloth reaches outside the world box (|x|, |y|, |z| <= %g m)",
                         (double)CD_WORLD_EXTENT);
    return CD_OK;
}

cd_status cd_option_check(const cd_option_spec *spec, const void *base, cd_field_fault *fault)
{
    return check_row(base, spec, fault);
}

cd_status cd_collider_def_check(const cd_collider_def *def, cd_field_fault *fault)
{
    if (cd_collider_type_name((int)def->type) == NULL)
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "type",
                         "unknown collider type %d", (int)def->type);
    const unsigned skip = (def->type != CD_COLLIDER_BOX ? CD_OPTION_BOX : 0u) |
                          (def->type != CD_COLLIDER_TAPERED_CAPSULE ? CD_OPTION_TAPERED : 0u);
    return check_rows(def, cd_collider_option_specs, CD_COLLIDER_OPT_COUNT, skip, fault);
}

int32_t cd_substeps_for(const cd_cloth_def *def, float dt)
{
    if (def->substeps > 0)
        return def->substeps;
    const float wanted = ceilf(dt * def->solver_frequency - 1e-3f); /* 1/60 x 360 = 6, not 7 */
    return wanted < 1.0f ? 1 : wanted > (float)CD_AUTO_SUBSTEPS_MAX ? CD_AUTO_SUBSTEPS_MAX
                                                                      : (int32_t)wanted;
}

int32_t cd_substeps_bound(const cd_cloth_def *def)
{
    return def->substeps > 0 ? def->substeps : CD_AUTO_SUBSTEPS_MAX;
}

cd_status cd_step_work_check(uint64_t particles, int32_t substeps, int32_t iterations,
                             uint64_t limit, cd_field_fault *fault)
{
    const uint64_t s = substeps > 0 ? (uint64_t)substeps : 0;
    const uint64_t it = iterations > 0 ? (uint64_t)iterations : 0;
    /* At most 2^32 x 64 x 256 = 2^46 for valid options: no overflow. */
    const uint64_t work = particles * s * it;
    if (limit == 0 || work <= limit)
        return CD_OK;
    return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_STEP_WORK, "substeps, iterations",
                     "%" PRIu64 " particles x %" PRIu64 " substeps x %" PRIu64
                     " iterations = %" PRIu64 " exceeds the step work limit of %" PRIu64,
                     particles, s, it, work, limit);
}

/* A triangle's rest area; a grid has no rest array, so its corners are
 * gathered first. */
static double rest_triangle_area(const cd_instance *inst, const uint32_t tri[3])
{
    float corners[9];
    for (int k = 0; k < 3; k++)
        cd_v3_store(&corners[3 * k], cd_rest_position(inst, tri[k]));
    static const uint32_t first_three[3] = {0, 1, 2};
    return cd_triangle_area(corners, first_three);
}

/* Real masses (1/kg): compliance is then in metres per newton. Mass is
 * lumped by what each particle stands for: a cloth's by area (a grid's
 * and a mesh's alike, below), a soft body's by tetrahedron volume, a
 * quarter of each tet's share to each of its vertices (a vertex of no
 * triangle or tet gets the average). */
static void assign_masses(cd_instance *inst, float mass)
{
    const uint32_t n = inst->particle_count;
    const float average = mass / (float)n;
    for (uint32_t i = 0; i < n; i++)
        inst->own_inv_mass[i] = 0.0f; /* used as the mass accumulator first */
    if (inst->type == CD_INSTANCE_CLOTH) {
        /* A third of each triangle's rest area to each of its corners, the
         * same thirds the aerodynamic stage hands its forces to (aero.c):
         * lumped any other way, a sheet falling face first feels a drag per
         * mass that varies over it and cups (issue 10: by a grid's cells,
         * a 10 x 10 sheet cupped 0.44 m and fell 8 % fast). */
        double total = 0.0;
        uint32_t tri[3];
        for (cd_render_cursor c = cd_render_begin(inst); cd_render_next(&c, tri);)
            total += rest_triangle_area(inst, tri);
        for (cd_render_cursor c = cd_render_begin(inst); total > 0.0 && cd_render_next(&c, tri);) {
            const float share = (float)(mass * rest_triangle_area(inst, tri) / (3.0 * total));
            for (int k = 0; k < 3; k++)
                inst->own_inv_mass[tri[k]] += share;
        }
    } else if (inst->tet_count > 0 && inst->rest_volume > 0.0f) {
        for (uint32_t t = 0; t < inst->tet_count; t++) {
            const cd_tet *tet = &inst->tets[t];
            float share = 0.25f * mass * tet->rest_volume / inst->rest_volume;
            for (int k = 0; k < 4; k++)
                inst->own_inv_mass[tet->v[k]] += share;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        float m = inst->own_inv_mass[i] > 0.0f ? inst->own_inv_mass[i] : average;
        inst->own_inv_mass[i] = cd_particle_kinematic(inst, i)
                                    ? 0.0f
                                    : cd_particle_inv_mass_scale(inst, i) / m;
        if (!inst->pinned[i])
            inst->inv_mass[i] = inst->own_inv_mass[i];
    }
}

void cd_refresh_masses(cd_instance *inst)
{
    assign_masses(inst, inst->def.mass);
}

/* True when some row without CD_OPTION_QUIET differs between a and b. */
static bool loud_change(const cd_cloth_def *a, const cd_cloth_def *b)
{
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        const cd_option_spec *spec = &cd_cloth_option_specs[i];
        if (!(spec->flags & CD_OPTION_QUIET) &&
            memcmp((const unsigned char *)a + spec->offset, (const unsigned char *)b + spec->offset,
                   cd_option_size(spec)) != 0)
            return true;
    }
    return false;
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
    /* What a tether's length depends on (pins.c: tether_slack). */
    bool tethers_changed = merged.tethers != inst->def.tethers ||
                           merged.tether_scale != inst->def.tether_scale ||
                           merged.stretch_compliance != inst->def.stretch_compliance ||
                           merged.mass != inst->def.mass ||
                           merged.gravity.x != inst->def.gravity.x ||
                           merged.gravity.y != inst->def.gravity.y ||
                           merged.gravity.z != inst->def.gravity.z;
    /* Only a change wakes a sleeper, and a new level of detail or priority
     * alone is not one. */
    const bool wake = !inst->started || loud_change(&merged, &inst->def);
    inst->def = merged;

    cd_group *g = inst->groups;
    g[CD_GROUP_STRETCH].stiffness = def->stiffness;
    g[CD_GROUP_SHEAR].stiffness = def->stiffness * CD_SHEAR_FACTOR;
    g[CD_GROUP_BEND].stiffness = def->bend_stiffness;
    g[CD_GROUP_STRETCH].compliance = def->stretch_compliance;
    g[CD_GROUP_SHEAR].compliance = def->stretch_compliance;
    g[CD_GROUP_BEND].compliance = def->bend_compliance;
    if (inst->coloured.colours != NULL && inst->type == CD_INSTANCE_SOFTBODY)
        cd_refresh_compliance_scale(inst); /* out of memory: the old factors stay */

    assign_masses(inst, def->mass);
    if (tethers_changed || !inst->started)
        inst->tethers_dirty = true;
    if (wake)
        cd_instance_wake(inst);
}

cd_status cd_instance_configure_ex(cd_instance *inst, const cd_cloth_def *def,
                                   cd_field_fault *fault)
{
    cd_status st = cd_cloth_options_check(def, fault);
    if (st == CD_OK && def->tear_strain > 0.0f && inst->type != CD_INSTANCE_CLOTH)
        st = cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "tearStrain",
                          "soft bodies do not tear");
    else if (st == CD_OK && def->tear_strain > 0.0f && cd_is_grid(inst))
        st = cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "tearStrain",
                          "a grid cloth tears only when created with tearStrain (it is then "
                          "built as a mesh of the grid's triangles)");
    if (st == CD_OK)
        st = cd_self_distance_check(def->self_distance, inst->max_self_distance,
                                    cd_is_grid(inst), fault);
    if (st == CD_OK)
        st = cd_step_work_check(inst->particle_count, cd_substeps_bound(def), def->solver_iterations,
                                inst->max_step_work, fault);
    if (st != CD_OK)
        return st;
    if (def->self_distance > 0.0f && !cd_self_collision_reserve(inst))
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "selfDistance",
                         "out of memory for self-collision's buffers");
    if (inst->type == CD_INSTANCE_SOFTBODY && def->youngs_modulus > 0.0f &&
        !cd_material_reserve(inst))
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "youngsModulus",
                            "out of memory for the material's elements");
    cd_apply_options(inst, def);
    return CD_OK;
}

cd_status cd_instance_configure(cd_instance *inst, const cd_cloth_def *def)
{
    return cd_instance_configure_ex(inst, def, NULL);
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
