/* clothd protocol — readers for JSON request fields (see json_fields.h). */
#include "json_fields.h"

#include <assert.h>
#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest label an element message builds ("positions[4294967295]"). */
#define LABEL_CAP 96

/* The log of the parse running on this thread, if any. */
static _Thread_local cd_member_log *active_log;

void cd_json_log_begin(cd_member_log *log)
{
    assert(active_log == NULL);
    active_log = log;
}

void cd_json_log_end(void)
{
    active_log = NULL;
}

void cd_member_log_free(cd_member_log *log)
{
    if (log == NULL)
        return;
    free(log->lookups);
    *log = (cd_member_log){0};
}

static void log_lookup(cd_member_log *log, const cJSON *obj, const char *name)
{
    for (size_t i = log->count; i-- > 0;)
        if (log->lookups[i].obj == obj && strcmp(log->lookups[i].name, name) == 0)
            return;
    if (log->count == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 64;
        cd_member_lookup *grown = realloc(log->lookups, cap * sizeof *grown);
        if (grown == NULL) {
            log->overflow = true;
            return;
        }
        log->lookups = grown;
        log->cap = cap;
    }
    log->lookups[log->count++] = (cd_member_lookup){.obj = obj, .name = name};
}

const cJSON *cd_json_member(const cJSON *obj, const char *name)
{
    if (!cJSON_IsObject(obj) || !name)
        return NULL;
    if (active_log != NULL)
        log_lookup(active_log, obj, name);
    return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* ---- scalars ------------------------------------------------------------ */

static bool is_integral(double d)
{
    return isfinite(d) && floor(d) == d;
}

cd_status cd_json_int(const cJSON *item, const char *label, int64_t min, int64_t max,
                      int64_t *out, cd_error *err)
{
    bool ok = cJSON_IsNumber(item);
    double d = ok ? item->valuedouble : 0.0;
    /* Compare as doubles first; the cast below is then in range. */
    ok = ok && is_integral(d) && d >= (double)min && d <= (double)max && fabs(d) < 9.0e18;
    if (!ok) {
        if (max == INT32_MAX || max == INT64_MAX) /* no upper bound worth stating */
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be an integer >= %" PRId64,
                           label, min);
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "%s: must be an integer in [%" PRId64 ", %" PRId64 "]", label, min, max);
    }
    *out = (int64_t)d;
    return CD_OK;
}

/* "in [0, 1]", "> 0", "<= 5", or "" for an unbounded range. */
static void describe_range(char *buf, size_t cap, const cd_float_range *r)
{
    if (r->has_min && r->has_max)
        snprintf(buf, cap, " in %c%.15g, %.15g%c", r->min_open ? '(' : '[', r->min, r->max,
                 r->max_open ? ')' : ']');
    else if (r->has_min)
        snprintf(buf, cap, " %s %.15g", r->min_open ? ">" : ">=", r->min);
    else if (r->has_max)
        snprintf(buf, cap, " %s %.15g", r->max_open ? "<" : "<=", r->max);
    else
        buf[0] = '\0';
}

static bool in_range(double v, const cd_float_range *r)
{
    if (r->has_min && (r->min_open ? !(v > r->min) : !(v >= r->min)))
        return false;
    if (r->has_max && (r->max_open ? !(v < r->max) : !(v <= r->max)))
        return false;
    return true;
}

cd_status cd_json_float(const cJSON *item, const char *label, const cd_float_range *range,
                        float *out, cd_error *err)
{
    static const cd_float_range unbounded = {0};
    if (!range)
        range = &unbounded;
    char what[80];
    describe_range(what, sizeof what, range);

    if (!cJSON_IsNumber(item))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be a number%s", label, what);
    double d = item->valuedouble;
    if (!isfinite(d))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be finite", label);
    if (fabs(d) > (double)FLT_MAX)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "%s: must be finite as a 32-bit float (magnitude <= %.9g)", label,
                       (double)FLT_MAX);
    float f = (float)d;
    /* Check the float too: 1e-50 rounds to 0, which is not "> 0". */
    if (!in_range(d, range) || !in_range((double)f, range))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be a number%s", label, what);
    *out = f;
    return CD_OK;
}

cd_status cd_json_bool(const cJSON *item, const char *label, bool *out, cd_error *err)
{
    if (!cJSON_IsBool(item))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be true or false", label);
    *out = cJSON_IsTrue(item);
    return CD_OK;
}

cd_status cd_json_id(const cJSON *item, const char *label, cd_id *out, cd_error *err)
{
    int64_t v = 0;
    cd_status st = cd_json_int(item, label, 0, UINT32_MAX, &v, err);
    if (st == CD_OK)
        *out = (cd_id)v;
    return st;
}

cd_status cd_json_index(const cJSON *item, const char *label, uint32_t *out, cd_error *err)
{
    if (!cJSON_IsNumber(item) || !is_integral(item->valuedouble) || item->valuedouble < 0)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be a non-negative integer", label);
    if (item->valuedouble > (double)UINT32_MAX)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be at most %" PRIu32, label,
                       UINT32_MAX);
    *out = (uint32_t)item->valuedouble;
    return CD_OK;
}

/* ---- vectors ------------------------------------------------------------ */

cd_status cd_json_vec3(const cJSON *item, const char *label, cd_vec3 *out, cd_error *err)
{
    double c[3];
    int n = 0;
    const cJSON *e;
    if (!cJSON_IsArray(item))
        goto bad;
    cJSON_ArrayForEach(e, item) {
        if (n == 3 || !cJSON_IsNumber(e))
            goto bad;
        double d = e->valuedouble;
        if (!isfinite(d) || fabs(d) > (double)FLT_MAX)
            goto bad;
        c[n++] = d;
    }
    if (n != 3)
        goto bad;
    out->x = (float)c[0];
    out->y = (float)c[1];
    out->z = (float)c[2];
    return CD_OK;
bad:
    return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be an array of 3 finite numbers", label);
}

cd_status cd_json_quat(const cJSON *item, const char *label, cd_quat *out, cd_error *err)
{
    float q[4];
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 4)
        goto bad;
    for (int i = 0; i < 4; i++) {
        const cJSON *c = cJSON_GetArrayItem(item, i);
        if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || fabs(c->valuedouble) > 1e6)
            goto bad;
        q[i] = (float)c->valuedouble;
    }
    *out = (cd_quat){q[0], q[1], q[2], q[3]};
    return CD_OK;
bad:
    return cd_fail(err, CD_E_INVALID_ARGUMENT,
                   "%s: must be a quaternion [x, y, z, w] of 4 finite numbers", label);
}

cd_status cd_json_direction(const cJSON *item, const char *label, cd_vec3 *out, cd_error *err)
{
    cd_vec3 v;
    cd_status st = cd_json_vec3(item, label, &v, err);
    if (st != CD_OK)
        return st;
    /* Doubles: no overflow for |c| <= FLT_MAX, no underflow for denormals. */
    double x = v.x, y = v.y, z = v.z;
    double len = sqrt(x * x + y * y + z * z);
    if (!(len > 0.0))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must not be zero-length", label);
    out->x = (float)(x / len);
    out->y = (float)(y / len);
    out->z = (float)(z / len);
    return CD_OK;
}

/* ---- arrays ------------------------------------------------------------- */

/* Checks that `item` is an array of at most max_list entries; *count is its
 * length. */
static cd_status array_count(const cJSON *item, const char *label, uint32_t max_list,
                             uint32_t *count, cd_error *err)
{
    if (!cJSON_IsArray(item))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be an array", label);
    uint64_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, item)
        n++;
    if (n > max_list)
        return cd_fail(err, CD_E_LIMIT_EXCEEDED,
                       "%s: %" PRIu64 " entries exceed the limit of %" PRIu32, label, n,
                       max_list);
    *count = (uint32_t)n;
    return CD_OK;
}

/* Allocates `n` elements of `size` bytes; NULL for n == 0 or failure
 * (`*failed` tells them apart). */
static void *alloc_array(uint32_t n, size_t size, bool *failed)
{
    *failed = false;
    if (n == 0)
        return NULL;
    void *p = calloc(n, size);
    *failed = p == NULL;
    return p;
}

/* One loop for every element kind; `ctx` is the reader's (a range). */
typedef cd_status (*element_reader)(const cJSON *item, const char *label, const void *ctx,
                                    void *out, cd_error *err);

static cd_status read_id_element(const cJSON *item, const char *label, const void *ctx,
                                 void *out, cd_error *err)
{
    (void)ctx;
    return cd_json_id(item, label, out, err);
}

static cd_status read_index_element(const cJSON *item, const char *label, const void *ctx,
                                    void *out, cd_error *err)
{
    (void)ctx;
    return cd_json_index(item, label, out, err);
}

static cd_status read_vec3_element(const cJSON *item, const char *label, const void *ctx,
                                   void *out, cd_error *err)
{
    (void)ctx;
    return cd_json_vec3(item, label, out, err);
}

static cd_status read_array(const cJSON *item, const char *label, uint32_t max_list,
                            size_t elem_size, element_reader read, const void *ctx, void **out,
                            uint32_t *count, cd_error *err)
{
    uint32_t n = 0;
    cd_status st = array_count(item, label, max_list, &n, err);
    if (st != CD_OK)
        return st;
    bool failed;
    unsigned char *data = alloc_array(n, elem_size, &failed);
    if (failed)
        return cd_fail(err, CD_E_INTERNAL, "%s: out of memory for %" PRIu32 " entries", label, n);
    uint32_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, item) {
        char elem_label[LABEL_CAP];
        snprintf(elem_label, sizeof elem_label, "%s[%" PRIu32 "]", label, i);
        st = read(e, elem_label, ctx, data + (size_t)i * elem_size, err);
        if (st != CD_OK) {
            free(data);
            return st;
        }
        i++;
    }
    *out = data;
    *count = n;
    return CD_OK;
}

cd_status cd_json_id_array(const cJSON *item, const char *label, uint32_t max_list,
                           cd_id **out, uint32_t *count, cd_error *err)
{
    void *data = NULL;
    cd_status st = read_array(item, label, max_list, sizeof(cd_id), read_id_element, NULL, &data,
                              count, err);
    if (st == CD_OK)
        *out = data;
    return st;
}

cd_status cd_json_index_array(const cJSON *item, const char *label, uint32_t max_list,
                              uint32_t **out, uint32_t *count, cd_error *err)
{
    void *data = NULL;
    cd_status st = read_array(item, label, max_list, sizeof(uint32_t), read_index_element, NULL,
                              &data, count, err);
    if (st == CD_OK)
        *out = data;
    return st;
}

cd_status cd_json_vec3_array(const cJSON *item, const char *label, uint32_t max_list,
                             cd_vec3 **out, uint32_t *count, cd_error *err)
{
    void *data = NULL;
    cd_status st = read_array(item, label, max_list, sizeof(cd_vec3), read_vec3_element, NULL, &data,
                              count, err);
    if (st == CD_OK)
        *out = data;
    return st;
}

static cd_status read_float_element(const cJSON *item, const char *label, const void *ctx,
                                    void *out, cd_error *err)
{
    return cd_json_float(item, label, ctx, out, err);
}

cd_status cd_json_float_array(const cJSON *item, const char *label, uint32_t max_list,
                              const cd_float_range *range, float **out, uint32_t *count,
                              cd_error *err)
{
    void *data = NULL;
    cd_status st = read_array(item, label, max_list, sizeof(float), read_float_element, range,
                              &data, count, err);
    if (st == CD_OK)
        *out = data;
    return st;
}

cd_status cd_json_points(const cJSON *item, const char *label, uint32_t max_list, float **out,
                         uint32_t *count, cd_error *err)
{
    if (cJSON_IsArray(item) && cJSON_IsNumber(item->child)) {
        uint32_t n = 0;
        cd_status st = cd_json_float_array(item, label, 3u * max_list, NULL, out, &n, err);
        if (st != CD_OK)
            return st;
        if (n % 3 != 0) {
            free(*out);
            *out = NULL;
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: %" PRIu32 " numbers is not a multiple of 3 (x, y, z per point)",
                           label, n);
        }
        *count = n / 3;
        return CD_OK;
    }
    cd_vec3 *v = NULL;
    cd_status st = cd_json_vec3_array(item, label, max_list, &v, count, err);
    if (st != CD_OK)
        return st;
    float *xyz = malloc(sizeof(float) * 3u * (*count ? *count : 1));
    if (xyz == NULL) {
        free(v);
        return cd_fail(err, CD_E_INTERNAL, "%s: out of memory", label);
    }
    for (uint32_t i = 0; i < *count; i++)
        memcpy(&xyz[3 * i], &v[i], 3 * sizeof(float));
    free(v);
    *out = xyz;
    return CD_OK;
}

/* ---- names -------------------------------------------------------------- */

int cd_json_name_distance(const char *a, const char *b)
{
    enum { CAP = 3, LEN = 32 };
    const size_t n = strlen(a), m = strlen(b);
    if (n >= LEN || m >= LEN)
        return CAP;
    /* Three rows of the optimal-string-alignment table: a swap of two
     * neighbours ("widht") is one edit, as a person counts it. */
    int before[LEN + 1], prev[LEN + 1], row[LEN + 1];
    for (size_t j = 0; j <= m; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            const int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + (ca == cb ? 0 : 1);
            best = prev[j] + 1 < best ? prev[j] + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            row[j] = best;
        }
        memcpy(before, prev, sizeof prev);
        memcpy(prev, row, sizeof row);
    }
    return prev[m] < CAP ? prev[m] : CAP;
}

bool cd_json_name_near(const char *given, const char *name, int distance)
{
    const size_t n = strlen(given), m = strlen(name);
    return distance <= 2 && (size_t)(2 * distance) < (n > m ? n : m);
}

const char *cd_json_closest_name(const char *given, const char *const *names, size_t count)
{
    const char *best = NULL;
    int best_distance = 3;
    for (size_t i = 0; i < count; i++) {
        const int d = cd_json_name_distance(given, names[i]);
        if (d < best_distance && cd_json_name_near(given, names[i], d)) {
            best_distance = d;
            best = names[i];
        }
    }
    return best;
}

void cd_json_enum_names(const cd_wire_enum *e, char *buf, size_t cap)
{
    int count = 0;
    while (e->name(count) != NULL)
        count++;
    buf[0] = '\0';
    for (int i = 0, used = 0; i < count && (size_t)used < cap; i++)
        used += snprintf(buf + used, cap - (size_t)used, "%s\"%s\"",
                         i == 0 ? "" : i + 1 == count ? " or " : ", ", e->name(i));
}

cd_status cd_json_enum(const cJSON *item, const char *label, const cd_wire_enum *e, int *index,
                       cd_error *err)
{
    const bool is_string = cJSON_IsString(item) && item->valuestring != NULL;
    for (int i = 0; is_string && e->name(i) != NULL; i++) {
        if (strcmp(item->valuestring, e->name(i)) == 0) {
            *index = i;
            return CD_OK;
        }
    }
    char choices[160];
    cd_json_enum_names(e, choices, sizeof choices);
    if (!is_string)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: must be a string, one of %s", label, choices);
    char quoted[64];
    cd_json_quote_safe(quoted, sizeof quoted, item->valuestring);
    return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: unknown %s \"%s\" (one of %s)", label,
                   e->what, quoted, choices);
}

/* ---- safe quoting ------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_sequence(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* <= U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Characters that would break a single-line message or read badly in it:
 * C0/C1 controls, DEL, quotes, backslash, U+2028 and U+2029. */
static bool is_unsafe(const unsigned char *p, size_t n)
{
    if (n == 1)
        return p[0] < 0x20 || p[0] == 0x7F || p[0] == '"' || p[0] == '\\';
    if (n == 2)
        return p[0] == 0xC2 && p[1] < 0xA0;
    if (n == 3)
        return p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9);
    return false;
}

void cd_json_quote_safe(char *dst, size_t cap, const char *s)
{
    if (!dst || cap == 0)
        return;
    if (!s)
        s = "";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    size_t keep = 0; /* output length at the last boundary that leaves room for "..." */
    bool cut = false;
    while (*p) {
        size_t n = utf8_sequence(p);
        const unsigned char *src = p;
        size_t m = n;
        static const unsigned char question = '?';
        if (n == 0 || is_unsafe(p, n)) {
            src = &question;
            m = 1;
        }
        if (o + m > cap - 1) {
            cut = true;
            break;
        }
        memcpy(dst + o, src, m);
        o += m;
        if (o + 3 <= cap - 1)
            keep = o;
        p += n == 0 ? 1 : n;
    }
    if (cut && cap >= 4) {
        memcpy(dst + keep, "...", 3);
        o = keep + 3;
    }
    dst[o] = '\0';
}

/* ---- option tables ---- */

cd_status cd_json_option(const cJSON *item, const cd_option_spec *spec, void *base,
                         cd_error *err)
{
    void *dst = (unsigned char *)base + spec->offset;
    switch (spec->kind) {
    case CD_OPTION_INT: {
        int64_t v;
        cd_status st = cd_json_int(item, spec->name, (int64_t)spec->min, (int64_t)spec->max, &v,
                                   err);
        if (st == CD_OK) {
            int32_t v32 = (int32_t)v;
            memcpy(dst, &v32, sizeof v32);
        }
        return st;
    }
    case CD_OPTION_FLOAT: {
        const cd_float_range range = {.min = spec->min,
                                      .max = spec->max,
                                      .min_open = spec->min_open,
                                      .max_open = spec->max_open,
                                      .has_min = true,
                                      .has_max = true};
        return cd_json_float(item, spec->name, &range, dst, err);
    }
    case CD_OPTION_VEC3:
        return cd_json_vec3(item, spec->name, dst, err);
    case CD_OPTION_POINT: {
        cd_vec3 v;
        cd_status st = cd_json_vec3(item, spec->name, &v, err);
        if (st != CD_OK)
            return st;
        if (!cd_vec3_in_world(v))
            return cd_fail(err, CD_E_INVALID_ARGUMENT,
                           "%s: outside the world box (|x|, |y|, |z| <= %g m)", spec->name,
                           (double)CD_WORLD_EXTENT);
        memcpy(dst, &v, sizeof v);
        return CD_OK;
    }
    case CD_OPTION_DIRECTION:
        return cd_json_direction(item, spec->name, dst, err);
    case CD_OPTION_EXTENTS:
    case CD_OPTION_ROTATION: {
        /* Read as is, then checked by the solver's own words for the row. */
        cd_status st = spec->kind == CD_OPTION_EXTENTS
                           ? cd_json_vec3(item, spec->name, dst, err)
                           : cd_json_quat(item, spec->name, dst, err);
        cd_field_fault fault;
        if (st == CD_OK && (st = cd_option_check(spec, base, &fault)) != CD_OK)
            return cd_fail(err, st, "%s: %s", fault.field, fault.reason);
        return st;
    }
    case CD_OPTION_BOOL:
        return cd_json_bool(item, spec->name, dst, err);
    case CD_OPTION_WIND_MODEL: {
        int m = 0;
        cd_status st = cd_json_enum(item, spec->name, &cd_wire_enums[CD_ENUM_WIND_MODEL], &m, err);
        if (st == CD_OK) {
            cd_wind_model v = (cd_wind_model)m;
            memcpy(dst, &v, sizeof v);
        }
        return st;
    }
    }
    return cd_fail(err, CD_E_INTERNAL, "%s: unknown option kind", spec->name);
}

cd_status cd_json_read_options(const cJSON *obj, const cd_option_spec *specs, size_t count,
                               void *base, uint64_t *present, cd_error *err)
{
    assert(count <= 64);
    uint64_t seen = 0;
    for (size_t i = 0; i < count; i++) {
        const cJSON *item = cd_json_member(obj, specs[i].name);
        if (!item)
            continue;
        seen |= (uint64_t)1 << i;
        cd_status st = cd_json_option(item, &specs[i], base, err);
        if (st != CD_OK)
            return st;
    }
    if (present != NULL)
        *present = seen;
    return CD_OK;
}
