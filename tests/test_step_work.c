/* Bounded step work (issue 9, item 5): self-collision's searches share one
 * budget per step, so a crowded cloth searched every other substep costs
 * one step's budget, not one per search. (Before, a 512 x 512 cloth crushed
 * into a few cells took 23 s for its worst step at 32 substeps; now 2.9 s.) */
#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define EXAMINED_PER_PARTICLE 2048u /* solver.h: cd_self_collision_stats */

Test(step_work, a_crowd_searched_every_other_substep_shares_one_budget_per_step, .timeout = 30)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 128;
    def.spacing = 5e-4f; /* 6.4 cm across */
    def.self_distance = 4e-4f;
    def.substeps = 64;
    def.solver_iterations = 1;
    def.sleep_threshold = 0.0f;
    cd_instance *cloth = fx_cloth(world, &def);
    /* One particle 90 km away stretches the box: cells of ~9 cm hold the
     * whole rest of the cloth, which falls (and so is searched often). */
    const cd_vec3 far = fx_v3(9e4f, 0, 0);
    cr_assert_eq(cd_instance_pin(cloth, 0, &far), CD_OK);
    const uint64_t budget = (uint64_t)EXAMINED_PER_PARTICLE * 128u * 128u;
    cd_self_collision_stats before = cd_instance_self_collision_stats(cloth);
    uint64_t most_searches = 0;
    for (int step = 0; step < 4; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        const cd_self_collision_stats now = cd_instance_self_collision_stats(cloth);
        const uint64_t examined = now.examined - before.examined;
        cr_assert_leq(examined, budget, "step %d looked at %llu entries (budget %llu)", step,
                      (unsigned long long)examined, (unsigned long long)budget);
        cr_assert_gt(examined, 0u);
        if (now.searches - before.searches > most_searches)
            most_searches = now.searches - before.searches;
        before = now;
    }
    cr_assert_gt(before.overflows, 0u, "the crowd exhausts the budget");
    cr_assert_gt(most_searches, 1u, "a falling crowd is searched more than once per step");
    cd_world_destroy(world);
}

Test(step_work, a_folded_sheet_stays_within_the_budget)
{
    /* The ordinary case is far from the bound: a sheet falling onto itself
     * looks at about 50 entries per particle per search. */
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 32;
    def.spacing = 0.02f;
    def.self_distance = 0.016f;
    def.substeps = 8;
    def.origin = fx_v3(0, 0.7f, 0);
    def.down = fx_v3(0, -1, 0.15f);
    cd_instance *cloth = fx_cloth(world, &def);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cd_id id;
    cr_assert_eq(cd_instance_add_collider(cloth, &floor, &id), CD_OK);
    for (int step = 0; step < 90; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    const cd_self_collision_stats st = cd_instance_self_collision_stats(cloth);
    cr_assert_eq(st.overflows, 0u);
    cr_assert_lt((double)st.examined / (double)st.searches / 1024.0, 200.0,
                 "%.1f entries per particle per search",
                 (double)st.examined / (double)st.searches / 1024.0);
    cd_world_destroy(world);
}
