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

/* One row per feature a client can require. "snapshots" and "recording"
 * are listed only when --data-dir makes save/load and record/replay work. */
static const struct {
    const char *name;
    bool needs_data_dir;
} FEATURES[] = {
    {"warnings", false},  /* unknown members are reported, not ignored */
    {"strict", false},    /* hello {"strict":true} */
    {"scenes", false},    /* scene members, scene/scenes commands */
    {"ephemeral", false}, /* connection-owned instances and scenes */
    {"softbody", false},  /* create {"type":"softbody"} */
    {"mesh", false},      /* create {"mesh":…} garments, painted properties */
    {"skin", false},      /* skin / skinned motion constraints */
    {"budget", false},    /* step budgetMs, lod, priority */
    {"snapshots", true},  /* save / load (memory snapshots work without it) */
    {"recording", true},  /* record / replay / journals */
};

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
        if (!FEATURES[i].needs_data_dir || opts->data_dir[0] != '\0')
            cJSON_AddItemToArray(features, cJSON_CreateString(FEATURES[i].name));
    add_limits(reply, opts);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
