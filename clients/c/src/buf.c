/* The growable buffer of buf.h. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"

bool cdc_buf_reserve(cdc_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return true;
    if (b->off > 0) { /* move the unconsumed bytes down first */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= extra)
            return true;
    }
    size_t need = b->len + extra;
    if (need < b->len)
        return false;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > ((size_t)-1) / 2)
            return false;
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool cdc_buf_append(cdc_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return true;
    if (!cdc_buf_reserve(b, n))
        return false;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return true;
}

void cdc_buf_consume(cdc_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0; /* empty: start over at the front */
}

void cdc_buf_clear(cdc_buf *b)
{
    b->off = b->len = 0;
}

void cdc_buf_free(cdc_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->off = b->len = b->cap = 0;
}
