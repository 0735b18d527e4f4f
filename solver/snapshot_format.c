/* The framing of snapshot bytes (snapshot_format.h): little-endian
 * values, sections sealed with a CRC-32C, named fields. Knows nothing of
 * instances: snapshot.c decides what the fields are.
 *
 *   preamble  8-byte magic 89 43 44 53 0D 0A 1A 0A ("\x89CDS\r\n\x1a\n", as
 *             PNG's: a text-mode transfer or a cut to 7 bits shows), u32
 *             format version (CD_SNAPSHOT_VERSION), u32 CRC-32C of those 12
 *             bytes;
 *   section   tag[4] u32 version u64 length payload[length] u32 CRC-32C
 *             over tag..payload;
 *   payload   fields: u8 name length, name, u8 type (CD_SNAP_U8 1 ...
 *             CD_SNAP_F64 7), u32 count, count values.
 *
 * Reading never trusts a length: every one is checked against what is
 * left before it is used, so a truncated or forged file is refused with
 * the section's label and never read past its end. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "snapshot_format.h"

const uint8_t cd_snap_magic[8] = {0x89, 'C', 'D', 'S', '\r', '\n', 0x1A, '\n'};

size_t cd_snap_type_size(int type)
{
    static const size_t sizes[CD_SNAP_COUNT] = {0, 1, 2, 4, 8, 4, 4, 8};
    return type > 0 && type < CD_SNAP_COUNT ? sizes[type] : 0;
}

void cd_snap_store_le(uint8_t *dst, const uint8_t *src, size_t size)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < size; i++)
        dst[i] = src[size - 1 - i];
#else
    memcpy(dst, src, size);
#endif
}

/* ---- writer ---------------------------------------------------------------- */


uint8_t *cd_snap_w_reserve(cd_snap_writer *w, size_t n)
{
    if (w->oom)
        return NULL;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *grown = realloc(w->buf, cap);
        if (grown == NULL) {
            w->oom = true;
            return NULL;
        }
        w->buf = grown;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

void cd_snap_w_le(cd_snap_writer *w, const void *value, size_t size)
{
    uint8_t *p = cd_snap_w_reserve(w, size);
    if (p != NULL)
        cd_snap_store_le(p, value, size);
}

void cd_snap_w_u32(cd_snap_writer *w, uint32_t v)
{
    cd_snap_w_le(w, &v, 4);
}

void cd_snap_begin_section(cd_snap_writer *w, const char tag[4], uint32_t version)
{
    w->section = w->len;
    uint8_t *p = cd_snap_w_reserve(w, 4);
    if (p != NULL)
        memcpy(p, tag, 4);
    cd_snap_w_u32(w, version);
    const uint64_t zero = 0;
    cd_snap_w_le(w, &zero, 8); /* the length, patched by end_section */
}

void cd_snap_end_section(cd_snap_writer *w)
{
    if (w->oom)
        return;
    const uint64_t length = w->len - w->section - CD_SNAP_SECTION_HEAD_SIZE;
    cd_snap_store_le(w->buf + w->section + 8, (const uint8_t *)&length, 8);
    cd_snap_w_u32(w, cd_crc32c(0, w->buf + w->section, w->len - w->section));
    w->sections++;
}

/* A field of `records` records of `width` values of `type` each, read from
 * `base` with `stride` bytes from one record to the next. */
void cd_snap_put(cd_snap_writer *w, const char *name, int type, const void *base, uint32_t records,
                uint32_t width, size_t stride)
{
    const size_t size = cd_snap_type_size(type), name_len = strlen(name);
    assert(size != 0 && name_len >= 1 && name_len < 64);
    const uint8_t head[2] = {(uint8_t)name_len, (uint8_t)type};
    uint8_t *p = cd_snap_w_reserve(w, 1);
    if (p != NULL)
        p[0] = head[0];
    if ((p = cd_snap_w_reserve(w, name_len + 1)) != NULL) {
        memcpy(p, name, name_len);
        p[name_len] = head[1];
    }
    cd_snap_w_u32(w, records * width);
    const size_t bytes = (size_t)records * width * size;
    if ((p = cd_snap_w_reserve(w, bytes)) == NULL)
        return;
    const uint8_t *src = base;
#if __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
    if (stride == width * size) {
        if (bytes != 0)
            memcpy(p, src, bytes);
        return;
    }
#endif
    for (uint32_t r = 0; r < records; r++)
        for (uint32_t e = 0; e < width; e++, p += size)
            cd_snap_store_le(p, src + r * stride + e * size, size);
}

/* One value, or an array of `count` packed values. */
void cd_snap_put1(cd_snap_writer *w, const char *name, int type, const void *value)
{
    cd_snap_put(w, name, type, value, 1, 1, cd_snap_type_size(type));
}

void cd_snap_put_n(cd_snap_writer *w, const char *name, int type, const void *values, uint32_t count)
{
    cd_snap_put(w, name, type, values, count, 1, cd_snap_type_size(type));
}

void cd_snap_put_flag(cd_snap_writer *w, const char *name, bool value)
{
    const uint8_t v = value ? 1 : 0;
    cd_snap_put1(w, name, CD_SNAP_U8, &v);
}

/* ---- reader ------------------------------------------------------------------ */



uint32_t cd_snap_load_u32(const uint8_t *p)
{
    uint32_t v;
    cd_snap_store_le((uint8_t *)&v, p, 4);
    return v;
}

uint64_t cd_snap_load_u64(const uint8_t *p)
{
    uint64_t v;
    cd_snap_store_le((uint8_t *)&v, p, 8);
    return v;
}

cd_status cd_snap_bad(cd_field_fault *fault, const cd_snap_section *sec, const char *fmt, ...)
{
    char reason[sizeof fault->reason];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, sec->label, "%s", reason);
}

/* Splits a section's payload into its fields. */
cd_status cd_snap_parse_fields(cd_snap_section *sec, const uint8_t *p, uint64_t len, cd_field_fault *fault)
{
    uint32_t cap = 0;
    for (uint64_t at = 0; at < len;) {
        if (len - at < 6 || p[at] == 0 || p[at] >= 64 || len - at < 6u + p[at])
            return cd_snap_bad(fault, sec, "field %" PRIu32 " at byte %" PRIu64 ": malformed", cap, at);
        const uint64_t name_len = p[at];
        const int type = p[at + 1 + name_len];
        const uint32_t count = cd_snap_load_u32(p + at + 2 + name_len);
        const uint64_t bytes = (uint64_t)count * cd_snap_type_size(type);
        if (cd_snap_type_size(type) == 0)
            return cd_snap_bad(fault, sec, "field %" PRIu32 " at byte %" PRIu64 ": unknown type %d", cap, at,
                       type);
        if (bytes > len - at - 6 - name_len)
            return cd_snap_bad(fault, sec, "field %" PRIu32 " at byte %" PRIu64 ": runs past the section",
                       cap, at);
        at += 6 + name_len + bytes;
        cap++;
    }
    sec->fields = calloc(cap ? cap : 1, sizeof *sec->fields);
    if (sec->fields == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    for (uint64_t at = 0; at < len; sec->field_count++) {
        cd_snap_field *f = &sec->fields[sec->field_count];
        const size_t name_len = p[at];
        memcpy(f->name, p + at + 1, name_len);
        f->name[name_len] = '\0';
        f->type = p[at + 1 + name_len];
        f->count = cd_snap_load_u32(p + at + 2 + name_len);
        f->data = p + at + 6 + name_len;
        for (uint32_t i = 0; i < sec->field_count; i++)
            if (strcmp(sec->fields[i].name, f->name) == 0)
                return cd_snap_bad(fault, sec, "field \"%s\" appears twice", f->name);
        at += 6 + name_len + (uint64_t)f->count * cd_snap_type_size(f->type);
    }
    return CD_OK;
}

cd_snap_field *cd_snap_find(cd_snap_section *sec, const char *name)
{
    for (uint32_t i = 0; i < sec->field_count; i++)
        if (strcmp(sec->fields[i].name, name) == 0)
            return &sec->fields[i];
    return NULL;
}

/* The field `name` of `type` holding records x width values, scattered to
 * `base` with `stride`. `optional`: absent is CD_OK with *present false. */
cd_status cd_snap_get_any(cd_snap_section *sec, const char *name, int type, void *base, uint32_t records,
                         uint32_t width, size_t stride, bool optional, bool *present,
                         cd_field_fault *fault)
{
    cd_snap_field *f = cd_snap_find(sec, name);
    if (present != NULL)
        *present = f != NULL;
    if (f == NULL)
        return optional ? CD_OK : cd_snap_bad(fault, sec, "field \"%s\" missing", name);
    if (f->type != type)
        return cd_snap_bad(fault, sec, "field \"%s\": type %d, expected %d", name, f->type, type);
    if ((uint64_t)f->count != (uint64_t)records * width)
        return cd_snap_bad(fault, sec, "field \"%s\": %" PRIu32 " values, expected %" PRIu64, name,
                   f->count, (uint64_t)records * width);
    f->used = true;
    const size_t size = cd_snap_type_size(type);
    const uint8_t *src = f->data;
    uint8_t *dst = base;
    for (uint32_t r = 0; r < records; r++)
        for (uint32_t e = 0; e < width; e++, src += size)
            cd_snap_store_le(dst + r * stride + e * size, src, size);
    return CD_OK;
}

cd_status cd_snap_get(cd_snap_section *sec, const char *name, int type, void *base, uint32_t records,
                     uint32_t width, size_t stride, cd_field_fault *fault)
{
    return cd_snap_get_any(sec, name, type, base, records, width, stride, false, NULL, fault);
}

cd_status cd_snap_get_n(cd_snap_section *sec, const char *name, int type, void *values, uint32_t count,
                       cd_field_fault *fault)
{
    return cd_snap_get(sec, name, type, values, count, 1, cd_snap_type_size(type), fault);
}

/* The number of values of a field (0 when absent: get then says so). */
uint32_t cd_snap_count_of(cd_snap_section *sec, const char *name)
{
    const cd_snap_field *f = cd_snap_find(sec, name);
    return f != NULL ? f->count : 0;
}

/* Flags: U8 values that must be 0 or 1, into bools `stride` apart. */
cd_status cd_snap_get_flags(cd_snap_section *sec, const char *name, bool *base, uint32_t records,
                           size_t stride, cd_field_fault *fault)
{
    const cd_snap_field *f = cd_snap_find(sec, name);
    if (f != NULL && f->type == CD_SNAP_U8 && f->count == records)
        for (uint32_t i = 0; i < records; i++)
            if (f->data[i] > 1)
                return cd_snap_bad(fault, sec, "field \"%s\"[%" PRIu32 "]: %u is not a flag (0 or 1)",
                           name, i, f->data[i]);
    return cd_snap_get(sec, name, CD_SNAP_U8, base, records, 1, stride, fault);
}

cd_status cd_snap_get_flag(cd_snap_section *sec, const char *name, bool *out, cd_field_fault *fault)
{
    return cd_snap_get_flags(sec, name, out, 1, sizeof *out, fault);
}

/* Every field was read: one that was not comes from a newer writer. */
cd_status cd_snap_all_used(const cd_snap_section *sec, cd_field_fault *fault)
{
    for (uint32_t i = 0; i < sec->field_count; i++)
        if (!sec->fields[i].used)
            return cd_snap_bad(fault, sec, "unknown field \"%s\" (written by a newer clothd?)",
                       sec->fields[i].name);
    return CD_OK;
}

/* Reads section `index` at *at: framing, checksum, version, fields. */
cd_status cd_snap_next_section(const uint8_t *data, size_t len, size_t *at, uint32_t index,
                              cd_snap_section *sec, cd_field_fault *fault)
{
    memset(sec, 0, sizeof *sec);
    snprintf(sec->label, sizeof sec->label, "section %" PRIu32, index);
    const size_t left = len - *at;
    if (left == 0)
        return cd_snap_bad(fault, sec, "missing: the file ends at byte %zu, before the END section", len);
    if (left < CD_SNAP_SECTION_HEAD_SIZE + 4)
        return cd_snap_bad(fault, sec, "truncated: %zu bytes left at byte %zu, a section takes at least 20",
                   left, *at);
    const uint8_t *p = data + *at;
    for (int i = 0; i < 4; i++)
        sec->tag[i] = (p[i] >= 0x20 && p[i] < 0x7F) ? (char)p[i] : '?';
    snprintf(sec->label, sizeof sec->label, "section %" PRIu32 " (%s)", index, sec->tag);
    sec->version = cd_snap_load_u32(p + 4);
    const uint64_t length = cd_snap_load_u64(p + 8);
    if (length > left - CD_SNAP_SECTION_HEAD_SIZE - 4)
        return cd_snap_bad(fault, sec, "truncated: length %" PRIu64 " but %zu bytes left", length,
                   left - CD_SNAP_SECTION_HEAD_SIZE - 4);
    const uint32_t stored = cd_snap_load_u32(p + CD_SNAP_SECTION_HEAD_SIZE + length);
    const uint32_t computed = cd_crc32c(0, p, CD_SNAP_SECTION_HEAD_SIZE + length);
    if (stored != computed)
        return cd_snap_bad(fault, sec, "checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                   "): the file is damaged", stored, computed);
    static const char *const known[] = {"HEAD", "WRLD", "INST", "END "};
    bool is_known = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        is_known |= memcmp(p, known[i], 4) == 0;
    if (!is_known)
        return cd_snap_bad(fault, sec, "unknown section (written by a newer clothd?)");
    if (sec->version > CD_SNAP_SECTION_VERSION)
        return cd_snap_bad(fault, sec, "version %" PRIu32 " is newer than this clothd reads (%u)",
                   sec->version, CD_SNAP_SECTION_VERSION);
    if (sec->version == 0)
        return cd_snap_bad(fault, sec, "version 0 is not a version");
    *at += CD_SNAP_SECTION_HEAD_SIZE + length + 4;
    return cd_snap_parse_fields(sec, p + CD_SNAP_SECTION_HEAD_SIZE, length, fault);
}

