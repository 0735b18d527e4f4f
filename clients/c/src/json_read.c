/* The strict JSON reader of json_read.h. */
#include "internal.h" /* first: the platform settings */

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "json_write.h" /* cdc_utf8_valid */

typedef struct parser {
    const char *s;
    size_t n, pos;
    cdc_jdoc *d;
    char *msg;
    size_t msgcap;
} parser;

static bool fail(parser *p, const char *what)
{
    if (p->msgcap > 0)
        snprintf(p->msg, p->msgcap, "byte %zu: %s", p->pos, what);
    return false;
}

static void skip_space(parser *p)
{
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

/* A new token; -1 when out of memory. */
static int add_token(parser *p, cdc_jtype type, size_t start)
{
    cdc_jdoc *d = p->d;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        cdc_jtok *t = realloc(d->tok, cap * sizeof *t);
        if (t == NULL)
            return -1;
        d->tok = t;
        d->cap = cap;
    }
    cdc_jtok *t = &d->tok[d->n];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    t->start = (uint32_t)start;
    return (int)d->n++;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static long read_hex4(const char *s)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hex_value(s[k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* At the opening quote. */
static bool parse_string(parser *p)
{
    size_t start = ++p->pos;
    bool escaped = false;
    for (;;) {
        if (p->pos >= p->n)
            return fail(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(p, "raw control byte inside a string");
        if (c != '\\') {
            p->pos++;
            continue;
        }
        escaped = true;
        if (p->pos + 1 >= p->n)
            return fail(p, "unterminated escape");
        char e = p->s[p->pos + 1];
        if (strchr("\"\\/bfnrt", e) != NULL && e != '\0') {
            p->pos += 2;
            continue;
        }
        if (e != 'u')
            return fail(p, "invalid escape");
        if (p->n - p->pos < 6)
            return fail(p, "short \\u escape");
        long u = read_hex4(p->s + p->pos + 2);
        if (u < 0)
            return fail(p, "invalid \\u escape");
        if (u == 0)
            return fail(p, "\\u0000 inside a string");
        p->pos += 6;
        if (u >= 0xDC00 && u <= 0xDFFF)
            return fail(p, "lone low surrogate");
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (p->n - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                return fail(p, "high surrogate without its low half");
            long lo = read_hex4(p->s + p->pos + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return fail(p, "high surrogate without its low half");
            p->pos += 6;
        }
    }
    size_t len = p->pos - start;
    if (!cdc_utf8_valid(p->s + start, len)) {
        p->pos = start;
        return fail(p, "invalid UTF-8 in a string");
    }
    int t = add_token(p, CDC_JSTRING, start);
    if (t < 0)
        return fail(p, "out of memory");
    p->d->tok[t].len = (uint32_t)len;
    p->d->tok[t].escaped = escaped;
    p->d->tok[t].next = (uint32_t)p->d->n;
    p->pos++; /* the closing quote */
    return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool parse_number(parser *p)
{
    size_t start = p->pos;
    const char *s = p->s;
    if (p->pos < p->n && s[p->pos] == '-')
        p->pos++;
    if (p->pos >= p->n || !is_digit(s[p->pos]))
        return fail(p, "invalid number");
    if (s[p->pos] == '0') {
        p->pos++;
        if (p->pos < p->n && is_digit(s[p->pos]))
            return fail(p, "leading zero in a number");
    } else {
        while (p->pos < p->n && is_digit(s[p->pos]))
            p->pos++;
    }
    if (p->pos < p->n && s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= p->n || !is_digit(s[p->pos]))
            return fail(p, "a digit must follow the decimal point");
        while (p->pos < p->n && is_digit(s[p->pos]))
            p->pos++;
    }
    if (p->pos < p->n && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->n && (s[p->pos] == '+' || s[p->pos] == '-'))
            p->pos++;
        if (p->pos >= p->n || !is_digit(s[p->pos]))
            return fail(p, "a digit must follow the exponent");
        while (p->pos < p->n && is_digit(s[p->pos]))
            p->pos++;
    }
    if (p->pos - start >= CDC_JR_MAX_NUMBER)
        return fail(p, "number too long");
    int t = add_token(p, CDC_JNUMBER, start);
    if (t < 0)
        return fail(p, "out of memory");
    p->d->tok[t].len = (uint32_t)(p->pos - start);
    p->d->tok[t].next = (uint32_t)p->d->n;
    return true;
}

static bool parse_literal(parser *p, const char *word, cdc_jtype type)
{
    size_t len = strlen(word);
    if (p->n - p->pos < len || memcmp(p->s + p->pos, word, len) != 0)
        return fail(p, "invalid literal");
    int t = add_token(p, type, p->pos);
    if (t < 0)
        return fail(p, "out of memory");
    p->d->tok[t].len = (uint32_t)len;
    p->d->tok[t].next = (uint32_t)p->d->n;
    p->pos += len;
    return true;
}

static bool parse_value(parser *p, int depth);

/* At '[' or '{'. */
static bool parse_container(parser *p, int depth, bool object)
{
    if (depth >= CDC_JR_MAX_DEPTH)
        return fail(p, "nested too deep");
    int t = add_token(p, object ? CDC_JOBJECT : CDC_JARRAY, p->pos);
    if (t < 0)
        return fail(p, "out of memory");
    size_t open_at = p->pos++;
    char close = object ? '}' : ']';
    uint32_t count = 0;
    skip_space(p);
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_space(p);
            if (object) {
                if (p->pos >= p->n || p->s[p->pos] != '"')
                    return fail(p, "expected a member name");
                if (!parse_string(p))
                    return false;
                skip_space(p);
                if (p->pos >= p->n || p->s[p->pos] != ':')
                    return fail(p, "expected ':'");
                p->pos++;
                skip_space(p);
            }
            if (!parse_value(p, depth + 1))
                return false;
            count++;
            skip_space(p);
            if (p->pos < p->n && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->n && p->s[p->pos] == close) {
                p->pos++;
                break;
            }
            return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    cdc_jtok *tok = &p->d->tok[t];
    tok->count = count;
    tok->len = (uint32_t)(p->pos - open_at);
    tok->next = (uint32_t)p->d->n;
    return true;
}

static bool parse_value(parser *p, int depth)
{
    if (p->pos >= p->n)
        return fail(p, "expected a value");
    switch (p->s[p->pos]) {
    case '{':
        return parse_container(p, depth, true);
    case '[':
        return parse_container(p, depth, false);
    case '"':
        return parse_string(p);
    case 't':
        return parse_literal(p, "true", CDC_JTRUE);
    case 'f':
        return parse_literal(p, "false", CDC_JFALSE);
    case 'n':
        return parse_literal(p, "null", CDC_JNULL);
    default:
        return parse_number(p);
    }
}

bool cdc_jparse(cdc_jdoc *d, const char *text, size_t size, char *msg, size_t msgcap)
{
    parser p = {text, size, 0, d, msg, msgcap};
    d->text = text;
    d->size = size;
    d->n = 0;
    if (size >= UINT32_MAX)
        return fail(&p, "text too long");
    skip_space(&p);
    if (!parse_value(&p, 0))
        return false;
    skip_space(&p);
    if (p.pos != size)
        return fail(&p, "data after the JSON value");
    return true;
}

void cdc_jdoc_free(cdc_jdoc *d)
{
    free(d->tok);
    memset(d, 0, sizeof *d);
}

int cdc_jfirst(const cdc_jdoc *d, int container)
{
    if (container < 0 || d->tok[container].count == 0)
        return -1;
    return container + 1;
}

int cdc_jget(const cdc_jdoc *d, int obj, const char *key)
{
    if (obj < 0 || d->tok[obj].type != CDC_JOBJECT)
        return -1;
    int i = obj + 1;
    for (uint32_t m = 0; m < d->tok[obj].count; m++) {
        if (cdc_jstr_eq(d, i, key))
            return i + 1;
        i = (int)d->tok[i + 1].next;
    }
    return -1;
}

bool cdc_jbool(const cdc_jdoc *d, int i, bool *out)
{
    if (i < 0 || (d->tok[i].type != CDC_JTRUE && d->tok[i].type != CDC_JFALSE))
        return false;
    *out = d->tok[i].type == CDC_JTRUE;
    return true;
}

bool cdc_jdouble(const cdc_jdoc *d, int i, double *out)
{
    if (i < 0 || d->tok[i].type != CDC_JNUMBER)
        return false;
    char tmp[CDC_JR_MAX_NUMBER + 1];
    size_t len = d->tok[i].len;
    memcpy(tmp, d->text + d->tok[i].start, len);
    tmp[len] = '\0';
    /* strtod reads the locale's decimal point: give it that one. */
    const char *point = localeconv()->decimal_point;
    if (point != NULL && point[0] != '\0' && point[0] != '.' && point[1] == '\0') {
        char *dot = strchr(tmp, '.');
        if (dot != NULL)
            *dot = point[0];
    }
    char *end;
    double v = strtod(tmp, &end);
    if (end != tmp + len || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool cdc_jfloat(const cdc_jdoc *d, int i, float *out)
{
    double v;
    if (!cdc_jdouble(d, i, &v) || v > FLT_MAX || v < -FLT_MAX)
        return false;
    *out = (float)v;
    return true;
}

bool cdc_juint(const cdc_jdoc *d, int i, uint64_t max, uint64_t *out)
{
    if (i < 0 || d->tok[i].type != CDC_JNUMBER)
        return false;
    const char *s = d->text + d->tok[i].start;
    size_t len = d->tok[i].len;
    bool plain = len > 0 && len <= 20;
    for (size_t k = 0; k < len && plain; k++)
        plain = is_digit(s[k]);
    if (plain) { /* the common case, exact up to 2^64 - 1 */
        uint64_t v = 0;
        for (size_t k = 0; k < len; k++) {
            uint64_t digit = (uint64_t)(s[k] - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return false;
            v = v * 10 + digit;
        }
        if (v > max)
            return false;
        *out = v;
        return true;
    }
    double v; /* 2.0, 1e3, -0: integral values written otherwise */
    if (!cdc_jdouble(d, i, &v) || v < 0 || v >= 18446744073709551616.0 || v != (double)(uint64_t)v ||
        (uint64_t)v > max)
        return false;
    *out = (uint64_t)v;
    return true;
}

bool cdc_jvec3(const cdc_jdoc *d, int i, float out[3])
{
    if (i < 0 || d->tok[i].type != CDC_JARRAY || d->tok[i].count != 3)
        return false;
    int e = i + 1;
    for (int k = 0; k < 3; k++, e = cdc_jnext(d, e))
        if (!cdc_jfloat(d, e, &out[k]))
            return false;
    return true;
}

/* Decodes the raw content of a validated string into dst (at most cap
 * bytes; dst may be NULL to measure); returns the decoded size. */
static size_t decode(const char *s, size_t len, char *dst, size_t cap)
{
    size_t w = 0;
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (dst != NULL && w < cap)                                                                \
            dst[w] = (char)(ch);                                                                   \
        w++;                                                                                       \
    } while (0)
    for (size_t i = 0; i < len;) {
        if (s[i] != '\\') {
            PUT(s[i]);
            i++;
            continue;
        }
        char e = s[i + 1];
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            PUT(to[strchr(from, e) - from]);
            i += 2;
            continue;
        }
        unsigned long cp = (unsigned long)read_hex4(s + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned long lo = (unsigned long)read_hex4(s + i + 2);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        if (cp < 0x80) {
            PUT(cp);
        } else if (cp < 0x800) {
            PUT(0xC0 | (cp >> 6));
            PUT(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            PUT(0xE0 | (cp >> 12));
            PUT(0x80 | ((cp >> 6) & 0x3F));
            PUT(0x80 | (cp & 0x3F));
        } else {
            PUT(0xF0 | (cp >> 18));
            PUT(0x80 | ((cp >> 12) & 0x3F));
            PUT(0x80 | ((cp >> 6) & 0x3F));
            PUT(0x80 | (cp & 0x3F));
        }
    }
#undef PUT
    return w;
}

long cdc_jstr_size(const cdc_jdoc *d, int i)
{
    if (i < 0 || d->tok[i].type != CDC_JSTRING)
        return -1;
    const cdc_jtok *t = &d->tok[i];
    if (!t->escaped)
        return (long)t->len;
    return (long)decode(d->text + t->start, t->len, NULL, 0);
}

bool cdc_jstr_eq(const cdc_jdoc *d, int i, const char *s)
{
    if (i < 0 || d->tok[i].type != CDC_JSTRING)
        return false;
    const cdc_jtok *t = &d->tok[i];
    size_t slen = strlen(s);
    if (!t->escaped)
        return t->len == slen && memcmp(d->text + t->start, s, slen) == 0;
    char tmp[256];
    size_t n = decode(d->text + t->start, t->len, tmp, sizeof tmp);
    return n == slen && n <= sizeof tmp && memcmp(tmp, s, n) == 0;
}

bool cdc_jstr_copy(const cdc_jdoc *d, int i, char *dst, size_t cap, size_t *len)
{
    if (i < 0 || d->tok[i].type != CDC_JSTRING || cap == 0)
        return false;
    const cdc_jtok *t = &d->tok[i];
    size_t n = decode(d->text + t->start, t->len, dst, cap - 1);
    if (n > cap - 1) { /* cut: drop a last character that did not fit whole */
        n = cap - 1;
        size_t k = n;
        while (k > 0 && n - k < 4 && ((unsigned char)dst[k - 1] & 0xC0) == 0x80)
            k--;
        if (k > 0) {
            unsigned char lead = (unsigned char)dst[k - 1];
            size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
            if (k - 1 + want > n)
                n = k - 1;
        }
    }
    dst[n] = '\0';
    if (len != NULL)
        *len = n;
    return true;
}
