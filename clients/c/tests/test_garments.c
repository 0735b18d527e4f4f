/* Garments (issue 14) through the C client: the binary encoder against
 * PROTOCOL.md's vectors B1 and B2 byte for byte, then against the real
 * server a mesh cloth, painted properties in create and set and back in
 * topology, skin in both forms (the same positions after the same steps),
 * bulk pins, teleport and the inertia frame, tearing (the step reply's
 * torn, the topology event), and each one's error replies with their exact
 * codes and messages. */
#include "harness.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static clothd_client *client(void)
{
    return ct_connect(0, NULL);
}

static void check_bytes(const cdc_buf *b, const unsigned char *want, size_t n, const char *what)
{
    CHECK(cdc_buf_avail(b) == n, "%s: %zu bytes, want %zu", what, cdc_buf_avail(b), n);
    for (size_t i = 0; i < n && i < cdc_buf_avail(b); i++)
        if ((unsigned char)cdc_buf_head(b)[i] != want[i]) {
            CHECK(false, "%s: byte %zu is %02x, want %02x", what, i, (unsigned char)cdc_buf_head(b)[i], want[i]);
            return;
        }
}

static void the_binary_encoder_should_reproduce_vectors_b1_and_b2(void)
{
    static const unsigned char b1[80] = {
        0x89, 0x43, 0x4c, 0x52, 0x01, 0x00, 0x01, 0x00, 0x50, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, /* position 0 */
        0xcd, 0xcc, 0xcc, 0x3d, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, /* position 1 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, /* normal 0 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, /* normal 1 */
    };
    static const unsigned char b2[48] = {
        0x89, 0x43, 0x4c, 0x52, 0x01, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x02, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00,
    };
    cdc_buf b = {0};
    const float pos[6] = {0, 1, 0, 0.1f, 1, 0}, nrm[6] = {0, 0, 1, 0, 0, 1};
    REQUIRE(cdc_bin_skin(&b, 3, 7, pos, nrm, 2));
    check_bytes(&b, b1, sizeof b1, "vector B1");
    cdc_buf_clear(&b);
    const uint32_t five = 5;
    const float at[3] = {0, 2, 0};
    REQUIRE(cdc_bin_pin(&b, 3, 8, &five, at, 1));
    check_bytes(&b, b2, sizeof b2, "vector B2");
    cdc_buf_clear(&b);
    REQUIRE(cdc_bin_skin(&b, 3, 7, pos, NULL, 2)); /* no normals: flag 0, 32 + 12 N */
    CHECK(cdc_buf_avail(&b) == 56 && cdc_buf_head(&b)[6] == 0 && cdc_buf_head(&b)[8] == 56);
    cdc_buf_free(&b);
}

/* A w x h rectangle in the xy plane triangulated like the grid (PROTOCOL.md). */
static void rect_mesh(int w, int h, float s, float *verts, uint32_t *tris, float *uvs)
{
    for (int i = 0; i < w * h; i++) {
        verts[3 * i] = (float)(i % w) * s;
        verts[3 * i + 1] = 1.0f - (float)(i / w) * s;
        verts[3 * i + 2] = 0;
        if (uvs != NULL) {
            uvs[2 * i] = (float)(i % w) / (float)(w - 1);
            uvs[2 * i + 1] = (float)(i / w) / (float)(h - 1);
        }
    }
    size_t k = 0;
    for (int y = 0; y < h - 1; y++)
        for (int x = 0; x < w - 1; x++) {
            uint32_t tl = (uint32_t)(y * w + x), W = (uint32_t)w;
            const uint32_t quad[6] = {tl, tl + W, tl + 1, tl + 1, tl + W, tl + W + 1};
            memcpy(tris + k, quad, sizeof quad);
            k += 6;
        }
}

static void a_mesh_cloth_should_hand_back_its_triangles_and_uvs(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    float v[3 * 12], uv[2 * 12];
    uint32_t t[6 * 6];
    rect_mesh(4, 3, 0.1f, v, t, uv);
    clothd_mesh_cloth_options o = {0};
    o.vertices = v, o.vertex_count = 12, o.triangles = t, o.triangle_count = 12, o.uvs = uv;
    clothd_created cr;
    REQUIRE_OK(clothd_create_mesh_cloth(c, &o, &cr, &err), err);
    /* The grid's table: structural 3x3 + 4x2, both diagonals of 6 cells, skip-one bending 2x3 + 4x1. */
    CHECK(cr.particles == 12 && cr.constraints == 17 + 12 + 10, "%u particles, %u constraints", cr.particles,
          cr.constraints);
    clothd_topology tp;
    REQUIRE_OK(clothd_get_topology(c, cr.instance, &tp, &err), err);
    CHECK(tp.kind == CLOTHD_KIND_CLOTH && tp.particles == 12 && tp.triangle_count == 12);
    CHECK(tp.triangles != NULL && memcmp(tp.triangles, t, sizeof t) == 0, "the triangles as given");
    REQUIRE(tp.uvs != NULL && tp.uv_count == 12, "the uvs as given: %zu", tp.uv_count);
    for (int i = 0; i < 24; i++)
        CHECK(tp.uvs[i] == uv[i], "uv %d: %g, want %g", i, (double)tp.uvs[i], (double)uv[i]);
    CHECK(!tp.skinned && tp.max_distance == NULL && tp.inv_mass_scale == NULL, "nothing painted or skinned");
    clothd_topology_free(&tp);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cr.instance, NULL, &st, &err), err);
    CHECK(st.width == 12 && st.height == 1 && memcmp(st.positions, v, sizeof v) == 0,
          "get: width = vertices, positions = the mesh");
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);

    /* Without uvs: none handed back. */
    o.uvs = NULL;
    REQUIRE_OK(clothd_create_mesh_cloth(c, &o, &cr, &err), err);
    REQUIRE_OK(clothd_get_topology(c, cr.instance, &tp, &err), err);
    CHECK(tp.uvs == NULL && tp.uv_count == 0 && tp.triangle_count == 12);
    clothd_topology_free(&tp);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

static void bad_meshes_should_be_refused_naming_the_fault(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    float v[3 * 9];
    uint32_t t[6 * 4 + 6];
    rect_mesh(3, 3, 0.1f, v, t, NULL);
    clothd_mesh_cloth_options o = {0};
    o.vertices = v, o.vertex_count = 9, o.triangles = t, o.triangle_count = 8;
    clothd_created cr;
    t[23] = 99;
    CHECK(clothd_create_mesh_cloth(c, &o, &cr, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "triangles[23]: index 99 out of range (9 vertices)") == 0,
          "%s", err.message);
    rect_mesh(3, 3, 0.1f, v, t, NULL);
    memmove(t + 3, t, 24 * sizeof *t);
    t[0] = 0, t[1] = 1, t[2] = 2; /* a row of three: zero area */
    o.triangle_count = 9;
    CHECK(clothd_create_mesh_cloth(c, &o, &cr, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "triangles: triangle 0 is degenerate (zero area)") == 0,
          "%s", err.message);
    rect_mesh(3, 3, 0.1f, v, t, NULL);
    o.triangle_count = 8;
    float uv[17] = {0};
    o.uvs = uv;
    o.vertex_count = 9;
    clothd_mesh_cloth_options few = o;
    few.vertex_count = 8; /* vertex 8 dropped: triangles reach it */
    few.uvs = NULL;
    CHECK(clothd_create_mesh_cloth(c, &few, &cr, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strstr(err.message, "out of range (8 vertices)") != NULL,
          "%s", err.message);
    o.uvs = NULL;
    o.material.max_distance = clothd_paint_each((const float[]){1, 2}, 2);
    CHECK(clothd_create_mesh_cloth(c, &o, &cr, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "maxDistance: 2 values for 9 vertices (one per vertex, or one for all)") == 0,
          "%s", err.message);
    /* Client-side: no arrays, or a paint mode that is none. */
    clothd_mesh_cloth_options none = {0};
    CHECK(clothd_create_mesh_cloth(c, &none, &cr, &err) == CLOTHD_E_USAGE, "%s", err.message);
    o.material.max_distance.mode = (clothd_paint_mode)9;
    CHECK(clothd_create_mesh_cloth(c, &o, &cr, &err) == CLOTHD_E_USAGE &&
              strstr(err.message, "maxDistance: 9 is no clothd_paint_mode") != NULL,
          "%s", err.message);
    o.material.max_distance = clothd_paint_each(NULL, 9);
    CHECK(clothd_create_mesh_cloth(c, &o, &cr, &err) == CLOTHD_E_USAGE, "%s", err.message);
    REQUIRE_OK(clothd_ping(c, &err), err); /* nothing half-written went out */
    clothd_close(c);
}

static void paint_should_be_set_handed_back_and_cleared(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(5);
    o.height = clothd_i(4);
    o.material.backstop_radius = clothd_paint_all(0.25f);
    clothd_created cr;
    REQUIRE_OK(clothd_create_cloth(c, &o, &cr, &err), err);
    clothd_topology tp;
    REQUIRE_OK(clothd_get_topology(c, cr.instance, &tp, &err), err);
    REQUIRE(tp.backstop_radius != NULL, "painted in create");
    for (int i = 0; i < 20; i++)
        CHECK(tp.backstop_radius[i] == 0.25f);
    CHECK(tp.max_distance == NULL && tp.bend_compliance_scale == NULL);
    clothd_topology_free(&tp);

    float reach[20];
    for (int i = 0; i < 20; i++)
        reach[i] = i < 5 ? 0.0f : 0.2f;
    clothd_material m = {0};
    m.max_distance = clothd_paint_each(reach, 20);
    m.inv_mass_scale = clothd_paint_all(1);
    m.stretch_compliance_scale = clothd_paint_all(2);
    m.backstop_radius = clothd_paint_clear();
    m.linear_inertia = clothd_f(0.5f);
    m.angular_inertia = clothd_f(0);
    REQUIRE_OK(clothd_set(c, cr.instance, &m, &err), err);
    REQUIRE_OK(clothd_get_topology(c, cr.instance, &tp, &err), err);
    REQUIRE(tp.max_distance != NULL && tp.inv_mass_scale != NULL && tp.stretch_compliance_scale != NULL);
    CHECK(memcmp(tp.max_distance, reach, sizeof reach) == 0, "maxDistance one per vertex, back as sent");
    CHECK(tp.inv_mass_scale[19] == 1 && tp.stretch_compliance_scale[7] == 2);
    CHECK(tp.backstop_radius == NULL, "cleared with null");
    clothd_topology_free(&tp);

    m = (clothd_material){0};
    m.max_distance = clothd_paint_each(reach, 19);
    CHECK(clothd_set(c, cr.instance, &m, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "maxDistance: 19 values for 20 vertices (one per vertex, or one for all)") == 0,
          "%s", err.message);
    m.max_distance = clothd_paint_all(-1);
    CHECK(clothd_set(c, cr.instance, &m, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "maxDistance: must be a number in [0, 100000]") == 0,
          "%s", err.message);
    m = (clothd_material){0};
    m.linear_inertia = clothd_f(2);
    CHECK(clothd_set(c, cr.instance, &m, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "linearInertia: must be a number in [0, 1]") == 0,
          "%s", err.message);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

/* Two twins skinned alike, one in each form, stepped together. */
static void binary_and_json_skin_should_give_the_same_positions(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    enum { W = 6, H = 5, N = W * H };
    float reach[N];
    for (int i = 0; i < N; i++)
        reach[i] = i < W ? 0.0f : 0.02f * (float)(i / W);
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(W);
    o.height = clothd_i(H);
    o.origin = clothd_v3(0, 1, 0);
    o.material.max_distance = clothd_paint_each(reach, N);
    o.material.backstop_distance = clothd_paint_all(0.005f);
    o.material.backstop_radius = clothd_paint_all(0.3f);
    clothd_created a, b;
    REQUIRE_OK(clothd_create_cloth(c, &o, &a, &err), err);
    REQUIRE_OK(clothd_create_cloth(c, &o, &b, &err), err);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, a.instance, NULL, &st, &err), err);
    float base[3 * N], pose[3 * N], normals[3 * N];
    memcpy(base, st.positions, sizeof base);
    clothd_instance_state_free(&st);
    for (int i = 0; i < N; i++)
        normals[3 * i] = 0, normals[3 * i + 1] = 0, normals[3 * i + 2] = 1;
    clothd_instance both[] = {a.instance, b.instance};
    clothd_step_options so = {0};
    so.instances = both;
    so.instance_count = 2;
    for (int f = 1; f <= 8; f++) {
        for (int i = 0; i < N; i++) {
            pose[3 * i] = base[3 * i] + 0.01f * (float)f;
            pose[3 * i + 1] = base[3 * i + 1] + 0.003f * (float)f;
            pose[3 * i + 2] = base[3 * i + 2] - 0.02f * (float)f;
        }
        clothd_skin_options json = {pose, normals, N, true}, bin = {pose, normals, N, false};
        REQUIRE_OK(clothd_skin(c, a.instance, &json, &err), err);
        clothd_ticket t;
        REQUIRE_OK(clothd_send_skin(c, b.instance, &bin, &t, &err), err); /* the pipelined form */
        REQUIRE_OK(clothd_recv(c, t, &err), err);
        REQUIRE_OK(clothd_step(c, &so, NULL, &err), err);
    }
    clothd_instance_state sa, sb;
    REQUIRE_OK(clothd_get(c, a.instance, NULL, &sa, &err), err);
    REQUIRE_OK(clothd_get(c, b.instance, NULL, &sb, &err), err);
    CHECK(sa.frame == 8 && memcmp(sa.positions, sb.positions, sizeof base) == 0,
          "binary and JSON skins give bit-identical positions");
    /* The top row (maxDistance 0) is on its skin; the rest within reach. */
    for (int i = 0; i < N; i++) {
        double d = sqrt(pow(sa.positions[3 * i] - pose[3 * i], 2) + pow(sa.positions[3 * i + 1] - pose[3 * i + 1], 2) +
                        pow(sa.positions[3 * i + 2] - pose[3 * i + 2], 2));
        CHECK(d <= reach[i] + 1e-4, "particle %d is %.5f m from its skin (reach %.3f)", i, d, (double)reach[i]);
    }
    double moved = fabs(sa.positions[3 * (N - 1) + 2] - base[3 * (N - 1) + 2]);
    CHECK(moved > 0.05, "the skin carried the cloth: %.3f m", moved);
    clothd_instance_state_free(&sa);
    clothd_instance_state_free(&sb);
    clothd_topology tp;
    REQUIRE_OK(clothd_get_topology(c, b.instance, &tp, &err), err);
    CHECK(tp.skinned, "a binary skin counts");
    clothd_topology_free(&tp);
    REQUIRE_OK(clothd_destroy(c, a.instance, &err), err);
    REQUIRE_OK(clothd_destroy(c, b.instance, &err), err);
    clothd_close(c);
}

static void skin_errors_should_come_back_with_their_codes(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(3);
    o.height = clothd_i(2);
    clothd_created cr;
    REQUIRE_OK(clothd_create_cloth(c, &o, &cr, &err), err);
    float pose[18] = {0}, normals[18] = {0};
    for (int json = 0; json < 2; json++) {
        clothd_skin_options s = {pose, NULL, 5, json != 0};
        CHECK(clothd_skin(c, cr.instance, &s, &err) == CLOTHD_E_INVALID_ARGUMENT &&
                  strcmp(err.message, "positions: 5 points for 6 vertices (one per vertex)") == 0,
              "%s: %s", json ? "JSON" : "binary", err.message);
        s.vertex_count = 6;
        pose[16] = 3e5f;
        CHECK(clothd_skin(c, cr.instance, &s, &err) == CLOTHD_E_INVALID_ARGUMENT &&
                  strcmp(err.message, "positions[5]: outside the world box (|x|, |y|, |z| <= 100000 m)") == 0,
              "%s: %s", json ? "JSON" : "binary", err.message);
        pose[16] = 0;
        CHECK(clothd_skin(c, clothd_instance_id(999), &s, &err) == CLOTHD_E_NOT_FOUND &&
                  strcmp(err.message, "instance: no instance 999") == 0,
              "%s: %s", json ? "JSON" : "binary", err.message);
    }
    /* A NaN: the binary form is refused by the server, the JSON form by the client. */
    pose[11] = NAN;
    clothd_skin_options s = {pose, normals, 6, false};
    CHECK(clothd_skin(c, cr.instance, &s, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "positions[3]: must be finite") == 0,
          "%s", err.message);
    s.json = true;
    CHECK(clothd_skin(c, cr.instance, &s, &err) == CLOTHD_E_USAGE && strstr(err.message, "positions") != NULL,
          "%s", err.message);
    pose[11] = 0;
    clothd_skin_options nul = {NULL, NULL, 6, false};
    CHECK(clothd_skin(c, cr.instance, &nul, &err) == CLOTHD_E_USAGE, "%s", err.message);
    REQUIRE_OK(clothd_skin(c, cr.instance, &s, &err), err); /* the connection goes on */
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

static void pin_bulk_should_pin_at_positions_in_one_binary_request(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(4);
    o.height = clothd_i(4);
    clothd_created cr;
    REQUIRE_OK(clothd_create_cloth(c, &o, &cr, &err), err);
    const uint32_t ids[2] = {0, 3};
    const float at[6] = {0, 1, 0, 0.5f, 1, 0.25f};
    uint32_t pinned = 0;
    REQUIRE_OK(clothd_pin_bulk(c, cr.instance, ids, at, 2, &pinned, &err), err);
    CHECK(pinned == 2);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cr.instance, NULL, &st, &err), err);
    CHECK(st.pinned_count == 2 && st.pinned[0] == 0 && st.pinned[1] == 3);
    CHECK(memcmp(st.positions + 9, at + 3, 3 * sizeof(float)) == 0, "particle 3 where asked");
    clothd_instance_state_free(&st);
    clothd_ticket t;
    REQUIRE_OK(clothd_send_pin_bulk(c, cr.instance, ids, at, 1, &t, &err), err);
    REQUIRE_OK(clothd_recv_count(c, t, &pinned, &err), err);
    CHECK(pinned == 1, "collected with clothd_recv_count");
    const uint32_t bad[2] = {0, 99};
    CHECK(clothd_pin_bulk(c, cr.instance, bad, at, 2, NULL, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "particles[1]: index 99 out of range (16 particles)") == 0,
          "%s", err.message);
    CHECK(clothd_pin_bulk(c, clothd_instance_id(999), ids, at, 2, NULL, &err) == CLOTHD_E_NOT_FOUND, "%s",
          err.message);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

static void teleport_should_move_the_instance_rigidly(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(3);
    o.height = clothd_i(3);
    o.origin = clothd_v3(0, 1, 0);
    o.material.gravity = clothd_v3(0, 0, 0);
    clothd_created cr;
    REQUIRE_OK(clothd_create_cloth(c, &o, &cr, &err), err);
    clothd_instance_state before, after;
    REQUIRE_OK(clothd_get(c, cr.instance, NULL, &before, &err), err);
    clothd_teleport_options tp = {0};
    tp.translation = clothd_v3(10, 0, 0);
    tp.rotation = clothd_v4(0, 0.70710678f, 0, 0.70710678f); /* a quarter turn about y */
    tp.pivot = clothd_v3(0, 1, 0);
    REQUIRE_OK(clothd_teleport(c, cr.instance, &tp, &err), err);
    REQUIRE_OK(clothd_get(c, cr.instance, NULL, &after, &err), err);
    for (int i = 0; i < 9; i++) {
        /* p -> pivot + R (p - pivot) + t; R about y maps (x, y, z) to (z, y, -x). */
        const float *p = before.positions + 3 * i, *q = after.positions + 3 * i;
        CHECK_NEAR(q[0], p[2] + 10, 1e-5);
        CHECK_NEAR(q[1], p[1], 1e-5);
        CHECK_NEAR(q[2], -p[0], 1e-5);
    }
    clothd_instance_state_free(&before);
    clothd_step_options so = {0};
    so.instance = cr.instance;
    REQUIRE_OK(clothd_step(c, &so, NULL, &err), err);
    REQUIRE_OK(clothd_get(c, cr.instance, NULL, &before, &err), err);
    double still = 0;
    for (int i = 0; i < 27; i++)
        still = fmax(still, fabs(before.positions[i] - after.positions[i]));
    CHECK(still < 1e-5, "no velocity from the teleport: moved %.2g m in a step without gravity", still);
    clothd_instance_state_free(&before);
    clothd_instance_state_free(&after);

    tp = (clothd_teleport_options){0};
    tp.pivot = clothd_v3(2e5f, 0, 0);
    CHECK(clothd_teleport(c, cr.instance, &tp, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "pivot: outside the world box (|x|, |y|, |z| <= 100000 m)") == 0,
          "%s", err.message);
    tp = (clothd_teleport_options){0};
    tp.translation = clothd_v3(1e5f, 0, 0);
    CHECK(clothd_teleport(c, cr.instance, &tp, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "translation: the instance would leave the world box (|x|, |y|, |z| <= 100000 m)") == 0,
          "%s", err.message);
    CHECK(clothd_teleport(c, clothd_instance_id(999), NULL, &err) == CLOTHD_E_NOT_FOUND, "%s", err.message);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

/* A cloth with no gravity whose inertia frame moves 1 m along x between two
 * steps: with linearInertia 0 it is carried along, with 1 it stays. */
static double drift_with_inertia(clothd_client *c, float inertia)
{
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(3);
    o.height = clothd_i(3);
    o.origin = clothd_v3(0, 1, 0);
    o.material.gravity = clothd_v3(0, 0, 0);
    o.material.linear_inertia = clothd_f(inertia);
    clothd_created cr;
    if (clothd_create_cloth(c, &o, &cr, &err) != CLOTHD_OK)
        return -1;
    clothd_transform_options tf = {0};
    tf.position = clothd_v3(0, 1, 0);
    tf.inertia_frame = clothd_b(true);
    clothd_step_options so = {0};
    so.instance = cr.instance;
    clothd_instance_state st;
    double x = -1;
    if (clothd_transform(c, cr.instance, "root", &tf, &err) == CLOTHD_OK &&
        clothd_step(c, &so, NULL, &err) == CLOTHD_OK) {
        tf.position = clothd_v3(1, 1, 0);
        tf.inertia_frame = (clothd_opt_b){0}; /* unchanged: still the frame */
        if (clothd_transform(c, cr.instance, "root", &tf, &err) == CLOTHD_OK &&
            clothd_step(c, &so, NULL, &err) == CLOTHD_OK && clothd_get(c, cr.instance, NULL, &st, &err) == CLOTHD_OK) {
            x = st.positions[3 * 4]; /* the centre particle, created at x = 0.1 */
            clothd_instance_state_free(&st);
        }
    }
    clothd_destroy(c, cr.instance, NULL);
    return x - 0.1;
}

static void the_inertia_frame_should_carry_the_cloth_by_its_share(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    double carried = drift_with_inertia(c, 0), stays = drift_with_inertia(c, 1);
    CHECK(fabs(carried - 1.0) < 1e-4, "linearInertia 0: carried 1 m with its frame, got %.6f", carried);
    CHECK(fabs(stays) < 1e-4, "linearInertia 1: world space, the frame's move is not felt: %.6f", stays);
    clothd_close(c);
}

typedef struct topology_events {
    int count;
    uint32_t instance;
} topology_events;

static void on_topology_event(void *user, const clothd_event *e)
{
    topology_events *t = user;
    if (strcmp(e->name, "topology") == 0) {
        t->count++;
        t->instance = e->instance.id;
    }
}

/* PROTOCOL.md's "Tearing": a 24 x 12 sheet held by its left column and
 * pulled by its right at 1 m/s tears; the step reply lists it in `torn`, a
 * subscriber hears a topology event, and topology has the new vertices. */
static void a_pulled_sheet_should_tear_and_say_so(void)
{
    enum { W = 24, H = 12 };
    const float s = 0.05f;
    topology_events events = {0, 0};
    clothd_options opt = clothd_options_default();
    opt.port = ct_main_server.port;
    opt.on_event = on_topology_event;
    opt.user = &events;
    clothd_client *c = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_connect(&opt, &c, &err), err);
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(W);
    o.height = clothd_i(H);
    o.spacing = clothd_f(s);
    o.material.gravity = clothd_v3(0, 0, 0);
    o.material.tear_strain = clothd_f(0.3f);
    o.material.sleep_threshold = clothd_f(0);
    clothd_created cr;
    REQUIRE_OK(clothd_create_cloth(c, &o, &cr, &err), err);
    clothd_subscribe_options so = {0};
    so.instance = cr.instance;
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    uint32_t left[H], right[H];
    float at[3 * H];
    for (int y = 0; y < H; y++)
        left[y] = (uint32_t)(y * W), right[y] = (uint32_t)(y * W + W - 1);
    clothd_pin_options pin = {0};
    pin.particles = left;
    pin.particle_count = H;
    REQUIRE_OK(clothd_pin(c, cr.instance, &pin, NULL, &err), err);
    clothd_step_options st = {0};
    st.instance = cr.instance;
    int tore = 0, f;
    for (f = 1; f <= 150 && tore < 3; f++) {
        for (int y = 0; y < H; y++)
            at[3 * y] = (float)(W - 1) * s + (float)f / 60, at[3 * y + 1] = -(float)y * s, at[3 * y + 2] = 0;
        REQUIRE_OK(clothd_pin_bulk(c, cr.instance, right, at, H, NULL, &err), err);
        clothd_step_result r;
        REQUIRE_OK(clothd_step(c, &st, &r, &err), err);
        if (r.torn_count > 0) {
            CHECK(r.torn_count == 1 && r.torn[0].id == cr.instance.id, "torn lists the sheet");
            tore++;
        }
        clothd_step_result_free(&r);
    }
    REQUIRE(tore > 0, "no step tore the sheet in %d steps", f - 1);
    REQUIRE_OK(clothd_ping(c, &err), err); /* what came before the pong has been read */
    CHECK(events.count >= tore && events.instance == cr.instance.id, "%d topology events for %d tearing steps",
          events.count, tore);
    clothd_topology tp;
    REQUIRE_OK(clothd_get_topology(c, cr.instance, &tp, &err), err);
    CHECK(tp.particles > W * H && tp.uv_count == tp.particles, "%u particles after tearing, %zu uvs", tp.particles,
          tp.uv_count);
    clothd_topology_free(&tp);
    clothd_material m = {0};
    m.tear_strain = clothd_f(2000);
    CHECK(clothd_set(c, cr.instance, &m, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strcmp(err.message, "tearStrain: must be a number in [0, 1000]") == 0,
          "%s", err.message);
    REQUIRE_OK(clothd_destroy(c, cr.instance, &err), err);
    clothd_close(c);
}

const ct_test ct_garment_tests[] = {
    {"garments: the binary encoder reproduces vectors B1 and B2", the_binary_encoder_should_reproduce_vectors_b1_and_b2, 0},
    {"garments: a mesh cloth hands back its triangles and uvs", a_mesh_cloth_should_hand_back_its_triangles_and_uvs, 0},
    {"garments: bad meshes and paint are refused", bad_meshes_should_be_refused_naming_the_fault, 0},
    {"garments: paint in create and set, topology, clear", paint_should_be_set_handed_back_and_cleared, 0},
    {"garments: binary and JSON skin give the same positions", binary_and_json_skin_should_give_the_same_positions, 0},
    {"garments: skin errors, both forms", skin_errors_should_come_back_with_their_codes, 0},
    {"garments: pin in bulk (binary)", pin_bulk_should_pin_at_positions_in_one_binary_request, 0},
    {"garments: teleport", teleport_should_move_the_instance_rigidly, 0},
    {"garments: transform's inertia frame", the_inertia_frame_should_carry_the_cloth_by_its_share, 0},
    {"garments: a pulled sheet tears, torn and the topology event", a_pulled_sheet_should_tear_and_say_so, 0},
    {NULL, NULL, 0},
};
