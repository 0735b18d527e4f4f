/* clothd protocol — parsing one request line into a cd_request.
 *
 * A line is first checked byte by byte (strict input: UTF-8, no raw control
 * bytes, no \u0000 in strings), so that nothing invalid reaches cJSON, a
 * C string or an echoed "id". The envelope (JSON object, "id", "cmd",
 * "instance") is then read here once; each command reads its own fields
 * with parse_<name>, found through its row of CD_COMMAND_MAP
 * (commands.h), which also says how the envelope's "instance" is read and
 * how the payload is freed. Options are read with the solver's table
 * (solver/options_table.h). Validation stops at the first fault, in the
 * order the fields are listed in PROTOCOL.md, and the message names that
 * field.
 */
#include "protocol.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_fields.h"
#include "options.h"

/* Defaults of cd_default_limits(); the server's flags override them. */
#define DEFAULT_MAX_PARTICLES 262144u
#define DEFAULT_MAX_LIST 1000000u
#define DEFAULT_MAX_STEP_WORK 8388608u /* 2^23 particle-iterations per step */

/* The largest particle count whose frame length still fits the u32 length
 * field: (2^32 - 1 - 40) / 12. Applies whatever the configured limit. */
#define FRAME_MAX_PARTICLES ((UINT32_MAX - CD_FRAME_HEADER_SIZE) / 12u)

/* Longest user string quoted back in a message. */
#define QUOTE_CAP 64

/* ---- errors ------------------------------------------------------------- */

/* Drops a UTF-8 sequence cut short at the end of `s` (after truncation). */
static void trim_partial_utf8(char *s, size_t len)
{
    size_t i = len;
    size_t back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > 1 && back + 1 < need)
        s[i - 1] = '\0';
}

cd_status cd_fail(cd_error *err, cd_status code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (n < 0) {
        err->message[0] = '\0';
        return code;
    }
    size_t len = strlen(err->message);
    if ((size_t)n >= sizeof err->message)
        trim_partial_utf8(err->message, len);
    /* A message is one line, whatever the format arguments held. */
    for (char *p = err->message; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F)
            *p = ' ';
    return code;
}

cd_status cd_fail_fault(cd_error *err, cd_status code, const cd_field_fault *fault)
{
    const char *flag = fault->kind == CD_FAULT_INSTANCES         ? " (--max-instances)"
                       : fault->kind == CD_FAULT_TOTAL_PARTICLES ? " (--max-total-particles)"
                       : fault->kind == CD_FAULT_STEP_WORK       ? " (--max-step-work)"
                                                                 : "";
    return cd_fail(err, code, "%s: %s%s", fault->field, fault->reason, flag);
}

cd_limits cd_default_limits(void)
{
    return (cd_limits){.max_particles = DEFAULT_MAX_PARTICLES,
                       .max_list = DEFAULT_MAX_LIST,
                       .max_step_work = DEFAULT_MAX_STEP_WORK};
}

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- shared pieces ------------------------------------------------------ */

/* A required member: NULL (with err filled) when absent. */
static const cJSON *required(const cJSON *obj, const char *name, cd_error *err)
{
    const cJSON *item = cd_json_member(obj, name);
    if (!item)
        cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: required", name);
    return item;
}

/* A string member naming one of an enum's values (a row of cd_wire_enums,
 * whose field it is); *index is the match. The unknown case lists the
 * names: "type: unknown collider type \"x\" (one of \"sphere\", ... or
 * \"box\")". */
static cd_status read_enum(const cJSON *obj, cd_wire_enum_id id, bool is_required, int *index,
                           cd_error *err)
{
    const cd_wire_enum *e = &cd_wire_enums[id];
    const cJSON *item = cd_json_member(obj, e->field);
    if (!item) {
        if (is_required)
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: required", e->field);
        return CD_OK;
    }
    return cd_json_enum(item, e->field, e, index, err);
}

/* ---- enums -------------------------------------------------------------- */

/* Index order = cd_instance_type order. */
const char *cd_instance_type_wire(int index)
{
    static const char *const names[] = {[CD_INSTANCE_CLOTH] = "cloth",
                                        [CD_INSTANCE_SOFTBODY] = "softbody"};
    return index >= 0 && index < (int)COUNT_OF(names) ? names[index] : NULL;
}

/* A soft body's generated shapes (softbody.c). */
const char *cd_shape_wire(int index)
{
    static const char *const names[] = {"box", "ball"};
    return index >= 0 && index < (int)COUNT_OF(names) ? names[index] : NULL;
}

/* subscribe's channels, and the frame flag each sets ("positions" is
 * always sent; naming it is allowed). */
static const struct {
    const char *name;
    uint16_t flag;
} channels[] = {{"positions", 0},
                {"velocities", CD_FRAME_FLAG_VELOCITIES},
                {"normals", CD_FRAME_FLAG_NORMALS}};

const char *cd_channel_wire(int index)
{
    return index >= 0 && index < (int)COUNT_OF(channels) ? channels[index].name : NULL;
}

const cd_wire_enum cd_wire_enums[CD_ENUM_COUNT] = {
#define CD_WIRE_ENUM_ROW(ID, command_, field_, what_, names_)                                  \
    [CD_ENUM_##ID] = {.command = command_, .field = field_, .what = what_, .name = names_},
    CD_WIRE_ENUM_MAP(CD_WIRE_ENUM_ROW)
#undef CD_WIRE_ENUM_ROW
};

/* "instance" or "instances" or neither (= all) into `list`. */
static cd_status read_instance_list(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                    cd_id_list *list, cd_error *err)
{
    const cJSON *one = cd_json_member(obj, "instance");
    const cJSON *many = cd_json_member(obj, "instances");
    if (one && many)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "instance: give either \"instance\" or \"instances\", not both");
    if (one) {
        cd_id id;
        cd_status st = cd_json_id(one, "instance", &id, err);
        if (st != CD_OK)
            return st;
        list->ids = malloc(sizeof *list->ids);
        if (!list->ids)
            return cd_fail(err, CD_E_INTERNAL, "instance: out of memory");
        list->ids[0] = id;
        list->count = 1;
        list->all = false;
        req->has_instance = true;
        req->instance = id;
        return CD_OK;
    }
    if (many) {
        list->all = false;
        return cd_json_id_array(many, "instances", lim->max_list, &list->ids, &list->count, err);
    }
    list->all = true;
    list->count = 0;
    list->ids = NULL;
    return CD_OK;
}

/* "particle" (+ "position") or "particles" (+ "positions") for pin/unpin. */
static cd_status read_particles(const cJSON *obj, const cd_limits *lim, const char *pos_one_name,
                                const char *pos_many_name, cd_request *req, cd_error *err)
{
    const cJSON *one = cd_json_member(obj, "particle");
    const cJSON *many = cd_json_member(obj, "particles");
    const cJSON *pos_one = pos_one_name ? cd_json_member(obj, pos_one_name) : NULL;
    const cJSON *pos_many = pos_many_name ? cd_json_member(obj, pos_many_name) : NULL;
    if (one && many)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "particle: give either \"particle\" or \"particles\", not both");
    if (!one && !many)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "particle: required (or \"particles\")");

    uint32_t *particles = NULL;
    cd_vec3 *positions = NULL;
    uint32_t count = 0;
    cd_status st;
    if (one) {
        if (pos_many)
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: goes with \"particles\"; use \"%s\" with \"particle\"",
                           pos_many_name, pos_one_name);
        uint32_t index;
        if ((st = cd_json_index(one, "particle", &index, err)) != CD_OK)
            return st;
        cd_vec3 position;
        if (pos_one && (st = cd_json_vec3(pos_one, pos_one_name, &position, err)) != CD_OK)
            return st;
        particles = malloc(sizeof *particles);
        positions = pos_one ? malloc(sizeof *positions) : NULL;
        if (!particles || (pos_one && !positions)) {
            free(particles);
            free(positions);
            return cd_fail(err, CD_E_INTERNAL, "particle: out of memory");
        }
        particles[0] = index;
        if (positions)
            positions[0] = position;
        count = 1;
    } else {
        if (pos_one)
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: goes with \"particle\"; use \"%s\" with \"particles\"",
                           pos_one_name, pos_many_name);
        if ((st = cd_json_index_array(many, "particles", lim->max_list, &particles, &count,
                                      err)) != CD_OK)
            return st;
        if (pos_many) {
            uint32_t npos = 0;
            st = cd_json_vec3_array(pos_many, pos_many_name, lim->max_list, &positions, &npos,
                                    err);
            if (st == CD_OK && npos != count) {
                free(positions);
                st = cd_fail(err, CD_E_INVALID_ARGUMENT,
                             "%s: has %" PRIu32 " entries for %" PRIu32
                             " particles (must be one per particle)",
                             pos_many_name, npos, count);
            }
            if (st != CD_OK) {
                free(particles);
                return st;
            }
        }
    }
    req->as.pin.count = count;
    req->as.pin.particles = particles;
    req->as.pin.positions = positions;
    return CD_OK;
}

/* A transform name: a non-empty string shorter than CD_TRANSFORM_NAME_MAX. */
static cd_status read_name(const cJSON *obj, const char *field, bool required_field,
                           char out[CD_TRANSFORM_NAME_MAX], cd_error *err)
{
    const cJSON *item = cd_json_member(obj, field);
    out[0] = '\0';
    if (!item) {
        if (required_field)
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: required", field);
        return CD_OK;
    }
    if (!cJSON_IsString(item) || !item->valuestring || item->valuestring[0] == '\0' ||
        strlen(item->valuestring) >= CD_TRANSFORM_NAME_MAX)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "%s: must be a non-empty string of at most %d bytes", field,
                       CD_TRANSFORM_NAME_MAX - 1);
    memcpy(out, item->valuestring, strlen(item->valuestring) + 1);
    return CD_OK;
}

/* ---- commands ----------------------------------------------------------- */

typedef cd_status (*command_parser)(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                    cd_error *err);

static cd_status parse_nothing(const cJSON *obj, const cd_limits *lim, cd_request *req,
                               cd_error *err)
{
    (void)obj, (void)lim, (void)req, (void)err;
    return CD_OK;
}

static cd_status parse_create(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    int type = CD_INSTANCE_CLOTH;
    cd_status st = read_enum(obj, CD_ENUM_INSTANCE_TYPE, false, &type, err);
    if (st != CD_OK)
        return st;
    /* Tied to the creating connection (PROTOCOL.md "Scenes"). */
    const cJSON *ephemeral = cd_json_member(obj, "ephemeral");
    req->as.create.ephemeral = false;
    if (ephemeral && (st = cd_json_bool(ephemeral, "ephemeral", &req->as.create.ephemeral,
                                        err)) != CD_OK)
        return st;
    if (type == CD_INSTANCE_SOFTBODY) {
        st = cd_parse_softbody(obj, lim, req, err);
        return st == CD_OK ? cd_parse_paint(obj, lim, &req->as.create.paint, err) : st;
    }
    if (cd_json_member(obj, "vertices") != NULL) {
        st = cd_parse_mesh_cloth(obj, lim, req, err);
        return st == CD_OK ? cd_parse_paint(obj, lim, &req->as.create.paint, err) : st;
    }
    req->as.create.type = CD_INSTANCE_CLOTH;
    cd_cloth_def def = cd_default_cloth_def();
    if ((st = cd_parse_cloth_options(obj, false, &def, NULL, err)) != CD_OK)
        return st;
    uint64_t particles = (uint64_t)def.width * (uint64_t)def.height;
    uint32_t limit = lim->max_particles < FRAME_MAX_PARTICLES ? lim->max_particles
                                                              : FRAME_MAX_PARTICLES;
    if (particles > limit)
        return cd_fail(err, CD_E_LIMIT_EXCEEDED,
                       "width, height: %" PRIu64 " particles exceed the limit of %" PRIu32,
                       particles, limit);
    /* The solver's own check, for what the fields alone do not tell: the
     * axes must span a plane, the grid must lie in the world box. */
    cd_field_fault fault;
    if ((st = cd_cloth_def_check(&def, &fault)) != CD_OK)
        return cd_fail_fault(err, st, &fault);
    if ((st = cd_step_work_check(particles, cd_substeps_bound(&def), def.solver_iterations,
                                 lim->max_step_work, &fault)) != CD_OK)
        return cd_fail_fault(err, st, &fault);
    req->as.create.def = def;
    return cd_parse_paint(obj, lim, &req->as.create.paint, err);
}

static cd_status parse_pin(const cJSON *obj, const cd_limits *lim, cd_request *req,
                           cd_error *err)
{
    return read_particles(obj, lim, "position", "positions", req, err);
}

static cd_status parse_unpin(const cJSON *obj, const cd_limits *lim, cd_request *req,
                             cd_error *err)
{
    return read_particles(obj, lim, NULL, NULL, req, err);
}

static cd_status parse_wind(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    (void)lim;
    const cJSON *item = required(obj, "wind", err);
    cd_status st = item ? cd_json_vec3(item, "wind", &req->as.wind.wind, err) : err->code;
    if (st == CD_OK && req->has_scene && !req->has_instance)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "scene: goes with \"instance\" (the global wind belongs to no scene)");
    return st;
}

static cd_status parse_gravity(const cJSON *obj, const cd_limits *lim, cd_request *req,
                               cd_error *err)
{
    (void)lim;
    const cJSON *item = required(obj, "gravity", err);
    return item ? cd_json_vec3(item, "gravity", &req->as.gravity.gravity, err) : err->code;
}

static cd_status parse_add_collider(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                    cd_error *err)
{
    (void)lim;
    int type = 0;
    cd_status st = read_enum(obj, CD_ENUM_COLLIDER_TYPE, true, &type, err);
    if (st != CD_OK)
        return st;
    cd_collider_def def = cd_default_collider_def((cd_collider_type)type);
    if ((st = cd_json_read_options(obj, cd_collider_option_specs, CD_COLLIDER_OPT_COUNT, &def,
                                   NULL, err)) != CD_OK)
        return st;
    /* Static friction defaults to the kinetic one. */
    if (!cd_json_member(obj, "staticFriction"))
        def.static_friction = def.friction;
    /* A box turns by its rotation, the others by their normal: the wrong
     * one would be ignored, which hides the mistake. */
    if (type == CD_COLLIDER_BOX && cd_json_member(obj, "normal"))
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "normal: a box turns by \"rotation\", not \"normal\"");
    if (type != CD_COLLIDER_BOX && cd_json_member(obj, "rotation"))
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "rotation: only a box takes a rotation (a %s turns by \"normal\")",
                       cd_collider_type_name(type));
    req->as.add_collider.def = def;
    return read_name(obj, "attachment", false, req->as.add_collider.attachment, err);
}

static cd_status read_collider_id(const cJSON *obj, cd_id *out, cd_error *err)
{
    const cJSON *item = required(obj, "collider", err);
    return item ? cd_json_id(item, "collider", out, err) : err->code;
}

static cd_status parse_move_collider(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                     cd_error *err)
{
    (void)lim;
    cd_status st = read_collider_id(obj, &req->as.move_collider.collider, err);
    if (st != CD_OK)
        return st;
    const cJSON *position = cd_json_member(obj, "position");
    const cJSON *normal = cd_json_member(obj, "normal");
    const cJSON *rotation = cd_json_member(obj, "rotation");
    if (!position && !normal && !rotation)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "position: required unless \"normal\" or \"rotation\" is given");
    if (normal && rotation)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "rotation: give either \"normal\" or \"rotation\", not both");
    /* The rows of addCollider's position, normal and rotation, read into a
     * scratch collider (the rows' offsets are into cd_collider_def). */
    cd_collider_def moved = cd_default_collider_def(CD_COLLIDER_SPHERE);
    if (position) {
        if ((st = cd_json_option(position, &cd_collider_option_specs[CD_COLLIDER_OPT_POSITION],
                                 &moved, err)))
            return st;
        req->as.move_collider.position = moved.position;
        req->as.move_collider.has_position = true;
    }
    if (normal) {
        if ((st = cd_json_option(normal, &cd_collider_option_specs[CD_COLLIDER_OPT_NORMAL], &moved,
                                 err)))
            return st;
        req->as.move_collider.normal = moved.normal;
        req->as.move_collider.has_normal = true;
    }
    if (rotation) {
        if ((st = cd_json_option(rotation, &cd_collider_option_specs[CD_COLLIDER_OPT_ROTATION],
                                 &moved, err)))
            return st;
        req->as.move_collider.rotation = moved.rotation;
        req->as.move_collider.has_rotation = true;
    }
    return CD_OK;
}

static cd_status parse_remove_collider(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                       cd_error *err)
{
    (void)lim;
    return read_collider_id(obj, &req->as.remove_collider.collider, err);
}

static cd_status parse_enable(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    (void)lim;
    const cJSON *item = required(obj, "enabled", err);
    return item ? cd_json_bool(item, "enabled", &req->as.enable.enabled, err) : err->code;
}

static cd_status parse_set(const cJSON *obj, const cd_limits *lim, cd_request *req,
                           cd_error *err)
{
    req->as.set.def = cd_default_cloth_def();
    cd_status st = cd_parse_cloth_options(obj, true, &req->as.set.def, &req->as.set.present, err);
    return st == CD_OK ? cd_parse_paint(obj, lim, &req->as.set.paint, err) : st;
}

/* An optional quaternion member [x, y, z, w]; identity when absent. */
static cd_status read_rotation(const cJSON *obj, const char *name, cd_quat *out, cd_error *err)
{
    *out = (cd_quat){0, 0, 0, 1};
    const cJSON *rotation = cd_json_member(obj, name);
    if (!rotation)
        return CD_OK;
    cd_quat q;
    cd_status st = cd_json_quat(rotation, name, &q, err);
    if (st != CD_OK)
        return st;
    const double norm2 = (double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z +
                         (double)q.w * q.w;
    if (!(norm2 > 1e-12))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must not be zero-length", name);
    *out = q;
    return CD_OK;
}

static cd_status parse_transform(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                 cd_error *err)
{
    (void)lim;
    cd_status st = read_name(obj, "name", true, req->as.transform.name, err);
    if (st != CD_OK)
        return st;
    const cJSON *position = required(obj, "position", err);
    if (!position)
        return err->code;
    if ((st = cd_json_vec3(position, "position", &req->as.transform.position, err)) != CD_OK)
        return st;
    if ((st = read_rotation(obj, "rotation", &req->as.transform.rotation, err)) != CD_OK)
        return st;
    const cJSON *frame = cd_json_member(obj, "inertiaFrame");
    req->as.transform.has_frame = frame != NULL;
    return frame ? cd_json_bool(frame, "inertiaFrame", &req->as.transform.frame, err) : CD_OK;
}

static cd_status parse_teleport(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                cd_error *err)
{
    (void)lim;
    req->as.teleport.translation = (cd_vec3){0, 0, 0};
    req->as.teleport.pivot = (cd_vec3){0, 0, 0};
    const cJSON *t = cd_json_member(obj, "translation"), *p = cd_json_member(obj, "pivot");
    cd_status st = CD_OK;
    if (t != NULL)
        st = cd_json_vec3(t, "translation", &req->as.teleport.translation, err);
    if (st == CD_OK && p != NULL)
        st = cd_json_vec3(p, "pivot", &req->as.teleport.pivot, err);
    if (st == CD_OK)
        st = read_rotation(obj, "rotation", &req->as.teleport.rotation, err);
    return st;
}

static cd_status parse_attach(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    cd_status st = read_name(obj, "name", true, req->as.attach.name, err);
    if (st != CD_OK)
        return st;
    char name[CD_TRANSFORM_NAME_MAX];
    memcpy(name, req->as.attach.name, sizeof name);
    st = read_particles(obj, lim, "offset", "offsets", req, err);
    /* read_particles fills the pin view of the union; the name sits after. */
    memcpy(req->as.attach.name, name, sizeof name);
    return st;
}

static cd_status parse_debug(const cJSON *obj, const cd_limits *lim, cd_request *req,
                             cd_error *err)
{
    (void)lim;
    const cJSON *item = cd_json_member(obj, "enabled");
    req->as.debug.has_enabled = item != NULL;
    return item ? cd_json_bool(item, "enabled", &req->as.debug.enabled, err) : CD_OK;
}

static cd_status parse_step(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    static const cd_float_range dt_range = {
        .min = 0, .max = 1, .min_open = true, .has_min = true, .has_max = true};
    req->as.step.dt = 1.0f / 60.0f;
    const cJSON *dt = cd_json_member(obj, "dt");
    cd_status st;
    if (dt && (st = cd_json_float(dt, "dt", &dt_range, &req->as.step.dt, err)) != CD_OK)
        return st;
    static const cd_float_range budget_range = {
        .min = 0, .max = CD_STEP_BUDGET_MAX_MS, .has_min = true, .has_max = true};
    const cJSON *budget = cd_json_member(obj, "budgetMs");
    req->as.step.has_budget = budget != NULL;
    if (budget && (st = cd_json_float(budget, "budgetMs", &budget_range,
                                      &req->as.step.budget_ms, err)) != CD_OK)
        return st;
    return read_instance_list(obj, lim, req, &req->as.step.instances, err);
}

/* subscribe's "channels": a list of channel names (cd_channel_wire), each
 * the frame flag it sets. Absent: 0. */
static cd_status read_channels(const cJSON *item, uint16_t *out, cd_error *err)
{
    *out = 0;
    if (item == NULL)
        return CD_OK;
    const cd_wire_enum *e = &cd_wire_enums[CD_ENUM_CHANNEL];
    if (!cJSON_IsArray(item)) {
        char names[96];
        cd_json_enum_names(e, names, sizeof names);
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "channels: must be a list of %s", names);
    }
    int index = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, item) {
        char label[32];
        snprintf(label, sizeof label, "channels[%d]", index);
        int k = 0;
        cd_status st = cd_json_enum(entry, label, e, &k, err);
        if (st != CD_OK)
            return st;
        *out |= channels[k].flag;
        index++;
    }
    return CD_OK;
}

/* get: which optional arrays to add ("velocities", "normals"). */
static cd_status parse_get(const cJSON *obj, const cd_limits *lim, cd_request *req,
                           cd_error *err)
{
    (void)lim;
    req->as.get.velocities = req->as.get.normals = false;
    const cJSON *item = cd_json_member(obj, "velocities");
    cd_status st;
    if (item && (st = cd_json_bool(item, "velocities", &req->as.get.velocities, err)) != CD_OK)
        return st;
    item = cd_json_member(obj, "normals");
    return item ? cd_json_bool(item, "normals", &req->as.get.normals, err) : CD_OK;
}

/* subscribe: the instances, then the frame options "quantize", "every",
 * "channels" and "shm". */
static cd_status parse_subscribe(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                 cd_error *err)
{
    cd_status st = read_instance_list(obj, lim, req, &req->as.subscribe.instances, err);
    if (st != CD_OK)
        return st;
    cd_frame_options *opts = &req->as.subscribe.options;
    opts->quantize = false;
    opts->every = 1;
    opts->shm = false;
    const cJSON *quantize = cd_json_member(obj, "quantize");
    if (quantize && (st = cd_json_bool(quantize, "quantize", &opts->quantize, err)) != CD_OK)
        return st;
    const cJSON *every = cd_json_member(obj, "every");
    if (every) {
        int64_t k;
        if ((st = cd_json_int(every, "every", 1, CD_FRAME_EVERY_MAX, &k, err)) != CD_OK)
            return st;
        opts->every = (uint32_t)k;
    }
    if ((st = read_channels(cd_json_member(obj, "channels"), &opts->channels, err)) != CD_OK)
        return st;
    const cJSON *shm = cd_json_member(obj, "shm");
    return shm ? cd_json_bool(shm, "shm", &opts->shm, err) : CD_OK;
}

static cd_status parse_unsubscribe(const cJSON *obj, const cd_limits *lim, cd_request *req,
                                   cd_error *err)
{
    return read_instance_list(obj, lim, req, &req->as.subscribe.instances, err);
}

bool cd_snapshot_name_ok(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n > CD_SNAPSHOT_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        const char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* A snapshot's name: required, a file name and never a path. */
static cd_status read_snapshot_name(const cJSON *obj, char out[CD_SNAPSHOT_NAME_MAX + 1],
                                    cd_error *err)
{
    const cJSON *item = required(obj, "name", err);
    if (!item)
        return err->code;
    if (!cJSON_IsString(item) || item->valuestring == NULL ||
        !cd_snapshot_name_ok(item->valuestring))
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "name: must be 1 to %d of A-Z a-z 0-9 . _ - not starting with '.'",
                       CD_SNAPSHOT_NAME_MAX);
    memcpy(out, item->valuestring, strlen(item->valuestring) + 1);
    return CD_OK;
}

/* An optional boolean member: false when absent. */
static cd_status read_flag(const cJSON *obj, const char *name, bool *out, cd_error *err)
{
    const cJSON *item = cd_json_member(obj, name);
    *out = false;
    return item ? cd_json_bool(item, name, out, err) : CD_OK;
}

static cd_status parse_save(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    cd_status st = read_instance_list(obj, lim, req, &req->as.save.instances, err);
    if (st == CD_OK)
        st = read_snapshot_name(obj, req->as.save.name, err);
    return st != CD_OK ? st : read_flag(obj, "memory", &req->as.save.memory, err);
}

static cd_status parse_load(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    (void)lim;
    cd_status st = read_snapshot_name(obj, req->as.load.name, err);
    if (st == CD_OK)
        st = read_flag(obj, "replace", &req->as.load.replace, err);
    if (st == CD_OK)
        st = read_flag(obj, "memory", &req->as.load.memory, err);
    if (st == CD_OK)
        st = read_flag(obj, "restore", &req->as.load.restore, err);
    if (st == CD_OK && req->as.load.replace && req->as.load.restore)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "restore: not with \"replace\" (replace makes the snapshot the whole world; "
                       "restore puts back only its instances)");
    return st;
}

static cd_status parse_record(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    cd_status st = read_instance_list(obj, lim, req, &req->as.record.instances, err);
    if (st != CD_OK)
        return st;
    const cJSON *stop = cd_json_member(obj, "stop");
    req->as.record.stop = false;
    if (stop && (st = cd_json_bool(stop, "stop", &req->as.record.stop, err)) != CD_OK)
        return st;
    return req->as.record.stop ? CD_OK : read_snapshot_name(obj, req->as.record.name, err);
}

static cd_status parse_replay(const cJSON *obj, const cd_limits *lim, cd_request *req,
                              cd_error *err)
{
    (void)lim;
    cd_status st = read_snapshot_name(obj, req->as.replay.name, err);
    if (st != CD_OK)
        return st;
    const cJSON *enabled = cd_json_member(obj, "enabled");
    req->as.replay.enabled = true;
    if (enabled && (st = cd_json_bool(enabled, "enabled", &req->as.replay.enabled, err)) != CD_OK)
        return st;
    const cJSON *to = cd_json_member(obj, "to");
    req->as.replay.has_to = to != NULL;
    if (to == NULL)
        return CD_OK;
    int64_t frames = 0;
    if ((st = cd_json_int(to, "to", 0, INT64_MAX, &frames, err)) != CD_OK)
        return st;
    req->as.replay.to = (uint64_t)frames;
    return CD_OK;
}

/* hello: the handshake; "strict" turns unknown members into errors on this
 * connection (or back). */
static cd_status parse_hello(const cJSON *obj, const cd_limits *lim, cd_request *req,
                             cd_error *err)
{
    (void)lim;
    const cJSON *strict = cd_json_member(obj, "strict");
    req->as.hello.has_strict = strict != NULL;
    return strict ? cd_json_bool(strict, "strict", &req->as.hello.strict, err) : CD_OK;
}

/* destroy: "instance", "instances" or "scene" (every instance of it);
 * never all of the world by default. */
static cd_status parse_destroy(const cJSON *obj, const cd_limits *lim, cd_request *req,
                               cd_error *err)
{
    cd_status st = read_instance_list(obj, lim, req, &req->as.destroy.instances, err);
    if (st == CD_OK && req->as.destroy.instances.all && !req->has_scene)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "instance: required (or \"instances\", or \"scene\" for all of a scene)");
    return st;
}

/* scene: the envelope's "scene" (required) and an optional "ephemeral". */
static cd_status parse_scene(const cJSON *obj, const cd_limits *lim, cd_request *req,
                             cd_error *err)
{
    (void)lim;
    if (!req->has_scene)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "scene: required");
    const cJSON *item = cd_json_member(obj, "ephemeral");
    req->as.scene.has_ephemeral = item != NULL;
    return item ? cd_json_bool(item, "ephemeral", &req->as.scene.ephemeral, err) : CD_OK;
}

bool cd_scene_name_ok(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n > CD_SCENE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

/* The commands that read nothing beyond the envelope. */
#define parse_status parse_nothing
#define parse_scenes parse_nothing
#define parse_topology parse_nothing
#define parse_skin cd_parse_skin
#define parse_ping parse_nothing
#define parse_stats parse_nothing
#define parse_journals parse_nothing

static cd_status parse_auth(const cJSON *obj, const cd_limits *lim, cd_request *req,
                            cd_error *err)
{
    (void)lim;
    const cJSON *item = required(obj, "token", err);
    if (!item)
        return err->code;
    size_t len = cJSON_IsString(item) && item->valuestring ? strlen(item->valuestring) : 0;
    if (len == 0 || len > CD_TOKEN_MAX)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "token: must be a non-empty string of at most %u bytes", CD_TOKEN_MAX);
    memcpy(req->as.auth.token, item->valuestring, len + 1);
    req->as.auth.len = len;
    return CD_OK;
}

typedef struct command_entry {
    const char *name;
    cd_instance_rule instance;
    cd_touches touches;
    cd_access access;
    cd_payload payload;
    command_parser parse;
} command_entry;

static const command_entry commands[CD_CMD_COUNT] = {
#define COMMAND_ENTRY(ID, name_, wire, rule, touches_, access_, payload_)                   \
    [CD_CMD_##ID] = {.name = wire, .instance = rule, .touches = touches_, .access = access_, \
                     .payload = payload_, .parse = parse_##name_},
    CD_COMMAND_MAP(COMMAND_ENTRY)
#undef COMMAND_ENTRY
};

const char *cd_command_name(cd_command cmd)
{
    if ((unsigned)cmd >= CD_CMD_COUNT)
        return "unknown";
    return commands[cmd].name;
}

cd_touches cd_command_touches(cd_command cmd)
{
    return (unsigned)cmd < CD_CMD_COUNT ? commands[cmd].touches : CD_TOUCHES_NONE;
}

cd_access cd_command_access(cd_command cmd)
{
    return (unsigned)cmd < CD_CMD_COUNT ? commands[cmd].access : CD_ACCESS_WRITE;
}

bool cd_command_is_read_only(cd_command cmd)
{
    return cd_command_access(cmd) == CD_ACCESS_READ;
}

/* The lists of step, subscribe, unsubscribe and save sit at the start of their
 * payloads, so one member reaches all three. */
_Static_assert(offsetof(cd_request, as.step.instances) ==
                   offsetof(cd_request, as.subscribe.instances),
               "the id lists share one place");
_Static_assert(offsetof(cd_request, as.step.instances) == offsetof(cd_request, as.save.instances),
               "save's id list shares that place");
_Static_assert(offsetof(cd_request, as.step.instances) ==
                   offsetof(cd_request, as.record.instances),
               "record's id list shares that place");
_Static_assert(offsetof(cd_request, as.step.instances) ==
                   offsetof(cd_request, as.destroy.instances),
               "destroy's id list shares that place");

const cd_id_list *cd_request_instances(const cd_request *req)
{
    if (req == NULL || (unsigned)req->cmd >= CD_CMD_COUNT ||
        commands[req->cmd].payload != CD_PAYLOAD_LIST)
        return NULL;
    return &req->as.step.instances;
}

/* ---- envelope ----------------------------------------------------------- */

/* Frees what a command's fields own, by the payload column of its row,
 * and zeroes them. */
static void free_payload(cd_request *req)
{
    cd_payload payload = (unsigned)req->cmd < CD_CMD_COUNT ? commands[req->cmd].payload
                                                           : CD_PAYLOAD_NONE;
    if (payload == CD_PAYLOAD_PARTICLES) { /* pin, unpin, attach share the layout */
        free(req->as.pin.particles);
        free(req->as.pin.positions);
    } else if (payload == CD_PAYLOAD_LIST) {
        free(req->as.step.instances.ids);
    } else if (payload == CD_PAYLOAD_MESH) {
        cd_mesh_free(&req->as.create.mesh);
        cd_tri_mesh_free(&req->as.create.cloth_mesh);
        cd_paint_request_free(&req->as.create.paint);
    } else if (payload == CD_PAYLOAD_PAINT) {
        cd_paint_request_free(&req->as.set.paint);
    } else if (payload == CD_PAYLOAD_SKIN) {
        free(req->as.skin.positions);
        free(req->as.skin.normals);
    }
    memset(&req->as, 0, sizeof req->as);
}

void cd_request_free(cd_request *req)
{
    if (!req)
        return;
    free_payload(req);
    cJSON_Delete(req->id);
    req->id = NULL;
    free(req->line);
    req->line = NULL;
}

/* ---- strict input ------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (1..4, within `avail` bytes), or
 * 0 when it is invalid: overlong forms, surrogates, beyond U+10FFFF, cut. */
static size_t utf8_length(const unsigned char *p, size_t avail)
{
    const unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* The byte-level rules a line must keep before it is parsed at all, so
 * that nothing invalid can reach a reply (an echoed "id") or be cut short
 * in a C string: UTF-8 throughout; between tokens no control byte but TAB
 * and CR; inside strings no raw control byte at all and no \u0000 escape
 * (\\u0000, an escaped backslash before "u0000", is fine). */
static cd_status check_strict_input(const char *line, size_t len, cd_error *err)
{
    const unsigned char *p = (const unsigned char *)line;
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        const unsigned char c = p[i];
        if (c >= 0x80) {
            size_t n = utf8_length(p + i, len - i);
            if (n == 0)
                return cd_fail(err, CD_E_PARSE_ERROR, "invalid UTF-8 at byte %zu", i);
            i += n;
            continue;
        }
        if (c < 0x20) {
            if (in_string)
                return cd_fail(err, CD_E_PARSE_ERROR,
                               "raw control byte 0x%02x inside a string at byte %zu (escape it)",
                               c, i);
            if (c != '\t' && c != '\r')
                return cd_fail(err, CD_E_PARSE_ERROR, "raw control byte 0x%02x at byte %zu", c,
                               i);
        } else if (c == '"') {
            in_string = !in_string;
        } else if (c == '\\' && in_string) {
            /* An escape: the next byte is taken with it, so an escaped
             * quote or backslash is never read as a delimiter. */
            if (i + 5 < len && p[i + 1] == 'u' && p[i + 2] == '0' && p[i + 3] == '0' &&
                p[i + 4] == '0' && p[i + 5] == '0')
                return cd_fail(err, CD_E_PARSE_ERROR,
                               "\\u0000 (NUL) inside a string at byte %zu", i);
            if (i + 1 < len && p[i + 1] < 0x20)
                return cd_fail(err, CD_E_PARSE_ERROR,
                               "raw control byte 0x%02x inside a string at byte %zu (escape it)",
                               p[i + 1], i + 1);
            i += i + 1 < len && p[i + 1] < 0x80 ? 2 : 1;
            continue;
        }
        i++;
    }
    return CD_OK;
}

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Reads the envelope and the command's fields from a parsed object. */
static cd_status parse_object(const cJSON *root, const cd_limits *lim, cd_request *out,
                              cd_error *err)
{
    const cJSON *id = cd_json_member(root, "id");
    if (id) {
        if (!cJSON_IsString(id) && !(cJSON_IsNumber(id) && isfinite(id->valuedouble)))
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "id: must be a number or a string");
        out->id = cJSON_Duplicate(id, true);
        if (!out->id)
            return cd_fail(err, CD_E_INTERNAL, "id: out of memory");
    }

    const cJSON *cmd = cd_json_member(root, "cmd");
    if (!cmd)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "cmd: required");
    if (!cJSON_IsString(cmd) || !cmd->valuestring)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "cmd: must be a string");
    const command_entry *entry = NULL;
    for (size_t i = 0; i < CD_CMD_COUNT; i++) {
        if (strcmp(cmd->valuestring, commands[i].name) == 0) {
            entry = &commands[i];
            out->cmd = (cd_command)i;
            break;
        }
    }
    if (!entry) {
        /* 33 names do not fit a message: the nearest one does, and hello's
         * reply lists them all. */
        const char *names[CD_CMD_COUNT];
        for (size_t i = 0; i < CD_CMD_COUNT; i++)
            names[i] = commands[i].name;
        const char *near = cd_json_closest_name(cmd->valuestring, names, CD_CMD_COUNT);
        char quoted[QUOTE_CAP];
        cd_json_quote_safe(quoted, sizeof quoted, cmd->valuestring);
        if (near != NULL)
            return cd_fail(err, CD_E_UNKNOWN_COMMAND,
                           "unknown command \"%s\" (did you mean \"%s\"?)", quoted, near);
        return cd_fail(err, CD_E_UNKNOWN_COMMAND,
                       "unknown command \"%s\" (hello lists the commands)", quoted);
    }

    /* "scene": the envelope's, read for every command (commands.h). */
    const cJSON *scene = cd_json_member(root, "scene");
    if (scene) {
        if (!cJSON_IsString(scene) || scene->valuestring == NULL ||
            !cd_scene_name_ok(scene->valuestring))
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "scene: must be 1 to %d of A-Z a-z 0-9 . _ : -", CD_SCENE_NAME_MAX);
        memcpy(out->scene, scene->valuestring, strlen(scene->valuestring) + 1);
        out->has_scene = true;
    }

    if (entry->instance == CD_INSTANCE_REQUIRED || entry->instance == CD_INSTANCE_OPTIONAL) {
        const cJSON *instance = cd_json_member(root, "instance");
        if (instance) {
            cd_status st = cd_json_id(instance, "instance", &out->instance, err);
            if (st != CD_OK)
                return st;
            out->has_instance = true;
        } else if (entry->instance == CD_INSTANCE_REQUIRED) {
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "instance: required");
        }
    }
    return entry->parse(root, lim, out, err);
}

cd_status cd_request_parse(const char *line, size_t len, const cd_limits *limits,
                           cd_request *out, cd_error *err)
{
    assert(out != NULL);
    cd_error scratch;
    if (!err)
        err = &scratch;
    memset(out, 0, sizeof *out);
    out->cmd = CD_CMD_COUNT; /* nothing owned until a command is known */
    err->code = CD_OK;
    err->message[0] = '\0';
    const cd_limits lim = limits ? *limits : cd_default_limits();

    if (!line || len == 0)
        return cd_fail(err, CD_E_PARSE_ERROR, "not valid JSON (empty line)");
    cd_status strict = check_strict_input(line, len, err);
    if (strict != CD_OK)
        return strict;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!root) {
        size_t at = end && end >= line && end <= line + len ? (size_t)(end - line) : 0;
        return cd_fail(err, CD_E_PARSE_ERROR, "not valid JSON (error at byte %zu)", at);
    }
    size_t rest = end && end >= line && end <= line + len ? (size_t)(end - line) : len;
    while (rest < len && is_json_space(line[rest]))
        rest++;
    cd_status st;
    if (rest < len)
        st = cd_fail(err, CD_E_PARSE_ERROR, "not valid JSON (unexpected data at byte %zu)", rest);
    else if (!cJSON_IsObject(root))
        st = cd_fail(err, CD_E_PARSE_ERROR, "the request must be a JSON object");
    else {
        /* What the parse asks for is what the command knows. */
        cd_member_log log = {0};
        cd_json_log_begin(&log);
        st = parse_object(root, &lim, out, err);
        cd_json_log_end();
        if (st == CD_OK)
            cd_find_unknown_members(root, &log, out);
        cd_member_log_free(&log);
    }
    cJSON_Delete(root);
    if (st != CD_OK)
        free_payload(out);
    return st;
}
