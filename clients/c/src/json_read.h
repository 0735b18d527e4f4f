/* The small strict JSON reader that reads the server's replies and events.
 *
 * One pass turns a line into a flat array of tokens (jsmn-like: each token
 * knows where its subtree ends, so skipping a value is O(1)); nothing is
 * copied and nothing is allocated per value. Strict RFC 8259: no trailing
 * commas, no leading zeros, no raw control bytes or invalid UTF-8 in
 * strings, no bytes after the value; nesting is bounded (CDC_JR_MAX_DEPTH)
 * and so is a number's length. The token array is reused from line to line,
 * so a client reads its replies without allocating once it has grown.
 * Numbers are read in the C locale's format whatever the current locale. */
#ifndef CLOTHD_CLIENT_JSON_READ_H
#define CLOTHD_CLIENT_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDC_JR_MAX_DEPTH 32
#define CDC_JR_MAX_NUMBER 128 /* characters */

typedef enum cdc_jtype {
    CDC_JNULL,
    CDC_JFALSE,
    CDC_JTRUE,
    CDC_JNUMBER,
    CDC_JSTRING,
    CDC_JARRAY,
    CDC_JOBJECT,
} cdc_jtype;

typedef struct cdc_jtok {
    uint32_t start;  /* byte offset; for a string, of its first content byte */
    uint32_t len;    /* bytes; for a string, of its raw content (escapes undecoded) */
    uint32_t next;   /* index of the token after this one's subtree */
    uint32_t count;  /* array: elements; object: members */
    uint8_t type;    /* cdc_jtype */
    bool escaped;    /* a string holding a backslash */
} cdc_jtok;

typedef struct cdc_jdoc {
    const char *text;
    size_t size;
    cdc_jtok *tok;
    size_t n, cap;
} cdc_jdoc;

/* Parses `size` bytes. False with a message ("byte 12: ...") when the text
 * is not one valid JSON value or memory runs out. Keeps the token array for
 * the next parse; the text must outlive the accessors' use. */
bool cdc_jparse(cdc_jdoc *d, const char *text, size_t size, char *msg, size_t msgcap);
void cdc_jdoc_free(cdc_jdoc *d);

static inline cdc_jtype cdc_jtype_of(const cdc_jdoc *d, int i) { return (cdc_jtype)d->tok[i].type; }
/* The value of member `key` of object token `obj`, or -1 (also when obj < 0
 * or not an object). The first of duplicate members counts. */
int cdc_jget(const cdc_jdoc *d, int obj, const char *key);
/* Element i of array token `arr`, walking from the start; -1 when absent.
 * To visit every element, walk with cdc_jfirst / cdc_jnext instead. */
int cdc_jfirst(const cdc_jdoc *d, int container);
static inline int cdc_jnext(const cdc_jdoc *d, int i) { return (int)d->tok[i].next; }

/* Typed reads: false when the token is absent (< 0) or of another type. */
bool cdc_jbool(const cdc_jdoc *d, int i, bool *out);
bool cdc_jdouble(const cdc_jdoc *d, int i, double *out);
bool cdc_jfloat(const cdc_jdoc *d, int i, float *out);
/* An integral number in [0, max]. */
bool cdc_juint(const cdc_jdoc *d, int i, uint64_t max, uint64_t *out);
bool cdc_jvec3(const cdc_jdoc *d, int i, float out[3]);
/* A string equal to `s` (escapes decoded). */
bool cdc_jstr_eq(const cdc_jdoc *d, int i, const char *s);
/* Decodes a string into dst (cap bytes, always NUL-terminated, cut at a
 * character boundary); false when not a string. *len (may be NULL): the
 * bytes written. */
bool cdc_jstr_copy(const cdc_jdoc *d, int i, char *dst, size_t cap, size_t *len);
/* The decoded string's size in bytes (escapes decoded), -1 if not a string. */
long cdc_jstr_size(const cdc_jdoc *d, int i);

#endif
