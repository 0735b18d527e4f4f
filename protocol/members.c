/* The forward-compatibility rule (PROTOCOL.md "Unknown members"): a
 * member that no part of a command reads is not refused but reported, in
 * the reply's "warnings", or refused on a strict connection.
 *
 * What a command reads is what its parser asks for: every
 * cd_json_member(obj, name) of the parse is logged (json_fields.c), found
 * or not, so the handler is the one definition of its members and a
 * member added to a parser is known at once. A member of an object the
 * parse looked into that was never asked for is unknown; its suggestion is
 * the nearest name the parse asked for on that same object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_fields.h"

/* Longest path built while walking (then cut to cd_unknown_member.path). */
#define PATH_CAP 256

static bool looked_into(const cd_member_log *log, const cJSON *obj)
{
    for (size_t i = 0; i < log->count; i++)
        if (log->lookups[i].obj == obj)
            return true;
    return false;
}

static bool asked(const cd_member_log *log, const cJSON *obj, const char *name)
{
    for (size_t i = 0; i < log->count; i++)
        if (log->lookups[i].obj == obj && strcmp(log->lookups[i].name, name) == 0)
            return true;
    return false;
}

/* The name asked for on `obj` nearest to `given`, when near (the first of
 * equally near ones, in the order the parser asked), or NULL. */
static const char *nearest_asked(const cd_member_log *log, const cJSON *obj, const char *given)
{
    const char *best = NULL;
    int best_distance = 3;
    for (size_t i = 0; i < log->count; i++) {
        if (log->lookups[i].obj != obj)
            continue;
        const int d = cd_json_name_distance(given, log->lookups[i].name);
        if (d < best_distance && cd_json_name_near(given, log->lookups[i].name, d)) {
            best_distance = d;
            best = log->lookups[i].name;
        }
    }
    return best;
}

static void record(cd_request *out, const char *path, const char *near)
{
    if (out->unknown_count < CD_UNKNOWN_KEPT) {
        cd_unknown_member *m = &out->unknown[out->unknown_count];
        cd_json_quote_safe(m->path, sizeof m->path, path);
        m->near = near;
    }
    out->unknown_count++;
}

/* Appends `.name` (or `name` at the top, `[i]` for a list entry) to the
 * path at `len`; returns the new length (cut at PATH_CAP). */
static size_t extend(char *path, size_t len, const char *name, long index)
{
    int n = name != NULL ? snprintf(path + len, PATH_CAP - len, "%s%s", len ? "." : "", name)
                         : snprintf(path + len, PATH_CAP - len, "[%ld]", index);
    size_t grown = len + (n > 0 ? (size_t)n : 0);
    return grown < PATH_CAP ? grown : PATH_CAP - 1;
}

static bool is_container(const cJSON *item)
{
    return cJSON_IsObject(item) || cJSON_IsArray(item);
}

static void walk(const cJSON *node, char *path, size_t len, const cd_member_log *log,
                 cd_request *out)
{
    if (cJSON_IsArray(node)) {
        long i = 0;
        for (const cJSON *e = node->child; e != NULL; e = e->next, i++) {
            if (!is_container(e))
                continue;
            walk(e, path, extend(path, len, NULL, i), log, out);
            path[len] = '\0';
        }
        return;
    }
    const bool checked = looked_into(log, node);
    for (const cJSON *m = node->child; m != NULL; m = m->next) {
        const size_t at = extend(path, len, m->string, 0);
        if (checked && !asked(log, node, m->string))
            record(out, path, nearest_asked(log, node, m->string));
        else if (is_container(m))
            walk(m, path, at, log, out);
        path[len] = '\0';
    }
}

void cd_find_unknown_members(const cJSON *root, const cd_member_log *log, cd_request *out)
{
    out->unknown_count = 0;
    if (log->overflow || !cJSON_IsObject(root))
        return;
    char path[PATH_CAP] = "";
    walk(root, path, 0, log, out);
}

/* "unknown member \"widht\" (did you mean \"width\"?)" */
static void describe(char *buf, size_t cap, const cd_unknown_member *m)
{
    if (m->near != NULL)
        snprintf(buf, cap, "unknown member \"%s\" (did you mean \"%s\"?)", m->path, m->near);
    else
        snprintf(buf, cap, "unknown member \"%s\"", m->path);
}

cJSON *cd_request_warnings(const cd_request *req)
{
    if (req == NULL || req->unknown_count == 0)
        return NULL;
    cJSON *list = cJSON_CreateArray();
    const uint32_t kept = req->unknown_count < CD_UNKNOWN_KEPT ? req->unknown_count
                                                               : CD_UNKNOWN_KEPT;
    char text[200];
    for (uint32_t i = 0; list != NULL && i < kept; i++) {
        describe(text, sizeof text, &req->unknown[i]);
        if (!cJSON_AddItemToArray(list, cJSON_CreateString(text))) {
            cJSON_Delete(list);
            return NULL;
        }
    }
    if (list != NULL && req->unknown_count > kept) {
        snprintf(text, sizeof text, "... and %" PRIu32 " more unknown members",
                 req->unknown_count - kept);
        if (!cJSON_AddItemToArray(list, cJSON_CreateString(text))) {
            cJSON_Delete(list);
            return NULL;
        }
    }
    return list;
}

cd_status cd_fail_unknown_member(cd_error *err, const cd_request *req)
{
    if (req == NULL || req->unknown_count == 0)
        return CD_OK;
    const cd_unknown_member *m = &req->unknown[0];
    if (m->near != NULL)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: unknown member (did you mean \"%s\"?)",
                       m->path, m->near);
    return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: unknown member", m->path);
}
