/* Garment commands: `skin` (the animated pose for the next step),
 * `teleport`, and the painted per-vertex properties that create and set
 * carry. Counts are checked here, where the instance's vertex count is
 * known; the solver checks the values. */
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

bool cd_paint_fits(cd_conn *conn, const cd_request *req, const cd_paint_request *paint,
                   uint32_t vertices)
{
    cd_error err;
    if (cd_paint_check_count(paint, vertices, &err) == CD_OK)
        return true;
    cd_conn_send_error(conn, req->id, &err);
    return false;
}

cd_status cd_apply_paint(cd_instance *inst, const cd_paint_request *paint, cd_field_fault *fault)
{
    for (int k = 0; k < CD_PAINT_COUNT; k++) {
        if (!paint->given[k])
            continue;
        cd_status st = cd_instance_paint(inst, (cd_paint)k, paint->values[k], paint->count[k],
                                         fault);
        if (st != CD_OK)
            return st;
    }
    return CD_OK;
}

cd_dispatch_result cd_cmd_skin(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    const uint32_t n = cd_instance_particle_count(inst);
    if (req->as.skin.count != n) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "positions: %" PRIu32 " points for %" PRIu32 " vertices (one per vertex)",
                      req->as.skin.count, n);
        return CD_DISPATCH_DONE;
    }
    cd_field_fault fault;
    cd_status st = cd_instance_skin(inst, req->as.skin.positions, req->as.skin.normals, &fault);
    if (st != CD_OK) {
        cd_error err;
        cd_fail_fault(&err, st, &fault);
        cd_conn_send_error(conn, req->id, &err);
        return CD_DISPATCH_DONE;
    }
    cd_conn_send_reply(conn, cd_reply_ok(req->id));
    return CD_DISPATCH_DONE;
}

cd_dispatch_result cd_cmd_teleport(cd_conn *conn, const cd_request *req)
{
    cd_instance *inst = cd_require_instance(conn, req);
    if (inst == NULL)
        return CD_DISPATCH_DONE;
    if (!cd_vec3_in_world(req->as.teleport.pivot)) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "pivot: outside the world box (|x|, |y|, |z| <= %g m)",
                      (double)CD_WORLD_EXTENT);
        return CD_DISPATCH_DONE;
    }
    if (cd_instance_teleport(inst, req->as.teleport.translation, req->as.teleport.rotation,
                             req->as.teleport.pivot) != CD_OK) {
        cd_reply_fail(conn, req, CD_E_INVALID_ARGUMENT,
                      "translation: the instance would leave the world box (|x|, |y|, |z| <= %g m)",
                      (double)CD_WORLD_EXTENT);
        return CD_DISPATCH_DONE;
    }
    cd_conn_send_reply(conn, cd_reply_ok(req->id));
    return CD_DISPATCH_DONE;
}

void cd_announce_topology(cd_server *server, cd_instance *inst)
{
    const cd_id id = cd_instance_id(inst);
    char line[160];
    const int n = snprintf(line, sizeof line,
                           "{\"event\":\"topology\",\"instance\":%" PRIu32
                           ",\"particles\":%" PRIu32 ",\"triangles\":%" PRIu32 "}\n",
                           id, cd_instance_particle_count(inst),
                           cd_instance_triangles(inst, NULL, 0));
    if (n <= 0 || (size_t)n >= sizeof line)
        return;
    for (cd_conn *c = server->conns; c != NULL; c = c->next)
        if (!c->closing && cd_conn_is_subscribed(c, id))
            cd_conn_send_event(c, cd_event_key(CD_EVENT_KIND_TOPOLOGY, id), line, (size_t)n);
}
