/* clothd protocol — the wire contract v1, implemented once.
 *
 * Requests: one JSON object per line. cd_request_parse() turns a line into a
 * typed cd_request, validating everything that can be checked without the
 * world (types, ranges, finiteness, configured limits). Checks that need the
 * world (does the instance exist, is a particle index in range) belong to
 * the server, which reports them with the same codes.
 *
 * Replies: one JSON object per line, built with cJSON; cd_reply_* helpers
 * keep the envelope ({"id":…,"ok":…}) in one place.
 *
 * Frames: a 40-byte little-endian header followed by f32 positions;
 * cd_frame_* encode and decode it (see PROTOCOL.md for the layout).
 */
#ifndef CLOTHD_PROTOCOL_H
#define CLOTHD_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../solver/solver.h"

#define CD_PROTOCOL_VERSION 1

#include "commands.h"

/* Wire name of a command ("create", "addCollider", ...); "unknown" out of
 * range. */
const char *cd_command_name(cd_command cmd);
/* The row of the command in CD_COMMAND_MAP (out of range: CD_TOUCHES_NONE,
 * CD_ACCESS_WRITE). */
cd_touches cd_command_touches(cd_command cmd);
cd_access cd_command_access(cd_command cmd);
/* True for the commands a read-only connection may send (ping, status, get,
 * topology, subscribe, unsubscribe): CD_ACCESS_READ in the table. */
bool cd_command_is_read_only(cd_command cmd);

/* Every request field whose value is one of a set of names. A wrong value
 * is invalid_argument listing them: `type: unknown collider type "cube"
 * (one of "sphere", "capsule", "plane", "taperedCapsule" or "box")`. One
 * row per field: the parsers read through the row, a test walks them all.
 * X(ENUM, command, field, what, names): `names(i)` is the i-th wire name,
 * NULL past the last. */
#define CD_WIRE_ENUM_MAP(X)                                                                      \
    X(INSTANCE_TYPE, "create", "type", "instance type", cd_instance_type_wire)                  \
    X(SHAPE, "create", "shape", "shape", cd_shape_wire)                                         \
    X(WIND_MODEL, "create", "windModel", "wind model", cd_wind_model_name)                      \
    X(COLLIDER_TYPE, "addCollider", "type", "collider type", cd_collider_type_name)             \
    X(CHANNEL, "subscribe", "channels", "channel", cd_channel_wire)

typedef enum cd_wire_enum_id {
#define CD_WIRE_ENUM_ID(ID, command, field, what, names) CD_ENUM_##ID,
    CD_WIRE_ENUM_MAP(CD_WIRE_ENUM_ID)
#undef CD_WIRE_ENUM_ID
    CD_ENUM_COUNT
} cd_wire_enum_id;

typedef struct cd_wire_enum {
    const char *command; /* a command that reads it */
    const char *field;   /* its member ("channels": each entry of the list) */
    const char *what;    /* in the message: "unknown <what> ..." */
    const char *(*name)(int index);
} cd_wire_enum;

extern const cd_wire_enum cd_wire_enums[CD_ENUM_COUNT];

/* The names of the rows above that are the protocol's own: "cloth",
 * "softbody"; "box", "ball"; "positions", "velocities", "normals". */
const char *cd_instance_type_wire(int index);
const char *cd_shape_wire(int index);
const char *cd_channel_wire(int index);

/* A member a request gave that its command does not read (PROTOCOL.md
 * "Unknown members"): its path ("widht"; inside a nested object
 * "parent.child", in a list "list[2].child"), cut to fit, and the name
 * the command reads there that lies within 2 edits of it, or NULL. */
typedef struct cd_unknown_member {
    char path[72];
    const char *near; /* static */
} cd_unknown_member;

/* The first unknown members a request keeps (the rest are counted). */
#define CD_UNKNOWN_KEPT 8u

/* Limits the parser enforces (the server passes its configuration). */
typedef struct cd_limits {
    uint32_t max_particles; /* per instance; create beyond it: limit_exceeded */
    uint32_t max_list;      /* entries in any list field (particles, instances) */
    /* particles x substeps x iterations of one instance (0: no limit); a
     * create beyond it: limit_exceeded (set is checked by the solver) */
    uint64_t max_step_work;
} cd_limits;

/* max_particles 262144, max_list 1000000, max_step_work 8388608 (2^23). */
cd_limits cd_default_limits(void);

/* An error with a message that names the offending field. */
typedef struct cd_error {
    cd_status code;
    char message[240];
} cd_error;

/* Formats into err (printf-style); returns code for `return cd_fail(...)`. */
cd_status cd_fail(cd_error *err, cd_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The solver's fault (cd_field_fault) as an error: "field: reason", and
 * for a server-wide limit the flag that sets it: " (--max-instances)",
 * " (--max-total-particles)", " (--max-step-work)". Returns code. */
cd_status cd_fail_fault(cd_error *err, cd_status code, const cd_field_fault *fault);

/* A list of ids ("instances"). `all` when the field was absent and the
 * command means "every instance" (step, subscribe, unsubscribe). */
typedef struct cd_id_list {
    bool all;
    uint32_t count;
    cd_id *ids; /* owned */
} cd_id_list;

/* Per-subscription frame options (subscribe's "quantize", "every" and
 * "channels"). */
typedef struct cd_frame_options {
    bool quantize;  /* 16-bit positions within the bounding box (flags bit 0) */
    uint32_t every; /* only frames whose number % every == 0; 1..1000 */
    /* the channels after the positions: CD_FRAME_FLAG_VELOCITIES and/or
     * CD_FRAME_FLAG_NORMALS, 0 for positions alone (the default) */
    uint16_t channels;
    /* the frames go into the server's shared-memory ring and the
     * connection receives 56-byte references to them (flags bit 3;
     * PROTOCOL.md "Shared-memory frames") */
    bool shm;
} cd_frame_options;

#define CD_FRAME_EVERY_MAX 1000u

/* A snapshot's name (save, load): 1..CD_SNAPSHOT_NAME_MAX of A-Z a-z 0-9
 * . _ -, not starting with a dot; the file is <--data-dir>/<name>.cds, so
 * a name is never a path. */
#define CD_SNAPSHOT_NAME_MAX 64
bool cd_snapshot_name_ok(const char *name);

/* A scene's name (the envelope's "scene"; PROTOCOL.md "Scenes"): 1 to
 * CD_SCENE_NAME_MAX bytes of A-Z a-z 0-9 . _ : -. An instance created
 * without one is in CD_SCENE_DEFAULT. */
#define CD_SCENE_NAME_MAX 64
#define CD_SCENE_DEFAULT "default"
bool cd_scene_name_ok(const char *name);

/* get's optional arrays ("velocities", "normals": false when absent). */
typedef struct cd_get_options {
    bool velocities, normals;
} cd_get_options;

/* step's budgetMs (and --step-budget-ms) at most: a minute. */
#define CD_STEP_BUDGET_MAX_MS 60000

/* The longest token `auth` takes (and a token file may hold). */
#define CD_TOKEN_MAX 1024u

/* Painted properties as a request gives them (protocol/paint.c). */
typedef struct cd_paint_request {
    bool given[CD_PAINT_COUNT];
    float *values[CD_PAINT_COUNT]; /* owned; NULL with given: clear */
    uint32_t count[CD_PAINT_COUNT];
} cd_paint_request;

typedef struct cd_request {
    cd_command cmd;
    cJSON *id;          /* owned copy of the request's "id", or NULL */
    bool has_instance;  /* "instance" was given */
    bool has_scene;     /* "scene" was given (a valid name, in `scene`) */
    char scene[CD_SCENE_NAME_MAX + 1];
    /* The message as received (owned: a JSON line, or a binary request,
     * which starts with 0x89), kept only while a recording asks for it
     * (server/recording.c); NULL otherwise. */
    char *line;
    size_t line_len;
    /* The members no part of the command read, in the order given: the
     * first CD_UNKNOWN_KEPT of them, and how many there were (0: none, and
     * always for a binary request). Filled when the parse succeeds. */
    cd_unknown_member unknown[CD_UNKNOWN_KEPT];
    uint32_t unknown_count;
    cd_id instance;
    union {
        /* grid cloth: def; soft body: def holds the options and mesh the
         * vertices and tetrahedra (owned); mesh cloth: def and cloth_mesh
         * (owned; vertex_count 0 for a grid) */
        struct {
            cd_instance_type type;
            cd_cloth_def def;
            cd_tet_mesh mesh;
            cd_tri_mesh cloth_mesh;
            cd_paint_request paint;
            bool ephemeral; /* tied to the creating connection */
        } create;
        /* pin and unpin; positions is NULL when none were given (pin in place) */
        struct {
            uint32_t count;
            uint32_t *particles; /* owned */
            cd_vec3 *positions;  /* owned, count entries, or NULL */
        } pin;
        struct { cd_vec3 wind; } wind;             /* !has_instance: global */
        struct { cd_vec3 gravity; } gravity;
        /* attachment: a transform name, "" for none (def.attachment is 0) */
        struct { cd_collider_def def; char attachment[CD_TRANSFORM_NAME_MAX]; } add_collider;
        struct {
            cd_id collider;
            bool has_position, has_normal, has_rotation;
            cd_vec3 position, normal;
            cd_quat rotation; /* boxes: unit within CD_ROTATION_UNIT_TOLERANCE */
        } move_collider;
        struct { cd_id collider; } remove_collider;
        struct { bool enabled; } enable;
        /* step, subscribe and unsubscribe (which has no options) begin
         * with their list: see cd_request_instances */
        /* budget_ms: the soft time budget, 0 none; has_budget false: the
         * server's default (--step-budget-ms) */
        struct { cd_id_list instances; float dt; bool has_budget; float budget_ms; } step;
        struct { cd_id_list instances; cd_frame_options options; } subscribe;
        /* "instance", "instances" or the envelope's "scene" (one of them) */
        struct { cd_id_list instances; } destroy;
        /* scene: "ephemeral" given, and its value (absent: a query) */
        struct { bool has_ephemeral, ephemeral; } scene;
        struct { bool has_enabled, enabled; } debug; /* no "enabled": query */
        struct { bool has_strict, strict; } hello; /* no "strict": unchanged */
        cd_get_options get;
        /* a token of 1..CD_TOKEN_MAX bytes, NUL-terminated (strict input:
         * it holds no NUL, no control byte, valid UTF-8) */
        struct { char token[CD_TOKEN_MAX + 1]; size_t len; } auth;
        /* the instances (none listed: all) and the snapshot's name */
        /* memory: kept in the server's memory for this connection, not in a file. */
        struct { cd_id_list instances; char name[CD_SNAPSHOT_NAME_MAX + 1]; bool memory; } save;
        /* memory: this connection's memory snapshot; restore: each saved
         * instance replaces the live one of its id (the others stay). */
        struct { char name[CD_SNAPSHOT_NAME_MAX + 1]; bool replace, memory, restore; } load;
        /* the instances (none listed: all), the journal's name; or stop */
        struct {
            cd_id_list instances;
            char name[CD_SNAPSHOT_NAME_MAX + 1];
            bool stop;
        } record;
        /* replay up to `to` frames (all without it); `enabled` false leaves
         * the replayed instances disabled */
        struct { char name[CD_SNAPSHOT_NAME_MAX + 1]; bool has_to; uint64_t to; bool enabled; } replay;
        /* the options given (merge with cd_cloth_def_merge) */
        struct { cd_cloth_def def; uint64_t present; cd_paint_request paint; } set;
        /* 3 floats per point, owned; normals NULL when not given */
        struct { float *positions, *normals; uint32_t count, normal_count; } skin;
        struct {
            char name[CD_TRANSFORM_NAME_MAX];
            cd_vec3 position;
            cd_quat rotation;
            bool has_frame, frame; /* "inertiaFrame" given, and its value */
        } transform;
        struct { cd_vec3 translation, pivot; cd_quat rotation; } teleport;
        /* the same first members as pin; positions are transform-local offsets */
        struct {
            uint32_t count;
            uint32_t *particles; /* owned */
            cd_vec3 *positions;  /* owned, count entries, or NULL */
            char name[CD_TRANSFORM_NAME_MAX];
        } attach;
    } as;
} cd_request;

/* The id list of a CD_INSTANCE_LIST command (step, subscribe,
 * unsubscribe, save, record, destroy), NULL for any other. With "instance" it holds that one id. */
const cd_id_list *cd_request_instances(const cd_request *req);

/* Copies into `dst` the options of a `set` request that were given. */
void cd_cloth_def_merge(cd_cloth_def *dst, const cd_cloth_def *src, uint64_t present);
/* "maxDistance: 400 values for 401 vertices (...)" unless each given
 * painted property has 1 value or `vertices` (protocol/paint.c). */
cd_status cd_paint_check_count(const cd_paint_request *paint, uint32_t vertices, cd_error *err);

/* Parses one line (without its '\n'). Returns CD_OK and fills `out`, or an
 * error code with `err` filled. Either way out->id holds the request id when
 * one could be read, and the caller must call cd_request_free(out). */
cd_status cd_request_parse(const char *line, size_t len, const cd_limits *limits,
                           cd_request *out, cd_error *err);
void cd_request_free(cd_request *req); /* NULL is fine */

/* The request's unknown members as the reply's "warnings": a JSON array
 * of `unknown member "widht" (did you mean "width"?)`, one per member (the
 * kept ones, then "... and N more unknown members"), or NULL when there
 * is none (or no memory). The caller owns the result. */
cJSON *cd_request_warnings(const cd_request *req);
/* For a strict connection: the first unknown member as an error,
 * `widht: unknown member (did you mean "width"?)`. Returns
 * CD_E_INVALID_ARGUMENT (CD_OK when there is none). */
cd_status cd_fail_unknown_member(cd_error *err, const cd_request *req);

/* Binary requests (protocol/binary_request.c; PROTOCOL.md "Binary
 * requests"): `skin` and `pin` as the frame layout's twin. A message
 * starts with 0x89 'C' 'L' 'R' (never the first byte of a JSON line) and
 * holds its total length at bytes 8..11. */
#define CD_BINARY_HEADER 32u
/* False when the first min(4, available) bytes are not the magic. */
bool cd_binary_request_magic(const unsigned char *msg, size_t available);
/* The message's length, 0 while its header is incomplete. */
size_t cd_binary_request_length(const unsigned char *msg, size_t available);
/* A complete message of `len` bytes into the request its JSON twin makes
 * (cmd skin or pin); errors as cd_request_parse, out->id the request id
 * when non-zero. The caller frees with cd_request_free either way. */
cd_status cd_binary_request_parse(const unsigned char *msg, size_t len, const cd_limits *limits,
                                  cd_request *out, cd_error *err);

/* ---- replies ------------------------------------------------------------- */

/* {"id":<id>,"ok":true}; id may be NULL (then no "id" member). The caller
 * adds members and hands it to cd_reply_print. */
cJSON *cd_reply_ok(const cJSON *id);
/* {"id":…,"ok":false,"error":{"code":…,"message":…}}: the object (NULL
 * on allocation failure), or printed as a line. */
cJSON *cd_reply_error(const cJSON *id, const cd_error *err);
char *cd_reply_error_line(const cJSON *id, const cd_error *err, size_t *out_len);
/* Prints compactly with a trailing '\n', deletes `reply`. Free the result
 * with free(). NULL on allocation failure. */
char *cd_reply_print(cJSON *reply, size_t *out_len);

/* A JSON array of 3*count floats, printed with 9 significant digits (exact
 * for f32), added to `obj` under `name`. Returns false on OOM. */
bool cd_reply_add_floats(cJSON *obj, const char *name, const float *values, size_t count);
/* The same for a flat list of `total` floats. */
bool cd_reply_add_float_list(cJSON *obj, const char *name, const float *values, size_t total);

/* The seed's console block:
 *   === Cloth Simulation ===
 *   Instances: 3
 *     Cloth 1: 100 particles, 490 constraints, 2 colliders
 *     Cloth 3: 25 particles, 110 constraints, 0 colliders [DISABLED]
 * Free the result with free(). */
char *cd_status_text(const cd_instance_info *infos, uint32_t count);

/* ---- frames -------------------------------------------------------------- */

#define CD_FRAME_HEADER_SIZE 40u
#define CD_FRAME_MAGIC0 0x89u
#define CD_FRAME_VERSION 1u
/* flags bit 0: the payload is quantized (bounding box + u16 per axis). */
#define CD_FRAME_FLAG_QUANTIZED 0x0001u
/* flags bit 1: each particle's velocity follows the positions (subscribe's
 * channel "velocities"); bit 2: its unit normal follows (channel
 * "normals"). */
#define CD_FRAME_FLAG_VELOCITIES 0x0002u
#define CD_FRAME_FLAG_NORMALS 0x0004u
#define CD_FRAME_FLAGS_KNOWN 0x0007u
/* flags bit 3: not a frame but a reference to one in the server's
 * shared-memory ring (subscribe's "shm"): the header of the frame it
 * names (flags | bit 3, length CD_FRAME_SHARED_SIZE), then u64 the frame's
 * position in the ring's data (a running byte count: the offset is
 * position mod the ring's size) and u32 its length, u32 reserved (0). */
#define CD_FRAME_FLAG_SHARED 0x0008u
#define CD_FRAME_SHARED_SIZE 56u
#define CD_FRAME_QUANTIZED_PREFIX 24u /* f32[3] min, f32[3] max after the header */

/* The frame flags a subscription's frames carry: its form. */
static inline uint16_t cd_frame_options_flags(const cd_frame_options *opts)
{
    return (uint16_t)((opts->quantize ? CD_FRAME_FLAG_QUANTIZED : 0u) | opts->channels);
}

typedef struct cd_frame_header {
    uint16_t version;
    uint16_t flags;
    uint32_t length;   /* total bytes, header included */
    uint32_t instance;
    uint64_t frame;
    double time;
    uint32_t count;    /* particles */
} cd_frame_header;

/* What one frame carries: 3 floats per particle for each array; velocities
 * and normals are read only when the flags ask for them. */
typedef struct cd_frame_content {
    cd_id instance;
    uint64_t frame;
    double time;
    uint32_t count;
    const float *positions;
    float origin[3]; /* added to each position: the solver's local frame (0: none) */
    const float *velocities;
    const float *normals; /* unit, or (0, 0, 0) for none */
} cd_frame_content;

/* Bytes of a frame of `count` particles with `flags` (CD_FRAME_FLAGS_KNOWN
 * bits): 40, then per particle 12 (positions), 12 (velocities), 12
 * (normals); quantized: 40 + 24 + 6N, velocities 24 + 6N, normals 4N. */
size_t cd_frame_size_flags(uint32_t count, uint16_t flags);
/* Writes cd_frame_size_flags(c->count, flags) bytes to `out`: the header,
 * the positions, then the velocities (flag bit 1) and the normals (bit 2)
 * in the form bit 0 says. Allocates nothing. */
void cd_frame_encode_content(uint8_t *out, uint16_t flags, const cd_frame_content *c);
/* Bytes of a frame for `count` particles (header + 12 * count). */
size_t cd_frame_size(uint32_t count);
/* Writes cd_frame_size(count) bytes to `out` (flags 0). */
void cd_frame_encode(uint8_t *out, cd_id instance, uint64_t frame, double time,
                     const float *positions, uint32_t count);
/* Bytes of a quantized frame (flags bit 0): header + 24 (bounding box) + 6 * count. */
size_t cd_frame_size_quantized(uint32_t count);
/* Writes cd_frame_size_quantized(count) bytes to `out`: flags bit 0, the
 * positions' bounding box as f32 min[3], max[3] at offset 40, then per
 * particle x, y, z as u16 q = round((p - min) / (max - min) * 65535) at
 * offset 64 (computed in double, C round(): halves away from zero, clamped to
 * [0, 65535]; an axis with max == min gives 0). Quantized velocities follow
 * the same rule in their own box. */
void cd_frame_encode_quantized(uint8_t *out, cd_id instance, uint64_t frame, double time,
                               const float *positions, uint32_t count);
/* A normal in 2 x 16 bits (octahedral, computed in double): with
 * s = |x| + |y| + |z|, u = x / s, v = y / s, folded when z < 0 to
 * ((1 - |v|) sgn u, (1 - |u|) sgn v) (sgn 0 = +1), each stored as
 * round((u + 1) / 2 * 65535). (0, 0) is reserved for "no normal" (a zero
 * vector); the one direction that would round to it, (0, 0, -1), is written
 * (65535, 65535), which decodes to the same. */
void cd_frame_octahedral_encode(const float n[3], uint16_t out[2]);
/* The inverse, unit length (in double, rounded to float); (0, 0) gives
 * (0, 0, 0). */
void cd_frame_octahedral_decode(const uint16_t q[2], float out[3]);
/* Checks magic, version, flags (bits 0-3 are known) and length
 * (cd_frame_size_flags; CD_FRAME_SHARED_SIZE with bit 3) against `len`;
 * CD_E_INVALID_ARGUMENT with a message otherwise. Positions start at
 * CD_FRAME_HEADER_SIZE. */
cd_status cd_frame_decode_header(const uint8_t *data, size_t len, cd_frame_header *out,
                                 cd_error *err);
/* Decodes the positions of a frame whose header `h` was read by
 * cd_frame_decode_header into `out` (3 * h->count floats), plain or
 * quantized: p = min + (q / 65535) * (max - min), computed in double. */
void cd_frame_decode_positions(const uint8_t *data, const cd_frame_header *h, float *out);
/* The velocities (flag bit 1) or normals (bit 2) the same way: false, and
 * nothing written, when the frame does not carry them. */
bool cd_frame_decode_velocities(const uint8_t *data, const cd_frame_header *h, float *out);
bool cd_frame_decode_normals(const uint8_t *data, const cd_frame_header *h, float *out);
/* Writes into `out` the CD_FRAME_SHARED_SIZE-byte reference to the frame
 * whose header is `named` (its flags, length, instance, frame, time and
 * count) at ring position `position`. */
void cd_frame_encode_shared(uint8_t *out, const cd_frame_header *named, uint64_t position);
/* The ring position and length a reference (flags bit 3, checked by
 * cd_frame_decode_header) names. */
void cd_frame_decode_shared(const uint8_t *data, uint64_t *position, uint32_t *len);

#endif
