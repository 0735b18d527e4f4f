/* clothd protocol — private readers for JSON request fields.
 *
 * Each reader validates one cJSON value against the wire contract and turns
 * it into a C value. `label` is the name used in the error message
 * ("width", "particles[3]"), so every message starts with the offending field:
 * "width: must be an integer >= 2".
 *
 * Return: CD_OK and *out written, or an error code with `err` filled and
 * *out untouched. Readers that allocate hand the memory to the caller only
 * on CD_OK; on error they have freed everything they allocated.
 *
 * Not part of the public API: only the protocol module's .c files include it.
 */
#ifndef CLOTHD_PROTOCOL_JSON_FIELDS_H
#define CLOTHD_PROTOCOL_JSON_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "protocol.h"

/* The member `name` of `obj` (exact case; the first one when repeated), or
 * NULL when absent. While a member log is active on this thread, the call
 * is recorded in it, found or not: `name` must outlive the parse (a
 * literal or a table's row). */
const cJSON *cd_json_member(const cJSON *obj, const char *name);

/* What a parse asked for, so that the members nobody asked for can be told
 * (the forward-compatibility rule, PROTOCOL.md "Unknown members"): each
 * command's handler is the one definition of the members it knows. */
typedef struct cd_member_lookup {
    const cJSON *obj;
    const char *name;
} cd_member_lookup;

typedef struct cd_member_log {
    cd_member_lookup *lookups; /* owned */
    size_t count, cap;
    bool overflow; /* out of memory: the log is incomplete, tell nothing */
} cd_member_log;

/* Starts recording this thread's cd_json_member calls into `log` (zeroed
 * by the caller); cd_json_log_end stops. Not nested. */
void cd_json_log_begin(cd_member_log *log);
void cd_json_log_end(void);
void cd_member_log_free(cd_member_log *log);

/* An integer in [min, max]: a JSON number with an integral value. The
 * message reads "must be an integer >= min" when max is INT32_MAX or
 * INT64_MAX (the type's limit, not a bound worth stating), "must be an
 * integer in [min, max]" otherwise. */
cd_status cd_json_int(const cJSON *item, const char *label, int64_t min, int64_t max,
                      int64_t *out, cd_error *err);

/* A number range for cd_json_float. Bounds are inclusive unless *_open. */
typedef struct cd_float_range {
    double min, max;
    bool min_open, max_open;
    bool has_min, has_max; /* false: unbounded on that side */
} cd_float_range;

/* A finite number that fits a 32-bit float and lies in `range` (checked on
 * the value rounded to float too, so 1e-50 is not accepted as "> 0"). */
cd_status cd_json_float(const cJSON *item, const char *label, const cd_float_range *range,
                        float *out, cd_error *err);

/* An array of exactly 3 finite numbers that fit a 32-bit float. */
cd_status cd_json_vec3(const cJSON *item, const char *label, cd_vec3 *out, cd_error *err);

/* A quaternion [x, y, z, w]: an array of exactly 4 finite numbers, each of
 * magnitude at most 1e6 (as is; the caller checks its length). */
cd_status cd_json_quat(const cJSON *item, const char *label, cd_quat *out, cd_error *err);

/* A vec3 that is not zero-length, returned normalised (in double precision,
 * so tiny or huge components are fine). */
cd_status cd_json_direction(const cJSON *item, const char *label, cd_vec3 *out, cd_error *err);

/* true or false. */
cd_status cd_json_bool(const cJSON *item, const char *label, bool *out, cd_error *err);

/* An instance or collider id: an integer in [0, 4294967295]. (0 is the null
 * id: it parses, and the world then reports it as not found.) */
cd_status cd_json_id(const cJSON *item, const char *label, cd_id *out, cd_error *err);

/* A particle index: an integer in [0, 4294967295]. */
cd_status cd_json_index(const cJSON *item, const char *label, uint32_t *out, cd_error *err);

/* Arrays of at most `max_list` entries (CD_E_LIMIT_EXCEEDED beyond it).
 * Element errors name the element: "particles[3]: …". On CD_OK *out is a
 * malloc'd array the caller frees with free() (NULL when *count is 0). */
cd_status cd_json_id_array(const cJSON *item, const char *label, uint32_t max_list,
                           cd_id **out, uint32_t *count, cd_error *err);
cd_status cd_json_index_array(const cJSON *item, const char *label, uint32_t max_list,
                              uint32_t **out, uint32_t *count, cd_error *err);
cd_status cd_json_vec3_array(const cJSON *item, const char *label, uint32_t max_list,
                             cd_vec3 **out, uint32_t *count, cd_error *err);
/* Finite numbers that fit a 32-bit float, each in `range` (NULL: any). */
cd_status cd_json_float_array(const cJSON *item, const char *label, uint32_t max_list,
                              const cd_float_range *range, float **out, uint32_t *count,
                              cd_error *err);
/* Points, either nested ([[x,y,z],...]) or flat ([x,y,z,x,y,z,...]):
 * *out holds 3 floats per point, *count the points. A flat list holds at
 * most 3 x max_list numbers; its length must be a multiple of 3. */
cd_status cd_json_points(const cJSON *item, const char *label, uint32_t max_list, float **out,
                         uint32_t *count, cd_error *err);

/* ---- option tables (solver/options_table.h) ---- */

/* Reads one row's value from `item` into the struct at `base`, with the
 * row's kind and range: "thickness: must be a number in [0, 1000]",
 * "position: outside the world box (...)", "windModel: must be \"aero\",
 * \"constant\" or \"dragLift\"". */
cd_status cd_json_option(const cJSON *item, const cd_option_spec *spec, void *base,
                         cd_error *err);

/* Reads every present row of `specs` (at most 64) from `obj` into `base`;
 * absent rows keep the value already there (the default). Bit i of
 * *present (when not NULL) tells that specs[i] was given. The first fault
 * in row order is reported. */
cd_status cd_json_read_options(const cJSON *obj, const cd_option_spec *specs, size_t count,
                               void *base, uint64_t *present, cd_error *err);

/* One of an enum's names (a row of cd_wire_enums): *index is the match.
 * Otherwise "label: unknown <what> \"x\" (one of \"a\", \"b\" or \"c\")",
 * or for a value that is not a string "label: must be a string, one of ...". */
cd_status cd_json_enum(const cJSON *item, const char *label, const cd_wire_enum *e, int *index,
                       cd_error *err);
/* The names in words: "\"a\", \"b\" or \"c\"" (cut to `cap`). */
void cd_json_enum_names(const cd_wire_enum *e, char *buf, size_t cap);

/* Edit distance of a and b (insert, delete, substitute, swap two
 * neighbours; case-blind), capped: anything above 3 reads as 3. */
int cd_json_name_distance(const char *a, const char *b);
/* A name `distance` edits from `given` reads as its typo: at most 2 edits,
 * and fewer than half the longer name ("x" is not a typo of "id"). */
bool cd_json_name_near(const char *given, const char *name, int distance);
/* The name of `names` closest to `given` that is near it (a typo, a case
 * slip), or NULL. */
const char *cd_json_closest_name(const char *given, const char *const *names, size_t count);

/* The members of `root` (and of the objects in it that the parse looked
 * into) that nobody asked for, per `log`, into out->unknown. */
void cd_find_unknown_members(const cJSON *root, const cd_member_log *log, cd_request *out);

#define RANGE_POSITIVE {.min = 0, .min_open = true, .has_min = true}

/* Copies `s` into `dst` (capacity `cap` >= 4) for quoting inside a message:
 * valid UTF-8 is kept, control characters, quotes, backslashes and invalid
 * bytes become '?', and a long string is cut at a character boundary and
 * ends with "...". The result is always a single line. */
void cd_json_quote_safe(char *dst, size_t cap, const char *s);

#endif
