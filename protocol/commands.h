/* clothd protocol — the one list of commands.
 *
 * A command is one row here. Each module expands the rows it needs:
 *   protocol/request.c  the enum's wire names, parse_<name>, the envelope's
 *                       "instance" rule and how the payload is freed;
 *   server/dispatch.c   the handler cd_cmd_<name> of every row, and which
 *                       instances a request touches (to defer it while one
 *                       of them is being stepped);
 *   the access column   what a read-only connection may send.
 * Adding a command is one row, one parse_<name> (or parse_nothing), one
 * cd_cmd_<name> and their tests.
 *
 * X(ENUM, name, "wire", instance rule, touches, access, payload)
 *
 * instance rule (the envelope's "instance" member):
 *   CD_INSTANCE_IGNORED   not used (an "instance" member is ignored)
 *   CD_INSTANCE_REQUIRED  "instance: required" when absent
 *   CD_INSTANCE_OPTIONAL  absent means server-wide (wind)
 *   CD_INSTANCE_LIST      "instance" or "instances" or neither (= all, or all of
 *                         the envelope's "scene" when it names one)
 * The envelope's "scene" (protocol.h, PROTOCOL.md "Scenes") is read for
 * every row: a filter where the row names instances, the scene acted on
 * by create, status, scene and scenes, ignored by the others.
 * touches (what must not be mid-step when the request runs):
 *   CD_TOUCHES_NONE       nothing
 *   CD_TOUCHES_ONE        the request's instance
 *   CD_TOUCHES_OPTIONAL   the request's instance when given (wind: the
 *                         global wind is snapshotted into each step job)
 *   CD_TOUCHES_LISTED     the listed instances, or all (all of the scene) when
 *                         none is listed
 *   CD_TOUCHES_ALL        every instance
 * access: CD_ACCESS_READ (allowed with a read-only token) or CD_ACCESS_WRITE.
 * payload (what cd_request_free frees): CD_PAYLOAD_NONE, CD_PAYLOAD_PARTICLES
 *   (as.pin: particles, positions), CD_PAYLOAD_LIST (as.step / as.subscribe /
 *   as.save / as.record / as.destroy: the id list), CD_PAYLOAD_MESH (as.create: the soft
 *   body's or the mesh cloth's mesh, the paint), CD_PAYLOAD_PAINT (as.set:
 *   the paint), CD_PAYLOAD_SKIN (as.skin: positions, normals).
 *
 * Rows are in enum order; new rows go at the end.
 */
#ifndef CLOTHD_PROTOCOL_COMMANDS_H
#define CLOTHD_PROTOCOL_COMMANDS_H

#define CD_COMMAND_MAP(X)                                                                         \
    X(CREATE, create, "create", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_WRITE,            \
      CD_PAYLOAD_MESH)                                                                            \
    X(DESTROY, destroy, "destroy", CD_INSTANCE_LIST, CD_TOUCHES_LISTED, CD_ACCESS_WRITE,          \
      CD_PAYLOAD_LIST)                                                                            \
    X(PIN, pin, "pin", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,                     \
      CD_PAYLOAD_PARTICLES)                                                                       \
    X(UNPIN, unpin, "unpin", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,               \
      CD_PAYLOAD_PARTICLES)                                                                       \
    X(WIND, wind, "wind", CD_INSTANCE_OPTIONAL, CD_TOUCHES_OPTIONAL, CD_ACCESS_WRITE,             \
      CD_PAYLOAD_NONE)                                                                            \
    X(GRAVITY, gravity, "gravity", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,         \
      CD_PAYLOAD_NONE)                                                                            \
    X(ADD_COLLIDER, add_collider, "addCollider", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE,            \
      CD_ACCESS_WRITE, CD_PAYLOAD_NONE)                                                           \
    X(MOVE_COLLIDER, move_collider, "moveCollider", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE,         \
      CD_ACCESS_WRITE, CD_PAYLOAD_NONE)                                                           \
    X(REMOVE_COLLIDER, remove_collider, "removeCollider", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE,   \
      CD_ACCESS_WRITE, CD_PAYLOAD_NONE)                                                           \
    X(ENABLE, enable, "enable", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,            \
      CD_PAYLOAD_NONE)                                                                            \
    X(STEP, step, "step", CD_INSTANCE_LIST, CD_TOUCHES_LISTED, CD_ACCESS_WRITE, CD_PAYLOAD_LIST)  \
    X(GET, get, "get", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_READ, CD_PAYLOAD_NONE)     \
    X(SUBSCRIBE, subscribe, "subscribe", CD_INSTANCE_LIST, CD_TOUCHES_LISTED, CD_ACCESS_READ,     \
      CD_PAYLOAD_LIST)                                                                            \
    X(UNSUBSCRIBE, unsubscribe, "unsubscribe", CD_INSTANCE_LIST, CD_TOUCHES_NONE,                 \
      CD_ACCESS_READ, CD_PAYLOAD_LIST)                                                            \
    X(STATUS, status, "status", CD_INSTANCE_IGNORED, CD_TOUCHES_ALL, CD_ACCESS_READ,              \
      CD_PAYLOAD_NONE)                                                                            \
    X(DEBUG, debug, "debug", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_WRITE,               \
      CD_PAYLOAD_NONE)                                                                            \
    X(SET, set, "set", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE, CD_PAYLOAD_PAINT)   \
    X(TRANSFORM, transform, "transform", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,   \
      CD_PAYLOAD_NONE)                                                                            \
    X(ATTACH, attach, "attach", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,            \
      CD_PAYLOAD_PARTICLES)                                                                       \
    X(TOPOLOGY, topology, "topology", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_READ,       \
      CD_PAYLOAD_NONE)                                                                            \
    X(PING, ping, "ping", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ, CD_PAYLOAD_NONE)  \
    X(AUTH, auth, "auth", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ, CD_PAYLOAD_NONE)  \
    X(STATS, stats, "stats", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ, CD_PAYLOAD_NONE) \
    X(SKIN, skin, "skin", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE, CD_PAYLOAD_SKIN)  \
    X(TELEPORT, teleport, "teleport", CD_INSTANCE_REQUIRED, CD_TOUCHES_ONE, CD_ACCESS_WRITE,      \
      CD_PAYLOAD_NONE)                                                                            \
    X(SAVE, save, "save", CD_INSTANCE_LIST, CD_TOUCHES_LISTED, CD_ACCESS_WRITE, CD_PAYLOAD_LIST)  \
    X(LOAD, load, "load", CD_INSTANCE_IGNORED, CD_TOUCHES_ALL, CD_ACCESS_WRITE, CD_PAYLOAD_NONE)  \
    X(RECORD, record, "record", CD_INSTANCE_LIST, CD_TOUCHES_LISTED, CD_ACCESS_WRITE,             \
      CD_PAYLOAD_LIST)                                                                            \
    X(REPLAY, replay, "replay", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_WRITE,            \
      CD_PAYLOAD_NONE)                                                                            \
    X(JOURNALS, journals, "journals", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ,       \
      CD_PAYLOAD_NONE)                                                                            \
    X(HELLO, hello, "hello", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ, CD_PAYLOAD_NONE) \
    X(SCENE, scene, "scene", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_WRITE,               \
      CD_PAYLOAD_NONE)                                                                            \
    X(SCENES, scenes, "scenes", CD_INSTANCE_IGNORED, CD_TOUCHES_NONE, CD_ACCESS_READ,             \
      CD_PAYLOAD_NONE)

typedef enum cd_command {
#define CD_COMMAND_ENUM(ID, name, wire, rule, touches, access, payload) CD_CMD_##ID,
    CD_COMMAND_MAP(CD_COMMAND_ENUM)
#undef CD_COMMAND_ENUM
    CD_CMD_COUNT
} cd_command;

typedef enum cd_instance_rule {
    CD_INSTANCE_IGNORED,
    CD_INSTANCE_REQUIRED,
    CD_INSTANCE_OPTIONAL,
    CD_INSTANCE_LIST,
} cd_instance_rule;

typedef enum cd_touches {
    CD_TOUCHES_NONE,
    CD_TOUCHES_ONE,
    CD_TOUCHES_OPTIONAL,
    CD_TOUCHES_LISTED,
    CD_TOUCHES_ALL,
} cd_touches;

typedef enum cd_access {
    CD_ACCESS_READ,
    CD_ACCESS_WRITE,
} cd_access;

typedef enum cd_payload {
    CD_PAYLOAD_NONE,
    CD_PAYLOAD_PARTICLES,
    CD_PAYLOAD_LIST,
    CD_PAYLOAD_MESH,
    CD_PAYLOAD_PAINT,
    CD_PAYLOAD_SKIN,
} cd_payload;

#endif
