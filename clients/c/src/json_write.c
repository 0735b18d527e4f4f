/* The JSON writer of json_write.h. */
#include "internal.h" /* first: the platform settings */

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_write.h"

void cdc_jw_init(cdc_jw *w, cdc_buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

static void put(cdc_jw *w, const char *p, size_t n)
{
    if (w->fault == CDC_JW_OK && !cdc_buf_append(w->out, p, n))
        w->fault = CDC_JW_NOMEM;
}

/* A comma before every value but the first of its container (a value right
 * after its key has had its comma before the key). */
static void separate(cdc_jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0 && w->need_comma[w->depth - 1])
        put(w, ",", 1);
    if (w->depth > 0)
        w->need_comma[w->depth - 1] = true;
}

static void open_container(cdc_jw *w, char c)
{
    separate(w);
    if (w->depth >= CDC_JW_MAX_DEPTH) {
        if (w->fault == CDC_JW_OK)
            w->fault = CDC_JW_TOO_DEEP;
        return;
    }
    put(w, &c, 1);
    w->need_comma[w->depth++] = false;
}

static void close_container(cdc_jw *w, char c)
{
    if (w->depth > 0)
        w->depth--;
    put(w, &c, 1);
}

void cdc_jw_object_open(cdc_jw *w) { open_container(w, '{'); }
void cdc_jw_object_close(cdc_jw *w) { close_container(w, '}'); }
void cdc_jw_array_open(cdc_jw *w) { open_container(w, '['); }
void cdc_jw_array_close(cdc_jw *w) { close_container(w, ']'); }

void cdc_jw_key(cdc_jw *w, const char *key)
{
    separate(w);
    if (w->fault == CDC_JW_OK)
        w->last_key = key; /* after a fault, it names the field at fault */
    put(w, "\"", 1);
    put(w, key, strlen(key));
    put(w, "\":", 2);
    w->after_key = true;
}

void cdc_jw_u64(cdc_jw *w, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    separate(w);
    put(w, tmp, (size_t)n);
}

void cdc_jw_i64(cdc_jw *w, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    separate(w);
    put(w, tmp, (size_t)n);
}

void cdc_jw_float(cdc_jw *w, float v)
{
    separate(w);
    if (!isfinite(v)) {
        if (w->fault == CDC_JW_OK)
            w->fault = CDC_JW_NOT_FINITE;
        return;
    }
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.9g", (double)v);
    /* The locale's decimal point back to '.' (cJSON does the same). */
    const char *point = localeconv()->decimal_point;
    if (point != NULL && point[0] != '\0' && point[0] != '.')
        for (int i = 0; i < n; i++)
            if (tmp[i] == point[0])
                tmp[i] = '.';
    put(w, tmp, (size_t)n);
}

void cdc_jw_bool(cdc_jw *w, bool v)
{
    separate(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void cdc_jw_string(cdc_jw *w, const char *s, size_t len)
{
    separate(w);
    if (!cdc_utf8_valid(s, len)) {
        if (w->fault == CDC_JW_OK)
            w->fault = CDC_JW_BAD_STRING;
        return;
    }
    static const char hex[] = "0123456789abcdef";
    put(w, "\"", 1);
    size_t run = 0; /* bytes copied as they are, flushed in one append */
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            run++;
            continue;
        }
        put(w, s + i - run, run);
        run = 0;
        char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
        if (ch == '"' || ch == '\\') {
            esc[1] = (char)ch;
            put(w, esc, 2);
        } else if (ch == '\n') {
            put(w, "\\n", 2);
        } else if (ch == '\t') {
            put(w, "\\t", 2);
        } else if (ch == '\r') {
            put(w, "\\r", 2);
        } else {
            put(w, esc, 6);
        }
    }
    put(w, s + len - run, run);
    put(w, "\"", 1);
}

void cdc_jw_raw(cdc_jw *w, const char *text, size_t len)
{
    separate(w);
    put(w, text, len);
}

bool cdc_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned cp;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}
