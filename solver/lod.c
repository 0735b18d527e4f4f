/* Level of detail: what a step does at each level, and what it costs.
 *
 * A game server lowers the detail of cloth far from the camera (Unreal's
 * Chaos Cloth switches a far cloth to a coarser LOD; NvCloth and Chaos
 * both lower their solver frequency and iteration count). clothd keeps the
 * mesh, so a level is a share of the solver's work: each level halves the
 * level before where it can, taking the halving from the iterations first
 * (the cheaper loss: at equal work, substeps keep a cloth stiffer than
 * iterations, Macklin et al. 2019) and from the substeps once one
 * iteration is left. Collisions, pins, wind, tethers and the guard run at
 * every level: a far cape still drapes over its character. Frames thin
 * out too: a far instance needs fewer of them. When Chaos switches LOD it
 * carries the positions and the velocities over to the new mesh
 * (FClothingSimulationMesh::WrapDeformLOD); clothd's mesh stays, and
 * step.c carries the velocities over to the new substep length.
 *
 * The table is the one place a level is defined; PROTOCOL.md's table of
 * levels and the host's budget (server/budget.c) read it through these
 * functions. */
#include "internal.h"

/* level -> halvings of the work, frame interval */
#define CD_LOD_MAP(X)                                                                             \
    X(0, 0, 1)                                                                                     \
    X(1, 1, 1)                                                                                     \
    X(2, 2, 2)                                                                                     \
    X(3, 3, 4)

static const struct {
    uint8_t halvings;
    uint8_t frame_interval;
} levels[] = {
#define CD_LOD_ROW(level, halvings, interval) [level] = {halvings, interval},
    CD_LOD_MAP(CD_LOD_ROW)
#undef CD_LOD_ROW
};
_Static_assert(sizeof levels / sizeof levels[0] == CD_LOD_LEVELS, "one row per level");

static int32_t clamp_level(int32_t level)
{
    return level < 0 ? 0 : level >= CD_LOD_LEVELS ? CD_LOD_LEVELS - 1 : level;
}

void cd_lod_counts(const cd_cloth_def *def, float dt, int32_t level, int32_t *substeps,
                   int32_t *iterations)
{
    int32_t s = cd_substeps_for(def, dt), it = def->solver_iterations;
    for (int k = 0; k < levels[clamp_level(level)].halvings; k++) {
        if (it > 1)
            it = (it + 1) / 2;
        else if (s > 1)
            s = (s + 1) / 2;
    }
    *substeps = s;
    *iterations = it;
}

uint32_t cd_lod_frame_interval(int32_t level)
{
    return levels[clamp_level(level)].frame_interval;
}

int32_t cd_instance_step_level(const cd_instance *inst, int32_t level)
{
    int32_t lod = clamp_level(level > inst->def.lod ? level : inst->def.lod);
    /* Coarser at once; finer one level a step. A coarse level lets the
     * cloth stretch more (1.2% at one iteration where eight keep 0.03%),
     * and the finer solve pulls that back in its first step: from the
     * coarsest straight to full detail a swinging sheet's hem moved 50%
     * farther in that step than in the one before; one level at a time it
     * stays within MOVE_RATIO of tests/test_solver_lod.c. */
    if (inst->started && lod < inst->lod_now - 1)
        lod = inst->lod_now - 1;
    return lod;
}

uint64_t cd_instance_step_cost(const cd_instance *inst, float dt, int32_t level)
{
    if (inst->sleeping || !inst->enabled)
        return 0;
    int32_t s, it;
    cd_lod_counts(&inst->def, dt, cd_instance_step_level(inst, level), &s, &it);
    return (uint64_t)inst->particle_count * (uint64_t)s * (2u * (uint64_t)it + 1u);
}
