/* The cloth options: one table for `create` and `set`, and how a `set`
 * merges into an instance's current options. */
#include <string.h>

#include "json_fields.h"
#include "options.h"

#define RANGE_AT_LEAST_1 {.min = 1, .has_min = true}
#define RANGE_RETENTION {.min = 0, .max = 1, .min_open = true, .has_min = true, .has_max = true}

/* Bit i of a presence mask is cloth_fields[i]; keep in step with the enum. */
enum {
    OPT_WIDTH, OPT_HEIGHT, OPT_SPACING, OPT_MASS, OPT_STIFFNESS, OPT_BEND_STIFFNESS,
    OPT_DAMPING, OPT_ORIGIN, OPT_SOLVER_ITERATIONS, OPT_RIGHT, OPT_DOWN, OPT_GRAVITY,
    OPT_STRETCH_COMPLIANCE, OPT_BEND_COMPLIANCE, OPT_ITERATIONS, OPT_SUBSTEPS,
    OPT_VELOCITY_RETENTION, OPT_THICKNESS, OPT_PARTICLE_MASS, OPT_AIR_DENSITY, OPT_DRAG,
    OPT_LIFT, OPT_TETHERS, OPT_TETHER_SCALE, OPT_SLEEP_THRESHOLD, OPT_VOLUME_STIFFNESS,
    OPT_VOLUME_COMPLIANCE, OPT_SELF_DISTANCE,
    OPT_COUNT
};

#define BIT(opt) ((uint64_t)1 << (opt))
#define LAYOUT_BITS                                                                        \
    (BIT(OPT_WIDTH) | BIT(OPT_HEIGHT) | BIT(OPT_SPACING) | BIT(OPT_ORIGIN) | BIT(OPT_RIGHT) | \
     BIT(OPT_DOWN))

/* In the order PROTOCOL.md lists them: the first fault found is reported. */
static const cd_field_spec cloth_fields[OPT_COUNT] = {
    [OPT_WIDTH] = CD_INT_FIELD(cd_cloth_def, width, "width", 2, INT32_MAX),
    [OPT_HEIGHT] = CD_INT_FIELD(cd_cloth_def, height, "height", 2, INT32_MAX),
    [OPT_SPACING] = CD_FLOAT_FIELD(cd_cloth_def, spacing, "spacing", RANGE_POSITIVE),
    [OPT_MASS] = CD_FLOAT_FIELD(cd_cloth_def, mass, "mass", RANGE_POSITIVE),
    [OPT_STIFFNESS] = CD_FLOAT_FIELD(cd_cloth_def, stiffness, "stiffness", RANGE_UNIT),
    [OPT_BEND_STIFFNESS] =
        CD_FLOAT_FIELD(cd_cloth_def, bend_stiffness, "bendStiffness", RANGE_UNIT),
    [OPT_DAMPING] = CD_FLOAT_FIELD(cd_cloth_def, damping, "damping", RANGE_UNIT),
    [OPT_ORIGIN] = CD_VEC3_FIELD(cd_cloth_def, origin, "origin", FIELD_VEC3),
    [OPT_SOLVER_ITERATIONS] =
        CD_INT_FIELD(cd_cloth_def, solver_iterations, "solverIterations", 1, 256),
    [OPT_RIGHT] = CD_VEC3_FIELD(cd_cloth_def, right, "right", FIELD_DIRECTION),
    [OPT_DOWN] = CD_VEC3_FIELD(cd_cloth_def, down, "down", FIELD_DIRECTION),
    [OPT_GRAVITY] = CD_VEC3_FIELD(cd_cloth_def, gravity, "gravity", FIELD_VEC3),
    [OPT_STRETCH_COMPLIANCE] = CD_FLOAT_FIELD(cd_cloth_def, stretch_compliance,
                                              "stretchCompliance", RANGE_NON_NEGATIVE),
    [OPT_BEND_COMPLIANCE] =
        CD_FLOAT_FIELD(cd_cloth_def, bend_compliance, "bendCompliance", RANGE_NON_NEGATIVE),
    [OPT_ITERATIONS] = CD_INT_FIELD(cd_cloth_def, solver_iterations, "iterations", 1, 256),
    [OPT_SUBSTEPS] = CD_INT_FIELD(cd_cloth_def, substeps, "substeps", 1, 64),
    [OPT_VELOCITY_RETENTION] = CD_FLOAT_FIELD(cd_cloth_def, velocity_retention,
                                              "velocityRetention", RANGE_RETENTION),
    [OPT_THICKNESS] = CD_FLOAT_FIELD(cd_cloth_def, thickness, "thickness", RANGE_NON_NEGATIVE),
    [OPT_PARTICLE_MASS] =
        CD_FLOAT_FIELD(cd_cloth_def, particle_mass, "particleMass", RANGE_POSITIVE),
    [OPT_AIR_DENSITY] =
        CD_FLOAT_FIELD(cd_cloth_def, air_density, "airDensity", RANGE_NON_NEGATIVE),
    [OPT_DRAG] = CD_FLOAT_FIELD(cd_cloth_def, drag, "drag", RANGE_NON_NEGATIVE),
    [OPT_LIFT] = CD_FLOAT_FIELD(cd_cloth_def, lift, "lift", RANGE_NON_NEGATIVE),
    [OPT_TETHERS] = CD_BOOL_FIELD(cd_cloth_def, tethers, "tethers"),
    [OPT_TETHER_SCALE] =
        CD_FLOAT_FIELD(cd_cloth_def, tether_scale, "tetherScale", RANGE_AT_LEAST_1),
    [OPT_SLEEP_THRESHOLD] =
        CD_FLOAT_FIELD(cd_cloth_def, sleep_threshold, "sleepThreshold", RANGE_NON_NEGATIVE),
    [OPT_VOLUME_STIFFNESS] =
        CD_FLOAT_FIELD(cd_cloth_def, volume_stiffness, "volumeStiffness", RANGE_UNIT),
    [OPT_VOLUME_COMPLIANCE] = CD_FLOAT_FIELD(cd_cloth_def, volume_compliance,
                                             "volumeCompliance", RANGE_NON_NEGATIVE),
    [OPT_SELF_DISTANCE] =
        CD_FLOAT_FIELD(cd_cloth_def, self_distance, "selfDistance", RANGE_NON_NEGATIVE),
};
_Static_assert(OPT_COUNT < 64, "a presence mask holds every option and windModel");

/* Two names for one setting: at most one of them per request. */
static const struct {
    int a, b;
} exclusive[] = {
    {OPT_STIFFNESS, OPT_STRETCH_COMPLIANCE},
    {OPT_BEND_STIFFNESS, OPT_BEND_COMPLIANCE},
    {OPT_DAMPING, OPT_VELOCITY_RETENTION},
    {OPT_SOLVER_ITERATIONS, OPT_ITERATIONS},
    {OPT_VOLUME_STIFFNESS, OPT_VOLUME_COMPLIANCE},
};

static cd_status read_wind_model(const cJSON *obj, cd_cloth_def *def, bool *given, cd_error *err)
{
    const cJSON *item = cd_json_member(obj, "windModel");
    *given = item != NULL;
    if (item == NULL)
        return CD_OK;
    if (cJSON_IsString(item) && strcmp(item->valuestring, "aero") == 0)
        def->wind_model = CD_WIND_AERO;
    else if (cJSON_IsString(item) && strcmp(item->valuestring, "constant") == 0)
        def->wind_model = CD_WIND_CONSTANT;
    else
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "windModel: must be \"aero\" or \"constant\"");
    return CD_OK;
}

cd_status cd_parse_cloth_options(const cJSON *obj, bool for_set, cd_cloth_def *def,
                                 uint64_t *present, cd_error *err)
{
    uint64_t seen = 0;
    cd_status st = cd_json_read_fields(obj, cloth_fields, OPT_COUNT, def, &seen, err);
    if (st != CD_OK)
        return st;
    if (for_set && (seen & LAYOUT_BITS)) {
        for (int i = 0; i < OPT_COUNT; i++)
            if (seen & LAYOUT_BITS & BIT(i))
                return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: fixed at creation",
                               cloth_fields[i].name);
    }
    for (size_t i = 0; i < sizeof exclusive / sizeof exclusive[0]; i++) {
        if ((seen & BIT(exclusive[i].a)) && (seen & BIT(exclusive[i].b)))
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: give either %s or %s, not both",
                           cloth_fields[exclusive[i].b].name, cloth_fields[exclusive[i].a].name,
                           cloth_fields[exclusive[i].b].name);
    }
    bool wind_given = false;
    if ((st = read_wind_model(obj, def, &wind_given, err)) != CD_OK)
        return st;
    if (present != NULL)
        *present = seen | (wind_given ? BIT(OPT_COUNT) : 0);
    return CD_OK;
}

void cd_cloth_def_merge(cd_cloth_def *dst, const cd_cloth_def *src, uint64_t present)
{
    for (int i = 0; i < OPT_COUNT; i++) {
        if (!(present & BIT(i)) || (BIT(i) & LAYOUT_BITS))
            continue;
        size_t size = cloth_fields[i].kind == FIELD_INT32   ? sizeof(int32_t)
                      : cloth_fields[i].kind == FIELD_FLOAT ? sizeof(float)
                      : cloth_fields[i].kind == FIELD_BOOL  ? sizeof(bool)
                                                            : sizeof(cd_vec3);
        memcpy((unsigned char *)dst + cloth_fields[i].offset,
               (const unsigned char *)src + cloth_fields[i].offset, size);
    }
    if (present & BIT(OPT_COUNT))
        dst->wind_model = src->wind_model;
    /* The seed's form of a setting switches its XPBD twin off (a request
     * never carries both): {"stiffness":0.8} returns to the seed's
     * projection. (In `create` the twin starts unset anyway.) */
    for (size_t i = 0; i < sizeof exclusive / sizeof exclusive[0]; i++) {
        const cd_field_spec *twin = &cloth_fields[exclusive[i].b];
        if ((present & BIT(exclusive[i].a)) && twin->kind == FIELD_FLOAT) {
            const float unset = CD_UNSET;
            memcpy((unsigned char *)dst + twin->offset, &unset, sizeof unset);
        }
    }
}
