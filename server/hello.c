/* `hello`: the handshake, modelled on Redis' HELLO. A client learns what
 * it talks to (the server's version, the protocol's, the commands it
 * knows) and sets what is per connection: `strict`, which turns the
 * warnings for unknown members into invalid_argument errors (PROTOCOL.md
 * "Unknown members"), for a client that would rather fail than be
 * silently misunderstood (a test suite, a build pipeline). */
#include "internal.h"

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
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}
