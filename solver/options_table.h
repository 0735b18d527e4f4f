/* clothd solver — the one table of options.
 *
 * Every option of a cloth (or soft body) and of a collider is one row here:
 * its C member, its wire name, its kind, its range, its default and its
 * flags. The rows serve
 *   - cd_default_cloth_def / cd_default_collider_def (the defaults),
 *   - the solver's own checks (cd_cloth_def_check, cd_collider_def_check,
 *     which name the field that failed and why),
 *   - the protocol's JSON reader (protocol/options.c: names, kinds, ranges),
 *   - PROTOCOL.md's option tables, which a unit test compares with the rows.
 *
 * X(ID, member, "wire", KIND, min, max, ENDS, (default), FLAGS)
 *
 * KIND   INT (int32_t), FLOAT (float), VEC3 (finite cd_vec3), POINT (a
 *        cd_vec3 inside the world box, |x|, |y|, |z| <= CD_WORLD_EXTENT),
 *        DIRECTION (finite, not zero-length; normalised on use), BOOL,
 *        WIND_MODEL ("aero", "constant" or "dragLift": cd_wind_model),
 *        EXTENTS (a cd_vec3 whose three numbers each lie in the range),
 *        ROTATION (a cd_quat of unit length within
 *        CD_ROTATION_UNIT_TOLERANCE).
 * min, max, ENDS   the range of INT, FLOAT and EXTENTS rows; ENDS is
 *        CLOSED, OPEN_MIN (min excluded) or OPEN_MAX. An INT row whose max
 *        is INT32_MAX has no upper bound worth stating ("an integer >= 2").
 * (default)  in parentheses: one number, three for a vector, four for a
 *        quaternion; -1 is CD_UNSET for the rows that allow it.
 * FLAGS  CD_OPTION_LAYOUT (fixed at creation: `set` refuses it; ignored by
 *        soft bodies), CD_OPTION_UNSET_OK (CD_UNSET is a value: "not
 *        given", see solver.h), CD_OPTION_ALIAS (a second wire name of the
 *        row before a member's first row: the solver checks the member once),
 *        CD_OPTION_SOFTBODY (read by soft bodies only), CD_OPTION_QUIET
 *        (changing it alone does not wake a sleeping instance: the level of
 *        detail and the budget's priority, which a game server sets from
 *        its camera every frame; lod.c), CD_OPTION_BOX and
 *        CD_OPTION_TAPERED (a collider row read by that type only: the
 *        check of another type's def skips it, so a def built without
 *        cd_default_collider_def need not fill it).
 *
 * Rows are in the order of PROTOCOL.md's tables: the protocol and the
 * solver both report the first fault in that order. Upper bounds are finite
 * everywhere (a float option of 3e38 would overflow the step's arithmetic);
 * see PROTOCOL.md for why each bound is where it is.
 */
#ifndef CLOTHD_SOLVER_OPTIONS_TABLE_H
#define CLOTHD_SOLVER_OPTIONS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CD_CLOTH_OPTION_MAP(X)                                                                     \
    X(WIDTH, width, "width", INT, 2, INT32_MAX, CLOSED, (10), CD_OPTION_LAYOUT)                    \
    X(HEIGHT, height, "height", INT, 2, INT32_MAX, CLOSED, (10), CD_OPTION_LAYOUT)                 \
    X(SPACING, spacing, "spacing", FLOAT, 0, 1e4, OPEN_MIN, (0.1), CD_OPTION_LAYOUT)               \
    X(MASS, mass, "mass", FLOAT, 0, 1e9, OPEN_MIN, (1), 0)                                         \
    X(STIFFNESS, stiffness, "stiffness", FLOAT, 0, 1, CLOSED, (0.9), 0)                            \
    X(BEND_STIFFNESS, bend_stiffness, "bendStiffness", FLOAT, 0, 1, CLOSED, (0.5), 0)              \
    X(DAMPING, damping, "damping", FLOAT, 0, 1, CLOSED, (0.01), 0)                                 \
    X(ORIGIN, origin, "origin", VEC3, 0, 0, CLOSED, (0, 0, 0), CD_OPTION_LAYOUT)                   \
    X(SOLVER_ITERATIONS, solver_iterations, "solverIterations", INT, 1, 256, CLOSED, (1), 0)       \
    X(RIGHT, right, "right", DIRECTION, 0, 0, CLOSED, (1, 0, 0), CD_OPTION_LAYOUT)                 \
    X(DOWN, down, "down", DIRECTION, 0, 0, CLOSED, (0, -1, 0), CD_OPTION_LAYOUT)                   \
    X(GRAVITY, gravity, "gravity", VEC3, 0, 0, CLOSED, (0, -9.81, 0), 0)                           \
    X(STRETCH_COMPLIANCE, stretch_compliance, "stretchCompliance", FLOAT, 0, 1e9, CLOSED, (-1),    \
      CD_OPTION_UNSET_OK)                                                                          \
    X(BEND_COMPLIANCE, bend_compliance, "bendCompliance", FLOAT, 0, 1e9, CLOSED, (-1),             \
      CD_OPTION_UNSET_OK)                                                                          \
    X(ITERATIONS, solver_iterations, "iterations", INT, 1, 256, CLOSED, (1), CD_OPTION_ALIAS)      \
    X(SUBSTEPS, substeps, "substeps", INT, 0, 64, CLOSED, (0), 0)                                  \
    X(SOLVER_FREQUENCY, solver_frequency, "solverFrequency", FLOAT, 1, 1e5, CLOSED, (360), 0)      \
    X(VELOCITY_RETENTION, velocity_retention, "velocityRetention", FLOAT, 0, 1, OPEN_MIN,          \
      (0.5471566), CD_OPTION_UNSET_OK)                                                             \
    X(THICKNESS, thickness, "thickness", FLOAT, 0, 1e3, CLOSED, (0), 0)                            \
    X(PARTICLE_MASS, particle_mass, "particleMass", FLOAT, 0, 1e9, OPEN_MIN, (-1),                 \
      CD_OPTION_UNSET_OK)                                                                          \
    X(WIND_MODEL, wind_model, "windModel", WIND_MODEL, 0, 2, CLOSED, (0), 0)                       \
    X(AIR_DENSITY, air_density, "airDensity", FLOAT, 0, 1e4, CLOSED, (1.225), 0)                   \
    X(DRAG, drag, "drag", FLOAT, 0, 1e3, CLOSED, (-1), CD_OPTION_UNSET_OK)                         \
    X(LIFT, lift, "lift", FLOAT, 0, 1e3, CLOSED, (0.5), 0)                                         \
    X(TETHERS, tethers, "tethers", BOOL, 0, 1, CLOSED, (1), 0)                                     \
    X(TETHER_SCALE, tether_scale, "tetherScale", FLOAT, 1, 1e3, CLOSED, (1), 0)                    \
    X(SLEEP_THRESHOLD, sleep_threshold, "sleepThreshold", FLOAT, 0, 1e3, CLOSED, (0.01), 0)        \
    X(SELF_DISTANCE, self_distance, "selfDistance", FLOAT, 0, 1e3, CLOSED, (0), 0)                 \
    X(TEAR_STRAIN, tear_strain, "tearStrain", FLOAT, 0, 1e3, CLOSED, (0), 0)                       \
    X(LINEAR_INERTIA, linear_inertia, "linearInertia", FLOAT, 0, 1, CLOSED, (1), 0)                \
    X(ANGULAR_INERTIA, angular_inertia, "angularInertia", FLOAT, 0, 1, CLOSED, (1), 0)             \
    X(VOLUME_STIFFNESS, volume_stiffness, "volumeStiffness", FLOAT, 0, 1, CLOSED, (0.9),           \
      CD_OPTION_SOFTBODY)                                                                          \
    X(VOLUME_COMPLIANCE, volume_compliance, "volumeCompliance", FLOAT, 0, 1e9, CLOSED, (-1),       \
      CD_OPTION_UNSET_OK | CD_OPTION_SOFTBODY)                                                     \
    X(YOUNGS_MODULUS, youngs_modulus, "youngsModulus", FLOAT, 0, 1e12, OPEN_MIN, (-1),            \
      CD_OPTION_UNSET_OK | CD_OPTION_SOFTBODY)                                                     \
    X(POISSON_RATIO, poisson_ratio, "poissonRatio", FLOAT, 0, 0.49, CLOSED, (0.3),                 \
      CD_OPTION_SOFTBODY)                                                                          \
    X(LOD, lod, "lod", INT, 0, 3, CLOSED, (0), CD_OPTION_QUIET)                                    \
    X(PRIORITY, priority, "priority", FLOAT, -1e9, 1e9, CLOSED, (0), CD_OPTION_QUIET)

/* A collider's options (its type and attachment are read apart: the type
 * picks the defaults, the attachment names a transform of the instance). */
#define CD_COLLIDER_OPTION_MAP(X)                                                                  \
    X(POSITION, position, "position", POINT, 0, 0, CLOSED, (0, 0, 0), 0)                           \
    X(NORMAL, normal, "normal", DIRECTION, 0, 0, CLOSED, (0, 1, 0), 0)                             \
    X(RADIUS, radius, "radius", FLOAT, 0, 1e5, CLOSED, (0.5), 0)                                   \
    X(HEIGHT, height, "height", FLOAT, 0, 1e5, CLOSED, (1), 0)                                     \
    X(RADIUS2, radius2, "radius2", FLOAT, 0, 1e5, CLOSED, (-1),                                    \
      CD_OPTION_UNSET_OK | CD_OPTION_TAPERED)                                                      \
    X(HALF_EXTENTS, half_extents, "halfExtents", EXTENTS, 0, 1e5, OPEN_MIN, (0.5, 0.5, 0.5),       \
      CD_OPTION_BOX)                                                                               \
    X(ROTATION, rotation, "rotation", ROTATION, 0, 0, CLOSED, (0, 0, 0, 1), CD_OPTION_BOX)         \
    X(FRICTION, friction, "friction", FLOAT, 0, 1e3, CLOSED, (0), 0)                               \
    X(STATIC_FRICTION, static_friction, "staticFriction", FLOAT, 0, 1e3, CLOSED, (0), 0)           \
    X(COUPLING, coupling, "coupling", FLOAT, 0, 1, CLOSED, (0), 0)

typedef enum cd_option_kind {
    CD_OPTION_INT,
    CD_OPTION_FLOAT,
    CD_OPTION_VEC3,
    CD_OPTION_POINT,
    CD_OPTION_DIRECTION,
    CD_OPTION_BOOL,
    CD_OPTION_WIND_MODEL,
    CD_OPTION_EXTENTS,
    CD_OPTION_ROTATION,
} cd_option_kind;

enum {
    CD_OPTION_LAYOUT = 1u << 0,
    CD_OPTION_UNSET_OK = 1u << 1,
    CD_OPTION_ALIAS = 1u << 2,
    CD_OPTION_SOFTBODY = 1u << 3,
    CD_OPTION_QUIET = 1u << 4,
    CD_OPTION_BOX = 1u << 5,
    CD_OPTION_TAPERED = 1u << 6,
};

/* One row, as data. */
typedef struct cd_option_spec {
    const char *name; /* wire name */
    cd_option_kind kind;
    size_t offset; /* of the member in cd_cloth_def or cd_collider_def */
    double min, max;
    bool min_open, max_open;
    unsigned flags;
    double defaults[4]; /* [0] for a scalar, [0..2] for a vector */
} cd_option_spec;

/* Index of a row: CD_OPT_WIDTH ..., CD_COLLIDER_OPT_POSITION ... */
typedef enum cd_cloth_option {
#define CD_OPTION_ENUM(ID, member, wire, kind, min, max, ends, def, flags) CD_OPT_##ID,
    CD_CLOTH_OPTION_MAP(CD_OPTION_ENUM)
#undef CD_OPTION_ENUM
    CD_OPT_COUNT
} cd_cloth_option;

typedef enum cd_collider_option {
#define CD_COLLIDER_OPTION_ENUM(ID, member, wire, kind, min, max, ends, def, flags)                \
    CD_COLLIDER_OPT_##ID,
    CD_COLLIDER_OPTION_MAP(CD_COLLIDER_OPTION_ENUM)
#undef CD_COLLIDER_OPTION_ENUM
    CD_COLLIDER_OPT_COUNT
} cd_collider_option;

/* The rows as data, in table order. */
extern const cd_option_spec cd_cloth_option_specs[CD_OPT_COUNT];
extern const cd_option_spec cd_collider_option_specs[CD_COLLIDER_OPT_COUNT];

/* Wire name of a wind model ("aero", "constant", "dragLift"), NULL out of
 * range; the names in words for a message: "\"aero\", \"constant\" or
 * \"dragLift\"". */
const char *cd_wind_model_name(int model);
const char *cd_wind_model_names(void);

/* Writes the row's range as words into buf: "an integer >= 2", "an integer
 * in [1, 256]", "a number in (0, 10000]". Messages say "must be <that>". */
void cd_option_describe(const cd_option_spec *spec, char *buf, size_t cap);
/* The same for a bare range (integers when `integer`). */
void cd_describe_range(char *buf, size_t cap, bool integer, double min, double max,
                       bool min_open, bool max_open);
/* True when v lies in the row's range (false for NaN). */
bool cd_option_in_range(const cd_option_spec *spec, double v);
/* Bytes of the row's member (int32_t, float, cd_vec3, bool, cd_wind_model,
 * cd_quat). */
size_t cd_option_size(const cd_option_spec *spec);

#endif
