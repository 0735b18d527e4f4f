/* The tiny JSON writer that builds request lines straight into the
 * client's output buffer: objects, arrays, keys, numbers, booleans and
 * escaped strings, commas placed by a small per-depth state. It never
 * writes invalid JSON: a non-finite number or a string that is not valid
 * UTF-8 marks the writer failed (naming the key), and the caller drops
 * what was written. Numbers are printed in the C locale's format whatever
 * the current locale. */
#ifndef CLOTHD_CLIENT_JSON_WRITE_H
#define CLOTHD_CLIENT_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define CDC_JW_MAX_DEPTH 8

typedef enum cdc_jw_fault {
    CDC_JW_OK = 0,
    CDC_JW_NOMEM,
    CDC_JW_NOT_FINITE,  /* a NaN or infinity: JSON cannot carry it */
    CDC_JW_BAD_STRING,  /* not valid UTF-8 */
    CDC_JW_TOO_DEEP,
} cdc_jw_fault;

typedef struct cdc_jw {
    cdc_buf *out;
    int depth;
    bool need_comma[CDC_JW_MAX_DEPTH];
    bool after_key;
    cdc_jw_fault fault;
    const char *last_key; /* names the field of a fault */
} cdc_jw;

void cdc_jw_init(cdc_jw *w, cdc_buf *out);
void cdc_jw_object_open(cdc_jw *w);
void cdc_jw_object_close(cdc_jw *w);
void cdc_jw_array_open(cdc_jw *w);
void cdc_jw_array_close(cdc_jw *w);
/* `key` is a plain ASCII literal (no escaping needed). */
void cdc_jw_key(cdc_jw *w, const char *key);
void cdc_jw_u64(cdc_jw *w, uint64_t v);
void cdc_jw_i64(cdc_jw *w, int64_t v);
void cdc_jw_float(cdc_jw *w, float v);   /* 9 significant digits: every float exactly */
void cdc_jw_bool(cdc_jw *w, bool v);
void cdc_jw_string(cdc_jw *w, const char *s, size_t len);
/* Appends already valid JSON text as one value (checked by the caller). */
void cdc_jw_raw(cdc_jw *w, const char *text, size_t len);

/* True when `s` (len bytes) is valid UTF-8 (no overlong forms, surrogates
 * or code points beyond U+10FFFF). */
bool cdc_utf8_valid(const char *s, size_t len);

#endif
