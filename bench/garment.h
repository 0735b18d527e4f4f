/* A walking character wearing a cape, in-process: the scene of the garment
 * bench (bench_garment.c) and of its test (tests/test_solver_garment.c).
 *
 * The cape is a mesh cloth cut from a 50 x 40 sheet (2 cm spacing, 0.98 x
 * 0.78 m) with a neck cut-out, hanging behind a body of 8 capsules (torso,
 * hips, two upper arms, two thighs, two shins) attached to named
 * transforms. Each frame the body walks forward at 1.4 m/s, turning
 * slowly, its legs swinging; the cape's skinned pose is its rest shape
 * carried by the torso. Painted: the top two rows follow the skin
 * (maxDistance 0); below, the reach grows to 0.5 m at the hem; a backstop
 * 1 cm behind the skin (radius 0.3 m) keeps it off the back. */
#ifndef CLOTHD_BENCH_GARMENT_H
#define CLOTHD_BENCH_GARMENT_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/solver.h"

#define GARMENT_W 50
#define GARMENT_H 40
#define GARMENT_S 0.02f
#define GARMENT_BONES 4 /* torso, hips, left leg, right leg */

typedef struct garment_scene {
    cd_instance *inst;
    uint32_t vertices;
    float *rest;   /* 3 per vertex, in the torso's frame */
    float *skin;   /* 3 per vertex: this frame's pose */
    float *normal; /* 3 per vertex */
    uint32_t bones[GARMENT_BONES];
    cd_collider_def body[8]; /* local shapes, for the penetration check */
    uint32_t body_bone[8];
    int frame;
} garment_scene;

static inline bool garment_neck(uint32_t x, uint32_t y)
{
    return x >= 19 && x <= 29 && y < 4;
}

static inline cd_quat garment_turn_y(float angle)
{
    return (cd_quat){0.0f, sinf(0.5f * angle), 0.0f, cosf(0.5f * angle)};
}

static inline cd_quat garment_turn_x(float angle)
{
    return (cd_quat){sinf(0.5f * angle), 0.0f, 0.0f, cosf(0.5f * angle)};
}

static inline cd_vec3 garment_rotate(cd_quat q, cd_vec3 v)
{
    const cd_vec3 u = {q.x, q.y, q.z};
    const cd_vec3 t = {2.0f * (u.y * v.z - u.z * v.y), 2.0f * (u.z * v.x - u.x * v.z),
                       2.0f * (u.x * v.y - u.y * v.x)};
    return (cd_vec3){v.x + q.w * t.x + (u.y * t.z - u.z * t.y),
                     v.y + q.w * t.y + (u.z * t.x - u.x * t.z),
                     v.z + q.w * t.z + (u.x * t.y - u.y * t.x)};
}

/* The body's pose at frame f (60 Hz): where the torso is and how it is
 * turned, and each leg's swing. */
static inline void garment_pose(int f, cd_vec3 *torso, float *heading, float *swing)
{
    const float t = (float)f / 60.0f;
    *heading = 0.3f * sinf(0.5f * t);
    *torso = (cd_vec3){1.4f * t * sinf(*heading), 1.1f + 0.03f * sinf(4.0f * 3.14159f * t),
                       1.4f * t * cosf(*heading)};
    *swing = 0.5f * sinf(2.0f * 3.14159f * t);
}

static inline void garment_move(garment_scene *g)
{
    cd_vec3 torso;
    float heading, swing;
    garment_pose(g->frame, &torso, &heading, &swing);
    const cd_quat turn = garment_turn_y(heading);
    cd_instance_set_transform(g->inst, "torso", torso, turn, NULL);
    const cd_vec3 hips = {torso.x, torso.y - 0.35f, torso.z};
    cd_instance_set_transform(g->inst, "hips", hips, turn, NULL);
    for (int side = 0; side < 2; side++) {
        const cd_quat q = garment_turn_x(side ? swing : -swing);
        const cd_quat r = {turn.w * q.x + turn.x * q.w + turn.y * q.z - turn.z * q.y,
                           turn.w * q.y - turn.x * q.z + turn.y * q.w + turn.z * q.x,
                           turn.w * q.z + turn.x * q.y - turn.y * q.x + turn.z * q.w,
                           turn.w * q.w - turn.x * q.x - turn.y * q.y - turn.z * q.z};
        const cd_vec3 hip = garment_rotate(turn, (cd_vec3){side ? 0.1f : -0.1f, 0.0f, 0.0f});
        cd_instance_set_transform(g->inst, side ? "rightLeg" : "leftLeg",
                                  (cd_vec3){hips.x + hip.x, hips.y + hip.y, hips.z + hip.z}, r,
                                  NULL);
    }
    for (uint32_t i = 0; i < g->vertices; i++) {
        const cd_vec3 r = {g->rest[3 * i], g->rest[3 * i + 1], g->rest[3 * i + 2]};
        const cd_vec3 p = garment_rotate(turn, r);
        const cd_vec3 n = garment_rotate(turn, (cd_vec3){0.0f, 0.0f, -1.0f});
        g->skin[3 * i] = torso.x + p.x;
        g->skin[3 * i + 1] = torso.y + p.y;
        g->skin[3 * i + 2] = torso.z + p.z;
        memcpy(&g->normal[3 * i], &n, sizeof n);
    }
    cd_instance_skin(g->inst, g->skin, g->normal, NULL);
    g->frame++;
}

static inline cd_collider_def garment_capsule(cd_vec3 centre, cd_vec3 axis, float radius,
                                              float height, uint32_t bone)
{
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.position = centre;
    c.normal = axis;
    c.radius = radius;
    c.height = height;
    c.friction = 0.3f;
    c.attachment = bone;
    return c;
}

/* Builds the scene into `world`; false on a refusal (which a bench or a
 * test reports). */
static inline bool garment_create(cd_world *world, garment_scene *g, float self_distance)
{
    memset(g, 0, sizeof *g);
    uint32_t remap[GARMENT_W * GARMENT_H];
    uint8_t used[GARMENT_W * GARMENT_H] = {0};
    uint32_t *tris = malloc(sizeof(uint32_t) * 6 * GARMENT_W * GARMENT_H);
    uint32_t m = 0;
    for (uint32_t y = 0; y + 1 < GARMENT_H; y++)
        for (uint32_t x = 0; x + 1 < GARMENT_W; x++) {
            if (garment_neck(x, y))
                continue;
            const uint32_t tl = y * GARMENT_W + x;
            const uint32_t q[6] = {tl, tl + GARMENT_W, tl + 1, tl + 1, tl + GARMENT_W,
                                   tl + GARMENT_W + 1};
            for (int k = 0; k < 6; k++)
                used[q[k]] = 1;
            memcpy(&tris[3 * m], q, sizeof q);
            m += 2;
        }
    g->rest = malloc(sizeof(float) * 3 * GARMENT_W * GARMENT_H);
    g->skin = malloc(sizeof(float) * 3 * GARMENT_W * GARMENT_H);
    g->normal = malloc(sizeof(float) * 3 * GARMENT_W * GARMENT_H);
    float *reach = malloc(sizeof(float) * GARMENT_W * GARMENT_H);
    for (uint32_t i = 0; i < GARMENT_W * GARMENT_H; i++) {
        if (!used[i])
            continue;
        const uint32_t x = i % GARMENT_W, y = i / GARMENT_W;
        remap[i] = g->vertices;
        /* Behind the back, from the shoulders down, curving round the sides. */
        const float u = ((float)x - 0.5f * (GARMENT_W - 1)) * GARMENT_S;
        float *r = &g->rest[3 * g->vertices];
        r[0] = u;
        r[1] = 0.25f - (float)y * GARMENT_S;
        r[2] = -0.16f - 0.2f * u * u;
        reach[g->vertices] = y < 2 ? 0.0f : 0.5f * (float)(y - 1) / (GARMENT_H - 2);
        g->vertices++;
    }
    for (uint32_t i = 0; i < 3 * m; i++)
        tris[i] = remap[tris[i]];
    /* Created at the first pose, in world space. */
    cd_vec3 torso;
    float heading, swing;
    garment_pose(0, &torso, &heading, &swing);
    float *start = malloc(sizeof(float) * 3 * g->vertices);
    for (uint32_t i = 0; i < 3 * g->vertices; i++)
        start[i] = g->rest[i] + (i % 3 == 0 ? torso.x : i % 3 == 1 ? torso.y : torso.z);
    cd_tri_mesh mesh = {.vertices = start, .vertex_count = g->vertices, .triangles = tris,
                        .triangle_count = m};
    cd_cloth_def def = cd_default_cloth_def();
    def.mass = 0.8f;
    def.self_distance = self_distance;
    def.thickness = 0.01f;
    cd_id id = 0;
    bool ok = cd_world_create_mesh_cloth_ex(world, &mesh, &def, &id, NULL) == CD_OK;
    free(start);
    free(tris);
    if (!ok) {
        free(reach);
        return false;
    }
    g->inst = cd_world_get(world, id);
    static const char *const names[GARMENT_BONES] = {"torso", "hips", "leftLeg", "rightLeg"};
    for (int b = 0; b < GARMENT_BONES; b++)
        cd_instance_set_transform(g->inst, names[b], torso, (cd_quat){0, 0, 0, 1}, &g->bones[b]);
    const cd_vec3 up = {0, 1, 0}, across = {1, 0, 0};
    g->body[0] = garment_capsule((cd_vec3){0, 0.05f, 0}, up, 0.15f, 0.6f, g->bones[0]);
    g->body[1] = garment_capsule((cd_vec3){0, 0.0f, 0}, across, 0.14f, 0.42f, g->bones[1]);
    g->body[2] = garment_capsule((cd_vec3){-0.22f, 0.05f, 0}, up, 0.05f, 0.35f, g->bones[0]);
    g->body[3] = garment_capsule((cd_vec3){0.22f, 0.05f, 0}, up, 0.05f, 0.35f, g->bones[0]);
    for (int side = 0; side < 2; side++) {
        g->body[4 + side] = garment_capsule((cd_vec3){0, -0.22f, 0}, up, 0.08f, 0.45f,
                                            g->bones[2 + side]);
        g->body[6 + side] = garment_capsule((cd_vec3){0, -0.62f, 0}, up, 0.06f, 0.42f,
                                            g->bones[2 + side]);
    }
    for (int k = 0; k < 8 && ok; k++) {
        cd_id cid;
        ok = cd_instance_add_collider(g->inst, &g->body[k], &cid) == CD_OK;
    }
    const float behind = 0.01f, radius = 0.3f;
    ok = ok && cd_instance_paint(g->inst, CD_PAINT_MAX_DISTANCE, reach, g->vertices, NULL) == CD_OK &&
         cd_instance_paint(g->inst, CD_PAINT_BACKSTOP_DISTANCE, &behind, 1, NULL) == CD_OK &&
         cd_instance_paint(g->inst, CD_PAINT_BACKSTOP_RADIUS, &radius, 1, NULL) == CD_OK;
    free(reach);
    garment_move(g);
    return ok;
}

static inline void garment_free(garment_scene *g)
{
    free(g->rest);
    free(g->skin);
    free(g->normal);
}

#endif
