/* Private layout of the solver's objects, shared by the solver's .c files
 * only. Particle state is structure-of-arrays: one contiguous array per
 * attribute, vectors stored as packed xyz triplets so that a frame's payload
 * is the position array as it is. */
#ifndef CLOTHD_SOLVER_INTERNAL_H
#define CLOTHD_SOLVER_INTERNAL_H

#include <assert.h>

#include "solver.h"



/* A distance constraint, 16 bytes; the step walks them in array order. */
typedef struct cd_distance {
    uint32_t a, b;
    float rest;
    float stiffness;
} cd_distance;
_Static_assert(sizeof(cd_distance) == 16, "distance constraints stay 16 bytes");

typedef struct cd_collider {
    cd_collider_type type;
    cd_vec3 position;
    cd_vec3 normal; /* unit */
    float radius;
    float height;
    uint16_t generation;
    bool active;
} cd_collider;

struct cd_instance {
    cd_id id;
    cd_instance_type type;
    int32_t width, height;

    uint32_t particle_count;
    float *pos;          /* 3 * particle_count */
    float *prev;         /* 3 * particle_count, positions before the last step */
    float *inv_mass;     /* particle_count, 0 while pinned */
    float *own_inv_mass; /* particle_count, restored by unpin */
    uint8_t *pinned;     /* particle_count */

    cd_distance *constraints;
    uint32_t constraint_count;
    uint32_t structural_count; /* the first constraints are structural */

    cd_collider *colliders; /* slots; inactive ones are free */
    uint32_t collider_slots;
    uint32_t collider_count; /* active */

    cd_vec3 gravity;
    cd_vec3 wind;
    float damping;
    int32_t iterations;

    bool enabled;
    bool unstable;
    bool started; /* has taken a step: Verlet history is primed */
    uint64_t frame;
    double time;
    float last_dt;
};

/* Stages of one step, in order (step.c runs them). */
void cd_stage_prime_verlet(cd_instance *inst, cd_vec3 accel, float dt);
void cd_stage_integrate(cd_instance *inst, cd_vec3 accel, float dt);
void cd_stage_solve_distances(cd_instance *inst);
void cd_stage_collide(cd_instance *inst);
bool cd_stage_guard_ok(const cd_instance *inst);
void cd_stage_guard_restore(cd_instance *inst);

/* Builds a cloth grid into a zeroed instance; false on out of memory. */
bool cd_cloth_build(cd_instance *inst, const cd_cloth_def *def);
/* Frees what an instance owns, then the instance. NULL is fine. */
void cd_instance_free(cd_instance *inst);

#endif
