/* The handshake (PROTOCOL.md "hello"): every connection sends `hello`
 * after `auth` and the client keeps what it says (version, features,
 * limits), so that a call needing a feature the server lacks fails before
 * anything is sent, naming the feature and the server, instead of being
 * half-understood (a clothd without scenes would take "scene" as an unknown
 * member and mix every scene's instances). Required features (options) are
 * checked when the reply comes: a server that lacks one is refused at
 * connect. A server without `hello` answers unknown_command: it stays
 * usable for protocol 1's first commands, with no features known. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

bool cdc_feature_listed(const clothd_server_info *info, const char *feature)
{
    for (size_t i = 0; i < info->feature_count; i++)
        if (strcmp(info->features[i], feature) == 0)
            return true;
    return false;
}

/* "clothd at H:P lacks the feature \"x\" <what> (its hello lists: a, b)"
 * into out, with a word on --data-dir for the features it brings. */
static void lack_message(const clothd_client *c, const char *const *missing, size_t n, const char *what,
                         char *out, size_t cap)
{
    const char *where = c->endpoint;
    bool data_dir = false;
    size_t len = (size_t)snprintf(out, cap, "clothd at %s lacks the feature%s ", where, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        data_dir = data_dir || strcmp(missing[i], "snapshots") == 0 || strcmp(missing[i], "recording") == 0;
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s\"%s\"", i ? ", " : "", missing[i]);
    }
    if (len < cap)
        len += (size_t)snprintf(out + len, cap - len, " %s (", what);
    if (c->info.hello == CLOTHD_HELLO_MISSING) {
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len,
                                    "it does not answer hello, like a clothd from before the handshake: "
                                    "no features known");
    } else {
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "its hello lists: %s", c->info.feature_count ? "" : "none");
        for (size_t i = 0; i < c->info.feature_count && len < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", c->info.features[i]);
    }
    if (len < cap)
        snprintf(out + len, cap - len, "%s)",
                 data_dir ? "; clothd lists snapshots and recording only when started with --data-dir" : "");
}

clothd_code cdc_need(clothd_client *c, const char *feature, const char *what, clothd_error *err)
{
    if (c->info.hello == CLOTHD_HELLO_UNKNOWN || cdc_feature_listed(&c->info, feature))
        return CLOTHD_OK;
    char msg[sizeof err->message];
    char by[64];
    snprintf(by, sizeof by, "needed by %s", what);
    lack_message(c, &feature, 1, by, msg, sizeof msg);
    return cdc_fail(err, CLOTHD_E_INCOMPATIBLE, "%s", msg);
}

/* hello's reply into *info (zeroed first). */
static void read_hello(const cdc_jdoc *d, int root, clothd_server_info *info)
{
    memset(info, 0, sizeof *info);
    info->hello = CLOTHD_HELLO_ANSWERED;
    cdc_jstr_copy(d, cdc_jget(d, root, "server"), info->server, sizeof info->server, NULL);
    cdc_jstr_copy(d, cdc_jget(d, root, "version"), info->version, sizeof info->version, NULL);
    uint64_t v = 0;
    if (cdc_juint(d, cdc_jget(d, root, "protocol"), UINT32_MAX, &v))
        info->protocol = (uint32_t)v;
    cdc_jbool(d, cdc_jget(d, root, "strict"), &info->strict);
    int list = cdc_jget(d, root, "features");
    if (list >= 0 && cdc_jtype_of(d, list) == CDC_JARRAY) {
        for (int i = cdc_jfirst(d, list); i >= 0 && i < (int)d->tok[list].next; i = cdc_jnext(d, i)) {
            if (info->feature_count == CLOTHD_MAX_FEATURES)
                break;
            size_t len = 0;
            char *name = info->features[info->feature_count];
            if (cdc_jstr_copy(d, i, name, CLOTHD_FEATURE_NAME_MAX + 1, &len) && len > 0)
                info->feature_count++;
            else
                name[0] = '\0';
        }
    }
    int limits = cdc_jget(d, root, "limits");
    static const struct {
        const char *key;
        size_t offset;
    } fields[] = {
        {"lineBytes", offsetof(clothd_limits, line_bytes)},
        {"outputBytes", offsetof(clothd_limits, output_bytes)},
        {"frameBytes", offsetof(clothd_limits, frame_bytes)},
        {"connections", offsetof(clothd_limits, connections)},
        {"instances", offsetof(clothd_limits, instances)},
        {"particlesPerInstance", offsetof(clothd_limits, particles_per_instance)},
        {"particles", offsetof(clothd_limits, particles)},
        {"stepWork", offsetof(clothd_limits, step_work)},
    };
    for (size_t k = 0; limits >= 0 && k < sizeof fields / sizeof fields[0]; k++)
        cdc_juint(d, cdc_jget(d, limits, fields[k].key), UINT64_MAX,
                  (uint64_t *)(void *)((char *)&info->limits + fields[k].offset));
}

bool cdc_hello_wanted(const clothd_client *c)
{
    return !c->no_hello || c->strict || c->nrequire > 0;
}

bool cdc_hello_queue(clothd_client *c)
{
    if (!cdc_hello_wanted(c))
        return true;
    cdc_req r;
    if (cdc_req_begin(&r, c, CDC_K_HELLO, "hello", NULL) != CLOTHD_OK)
        return c->link != CDC_LINK_UP;
    if (c->strict)
        cdc_put_b(&r.w, "strict", clothd_b(true));
    r.role = CDC_ROLE_HELLO;
    return cdc_req_end(&r, NULL, NULL, NULL) != CLOTHD_E_NOMEM;
}

void cdc_hello_reply(clothd_client *c, const cdc_jdoc *d, int root, bool ok, const clothd_error *er)
{
    if (ok) {
        read_hello(d, root, &c->info);
    } else if (er->code == CLOTHD_E_UNKNOWN_COMMAND) {
        memset(&c->info, 0, sizeof c->info); /* a clothd from before the handshake */
        c->info.hello = CLOTHD_HELLO_MISSING;
    } else if (er->code == CLOTHD_E_UNAUTHORIZED && c->nrequire == 0) {
        return; /* refused before auth: nothing known until clothd_auth */
    } else {
        /* Refused (before auth, with features required), or a limit the
         * server closes the connection over (an error without id). */
        cdc_drop(c, er->code, true, "the server refused the connection: %s: %s", er->wire_code, er->message);
        return;
    }
    const char *missing[CLOTHD_MAX_FEATURES + 1];
    size_t n = 0;
    for (size_t i = 0; i < c->nrequire && n < CLOTHD_MAX_FEATURES; i++)
        if (!cdc_feature_listed(&c->info, c->require[i]))
            missing[n++] = c->require[i];
    if (n > 0) {
        char msg[sizeof c->close_reason];
        lack_message(c, missing, n, "required by this client", msg, sizeof msg);
        cdc_drop(c, CLOTHD_E_INCOMPATIBLE, true, "%s", msg);
    }
}

clothd_server_info clothd_server(const clothd_client *c)
{
    clothd_server_info none;
    memset(&none, 0, sizeof none);
    return c != NULL ? c->info : none;
}

bool clothd_has_feature(const clothd_client *c, const char *feature)
{
    return c != NULL && feature != NULL && cdc_feature_listed(&c->info, feature);
}

static clothd_code send_hello(clothd_client *c, clothd_opt_b strict, clothd_ticket *ticket, clothd_error *err)
{
    if (strict.set && strict.value) {
        clothd_code rc = cdc_need(c, "strict", "hello {\"strict\":true}", err);
        if (rc != CLOTHD_OK)
            return rc;
    }
    cdc_req r;
    clothd_code rc = cdc_req_begin(&r, c, CDC_K_HELLO, "hello", err);
    if (rc != CLOTHD_OK)
        return rc;
    cdc_put_b(&r.w, "strict", strict);
    return cdc_req_end(&r, ticket, NULL, err);
}

static clothd_code decode_hello(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                clothd_error *err)
{
    (void)err;
    const clothd_opt_b *strict = arg;
    read_hello(d, root, &c->info);
    if (strict->set)
        c->strict = strict->value; /* asked again on every reconnect */
    if (out != NULL)
        *(clothd_server_info *)out = c->info;
    return CLOTHD_OK;
}

static clothd_code hello_request(clothd_client *c, clothd_opt_b strict, clothd_server_info *out,
                                 clothd_error *err)
{
    CDC_BLOCKING(c, err, send_hello(c, strict, &ticket_, err), CDC_K_HELLO, decode_hello, out, sizeof *out,
                 &strict);
}

clothd_code clothd_hello(clothd_client *c, clothd_opt_b strict, clothd_server_info *out, clothd_error *err)
{
    if (c == NULL) {
        if (out != NULL)
            memset(out, 0, sizeof *out);
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    }
    return hello_request(c, strict, out, err);
}
