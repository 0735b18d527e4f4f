/* Soft bodies in material units (solver/material.c): a bar hanging under
 * its own weight stretches by rho g L^2 / (2E), whatever the mesh's
 * resolution, and half the modulus doubles it. */
#include "solver_fixtures.h"

/* A 0.1 x 1 x 0.1 m bar of 1 kg (the box generator, res x 10 res x res
 * cells) hung from its top face; the elongation after 4 s. */
static double hanging_bar(uint32_t res, float youngs)
{
    cd_world *world = fx_world();
    cd_tet_mesh m;
    cr_assert_eq(cd_mesh_box(fx_v3(0, 0, 0), fx_v3(0.1f, 1.0f, 0.1f), res, 10 * res, res, &m),
                 CD_OK);
    cd_cloth_def d = cd_default_softbody_options();
    d.mass = 1.0f;
    d.youngs_modulus = youngs;
    d.substeps = 2;
    d.solver_iterations = 40;
    d.sleep_threshold = 0.0f;
    d.tethers = false;
    cd_id id;
    cr_assert_eq(cd_world_create_softbody(world, &m, &d, &id), CD_OK);
    cd_instance *inst = cd_world_get(world, id);
    const uint32_t n = cd_instance_particle_count(inst);
    for (uint32_t i = 0; i < n; i++)
        if (m.vertices[3 * i + 1] > 0.999f)
            cr_assert_eq(cd_instance_pin(inst, i, NULL), CD_OK);
    for (int f = 0; f < 240; f++)
        cd_instance_step(inst, FX_DT, fx_no_wind());
    double sum = 0.0;
    uint32_t bottom = 0;
    for (uint32_t i = 0; i < n; i++)
        if (m.vertices[3 * i + 1] < 1e-4f) {
            sum += fx_pos(inst, i).y;
            bottom++;
        }
    cd_mesh_free(&m);
    cd_world_destroy(world);
    return -sum / bottom;
}

Test(material, a_bar_stretches_as_its_youngs_modulus_says_at_any_resolution, .timeout = 60)
{
    const double expected = 1.0 * FX_G * 1.0 / (2.0 * 5e4 * 0.01); /* m g L / (2 E A) */
    for (uint32_t res = 1; res <= 2; res++) {
        const double got = hanging_bar(res, 5e4f);
        cr_log_info("bar at resolution %u: %.5f m, closed form %.5f m", res, got, expected);
        cr_expect_lt(fabs(got / expected - 1.0), 0.03, "resolution %u: %.5f m for %.5f m", res,
                     got, expected);
    }
    const double softer = hanging_bar(2, 2.5e4f);
    cr_expect_lt(fabs(softer / expected - 2.0), 0.06, "half E: %.5f m", softer);
}
