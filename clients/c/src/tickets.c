/* The tickets: a ring of entries, one per request whose reply has not been
 * collected, in request order. Tickets are consecutive numbers (and the
 * requests' wire ids), so a ticket's entry is found by subtraction. Replies
 * come in request order, so the next reply always belongs to the oldest
 * WAITING entry (next_reply). A slot is recycled once it and every older
 * one are DONE; its line buffer is kept for the next reply (no allocation
 * per reply once the ring has grown). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static cdc_entry *slot(const clothd_client *c, size_t offset)
{
    return &c->ring[(c->head + offset) % c->ring_cap];
}

const cdc_entry *cdc_entry_of_const(const clothd_client *c, clothd_ticket t)
{
    if (c == NULL || t < c->first || t - c->first >= c->count)
        return NULL;
    const cdc_entry *e = slot(c, (size_t)(t - c->first));
    return e->state == CDC_DONE ? NULL : e;
}

cdc_entry *cdc_entry_of(clothd_client *c, clothd_ticket t)
{
    return (cdc_entry *)cdc_entry_of_const(c, t);
}

static bool grow(clothd_client *c)
{
    size_t cap = c->ring_cap ? c->ring_cap * 2 : 64;
    cdc_entry *ring = calloc(cap, sizeof *ring);
    if (ring == NULL)
        return false;
    for (size_t i = 0; i < c->ring_cap; i++) /* unwrap, keeping every slot's buffer */
        ring[i] = c->ring[(c->head + i) % c->ring_cap];
    free(c->ring);
    c->ring = ring;
    c->ring_cap = cap;
    c->head = 0;
    return true;
}

cdc_entry *cdc_ring_push(clothd_client *c, cdc_kind kind)
{
    if (c->count == c->ring_cap && !grow(c))
        return NULL;
    cdc_entry *e = slot(c, c->count);
    char *line = e->line; /* the slot's buffer outlives its entry */
    size_t cap = e->cap;
    memset(e, 0, sizeof *e);
    e->line = line;
    e->cap = cap;
    e->kind = (uint8_t)kind;
    e->state = CDC_WAITING;
    if (c->count == 0)
        c->first = c->next_ticket;
    c->count++;
    c->next_ticket++;
    return e;
}

static void mark_done(cdc_entry *e)
{
    e->state = CDC_DONE;
    e->ref = NULL;
    e->in_place = false;
    free(e->ids);
    e->ids = NULL;
    e->nids = 0;
}

/* Recycles the slots at the head that are done. */
static void recycle(clothd_client *c)
{
    while (c->count > 0 && slot(c, 0)->state == CDC_DONE) {
        c->head = (c->head + 1) % c->ring_cap;
        c->count--;
        c->first++;
        if (c->next_reply > 0)
            c->next_reply--;
    }
    if (c->count == 0)
        c->first = c->next_ticket;
}

void cdc_entry_done(clothd_client *c, clothd_ticket t)
{
    cdc_entry *e = cdc_entry_of(c, t);
    if (e == NULL)
        return;
    mark_done(e);
    recycle(c);
}

cdc_entry *cdc_ring_next_waiting(clothd_client *c, clothd_ticket *t)
{
    while (c->next_reply < c->count && slot(c, c->next_reply)->state != CDC_WAITING)
        c->next_reply++;
    if (c->next_reply >= c->count)
        return NULL;
    *t = c->first + c->next_reply;
    return slot(c, c->next_reply);
}

void cdc_ring_fail_waiting(clothd_client *c, clothd_code code, bool reconnecting)
{
    for (size_t i = 0; i < c->count; i++) {
        cdc_entry *e = slot(c, i);
        if (e->state != CDC_WAITING)
            continue;
        e->state = CDC_FAILED;
        e->fail = code;
        e->reconnecting = reconnecting;
    }
    c->next_reply = c->count;
    for (size_t i = 0; i < c->count; i++) { /* entries nobody will collect go at once */
        cdc_entry *e = slot(c, i);
        if (e->state == CDC_FAILED && (e->discard || e->role != CDC_ROLE_USER))
            mark_done(e);
    }
    recycle(c);
}

void cdc_ring_free(clothd_client *c)
{
    for (size_t i = 0; i < c->ring_cap; i++) {
        free(c->ring[i].line);
        free(c->ring[i].ids);
    }
    free(c->ring);
    c->ring = NULL;
    c->ring_cap = c->count = c->head = 0;
}

void cdc_async_push(clothd_client *c, const clothd_error *e)
{
    c->stats.async_errors++;
    if (c->nasync == CDC_ASYNC_ERRORS) /* keep the newest */
        memmove(&c->async[0], &c->async[1], (CDC_ASYNC_ERRORS - 1) * sizeof c->async[0]);
    else
        c->nasync++;
    c->async[c->nasync - 1] = *e;
}

bool clothd_take_async_error(clothd_client *c, clothd_error *err)
{
    if (c == NULL || c->nasync == 0)
        return false;
    if (err != NULL)
        *err = c->async[0];
    c->nasync--;
    memmove(&c->async[0], &c->async[1], c->nasync * sizeof c->async[0]);
    return true;
}

bool clothd_ready(const clothd_client *c, clothd_ticket ticket)
{
    const cdc_entry *e = cdc_entry_of_const(c, ticket);
    return e != NULL && e->state != CDC_WAITING;
}

void clothd_discard(clothd_client *c, clothd_ticket ticket)
{
    cdc_entry *e = cdc_entry_of(c, ticket);
    if (e == NULL || e->role != CDC_ROLE_USER)
        return;
    if (e->state == CDC_WAITING)
        e->discard = true;
    else
        cdc_entry_done(c, ticket);
}

size_t clothd_outstanding(const clothd_client *c)
{
    size_t n = 0;
    for (size_t i = 0; c != NULL && i < c->count; i++) {
        const cdc_entry *e = slot(c, i);
        if (e->state != CDC_DONE && e->role == CDC_ROLE_USER && !e->discard)
            n++;
    }
    return n;
}
