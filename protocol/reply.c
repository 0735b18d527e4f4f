/* clothd protocol — reply lines: the envelope, float arrays, status text. */
#include "protocol.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "%.9g" of a float is at most 15 characters ("-1.17549435e-38"); one more
 * for the separating comma. */
#define FLOAT_TEXT_MAX 16

/* Adds "id" (a deep copy, when there is one) and "ok". */
static bool add_envelope(cJSON *reply, const cJSON *id, bool ok)
{
    if (id) {
        cJSON *copy = cJSON_Duplicate(id, true);
        if (!copy)
            return false;
        if (!cJSON_AddItemToObject(reply, "id", copy)) {
            cJSON_Delete(copy);
            return false;
        }
    }
    return cJSON_AddBoolToObject(reply, "ok", ok) != NULL;
}

cJSON *cd_reply_ok(const cJSON *id)
{
    cJSON *reply = cJSON_CreateObject();
    if (reply && !add_envelope(reply, id, true)) {
        cJSON_Delete(reply);
        return NULL;
    }
    return reply;
}

cJSON *cd_reply_error(const cJSON *id, const cd_error *err)
{
    cd_status code = err ? err->code : CD_E_INTERNAL;
    if (code == CD_OK)
        code = CD_E_INTERNAL; /* an error reply always carries an error code */

    /* The message, bounded and on one line whoever filled `err`. */
    char message[sizeof err->message];
    size_t n = err ? strnlen(err->message, sizeof err->message - 1) : 0;
    if (n == 0) {
        snprintf(message, sizeof message, "%s", cd_status_message(code));
    } else {
        memcpy(message, err->message, n);
        message[n] = '\0';
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)message[i] < 0x20 || message[i] == 0x7F)
                message[i] = ' ';
    }

    cJSON *reply = cJSON_CreateObject();
    if (!reply)
        return NULL;
    cJSON *error = NULL;
    bool ok = add_envelope(reply, id, false) &&
              (error = cJSON_AddObjectToObject(reply, "error")) != NULL &&
              cJSON_AddStringToObject(error, "code", cd_status_name(code)) != NULL &&
              cJSON_AddStringToObject(error, "message", message) != NULL;
    if (!ok) {
        cJSON_Delete(reply);
        return NULL;
    }
    return reply;
}

char *cd_reply_error_line(const cJSON *id, const cd_error *err, size_t *out_len)
{
    return cd_reply_print(cd_reply_error(id, err), out_len);
}

char *cd_reply_print(cJSON *reply, size_t *out_len)
{
    if (!reply)
        return NULL;
    char *text = cJSON_PrintUnformatted(reply);
    cJSON_Delete(reply);
    if (!text)
        return NULL;
    /* Copied so the result belongs to malloc whatever cJSON's hooks are. */
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (line) {
        memcpy(line, text, n);
        line[n] = '\n';
        line[n + 1] = '\0';
        if (out_len)
            *out_len = n + 1;
    }
    cJSON_free(text);
    return line;
}

/* Writes one float at `dst` (room for FLOAT_TEXT_MAX bytes) and returns its
 * length. Nine significant digits identify every float exactly. */
static size_t format_float(char *dst, float v)
{
    if (!isfinite(v)) {
        memcpy(dst, "null", 5); /* JSON has no inf or nan */
        return 4;
    }
    int n = snprintf(dst, FLOAT_TEXT_MAX, "%.9g", (double)v);
    return n > 0 && n < FLOAT_TEXT_MAX ? (size_t)n : 0;
}

bool cd_reply_add_floats(cJSON *obj, const char *name, const float *values, size_t count)
{
    if (count > SIZE_MAX / 3)
        return false;
    return cd_reply_add_float_list(obj, name, values, 3 * count);
}

bool cd_reply_add_float_list(cJSON *obj, const char *name, const float *values, size_t total)
{
    if (!obj || !name || (!values && total > 0))
        return false;
    if (total > (SIZE_MAX - 3) / FLOAT_TEXT_MAX)
        return false;
    char *text = malloc(total * FLOAT_TEXT_MAX + 3);
    if (!text)
        return false;
    size_t o = 0;
    text[o++] = '[';
    for (size_t i = 0; i < total; i++) {
        if (i > 0)
            text[o++] = ',';
        o += format_float(text + o, values[i]);
    }
    text[o++] = ']';
    text[o] = '\0';
    /* A raw member: printed verbatim, no cJSON node per number. */
    cJSON *raw = cJSON_CreateRaw(text);
    free(text);
    if (!raw)
        return false;
    if (!cJSON_AddItemToObject(obj, name, raw)) {
        cJSON_Delete(raw);
        return false;
    }
    return true;
}

static const char *type_title(cd_instance_type type)
{
    switch (type) {
    case CD_INSTANCE_CLOTH:
        return "Cloth";
    case CD_INSTANCE_SOFTBODY:
        return "Soft body";
    }
    return "Instance";
}

/* Longest instance line: two spaces, title, five 10-digit numbers, words. */
#define STATUS_LINE_MAX 128

char *cd_status_text(const cd_instance_info *infos, uint32_t count)
{
    if (!infos)
        count = 0;
    size_t cap = 64 + (size_t)count * STATUS_LINE_MAX;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    int n = snprintf(text, cap, "=== Cloth Simulation ===\nInstances: %u\n", (unsigned)count);
    size_t o = n > 0 ? (size_t)n : 0;
    for (uint32_t i = 0; i < count && o < cap; i++) {
        const cd_instance_info *in = &infos[i];
        /* The guard disables what it catches, so [UNSTABLE] says it all. */
        const char *flag = in->unstable   ? " [UNSTABLE]"
                           : !in->enabled ? " [DISABLED]"
                           : in->sleeping ? " [SLEEPING]"
                                          : "";
        n = snprintf(text + o, cap - o, "  %s %u: %u particles, %u constraints, %u colliders%s\n",
                     type_title(in->type), (unsigned)in->id, (unsigned)in->particles,
                     (unsigned)in->constraints, (unsigned)in->colliders, flag);
        if (n > 0)
            o += (size_t)n;
    }
    return text;
}
