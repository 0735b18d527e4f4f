/* Garments (issue 14): the skin that drives a cloth each frame (binary by
 * default, JSON on request), bulk pins as one binary request, teleport,
 * and the material's newer members (inertia, tearing, the painted
 * per-vertex properties) with the topology reply's painted arrays. The
 * binary encoders are binary.c's. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define BEGIN(KIND, CMD)                                                                           \
    cdc_req r;                                                                                     \
    clothd_code rc = cdc_req_begin(&r, c, (KIND), (CMD), err);                                     \
    if (rc != CLOTHD_OK)                                                                           \
        return rc

/* One row per painted property: its wire name, its member in the material
 * and in the topology reply. */
#define CDC_PAINT_ROWS(X)                                                                          \
    X("invMassScale", inv_mass_scale)                                                              \
    X("maxDistance", max_distance)                                                                 \
    X("backstopDistance", backstop_distance)                                                       \
    X("backstopRadius", backstop_radius)                                                           \
    X("stretchComplianceScale", stretch_compliance_scale)                                          \
    X("bendComplianceScale", bend_compliance_scale)

typedef struct paint_row {
    const char *name;
    size_t in_material; /* offsetof a clothd_paint in clothd_material */
    size_t in_topology; /* offsetof a float * in clothd_topology */
} paint_row;

static const paint_row paint_rows[] = {
#define CDC_PAINT_ROW(wire, member)                                                                \
    {wire, offsetof(clothd_material, member), offsetof(clothd_topology, member)},
    CDC_PAINT_ROWS(CDC_PAINT_ROW)
#undef CDC_PAINT_ROW
};
#define PAINT_COUNT (sizeof paint_rows / sizeof paint_rows[0])

static const clothd_paint *paint_of(const clothd_material *m, size_t k)
{
    return (const clothd_paint *)(const void *)((const char *)m + paint_rows[k].in_material);
}

static float **painted_of(clothd_topology *t, size_t k)
{
    return (float **)(void *)((char *)t + paint_rows[k].in_topology);
}

clothd_code cdc_check_paint(const clothd_material *m, clothd_error *err)
{
    for (size_t k = 0; k < PAINT_COUNT; k++) {
        const clothd_paint *p = paint_of(m, k);
        if ((unsigned)p->mode > CLOTHD_PAINT_CLEAR)
            return cdc_fail(err, CLOTHD_E_USAGE, "%s: %d is no clothd_paint_mode", paint_rows[k].name,
                            (int)p->mode);
        if (p->mode == CLOTHD_PAINT_EACH && p->values == NULL)
            return cdc_fail(err, CLOTHD_E_USAGE, "%s: CLOTHD_PAINT_EACH with values NULL", paint_rows[k].name);
    }
    return CLOTHD_OK;
}

void cdc_put_garment_material(cdc_jw *w, const clothd_material *m)
{
    cdc_put_f(w, "linearInertia", m->linear_inertia);
    cdc_put_f(w, "angularInertia", m->angular_inertia);
    cdc_put_f(w, "tearStrain", m->tear_strain);
    for (size_t k = 0; k < PAINT_COUNT; k++) {
        const clothd_paint *p = paint_of(m, k);
        switch (p->mode) {
        case CLOTHD_PAINT_ALL:
            cdc_jw_key(w, paint_rows[k].name);
            cdc_jw_float(w, p->value);
            break;
        case CLOTHD_PAINT_EACH:
            cdc_put_floats(w, paint_rows[k].name, p->values, p->count);
            break;
        case CLOTHD_PAINT_CLEAR:
            cdc_jw_key(w, paint_rows[k].name);
            cdc_jw_raw(w, "null", 4);
            break;
        default:
            break;
        }
    }
}

/* ---- topology's paint ---- */

void cdc_free_painted(clothd_topology *t)
{
    for (size_t k = 0; k < PAINT_COUNT; k++) {
        float **p = painted_of(t, k);
        free(*p);
        *p = NULL;
    }
}

clothd_code cdc_read_painted(const cdc_jdoc *d, int root, clothd_topology *t, clothd_error *err)
{
    for (size_t k = 0; k < PAINT_COUNT; k++) {
        int arr = cdc_jget(d, root, paint_rows[k].name);
        if (arr < 0)
            continue;
        if (cdc_jtype_of(d, arr) != CDC_JARRAY || d->tok[arr].count != t->particles)
            return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: topology's \"%s\" is not one number per particle",
                            paint_rows[k].name);
        float *v = malloc((t->particles ? t->particles : 1) * sizeof *v);
        if (v == NULL)
            return cdc_fail(err, CLOTHD_E_NOMEM, "out of memory decoding a reply");
        *painted_of(t, k) = v;
        int i = cdc_jfirst(d, arr);
        for (uint32_t n = 0; n < t->particles; n++, i = cdc_jnext(d, i))
            if (!cdc_jfloat(d, i, &v[n]))
                return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: topology's \"%s\" holds a non-number",
                                paint_rows[k].name);
    }
    bool skinned = false;
    cdc_jbool(d, cdc_jget(d, root, "skinned"), &skinned);
    t->skinned = skinned;
    return CLOTHD_OK;
}

/* ---- skin ---- */

/* A binary message's length must fit its u32 field. */
static bool fits_binary(size_t count, size_t per_entry)
{
    return count <= (UINT32_MAX - 32) / per_entry;
}

clothd_code clothd_send_skin(clothd_client *c, clothd_instance inst, const clothd_skin_options *o,
                             clothd_ticket *ticket, clothd_error *err)
{
    if (o == NULL || o->positions == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "positions: NULL (one point per particle required)");
    if (o->json) {
        BEGIN(CDC_K_SKIN, "skin");
        cdc_jw_key(&r.w, "instance");
        cdc_jw_u64(&r.w, inst.id);
        cdc_put_floats(&r.w, "positions", o->positions, 3 * o->vertex_count);
        if (o->normals != NULL)
            cdc_put_floats(&r.w, "normals", o->normals, 3 * o->vertex_count);
        return cdc_req_end(&r, ticket, NULL, err);
    }
    if (!fits_binary(o->vertex_count, o->normals ? 24 : 12))
        return cdc_fail(err, CLOTHD_E_USAGE, "positions: %zu points do not fit one binary request",
                        o->vertex_count);
    cdc_req r;
    clothd_code rc = cdc_req_begin_binary(&r, c, CDC_K_SKIN, err);
    if (rc != CLOTHD_OK)
        return rc;
    bool ok = cdc_bin_skin(&c->out, inst.id, cdc_req_binary_id(&r), o->positions, o->normals, o->vertex_count);
    return cdc_req_end_binary(&r, ok, ticket, err);
}

clothd_code clothd_skin(clothd_client *c, clothd_instance inst, const clothd_skin_options *o, clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_skin(c, inst, o, &ticket_, err), CDC_K_SKIN, NULL, none, 0, NULL);
}

/* ---- pin in bulk ---- */

clothd_code clothd_send_pin_bulk(clothd_client *c, clothd_instance inst, const uint32_t *particles,
                                 const float *positions, size_t count, clothd_ticket *ticket, clothd_error *err)
{
    if ((particles == NULL || positions == NULL) && count > 0)
        return cdc_fail(err, CLOTHD_E_USAGE, "particles, positions: NULL");
    if (!fits_binary(count, 16))
        return cdc_fail(err, CLOTHD_E_USAGE, "particles: %zu entries do not fit one binary request", count);
    cdc_req r;
    clothd_code rc = cdc_req_begin_binary(&r, c, CDC_K_PIN, err);
    if (rc != CLOTHD_OK)
        return rc;
    bool ok = cdc_bin_pin(&c->out, inst.id, cdc_req_binary_id(&r), particles, positions, count);
    return cdc_req_end_binary(&r, ok, ticket, err);
}

/* The "pinned" count of the reply. */
static clothd_code decode_pinned(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                 clothd_error *err)
{
    (void)c;
    (void)arg;
    uint64_t v;
    if (!cdc_juint(d, cdc_jget(d, root, "pinned"), UINT32_MAX, &v))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "reply: no \"pinned\" count");
    if (out != NULL)
        *(uint32_t *)out = (uint32_t)v;
    return CLOTHD_OK;
}

clothd_code clothd_pin_bulk(clothd_client *c, clothd_instance inst, const uint32_t *particles,
                            const float *positions, size_t count, uint32_t *pinned, clothd_error *err)
{
    CDC_BLOCKING(c, err, clothd_send_pin_bulk(c, inst, particles, positions, count, &ticket_, err), CDC_K_PIN,
                 decode_pinned, pinned, sizeof *pinned, NULL);
}

/* ---- teleport ---- */

clothd_code clothd_send_teleport(clothd_client *c, clothd_instance inst, const clothd_teleport_options *o,
                                 clothd_ticket *ticket, clothd_error *err)
{
    clothd_teleport_options none;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    BEGIN(CDC_K_TELEPORT, "teleport");
    cdc_jw_key(&r.w, "instance");
    cdc_jw_u64(&r.w, inst.id);
    cdc_put_v3(&r.w, "translation", o->translation);
    if (o->rotation.set)
        cdc_put_floats(&r.w, "rotation", o->rotation.value, 4);
    cdc_put_v3(&r.w, "pivot", o->pivot);
    return cdc_req_end(&r, ticket, NULL, err);
}

clothd_code clothd_teleport(clothd_client *c, clothd_instance inst, const clothd_teleport_options *o,
                            clothd_error *err)
{
    char *none = NULL;
    CDC_BLOCKING(c, err, clothd_send_teleport(c, inst, o, &ticket_, err), CDC_K_TELEPORT, NULL, none, 0, NULL);
}
