/* clothd solver — the public contract.
 *
 * A position-based cloth solver with no I/O, no threads and no global state.
 * A cd_world owns instances (cloth today, soft bodies later); each instance is
 * an island: it shares nothing mutable with any other, so the host may step
 * different instances on different threads at the same time. Stepping one
 * instance is a pure function of its state and the arguments of the step,
 * which makes results bit-identical whatever the number of threads.
 *
 * Ids are generation-checked handles: (generation << 16) | slot, slot >= 1.
 * A destroyed instance's id is never valid again until its slot's 16-bit
 * generation wraps, and slots are reused oldest-freed first.
 *
 * Ownership: cd_world_create's result is freed with cd_world_destroy.
 * Pointers to an instance stay valid until that instance is destroyed,
 * whatever else is created or destroyed meanwhile.
 *
 * Threading: functions taking a cd_world* must be called from one thread.
 * cd_instance_step() may run on any thread, concurrently with any call that
 * does not touch that same instance (including cd_world_create_cloth).
 */
#ifndef CLOTHD_SOLVER_H
#define CLOTHD_SOLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "options_table.h"

#define CD_VERSION_STRING "0.1.0"

typedef uint32_t cd_id; /* 0 is the null id */

/* The slot part of an id: 1..max_instances for a live instance. Hosts may
 * use it to index their own per-instance tables. */
static inline uint32_t cd_id_index(cd_id id) { return id & 0xFFFFu; }

typedef struct cd_vec3 {
    float x, y, z;
} cd_vec3;

typedef enum cd_instance_type {
    CD_INSTANCE_CLOTH = 0,
    CD_INSTANCE_SOFTBODY = 1,
} cd_instance_type;

typedef enum cd_wind_model {
    CD_WIND_AERO = 0,      /* wind is an air velocity; each triangle a flat plate (normal force) */
    CD_WIND_CONSTANT = 1,  /* the seed's: wind is an acceleration of free particles */
    CD_WIND_DRAG_LIFT = 2, /* wind is an air velocity; per-triangle drag and lift coefficients
                              (clothd's "aero" before the flat plate, NvCloth's model) */
} cd_wind_model;

/* A flat plate broadside to the flow: its drag coefficient, which is the
 * normal-force coefficient of "aero" (a square plate, measured: Hoerner,
 * "Fluid-Dynamic Drag", 1965), used while `drag` is unset. */
#define CD_PLATE_DRAG 1.17f

/* Compliance values below zero mean "not given": that constraint group
 * runs the seed's stiffness projection instead of XPBD. */
#define CD_UNSET (-1.0f)

/* The seed's ClothDescriptor, the layout axes and gravity, and the options
 * of the XPBD seed. The layout (width, height, spacing, origin, right,
 * down) is fixed at creation; everything else may change on a live
 * instance (cd_instance_configure). */
typedef struct cd_cloth_def {
    int32_t width;             /* particles along `right`, >= 2 */
    int32_t height;            /* particles along `down`, >= 2 */
    float spacing;             /* rest distance of neighbours, metres, > 0 */
    float mass;                /* total mass, kg, lumped by area, > 0 */
    float stiffness;           /* structural, 0..1; shear uses 0.8x this */
    float bend_stiffness;      /* skip-one bending, 0..1 */
    float damping;             /* per step, 0..1; read only while velocity_retention is unset */
    cd_vec3 origin;            /* position of particle 0 */
    cd_vec3 right;             /* grid x axis, normalised on creation */
    cd_vec3 down;              /* grid y axis, normalised on creation */
    cd_vec3 gravity;           /* m/s^2 */
    int32_t solver_iterations; /* constraint passes per substep, >= 1 */

    /* XPBD (seed 003). Metres per newton, >= 0; CD_UNSET: use stiffness. */
    float stretch_compliance; /* structural and shear */
    float bend_compliance;
    int32_t substeps;          /* each step is split into this many; 0: cd_substeps_for */
    float solver_frequency;    /* Hz: substeps of at most 1/this while substeps is 0 */
    float velocity_retention;  /* per second, (0, 1]; CD_UNSET: use damping (default 0.99^60) */
    float thickness;           /* metres held off every collider, >= 0 */
    float particle_mass;       /* kg per particle for coupling; CD_UNSET: each particle's own */
    cd_wind_model wind_model;
    float air_density;         /* kg/m^3 ("aero" and "dragLift" wind) */
    float drag;                /* >= 0: "aero": the plate's drag coefficient broadside (its
                                  normal-force coefficient); "dragLift": the drag coefficient;
                                  CD_UNSET: CD_PLATE_DRAG for "aero", 1 for "dragLift" */
    float lift;                /* lift coefficient ("dragLift" only), >= 0 */
    bool tethers;              /* long-range attachments to the pins */
    float tether_scale;        /* tether length / rest distance, >= 1 */
    float sleep_threshold;     /* m/s; 0 never sleeps */
    float self_distance;       /* m; unconnected particles keep this apart, 0 = off */
    float tear_strain;         /* a structural edge stretched beyond this tears (tear.c); 0 off */
    float linear_inertia;      /* share of the inertia frame's motion felt, 0..1 (frame.c) */
    float angular_inertia;

    /* Soft bodies only: the tetrahedral volume constraints. */
    float volume_stiffness;  /* the seed's 0..1 */
    float volume_compliance; /* XPBD, m^5/N for C = V - V0; CD_UNSET: stiffness */
    /* A material instead (softbody_build.c): Pa, CD_UNSET: the above. Given,
     * it sets every edge's and tet's compliance from the mesh's geometry. */
    float youngs_modulus;
    float poisson_ratio;     /* 0..0.49: the bulk modulus E / (3 (1 - 2 nu)) */

    /* Level of detail (lod.c): 0 full, up to CD_LOD_LEVELS - 1. */
    int32_t lod;
    /* The host's step budget lowers the detail of the lowest first (the
     * solver does not read it). */
    float priority;
} cd_cloth_def;

/* The seed's defaults: 10x10, spacing 0.1, mass 1, stiffness 0.9, bend 0.5,
 * damping 0.01, 4 iterations, right (1,0,0), down (0,-1,0), g (0,-9.81,0);
 * and for the rest see PROTOCOL.md ("create"). They are the default column
 * of CD_CLOTH_OPTION_MAP (options_table.h). */
cd_cloth_def cd_default_cloth_def(void);

/* What a check found wrong, for the host to report: the wire name of the
 * field and why, in words ("thickness" / "must be a number in [0, 1000]").
 * `kind` tells the limits apart, so that a host can name its own setting
 * for them (clothd adds its flag: "(--max-instances)"). */
typedef enum cd_fault_kind {
    CD_FAULT_NONE = 0,
    CD_FAULT_FIELD,           /* a field outside its row's range: invalid_argument */
    CD_FAULT_LAYOUT,          /* parallel axes, a grid outside the world box */
    CD_FAULT_MESH,            /* a soft body's mesh (cd_tet_mesh_validate) */
    CD_FAULT_PARTICLES,       /* particles per instance: limit_exceeded */
    CD_FAULT_INSTANCES,       /* live instances: limit_exceeded */
    CD_FAULT_TOTAL_PARTICLES, /* particles of all live instances: limit_exceeded */
    CD_FAULT_STEP_WORK,       /* particles x substeps x iterations: limit_exceeded */
    CD_FAULT_COLLIDERS,       /* colliders per instance: limit_exceeded */
    CD_FAULT_MEMORY,          /* out of memory: internal */
} cd_fault_kind;

typedef struct cd_field_fault {
    cd_fault_kind kind;
    char field[48];   /* wire name(s): "thickness", "width, height", "tetrahedra[7]" */
    char reason[168]; /* one line, without the field's name */
} cd_field_fault;

/* Checks every field of `def` against its row (options_table.h), then the
 * layout: right and down must span a plane ("down: must not be parallel
 * to right"), and the grid must lie inside the world box ("origin: the
 * cloth reaches outside the world box (...)"). CD_OK, or
 * CD_E_INVALID_ARGUMENT with *fault (may be NULL) naming the first field
 * at fault in table order. */
cd_status cd_cloth_def_check(const cd_cloth_def *def, cd_field_fault *fault);
/* The same for the live options only (not the layout rows): what a soft
 * body and cd_instance_configure read. */
cd_status cd_cloth_options_check(const cd_cloth_def *def, cd_field_fault *fault);
/* The work one step asks for: particles x substeps x iterations. Over
 * `limit` (0: no limit): CD_E_LIMIT_EXCEEDED, fault "substeps, iterations":
 * "262144 particles x 64 substeps x 256 iterations = 4294967296 exceeds
 * the step work limit of 16777216". */
/* Substeps while `substeps` is 0 (the default): ceil(dt x solver_frequency)
 * between 1 and this, as NvCloth's solver frequency: 6 at 60 Hz, 12 at
 * 30 Hz for the default 360 Hz. The bound keeps a step's work known at
 * creation (cd_step_work_check counts it) whatever dt a step brings. */
#define CD_AUTO_SUBSTEPS_MAX 16
/* The substeps of a step of dt seconds. */
int32_t cd_substeps_for(const cd_cloth_def *def, float dt);
/* The most substeps any step can take (what the work limit counts). */
int32_t cd_substeps_bound(const cd_cloth_def *def);
cd_status cd_step_work_check(uint64_t particles, int32_t substeps, int32_t iterations,
                             uint64_t limit, cd_field_fault *fault);

/* Unit quaternion (x, y, z, w). */
typedef struct cd_quat {
    float x, y, z, w;
} cd_quat;

/* The collider types, in wire order: X(ID, "wire name"). */
#define CD_COLLIDER_TYPE_MAP(X)                                                                    \
    X(SPHERE, "sphere")                                                                            \
    X(CAPSULE, "capsule")                                                                          \
    X(PLANE, "plane")                                                                              \
    X(TAPERED_CAPSULE, "taperedCapsule")                                                           \
    X(BOX, "box")

typedef enum cd_collider_type {
#define CD_COLLIDER_TYPE_ENUM(ID, wire) CD_COLLIDER_##ID,
    CD_COLLIDER_TYPE_MAP(CD_COLLIDER_TYPE_ENUM)
#undef CD_COLLIDER_TYPE_ENUM
    CD_COLLIDER_TYPE_COUNT
} cd_collider_type;

/* Wire name of a collider type ("taperedCapsule"), NULL out of range. */
const char *cd_collider_type_name(int type);

/* How far a collider's rotation may be from unit length: within it the
 * solver normalises it, beyond it (or zero) the check refuses it. */
#define CD_ROTATION_UNIT_TOLERANCE 1e-3

typedef struct cd_collider_def {
    cd_collider_type type;
    /* Centre (sphere, box; capsules: the midpoint between their two end
     * spheres' centres) or a point on the plane. */
    cd_vec3 position;
    /* Plane normal, or a capsule's axis (a tapered capsule's points from
     * the `radius` end to the `radius2` end); normalised on use; boxes
     * turn by `rotation` instead. */
    cd_vec3 normal;
    float radius;     /* sphere and capsules, >= 0 */
    float height;     /* capsules: total length including both caps */
    float radius2;    /* tapered capsule: the far end's radius; CD_UNSET: = radius */
    cd_vec3 half_extents; /* box: half its size along its own x, y, z, each > 0 */
    cd_quat rotation;     /* box: its orientation (unit; the others ignore it) */
    float friction;        /* kinetic, >= 0 */
    float static_friction; /* >= 0 */
    float coupling;        /* share of the momentum handed back, 0..1 */
    /* Attached to the instance's named transform (0 = none): position and
     * normal are then in the transform's local frame. */
    uint32_t attachment;
} cd_collider_def;

/* Momentum the cloth handed to a coupled collider over the last step. */
typedef struct cd_collider_impulse {
    cd_id collider;
    cd_vec3 linear;  /* N s */
    cd_vec3 angular; /* N m s, about the collider's position */
} cd_collider_impulse;

cd_collider_def cd_default_collider_def(cd_collider_type type);
/* Checks a collider's type and every field against its row
 * (CD_COLLIDER_OPTION_MAP): a position outside the world box, a radius
 * over 1e5 m, ... The attachment is the instance's to check. CD_OK or
 * CD_E_INVALID_ARGUMENT with *fault (may be NULL). */
cd_status cd_collider_def_check(const cd_collider_def *def, cd_field_fault *fault);
/* Checks one row of the struct at `base` (a cd_cloth_def or a
 * cd_collider_def) as the checks above do: CD_OK or CD_E_INVALID_ARGUMENT
 * with *fault (may be NULL) naming the row. The protocol's reader takes
 * its words for the kinds it does not check alone (EXTENTS, ROTATION). */
cd_status cd_option_check(const cd_option_spec *spec, const void *base, cd_field_fault *fault);

/* ---- soft bodies ---- */

/* A tetrahedral mesh: 3 floats per vertex, 4 indices per tetrahedron,
 * each tetrahedron positively oriented ((b-a).((c-a)x(d-a)) > 0). */
typedef struct cd_tet_mesh {
    float *vertices;
    uint32_t vertex_count;
    uint32_t *tets;
    uint32_t tet_count;
} cd_tet_mesh;

/* Generators (the caller frees with cd_mesh_free). A box of nx x ny x nz
 * cubes (1..64 each) from `origin` spanning `size`; a ball of `radius`
 * with `resolution` cubes (2..48) across its diameter. */
cd_status cd_mesh_box(cd_vec3 origin, cd_vec3 size, uint32_t nx, uint32_t ny, uint32_t nz,
                      cd_tet_mesh *out);
cd_status cd_mesh_ball(cd_vec3 centre, float radius, uint32_t resolution, cd_tet_mesh *out);
void cd_mesh_free(cd_tet_mesh *mesh); /* NULL is fine */

typedef enum cd_mesh_fault_kind {
    CD_MESH_OK = 0,
    CD_MESH_TOO_FEW_VERTICES,
    CD_MESH_NO_TETRAHEDRA,
    CD_MESH_BAD_VERTEX,         /* index: vertex outside the world box or non-finite */
    CD_MESH_INDEX_OUT_OF_RANGE, /* index: position in the tetrahedra array */
    CD_MESH_DEGENERATE_TET,     /* index: tetrahedron (zero volume) */
    CD_MESH_INVERTED_TET,       /* index: tetrahedron (negative volume) */
} cd_mesh_fault_kind;

typedef struct cd_mesh_fault {
    cd_mesh_fault_kind kind;
    uint32_t index;
} cd_mesh_fault;

/* Checks a user mesh; on CD_E_INVALID_ARGUMENT *fault says what and where. */
cd_status cd_tet_mesh_validate(const float *vertices, uint32_t vertex_count,
                               const uint32_t *tets, uint32_t tet_count, cd_mesh_fault *fault);
/* A mesh fault of cd_tet_mesh_validate in words, as CD_FAULT_MESH:
 * "tetrahedra[7]" / "index 99 out of range (8 vertices)". */
void cd_mesh_fault_describe(const cd_mesh_fault *mf, const uint32_t *tets,
                            uint32_t vertex_count, cd_field_fault *fault);

/* The seed's SoftBodyDescriptor defaults: mass 5, stiffness 0.8,
 * volumeStiffness 0.9, damping 0.02, 8 iterations; 2 substeps (measured);
 * the cloth defaults for the rest. */
cd_cloth_def cd_default_softbody_options(void);

#define CD_MAX_COLLIDERS 64 /* per instance */

typedef struct cd_world_def {
    uint32_t max_instances; /* live instances at most, 1..65535 */
    uint32_t max_particles; /* particles per instance at most */
    /* particles of all live instances together at most; 0: no limit */
    uint64_t max_total_particles;
    /* particles x substeps x iterations of one instance at most, checked
     * when it is created or configured (never during a step); 0: no limit */
    uint64_t max_step_work;
} cd_world_def;

/* 1024 instances of at most 262144 particles; no total or step-work limit
 * (clothd sets its own: --max-total-particles, --max-step-work). */
cd_world_def cd_default_world_def(void);

typedef struct cd_world cd_world;
typedef struct cd_instance cd_instance;

/* Summary of an instance, for status and replies. */
typedef struct cd_instance_info {
    cd_id id;
    cd_instance_type type;
    int32_t width, height;
    uint32_t particles;
    uint32_t constraints;
    uint32_t colliders;
    bool enabled;
    bool unstable; /* the instability guard stopped it; cleared by enable */
    bool sleeping; /* at rest: its steps cost nothing until something wakes it */
    uint64_t frame; /* steps taken */
    double time;    /* simulated seconds */
    /* The level of detail its last step ran at (its own `lod` before its
     * first step), and whether that was coarser than its own because the
     * caller asked for a coarser level than the instance would have run
     * (a host's budget, cd_instance_step_lod), or because it is coming
     * back from such a step one level a step. */
    int32_t lod;
    bool lod_degraded;
    /* 1/2 sum m v^2 of the free particles after the last step, joules (0
     * before the first step and while asleep); pinned and kinematic
     * particles are led, not free, and left out. */
    double kinetic_energy;
} cd_instance_info;

typedef struct cd_step_result {
    bool unstable; /* the guard caught this step: state restored, disabled */
    bool sleeping; /* asleep: nothing moved */
    int32_t lod;   /* the level of detail the step ran at (cd_instance_step_lod) */
    bool degraded; /* below the instance's own lod: cd_instance_info's lod_degraded */
} cd_step_result;

/* ---- world ------------------------------------------------------------ */

/* Returns NULL on allocation failure or a def out of range. */
cd_world *cd_world_create(const cd_world_def *def);
void cd_world_destroy(cd_world *world); /* NULL is fine */

/* CD_E_INVALID_ARGUMENT for a def out of range (including a grid reaching
 * farther than 1e5 m from the world origin on any axis, where the
 * instability guard would stop every step), CD_E_LIMIT_EXCEEDED for too
 * many instances or particles, CD_E_INTERNAL for out of memory. */
cd_status cd_world_create_cloth(cd_world *world, const cd_cloth_def *def, cd_id *out_id);
/* The same; on failure *fault (may be NULL) names the field and why: a
 * field or the layout (invalid_argument, cd_cloth_def_check), then
 * "width, height" over max_particles or over max_total_particles,
 * "substeps, iterations" over max_step_work, "instance" over
 * max_instances (limit_exceeded), in that order. */
cd_status cd_world_create_cloth_ex(cd_world *world, const cd_cloth_def *def, cd_id *out_id,
                                   cd_field_fault *fault);
/* A soft body from a validated mesh (copied) and its options (the layout
 * fields of `options` are ignored). Edge constraints use the stretch group,
 * one volume constraint per tetrahedron, mass spread by tetrahedron
 * volume. Same errors as cd_world_create_cloth. */
cd_status cd_world_create_softbody(cd_world *world, const cd_tet_mesh *mesh,
                                   const cd_cloth_def *options, cd_id *out_id);
/* The same with a fault, as cd_world_create_cloth_ex; the particles'
 * field is "vertices". */
cd_status cd_world_create_softbody_ex(cd_world *world, const cd_tet_mesh *mesh,
                                      const cd_cloth_def *options, cd_id *out_id,
                                      cd_field_fault *fault);
/* ---- mesh cloth ---- */

/* A cloth cut as a triangle mesh: 3 floats per vertex (its rest shape and
 * starting position), 3 indices per triangle, and optionally 2 UVs per
 * vertex (handed back by topology). The caller keeps the arrays. */
typedef struct cd_tri_mesh {
    const float *vertices;
    uint32_t vertex_count;
    const uint32_t *triangles;
    uint32_t triangle_count;
    const float *uvs; /* NULL: none */
} cd_tri_mesh;

typedef enum cd_tri_fault_kind {
    CD_TRI_OK = 0,
    CD_TRI_TOO_FEW_VERTICES,
    CD_TRI_NO_TRIANGLES,
    CD_TRI_BAD_VERTEX,         /* index: vertex outside the world box or non-finite */
    CD_TRI_INDEX_OUT_OF_RANGE, /* index: position in the triangles array */
    CD_TRI_DEGENERATE,         /* index: triangle of zero area (or a repeated vertex) */
    CD_TRI_DUPLICATE,          /* index: triangle repeating triangle `other` */
    CD_TRI_NON_MANIFOLD,       /* edge index-other shared by `count` triangles */
    CD_TRI_UNUSED_VERTEX,      /* index: vertex of no triangle */
    CD_TRI_BAD_UV,             /* index: position in the uvs array */
} cd_tri_fault_kind;

typedef struct cd_tri_fault {
    cd_tri_fault_kind kind;
    uint32_t index, other, count;
} cd_tri_fault;

/* Checks a user mesh (tri_mesh.c says what is refused, in which order):
 * CD_OK, CD_E_INVALID_ARGUMENT with *fault, or CD_E_INTERNAL (out of
 * memory). */
cd_status cd_tri_mesh_validate(const cd_tri_mesh *mesh, cd_tri_fault *fault);
/* A fault in words, as CD_FAULT_MESH: "triangles" / "triangle 7 is
 * degenerate (zero area)", "triangles[12]" / "index 99 out of range (8
 * vertices)". */
void cd_tri_fault_describe(const cd_tri_fault *tf, const cd_tri_mesh *mesh,
                           cd_field_fault *fault);
/* A cloth from a mesh (copied) and its options (the layout fields of
 * `options` are ignored): structural constraints along the edges, shear
 * and bending across them, mass by triangle area (mesh_cloth.c). Same
 * errors as cd_world_create_softbody_ex, the particles' field "vertices". */
cd_status cd_world_create_mesh_cloth_ex(cd_world *world, const cd_tri_mesh *mesh,
                                        const cd_cloth_def *options, cd_id *out_id,
                                        cd_field_fault *fault);
cd_status cd_world_destroy_instance(cd_world *world, cd_id id);
/* Tears instance `id` between steps (its tearStrain > 0; tear.c): splits
 * up to 16 vertices of its most overstretched edges, within the world's
 * particle and step-work limits, and returns how many (0: nothing changed).
 * The particle count grows by that much and the topology changes (call
 * cd_instance_triangles again). Must not run while the instance steps. */
uint32_t cd_world_tear(cd_world *world, cd_id id);

/* NULL for a null, stale or never-issued id. */
cd_instance *cd_world_get(const cd_world *world, cd_id id);
uint32_t cd_world_count(const cd_world *world);
/* Particles of all live instances. */
uint64_t cd_world_total_particles(const cd_world *world);
/* Writes up to `cap` live ids in slot order; returns how many are live. */
uint32_t cd_world_list(const cd_world *world, cd_id *ids, uint32_t cap);

/* The server-wide wind, added to every instance's own wind. */
void cd_world_set_global_wind(cd_world *world, cd_vec3 wind);
cd_vec3 cd_world_global_wind(const cd_world *world);

/* ---- instance ---------------------------------------------------------- */

cd_id cd_instance_id(const cd_instance *inst);
void cd_instance_get_info(const cd_instance *inst, cd_instance_info *out);
uint32_t cd_instance_particle_count(const cd_instance *inst);
/* Positions in world coordinates, 3 floats per particle, particle-index
 * order, into `out`. Always finite. */
void cd_instance_copy_positions(const cd_instance *inst, float *out);
cd_vec3 cd_instance_position(const cd_instance *inst, uint32_t particle);
/* The solver keeps positions relative to an anchor near the particles
 * (anchor.c): world = local + anchor, the sum rounded to a float. The
 * local ones are valid until the next call that changes the instance. */
const float *cd_instance_local_positions(const cd_instance *inst);
cd_vec3 cd_instance_anchor(const cd_instance *inst);
/* What a renderer needs once: triangles (3 indices each; a grid cloth: two
 * per cell, tl bl tr / tr bl br; a mesh cloth: its own; soft body: the
 * surface faces, wound counter-clockwise seen from outside). Returns the
 * triangle count and writes up to `cap` triangles (render.h walks them). */
uint32_t cd_instance_triangles(const cd_instance *inst, uint32_t *indices, uint32_t cap);
/* UVs, 2 floats per particle: a grid's are the seed's (u = x / (w - 1),
 * v = y / (h - 1)), a mesh cloth's those it was given. False (and nothing
 * written) when there are none: a soft body, a mesh given without. */
bool cd_instance_uvs(const cd_instance *inst, float *out);
/* Total signed volume of a soft body's tetrahedra (0 for cloth), now and
 * at rest. */
float cd_instance_volume(const cd_instance *inst);
float cd_instance_rest_volume(const cd_instance *inst);

/* Velocity of one particle as of the last step: (pos - prev) / last_dt,
 * over the last substep, m/s; (0, 0, 0) before the first step and while the
 * instance sleeps (render.c). */
cd_vec3 cd_instance_velocity(const cd_instance *inst, uint32_t particle);
/* The same for every particle: writes 3 floats per particle into `out`
 * (3 * cd_instance_particle_count floats). Allocation-free, reads only. */
void cd_instance_velocities(const cd_instance *inst, float *out);
/* Area-weighted unit vertex normals of the render triangles (those of
 * cd_instance_triangles): writes 3 floats per particle into `out`. A normal
 * points to the side from which its triangles are counter-clockwise: for a
 * grid cloth down x right of the layout at creation (+z with the default
 * right and down), for a mesh cloth the side its triangles' winding gives,
 * for a soft body outwards. A particle no triangle with an area
 * touches gets (0, 0, 0). Allocation-free, reads only. */
void cd_instance_normals(const cd_instance *inst, float *out);
bool cd_instance_is_pinned(const cd_instance *inst, uint32_t particle);

/* Pins at `position`, or where the particle is when `position` is NULL.
 * Pinning a pinned particle moves its pin (a cape following a character).
 * CD_E_INVALID_ARGUMENT: index out of range, or a position non-finite or
 * farther than 1e5 m from the world origin on any axis (the guard's box). */
cd_status cd_instance_pin(cd_instance *inst, uint32_t particle, const cd_vec3 *position);
/* Restores the particle's own inverse mass. */
cd_status cd_instance_unpin(cd_instance *inst, uint32_t particle);

/* The live options: everything of `def` but the layout (width, height,
 * spacing, origin, right, down), which is ignored. Wakes the instance when
 * an option other than lod and priority changes (CD_OPTION_QUIET). */
cd_status cd_instance_configure(cd_instance *inst, const cd_cloth_def *def);
/* The same; on failure *fault (may be NULL) names the field: a field
 * outside its row (invalid_argument), or "substeps, iterations" over the
 * world's max_step_work (limit_exceeded). A failed call changes nothing. */
cd_status cd_instance_configure_ex(cd_instance *inst, const cd_cloth_def *def,
                                   cd_field_fault *fault);
/* The instance's current options (and its layout). */
cd_cloth_def cd_instance_def(const cd_instance *inst);

cd_status cd_instance_set_wind(cd_instance *inst, cd_vec3 wind);
cd_vec3 cd_instance_wind(const cd_instance *inst); /* its own, without the global */
cd_status cd_instance_set_gravity(cd_instance *inst, cd_vec3 gravity);
void cd_instance_set_enabled(cd_instance *inst, bool enabled);
bool cd_instance_enabled(const cd_instance *inst);

/* ---- painted per-vertex properties and skinning ---- */

/* The properties an artist paints per vertex, one row each: wire name,
 * range, and the value of a vertex that was never painted.
 *   invMassScale      the particle's inverse mass times this (0: it does
 *                     not move but by its skin; 1: its own mass)
 *   maxDistance       metres it may stray from its skinned position
 *                     (0: it follows the skin exactly)
 *   backstopDistance  metres behind the skinned position (along the
 *                     negative skin normal) where the backstop sphere's
 *                     surface lies
 *   backstopRadius    that sphere's radius; 0: no backstop
 *   stretchComplianceScale, bendComplianceScale
 *                     XPBD only: a constraint's compliance (stretch and
 *                     shear, or bending) times the mean of its two ends'
 *                     values (a stiff collar, a soft hem); the seed's
 *                     stiffness has no unit to scale and ignores them
 * maxDistance and the backstop act only once the instance has a skin
 * (cd_instance_skin), and only on painted instances; a backstop only where
 * backstopDistance < maxDistance (Jolt's skinned constraints). */
#define CD_PAINT_MAP(X)                                                                            \
    X(INV_MASS_SCALE, "invMassScale", 0.0f, 1e3f, 1.0f)                                            \
    X(MAX_DISTANCE, "maxDistance", 0.0f, CD_WORLD_EXTENT, CD_WORLD_EXTENT)                         \
    X(BACKSTOP_DISTANCE, "backstopDistance", 0.0f, CD_WORLD_EXTENT, 0.0f)                          \
    X(BACKSTOP_RADIUS, "backstopRadius", 0.0f, CD_WORLD_EXTENT, 0.0f)                              \
    X(STRETCH_COMPLIANCE_SCALE, "stretchComplianceScale", 0.0f, 1e6f, 1.0f)                        \
    X(BEND_COMPLIANCE_SCALE, "bendComplianceScale", 0.0f, 1e6f, 1.0f)

typedef enum cd_paint {
#define CD_PAINT_ENUM(ID, wire, lo, hi, fallback) CD_PAINT_##ID,
    CD_PAINT_MAP(CD_PAINT_ENUM)
#undef CD_PAINT_ENUM
    CD_PAINT_COUNT
} cd_paint;

typedef struct cd_paint_spec {
    const char *name;
    float min, max;
    float unpainted;
} cd_paint_spec;
extern const cd_paint_spec cd_paint_specs[CD_PAINT_COUNT];

/* Paints one property: `count` values, one per particle, or 1 for every
 * particle; values NULL clears it (every particle unpainted). Checks the
 * count ("maxDistance: 400 values for 401 vertices") and each value
 * against its row ("maxDistance[7]: must be a number in [0, 100000]");
 * a failed call changes nothing. Wakes the instance. */
cd_status cd_instance_paint(cd_instance *inst, cd_paint which, const float *values,
                            uint32_t count, cd_field_fault *fault);
/* Writes the painted values (particle_count floats); false (nothing
 * written) when the property is unpainted. */
bool cd_instance_painted(const cd_instance *inst, cd_paint which, float *out);

/* The animated (skinned) pose for the next step: 3 floats per particle of
 * positions, and of normals (unit length or zero; NULL: the area-weighted
 * normals of the render triangles at those positions, (b - a) x (c - a)).
 * Over the next step each particle's skinned position moves from the last
 * skin to this one substep by substep. The first skin starts there (no
 * motion), and places every particle that lies outside its maxDistance
 * (or inside its backstop) on the limit, its velocity kept. Wakes the
 * instance. CD_E_INVALID_ARGUMENT: a position outside the world box, a
 * non-finite normal. */
cd_status cd_instance_skin(cd_instance *inst, const float *positions, const float *normals,
                           cd_field_fault *fault);
bool cd_instance_skinned(const cd_instance *inst);

/* ---- attachments ---- */

#define CD_MAX_TRANSFORMS 16
#define CD_TRANSFORM_NAME_MAX 32 /* bytes, including the terminating NUL */

/* Creates or moves the named transform. Every particle and collider
 * attached to it follows (pins move smoothly over the next step's
 * substeps). Returns its handle (>= 1) in *out_handle when not NULL.
 * CD_E_INVALID_ARGUMENT: bad name, non-finite or zero rotation, position
 * outside the world box; CD_E_LIMIT_EXCEEDED: CD_MAX_TRANSFORMS. */
cd_status cd_instance_set_transform(cd_instance *inst, const char *name, cd_vec3 position,
                                    cd_quat rotation, uint32_t *out_handle);
/* The handle of a transform, 0 when there is none by that name. */
uint32_t cd_instance_find_transform(const cd_instance *inst, const char *name);
/* Pins `particle` to the transform `handle` at `local` (its position in the
 * transform's frame; NULL: where the particle is now). */
cd_status cd_instance_attach(cd_instance *inst, uint32_t particle, uint32_t handle,
                             const cd_vec3 *local);

/* The inertia frame (frame.c): the transform whose motion the options
 * linearInertia and angularInertia scale (0: none, the default). A new
 * frame's motion counts from this call (naming the same one again changes
 * nothing). CD_E_INVALID_ARGUMENT: no such transform. */
cd_status cd_instance_set_inertia_frame(cd_instance *inst, uint32_t handle);
uint32_t cd_instance_inertia_frame(const cd_instance *inst);
/* Moves the whole instance rigidly: p -> pivot + rotation (p - pivot) +
 * translation for its particles (and their history: no velocity), pins,
 * skin, transforms and the colliders attached to them (world colliders
 * stay). CD_E_INVALID_ARGUMENT: non-finite input, a zero quaternion, or a
 * particle that would leave the world box (then nothing moves). */
cd_status cd_instance_teleport(cd_instance *inst, cd_vec3 translation, cd_quat rotation,
                               cd_vec3 pivot);

/* Colliders are per instance, with generation-checked ids. */
cd_status cd_instance_add_collider(cd_instance *inst, const cd_collider_def *def, cd_id *out_id);
/* position and/or normal may be NULL to keep the current value. A box
 * has no normal (CD_E_INVALID_ARGUMENT): it turns by cd_instance_turn_collider. */
cd_status cd_instance_move_collider(cd_instance *inst, cd_id collider, const cd_vec3 *position,
                                    const cd_vec3 *normal);
/* Sets a box's rotation (local to its transform when attached): unit
 * within CD_ROTATION_UNIT_TOLERANCE; CD_E_INVALID_ARGUMENT for another
 * type or a bad quaternion, CD_E_NOT_FOUND for an unknown id. */
cd_status cd_instance_turn_collider(cd_instance *inst, cd_id collider, cd_quat rotation);
/* The collider's shape and options as cd_instance_list_colliders gives
 * them; CD_E_NOT_FOUND for an unknown id. */
cd_status cd_instance_get_collider(const cd_instance *inst, cd_id collider, cd_collider_def *out);
cd_status cd_instance_remove_collider(cd_instance *inst, cd_id collider);
/* The impulses handed to colliders with coupling > 0 during the last step;
 * writes up to `cap`, returns how many there are. */
uint32_t cd_instance_collider_impulses(const cd_instance *inst, cd_collider_impulse *out,
                                       uint32_t cap);
/* Writes up to `cap` live colliders (ids and shapes, normals unit length)
 * in slot order; returns how many there are. */
uint32_t cd_instance_list_colliders(const cd_instance *inst, cd_id *ids, cd_collider_def *defs,
                                    uint32_t cap);

/* Advances the instance by dt seconds (0 < dt <= 1), adding global_wind to
 * its own wind. Allocation-free. A disabled instance is left untouched and
 * the result is all false. The caller must not step one instance on two
 * threads at once. */
cd_step_result cd_instance_step(cd_instance *inst, float dt, cd_vec3 global_wind);

/* ---- level of detail (lod.c) ---- */

/* Levels 0 (full detail) .. CD_LOD_LEVELS - 1. Each level halves the work
 * of the level before (particles x substeps x iterations) where it can:
 * iterations are halved first (rounded up, at least 1), then substeps
 * (likewise); collisions, pins, wind and the guard run at every level. A
 * host sends frames of an instance only every cd_lod_frame_interval steps.
 * Switching levels never jumps: finer levels come one a step
 * (cd_instance_step_level), and the step rescales the Verlet history to
 * the new substep length, so velocities carry over. */
#define CD_LOD_LEVELS 4
/* The substeps and iterations of a step of dt at `level` (clamped to the
 * levels), for an instance with options `def`. */
void cd_lod_counts(const cd_cloth_def *def, float dt, int32_t level, int32_t *substeps,
                   int32_t *iterations);
/* Frames every this many steps at `level`: 1, 1, 2, 4. */
uint32_t cd_lod_frame_interval(int32_t level);
/* What a step of dt at `level` (no finer than the instance's own) costs,
 * in units of one particle through half a solver iteration:
 * particles x substeps x (2 x iterations + 1), the stages run once per
 * substep (integration, aerodynamics, colliders) counted as half an
 * iteration (measured: bench/README.md, section 11); 0 while the instance
 * sleeps or is disabled (its steps cost nothing). A host converts units to
 * time with its own rate. */
uint64_t cd_instance_step_cost(const cd_instance *inst, float dt, int32_t level);
/* The level a step asked for at `level` runs at: no finer than the
 * instance's own `lod`, and at most one level finer than its last step's
 * (a coarser level takes effect at once, a finer one comes one level a
 * step, so that the stiffer solve does not pull the cloth back in one
 * step). */
int32_t cd_instance_step_level(const cd_instance *inst, int32_t level);
/* cd_instance_step at cd_instance_step_level(inst, level). The result says
 * which level ran, and whether it was degraded: coarser than the
 * instance's own `lod` because `level` asked for a coarser one than
 * cd_instance_step_level(inst, own lod) would give, or because the last
 * step was degraded and this one is still coarser than its own (coming
 * back one level a step). A host that changes `lod` itself sees no
 * degraded step. */
cd_step_result cd_instance_step_lod(cd_instance *inst, float dt, cd_vec3 global_wind,
                                    int32_t level);

/* Helping one large step (CD_TEAM_MIN_PARTICLES or more) from other threads.
 * While cd_instance_step(inst) runs on one thread, any number of others may
 * call cd_instance_help_step(inst, ticket) and take blocks of its parallel
 * stages (integration, each colour of the distance solve, tethers,
 * colliders, the guard); it returns once that step is over, at once if it
 * already is. The positions are the same bits however many threads help,
 * none included. The ticket names the next step: read it with
 * cd_instance_help_ticket before that step starts (0: the instance takes no
 * help, a helper returns at once). The instance must stay alive until every
 * helper has returned. Returns how many blocks the helper ran. */
#define CD_TEAM_MIN_PARTICLES 4096u /* the smallest instance that takes help */
uint64_t cd_instance_help_ticket(const cd_instance *inst);
uint64_t cd_instance_help_step(cd_instance *inst, uint64_t ticket);

/* The distance solve's instruction set for this process: "avx512" (16
 * constraints of a colour at a time), "avx2" (8) or "scalar" (the
 * reference). Chosen once at start-up from the CPU, the widest first; the
 * environment variable CLOTHD_SIMD=scalar|avx2|avx512 forces one the CPU
 * has (another is refused with a line on stderr). Within one path results
 * are bit-identical whatever the worker count; today the three paths also
 * agree bit for bit (same IEEE operations in the same order), but a future
 * path (fused multiply-adds) may differ in the last bits. */
const char *cd_solver_simd_path(void);

/* Tests and benches: selects the path by name ("avx512", "avx2" or
 * "scalar"); false (and no change) when this CPU or build lacks it. Call
 * only while no step runs. */
bool cd_solver_select_simd(const char *name);

/* Bytes the instance owns (particles, constraints, colliders, the struct). */
size_t cd_instance_memory(const cd_instance *inst);

/* Largest relative deviation |d - rest| / rest over the structural
 * constraints; a measure of stretch for tests, benches and status. */
float cd_instance_max_structural_strain(const cd_instance *inst);

/* Self-collision's work since the instance was created (all 0 while
 * selfDistance is 0): searches for candidate pairs, the pairs they kept,
 * the hash entries they looked at, and the searches that stopped early (48
 * pairs per particle, or 2048 hash entries per particle looked at by all
 * the searches of one step, in a crowded layout); what they did not reach
 * waits for the next search. */
typedef struct cd_self_collision_stats {
    uint64_t searches, pairs, overflows;
    uint64_t examined;
} cd_self_collision_stats;
cd_self_collision_stats cd_instance_self_collision_stats(const cd_instance *inst);

/* True when every component is finite. */
bool cd_vec3_is_valid(cd_vec3 v);

/* Half the side of the world box, metres. A position outside it on any axis
 * counts as a blow-up for the instability guard, so pins and cloth layouts
 * must lie inside it. */
#define CD_WORLD_EXTENT 1.0e5f

/* True when v is finite and inside the world box. */
bool cd_vec3_in_world(cd_vec3 v);

#endif
