/* A cape on a walking character (bench/garment.h): skinned shoulders, a
 * body of 8 capsules, self-collision. Over 3 s of walking and turning no
 * particle sinks into the body, each stays within reach of its skin, the
 * hem swings, and nothing is NaN. */
#include "../bench/garment.h"
#include "solver_fixtures.h"

/* Depth of p inside a capsule (world pose), negative outside. */
static double capsule_depth(const cd_collider_def *c, cd_vec3 p)
{
    const double half = 0.5 * c->height - c->radius;
    const double dx = p.x - c->position.x, dy = p.y - c->position.y, dz = p.z - c->position.z;
    double t = dx * c->normal.x + dy * c->normal.y + dz * c->normal.z;
    t = t < -half ? -half : t > half ? half : t;
    const double ex = dx - t * c->normal.x, ey = dy - t * c->normal.y, ez = dz - t * c->normal.z;
    return c->radius - sqrt(ex * ex + ey * ey + ez * ez);
}

Test(garment, a_cape_on_a_walking_character_stays_outside_the_body_and_swings, .timeout = 60)
{
    cd_world *world = fx_world();
    garment_scene g;
    cr_assert(garment_create(world, &g, 0.8f * GARMENT_S), "the scene is accepted");
    float reach[GARMENT_W * GARMENT_H];
    cr_assert(cd_instance_painted(g.inst, CD_PAINT_MAX_DISTANCE, reach));
    const uint32_t hem = g.vertices - GARMENT_W / 2; /* the middle of the bottom row */
    double deepest = 0.0, beyond = 0.0, sum = 0.0, sum2 = 0.0, trail = 0.0;
    int samples = 0;
    for (int f = 0; f < 180; f++) {
        cd_instance_step(g.inst, FX_DT, fx_no_wind());
        cr_assert(fx_all_finite(g.inst), "finite at frame %d", f);
        cd_id ids[8];
        cd_collider_def body[8];
        cr_assert_eq(cd_instance_list_colliders(g.inst, ids, body, 8), 8u);
        for (uint32_t i = 0; i < g.vertices; i++) {
            const cd_vec3 p = fx_pos(g.inst, i);
            for (int k = 0; k < 8; k++)
                deepest = fmax(deepest, capsule_depth(&body[k], p));
            const double d = fx_dist(p, fx_v3(g.skin[3 * i], g.skin[3 * i + 1], g.skin[3 * i + 2]));
            beyond = fmax(beyond, d - reach[i]);
        }
        if (f >= 60) { /* the hem's sideways offset from its skin, in the body's frame */
            cd_vec3 torso;
            float heading, swing;
            garment_pose(f, &torso, &heading, &swing);
            const cd_vec3 p = fx_pos(g.inst, hem);
            const double off = (p.x - g.skin[3 * hem]) * cos(heading) -
                               (p.z - g.skin[3 * hem + 2]) * sin(heading);
            sum += off;
            sum2 += off * off;
            trail += fx_dist(p, fx_v3(g.skin[3 * hem], g.skin[3 * hem + 1], g.skin[3 * hem + 2]));
            samples++;
        }
        garment_move(&g);
    }
    const double sway = sqrt(sum2 / samples - (sum / samples) * (sum / samples));
    trail /= samples;
    cr_log_info("walking cape: deepest %.4f m in the body, %.4f m beyond reach, hem %.3f m from "
                "its skin on average, sway %.3f m",
                deepest, beyond, trail, sway);
    /* At 1.4 m/s the hem trails (air, damping, sag), but well inside its
     * 0.5 m reach: self-collision's velocity cap once held the whole cape
     * to 0.5 m/s and it trailed at full reach. */
    cr_expect_lt(trail, 0.3, "the hem trails %.3f m", trail);
    cr_expect_lt(deepest, 0.005, "a particle was %.4f m inside the body", deepest);
    cr_expect_lt(beyond, 0.011, "a particle strayed %.4f m beyond its reach (thickness 1 cm)",
                 beyond);
    /* Not frozen: the hem swings sideways with the walk (sd measured 4 mm
     * under the default small steps). */
    cr_expect_gt(sway, 0.002, "the hem swings (sd %.4f m)", sway);
    garment_free(&g);
    cd_world_destroy(world);
}
