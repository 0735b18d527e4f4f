/* A client's current scene, and a set of endpoints with a lazy connection
 * each (PROTOCOL.md, "Scenes" and "Sharding"). clothd_shards_scene places
 * the scene (placement.c), connects to its endpoint when there is no live
 * connection (requiring the "scenes" feature of its hello), and makes the
 * scene current on it; clothd_shards_scenes asks every endpoint. An endpoint that cannot be
 * reached is an error naming it: never a silent move to another endpoint,
 * which would split the scene between two servers. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every connection requires it: a clothd without scenes would take "scene"
 * as an unknown member, warn, and mix every scene's instances. */
static const char SCENES_FEATURE[] = "scenes";

struct clothd_shards {
    size_t count;
    char **endpoints;     /* as given (the hash reads them) */
    char **hosts;         /* parsed, brackets removed; or the socket path of "unix:PATH" */
    uint16_t *ports;      /* 0 for a "unix:PATH" endpoint */
    clothd_client **clients; /* NULL until first used */
    clothd_options options;  /* host ignored; token points at `token`, require at `require` */
    char *token;
    const char **require;    /* the options' features (the caller's strings, copied) and "scenes" */
    char **require_copies;
    size_t nrequire;
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

/* "host:port" or "[v6]:port" into an owned host and a port, "unix:PATH"
 * into an owned path and port 0 ("unix:" and digits only is host "unix");
 * false when not one. */
static bool parse_endpoint(const char *endpoint, char **host, uint16_t *port)
{
    static const char UNIX_PREFIX[] = "unix:";
    const char *path = strncmp(endpoint, UNIX_PREFIX, sizeof UNIX_PREFIX - 1) == 0 ? endpoint + sizeof UNIX_PREFIX - 1
                                                                                     : NULL;
    if (path != NULL && path[strspn(path, "0123456789")] != '\0') {
        *host = copy_n(path, strlen(path));
        *port = 0;
        return *host != NULL;
    }
    if (path != NULL && path[0] == '\0')
        return false;
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
                                      "endpoint \"%.200s\": expected \"host:port\" with a port from 1 to 65535, "
                                      "or \"unix:PATH\"",
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
    s->options.unix_path = NULL;
    if (s->options.token != NULL) {
        s->token = copy_n(s->options.token, strlen(s->options.token));
        if (s->token == NULL) {
            clothd_shards_free(s);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
        s->options.token = s->token;
    }
    size_t asked = s->options.require != NULL ? s->options.require_count : 0;
    s->require = calloc(asked + 1, sizeof *s->require);
    s->require_copies = calloc(asked + 1, sizeof *s->require_copies);
    if (s->require == NULL || s->require_copies == NULL) {
        clothd_shards_free(s);
        return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < asked; i++) {
        const char *f = s->options.require[i];
        if (f == NULL || strcmp(f, SCENES_FEATURE) == 0)
            continue; /* NULL: clothd_connect names it */
        if ((s->require_copies[s->nrequire] = copy_n(f, strlen(f))) == NULL) {
            clothd_shards_free(s);
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
        }
        s->require[s->nrequire] = s->require_copies[s->nrequire];
        s->nrequire++;
    }
    s->require[s->nrequire++] = SCENES_FEATURE;
    s->options.require = s->require;
    s->options.require_count = s->nrequire;
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
    for (size_t i = 0; s->require_copies != NULL && i < s->nrequire; i++)
        free(s->require_copies[i]);
    free(s->require_copies);
    free(s->require);
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

/* The live connection to endpoint i, opened when there is none (or the
 * last one is gone); an error names the endpoint (and `scene`, if any). */
static clothd_code open_endpoint(clothd_shards *s, size_t i, const char *scene, clothd_error *err)
{
    if (s->clients[i] != NULL)
        clothd_poll(s->clients[i], 0, NULL, NULL); /* notices a server that went away meanwhile */
    if (s->clients[i] != NULL && clothd_link_state(s->clients[i]) == CLOTHD_LINK_CLOSED) {
        clothd_close(s->clients[i]); /* gone for good: connect again below */
        s->clients[i] = NULL;
    }
    if (s->clients[i] != NULL)
        return CLOTHD_OK;
    clothd_options o = s->options;
    if (s->ports[i] == 0) {
        o.unix_path = s->hosts[i];
    } else {
        o.host = s->hosts[i];
        o.port = s->ports[i];
    }
    clothd_error why;
    clothd_code rc = clothd_connect(&o, &s->clients[i], &why);
    if (rc == CLOTHD_OK)
        return CLOTHD_OK;
    s->clients[i] = NULL;
    if (scene != NULL)
        cdc_fail(err, rc, "endpoint %s (scene %s): %s; the scene is not moved to another endpoint",
                 s->endpoints[i], scene, why.message);
    else
        cdc_fail(err, rc, "endpoint %s: %s", s->endpoints[i], why.message);
    if (err != NULL)
        snprintf(err->wire_code, sizeof err->wire_code, "%s", why.wire_code);
    return rc;
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
    clothd_code rc = open_endpoint(s, i, scene, err);
    if (rc != CLOTHD_OK)
        return rc;
    rc = clothd_use_scene(s->clients[i], scene, err);
    if (rc == CLOTHD_OK)
        *out = s->clients[i];
    return rc;
}

static int by_scene(const void *a, const void *b)
{
    return strcmp(((const clothd_scene_info *)a)->scene, ((const clothd_scene_info *)b)->scene);
}

clothd_code clothd_shards_scenes(clothd_shards *s, clothd_scene_info **list, size_t *count, clothd_error *err)
{
    if (list != NULL)
        *list = NULL;
    if (count != NULL)
        *count = 0;
    if (s == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "shards: NULL");
    clothd_scene_info *all = NULL;
    size_t n = 0;
    clothd_code rc = CLOTHD_OK;
    for (size_t i = 0; i < s->count && rc == CLOTHD_OK; i++) {
        rc = open_endpoint(s, i, NULL, err);
        if (rc != CLOTHD_OK)
            break;
        /* Every scene, whichever is current there (and it stays current). */
        clothd_client *c = s->clients[i];
        char *current = c->scene;
        c->scene = NULL;
        clothd_scene_info *one = NULL;
        size_t k = 0;
        clothd_error why;
        rc = clothd_scenes(c, NULL, &one, &k, &why);
        c->scene = current;
        if (rc != CLOTHD_OK) {
            cdc_fail(err, rc, "endpoint %s: %s", s->endpoints[i], why.message);
            if (err != NULL)
                snprintf(err->wire_code, sizeof err->wire_code, "%s", why.wire_code);
            break;
        }
        if (k == 0)
            continue;
        clothd_scene_info *grown = realloc(all, (n + k) * sizeof *all);
        if (grown == NULL) {
            free(one);
            rc = cdc_fail(err, CLOTHD_E_NOMEM, "out of memory");
            break;
        }
        all = grown;
        for (size_t j = 0; j < k; j++) {
            all[n + j] = one[j];
            all[n + j].endpoint = s->endpoints[i];
        }
        n += k;
        free(one);
    }
    if (rc != CLOTHD_OK) {
        free(all);
        return rc;
    }
    if (n > 1)
        qsort(all, n, sizeof *all, by_scene);
    if (count != NULL)
        *count = n;
    if (list != NULL)
        *list = all;
    else
        free(all);
    cdc_ok(err);
    return CLOTHD_OK;
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
