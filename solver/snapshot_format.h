/* Snapshot bytes, private to the solver's snapshot code: the framing of
 * the format (preamble, sections sealed with a CRC-32C, named fields)
 * without knowing what the fields mean. snapshot.c says what is saved;
 * PROTOCOL.md ("Snapshot files") has the byte tables. */
#ifndef CLOTHD_SOLVER_SNAPSHOT_FORMAT_H
#define CLOTHD_SOLVER_SNAPSHOT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

extern const uint8_t cd_snap_magic[8];
#define CD_SNAP_PREAMBLE_SIZE 16u     /* magic, u32 version, u32 CRC-32C */
#define CD_SNAP_SECTION_HEAD_SIZE 16u /* tag, version, length */
#define CD_SNAP_SECTION_VERSION 1u    /* of every section this build writes */

/* A field's value type (the byte after its name). */
enum {
    CD_SNAP_U8 = 1,
    CD_SNAP_U16,
    CD_SNAP_U32,
    CD_SNAP_U64,
    CD_SNAP_I32,
    CD_SNAP_F32,
    CD_SNAP_F64,
    CD_SNAP_COUNT
};
/* Bytes of a value of `type`, 0 for an unknown type. */
size_t cd_snap_type_size(int type);
/* Copies a `size`-byte value to or from little-endian. */
void cd_snap_store_le(uint8_t *dst, const uint8_t *src, size_t size);

/* ---- writing: a growing buffer; a failed allocation sets `oom` and every
 * later call does nothing ---- */
typedef struct cd_snap_writer {
    uint8_t *buf;
    size_t len, cap;
    bool oom;
    size_t section; /* offset of the open section's tag */
    uint32_t sections;
} cd_snap_writer;
uint8_t *cd_snap_w_reserve(cd_snap_writer *w, size_t n);
void cd_snap_w_le(cd_snap_writer *w, const void *value, size_t size);
void cd_snap_w_u32(cd_snap_writer *w, uint32_t v);
/* Opens a section (its length is patched by cd_snap_end_section, which
 * appends the CRC-32C). */
void cd_snap_begin_section(cd_snap_writer *w, const char tag[4], uint32_t version);
void cd_snap_end_section(cd_snap_writer *w);
/* A field of `records` records of `width` values of `type` each, read from
 * `base` with `stride` bytes from one record to the next (a struct array's
 * member: base = &array->member, stride = sizeof *array). */
void cd_snap_put(cd_snap_writer *w, const char *name, int type, const void *base, uint32_t records,
                 uint32_t width, size_t stride);
/* One value; `count` packed values; a bool as a u8 0 or 1. */
void cd_snap_put1(cd_snap_writer *w, const char *name, int type, const void *value);
void cd_snap_put_n(cd_snap_writer *w, const char *name, int type, const void *values,
                   uint32_t count);
void cd_snap_put_flag(cd_snap_writer *w, const char *name, bool value);

/* ---- reading: a section split into its fields; every message starts with
 * the section's label ---- */
typedef struct cd_snap_field {
    char name[64];
    int type;
    uint32_t count;
    const uint8_t *data;
    bool used; /* read by a cd_snap_get*: cd_snap_all_used refuses the others */
} cd_snap_field;

typedef struct cd_snap_section {
    char label[48]; /* "section 3 (INST)": how every message starts */
    char tag[5];
    uint32_t version;
    cd_snap_field *fields; /* malloc'd: the caller frees it */
    uint32_t field_count;
} cd_snap_section;

uint32_t cd_snap_load_u32(const uint8_t *p);
uint64_t cd_snap_load_u64(const uint8_t *p);
/* CD_E_INVALID_ARGUMENT with the fault "<label>: <reason>". */
cd_status cd_snap_bad(cd_field_fault *fault, const cd_snap_section *sec, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads section `index` at *at (moved past it): its framing, checksum, a
 * known tag and version, and its fields. */
cd_status cd_snap_next_section(const uint8_t *data, size_t len, size_t *at, uint32_t index,
                               cd_snap_section *sec, cd_field_fault *fault);
cd_status cd_snap_parse_fields(cd_snap_section *sec, const uint8_t *p, uint64_t len,
                               cd_field_fault *fault);
cd_snap_field *cd_snap_find(cd_snap_section *sec, const char *name);
/* The field `name` of `type` holding records x width values, scattered to
 * `base` with `stride` (as cd_snap_put); missing, of another type or
 * another count: refused naming it. `optional`: absent is CD_OK with
 * *present false. */
cd_status cd_snap_get_any(cd_snap_section *sec, const char *name, int type, void *base,
                          uint32_t records, uint32_t width, size_t stride, bool optional,
                          bool *present, cd_field_fault *fault);
cd_status cd_snap_get(cd_snap_section *sec, const char *name, int type, void *base,
                      uint32_t records, uint32_t width, size_t stride, cd_field_fault *fault);
cd_status cd_snap_get_n(cd_snap_section *sec, const char *name, int type, void *values,
                        uint32_t count, cd_field_fault *fault);
/* The number of values of a field (0 when absent). */
uint32_t cd_snap_count_of(cd_snap_section *sec, const char *name);
/* u8 flags that must be 0 or 1, into bools `stride` apart. */
cd_status cd_snap_get_flags(cd_snap_section *sec, const char *name, bool *base, uint32_t records,
                            size_t stride, cd_field_fault *fault);
cd_status cd_snap_get_flag(cd_snap_section *sec, const char *name, bool *out,
                           cd_field_fault *fault);
/* Every field was read: one that was not comes from a newer writer. */
cd_status cd_snap_all_used(const cd_snap_section *sec, cd_field_fault *fault);

#endif
