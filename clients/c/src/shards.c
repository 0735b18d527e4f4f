/* A client's current scene, and a set of endpoints with a lazy connection
 * each (PROTOCOL.md, "Scenes" and "Sharding"). clothd_shards_scene places
 * the scene (placement.c), connects to its endpoint when there is no live
 * connection (and checks with `hello` that the server has scenes), and
 * makes the scene current on it. An endpoint that cannot be
 * reached is an error naming it: never a silent move to another endpoint,
 * which would split the scene between two servers. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct clothd_shards {
    size_t count;
    char **endpoints;     /* as given (the hash reads them) */
    char **hosts;         /* parsed, brackets removed */
    uint16_t *ports;
    clothd_client **clients; /* NULL until first used */
    clothd_options options;  /* host ignored; token points at `token` */
    char *token;
};

static char *copy_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

clothd_code clothd_use_scene(clothd_client *c, const char *scene, clothd_error *err)
{
    if (c == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "client: NULL");
    char *copy = NULL;
    if (scene != NULL) {
        if (!clothd_scene_name_valid(scene))
            return cdc_fail(err, CLOTHD_E_USAGE, "scene: \"%.80s\" is not 1 to 64 of A-Z a-z 0-9 . _ : -",
                            scene);
        if (c->scene != NULL && strcmp(c->scene, scene) == 0) {
            cdc_ok(err);
            return CLOTHD_OK;
        }
        copy = copy_n(scene, strlen(scene));
        if (copy == NULL)
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    }
    free(c->scene);
    c->scene = copy;
    cdc_ok(err);
    return CLOTHD_OK;
}

const char *clothd_current_scene(const clothd_client *c)
{
    return c != NULL ? c->scene : NULL;
}

/* "host:port" or "[v6]:port" into an owned host and a port; false when not one. */
static bool parse_endpoint(const char *endpoint, char **host, uint16_t *port)
{
    const char *colon = strrchr(endpoint, ':');
    if (colon == NULL || colon == endpoint || colon[1] == '\0')
        return false;
    unsigned long value = 0;
    for (const char *p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || value > 65535)
            return false;
        value = value * 10 + (unsigned long)(*p - '0');
    }
    if (value < 1 || value > 65535)
        return false;
    const char *h = endpoint;
    size_t n = (size_t)(colon - endpoint);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    if (n == 0)
        return false;
    *host = copy_n(h, n);
    *port = (uint16_t)value;
    return *host != NULL;
}

/* Whether the connection's server lists the "scene" command in its hello
 * (a clothd from before scenes would take "scene" as an unknown member,
 * warn, and mix every scene's instances). */
static clothd_code check_scenes(clothd_client *c, bool *has, clothd_error *err)
{
    char *line = NULL;
    size_t len = 0;
    *has = false;
    clothd_code rc = clothd_request_json(c, "hello", NULL, &line, &len, err);
    if (rc == CLOTHD_OK) {
        cdc_jdoc d = {0};
        char msg[64];
        if (cdc_jparse(&d, line, len, msg, sizeof msg)) {
            int commands = cdc_jget(&d, 0, "commands");
            int i = cdc_jtype_of(&d, commands) == CDC_JARRAY ? cdc_jfirst(&d, commands) : -1;
            for (uint32_t k = 0; i >= 0 && k < d.tok[commands].count; k++, i = cdc_jnext(&d, i))
                *has = *has || cdc_jstr_eq(&d, i, "scene");
        }
        cdc_jdoc_free(&d);
    }
    clothd_free(line);
    return rc;
}

clothd_code clothd_shards_new(const char *const *endpoints, size_t count, const clothd_options *o,
                              clothd_shards **out, clothd_error *err)
{
    if (out == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "out: NULL");
    *out = NULL;
    if (endpoints == NULL || count == 0)
        return cdc_fail(err, CLOTHD_E_USAGE, "endpoints: none");
    clothd_shards *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    s->endpoints = calloc(count, sizeof *s->endpoints);
    s->hosts = calloc(count, sizeof *s->hosts);
    s->ports = calloc(count, sizeof *s->ports);
    s->clients = calloc(count, sizeof *s->clients);
    if (s->endpoints == NULL || s->hosts == NULL || s->ports == NULL || s->clients == NULL) {
        clothd_shards_free(s);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        s->count = i + 1; /* what clothd_shards_free walks */
        const char *e = endpoints[i];
        if (e == NULL || !parse_endpoint(e, &s->hosts[i], &s->ports[i])) {
            clothd_code rc = cdc_fail(err, CLOTHD_E_USAGE,
                                      "endpoint \"%.200s\": expected \"host:port\" with a port from 1 to 65535",
                                      e ? e : "(null)");
            clothd_shards_free(s);
            return rc;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(s->endpoints[j], e) == 0) {
                clothd_code rc = cdc_fail(err, CLOTHD_E_USAGE, "endpoint %.200s: listed twice", e);
                clothd_shards_free(s);
                return rc;
            }
        }
        s->endpoints[i] = copy_n(e, strlen(e));
        if (s->endpoints[i] == NULL) {
            clothd_shards_free(s);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
    }
    if (o != NULL)
        s->options = *o;
    s->options.host = NULL;
    s->options.port = 0;
    if (s->options.token != NULL) {
        s->token = copy_n(s->options.token, strlen(s->options.token));
        if (s->token == NULL) {
            clothd_shards_free(s);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
        s->options.token = s->token;
    }
    *out = s;
    cdc_ok(err);
    return CLOTHD_OK;
}

void clothd_shards_free(clothd_shards *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->count; i++) {
        if (s->clients != NULL)
            clothd_close(s->clients[i]);
        if (s->endpoints != NULL)
            free(s->endpoints[i]);
        if (s->hosts != NULL)
            free(s->hosts[i]);
    }
    free(s->clients);
    free(s->endpoints);
    free(s->hosts);
    free(s->ports);
    free(s->token);
    free(s);
}

static size_t place(const clothd_shards *s, const char *scene)
{
    if (s == NULL || !clothd_scene_name_valid(scene))
        return (size_t)-1;
    return clothd_place_scene((const char *const *)s->endpoints, s->count, scene);
}

const char *clothd_shards_endpoint(const clothd_shards *s, const char *scene)
{
    size_t i = place(s, scene);
    return i == (size_t)-1 ? NULL : s->endpoints[i];
}

clothd_code clothd_shards_scene(clothd_shards *s, const char *scene, clothd_client **out, clothd_error *err)
{
    if (out != NULL)
        *out = NULL;
    if (s == NULL || out == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "%s: NULL", s == NULL ? "shards" : "out");
    size_t i = place(s, scene);
    if (i == (size_t)-1)
        return cdc_fail(err, CLOTHD_E_USAGE, "scene: \"%.80s\" is not 1 to 64 of A-Z a-z 0-9 . _ : -",
                        scene ? scene : "(null)");
    if (s->clients[i] != NULL)
        clothd_poll(s->clients[i], 0, NULL, NULL); /* notices a server that went away meanwhile */
    if (s->clients[i] != NULL && clothd_link_state(s->clients[i]) == CLOTHD_LINK_CLOSED) {
        clothd_close(s->clients[i]); /* gone for good: connect again below */
        s->clients[i] = NULL;
    }
    if (s->clients[i] == NULL) {
        clothd_options o = s->options;
        o.host = s->hosts[i];
        o.port = s->ports[i];
        clothd_error why;
        bool has_scenes = false;
        clothd_code rc = clothd_connect(&o, &s->clients[i], &why);
        if (rc == CLOTHD_OK)
            rc = check_scenes(s->clients[i], &has_scenes, &why);
        if (rc != CLOTHD_OK) {
            clothd_close(s->clients[i]);
            s->clients[i] = NULL;
            cdc_fail(err, rc, "endpoint %s (scene %s): %s; the scene is not moved to another endpoint",
                     s->endpoints[i], scene, why.message);
            if (err != NULL)
                snprintf(err->wire_code, sizeof err->wire_code, "%s", why.wire_code);
            return rc;
        }
        if (!has_scenes) {
            clothd_close(s->clients[i]);
            s->clients[i] = NULL;
            return cdc_fail(err, CLOTHD_E_PROTOCOL,
                            "endpoint %s: its hello lists no \"scene\" command: sharding needs a clothd with "
                            "scenes (this one would mix every scene's instances)",
                            s->endpoints[i]);
        }
    }
    clothd_code rc = clothd_use_scene(s->clients[i], scene, err);
    if (rc == CLOTHD_OK)
        *out = s->clients[i];
    return rc;
}

size_t clothd_shards_count(const clothd_shards *s)
{
    return s != NULL ? s->count : 0;
}

const char *clothd_shards_endpoint_at(const clothd_shards *s, size_t i)
{
    return s != NULL && i < s->count ? s->endpoints[i] : NULL;
}

clothd_client *clothd_shards_client_at(const clothd_shards *s, size_t i)
{
    return s != NULL && i < s->count ? s->clients[i] : NULL;
}
