/* solver/options_table.h — one row per option serves the defaults, the
 * solver's checks, the protocol's reader and PROTOCOL.md: the four agree.
 *
 *  - PROTOCOL.md's option rows (create, addCollider) carry each C row's
 *    name, type, default and range;
 *  - for every bounded row, a value past either end is refused by the
 *    parser and by the solver with the same message, naming the field;
 *  - the messages that were wrong before the table (thickness 5000 blamed
 *    on the origin, 3e38 in tetherScale, airDensity, selfDistance, a
 *    collider at 3e38) now name the right field, once. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol/protocol.h"

/* ---- helpers ------------------------------------------------------------- */

static void set_float(void *base, const cd_option_spec *spec, float v)
{
    memcpy((unsigned char *)base + spec->offset, &v, sizeof v);
}

static void set_int(void *base, const cd_option_spec *spec, int32_t v)
{
    memcpy((unsigned char *)base + spec->offset, &v, sizeof v);
}

/* The parser's message for one line (which must fail). */
static void parse_message(const char *line, cd_status code, char *out, size_t cap)
{
    cd_request req;
    cd_error err;
    cd_status st = cd_request_parse(line, strlen(line), NULL, &req, &err);
    cr_assert_eq(st, code, "%s -> %s (%s)", line, cd_status_name(st), err.message);
    snprintf(out, cap, "%s", err.message);
    cd_request_free(&req);
}

/* "field: reason" of a solver fault. */
static void fault_message(const cd_field_fault *f, char *out, size_t cap)
{
    snprintf(out, cap, "%s: %s", f->field, f->reason);
}

/* ---- the table against itself and the defaults ---------------------------- */

Test(options_table, defaults_are_the_seeds)
{
    const cd_cloth_def d = cd_default_cloth_def();
    cr_assert_eq(d.width, 10);
    cr_assert_eq(d.height, 10);
    cr_assert_float_eq(d.spacing, 0.1f, 1e-9);
    cr_assert_float_eq(d.gravity.y, -9.81f, 1e-6);
    cr_assert_eq(d.down.y, -1.0f);
    /* Small steps (issue 10): automatic substeps at 360 Hz, one pass each. */
    cr_assert_eq(d.substeps, 0);
    cr_assert_eq(d.solver_frequency, 360.0f);
    cr_assert_eq(d.solver_iterations, 1);
    cr_assert_eq(d.stretch_compliance, CD_UNSET);
    /* Per second, so the same at any frame rate: the seed's 0.01 a step
     * at 60 Hz (0.99^60). */
    cr_assert_float_eq(d.velocity_retention, 0.5471566f, 1e-7);
    cr_assert_eq(d.wind_model, CD_WIND_AERO);
    cr_assert(d.tethers);
    cr_assert_float_eq(d.air_density, 1.225f, 1e-7);
    const cd_collider_def c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    cr_assert_eq(c.type, CD_COLLIDER_CAPSULE);
    cr_assert_eq(c.normal.y, 1.0f);
    cr_assert_eq(c.radius, 0.5f);
    cr_assert_eq(c.height, 1.0f);
    cr_assert_eq(cd_cloth_def_check(&d, NULL), CD_OK);
    cr_assert_eq(cd_collider_def_check(&c, NULL), CD_OK);
}

Test(options_table, every_row_has_a_finite_range)
{
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        const cd_option_spec *s = &cd_cloth_option_specs[i];
        cr_assert(isfinite(s->min) && isfinite(s->max) && s->min <= s->max, "%s", s->name);
    }
    for (int i = 0; i < CD_COLLIDER_OPT_COUNT; i++) {
        const cd_option_spec *s = &cd_collider_option_specs[i];
        cr_assert(isfinite(s->min) && isfinite(s->max) && s->min <= s->max, "%s", s->name);
    }
}

/* For every bounded number or integer row: one value past each end gets the
 * same message from the protocol's reader and the solver's check, and it
 * names the row. (With different bounds on the two sides, one of them
 * would accept what the other refuses.) */
static void bounds_agree(bool collider)
{
    const cd_option_spec *specs = collider ? cd_collider_option_specs : cd_cloth_option_specs;
    const int count = collider ? CD_COLLIDER_OPT_COUNT : CD_OPT_COUNT;
    int checked = 0;
    for (int i = 0; i < count; i++) {
        const cd_option_spec *s = &specs[i];
        /* An alias is the same member: the solver names it by its first row. */
        if ((s->kind != CD_OPTION_FLOAT && s->kind != CD_OPTION_INT) ||
            (s->flags & CD_OPTION_ALIAS))
            continue;
        const bool integer = s->kind == CD_OPTION_INT;
        double past[2] = {integer ? s->min - 1 : s->min - fmax(1e-3, fabs(s->min) * 0.5),
                          integer ? s->max + 1 : s->max * 1.5 + 1};
        for (int end = 0; end < 2; end++) {
            if (integer && end == 1 && s->max >= INT32_MAX)
                continue; /* no upper bound but the type's */
            char line[256], from_parser[256], from_solver[256];
            /* A type that reads the row (the others' checks skip it). */
            const cd_collider_type type = (s->flags & CD_OPTION_TAPERED) ? CD_COLLIDER_TAPERED_CAPSULE
                                          : (s->flags & CD_OPTION_BOX)   ? CD_COLLIDER_BOX
                                                                         : CD_COLLIDER_SPHERE;
            if (collider)
                snprintf(line, sizeof line,
                         "{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"%s\",\"%s\":%.17g}",
                         cd_collider_type_name(type), s->name, past[end]);
            else
                snprintf(line, sizeof line, "{\"cmd\":\"create\",\"%s\":%.17g}", s->name,
                         past[end]);
            parse_message(line, CD_E_INVALID_ARGUMENT, from_parser, sizeof from_parser);

            cd_field_fault fault;
            cd_status st;
            if (collider) {
                cd_collider_def c = cd_default_collider_def(type);
                set_float(&c, s, (float)past[end]);
                st = cd_collider_def_check(&c, &fault);
            } else {
                cd_cloth_def d = cd_default_cloth_def();
                if (integer)
                    set_int(&d, s, (int32_t)past[end]);
                else
                    set_float(&d, s, (float)past[end]);
                st = cd_cloth_def_check(&d, &fault);
            }
            cr_assert_eq(st, CD_E_INVALID_ARGUMENT, "%s = %g passes the solver", s->name,
                         past[end]);
            cr_assert_eq(fault.kind, CD_FAULT_FIELD);
            fault_message(&fault, from_solver, sizeof from_solver);
            cr_assert_str_eq(from_parser, from_solver, "%s", line);
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%s: must be ", s->name);
            cr_assert(strncmp(from_parser, prefix, strlen(prefix)) == 0, "%s", from_parser);
            checked++;
        }
    }
    cr_assert_gt(checked, collider ? 8 : 30);
}

Test(options_table, parser_and_solver_refuse_the_same_values_with_the_same_words)
{
    bounds_agree(false);
    bounds_agree(true);
}

/* ---- the messages that were wrong (issue 9, item 10) ------------------------ */

static void expect_parse(const char *line, cd_status code, const char *message)
{
    char got[256];
    parse_message(line, code, got, sizeof got);
    cr_assert_str_eq(got, message, "%s", line);
}

Test(options_table, thickness_5000_names_thickness_not_the_origin)
{
    expect_parse("{\"cmd\":\"create\",\"thickness\":5000}", CD_E_INVALID_ARGUMENT,
                 "thickness: must be a number in [0, 1000]");
    cd_cloth_def d = cd_default_cloth_def();
    d.thickness = 5000.0f;
    cd_field_fault f;
    cr_assert_eq(cd_cloth_def_check(&d, &f), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(f.field, "thickness");
}

Test(options_table, huge_values_name_their_own_field_once)
{
    expect_parse("{\"cmd\":\"create\",\"selfDistance\":1e30}", CD_E_INVALID_ARGUMENT,
                 "selfDistance: must be a number in [0, 1000]");
    expect_parse("{\"cmd\":\"create\",\"tetherScale\":3e38}", CD_E_INVALID_ARGUMENT,
                 "tetherScale: must be a number in [1, 1000]");
    expect_parse("{\"cmd\":\"create\",\"airDensity\":3e38}", CD_E_INVALID_ARGUMENT,
                 "airDensity: must be a number in [0, 10000]");
    expect_parse("{\"cmd\":\"set\",\"instance\":1,\"airDensity\":3e38}", CD_E_INVALID_ARGUMENT,
                 "airDensity: must be a number in [0, 10000]");
}

Test(options_table, a_collider_at_3e38_names_its_position)
{
    const char *msg = "position: outside the world box (|x|, |y|, |z| <= 100000 m)";
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"sphere\","
                 "\"position\":[3e38,0,0]}",
                 CD_E_INVALID_ARGUMENT, msg);
    expect_parse("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":1,"
                 "\"position\":[0,-3e38,0]}",
                 CD_E_INVALID_ARGUMENT, msg);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.position.x = 3e38f;
    cd_field_fault f;
    cr_assert_eq(cd_collider_def_check(&c, &f), CD_E_INVALID_ARGUMENT);
    char got[256];
    fault_message(&f, got, sizeof got);
    cr_assert_str_eq(got, msg);
}

Test(options_table, the_origin_is_blamed_only_when_the_cloth_reaches_out)
{
    expect_parse("{\"cmd\":\"create\",\"origin\":[99999.5,0,0]}", CD_E_INVALID_ARGUMENT,
                 "origin: the cloth reaches outside the world box (|x|, |y|, |z| <= 100000 m)");
    expect_parse("{\"cmd\":\"create\",\"spacing\":5000,\"width\":100}", CD_E_INVALID_ARGUMENT,
                 "origin: the cloth reaches outside the world box (|x|, |y|, |z| <= 100000 m)");
    expect_parse("{\"cmd\":\"create\",\"down\":[2,0,0]}", CD_E_INVALID_ARGUMENT,
                 "down: must not be parallel to right");
}

Test(options_table, self_distance_is_at_most_the_spacing)
{
    expect_parse("{\"cmd\":\"create\",\"spacing\":0.05,\"selfDistance\":0.06}",
                 CD_E_INVALID_ARGUMENT, "selfDistance: must be at most the spacing (0.05 m)");
    cd_request req;
    cd_error err;
    const char *ok = "{\"cmd\":\"create\",\"spacing\":0.05,\"selfDistance\":0.05}";
    cr_assert_eq(cd_request_parse(ok, strlen(ok), NULL, &req, &err), CD_OK, "%s", err.message);
    cd_request_free(&req);
}

Test(options_table, step_work_is_the_product_and_names_its_factors)
{
    cd_field_fault f;
    cr_assert_eq(cd_step_work_check(262144, 64, 256, 16777216, &f), CD_E_LIMIT_EXCEEDED);
    cr_assert_eq(f.kind, CD_FAULT_STEP_WORK);
    char got[256];
    fault_message(&f, got, sizeof got);
    cr_assert_str_eq(got, "substeps, iterations: 262144 particles x 64 substeps x 256 iterations "
                          "= 4294967296 exceeds the step work limit of 16777216");
    cr_assert_eq(cd_step_work_check(262144, 64, 1, 16777216, NULL), CD_OK); /* = the limit */
    cr_assert_eq(cd_step_work_check(262144, 64, 2, 0, NULL), CD_OK);        /* 0: none */
    /* The parser (create) says the same, with the flag that sets it. */
    expect_parse("{\"cmd\":\"create\",\"width\":256,\"height\":256,\"substeps\":64,"
                 "\"iterations\":8}",
                 CD_E_LIMIT_EXCEEDED,
                 "substeps, iterations: 65536 particles x 64 substeps x 8 iterations = 33554432 "
                 "exceeds the step work limit of 8388608 (--max-step-work)");
    cd_limits lim = cd_default_limits();
    cr_assert_eq(lim.max_step_work, 8388608u); /* 2^23 */
    lim.max_step_work = 100;
    cd_request req;
    cd_error err;
    const char *line = "{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"box\",\"cells\":[1,1,1]}";
    cr_assert_eq(cd_request_parse(line, strlen(line), &lim, &req, &err), CD_E_LIMIT_EXCEEDED);
    cr_assert_str_eq(err.message, "substeps, iterations: 8 particles x 2 substeps x 8 iterations "
                                  "= 128 exceeds the step work limit of 100 (--max-step-work)");
    cd_request_free(&req);
}

/* ---- PROTOCOL.md ------------------------------------------------------------ */

#define DOC_PATH "protocol/PROTOCOL.md"

static char *read_doc(void)
{
    FILE *f = fopen(DOC_PATH, "rb");
    cr_assert_not_null(f, "run the tests from the repository root (%s)", DOC_PATH);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The cells of the table row "| `name` | ..." within [from, to), trimmed,
 * split at unescaped pipes. Returns the number of cells (0: no such row). */
static int doc_row(const char *from, const char *to, const char *name, char cells[4][512])
{
    char key[80];
    snprintf(key, sizeof key, "\n| `%s` |", name);
    const char *row = strstr(from, key);
    if (row == NULL || row >= to)
        return 0;
    row += 2; /* past "\n|" */
    int n = 0;
    size_t o = 0;
    for (const char *p = row; *p && *p != '\n' && n < 4; p++) {
        if (*p == '|' && p[-1] != '\\') {
            while (o > 0 && cells[n][o - 1] == ' ')
                o--;
            cells[n][o] = '\0';
            n++;
            o = 0;
            continue;
        }
        if (o == 0 && *p == ' ')
            continue;
        if (o + 1 < 512)
            cells[n][o++] = *p;
    }
    return n;
}

static const char *kind_word(cd_option_kind kind)
{
    switch (kind) {
    case CD_OPTION_INT: return "integer";
    case CD_OPTION_FLOAT: return "number";
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT: return "vec3";
    case CD_OPTION_DIRECTION: return "direction";
    case CD_OPTION_BOOL: return "boolean";
    case CD_OPTION_WIND_MODEL: return "string";
    case CD_OPTION_EXTENTS: return "vec3";
    case CD_OPTION_ROTATION: return "quaternion";
    }
    return "?";
}

/* The default as PROTOCOL.md writes it: 0.1, unset, `[0,-9.81,0]`, true,
 * `"aero"`. */
static void check_default(const cd_option_spec *s, const char *cell)
{
    if (cell[0] == '=')
        return; /* "= `friction`": another field's value */
    const double *d = s->defaults;
    char want[96];
    switch (s->kind) {
    case CD_OPTION_INT:
    case CD_OPTION_FLOAT:
        if ((s->flags & CD_OPTION_UNSET_OK) && d[0] == -1.0) {
            cr_assert_str_eq(cell, "unset", "%s", s->name);
            return;
        }
        cr_assert_float_eq(strtod(cell, NULL), d[0], 1e-12, "%s: doc %s, table %g", s->name, cell,
                           d[0]);
        return;
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT:
    case CD_OPTION_DIRECTION:
    case CD_OPTION_EXTENTS:
        snprintf(want, sizeof want, "`[%g,%g,%g]`", d[0], d[1], d[2]);
        cr_assert_str_eq(cell, want, "%s", s->name);
        return;
    case CD_OPTION_ROTATION:
        snprintf(want, sizeof want, "`[%g,%g,%g,%g]`", d[0], d[1], d[2], d[3]);
        cr_assert_str_eq(cell, want, "%s", s->name);
        return;
    case CD_OPTION_BOOL:
        cr_assert_str_eq(cell, d[0] != 0.0 ? "true" : "false", "%s", s->name);
        return;
    case CD_OPTION_WIND_MODEL:
        snprintf(want, sizeof want, "`\"%s\"`", cd_wind_model_name((int)d[0]));
        cr_assert_str_eq(cell, want, "%s", s->name);
        return;
    }
}

/* The range cell starts with the row's range: "≥ 2", "[1, 256]", "(0, 10000]"
 * (an EXTENTS row's: each of its three numbers'). */
static void check_range(const cd_option_spec *s, const char *cell)
{
    if (s->kind != CD_OPTION_INT && s->kind != CD_OPTION_FLOAT && s->kind != CD_OPTION_EXTENTS)
        return;
    char want[96];
    if (s->kind == CD_OPTION_INT && s->max >= INT32_MAX)
        snprintf(want, sizeof want, "%s %.15g", s->min_open ? ">" : "≥", s->min);
    else
        snprintf(want, sizeof want, "%c%.15g, %.15g%c", s->min_open ? '(' : '[', s->min, s->max,
                 s->max_open ? ')' : ']');
    cr_assert(strncmp(cell, want, strlen(want)) == 0, "%s: PROTOCOL.md says \"%s\", the table %s",
              s->name, cell, want);
}

static void check_section(const char *doc, const char *heading, const cd_option_spec *specs,
                          int count)
{
    const char *from = strstr(doc, heading);
    cr_assert_not_null(from, "%s", heading);
    const char *to = strstr(from + strlen(heading), "\n### ");
    if (to == NULL)
        to = from + strlen(from);
    for (int i = 0; i < count; i++) {
        char cells[4][512];
        int n = doc_row(from, to, specs[i].name, cells);
        cr_assert_eq(n, 4, "PROTOCOL.md (%s) has no row for `%s`", heading, specs[i].name);
        char name[80];
        snprintf(name, sizeof name, "`%s`", specs[i].name);
        cr_assert_str_eq(cells[0], name);
        cr_assert_str_eq(cells[1], kind_word(specs[i].kind), "%s", specs[i].name);
        check_default(&specs[i], cells[2]);
        check_range(&specs[i], cells[3]);
    }
}

Test(options_table, protocol_md_lists_every_option_with_the_tables_type_default_and_range)
{
    char *doc = read_doc();
    check_section(doc, "\n### create\n", cd_cloth_option_specs, CD_OPT_COUNT);
    check_section(doc, "\n### addCollider\n", cd_collider_option_specs, CD_COLLIDER_OPT_COUNT);
    free(doc);
}

/* ---- the box's and the tapered capsule's fields (issue 14) ------------------ */

/* The parser's words for an addCollider line and the solver's for the same
 * def (built by `set`) agree, and are `message`. */
static void collider_refused(const char *members, void (*set)(cd_collider_def *),
                             const char *message)
{
    char line[256];
    snprintf(line, sizeof line, "{\"cmd\":\"addCollider\",\"instance\":1,%s}", members);
    expect_parse(line, CD_E_INVALID_ARGUMENT, message);
    cd_collider_def c = cd_default_collider_def(strstr(members, "taperedCapsule") != NULL
                                                    ? CD_COLLIDER_TAPERED_CAPSULE
                                                    : CD_COLLIDER_BOX);
    set(&c);
    cd_field_fault f;
    cr_assert_eq(cd_collider_def_check(&c, &f), CD_E_INVALID_ARGUMENT, "%s", message);
    char got[256];
    fault_message(&f, got, sizeof got);
    cr_assert_str_eq(got, message);
}

static void negative_radius2(cd_collider_def *c) { c->radius2 = -0.5f; }
static void zero_extent(cd_collider_def *c) { c->half_extents.y = 0.0f; }
static void negative_extent(cd_collider_def *c) { c->half_extents.z = -1.0f; }
static void zero_rotation(cd_collider_def *c) { c->rotation = (cd_quat){0, 0, 0, 0}; }
static void long_rotation(cd_collider_def *c) { c->rotation = (cd_quat){0, 0, 0, 2}; }
static void slightly_long_rotation(cd_collider_def *c) { c->rotation = (cd_quat){0, 0, 0.6f, 0.81f}; }

Test(options_table, bad_radius2_extents_and_rotations_are_refused_naming_the_field)
{
    collider_refused("\"type\":\"taperedCapsule\",\"radius2\":-0.5", negative_radius2,
                     "radius2: must be a number in [0, 100000]");
    collider_refused("\"type\":\"box\",\"halfExtents\":[1,0,1]", zero_extent,
                     "halfExtents: each must be a number in (0, 100000]");
    collider_refused("\"type\":\"box\",\"halfExtents\":[0.5,0.5,-1]", negative_extent,
                     "halfExtents: each must be a number in (0, 100000]");
    collider_refused("\"type\":\"box\",\"rotation\":[0,0,0,0]", zero_rotation,
                     "rotation: must not be zero-length");
    collider_refused("\"type\":\"box\",\"rotation\":[0,0,0,2]", long_rotation,
                     "rotation: must be a unit quaternion (length within 0.001 of 1, not 2)");
    /* 0.6^2 + 0.81^2 = 1.0161: 1.008 long. */
    collider_refused("\"type\":\"box\",\"rotation\":[0,0,0.6,0.81]", slightly_long_rotation,
                     "rotation: must be a unit quaternion (length within 0.001 of 1, not 1.00802)");
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"box\",\"rotation\":[0,0,1]}",
                 CD_E_INVALID_ARGUMENT,
                 "rotation: must be a quaternion [x, y, z, w] of 4 finite numbers");
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"box\",\"halfExtents\":2}",
                 CD_E_INVALID_ARGUMENT, "halfExtents: must be an array of 3 finite numbers");
    /* moveCollider reads the same row. */
    expect_parse("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":1,\"rotation\":[1,1,0,0]}",
                 CD_E_INVALID_ARGUMENT,
                 "rotation: must be a unit quaternion (length within 0.001 of 1, not 1.41421)");
    /* Within the tolerance is a rotation (normalised on use). */
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_BOX);
    c.rotation = (cd_quat){0, 0, 0.6f, 0.8004f};
    cr_assert_eq(cd_collider_def_check(&c, NULL), CD_OK);
}

/* A def built by hand for a sphere (no cd_default_collider_def: zero
 * rotation and half extents) is checked on the rows a sphere reads only. */
Test(options_table, a_type_is_checked_on_its_own_rows_only)
{
    cd_collider_def c;
    memset(&c, 0, sizeof c);
    c.type = CD_COLLIDER_SPHERE;
    c.normal.y = 1.0f;
    c.radius = 0.3f;
    cr_assert_eq(cd_collider_def_check(&c, NULL), CD_OK);
    c.type = CD_COLLIDER_BOX;
    cd_field_fault f;
    cr_assert_eq(cd_collider_def_check(&c, &f), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(f.field, "halfExtents");
    c.type = CD_COLLIDER_TAPERED_CAPSULE;
    cr_assert_eq(cd_collider_def_check(&c, NULL), CD_OK); /* radius2 0: a cone to a point */
}

Test(options_table, a_box_turns_by_rotation_and_the_others_by_normal)
{
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"box\",\"normal\":[0,1,0]}",
                 CD_E_INVALID_ARGUMENT, "normal: a box turns by \"rotation\", not \"normal\"");
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"taperedCapsule\","
                 "\"rotation\":[0,0,0,1]}",
                 CD_E_INVALID_ARGUMENT,
                 "rotation: only a box takes a rotation (a taperedCapsule turns by \"normal\")");
    expect_parse("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"cone\"}",
                 CD_E_INVALID_ARGUMENT,
                 "type: unknown collider type \"cone\" (one of \"sphere\", \"capsule\", "
                 "\"plane\", \"taperedCapsule\" or \"box\")");
    const cd_collider_def box = cd_default_collider_def(CD_COLLIDER_BOX);
    cr_assert_eq(box.half_extents.x, 0.5f);
    cr_assert_eq(box.rotation.w, 1.0f);
    cr_assert_eq(cd_default_collider_def(CD_COLLIDER_TAPERED_CAPSULE).radius2, CD_UNSET);
    cr_assert_str_eq(cd_collider_type_name(CD_COLLIDER_TAPERED_CAPSULE), "taperedCapsule");
    cr_assert_null(cd_collider_type_name(CD_COLLIDER_TYPE_COUNT));
}
