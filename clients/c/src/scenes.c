/* `scenes`: the server's list of scenes (PROTOCOL.md "scenes"), one entry
 * per scene with its instance count and whether a connection holds it.
 * clothd_shards_scenes (shards.c) merges the lists of several servers. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct scenes_out {
    clothd_scene_info *list;
    size_t count;
} scenes_out;

static clothd_code send_scenes(clothd_client *c, const char *scene, clothd_ticket *ticket, clothd_error *err)
{
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_SCENES, "scenes", err);
    if (rc != CLOTHD_OK)
        return rc;
    cdc_put_str(&r.w, "scene", scene);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_scenes(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                 clothd_error *err)
{
    (void)c;
    (void)arg;
    scenes_out *o = out;
    int list = cdc_jget(d, root, "scenes");
    if (list < 0 || cdc_jtype_of(d, list) != CDC_JARRAY)
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: scenes without a \"scenes\" array");
    size_t n = d->tok[list].count;
    if (n > 0 && (o->list = calloc(n, sizeof *o->list)) == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i)) {
        clothd_scene_info *s = &o->list[o->count];
        uint64_t v = 0;
        if (!cdc_jstr_copy(d, cdc_jget(d, i, "scene"), s->scene, sizeof s->scene, NULL)) {
            free(o->list);
            o->list = NULL;
            o->count = 0;
            return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: a scenes entry without \"scene\"");
        }
        if (cdc_juint(d, cdc_jget(d, i, "instances"), UINT32_MAX, &v))
            s->instances = (uint32_t)v;
        cdc_jbool(d, cdc_jget(d, i, "ephemeral"), &s->ephemeral);
        o->count++;
    }
    return CLOTHD_OK;
}

static clothd_code scenes_request(clothd_client *c, const char *scene, scenes_out *got, clothd_error *err)
{
    CDC_BLOCKING(c, err, send_scenes(c, scene, &ticket_, err), CDC_K_SCENES, decode_scenes, got, sizeof *got,
                 NULL);
}

clothd_code clothd_scenes(clothd_client *c, const char *scene, clothd_scene_info **list, size_t *count,
                          clothd_error *err)
{
    scenes_out got = {NULL, 0};
    clothd_code rc = scenes_request(c, scene, &got, err);
    if (count != NULL)
        *count = rc == CLOTHD_OK ? got.count : 0;
    if (list != NULL && rc == CLOTHD_OK)
        *list = got.list;
    else
        free(got.list);
    return rc;
}
