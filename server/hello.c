/* `hello`: the handshake, modelled on Redis' HELLO. A client learns what
 * it talks to (the server's version, the protocol's, the commands it
 * knows) and sets what is per connection: `strict`, which turns the
 * warnings for unknown members into invalid_argument errors (PROTOCOL.md
 * "Unknown members"), for a client that would rather fail than be
 * silently misunderstood (a test suite, a build pipeline).
 *
 * `features` names what a client may depend on beyond protocol 1's first
 * commands, so a client fails at connect ("server lacks scenes") rather
 * than at first use; `limits` are the server's bounds (PROTOCOL.md
 * "hello"), so a client can split its work before it is refused. */
#include "internal.h"

/* What makes a feature work beyond the protocol itself. */
typedef enum feature_needs { NEEDS_NOTHING, NEEDS_DATA_DIR, NEEDS_SHM } feature_needs;

/* One row per feature a client can require. "snapshots" and "recording"
 * are listed only when --data-dir makes save/load and record/replay work,
 * "shm" unless --shm-mb 0 turned it off. */
static const struct {
    const char *name;
    feature_needs needs;
} FEATURES[] = {
    {"warnings", NEEDS_NOTHING},  /* unknown members are reported, not ignored */
    {"strict", NEEDS_NOTHING},    /* hello {"strict":true} */
    {"scenes", NEEDS_NOTHING},    /* scene members, scene/scenes commands */
    {"ephemeral", NEEDS_NOTHING}, /* connection-owned instances and scenes */
    {"softbody", NEEDS_NOTHING},  /* create {"type":"softbody"} */
    {"mesh", NEEDS_NOTHING},      /* create {"mesh":…} garments, painted properties */
    {"skin", NEEDS_NOTHING},      /* skin / skinned motion constraints */
    {"budget", NEEDS_NOTHING},    /* step budgetMs, lod, priority */
    {"snapshots", NEEDS_DATA_DIR}, /* save / load (memory snapshots work without it) */
    {"recording", NEEDS_DATA_DIR}, /* record / replay / journals */
    {"shm", NEEDS_SHM},           /* subscribe {"shm":true}: frames in shared memory */
};

static bool feature_works(feature_needs needs, const cd_server_options *opts)
{
    switch (needs) {
    case NEEDS_DATA_DIR:
        return opts->data_dir[0] != '\0';
    case NEEDS_SHM:
        return opts->shm_mb > 0;
    case NEEDS_NOTHING:
        break;
    }
    return true;
}

static void add_limits(cJSON *reply, const cd_server_options *opts)
{
    cJSON *limits = cJSON_AddObjectToObject(reply, "limits");
    if (limits == NULL)
        return;
    cJSON_AddNumberToObject(limits, "lineBytes", (double)opts->max_line);
    cJSON_AddNumberToObject(limits, "outputBytes", (double)opts->max_output);
    cJSON_AddNumberToObject(limits, "frameBytes", (double)opts->frame_budget);
    cJSON_AddNumberToObject(limits, "connections", opts->max_connections);
    cJSON_AddNumberToObject(limits, "instances", opts->max_instances);
    cJSON_AddNumberToObject(limits, "particlesPerInstance", opts->max_particles);
    cJSON_AddNumberToObject(limits, "particles", opts->max_total_particles);
    cJSON_AddNumberToObject(limits, "stepWork", opts->max_step_work);
}

cd_dispatch_result cd_cmd_hello(cd_conn *conn, const cd_request *req)
{
    if (req->as.hello.has_strict)
        conn->strict = req->as.hello.strict;
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "server", "clothd");
    cJSON_AddStringToObject(reply, "version", CD_VERSION_STRING);
    cJSON_AddNumberToObject(reply, "protocol", CD_PROTOCOL_VERSION);
    cJSON_AddBoolToObject(reply, "strict", conn->strict);
    cJSON *commands = cJSON_AddArrayToObject(reply, "commands");
    for (int i = 0; commands != NULL && i < CD_CMD_COUNT; i++)
        cJSON_AddItemToArray(commands, cJSON_CreateString(cd_command_name((cd_command)i)));
    const cd_server_options *opts = &conn->server->opts;
    cJSON *features = cJSON_AddArrayToObject(reply, "features");
    for (size_t i = 0; features != NULL && i < sizeof FEATURES / sizeof FEATURES[0]; i++)
        if (feature_works(FEATURES[i].needs, opts))
            cJSON_AddItemToArray(features, cJSON_CreateString(FEATURES[i].name));
    add_limits(reply, opts);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
