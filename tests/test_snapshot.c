/* Snapshots (solver/snapshot.c): the format's checksum and test vector, a
 * loaded world stepping bit for bit like the original, all-or-nothing
 * loads, and every flipped byte or truncation refused with a message that
 * names the section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../solver/snapshot.h"
#include "solver_fixtures.h"

Test(snapshot, crc32c_should_match_the_castagnoli_check_value)
{
    cr_assert_eq(cd_crc32c(0, "123456789", 9), 0xE3069283u);
    /* Continuing a CRC over a split buffer gives the whole one's. */
    cr_assert_eq(cd_crc32c(cd_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    cr_assert_eq(cd_crc32c(0, "", 0), 0u);
}

Test(snapshot, crc32c_should_agree_with_the_table_at_every_length_and_alignment)
{
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += 7)
            cr_assert_eq(cd_crc32c(0x12345678u, buf + off, len),
                         cd_crc32c_portable(0x12345678u, buf + off, len), "offset %zu, length %zu", off,
                         len);
    cr_assert_eq(cd_crc32c_portable(0, "123456789", 9), 0xE3069283u);
}

static cd_quat identity(void)
{
    return (cd_quat){0, 0, 0, 1};
}

/* A busy world: a cape on a moving transform with a coupled sphere, a
 * second cloth with self-collision and a plane, a soft body on a floor, a
 * destroyed instance (so slots and generations are not trivial), wind. */
static cd_world *busy_world(cd_id ids[3])
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 12;
    def.height = 10;
    def.stretch_compliance = 1e-6f;
    def.sleep_threshold = 0.0f;
    cd_id gone = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &gone), CD_OK);
    cd_instance *cape = fx_cloth(world, &def);
    ids[0] = cd_instance_id(cape);
    cr_assert_eq(cd_world_destroy_instance(world, gone), CD_OK);
    uint32_t shoulders = 0;
    cr_assert_eq(cd_instance_set_transform(cape, "shoulders", fx_v3(0, 0, 0), identity(),
                                           &shoulders), CD_OK);
    for (uint32_t x = 0; x < 12; x++)
        cr_assert_eq(cd_instance_attach(cape, x, shoulders, NULL), CD_OK);
    cd_collider_def sphere = cd_default_collider_def(CD_COLLIDER_SPHERE);
    sphere.position = fx_v3(0.5f, -0.6f, 0.1f);
    sphere.radius = 0.3f;
    sphere.coupling = 0.5f;
    sphere.friction = 0.4f;
    cd_id col = 0;
    cr_assert_eq(cd_instance_add_collider(cape, &sphere, &col), CD_OK);
    cd_collider_def arm = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    arm.attachment = shoulders;
    arm.position = fx_v3(0.2f, -0.3f, 0.0f);
    cr_assert_eq(cd_instance_add_collider(cape, &arm, &col), CD_OK);
    cr_assert_eq(cd_instance_set_wind(cape, fx_v3(1, 0, 2)), CD_OK);

    cd_cloth_def sheet = cd_default_cloth_def();
    sheet.width = sheet.height = 9;
    sheet.self_distance = 0.05f;
    sheet.origin = fx_v3(2, 1, 0);
    sheet.down = fx_v3(0, 0, 1);
    cd_instance *s = fx_cloth(world, &sheet);
    ids[1] = cd_instance_id(s);
    cr_assert_eq(cd_instance_pin(s, 4, NULL), CD_OK);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    floor.position = fx_v3(0, 0.2f, 0);
    cr_assert_eq(cd_instance_add_collider(s, &floor, &col), CD_OK);

    cd_tet_mesh mesh;
    cr_assert_eq(cd_mesh_ball(fx_v3(-2, 1, 0), 0.4f, 3, &mesh), CD_OK);
    cd_cloth_def soft = cd_default_softbody_options();
    soft.youngs_modulus = 2e5f; /* a material (issue 10): its elements, derived again */
    soft.volume_compliance = 1e-7f;
    cr_assert_eq(cd_world_create_softbody(world, &mesh, &soft, &ids[2]), CD_OK);
    cd_mesh_free(&mesh);
    floor.position = fx_v3(0, 0, 0);
    cr_assert_eq(cd_instance_add_collider(cd_world_get(world, ids[2]), &floor, &col), CD_OK);
    cd_world_set_global_wind(world, fx_v3(0.5f, 0, 0));
    return world;
}

/* Steps every instance once; the transform swings the cape and the plane
 * comes up now and then, so pins and colliders move. */
static void step_all(cd_world *world, const cd_id ids[3], int k)
{
    cd_instance *cape = cd_world_get(world, ids[0]);
    const float a = 0.02f * (float)k;
    cd_instance_set_transform(cape, "shoulders", fx_v3(0.3f * sinf(a), 0, 0),
                              (cd_quat){0, sinf(a / 2), 0, cosf(a / 2)}, NULL);
    if (k % 50 == 0) {
        cd_id cols[2];
        cd_collider_def defs[2];
        cr_assert_eq(cd_instance_list_colliders(cape, cols, defs, 2), 2u);
        cd_vec3 p = fx_v3(0.5f, -0.6f + 0.001f * (float)k, 0.1f);
        cr_assert_eq(cd_instance_move_collider(cape, cols[0], &p, NULL), CD_OK);
    }
    for (int i = 0; i < 3; i++)
        cd_instance_step(cd_world_get(world, ids[i]), FX_DT, cd_world_global_wind(world));
}

static uint64_t world_hash(const cd_world *world, const cd_id ids[3])
{
    uint64_t h = 0;
    for (int i = 0; i < 3; i++) {
        const cd_instance *inst = cd_world_get(world, ids[i]);
        cr_assert_not_null(inst, "instance %u is there", ids[i]);
        h = h * 31 + fx_fnv1a(cd_instance_local_positions(inst),
                              sizeof(float) * 3 * cd_instance_particle_count(inst));
    }
    return h;
}

static uint8_t *save_all(const cd_world *world, size_t *len)
{
    cd_id ids[64];
    const uint32_t n = cd_world_list(world, ids, 64);
    uint8_t *data = NULL;
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_save(world, ids, n, &data, len, &fault), CD_OK, "%s: %s", fault.field,
                 fault.reason);
    return data;
}

Test(snapshot, loaded_world_should_step_bit_identically_for_300_steps)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    for (int k = 0; k < 120; k++)
        step_all(a, ids, k);
    size_t len = 0;
    uint8_t *data = save_all(a, &len);

    cd_world *b = fx_world();
    cd_snapshot_loaded loaded;
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, &loaded, &fault), CD_OK,
                 "%s: %s", fault.field, fault.reason);
    cr_assert_eq(loaded.info.instances, 3u);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(loaded.ids[i], ids[i], "ids survive: %u", ids[i]);
    cd_snapshot_loaded_free(&loaded);
    cr_assert_eq(world_hash(a, ids), world_hash(b, ids), "the same positions once loaded");
    for (int k = 120; k < 420; k++) {
        step_all(a, ids, k);
        step_all(b, ids, k);
        cr_assert_eq(world_hash(a, ids), world_hash(b, ids), "bit-identical at step %d", k);
    }
    for (int i = 0; i < 3; i++) {
        cd_instance_info ia, ib;
        cd_instance_get_info(cd_world_get(a, ids[i]), &ia);
        cd_instance_get_info(cd_world_get(b, ids[i]), &ib);
        cr_assert_eq(ia.frame, ib.frame);
        cr_assert_eq(ia.time, ib.time);
        cr_assert_eq(ia.colliders, ib.colliders);
        cr_assert_eq(ia.sleeping, ib.sleeping);
        cd_collider_impulse ja[4], jb[4];
        const uint32_t na = cd_instance_collider_impulses(cd_world_get(a, ids[i]), ja, 4);
        cr_assert_eq(na, cd_instance_collider_impulses(cd_world_get(b, ids[i]), jb, 4));
        cr_assert_eq(memcmp(ja, jb, na * sizeof ja[0]), 0, "the same impulses");
    }
    /* The slot table came along: both worlds hand out the same next id. */
    cd_cloth_def def = cd_default_cloth_def();
    cd_id na = 0, nb = 0;
    cr_assert_eq(cd_world_create_cloth(a, &def, &na), CD_OK);
    cr_assert_eq(cd_world_create_cloth(b, &def, &nb), CD_OK);
    cr_assert_eq(na, nb, "next id %u and %u", na, nb);
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

Test(snapshot, saving_twice_should_give_the_same_bytes)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    for (int k = 0; k < 10; k++)
        step_all(a, ids, k);
    size_t la = 0, lb = 0;
    uint8_t *da = save_all(a, &la);
    cd_world *b = fx_world();
    cr_assert_eq(cd_snapshot_load(b, da, la, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK);
    uint8_t *db = save_all(b, &lb);
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(da, db, la), 0, "a loaded world saves to the same bytes");
    free(da);
    free(db);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

Test(snapshot, load_without_replace_should_refuse_an_id_in_use_and_change_nothing)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    size_t len = 0;
    uint8_t *data = save_all(a, &len);
    /* A world holding the cape's slot: nothing of the file is loaded. */
    cd_world *b = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    cd_id first = 0, second = 0;
    cr_assert_eq(cd_world_create_cloth(b, &def, &first), CD_OK);
    cr_assert_eq(cd_world_create_cloth(b, &def, &second), CD_OK);
    cr_assert_eq(cd_id_index(second), cd_id_index(ids[0]));
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_ADD, NULL, &fault), CD_E_INVALID_ARGUMENT);
    cr_assert(strstr(fault.reason, "in use") != NULL, "%s", fault.reason);
    cr_assert_eq(cd_world_count(b), 2u, "nothing was added");
    cr_assert_null(cd_world_get(b, ids[1]));
    /* Freed, the slots take the saved ids, beside what b holds. */
    cr_assert_eq(cd_world_destroy_instance(b, second), CD_OK);
    cd_snapshot_loaded loaded;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_ADD, &loaded, &fault), CD_OK, "%s",
                 fault.reason);
    cr_assert_eq(cd_world_count(b), 4u);
    cr_assert_not_null(cd_world_get(b, first));
    for (int i = 0; i < 3; i++)
        cr_assert_not_null(cd_world_get(b, ids[i]));
    /* A new instance takes a free slot, not one of the loaded. */
    cd_id next = 0;
    cr_assert_eq(cd_world_create_cloth(b, &def, &next), CD_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_neq(cd_id_index(next), cd_id_index(ids[i]));
    cd_snapshot_loaded_free(&loaded);
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

static uint64_t positions_hash(const cd_world *world, cd_id id)
{
    const cd_instance *inst = cd_world_get(world, id);
    cr_assert_not_null(inst, "instance %u is there", id);
    return fx_fnv1a(cd_instance_local_positions(inst),
                    sizeof(float) * 3 * cd_instance_particle_count(inst));
}

static uint64_t frame_of(const cd_world *world, cd_id id)
{
    cd_instance_info info;
    cd_instance_get_info(cd_world_get(world, id), &info);
    return info.frame;
}

/* A viewer's reset: one instance saved, the world stepped on, the instance
 * put back under its own id while the others keep their steps; it then
 * steps bit for bit as a copy of the world taken at the save does. */
Test(snapshot, restore_should_put_one_instance_back_in_place_and_leave_the_others)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    for (int k = 0; k < 30; k++)
        step_all(a, ids, k);
    size_t len = 0, whole_len = 0;
    uint8_t *cape = NULL;
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_save(a, &ids[0], 1, &cape, &len, &fault), CD_OK);
    uint8_t *whole = save_all(a, &whole_len);
    cd_world *b = fx_world(); /* the world as it was at the save */
    cr_assert_eq(cd_snapshot_load(b, whole, whole_len, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK);
    for (int k = 30; k < 90; k++)
        step_all(a, ids, k);
    const uint64_t sheet = positions_hash(a, ids[1]);
    cr_assert_neq(positions_hash(a, ids[0]), positions_hash(b, ids[0]), "the cape moved on");

    cd_snapshot_loaded loaded;
    cr_assert_eq(cd_snapshot_load(a, cape, len, CD_SNAPSHOT_RESTORE, &loaded, &fault), CD_OK, "%s",
                 fault.reason);
    cr_assert_eq(loaded.info.instances, 1u);
    cr_assert_eq(loaded.ids[0], ids[0], "the same id");
    cd_snapshot_loaded_free(&loaded);
    cr_assert_eq(cd_world_count(a), 3u);
    cr_assert_eq(frame_of(a, ids[0]), 30u, "the cape is back at frame 30");
    cr_assert_eq(frame_of(a, ids[1]), 90u, "the sheet keeps its steps");
    cr_assert_eq(positions_hash(a, ids[1]), sheet);
    cr_assert_eq(positions_hash(a, ids[0]), positions_hash(b, ids[0]));
    for (int k = 30; k < 120; k++) {
        step_all(a, ids, k);
        step_all(b, ids, k);
        cr_assert_eq(positions_hash(a, ids[0]), positions_hash(b, ids[0]), "bit-identical at step %d", k);
    }
    /* The slot table is untouched: both hand out the same next id. */
    cd_cloth_def def = cd_default_cloth_def();
    cd_id na = 0, nb = 0;
    cr_assert_eq(cd_world_create_cloth(a, &def, &na), CD_OK);
    cr_assert_eq(cd_world_create_cloth(b, &def, &nb), CD_OK);
    cr_assert_eq(na, nb, "next id %u and %u", na, nb);
    free(cape);
    free(whole);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

Test(snapshot, restore_should_bring_back_a_destroyed_instance_but_refuse_a_slot_taken_by_another)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    size_t len = 0;
    uint8_t *cape = NULL;
    cr_assert_eq(cd_snapshot_save(a, &ids[0], 1, &cape, &len, NULL), CD_OK);
    cr_assert_eq(cd_world_destroy_instance(a, ids[0]), CD_OK);
    cr_assert_eq(cd_snapshot_load(a, cape, len, CD_SNAPSHOT_RESTORE, NULL, NULL), CD_OK);
    cr_assert_not_null(cd_world_get(a, ids[0]), "back under its id in its free slot");
    cr_assert_eq(cd_world_count(a), 3u);
    /* Gone again, and its slot handed to a new instance (another id). */
    cr_assert_eq(cd_world_destroy_instance(a, ids[0]), CD_OK);
    cd_cloth_def def = cd_default_cloth_def();
    cd_id other = 0;
    do
        cr_assert_eq(cd_world_create_cloth(a, &def, &other), CD_OK);
    while (cd_id_index(other) != cd_id_index(ids[0]));
    const uint32_t count = cd_world_count(a);
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(a, cape, len, CD_SNAPSHOT_RESTORE, NULL, &fault),
                 CD_E_INVALID_ARGUMENT);
    cr_assert(strstr(fault.reason, "is gone") != NULL, "%s", fault.reason);
    cr_assert_eq(cd_world_count(a), count, "nothing changed");
    cr_assert_not_null(cd_world_get(a, other));
    free(cape);
    cd_world_destroy(a);
}

Test(snapshot, load_over_the_world_limits_should_be_limit_exceeded)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    size_t len = 0;
    uint8_t *data = save_all(a, &len);
    cd_world_def small = cd_default_world_def();
    small.max_particles = 100; /* the cape has 120 */
    cd_world *b = cd_world_create(&small);
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, NULL, &fault), CD_E_LIMIT_EXCEEDED);
    cr_assert_eq(fault.kind, CD_FAULT_PARTICLES);
    cr_assert_eq(cd_world_count(b), 0u);
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

/* A small snapshot: one 3 x 3 cloth. */
static uint8_t *small_snapshot(size_t *len)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 3;
    cd_instance *inst = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_pin(inst, 0, NULL), CD_OK);
    cd_instance_step(inst, FX_DT, fx_no_wind());
    uint8_t *data = save_all(world, len);
    cd_world_destroy(world);
    return data;
}

static bool names_a_place(const cd_field_fault *f)
{
    return strncmp(f->field, "section ", 8) == 0 || strcmp(f->field, "header") == 0;
}

Test(snapshot, every_flipped_byte_should_be_refused_naming_the_section)
{
    size_t len = 0;
    uint8_t *data = small_snapshot(&len);
    cd_world *world = fx_world();
    for (size_t i = 0; i < len; i++) {
        data[i] ^= 0x10;
        cd_field_fault fault;
        cr_assert_eq(cd_snapshot_load(world, data, len, CD_SNAPSHOT_REPLACE, NULL, &fault),
                     CD_E_INVALID_ARGUMENT, "byte %zu flipped", i);
        cr_assert(names_a_place(&fault), "byte %zu: %s: %s", i, fault.field, fault.reason);
        data[i] ^= 0x10;
    }
    cr_assert_eq(cd_world_count(world), 0u, "nothing was loaded");
    cr_assert_eq(cd_snapshot_load(world, data, len, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK,
                 "the unflipped file loads");
    free(data);
    cd_world_destroy(world);
}

Test(snapshot, every_truncation_should_be_refused_naming_the_section)
{
    size_t len = 0;
    uint8_t *data = small_snapshot(&len);
    for (size_t cut = 0; cut < len; cut++) {
        cd_field_fault fault;
        cr_assert_eq(cd_snapshot_check(data, cut, NULL, &fault), CD_E_INVALID_ARGUMENT, "cut %zu",
                     cut);
        cr_assert(names_a_place(&fault), "cut %zu: %s: %s", cut, fault.field, fault.reason);
    }
    cd_field_fault fault;
    cd_snapshot_check(data, len - 50, NULL, &fault);
    cr_assert(strstr(fault.reason, "truncated") != NULL, "%s", fault.reason);
    free(data);
}

/* Section `index`'s offset in a well-formed snapshot. */
static size_t section_at(const uint8_t *data, uint32_t index)
{
    size_t at = 16;
    for (uint32_t i = 0; i < index; i++) {
        uint64_t length;
        memcpy(&length, data + at + 8, 8);
        at += 16 + length + 4;
    }
    return at;
}

static void reseal(uint8_t *data, size_t at)
{
    uint64_t length;
    memcpy(&length, data + at + 8, 8);
    uint32_t crc = cd_crc32c(0, data + at, 16 + length);
    memcpy(data + at + 16 + length, &crc, 4);
}

Test(snapshot, a_future_version_should_be_refused_saying_so)
{
    size_t len = 0;
    uint8_t *data = small_snapshot(&len);
    uint32_t v = 2;
    memcpy(data + 8, &v, 4);
    uint32_t crc = cd_crc32c(0, data, 12);
    memcpy(data + 12, &crc, 4);
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_check(data, len, NULL, &fault), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(fault.field, "header");
    cr_assert(strstr(fault.reason, "format version 2 is newer") != NULL, "%s", fault.reason);
    free(data);

    data = small_snapshot(&len);
    const size_t inst = section_at(data, 2);
    cr_assert_eq(memcmp(data + inst, "INST", 4), 0);
    memcpy(data + inst + 4, &v, 4);
    reseal(data, inst);
    cr_assert_eq(cd_snapshot_check(data, len, NULL, &fault), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(fault.field, "section 2 (INST)");
    cr_assert(strstr(fault.reason, "version 2 is newer") != NULL, "%s", fault.reason);
    free(data);
}

/* The field `name` of section `index`: its offset and size. */
static size_t find_field(const uint8_t *data, uint32_t index, const char *name, size_t *size)
{
    static const size_t sizes[] = {0, 1, 2, 4, 8, 4, 4, 8};
    const size_t at = section_at(data, index);
    uint64_t length;
    memcpy(&length, data + at + 8, 8);
    const size_t n = strlen(name);
    for (size_t p = at + 16; p < at + 16 + length;) {
        const size_t name_len = data[p];
        uint32_t count;
        memcpy(&count, data + p + 2 + name_len, 4);
        *size = 6 + name_len + count * sizes[data[p + 1 + name_len]];
        if (name_len == n && memcmp(data + p + 1, name, n) == 0)
            return p;
        p += *size;
    }
    cr_assert_fail("no field %s", name);
    return 0;
}

Test(snapshot, an_unknown_field_should_be_refused_and_a_missing_option_defaulted)
{
    size_t len = 0, size = 0;
    uint8_t *data = small_snapshot(&len);
    /* An option this build does not know (a newer writer's). */
    size_t p = find_field(data, 2, "opt.lift", &size);
    memcpy(data + p + 1, "opt.lIfT", 8);
    reseal(data, section_at(data, 2));
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_check(data, len, NULL, &fault), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(fault.field, "section 2 (INST) instance 1");
    cr_assert(strstr(fault.reason, "unknown field \"opt.lIfT\"") != NULL, "%s", fault.reason);
    free(data);

    /* An option the writer did not know (cut out): its row's default, as a
     * file from before a new option row loads. */
    data = small_snapshot(&len);
    const size_t at = section_at(data, 2);
    p = find_field(data, 2, "opt.lift", &size);
    memmove(data + p, data + p + size, len - p - size);
    len -= size;
    uint64_t length;
    memcpy(&length, data + at + 8, 8);
    length -= size;
    memcpy(data + at + 8, &length, 8);
    reseal(data, at);
    cd_world *world = fx_world();
    cd_snapshot_loaded loaded;
    cr_assert_eq(cd_snapshot_load(world, data, len, CD_SNAPSHOT_REPLACE, &loaded, &fault), CD_OK,
                 "%s: %s", fault.field, fault.reason);
    cr_assert_eq(cd_instance_def(cd_world_get(world, loaded.ids[0])).lift,
                 cd_default_cloth_def().lift);
    cd_snapshot_loaded_free(&loaded);
    cd_world_destroy(world);
    free(data);
}

Test(snapshot, a_bad_option_value_should_be_refused_in_the_solvers_words)
{
    size_t len = 0;
    uint8_t *data = small_snapshot(&len);
    /* Find "opt.thickness" and store 1e9 (its row allows [0, 1000]). */
    const size_t at = section_at(data, 2);
    uint8_t *p = memmem(data + at, len - at, "\x0dopt.thickness", 14);
    cr_assert_not_null(p);
    float big = 1e9f;
    memcpy(p + 14 + 1 + 4, &big, 4);
    reseal(data, at);
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_check(data, len, NULL, &fault), CD_E_INVALID_ARGUMENT);
    cr_assert(strstr(fault.reason, "option thickness: must be a number in [0, 1000]") != NULL,
              "%s", fault.reason);
    free(data);
}

Test(snapshot, a_kinetic_energy_that_is_not_a_finite_non_negative_number_should_be_refused)
{
    /* Whatever a file says reaches `get` and `status`, and no NaN may
     * reach a client. */
    static const float bad[] = {-1.0f, NAN, INFINITY};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t len = 0, size = 0;
        uint8_t *data = small_snapshot(&len);
        const size_t p = find_field(data, 2, "kineticEnergy", &size);
        /* name length, name, type, count, then the value */
        memcpy(data + p + 1 + 13 + 1 + 4, &bad[k], 4);
        reseal(data, section_at(data, 2));
        cd_field_fault fault;
        cr_assert_eq(cd_snapshot_check(data, len, NULL, &fault), CD_E_INVALID_ARGUMENT, "%g",
                     (double)bad[k]);
        cr_assert(strstr(fault.reason, "kineticEnergy not a finite non-negative number") != NULL,
                  "%s", fault.reason);
        free(data);
    }
}

/* PROTOCOL.md's test vector: an empty world of one slot, saved on the
 * scalar path, global wind (1, 0, 0). */
static const char vector_hex[] =
    /* preamble */
    "894344530d0a1a0a01000000cd545e96"
    /* HEAD */
    "48454144010000003a0000000000000009696e7374616e636573030100000000"
    "000000097061727469636c6573040100000000000000000000000473696d6401"
    "060000007363616c617227955144"
    /* WRLD */
    "57524c440100000058000000000000000a676c6f62616c57696e640603000000"
    "0000803f00000000000000000c6d6178496e7374616e63657303010000000100"
    "00000b67656e65726174696f6e730202000000000000000966726565536c6f74"
    "7302010000000100523b45e5"
    /* END */
    "454e44200100000012000000000000000873656374696f6e7303010000000200"
    "00003da8b7ec";

static size_t hex_to_bytes(const char *hex, uint8_t *out)
{
    size_t n = 0;
    for (const char *p = hex; p[0] != '\0';) {
        if (p[0] == ' ') {
            p++;
            continue;
        }
        unsigned v;
        sscanf(p, "%2x", &v);
        out[n++] = (uint8_t)v;
        p += 2;
    }
    return n;
}

Test(snapshot, an_empty_world_should_save_to_protocol_mds_test_vector)
{
    cr_assert(cd_solver_select_simd("scalar"));
    cd_world_def def = cd_default_world_def();
    def.max_instances = 1;
    cd_world *world = cd_world_create(&def);
    cd_world_set_global_wind(world, fx_v3(1, 0, 0));
    uint8_t *data = NULL;
    size_t len = 0;
    cr_assert_eq(cd_snapshot_save(world, NULL, 0, &data, &len, NULL), CD_OK);
    uint8_t expected[512];
    const size_t n = hex_to_bytes(vector_hex, expected);
    cr_assert_eq(len, n, "%zu bytes, the vector has %zu", len, n);
    cr_assert_eq(memcmp(data, expected, n), 0);
    cd_world *back = cd_world_create(&def);
    cr_assert_eq(cd_snapshot_load(back, expected, n, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK);
    cr_assert_eq(cd_world_global_wind(back).x, 1.0f);
    free(data);
    cd_world_destroy(world);
    cd_world_destroy(back);
}

Test(snapshot, a_large_instance_with_a_team_should_load_bit_identically)
{
    /* 4,096 particles or more: the loaded instance gets its own team. */
    cd_world *a = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 64;
    def.spacing = 0.02f;
    cd_instance *big = fx_cloth(a, &def);
    for (uint32_t x = 0; x < 64; x += 9)
        cr_assert_eq(cd_instance_pin(big, x, NULL), CD_OK);
    for (int k = 0; k < 20; k++)
        cd_instance_step(big, FX_DT, fx_no_wind());
    size_t len = 0;
    uint8_t *data = save_all(a, &len);
    cd_world *b = fx_world();
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK);
    cd_instance *copy = cd_world_get(b, cd_instance_id(big));
    cr_assert_not_null(copy);
    cr_assert_neq(cd_instance_help_ticket(copy), 0u, "it takes helpers again");
    for (int k = 0; k < 50; k++) {
        cd_instance_step(big, FX_DT, fx_no_wind());
        cd_instance_step(copy, FX_DT, fx_no_wind());
    }
    const size_t bytes = sizeof(float) * 3 * 64 * 64;
    cr_assert_eq(memcmp(cd_instance_local_positions(big), cd_instance_local_positions(copy), bytes), 0);
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

/* A mesh cloth (issue 14) with paint, a skin and an inertia frame: the
 * state those add comes back too. */
static cd_world *skinned_world(cd_id *id, float *skin, uint32_t *n_out)
{
    enum { W = 7, H = 6 };
    static float vertices[3 * W * H];
    static uint32_t triangles[6 * (W - 1) * (H - 1)];
    static float uvs[2 * W * H];
    uint32_t m = 0;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            const uint32_t i = y * W + x;
            vertices[3 * i] = 0.1f * (float)x;
            vertices[3 * i + 1] = 1.0f - 0.1f * (float)y;
            vertices[3 * i + 2] = 0.01f * (float)((x * 7 + y * 3) % 5);
            uvs[2 * i] = (float)x / (W - 1);
            uvs[2 * i + 1] = (float)y / (H - 1);
            if (x + 1 < W && y + 1 < H) {
                const uint32_t q[6] = {i, i + W, i + 1, i + 1, i + W, i + W + 1};
                memcpy(&triangles[3 * m], q, sizeof q);
                m += 2;
            }
        }
    cd_world *world = fx_world();
    const cd_tri_mesh mesh = {.vertices = vertices, .vertex_count = W * H, .triangles = triangles,
                              .triangle_count = m, .uvs = uvs};
    cd_cloth_def opts = cd_default_cloth_def();
    opts.stretch_compliance = 1e-5f;
    opts.sleep_threshold = 0.0f;
    opts.linear_inertia = 0.5f;
    cd_field_fault fault;
    cr_assert_eq(cd_world_create_mesh_cloth_ex(world, &mesh, &opts, id, &fault), CD_OK, "%s: %s",
                 fault.field, fault.reason);
    cd_instance *inst = cd_world_get(world, *id);
    float paint[W * H], stretch[W * H];
    for (uint32_t i = 0; i < W * H; i++) {
        paint[i] = i < W ? 0.0f : 0.05f * (float)(i / W); /* the top row follows its skin */
        stretch[i] = 1.0f + (float)(i % 3);
    }
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, paint, W * H, NULL), CD_OK);
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_STRETCH_COMPLIANCE_SCALE, stretch, W * H, NULL),
                 CD_OK);
    uint32_t body = 0;
    cr_assert_eq(cd_instance_set_transform(inst, "body", fx_v3(0, 0, 0), identity(), &body), CD_OK);
    cr_assert_eq(cd_instance_set_inertia_frame(inst, body), CD_OK);
    memcpy(skin, vertices, sizeof vertices);
    cr_assert_eq(cd_instance_skin(inst, skin, NULL, NULL), CD_OK);
    *n_out = W * H;
    return world;
}

/* One frame of a walking body: the frame moves, the skin follows. */
static void walk(cd_instance *inst, float *skin, uint32_t n, int k)
{
    const float dx = 0.01f * sinf(0.1f * (float)k);
    for (uint32_t i = 0; i < n; i++)
        skin[3 * i] += dx;
    cd_instance_set_transform(inst, "body", fx_v3(skin[0], 0, 0), identity(), NULL);
    cd_instance_skin(inst, skin, NULL, NULL);
    cd_instance_step(inst, FX_DT, fx_no_wind());
}

Test(snapshot, a_skinned_painted_mesh_cloth_should_load_bit_identically)
{
    cd_id id = 0;
    uint32_t n = 0;
    float skin_a[3 * 64], skin_b[3 * 64];
    cd_world *a = skinned_world(&id, skin_a, &n);
    cd_instance *ia = cd_world_get(a, id);
    for (int k = 0; k < 30; k++)
        walk(ia, skin_a, n, k);
    size_t len = 0;
    uint8_t *data = save_all(a, &len);
    cd_world *b = fx_world();
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, NULL, &fault), CD_OK, "%s: %s",
                 fault.field, fault.reason);
    cd_instance *ib = cd_world_get(b, id);
    cr_assert(cd_instance_skinned(ib));
    cr_assert_eq(cd_instance_inertia_frame(ib), cd_instance_inertia_frame(ia));
    float pa[64], pb[64];
    cr_assert(cd_instance_painted(ib, CD_PAINT_MAX_DISTANCE, pb));
    cr_assert(cd_instance_painted(ia, CD_PAINT_MAX_DISTANCE, pa));
    cr_assert_eq(memcmp(pa, pb, sizeof(float) * n), 0);
    uint32_t ta[300], tb[300];
    const uint32_t m = cd_instance_triangles(ia, ta, 100);
    cr_assert_eq(cd_instance_triangles(ib, tb, 100), m);
    cr_assert_eq(memcmp(ta, tb, sizeof(uint32_t) * 3 * m), 0, "the same mesh");
    memcpy(skin_b, skin_a, sizeof skin_a);
    for (int k = 30; k < 130; k++) {
        walk(ia, skin_a, n, k);
        walk(ib, skin_b, n, k);
        cr_assert_eq(memcmp(cd_instance_local_positions(ia), cd_instance_local_positions(ib), sizeof(float) * 3 * n),
                     0, "bit-identical at step %d", k);
    }
    /* The snapshot of the loaded world is the same bytes. */
    size_t len_b = 0;
    uint8_t *again = save_all(b, &len_b);
    free(data);
    free(again);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

/* Tearing (issue 14) changes the particles and the triangles as it goes:
 * a torn sheet is saved as it is now, and the loaded one tears on the
 * same way. */
static void pull_step(cd_world *world, cd_id id, int f)
{
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t y = 0; y < 12; y++) {
        const cd_vec3 at = fx_v3(23 * 0.05f + (float)f * FX_DT, -(float)y * 0.05f, 0);
        cr_assert_eq(cd_instance_pin(inst, y * 24 + 23, &at), CD_OK);
    }
    cd_instance_step(inst, FX_DT, fx_no_wind());
    cd_world_tear(world, id);
}

Test(snapshot, a_torn_sheet_should_load_and_tear_on_bit_identically)
{
    cd_world *a = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 24;
    def.height = 12;
    def.spacing = 0.05f;
    def.gravity = fx_v3(0, 0, 0);
    def.tear_strain = 0.3f;
    def.sleep_threshold = 0.0f;
    cd_id id = 0;
    cr_assert_eq(cd_world_create_cloth(a, &def, &id), CD_OK);
    cd_instance *ia = cd_world_get(a, id);
    for (uint32_t y = 0; y < 12; y++) {
        cr_assert_eq(cd_instance_pin(ia, y * 24, NULL), CD_OK);
        cr_assert_eq(cd_instance_pin(ia, y * 24 + 23, NULL), CD_OK);
    }
    int f = 1;
    while (cd_instance_particle_count(ia) == 24 * 12 && f < 400)
        pull_step(a, id, f++);
    cr_assert_gt(cd_instance_particle_count(ia), 24u * 12u, "it tore (step %d)", f);
    size_t len = 0;
    uint8_t *data = save_all(a, &len);
    cd_world *b = fx_world();
    cd_field_fault fault;
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, NULL, &fault), CD_OK, "%s: %s",
                 fault.field, fault.reason);
    cd_instance *ib = cd_world_get(b, id);
    for (int k = 0; k < 60; k++, f++) {
        pull_step(a, id, f);
        pull_step(b, id, f);
        const uint32_t n = cd_instance_particle_count(ia);
        cr_assert_eq(cd_instance_particle_count(ib), n, "the same tears at step %d", f);
        cr_assert_eq(memcmp(cd_instance_local_positions(ia), cd_instance_local_positions(ib), sizeof(float) * 3 * n),
                     0, "bit-identical at step %d", f);
    }
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}

/* The host's tag (the server's scene and lifetime) goes with its instance
 * through save and load, whatever the mode, and costs nothing when absent:
 * an untagged instance saves to the bytes it always did. */
Test(snapshot, each_instances_tag_should_come_back_with_it_and_none_should_cost_no_bytes)
{
    cd_id ids[3];
    cd_world *a = busy_world(ids);
    cd_snapshot_tag tags[3] = {{0}};
    tags[0].len = 6;
    memcpy(tags[0].bytes, "\x01npc-a", 6);
    tags[2].len = CD_SNAPSHOT_TAG_MAX;
    for (uint32_t i = 0; i < CD_SNAPSHOT_TAG_MAX; i++)
        tags[2].bytes[i] = (uint8_t)(255 - i);
    uint8_t *tagged = NULL, *plain = NULL, *none = NULL;
    size_t lt = 0, lp = 0, ln = 0;
    cr_assert_eq(cd_snapshot_save_tagged(a, ids, 3, tags, &tagged, &lt, NULL), CD_OK);
    cr_assert_eq(cd_snapshot_save(a, ids, 3, &plain, &lp, NULL), CD_OK);
    cd_snapshot_tag empty[3] = {{0}};
    cr_assert_eq(cd_snapshot_save_tagged(a, ids, 3, empty, &none, &ln, NULL), CD_OK);
    cr_assert_eq(ln, lp);
    cr_assert_eq(memcmp(none, plain, lp), 0, "empty tags write no field");
    cr_assert_gt(lt, lp);
    cr_assert_eq(cd_snapshot_check(tagged, lt, NULL, NULL), CD_OK);

    for (int mode = CD_SNAPSHOT_REPLACE; mode <= CD_SNAPSHOT_NEW_IDS; mode++) {
        cd_world *b = fx_world();
        cd_snapshot_loaded loaded;
        cr_assert_eq(cd_snapshot_load(b, tagged, lt, (cd_snapshot_mode)mode, &loaded, NULL), CD_OK);
        cr_assert_eq(loaded.info.instances, 3u);
        for (uint32_t i = 0; i < 3; i++) {
            cr_assert_eq(loaded.saved_ids[i], ids[i]);
            cr_assert_eq(loaded.tags[i].len, tags[i].len, "instance %u", i);
            cr_assert_eq(memcmp(loaded.tags[i].bytes, tags[i].bytes, tags[i].len), 0);
        }
        cd_snapshot_loaded_free(&loaded);
        cr_assert_null(loaded.tags);
        cd_world_destroy(b);
    }
    cd_world *c = fx_world();
    cd_snapshot_loaded loaded;
    cr_assert_eq(cd_snapshot_load(c, plain, lp, CD_SNAPSHOT_REPLACE, &loaded, NULL), CD_OK);
    for (uint32_t i = 0; i < 3; i++)
        cr_assert_eq(loaded.tags[i].len, 0u, "a file without tags: none");
    cd_snapshot_loaded_free(&loaded);
    cd_world_destroy(c);
    free(tagged);
    free(plain);
    free(none);
    cd_world_destroy(a);
}
