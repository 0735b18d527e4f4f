/* What the library's files share and the public header hides: the client
 * struct, the queue of requests awaiting replies (tickets), the
 * subscriptions kept for a reconnect, and the helpers that build a request
 * and wait for its reply. One connection's whole state lives in one
 * clothd_client; there are no globals. */
#ifndef CLOTHD_CLIENT_INTERNAL_H
#define CLOTHD_CLIENT_INTERNAL_H

#if defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
#define __USE_MINGW_ANSI_STDIO 1 /* C99 printf (%zu) on mingw-w64; before any libc header */
#endif

#include <stdarg.h>

#include "buf.h"
#include "clothd/client.h"
#include "json_read.h"
#include "json_write.h"
#include "net.h"

#if defined(__MINGW32__)
#define CDC_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define CDC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CDC_PRINTF(f, a)
#endif

/* The command a ticket belongs to: which clothd_recv_X may collect it. */
typedef enum cdc_kind {
    CDC_K_CREATE,
    CDC_K_DESTROY,
    CDC_K_PIN,
    CDC_K_UNPIN,
    CDC_K_WIND,
    CDC_K_GRAVITY,
    CDC_K_ADD_COLLIDER,
    CDC_K_MOVE_COLLIDER,
    CDC_K_REMOVE_COLLIDER,
    CDC_K_ENABLE,
    CDC_K_STEP,
    CDC_K_GET,
    CDC_K_SUBSCRIBE,
    CDC_K_UNSUBSCRIBE,
    CDC_K_STATUS,
    CDC_K_DEBUG,
    CDC_K_SET,
    CDC_K_TRANSFORM,
    CDC_K_ATTACH,
    CDC_K_TOPOLOGY,
    CDC_K_PING,
    CDC_K_AUTH,
    CDC_K_STATS,
    CDC_K_SAVE,
    CDC_K_LOAD,
    CDC_K_RECORD,
    CDC_K_REPLAY,
    CDC_K_SKIN,
    CDC_K_TELEPORT,
    CDC_K_SCENE,
    CDC_K_SCENES,
    CDC_K_HELLO,
    CDC_K_RAW,
} cdc_kind;

typedef enum cdc_state {
    CDC_WAITING,  /* sent (or queued); no reply yet */
    CDC_ARRIVED,  /* the reply is kept (line, or in place) */
    CDC_FAILED,   /* the connection dropped first (fail, reconnecting) */
    CDC_DONE,     /* collected or dropped: the slot waits to be recycled */
} cdc_state;

/* Internal requests the client sends itself, handled when their reply
 * comes: `auth` first on a connection, `hello`, and each renewed
 * subscription. */
typedef enum cdc_role {
    CDC_ROLE_USER,
    CDC_ROLE_AUTH,
    CDC_ROLE_HELLO,
    CDC_ROLE_RESUBSCRIBE,
} cdc_role;

/* subscribe's options, as sent and as kept for a reconnect. */
typedef struct cdc_sub_opts {
    clothd_opt_b quantize;
    clothd_opt_i every;
    uint32_t channels;     /* CLOTHD_CHANNEL_* bits; 0: not sent */
    bool shm;              /* "shm":true (never sent false: that is the default) */
} cdc_sub_opts;

typedef struct cdc_entry {
    uint8_t kind;          /* cdc_kind */
    uint8_t state;         /* cdc_state */
    uint8_t role;          /* cdc_role */
    bool discard;          /* nobody holds the ticket: drop the reply */
    bool in_place;         /* the line is still in the input buffer (ref) */
    bool any_id;           /* clothd_send_line: the reply's id is the line's own */
    bool reconnecting;     /* FAILED: automatic reconnect was on */
    bool shm_failed;       /* an ok subscribe whose ring could not be mapped (c->shm_error) */
    clothd_code fail;      /* FAILED: why */
    /* Subscription bookkeeping, applied when an ok reply arrives. */
    uint32_t instance;     /* destroy / (un)subscribe `instance`; resubscribe: its key */
    bool all;              /* unsubscribe from everything */
    cdc_sub_opts sub;      /* subscribe options */
    uint32_t *ids;         /* unsubscribe `instances` (owned) */
    size_t nids;
    char scene[CLOTHD_SCENE_MAX + 1]; /* (un)subscribe a scene's: its name; "" none */
    /* The reply. */
    const char *ref;       /* in place: points into the input buffer */
    char *line;            /* kept copy (owned, reused by the slot) */
    size_t len, cap;
} cdc_entry;

/* One subscription the client holds (instance 0: every instance, or the
 * scene named in `scene`). */
typedef struct cdc_sub {
    uint32_t instance;
    char scene[CLOTHD_SCENE_MAX + 1]; /* "" for none */
    cdc_sub_opts opts;
} cdc_sub;

typedef struct cdc_target {
    uint32_t instance;
    clothd_frame_target *t;
} cdc_target;

/* The shared-memory ring of this connection (shm.c). */
typedef struct cdc_shm {
    const unsigned char *map; /* its header page then its data, read-only; NULL: none mapped */
    uint64_t size;            /* data bytes */
    char name[256];           /* as the subscribe reply named it ("/clothd-4242-9f3a01c7") */
    unsigned char *copy;      /* the frame being delivered, copied out of the ring (owned) */
    size_t copy_cap;
} cdc_shm;

typedef enum cdc_link {
    CDC_LINK_UP,
    CDC_LINK_CONNECTING,   /* a non-blocking connect is in progress */
    CDC_LINK_RETRY,        /* waiting for the next attempt */
    CDC_LINK_CLOSED,       /* for good */
} cdc_link;

#define CDC_ASYNC_ERRORS 16

struct clothd_client {
    /* Configuration (strings owned). */
    char *host;
    uint16_t port;
    char *unix_path;       /* connected to instead of host:port when not NULL */
    char *endpoint;        /* "host:port", "[v6]:port" or "unix:PATH": what errors name */
    char *token;
    int timeout_ms;
    bool reconnect;
    int reconnect_timeout_ms;
    int rcvbuf;
    size_t max_message;
    clothd_frame_fn on_frame;
    clothd_event_fn on_event;
    clothd_warning_fn on_warning;
    void *user;
    bool strict;           /* hello {"strict":true} on every connection */
    bool no_hello;
    char **require;        /* features the server must list (owned copies) */
    size_t nrequire;
    clothd_server_info info; /* what the last hello said (hello.c) */

    /* The connection. */
    bool net_ready;        /* cdc_net_init done: cdc_net_cleanup at close */
    cdc_addr addrs[CDC_MAX_ADDRS];
    size_t naddrs, addr_next;
    clothd_socket sock;
    cdc_link link;
    bool initial;          /* clothd_connect's first attempt: no retries */
    bool peer_closed;      /* EOF seen; dropped once the buffered messages are read */
    bool send_failed;      /* a write failed: read what the server said, then drop */
    char peer_reason[300]; /* why the server is going (a last error line, a reset) */
    int64_t retry_at, give_up_at;
    int backoff_ms;
    clothd_code close_code;
    char close_reason[400];
    clothd_access access;
    cdc_buf in, out;
    cdc_jdoc doc;

    /* Tickets: a ring of entries for tickets [first, first + count). */
    cdc_entry *ring;
    size_t ring_cap, head, count;
    size_t next_reply;     /* offset from head of the oldest WAITING entry */
    clothd_ticket first, next_ticket;
    clothd_ticket awaiting; /* a blocking wait's ticket: its reply stays in place */
    bool stop_batch;       /* the awaited reply arrived: stop dispatching */

    cdc_sub *subs;
    size_t nsubs, subs_cap;
    cdc_target *targets;
    size_t ntargets, targets_cap;
    clothd_error async[CDC_ASYNC_ERRORS];
    size_t nasync;
    clothd_client_stats stats;
    char *scene;           /* clothd_use_scene's (owned), or NULL */
    cdc_shm shm;           /* subscribe's shm: its ring, mapped from the reply, unmapped by a drop */
    clothd_error shm_error; /* why the last ring could not be mapped */
};

/* ---- errors (errors.c) ---- */
clothd_code cdc_fail(clothd_error *err, clothd_code code, const char *fmt, ...) CDC_PRINTF(3, 4);
void cdc_ok(clothd_error *err);
/* The error object of a reply ({"ok":false,"error":{...}}) into err. */
clothd_code cdc_reply_error(const cdc_jdoc *d, int root, clothd_error *err);

/* ---- the connection (conn.c) ---- */
/* Drops the connection: fails the waiting tickets, then reconnects when
 * allowed (fatal: never). */
void cdc_drop(clothd_client *c, clothd_code code, bool fatal, const char *fmt, ...) CDC_PRINTF(4, 5);
/* Starts connecting (initial: one pass over the addresses, no retries). */
void cdc_link_start(clothd_client *c, bool initial);
/* One round of I/O: drives a reconnect, writes, waits up to `deadline`
 * (absolute ms; -1: forever; 0: not at all), reads and dispatches.
 * *handled += messages dispatched. CLOTHD_E_CLOSED once closed for good. */
clothd_code cdc_io(clothd_client *c, int64_t deadline, int *handled, clothd_error *err);
/* Writes what the socket takes now (never waits). */
void cdc_flush_some(clothd_client *c);
/* Dispatches the complete messages already read (no socket call). */
void cdc_dispatch_buffered(clothd_client *c, int *handled);
/* The absolute deadline of a blocking call (-1: none). */
int64_t cdc_deadline(const clothd_client *c);
/* Waits until the link is up (blocking calls during a reconnect). */
clothd_code cdc_wait_link(clothd_client *c, int64_t deadline, clothd_error *err);
/* The error of a closed link (code and the reason it closed). */
clothd_code cdc_closed_error(const clothd_client *c, clothd_error *err);

/* ---- tickets (tickets.c) ---- */
cdc_entry *cdc_entry_of(clothd_client *c, clothd_ticket t);
const cdc_entry *cdc_entry_of_const(const clothd_client *c, clothd_ticket t);
/* A new WAITING entry for ticket c->next_ticket; NULL when out of memory. */
cdc_entry *cdc_ring_push(clothd_client *c, cdc_kind kind);
/* Marks an entry done and recycles the slots at the head that are done. */
void cdc_entry_done(clothd_client *c, clothd_ticket t);
/* The entry the next reply belongs to, or NULL. */
cdc_entry *cdc_ring_next_waiting(clothd_client *c, clothd_ticket *t);
/* Fails every WAITING entry. */
void cdc_ring_fail_waiting(clothd_client *c, clothd_code code, bool reconnecting);
void cdc_ring_free(clothd_client *c);
/* Keeps an error reply of a ticketless request. */
void cdc_async_push(clothd_client *c, const clothd_error *e);

/* ---- subscriptions and frame targets (subs.c) ---- */
void cdc_sub_put(clothd_client *c, uint32_t instance, const cdc_sub_opts *o);
/* subscribe's "quantize", "every", "channels" and "shm", each only when set. */
void cdc_put_sub_opts(cdc_jw *w, const cdc_sub_opts *o);
void cdc_sub_remove(clothd_client *c, uint32_t instance);
void cdc_sub_clear(clothd_client *c);
clothd_frame_target *cdc_target_of(clothd_client *c, uint32_t instance);
/* Applies a user request's ok reply to the subscriptions list, and maps
 * the ring a subscribe reply names (e->shm_failed and c->shm_error when it
 * cannot). */
void cdc_sub_apply(clothd_client *c, cdc_entry *e, const cdc_jdoc *d, int root);
/* Queues `auth`, `hello` and one `subscribe` per kept subscription on a new connection. */
bool cdc_sub_renew(clothd_client *c);
/* A reply to an internal request (auth, resubscribe). */
void cdc_internal_reply(clothd_client *c, cdc_entry *e, clothd_ticket t, const cdc_jdoc *d, int root);
void cdc_subs_free(clothd_client *c);

/* ---- shared-memory frames (shm.c) ---- */
/* CLOTHD_OK where this build can map a ring; the Windows build's CLOTHD_E_USAGE. */
clothd_code cdc_shm_supported(clothd_error *err);
/* Maps the ring that a subscribe reply's "shm" object (token `shm`) names,
 * unless it is the one mapped: CLOTHD_OK, or the error naming the object. */
clothd_code cdc_shm_attach(clothd_client *c, const cdc_jdoc *d, int shm, clothd_error *err);
/* Unmaps the ring (a drop: the next connection's replies name it again). */
void cdc_shm_detach(clothd_client *c);
/* Detaches and frees the copy buffer (clothd_close). */
void cdc_shm_free(clothd_client *c);
typedef enum cdc_shm_result {
    CDC_SHM_WHOLE,   /* *out holds the frame, `length` bytes, valid until the next copy */
    CDC_SHM_MISSED,  /* overwritten before (or while) it was copied, or no ring mapped */
    CDC_SHM_BROKEN,  /* not a frame of this ring, or out of memory: err says which */
} cdc_shm_result;
/* Copies the `length` bytes at ring position `position` out (the seqlock
 * read of PROTOCOL.md "Shared-memory frames"). */
cdc_shm_result cdc_shm_copy(clothd_client *c, uint64_t position, uint32_t length, const unsigned char **out,
                            clothd_error *err);

/* ---- frames (frame.c) ---- */
void cdc_frame_dispatch(clothd_client *c, const unsigned char *bytes, size_t size);

/* ---- requests (request.c) ---- */
typedef struct cdc_req {
    clothd_client *c;
    cdc_jw w;
    size_t mark;         /* output bytes (from the buffer's offset) before this request */
    cdc_kind kind;
    cdc_role role;
    bool scoped;         /* a user request of a command that takes "scene" (cdc_req_end adds it) */
} cdc_req;

/* Starts {"id":N,"cmd":"<cmd>" in the output buffer; fails when the link is
 * not up (CLOTHD_E_CLOSED, reconnecting set during a reconnect). */
clothd_code cdc_req_begin(cdc_req *r, clothd_client *c, cdc_kind kind, const char *cmd, clothd_error *err);
/* Ends the request, queues its ticket and writes what the socket takes.
 * ticket NULL: the reply is dropped. *entry_out (may be NULL): the entry,
 * to add bookkeeping (valid until the next request). */
clothd_code cdc_req_end(cdc_req *r, clothd_ticket *ticket, cdc_entry **entry_out, clothd_error *err);
/* Reads a reply's members into `out` (zeroed before); fills err on a
 * malformed reply. `arg`: the recv call's extra argument. */
typedef clothd_code (*cdc_decode_fn)(clothd_client *c, const cdc_jdoc *d, int root, void *out, const void *arg,
                                     clothd_error *err);

/* Waits for a ticket's reply (until `deadline`), checks it, decodes it with
 * `fn` (may be NULL) and releases the ticket, then dispatches what was read
 * behind the reply. `kinds`: the cdc_kind bits a ticket may have (0: any).
 * `raw`: call fn for an error reply too. On CLOTHD_E_TIMEOUT the ticket
 * stays. `out` (out_size bytes) is zeroed first. */
clothd_code cdc_collect(clothd_client *c, clothd_ticket t, uint64_t kinds, int64_t deadline, bool raw,
                        cdc_decode_fn fn, void *out, size_t out_size, const void *arg, clothd_error *err);

/* A blocking call: waits for the link, sends (SEND sets `ticket_`), then
 * collects the reply within the same deadline. */
#define CDC_BLOCKING(c, err, SEND, KIND, FN, OUT, OUT_SIZE, ARG)                                   \
    do {                                                                                           \
        if ((OUT) != NULL)                                                                         \
            memset((OUT), 0, (OUT_SIZE));                                                          \
        if ((c) == NULL)                                                                           \
            return cdc_fail((err), CLOTHD_E_USAGE, "client: NULL");                               \
        int64_t deadline_ = cdc_deadline(c);                                                       \
        clothd_ticket ticket_ = 0;                                                                 \
        clothd_code rc_ = cdc_wait_link((c), deadline_, (err));                                    \
        if (rc_ == CLOTHD_OK)                                                                      \
            rc_ = (SEND);                                                                          \
        if (rc_ != CLOTHD_OK)                                                                      \
            return rc_;                                                                            \
        rc_ = cdc_collect((c), ticket_, CDC_KIND_BIT(KIND), deadline_, false, (FN), (OUT), (OUT_SIZE), \
                          (ARG), (err));                                                           \
        if (rc_ == CLOTHD_E_TIMEOUT)                                                               \
            clothd_discard((c), ticket_);                                                          \
        return rc_;                                                                                \
    } while (0)

#define CDC_KIND_BIT(k) ((uint64_t)1 << (k))
_Static_assert(CDC_K_RAW < 64, "cdc_kind bits fit cdc_collect's uint64_t");

/* A binary request (PROTOCOL.md "Binary requests"): begin checks the link
 * and marks the output buffer, the caller appends the message (its request
 * id from cdc_req_binary_id), end queues the ticket (ok false: drops what
 * was appended, CLOTHD_E_NOMEM). */
clothd_code cdc_req_begin_binary(cdc_req *r, clothd_client *c, cdc_kind kind, clothd_error *err);
uint32_t cdc_req_binary_id(const cdc_req *r);
clothd_code cdc_req_end_binary(cdc_req *r, bool ok, clothd_ticket *ticket, clothd_error *err);

/* ---- the handshake (hello.c) ---- */
/* Whether connections send hello (not no_hello, or strict, or required features). */
bool cdc_hello_wanted(const clothd_client *c);
/* Queues the connection's internal hello (after auth); false when out of memory. */
bool cdc_hello_queue(clothd_client *c);
/* The internal hello's reply: kept, or the server refused; required
 * features checked (a missing one drops the connection for good). */
void cdc_hello_reply(clothd_client *c, const cdc_jdoc *d, int root, bool ok, const clothd_error *er);
/* Whether `info` lists `feature`. */
bool cdc_feature_listed(const clothd_server_info *info, const char *feature);
/* CLOTHD_OK when the server has `feature` (or nothing is known of it);
 * else CLOTHD_E_INCOMPATIBLE naming it, the server and `what` needs it. */
clothd_code cdc_need(clothd_client *c, const char *feature, const char *what, clothd_error *err);

/* ---- scenes (placement.c) ---- */
/* Whether a request of this kind takes "scene" (wind: only with an instance; the sender decides). */
bool cdc_kind_takes_scene(cdc_kind kind);

/* ---- garments (garments.c, binary.c) ---- */
/* The binary encoders: append one whole request to `out`; false when out
 * of memory (nothing appended then). `normals` may be NULL. */
bool cdc_bin_skin(cdc_buf *out, uint32_t instance, uint32_t request_id, const float *positions,
                  const float *normals, size_t count);
bool cdc_bin_pin(cdc_buf *out, uint32_t instance, uint32_t request_id, const uint32_t *particles,
                 const float *positions, size_t count);
/* The material's newer members (inertia, painted properties): checked, then written. */
clothd_code cdc_check_paint(const clothd_material *m, clothd_error *err);
void cdc_put_garment_material(cdc_jw *w, const clothd_material *m);
/* topology's painted arrays and "skinned" into t. */
clothd_code cdc_read_painted(const cdc_jdoc *d, int root, clothd_topology *t, clothd_error *err);
void cdc_free_painted(clothd_topology *t);

/* Field writers for optionals: only set members are written. */
void cdc_put_f(cdc_jw *w, const char *key, clothd_opt_f v);
void cdc_put_i(cdc_jw *w, const char *key, clothd_opt_i v);
void cdc_put_u(cdc_jw *w, const char *key, clothd_opt_u v);
void cdc_put_b(cdc_jw *w, const char *key, clothd_opt_b v);
void cdc_put_v3(cdc_jw *w, const char *key, clothd_opt_v3 v);
void cdc_put_floats(cdc_jw *w, const char *key, const float *v, size_t n);
void cdc_put_vec3s(cdc_jw *w, const char *key, const float *v, size_t count);
void cdc_put_u32s(cdc_jw *w, const char *key, const uint32_t *v, size_t n);
void cdc_put_instances(cdc_jw *w, const char *key, const clothd_instance *v, size_t n);
void cdc_put_str(cdc_jw *w, const char *key, const char *s);

#endif
