/* The cloth options of `create` and `set`, read with the solver's one table
 * (solver/options_table.h: names, kinds, ranges, defaults), and how a
 * `set` merges into an instance's current options. What is only the wire's
 * lives here: the pairs that name one setting twice, and `set` refusing
 * the layout. */
#include <string.h>

#include "json_fields.h"
#include "options.h"

#define BIT(opt) ((uint64_t)1 << (opt))
_Static_assert(CD_OPT_COUNT <= 64, "a presence mask holds every option");

/* Two names for one setting: at most one of them per request. The second
 * of each pair is the XPBD twin that the first (the seed's) switches off. */
static const struct {
    cd_cloth_option a, b;
} exclusive[] = {
    {CD_OPT_STIFFNESS, CD_OPT_STRETCH_COMPLIANCE},
    {CD_OPT_BEND_STIFFNESS, CD_OPT_BEND_COMPLIANCE},
    {CD_OPT_DAMPING, CD_OPT_VELOCITY_RETENTION},
    {CD_OPT_SOLVER_ITERATIONS, CD_OPT_ITERATIONS},
    {CD_OPT_VOLUME_STIFFNESS, CD_OPT_VOLUME_COMPLIANCE},
};

static bool is_layout(int opt)
{
    return (cd_cloth_option_specs[opt].flags & CD_OPTION_LAYOUT) != 0;
}

/* Each seed's name means what its seed says. The first seed's
 * `solverIterations` counts passes per step, with no substeps: given
 * without `substeps`, it turns automatic substeps (the default, small
 * steps at `solverFrequency`) into the seed's one. The XPBD seed's
 * `iterations` counts passes per substep and leaves the substeps as they
 * are. Substeps chosen by number (a soft body's 2) stay. */
static void seed_stepping(cd_cloth_def *def, uint64_t seen)
{
    if ((seen & BIT(CD_OPT_SOLVER_ITERATIONS)) && !(seen & BIT(CD_OPT_SUBSTEPS)) &&
        def->substeps == 0)
        def->substeps = 1;
}

cd_status cd_parse_cloth_options(const cJSON *obj, bool for_set, cd_cloth_def *def,
                                 uint64_t *present, cd_error *err)
{
    uint64_t seen = 0;
    cd_status st = cd_json_read_options(obj, cd_cloth_option_specs, CD_OPT_COUNT, def, &seen,
                                        err);
    if (st != CD_OK)
        return st;
    for (int i = 0; for_set && i < CD_OPT_COUNT; i++)
        if ((seen & BIT(i)) && is_layout(i))
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: fixed at creation",
                           cd_cloth_option_specs[i].name);
    for (size_t i = 0; i < sizeof exclusive / sizeof exclusive[0]; i++) {
        if ((seen & BIT(exclusive[i].a)) && (seen & BIT(exclusive[i].b)))
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s: give either %s or %s, not both",
                           cd_cloth_option_specs[exclusive[i].b].name,
                           cd_cloth_option_specs[exclusive[i].a].name,
                           cd_cloth_option_specs[exclusive[i].b].name);
    }
    /* In `create` too, the seed's form of a setting switches its XPBD twin
     * off: {"damping":0.02} means the seed's per-step damping although
     * velocityRetention has a default (`set` does it in the merge). */
    for (size_t i = 0; !for_set && i < sizeof exclusive / sizeof exclusive[0]; i++) {
        const cd_option_spec *twin = &cd_cloth_option_specs[exclusive[i].b];
        if ((seen & BIT(exclusive[i].a)) && (twin->flags & CD_OPTION_UNSET_OK)) {
            const float unset = CD_UNSET;
            memcpy((unsigned char *)def + twin->offset, &unset, sizeof unset);
        }
    }
    if (!for_set)
        seed_stepping(def, seen);
    if (present != NULL)
        *present = seen;
    return CD_OK;
}

void cd_cloth_def_merge(cd_cloth_def *dst, const cd_cloth_def *src, uint64_t present)
{
    seed_stepping(dst, present);
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        if (!(present & BIT(i)) || is_layout(i))
            continue;
        const cd_option_spec *spec = &cd_cloth_option_specs[i];
        memcpy((unsigned char *)dst + spec->offset, (const unsigned char *)src + spec->offset,
               cd_option_size(spec));
    }
    /* The seed's form of a setting switches its XPBD twin off (a request
     * never carries both): {"stiffness":0.8} returns to the seed's
     * projection. (In `create` the twin starts unset anyway.) */
    for (size_t i = 0; i < sizeof exclusive / sizeof exclusive[0]; i++) {
        const cd_option_spec *twin = &cd_cloth_option_specs[exclusive[i].b];
        if ((present & BIT(exclusive[i].a)) && (twin->flags & CD_OPTION_UNSET_OK)) {
            const float unset = CD_UNSET;
            memcpy((unsigned char *)dst + twin->offset, &unset, sizeof unset);
        }
    }
}
