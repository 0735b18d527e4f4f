/* The `stats` command: the server's counters (PROTOCOL.md, stats) read into
 * a flat struct of numbers, so a game server's health page needs no
 * allocation and nothing to free. */
#include "internal.h"

#include <string.h>

static uint64_t u64(const cdc_jdoc *d, int obj, const char *key)
{
    uint64_t v = 0;
    cdc_juint(d, cdc_jget(d, obj, key), UINT64_MAX, &v);
    return v;
}

static double num(const cdc_jdoc *d, int obj, const char *key)
{
    double v = 0;
    cdc_jdouble(d, cdc_jget(d, obj, key), &v);
    return v;
}

static clothd_code decode_stats(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                clothd_error *err)
{
    (void)c;
    (void)arg;
    if (cdc_jget(d, root, "steps") < 0 || cdc_jget(d, root, "connections") < 0)
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: stats without \"steps\" and \"connections\"");
    if (out == NULL)
        return CLOTHD_OK;
    clothd_server_stats *s = out;
    cdc_jstr_copy(d, cdc_jget(d, root, "version"), s->version, sizeof s->version, NULL);
    cdc_jstr_copy(d, cdc_jget(d, root, "simd"), s->simd, sizeof s->simd, NULL);
    s->workers = (uint32_t)u64(d, root, "workers");
    s->uptime_seconds = num(d, root, "uptimeSeconds");

    int o = cdc_jget(d, root, "connections");
    s->connections.current = u64(d, o, "current");
    s->connections.total = u64(d, o, "total");
    s->connections.refused = u64(d, o, "refused");
    s->connections.limit = u64(d, o, "limit");
    o = cdc_jget(d, root, "instances");
    s->instances.awake = u64(d, o, "awake");
    s->instances.sleeping = u64(d, o, "sleeping");
    s->instances.disabled = u64(d, o, "disabled");
    s->instances.unstable = u64(d, o, "unstable");
    s->instances.limit = u64(d, o, "limit");
    o = cdc_jget(d, root, "particles");
    s->particles.current = u64(d, o, "current");
    s->particles.limit = u64(d, o, "limit");

    o = cdc_jget(d, root, "steps");
    s->steps.total = u64(d, o, "total");
    s->steps.instance_steps = u64(d, o, "instanceSteps");
    s->steps.slow = u64(d, o, "slow");
    const int budget = cdc_jget(d, o, "budget");
    s->steps.budget_steps = u64(d, budget, "steps");
    s->steps.budget_overruns = u64(d, budget, "overruns");
    s->steps.degraded_instances = u64(d, budget, "degradedInstances");
    s->steps.per_second = num(d, o, "perSecond");
    int h = cdc_jget(d, o, "durationSeconds");
    s->steps.count = u64(d, h, "count");
    s->steps.sum = num(d, h, "sum");
    int list = cdc_jget(d, h, "bounds");
    size_t k = 0;
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next && k < CLOTHD_STATS_MAX_BUCKETS;
         i = cdc_jnext(d, i))
        cdc_jdouble(d, i, &s->steps.bounds[k++]);
    s->steps.bucket_count = k;
    list = cdc_jget(d, h, "counts");
    k = 0;
    for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next && k <= CLOTHD_STATS_MAX_BUCKETS;
         i = cdc_jnext(d, i))
        cdc_juint(d, i, UINT64_MAX, &s->steps.counts[k++]);

    o = cdc_jget(d, root, "sent");
    s->sent.reply_bytes = u64(d, o, "replyBytes");
    s->sent.event_bytes = u64(d, o, "eventBytes");
    s->sent.frame_bytes = u64(d, o, "frameBytes");
    s->sent.frames = u64(d, o, "frames");
    s->sent.frames_skipped = u64(d, o, "framesSkipped");
    o = cdc_jget(d, root, "shm");
    s->shm.size_bytes = u64(d, o, "sizeBytes");
    s->shm.frames = u64(d, o, "frames");
    s->shm.bytes = u64(d, o, "bytes");

    o = cdc_jget(d, root, "requests");
    k = 0;
    for (int i = cdc_jfirst(d, o); i >= 0 && i < (int)d->tok[o].next && k < CLOTHD_STATS_MAX_COMMANDS;
         i = cdc_jnext(d, i + 1)) { /* a member: its name at i, its value at i + 1 */
        cdc_jstr_copy(d, i, s->requests[k].name, sizeof s->requests[k].name, NULL);
        cdc_juint(d, i + 1, UINT64_MAX, &s->requests[k].count);
        k++;
    }
    s->request_kinds = k;
    o = cdc_jget(d, root, "errors");
    for (int i = cdc_jfirst(d, o); i >= 0 && i < (int)d->tok[o].next; i = cdc_jnext(d, i + 1)) {
        char name[32];
        clothd_code code = cdc_jstr_copy(d, i, name, sizeof name, NULL) ? clothd_code_from_name(name)
                                                                         : CLOTHD_E_UNKNOWN;
        if (code >= 1 && code <= CLOTHD_WIRE_CODE_COUNT)
            cdc_juint(d, i + 1, UINT64_MAX, &s->errors[code]);
    }
    return CLOTHD_OK;
}

clothd_code clothd_send_stats(clothd_client *c, clothd_ticket *ticket, clothd_error *err)
{
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_STATS, "stats", err);
    if (rc != CLOTHD_OK)
        return rc;
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_recv_stats(clothd_client *c, clothd_ticket ticket, clothd_server_stats *out, clothd_error *err)
{
    return cdc_collect(c, ticket, CDC_KIND_BIT(CDC_K_STATS), c ? cdc_deadline(c) : -1, false, decode_stats, out,
                       sizeof *out, NULL, err);
}

clothd_code clothd_get_server_stats(clothd_client *c, clothd_server_stats *out, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_stats(c, &ticket_, err), CDC_K_STATS, decode_stats, out, sizeof *out, NULL);
}
