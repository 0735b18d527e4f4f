/* A skinned cape on a walking character: a garment as games drive one, the
 * C twin of clients/python/examples/walking_cape.py.
 *
 * The cape is a triangle mesh cut from a 30 x 24 sheet (3 cm spacing) with
 * a neck cut-out. The body is 8 capsules (torso, hips, arms, thighs, shins)
 * attached to four transforms (torso, hips, two legs) that the loop moves
 * each frame: the character walks forward at 1.4 m/s, turning gently, legs
 * swinging. Each frame it also sends the cape's skinned pose (its rest
 * shape carried by the torso) as one binary `skin` request. Painted: the
 * shoulders (top two rows) follow the skin exactly, the reach grows to
 * 0.5 m at the hem, a backstop keeps the cape off the back; self-collision
 * is on. The transforms and the skin are queued without waiting (their
 * errors, if any, are kept and reported at the end); the step is blocking.
 *
 * Every second it prints how deep any particle is inside the body (should
 * be ~0), the largest stray beyond its reach (~0), and how far the hem
 * swings from its skinned place. With --check it exits 1 if a particle sank
 * more than 5 mm into the body or strayed more than 1 cm beyond its reach.
 *
 *   walking_cape [--host H] [--port P] [--seconds S] [--check]
 *
 * Exit 0 when the run went through (and passed --check), 1 on an error or a
 * failed check, 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clothd/client.h>

#define HZ 60
#define W 30                 /* the sheet: 30 x 24 at 3 cm, 0.87 x 0.69 m */
#define H 24
#define S 0.03f
#define MAX_VERTICES (W * H)
#define PI 3.14159265358979323846

typedef struct quat { float x, y, z, w; } quat;
typedef struct bone { float p[3]; quat q; } bone;

enum { TORSO, HIPS, LEFT_LEG, RIGHT_LEG, BONES };
static const char *const bone_names[BONES] = {"torso", "hips", "leftLeg", "rightLeg"};

static const struct capsule {
    int bone;
    float centre[3], axis[3], radius, height; /* height: total, caps included */
} body[8] = {
    {TORSO, {0, 0.05f, 0}, {0, 1, 0}, 0.15f, 0.6f},
    {HIPS, {0, 0, 0}, {1, 0, 0}, 0.14f, 0.42f},
    {TORSO, {-0.22f, 0.05f, 0}, {0, 1, 0}, 0.05f, 0.35f},
    {TORSO, {0.22f, 0.05f, 0}, {0, 1, 0}, 0.05f, 0.35f},
    {LEFT_LEG, {0, -0.22f, 0}, {0, 1, 0}, 0.08f, 0.45f},
    {RIGHT_LEG, {0, -0.22f, 0}, {0, 1, 0}, 0.08f, 0.45f},
    {LEFT_LEG, {0, -0.62f, 0}, {0, 1, 0}, 0.06f, 0.42f},
    {RIGHT_LEG, {0, -0.62f, 0}, {0, 1, 0}, 0.06f, 0.42f},
};

static quat quat_y(double a)
{
    quat q = {0, (float)sin(a / 2), 0, (float)cos(a / 2)};
    return q;
}

static quat quat_mul(quat a, quat b)
{
    quat r = {a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y, a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
              a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w, a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z};
    return r;
}

static void rotate(quat q, const float v[3], float out[3])
{
    float t[3] = {2 * (q.y * v[2] - q.z * v[1]), 2 * (q.z * v[0] - q.x * v[2]), 2 * (q.x * v[1] - q.y * v[0])};
    out[0] = v[0] + q.w * t[0] + (q.y * t[2] - q.z * t[1]);
    out[1] = v[1] + q.w * t[1] + (q.z * t[0] - q.x * t[2]);
    out[2] = v[2] + q.w * t[2] + (q.x * t[1] - q.y * t[0]);
}

static float dist3(const float *a, const float *b)
{
    return sqrtf((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

/* The cape: rest vertices in the torso's frame, triangles and each vertex's reach. */
static float rest[3 * MAX_VERTICES], reach[MAX_VERTICES];
static uint32_t tris[6 * (W - 1) * (H - 1)];
static size_t nverts, ntris;

static int neck(int x, int y)
{
    return x >= 12 && x <= 16 && y < 3;
}

static void cape_mesh(void)
{
    static int remap[W * H];
    static uint32_t grid_tris[6 * (W - 1) * (H - 1)];
    memset(remap, 0, sizeof remap); /* 0: unused; else new index + 1 */
    for (int y = 0; y < H - 1; y++)
        for (int x = 0; x < W - 1; x++) {
            if (neck(x, y))
                continue;
            uint32_t tl = (uint32_t)(y * W + x);
            const uint32_t quad[6] = {tl, tl + W, tl + 1, tl + 1, tl + W, tl + W + 1};
            for (int k = 0; k < 6; k++) {
                grid_tris[3 * ntris + (size_t)k] = quad[k];
                remap[quad[k]] = 1;
            }
            ntris += 2;
        }
    for (int i = 0; i < W * H; i++) {
        if (!remap[i])
            continue;
        int x = i % W, y = i / W;
        float u = ((float)x - (W - 1) / 2.0f) * S;
        rest[3 * nverts] = u;
        rest[3 * nverts + 1] = 0.25f - (float)y * S;
        rest[3 * nverts + 2] = -0.17f - 0.25f * u * u; /* round the back */
        reach[nverts] = y < 2 ? 0.0f : 0.5f * (float)(y - 1) / (H - 2);
        remap[i] = (int)++nverts;
    }
    for (size_t k = 0; k < 3 * ntris; k++)
        tris[k] = (uint32_t)remap[grid_tris[k]] - 1;
}

/* Torso position, heading and leg swing at time t. */
static void pose(double t, float torso[3], double *heading, double *swing)
{
    *heading = 0.4 * sin(0.5 * t);
    torso[0] = (float)(1.4 * t * sin(*heading));
    torso[1] = (float)(1.1 + 0.03 * sin(4 * PI * t));
    torso[2] = (float)(1.4 * t * cos(*heading));
    *swing = 0.5 * sin(2 * PI * t);
}

/* Queues the four transforms of the pose at t (replies dropped, errors kept). */
static clothd_code move_body(clothd_client *c, clothd_instance cape, double t, bone bones[BONES], clothd_error *err)
{
    float torso[3];
    double heading, swing;
    pose(t, torso, &heading, &swing);
    quat turn = quat_y(heading);
    bones[TORSO] = (bone){{torso[0], torso[1], torso[2]}, turn};
    bones[HIPS] = (bone){{torso[0], torso[1] - 0.35f, torso[2]}, turn};
    for (int side = -1; side <= 1; side += 2) {
        float hip[3];
        rotate(turn, (const float[]){0.1f * (float)side, 0, 0}, hip);
        quat leg = {(float)sin(side * swing / 2), 0, 0, (float)cos(side * swing / 2)};
        bones[side < 0 ? LEFT_LEG : RIGHT_LEG] =
            (bone){{torso[0] + hip[0], torso[1] - 0.35f + hip[1], torso[2] + hip[2]}, quat_mul(turn, leg)};
    }
    for (int b = 0; b < BONES; b++) {
        clothd_transform_options o = {0};
        o.position = clothd_v3(bones[b].p[0], bones[b].p[1], bones[b].p[2]);
        o.rotation = clothd_v4(bones[b].q.x, bones[b].q.y, bones[b].q.z, bones[b].q.w);
        clothd_code rc = clothd_send_transform(c, cape, bone_names[b], &o, NULL, err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    return CLOTHD_OK;
}

/* The skinned pose at t: the rest shape carried by the torso, normals its back. */
static void skin_pose(double t, float *positions, float *normals)
{
    float torso[3], back[3];
    double heading, swing;
    pose(t, torso, &heading, &swing);
    quat turn = quat_y(heading);
    rotate(turn, (const float[]){0, 0, -1}, back);
    for (size_t i = 0; i < nverts; i++) {
        float r[3];
        rotate(turn, &rest[3 * i], r);
        for (int k = 0; k < 3; k++) {
            positions[3 * i + (size_t)k] = torso[k] + r[k];
            normals[3 * i + (size_t)k] = back[k];
        }
    }
}

/* How deep p is inside the capsule (negative: outside). */
static float capsule_depth(const bone *b, const struct capsule *cap, const float p[3])
{
    float centre[3], axis[3], d[3];
    rotate(b->q, cap->centre, centre);
    rotate(b->q, cap->axis, axis);
    for (int k = 0; k < 3; k++)
        d[k] = p[k] - (b->p[k] + centre[k]);
    float half = cap->height / 2 - cap->radius;
    float s = fmaxf(-half, fminf(half, d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2]));
    float e[3] = {d[0] - s * axis[0], d[1] - s * axis[1], d[2] - s * axis[2]};
    return cap->radius - sqrtf(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
}

static int fail(const char *what, const clothd_error *err)
{
    fprintf(stderr, "walking_cape: %s: %s: %s\n", what, clothd_code_name(err->code), err->message);
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: walking_cape [--host H] [--port P] [--seconds S] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    clothd_options opt = clothd_options_default();
    opt.token_from_env = true;
    double seconds = 10.0;
    int check = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check") == 0)
            check = 1;
        else if (v != NULL && strcmp(a, "--host") == 0)
            opt.host = argv[++i];
        else if (v != NULL && strcmp(a, "--port") == 0)
            opt.port = (uint16_t)atoi(argv[++i]);
        else if (v != NULL && strcmp(a, "--seconds") == 0)
            seconds = atof(argv[++i]);
        else
            return usage();
    }
    if (!(seconds > 0 && seconds <= 600))
        return usage();

    cape_mesh();
    clothd_client *c = NULL;
    clothd_error err;
    if (clothd_connect(&opt, &c, &err) != CLOTHD_OK)
        return fail("connect", &err);

    static float positions[3 * MAX_VERTICES], normals[3 * MAX_VERTICES], now[3 * MAX_VERTICES];
    skin_pose(0.0, positions, normals); /* the cape starts on its skin */
    clothd_mesh_cloth_options mo = {0};
    mo.vertices = positions;
    mo.vertex_count = nverts;
    mo.triangles = tris;
    mo.triangle_count = ntris;
    mo.material.mass = clothd_f(0.8f);
    mo.material.self_distance = clothd_f(0.8f * S);
    mo.material.thickness = clothd_f(0.01f);
    mo.material.max_distance = clothd_paint_each(reach, nverts);
    mo.material.backstop_distance = clothd_paint_all(0.01f);
    mo.material.backstop_radius = clothd_paint_all(0.3f);
    clothd_created created;
    if (clothd_create_mesh_cloth(c, &mo, &created, &err) != CLOTHD_OK)
        return fail("create", &err);
    clothd_instance cape = created.instance;

    bone bones[BONES];
    if (move_body(c, cape, 0.0, bones, &err) != CLOTHD_OK)
        return fail("transform", &err);
    for (size_t k = 0; k < sizeof body / sizeof body[0]; k++) {
        clothd_collider_options co = {0};
        co.type = CLOTHD_COLLIDER_CAPSULE;
        co.position = clothd_v3(body[k].centre[0], body[k].centre[1], body[k].centre[2]);
        co.normal = clothd_v3(body[k].axis[0], body[k].axis[1], body[k].axis[2]);
        co.radius = clothd_f(body[k].radius);
        co.height = clothd_f(body[k].height);
        co.friction = clothd_f(0.3f);
        co.attachment = bone_names[body[k].bone];
        if (clothd_add_collider(c, cape, &co, NULL, &err) != CLOTHD_OK)
            return fail("addCollider", &err);
    }
    clothd_skin_options skin = {positions, normals, nverts, false};
    if (clothd_skin(c, cape, &skin, &err) != CLOTHD_OK)
        return fail("skin", &err);

    clothd_step_options step = {0};
    step.dt = clothd_f(1.0f / HZ);
    step.instance = cape;
    clothd_get_options into = {0};
    into.positions = now;
    into.capacity = MAX_VERTICES;
    float worst_depth = 0, worst_stray = 0;
    int frames = (int)(seconds * HZ + 0.5);
    for (int f = 1; f <= frames; f++) {
        double t = (double)f / HZ;
        skin_pose(t, positions, normals);
        if (move_body(c, cape, t, bones, &err) != CLOTHD_OK || clothd_send_skin(c, cape, &skin, NULL, &err) != CLOTHD_OK)
            return fail("send", &err);
        if (clothd_step(c, &step, NULL, &err) != CLOTHD_OK)
            return fail("step", &err);
        if (f % (HZ / 4) != 0 && f != frames)
            continue; /* check four times a second */
        clothd_instance_state st;
        if (clothd_get(c, cape, &into, &st, &err) != CLOTHD_OK)
            return fail("get", &err);
        clothd_instance_state_free(&st);
        float depth = -1e9f, stray = -1e9f;
        for (size_t i = 0; i < nverts; i++) {
            for (size_t k = 0; k < sizeof body / sizeof body[0]; k++)
                depth = fmaxf(depth, capsule_depth(&bones[body[k].bone], &body[k], &now[3 * i]));
            stray = fmaxf(stray, dist3(&now[3 * i], &positions[3 * i]) - reach[i]);
        }
        worst_depth = fmaxf(worst_depth, depth);
        worst_stray = fmaxf(worst_stray, stray);
        if (f % HZ == 0 || f == frames) {
            size_t hem = nverts - W / 2;
            printf("t=%4.1fs  deepest in the body %.4f m  beyond reach %.4f m  hem %.3f m from its skin\n", t,
                   (double)fmaxf(depth, 0), (double)fmaxf(stray, 0),
                   (double)dist3(&now[3 * hem], &positions[3 * hem]));
            fflush(stdout);
        }
    }
    int queued_errors = 0;
    while (clothd_take_async_error(c, &err)) {
        fprintf(stderr, "walking_cape: a queued request failed: %s: %s\n", clothd_code_name(err.code), err.message);
        queued_errors++;
    }
    clothd_destroy(c, cape, NULL);
    clothd_close(c);
    printf("%zu vertices, %zu triangles, %d frames; worst: %.4f m inside the body, %.4f m beyond reach; "
           "errors of queued requests: %d\n",
           nverts, ntris, frames, (double)worst_depth, (double)worst_stray, queued_errors);
    if (queued_errors > 0)
        return 1;
    if (check && (worst_depth > 0.005f || worst_stray > 0.01f)) {
        printf("FAILED: %.4f m inside the body, %.4f m beyond reach\n", (double)worst_depth, (double)worst_stray);
        return 1;
    }
    return 0;
}
