/* A growable byte buffer with a read offset: the client's input (bytes read,
 * not yet taken as messages) and output (requests written by the JSON
 * writer, not yet taken by the socket). Appends grow it; consuming from the
 * front only moves the offset, and the bytes are moved down lazily (when
 * the room at the end runs out) so a message just consumed stays readable
 * until the next append. */
#ifndef CLOTHD_CLIENT_BUF_H
#define CLOTHD_CLIENT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cdc_buf {
    char *data;
    size_t off; /* first unconsumed byte */
    size_t len; /* end of the bytes (off <= len <= cap) */
    size_t cap;
} cdc_buf;

/* Room for `extra` more bytes at data + len; false when out of memory. */
bool cdc_buf_reserve(cdc_buf *b, size_t extra);
bool cdc_buf_append(cdc_buf *b, const void *p, size_t n);
/* Bytes not consumed yet. */
static inline size_t cdc_buf_avail(const cdc_buf *b) { return b->len - b->off; }
static inline char *cdc_buf_head(const cdc_buf *b) { return b->data + b->off; }
void cdc_buf_consume(cdc_buf *b, size_t n);
/* Drops everything (keeps the memory). */
void cdc_buf_clear(cdc_buf *b);
void cdc_buf_free(cdc_buf *b);

#endif
