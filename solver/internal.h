/* Private layout of the solver's objects, shared by the solver's .c files
 * only. Particle state is structure-of-arrays: one contiguous array per
 * attribute, vectors stored as packed xyz triplets so that a frame's payload
 * is the position array as it is. */
#ifndef CLOTHD_SOLVER_INTERNAL_H
#define CLOTHD_SOLVER_INTERNAL_H

#include <assert.h>

#include "solver.h"

#define CD_NO_ANCHOR UINT32_MAX
#define CD_SLEEP_DELAY 1.0f /* seconds below the sleep threshold before sleeping */

/* A distance constraint as the builders emit it (build time only: the
 * step reads the coloured arrays of cd_constraints). */
typedef struct cd_distance {
    uint32_t a, b;
    float rest;
    float lambda;
} cd_distance;
_Static_assert(sizeof(cd_distance) == 16, "distance constraints stay 16 bytes");

/* SIMD width of the distance kernels: colours are padded to a multiple. */
#define CD_LANES 8u

/* One colour: constraints that share no particle, slots [begin, begin +
 * count) of cd_constraints, `begin` a multiple of CD_LANES. The slots up to
 * the next multiple of CD_LANES are inert padding (a = b = 0, rest 0). */
typedef struct cd_colour {
    uint32_t begin, count;
} cd_colour;

/* Distance constraints, coloured and stored structure-of-arrays (each array
 * 32-byte aligned, `slots` entries): the kernels load 8 indices, rest
 * lengths and multipliers at a time and gather the positions. `lambda` is
 * XPBD's accumulated multiplier, reset every substep. The inverse masses
 * are gathered from inst->inv_mass (always current: pins, unpins and mass
 * changes need no refresh); see DESIGN.md for why they are not stored per
 * constraint. */
typedef struct cd_constraints {
    uint32_t *a, *b;
    float *rest, *lambda;
    float *compliance_scale; /* painted compliance: per slot, else NULL */
    uint32_t slots;       /* a multiple of CD_LANES */
    cd_colour *colours;   /* stretch's colours, then shear's, then bend's */
    uint32_t colour_count;
    /* A large instance's constraints in parts (colour.c), else 0 parts:
     * group g's colours are those of part 0, part 1, ... then the
     * boundary's (part `part_count`); part p of group g starts at colour
     * part_colour[g * (part_count + 1) + p] and ends where the next
     * entry starts (CD_GROUP_COUNT * (part_count + 1) + 1 entries). */
    uint32_t part_count;
    uint32_t *part_colour;
} cd_constraints;

/* Constraints come in groups that share a stiffness or a compliance. */
typedef enum cd_group_kind {
    CD_GROUP_STRETCH = 0, /* structural: must come first (strain measure) */
    CD_GROUP_SHEAR,
    CD_GROUP_BEND,
    CD_GROUP_COUNT
} cd_group_kind;

typedef struct cd_group {
    uint32_t begin, end; /* range in the builders' `constraints` (build time) */
    uint32_t colour_begin, colour_end; /* range in `coloured.colours` */
    float stiffness;     /* the seed's projection scale, used when compliance < 0 */
    float compliance;    /* XPBD, m/N; < 0: use stiffness */
} cd_group;

typedef struct cd_pose {
    cd_vec3 position;
    cd_vec3 normal;   /* unit */
    cd_quat rotation; /* unit; boxes only (the others: identity) */
} cd_pose;

typedef struct cd_collider {
    cd_collider_type type;
    cd_pose pose;  /* world pose this step moves to */
    cd_pose from;  /* world pose at the start of the next step */
    cd_pose local; /* pose in its transform's frame when attached */
    uint32_t attachment;
    float radius, height;
    float friction, static_friction, coupling;
    float radius2;        /* tapered capsule: the +normal end's radius */
    cd_vec3 half_extents; /* box */
    cd_vec3 impulse_linear, impulse_angular; /* handed over in the last step */
    uint16_t generation;
    bool active;
} cd_collider;

/* A pinned particle: it moves from `from` to `to` over a step's substeps. */
typedef struct cd_pin {
    uint32_t particle;
    uint32_t attachment; /* transform handle, 0 = none */
    cd_vec3 local;       /* in the transform's frame when attached */
    cd_vec3 from, to;
} cd_pin;

/* A tetrahedral volume constraint (soft bodies). */
typedef struct cd_tet {
    uint32_t v[4];
    float rest_volume;
    float lambda;
} cd_tet;

/* A tetrahedron of a soft body with a material (material.c): its vertices,
 * the inverse of its rest edge matrix Dm = [x1-x0, x2-x0, x3-x0] (row
 * major), its rest volume and the XPBD multipliers of its deviatoric and
 * volume constraints. Stored colour by colour. */
typedef struct cd_element {
    uint32_t v[4];
    float inv_rest[9];
    float rest_volume;
    float lambda_dev, lambda_vol;
} cd_element;
_Static_assert(sizeof(cd_element) == 64, "an element is one cache line");

/* The self-collision hash's entries, grouped by bucket, one array per
 * field: each particle's cell, index, and position and last move at the
 * search. A query reads a bucket's entries in a row, and on the AVX2 path
 * tests 8 at a time (self_collision_avx2.c), so every array has
 * CD_HASH_PAD entries past the last that no bucket holds. */
#define CD_HASH_PAD 8u
typedef struct cd_hash_entries {
    int32_t *cx, *cy, *cz;
    uint32_t *particle;
    float *px, *py, *pz, *move;
} cd_hash_entries;
#define CD_HASH_ARRAYS 8u /* the fields above */
#define CD_SELF_CHUNK 64u  /* entries of a bucket tested per call */

/* The frame of a self-collision search's cells: a cell's integer
 * coordinates along each axis are floor((v - origin) / cell). */
typedef struct cd_grid {
    float origin[3];
    float inv;
} cd_grid;

/* One search's numbers (self_collision.c, cd_stage_find_self_pairs). */
typedef struct cd_self_search {
    cd_grid grid;
    float d;                 /* selfDistance */
    float scale, margin, cap; /* a particle's travel: min(move scale + margin, cap) */
    float travel_max;        /* the largest travel */
    int k;                   /* substeps the pairs serve */
} cd_self_search;

/* What a search of some particles found (self_search.h): the pairs it
 * wrote, the hash entries it looked at (the budget it used), and whether
 * it stopped early, out of budget or out of room for pairs. */
typedef enum cd_self_stop { CD_SELF_DONE, CD_SELF_OUT_OF_BUDGET, CD_SELF_OUT_OF_ROOM } cd_self_stop;
typedef struct cd_self_found {
    uint32_t pairs;
    cd_self_stop stop;
    uint64_t used;
} cd_self_found;

/* What a search asks of one bucket for particle i (self_collision.c). */
#define CD_SELF_JOINED 6
typedef struct cd_self_query {
    uint32_t i;
    int32_t x, y, z;               /* the cell looked at */
    float xi, yi, zi;              /* i's position */
    float reach_i, reach_i_max;    /* i's own reach, and the farthest any j could be */
    float scale, margin, cap;      /* j's travel: min(move scale + margin, cap) */
    int32_t joined[CD_SELF_JOINED]; /* j - i of the grid's particles joined to i, or -1 */
} cd_self_query;

/* An entry of the geodesic search's queue (pins.c). */
typedef struct cd_heap_entry {
    float distance;
    uint32_t particle;
} cd_heap_entry;

typedef struct cd_transform {
    char name[CD_TRANSFORM_NAME_MAX]; /* "" = free slot */
    cd_vec3 position;
    cd_quat rotation;
} cd_transform;

/* Several threads on one large instance's step (team.c). An instance of
 * at least CD_TEAM_MIN_PARTICLES has a team; its parallel stages run in
 * blocks of CD_TEAM_BLOCK particles or constraint slots that any thread
 * present may claim. 4,096 particles (a 64 x 64 cloth, ~1 ms a step with
 * AVX2) is where a second thread's gain clearly outweighs a few hundred
 * stage hand-offs per step; 512-item blocks give a 128 x 128 cloth 32
 * particle blocks and ~16 per colour, enough to balance 2-4 threads. */
#define CD_TEAM_BLOCK 512u
_Static_assert(CD_TEAM_BLOCK % (2 * CD_LANES) == 0, "blocks keep the kernel's lane pairs");
typedef struct cd_team cd_team;
/* Runs block `block` of a stage. */
typedef void cd_block_fn(cd_instance *inst, const void *ctx, uint32_t block);
cd_team *cd_team_create(void);
void cd_team_free(cd_team *team); /* NULL is fine */
size_t cd_team_memory(void);
/* Runs blocks 0..blocks-1 of fn: with the instance's team, by whichever
 * threads are present (the caller included) and returns when all are done;
 * without one, in order on the caller. No two blocks may touch one
 * particle. */
void cd_team_run(cd_instance *inst, cd_block_fn *fn, const void *ctx, uint32_t blocks);
uint64_t cd_team_ticket(const cd_team *team);
void cd_team_step_done(cd_team *team);
/* Returns how many blocks this helper ran. */
uint64_t cd_team_help(cd_team *team, cd_instance *inst, uint64_t ticket);
/* Particle blocks: how many, and the range of one. */
static inline uint32_t cd_particle_blocks(const cd_instance *inst);
static inline void cd_particle_block(const cd_instance *inst, uint32_t block, uint32_t *begin,
                                     uint32_t *end);

/* What the guard's pass over some particles found (step.c): the largest
 * squared move over the last substep, the free particles' sum of
 * m |move|^2, the bounding box of their local positions, and whether one
 * left the world (or is NaN). */
typedef struct cd_guard_sums {
    float worst, energy;
    float lo[3], hi[3];
    uint8_t bad;
} cd_guard_sums;

struct cd_instance {
    cd_id id;
    cd_instance_type type;
    int32_t width, height;
    cd_cloth_def def; /* layout and live options */
    uint64_t max_step_work; /* the world's, for cd_instance_configure (0: none) */
    float max_self_distance; /* cloth: the spacing; soft body: its shortest edge */

    uint32_t particle_count;
    cd_vec3 anchor;      /* where the local frame of pos, prev and the skin lies
                          * in the world, in whole metres (anchor.c) */
    float *pos;          /* 3 * particle_count, relative to the anchor */
    float *prev;         /* 3 * particle_count, positions before the last substep */
    float *residual;     /* 3 * particle_count, the part of the last move that rounding
                          * left out of pos (compensated Verlet: integrate.c) */
    float *inv_mass;     /* particle_count, 1/kg, 0 while pinned */
    float *own_inv_mass; /* particle_count, restored by unpin */
    uint8_t *pinned;     /* particle_count */

    cd_distance *constraints; /* the builders' list; freed by cd_colour_constraints */
    uint32_t constraint_count;
    cd_group groups[CD_GROUP_COUNT];
    cd_constraints coloured;  /* what the step solves */
    cd_team *team;            /* NULL below CD_TEAM_MIN_PARTICLES */
    int32_t step_substeps;    /* the running step's (cd_substeps_for) */
    float *contact_depth;     /* soft bodies: collider depth corrected this substep */
    cd_guard_sums *block_guard; /* with a team: the guard's per-block results */

    /* Soft bodies: the creation positions (cloth: NULL, the grid is
     * implicit), the volume constraints and the surface triangles. */
    float *rest;
    cd_tet *tets;
    uint32_t tet_count;
    float rest_volume;
    uint32_t *triangles;
    uint32_t triangle_count;
    /* A soft body with a material (material.c; NULL until youngsModulus is
     * first given): its tets as elements, colour by colour, and the
     * colours (ranges of `elements` that share no vertex). */
    cd_element *elements;
    cd_colour *element_colours;
    uint32_t element_colour_count;
    /* Mesh cloth: the UVs it was given (NULL: none), and its edges as a
     * graph (CSR, rest lengths) with the scratch of the geodesic search
     * that places its tethers (pins.c). */
    float *uvs;
    uint32_t *edge_start; /* particle_count + 1 */
    uint32_t *edge_to;
    float *edge_length;
    float *geodesic;      /* particle_count: distance to the nearest pin */
    cd_heap_entry *heap;  /* particle_count + edge ends: the search's queue */

    cd_pin *pins;
    uint32_t pin_count, pin_cap;

    /* Painted per-vertex properties (NULL: unpainted) and the skin: the
     * skinned positions at the step's start and end, their normals, this
     * substep's positions, and for a grid its render triangles (skin.c). */
    float *paint[CD_PAINT_COUNT];
    float *skin_from, *skin_to, *skin_normal, *skin_now;
    uint32_t *skin_triangles;
    uint32_t skin_triangle_count;
    bool skinned;

    /* Long-range attachments: each free particle's nearest pin in the rest
     * shape and the distance it may not exceed. Rebuilt when pins change. */
    uint32_t *tether_anchor; /* particle_count, CD_NO_ANCHOR = none */
    float *tether_length;    /* particle_count */
    bool tethers_dirty;

    /* Self-collision (self_distance > 0), allocated when first enabled: a
     * spatial hash of the positions at the last search (dense arrays sized
     * to the particle count), and for soft bodies the particles'
     * neighbours (CSR), which are exempt. Cloth's neighbours are implicit. */
    uint32_t *hash_start;   /* hash_size + 1 */
    cd_hash_entries hash_entries; /* particle_count (+ CD_HASH_PAD) each, one block */
    float *self_move;            /* particle_count: last-substep move at the search */
    cd_self_found *self_blocks;  /* per particle block: a team's search (self_collision.c) */
    uint32_t hash_size;     /* power of two */
    uint32_t *pairs;        /* candidate pairs (i, j) of the last search */
    uint32_t pair_count, pair_cap;
    cd_self_collision_stats self_stats; /* since creation */
    uint64_t self_budget; /* hash entries the step's searches may still look at */
    uint32_t *neighbour_start; /* particle_count + 1 */
    uint32_t *neighbours;
    float last_speed; /* the fastest particle of the last step, m/s */
    float kinetic_energy; /* of the free particles after the last step, J */

    cd_collider *colliders; /* slots; inactive ones are free */
    uint32_t collider_slots;
    uint32_t collider_count; /* active */

    cd_transform transforms[CD_MAX_TRANSFORMS]; /* handle = index + 1 */
    /* The inertia frame (frame.c): a transform handle (0: none) and its
     * pose when the last step started. */
    uint32_t inertia_frame;
    cd_vec3 frame_position;
    cd_quat frame_rotation;

    cd_vec3 wind;
    cd_vec3 last_global_wind; /* a change wakes a sleeping instance */

    bool enabled;
    bool unstable;
    bool started; /* has taken a step: Verlet history is primed */
    bool sleeping;
    float still_time; /* seconds spent below the sleep threshold */
    uint64_t frame;
    double time;
    float last_dt; /* the last substep's length */
    int32_t lod_now; /* the level of detail of the last step (lod.c) */
    /* That level was coarser than its own `lod` because the caller asked
     * for a coarser one than the instance would have run (a host's
     * budget), or it is still coming back from such a step, one level a
     * step (lod.c). */
    bool lod_degraded;
};

/* What one substep needs, computed once per step. */
/* Fills `fault` (when not NULL) with the field and a printf-style reason;
 * returns `code`, for `return cd_fault_set(...)`. */
cd_status cd_fault_set(cd_field_fault *fault, cd_status code, cd_fault_kind kind,
                       const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

typedef struct cd_substep {
    float h;         /* substep length */
    float keep;      /* velocity kept per substep (damping) */
    cd_vec3 accel;   /* gravity, plus the wind when it is an acceleration */
    cd_vec3 wind;    /* air velocity when the wind is aerodynamic */
    float t0, t1;    /* fraction of the step at the substep's start and end */
} cd_substep;

/* Stages of one substep, in order (step.c runs them). */
void cd_stage_prime_verlet(cd_instance *inst, cd_vec3 accel, float h);
void cd_stage_move_pins(cd_instance *inst, const cd_substep *sub);
void cd_stage_aerodynamics(cd_instance *inst, const cd_substep *sub);
void cd_stage_integrate(cd_instance *inst, const cd_substep *sub);
void cd_stage_reset_multipliers(cd_instance *inst);
void cd_stage_solve_distances(cd_instance *inst, float h);
/* Colours each group of the builders' `constraints` greedily (in array
 * order, each constraint takes the first colour none of whose constraints
 * shares a particle with it), fills `coloured` and frees `constraints`;
 * false on out of memory. Run again whenever the constraint set changes. */
bool cd_colour_constraints(cd_instance *inst);
/* The distance kernels over slots [begin, end) of one colour (end: the
 * colour's last real slot at most): the seed's projection with stiffness
 * k, or XPBD with alpha~ = compliance / h^2. The scalar ones are the
 * reference; the AVX2 ones (distance_avx2.c) project 8 constraints at a
 * time, the AVX-512 ones 16, bit-identically. */
typedef void cd_seed_kernel(float *pos, const float *inv_mass, const cd_constraints *c,
                            uint32_t begin, uint32_t end, float k);
typedef void cd_xpbd_kernel(float *pos, const float *inv_mass, cd_constraints *c,
                            uint32_t begin, uint32_t end, float alpha_tilde);
cd_seed_kernel cd_solve_seed_scalar;
cd_xpbd_kernel cd_solve_xpbd_scalar;
/* XPBD with each slot's alpha~ times compliance_scale[slot] (painted
 * compliance, scalar only). */
cd_xpbd_kernel cd_solve_xpbd_scaled_scalar;
/* Recomputes compliance_scale from the painted compliance scales (frees
 * it when there are none); false on out of memory. */
bool cd_refresh_compliance_scale(cd_instance *inst);
/* A soft body given youngsModulus (material.c): its tets are continuum
 * elements (a shape and a volume constraint each) and its edges no
 * springs. Active once cd_material_reserve has built the elements and
 * their colours (false on out of memory; done at creation or by `set`);
 * cd_material_memory counts them; cd_stage_solve_material runs one
 * Gauss-Seidel pass over them, colour after colour (in blocks with a
 * team); cd_material_reset_multipliers starts a substep. */
bool cd_material_active(const cd_instance *inst);
bool cd_material_reserve(cd_instance *inst);
size_t cd_material_memory(const cd_instance *inst);
void cd_material_reset_multipliers(cd_instance *inst);
void cd_stage_solve_material(cd_instance *inst, float h);
/* Colours `count` >= 1 tets (4 vertex indices each, of `vertex_count`
 * vertices) greedily in order: order[] gets the tets colour by colour (in
 * their order within a colour), colours[] the ranges (at most `count`);
 * returns the number of colours, 0 on out of memory (colour.c). */
uint32_t cd_colour_tets(const uint32_t *tets, uint32_t count, uint32_t vertex_count,
                        uint32_t *order, cd_colour *colours);
#if defined(__x86_64__) || defined(__i386__)
#define CD_HAVE_AVX2_KERNELS 1
cd_seed_kernel cd_solve_seed_avx2;
cd_xpbd_kernel cd_solve_xpbd_avx2;
/* The same, 16 constraints at a time with AVX-512 F, VL, BW and DQ
 * (distance_avx512.c), bit-identically. */
cd_seed_kernel cd_solve_seed_avx512;
cd_xpbd_kernel cd_solve_xpbd_avx512;
#endif
/* The aerodynamic kernels (aero.c: the scalar reference; aero_avx2.c).
 * A run is `count` cells of one grid row, every other one: the cells whose
 * top-left corners are tl, tl + 2, ..., tl + 2 (count - 1), in a grid
 * `width` particles wide; first the tl-bl-tr triangle of each cell in
 * order, then the tr-bl-br one of each. Each kernel adds a third of a
 * triangle's force to its free corners as a change of their Verlet
 * history, prev -= F h^2 / (3 m). */
typedef struct cd_aero_params {
    float inv_3h;  /* 1 / (3 h): the sum of the corners' (pos - prev), as a mean velocity */
    cd_vec3 wind;  /* the air's velocity */
    float plate;   /* "aero": airDensity C h^2 / 12 (C: the plate's normal-force coefficient) */
    float h;       /* "dragLift": the substep, and the coefficients times airDensity */
    float drag, lift;
} cd_aero_params;
/* Triangles with |N|^2 = (2 area)^2 at most this have no normal: skipped. */
#define CD_AERO_MIN_NORMAL2 1e-24f
typedef void cd_aero_kernel(const float *pos, float *prev, const float *inv_mass, uint32_t tl,
                            uint32_t width, uint32_t count, const cd_aero_params *p);
cd_aero_kernel cd_aero_plate_scalar;
/* True when the path's CPU has AVX2 ("avx2" and "avx512"): the stages
 * with an AVX2 kernel of their own (aero, integration, tethers) ask this,
 * a load of the path's flag, once per block. */
bool cd_solver_path_has_avx2(void);
#ifdef CD_HAVE_AVX2_KERNELS
cd_aero_kernel cd_aero_plate_avx2;
/* Compensated Verlet over particles [begin, end) 8 at a time, as
 * integrate.c's loop does it (accel: a h^2 per axis); returns the first
 * particle it left to the scalar loop (fewer than 8 remain). */
uint32_t cd_integrate_avx2(float *pos, float *prev, float *residual, const float *inv_mass,
                           uint32_t begin, uint32_t end, float keep, const float accel[3]);
/* The tethers' pass over particles [begin, end) 8 at a time, as pins.c's
 * loop does it; returns the first particle it left to the scalar loop. */
/* The self-collision search's loop over particles [begin, end) with the
 * AVX2 test of the hash's entries (self_search.h). */
cd_self_found cd_self_search_avx2(const cd_instance *inst, const cd_self_search *s,
                                  uint32_t begin, uint32_t end, uint32_t *out, uint32_t room,
                                  uint64_t budget);
uint32_t cd_tethers_avx2(float *pos, const uint32_t *anchor, const float *length,
                         uint32_t begin, uint32_t end);
#endif
void cd_stage_solve_tethers(cd_instance *inst);
/* Skinning (skin.c): this substep's skinned positions (kinematic particles
 * moved onto them), each iteration the max distance and backstop, and
 * after the last substep the skin's end pose as the next start. */
void cd_stage_move_skin(cd_instance *inst, const cd_substep *sub);
void cd_stage_skin_limits(cd_instance *inst);
void cd_stage_finish_skin(cd_instance *inst);
/* maxDistance 0 on a skinned instance: moved by the skin, inverse mass 0. */
bool cd_particle_kinematic(const cd_instance *inst, uint32_t particle);
float cd_particle_inv_mass_scale(const cd_instance *inst, uint32_t particle);
size_t cd_skin_memory(const cd_instance *inst);
/* Allocates the skin's arrays (once); false on out of memory (snapshots
 * restore a skin into them). */
bool cd_skin_reserve(cd_instance *inst);
void cd_skin_free(cd_instance *inst);
/* Recomputes every particle's own inverse mass (mass lumping, invMassScale,
 * kinematic skinning) and the inverse mass of the unpinned ones. */
void cd_refresh_masses(cd_instance *inst);
void cd_stage_solve_volumes(cd_instance *inst, float h);
/* Finds the candidate pairs for the next substeps, at most `remaining`;
 * returns how many substeps they serve (>= 1). */
int cd_stage_find_self_pairs(cd_instance *inst, int remaining);
void cd_stage_self_collide(cd_instance *inst);
/* Allocates what self-collision needs; false on out of memory. */
bool cd_self_collision_reserve(cd_instance *inst);
/* Frees what cd_self_collision_reserve allocated (a torn cloth's count
 * changed: reserve again). */
void cd_self_collision_release(cd_instance *inst);
/* Tearing (tear.c): splits at most max_new vertices of the edges beyond
 * tearStrain; returns how many. *failed: out of memory (the instance is
 * then disabled as unstable). */
uint32_t cd_instance_tear(cd_instance *inst, uint32_t max_new, bool *failed);
/* Bytes of what cd_self_collision_reserve allocated (0 before). */
size_t cd_self_collision_memory(const cd_instance *inst);
void cd_stage_collide(cd_instance *inst, const cd_substep *sub);
/* Angular momentum through a soft body's internal passes (momentum.c):
 * measured before and after them in each iteration, taken back at the end
 * of the substep. Kept for unpinned soft bodies. */
bool cd_momentum_kept(const cd_instance *inst);
void cd_momentum_begin(const cd_instance *inst, float h, cd_vec3 *before);
void cd_momentum_add_change(const cd_instance *inst, float h, cd_vec3 before, cd_vec3 *change);
void cd_momentum_take_back(cd_instance *inst, float h, cd_vec3 change);
/* Inside the solver iterations: soft bodies meet their colliders there too
 * (collide.c says why); cloth does not (contact_depth NULL). */
void cd_stage_contacts(cd_instance *inst, const cd_substep *sub);
/* Before a substep's passes: no depth corrected yet (soft bodies). */
void cd_stage_begin_contacts(cd_instance *inst);
/* After the last substep. */
void cd_stage_finish_pins(cd_instance *inst);
void cd_stage_finish_colliders(cd_instance *inst);
bool cd_stage_guard_ok(cd_instance *inst, cd_guard_sums *out);
void cd_stage_guard_restore(cd_instance *inst);

/* The seed's grid (its triangles, neighbours and UVs are implicit), as
 * opposed to a mesh cloth or a soft body, which list their triangles. */
/* The local frame (anchor.c): a world point where the particles are, and
 * back. The anchor is placed by the builders and follows the particles
 * after a step that left it far behind. */
static inline cd_vec3 cd_to_local(const cd_instance *inst, cd_vec3 world)
{
    return (cd_vec3){world.x - inst->anchor.x, world.y - inst->anchor.y, world.z - inst->anchor.z};
}
static inline cd_vec3 cd_to_world(const cd_instance *inst, cd_vec3 local)
{
    return (cd_vec3){local.x + inst->anchor.x, local.y + inst->anchor.y, local.z + inst->anchor.z};
}
void cd_anchor_place(cd_instance *inst);
/* After a good step: the anchor follows the particles when the centre of
 * their bounding box (local lo, hi: the guard's) is far from it; the
 * second form measures the box itself (after a teleport). */
void cd_anchor_follow_box(cd_instance *inst, const float lo[3], const float hi[3]);
void cd_anchor_follow(cd_instance *inst);

static inline bool cd_is_grid(const cd_instance *inst)
{
    return inst->type == CD_INSTANCE_CLOTH && inst->triangles == NULL;
}

/* A unique edge of a triangle mesh (a < b) with the triangles sharing it
 * (1 on a border, 2 inside; UINT32_MAX fills the unused slot) and the
 * vertex across from it in each. */
typedef struct cd_mesh_edge {
    uint32_t a, b;
    uint32_t triangles;
    uint32_t triangle[2];
    uint32_t across[2];
} cd_mesh_edge;
/* The unique edges of `triangles` (indices checked by the caller), sorted
 * by (a, b); malloc'd, NULL on out of memory. *non_manifold is the index
 * of the first edge of more than two triangles (UINT32_MAX: none), whose
 * `triangle` and `across` then hold the first two. */
cd_mesh_edge *cd_tri_mesh_edges(const uint32_t *triangles, uint32_t triangle_count,
                                uint32_t *edge_count, uint32_t *non_manifold);
/* Half the length of (b - a) x (c - a) for the triangle's corners in `pos`. */
float cd_triangle_area(const float *pos, const uint32_t *tri);
/* Zero area, or a sliver (tri_mesh.c). */
bool cd_triangle_degenerate(cd_vec3 a, cd_vec3 b, cd_vec3 c);
/* (Re)derives a mesh cloth's constraints (coloured), edge graph and
 * shortest edge from its rest shape and triangles, freeing the old ones;
 * false on out of memory. */
bool cd_mesh_cloth_derive(cd_instance *inst);
/* Builds a cloth from a validated triangle mesh into a zeroed instance;
 * false on out of memory. */
bool cd_mesh_cloth_build(cd_instance *inst, const cd_tri_mesh *mesh, const cd_cloth_def *options);

/* Builds a cloth grid into a zeroed instance; false on out of memory. */
bool cd_cloth_build(cd_instance *inst, const cd_cloth_def *def);
/* Applies the live options of `def` (already validated). */
void cd_apply_options(cd_instance *inst, const cd_cloth_def *def);
/* selfDistance at most `bound` (the spacing, or a soft body's shortest
 * edge): beyond it every particle would reach most of its neighbourhood and
 * self-collision's work would grow with selfDistance. */
cd_status cd_self_distance_check(float self_distance, float bound, bool cloth,
                                 cd_field_fault *fault);
/* Rest-shape position of a particle (in the instance's own frame: for
 * tether distances) and its world position at creation. */
cd_vec3 cd_rest_position(const cd_instance *inst, uint32_t particle);
cd_vec3 cd_initial_position(const cd_instance *inst, uint32_t particle);
bool cd_softbody_build(cd_instance *inst, const cd_tet_mesh *mesh, const cd_cloth_def *options);
float cd_tet_volume(cd_vec3 a, cd_vec3 b, cd_vec3 c, cd_vec3 d);
/* Unique edges (pairs, sorted) and surface triangles of a tet mesh;
 * malloc'd, NULL on out of memory. */
uint32_t *cd_tet_edges(const uint32_t *tets, uint32_t tet_count, uint32_t *edge_count);
uint32_t *cd_tet_surface(const uint32_t *tets, uint32_t tet_count, uint32_t *triangle_count);
void cd_rebuild_tethers(cd_instance *inst);
/* Something touched the instance: it must simulate again. */
void cd_instance_wake(cd_instance *inst);
/* Moves every pin and collider attached to transform `handle` to its pose
 * (pins over the next step, colliders from their last pose). */
void cd_follow_transform(cd_instance *inst, uint32_t handle);
/* Local-space simulation (frame.c): at a step's start, free particles are
 * carried by the share of the inertia frame's motion since the last step
 * that the inertia options take away. */
void cd_stage_carry(cd_instance *inst);
/* Sets a collider's world pose from its local one (its transform's, when
 * attached): addCollider, moveCollider and `transform` all place it so. */
void cd_collider_place(const cd_instance *inst, cd_collider *c);
/* World pose of a transform-local pose. */
cd_vec3 cd_transform_point(const cd_transform *t, cd_vec3 local);
cd_vec3 cd_transform_direction(const cd_transform *t, cd_vec3 local);
/* Allocates the particle and constraint arrays (sets the counts); false on
 * out of memory (cd_instance_free cleans up either way). */
bool cd_instance_alloc(cd_instance *inst, uint32_t particles, uint32_t constraints);
/* Frees what an instance owns, then the instance. NULL is fine. */
void cd_instance_free(cd_instance *inst);

/* Snapshots (snapshot.c) reach into the world's slot table here (world.c). */
const cd_world_def *cd_world_definition(const cd_world *world);
/* Writes max_instances + 1 generations (slot 0 included) and the free slots,
 * oldest freed first (free_count of them); returns free_count. */
uint32_t cd_world_export_slots(const cd_world *world, uint16_t *generations, uint16_t *fifo);
/* Places `inst` in a free slot (one must be free), as create does. */
cd_id cd_world_place(cd_world *world, cd_instance *inst);
/* A live instance holds the slot of `id`. */
bool cd_world_slot_taken(const cd_world *world, cd_id id);
/* Places `inst` under `id` (its slot in range and free); the free-slot list
 * is stale until cd_world_rebuild_free. */
void cd_world_adopt(cd_world *world, cd_instance *inst, cd_id id);
/* After adoptions: the free slots' generations from `generations` (NULL,
 * count 0: kept), and the free-slot list rebuilt: `order`'s free slots
 * first, then the others in their current order. `fifo` (max_instances
 * entries, malloc'd) becomes the list; `seen` (max_instances + 1 zeroed
 * bytes) is scratch. Allocation-free, so a load can allocate first and
 * then commit without a failure in between. */
void cd_world_rebuild_free(cd_world *world, const uint16_t *generations, uint32_t generation_count,
                           const uint16_t *order, uint32_t order_count, uint16_t *fifo,
                           uint8_t *seen);


static inline uint32_t cd_particle_blocks(const cd_instance *inst)
{
    return (inst->particle_count + CD_TEAM_BLOCK - 1) / CD_TEAM_BLOCK;
}

static inline void cd_particle_block(const cd_instance *inst, uint32_t block, uint32_t *begin,
                                     uint32_t *end)
{
    *begin = block * CD_TEAM_BLOCK;
    *end = *begin + CD_TEAM_BLOCK < inst->particle_count ? *begin + CD_TEAM_BLOCK
                                                          : inst->particle_count;
}

#endif
