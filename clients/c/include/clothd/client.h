/* libclothd: the C client of the clothd cloth-simulation server.
 *
 * One header, C11 and libc only (POSIX sockets; Winsock on Windows). A game
 * server, an engine plugin or a binding (C++, C# P/Invoke, Go cgo) drives
 * clothd over one connection per clothd_client (TCP, or on the same host
 * the Unix socket of `clothd --unix PATH`: clothd_options.unix_path), every command of
 * protocol/PROTOCOL.md is a typed function, replies are structs, errors carry
 * the wire's stable code and message, and subscribed frames are decoded
 * straight into the caller's float arrays.
 *
 * Three ways to use a client, freely mixed:
 *   blocking     clothd_step(c, &opt, &result, &err): send, wait, decode;
 *   pipelined    clothd_send_step(c, &opt, &ticket, &err) many times, then
 *                clothd_recv_step(c, ticket, &result, &err) for each (replies
 *                come in request order; they are kept until collected);
 *   game loop    clothd_poll(c, 0, NULL, &err) once per tick (or when clothd_fd()
 *                is readable in your own poll set): frames land in the
 *                arrays registered with clothd_set_frame_target and in the
 *                on_frame callback; clothd_ready() tells which replies came.
 *
 * Conventions
 *   - Every function that can fail returns a clothd_code: CLOTHD_OK (0) or
 *     the error, and fills `err` (which may be NULL) with the code and a
 *     one-line message. Nothing is global: each call reports its own error.
 *   - Options are structs whose zero value means "send nothing": each member
 *     is an optional (clothd_opt_f, clothd_opt_i, ...) set with clothd_f(),
 *     clothd_i(), clothd_b(), clothd_v3(), ...; only members that are set go
 *     on the wire, so the server's defaults apply to the rest. Pointers and
 *     lists are sent when non-NULL; enums when not *_UNSET; an instance id
 *     of 0 (never a live id) is "not given". `clothd_X_default()` returns the
 *     zero value, the same as `clothd_X o = {0};`.
 *   - Ownership is written at each declaration. Reply structs that hold
 *     arrays are freed with their clothd_*_free(), which accepts a zeroed
 *     struct; everything else is caller-owned or lives inside the client.
 *   - Threads: a clothd_client is thread-compatible, not thread-safe: use
 *     one client from one thread at a time (callbacks run on that thread,
 *     inside the call that read the message). Distinct clients are
 *     independent. The library has no global state. Numbers are read and
 *     written in the C locale's format whatever setlocale() says (the
 *     decimal point is taken from localeconv(), like cJSON: do not change
 *     the locale on another thread during a call).
 *   - Each declaration says "Thread: client" (the thread that uses that
 *     client, one at a time) or "Thread: any" (no shared state), and what
 *     it keeps or hands over ("Owns", "Copies", "Keeps").
 *   - No call ever raises SIGPIPE; no call blocks longer than the client's
 *     timeout (clothd_options.timeout_ms), except clothd_poll's own wait
 *     and the host name lookup in clothd_connect (the system resolver's).
 */
#ifndef CLOTHD_CLIENT_H
#define CLOTHD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clothd/codes.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(CLOTHD_BUILDING_DLL)
#define CLOTHD_API __declspec(dllexport)
#elif defined(_WIN32) && defined(CLOTHD_DLL)
#define CLOTHD_API __declspec(dllimport)
#elif defined(__GNUC__)
#define CLOTHD_API __attribute__((visibility("default")))
#else
#define CLOTHD_API
#endif

#define CLOTHD_VERSION "0.1.0"
#define CLOTHD_DEFAULT_HOST "127.0.0.1"
#define CLOTHD_DEFAULT_PORT 7878
/* The environment variable read for a token when clothd_options.token_from_env is set. */
#define CLOTHD_TOKEN_ENV "CLOTHD_TOKEN"

/* ---- errors ------------------------------------------------------------- */

/* The wire's codes (clothd/codes.h, generated from the server's one list)
 * keep the server's values; the client's own codes follow them. */
typedef enum clothd_code {
    CLOTHD_OK = 0,
#define CLOTHD_CODE_ENUM_(name, value, wire, text) CLOTHD_E_##name = value,
    CLOTHD_WIRE_CODES(CLOTHD_CODE_ENUM_)
#undef CLOTHD_CODE_ENUM_
    /* Client-side: */
    CLOTHD_E_IO = 100,   /* "io": a socket call failed (connect refused, reset, ...) */
    CLOTHD_E_CLOSED,     /* "closed": the connection is gone (the server closed it or died) */
    CLOTHD_E_TIMEOUT,    /* "timeout": no reply within the client's timeout */
    CLOTHD_E_PROTOCOL,   /* "protocol": the server's bytes broke the wire contract */
    CLOTHD_E_NOMEM,      /* "nomem": out of memory in the client */
    CLOTHD_E_USAGE,      /* "usage": a bad argument (NULL client, unknown ticket, NaN, ...) */
    CLOTHD_E_UNKNOWN,    /* "unknown": an error code this client does not know (see wire_code) */
    CLOTHD_E_INCOMPATIBLE, /* "incompatible": the server lacks a feature this call or the options need */
} clothd_code;

/* One error, filled by the call that failed. Plain data: no ownership. */
typedef struct clothd_error {
    clothd_code code;    /* CLOTHD_OK when the call succeeded */
    /* CLOTHD_E_CLOSED with automatic reconnect on: the client is connecting
     * again (or has); the request may or may not have run and is not resent. */
    bool reconnecting;
    char wire_code[32];  /* the code as the server spelled it ("not_found"); "" when client-side */
    char message[512];   /* one line, NUL-terminated (cut at 511 bytes): "instance: no instance 7" */
} clothd_error;

/* The code's wire name ("not_found", "io", ...). Static storage. Thread: any. */
CLOTHD_API const char *clothd_code_name(clothd_code code);
/* The code of a wire name, CLOTHD_E_UNKNOWN when none. Thread: any. */
CLOTHD_API clothd_code clothd_code_from_name(const char *name);

/* ---- ids and optional values -------------------------------------------- */

/* Typed handles, so that a collider id cannot be passed as an instance id.
 * 0 is never a live id. Plain data. */
typedef struct clothd_instance {
    uint32_t id;
} clothd_instance;
typedef struct clothd_collider {
    uint32_t id;
} clothd_collider;

/* A pipelined request, returned by clothd_send_*(). 0 is never a ticket. */
typedef uint64_t clothd_ticket;

typedef struct clothd_opt_f { bool set; float value; } clothd_opt_f;
typedef struct clothd_opt_i { bool set; int32_t value; } clothd_opt_i;
typedef struct clothd_opt_u { bool set; uint32_t value; } clothd_opt_u;
typedef struct clothd_opt_b { bool set; bool value; } clothd_opt_b;
typedef struct clothd_opt_v3 { bool set; float value[3]; } clothd_opt_v3;
typedef struct clothd_opt_v4 { bool set; float value[4]; } clothd_opt_v4;
typedef struct clothd_opt_i3 { bool set; int32_t value[3]; } clothd_opt_i3;

static inline clothd_opt_f clothd_f(float v) { clothd_opt_f o = {true, v}; return o; }
static inline clothd_opt_i clothd_i(int32_t v) { clothd_opt_i o = {true, v}; return o; }
static inline clothd_opt_u clothd_u(uint32_t v) { clothd_opt_u o = {true, v}; return o; }
static inline clothd_opt_b clothd_b(bool v) { clothd_opt_b o = {true, v}; return o; }
static inline clothd_opt_v3 clothd_v3(float x, float y, float z)
{
    clothd_opt_v3 o = {true, {x, y, z}};
    return o;
}
static inline clothd_opt_v4 clothd_v4(float x, float y, float z, float w)
{
    clothd_opt_v4 o = {true, {x, y, z, w}};
    return o;
}
static inline clothd_opt_i3 clothd_i3(int32_t x, int32_t y, int32_t z)
{
    clothd_opt_i3 o = {true, {x, y, z}};
    return o;
}
static inline clothd_instance clothd_instance_id(uint32_t id) { clothd_instance i = {id}; return i; }
static inline clothd_collider clothd_collider_id(uint32_t id) { clothd_collider c = {id}; return c; }

typedef enum clothd_wind_model {
    CLOTHD_WIND_UNSET = 0,
    CLOTHD_WIND_AERO,     /* "aero": wind is the air's velocity, m/s */
    CLOTHD_WIND_CONSTANT, /* "constant": the seed's acceleration, m/s^2 */
    CLOTHD_WIND_DRAG_LIFT, /* "dragLift": the air's velocity, drag and lift coefficients */
} clothd_wind_model;

typedef enum clothd_kind {
    CLOTHD_KIND_UNKNOWN = 0,
    CLOTHD_KIND_CLOTH,
    CLOTHD_KIND_SOFTBODY,
} clothd_kind;

typedef enum clothd_collider_type {
    CLOTHD_COLLIDER_UNSET = 0, /* not sent: the server answers "type: required" */
    CLOTHD_COLLIDER_SPHERE,
    CLOTHD_COLLIDER_CAPSULE,
    CLOTHD_COLLIDER_PLANE,
    CLOTHD_COLLIDER_TAPERED_CAPSULE, /* "taperedCapsule": radius at -normal, radius2 at +normal */
    CLOTHD_COLLIDER_BOX,             /* "box": half_extents, turned by rotation */
} clothd_collider_type;

typedef enum clothd_access {
    CLOTHD_ACCESS_NONE = 0, /* no auth on this connection (yet) */
    CLOTHD_ACCESS_FULL,
    CLOTHD_ACCESS_READONLY,
} clothd_access;

/* ---- connecting --------------------------------------------------------- */

typedef struct clothd_client clothd_client;

/* A frame as received: header fields, and the positions when they were
 * decoded into a registered target. `payload` points into the client's
 * receive buffer (a shared-memory frame's: into the client's copy of it)
 * and is valid only during the callback (or, for clothd_frame_parse, as
 * long as the caller's bytes). */
typedef struct clothd_frame {
    clothd_instance instance;
    uint64_t frame;          /* steps this instance has taken */
    double time;             /* simulated seconds */
    uint32_t count;          /* particles */
    bool quantized;          /* flags bit 0: 16 bits per axis */
    float bbox_min[3];       /* quantized frames: the bounding box; else zeros */
    float bbox_max[3];
    const float *positions;  /* 3*count floats in the target's array, or NULL (no target / too small) */
    const void *payload;     /* the bytes after the 40-byte header */
    size_t payload_size;
    /* The channels (subscribe's `channels`): flags bit 1 velocities, bit 2
     * normals, after the positions. */
    uint16_t flags;               /* the header's flags */
    bool has_velocities, has_normals;
    float velocity_min[3];        /* quantized frames with velocities: their box; else zeros */
    float velocity_max[3];
    const float *velocities;      /* 3*count floats in the target's velocities, or NULL */
    const float *normals;         /* 3*count floats in the target's normals, or NULL */
} clothd_frame;

/* A server event ({"event":...}): "wind" (instance 0: the global wind),
 * "debug", a name a newer server adds, or the client's own
 * "resubscribe_failed" (a subscription a reconnect could not renew; code
 * and message in `error`). `json` is the line, valid during the callback. */
typedef struct clothd_event {
    const char *name;
    clothd_instance instance;
    float wind[3];
    bool enabled;
    clothd_error error;
    const char *json;
    size_t json_size;
} clothd_event;

/* Called on the client's thread, inside clothd_poll/a blocking call that
 * read the message. May call clothd_send_*() and clothd_frame_decode(), not
 * blocking calls, clothd_poll() or clothd_close() on the same client. */
typedef void (*clothd_frame_fn)(void *user, const clothd_frame *frame);
typedef void (*clothd_event_fn)(void *user, const clothd_event *event);
/* A reply's warning (PROTOCOL.md "Unknown members"): a member the server
 * did not read, such as `unknown member "widht" (did you mean "width"?)`
 * (one call per warning, NUL-terminated, valid during the call). `ticket`
 * is the request's (as clothd_send_* returned it; a blocking call's own).
 * Called on the client's thread when the reply is read, with the same
 * rules as the other callbacks. */
typedef void (*clothd_warning_fn)(void *user, clothd_ticket ticket, const char *warning);

typedef struct clothd_options {
    const char *host;       /* NULL: "127.0.0.1"; a name or an IPv4/IPv6 address. Copied. */
    uint16_t port;          /* 0: 7878 */
    /* Sent with `auth` as the first request of every connection, reconnects
     * included. NULL: none, or $CLOTHD_TOKEN when token_from_env. Copied. */
    const char *token;
    bool token_from_env;
    int timeout_ms;         /* each blocking call's limit; 0: 10000; < 0: none */
    bool reconnect;         /* connect again when the connection drops, renewing subscriptions */
    int reconnect_timeout_ms; /* give up (CLOTHD_E_CLOSED) after this long; 0: 10000; < 0: never */
    int rcvbuf;             /* SO_RCVBUF in bytes; 0: the system's */
    /* The largest reply line or frame accepted (bytes); 0: 256 MiB. A longer
     * one is CLOTHD_E_PROTOCOL and closes the connection. */
    size_t max_message;
    clothd_frame_fn on_frame; /* NULL: frames only go to targets */
    clothd_event_fn on_event; /* NULL: events are dropped */
    void *user;               /* passed to the callbacks; not owned */
    /* NULL: warnings are only counted (clothd_client_stats.warnings) */
    clothd_warning_fn on_warning;
    /* The handshake (PROTOCOL.md "hello"): every connection, reconnects
     * included, sends `hello` after `auth` and keeps the reply
     * (clothd_server_info). */
    bool strict;            /* hello {"strict":true}: a member the server does not read is
                             * CLOTHD_E_INVALID_ARGUMENT instead of a warning (implies
                             * requiring the "strict" feature) */
    /* Features the server's hello must list ("scenes", "softbody", ...;
     * PROTOCOL.md "hello"): else connecting fails with
     * CLOTHD_E_INCOMPATIBLE naming the server and what it lacks. Copied. */
    const char *const *require;
    size_t require_count;
    /* Send no hello: no round trip at connect (without a token), nothing
     * known of the server, no call checked against its features. Ignored
     * with strict or require. */
    bool no_hello;
    /* The Unix-domain socket of a clothd on this host (`clothd --unix
     * PATH`), connected to instead of host and port, which are then not
     * used: the same protocol, less CPU per byte than TCP loopback. NULL:
     * TCP. Errors name the server "unix:PATH". A path longer than the
     * socket address holds (107 bytes on Linux, 103 on macOS) fails
     * clothd_connect with CLOTHD_E_USAGE naming unix_path; so does any path
     * on Windows, where this build has no Unix sockets. Copied.
     * The last member on purpose: members are only ever added at the end,
     * so that the layout of the earlier ones stays what a binding (the C#
     * example's Options) mirrors; such a binding must add it too, since
     * clothd_connect reads the whole struct. */
    const char *unix_path;
} clothd_options;

/* The zero value: every default above. Thread: any. */
CLOTHD_API clothd_options clothd_options_default(void);

/* Connects (resolving the host once; or to o->unix_path), sends `auth` when there is a token
 * and `hello` (unless no_hello), and waits for their replies. On success
 * *out owns a new client: free it with clothd_close(). On failure *out is
 * NULL (CLOTHD_E_IO: cannot connect, "cannot connect to clothd at
 * HOST:PORT: connect 127.0.0.1:7878: Connection refused", or "cannot
 * connect to clothd at unix:PATH: connect unix:PATH: No such file or
 * directory"; CLOTHD_E_USAGE: a unix_path that cannot be one,
 * CLOTHD_E_UNAUTHORIZED: token refused, CLOTHD_E_INCOMPATIBLE: a required
 * feature is missing, "clothd at HOST:PORT lacks the feature \"scenes\"
 * required by this client (its hello lists: ...)", CLOTHD_E_TIMEOUT, the
 * server's refusal such as CLOTHD_E_LIMIT_EXCEEDED, ...). A server without
 * `hello` (it answers unknown_command) is connected to with no features
 * known: plain protocol 1 commands work, calls that need a feature fail. A
 * hello refused for want of `auth` leaves the features unknown (nothing is
 * checked) until clothd_auth succeeds. `o` may be NULL (all defaults);
 * nothing of it is kept but copies (host, unix_path, token, required features).
 * Thread: any (the new client then belongs to one thread at a time). */
CLOTHD_API clothd_code clothd_connect(const clothd_options *o, clothd_client **out, clothd_error *err);

/* Closes the connection and frees the client, its kept replies and its
 * subscriptions list. Targets and callbacks' user data stay the caller's.
 * NULL is fine. Outstanding tickets die with it. Thread: client (never
 * from a callback of the same client). */
CLOTHD_API void clothd_close(clothd_client *c);

typedef enum clothd_link {
    CLOTHD_LINK_CONNECTED,
    CLOTHD_LINK_RECONNECTING, /* dropped; automatic reconnect is trying */
    CLOTHD_LINK_CLOSED,       /* gone for good: every call fails with CLOTHD_E_CLOSED */
} clothd_link;

/* Whether the connection is up, being re-established, or gone. Thread: client. */
CLOTHD_API clothd_link clothd_link_state(const clothd_client *c);

/* ---- the server (hello) ---------------------------------------------------- */

typedef enum clothd_hello_state {
    CLOTHD_HELLO_UNKNOWN = 0, /* not asked (no_hello), or refused before auth: nothing is checked */
    CLOTHD_HELLO_ANSWERED,    /* the server's hello reply is kept below */
    CLOTHD_HELLO_MISSING,     /* the server has no hello (unknown_command): no features known */
} clothd_hello_state;

/* The server's bounds from its hello (PROTOCOL.md "hello"); 0: not said. */
typedef struct clothd_limits {
    uint64_t line_bytes;              /* --max-line */
    uint64_t output_bytes;            /* replies queued to one client */
    uint64_t frame_bytes;             /* frame bytes in flight to one subscriber */
    uint64_t connections;
    uint64_t instances;
    uint64_t particles_per_instance;
    uint64_t particles;               /* all live instances */
    uint64_t step_work;               /* particles x substeps x iterations of one instance */
} clothd_limits;

#define CLOTHD_MAX_FEATURES 32
#define CLOTHD_FEATURE_NAME_MAX 31

/* What the connection's hello said, kept by the client (plain data). */
typedef struct clothd_server_info {
    clothd_hello_state hello;
    char server[32];          /* "clothd" */
    char version[32];         /* the server's version, "" when not known */
    uint32_t protocol;        /* PROTOCOL.md's version (1) */
    bool strict;              /* the connection's strict setting */
    /* "warnings", "strict", "scenes", "ephemeral", "softbody", "mesh",
     * "skin", "budget", "shm" (not with --shm-mb 0), and with --data-dir
     * "snapshots", "recording". */
    char features[CLOTHD_MAX_FEATURES][CLOTHD_FEATURE_NAME_MAX + 1];
    size_t feature_count;
    clothd_limits limits;
} clothd_server_info;

/* The kept hello (a copy; zeroed for NULL). Reconnects ask again and
 * replace it. Thread: client. */
CLOTHD_API clothd_server_info clothd_server(const clothd_client *c);
/* Whether the server's hello listed `feature` (false when nothing is
 * known). Thread: client. */
CLOTHD_API bool clothd_has_feature(const clothd_client *c, const char *feature);
/* Sends `hello` again (strict set: turns strict on or off for this
 * connection; the client then asks for it on every reconnect) and keeps
 * the reply; *out (may be NULL) receives it. CLOTHD_E_INCOMPATIBLE for
 * strict true against a server that lacks the feature. Blocking. */
CLOTHD_API clothd_code clothd_hello(clothd_client *c, clothd_opt_b strict, clothd_server_info *out,
                                    clothd_error *err);

/* Calls that need a feature check it against the kept hello before they
 * send anything and fail with CLOTHD_E_INCOMPATIBLE, naming the feature
 * and the server ("clothd at 127.0.0.1:7878 lacks the feature
 * \"softbody\" needed by create (its hello lists: ...)"): "scenes" (a
 * request carrying a scene, clothd_scene, clothd_scenes), "ephemeral",
 * "softbody" (clothd_create_softbody), "mesh" (clothd_create_mesh_cloth),
 * "skin", "budget" (a step's budget_ms), "snapshots" (save, load),
 * "recording" (record, replay), "shm" (subscribe's shm). With nothing known (no_hello, or hello
 * refused before auth) nothing is checked; against a server without hello
 * every such call fails. */
/* The access the last `auth` granted on this connection. Thread: client. */
CLOTHD_API clothd_access clothd_access_granted(const clothd_client *c);

typedef struct clothd_client_stats {
    uint64_t requests;      /* sent */
    uint64_t replies;       /* received */
    uint64_t frames;        /* received (shared-memory references included) */
    uint64_t events;        /* received */
    uint64_t bytes_in, bytes_out;
    uint64_t reconnects;    /* connections re-established */
    uint64_t async_errors;  /* error replies to requests sent without a ticket */
    uint64_t warnings;      /* replies' warnings (members the server did not read) */
    /* Shared-memory frames (subscribe's shm) not delivered: the server
     * overwrote the frame in its ring before this client copied it out (a
     * reader more than the ring behind, or a ring this client could not
     * map). The frame numbers of the next delivered frame show the gap. */
    uint64_t frames_missed;
} clothd_client_stats;
/* The client's own counters (a copy). Thread: client. */
CLOTHD_API clothd_client_stats clothd_get_client_stats(const clothd_client *c);

/* ---- the game loop -------------------------------------------------------- */

#ifdef _WIN32
typedef uintptr_t clothd_socket; /* a SOCKET */
#define CLOTHD_NO_SOCKET (~(clothd_socket)0)
#else
typedef int clothd_socket;
#define CLOTHD_NO_SOCKET (-1)
#endif

/* The connection's socket, for the game's own poll/select/epoll set, or
 * CLOTHD_NO_SOCKET while reconnecting. It changes on reconnect: ask again
 * each time the set is built. Owned by the client: never read, write or
 * close it. Thread: client. */
CLOTHD_API clothd_socket clothd_fd(const clothd_client *c);

#define CLOTHD_WANT_READ 1
#define CLOTHD_WANT_WRITE 2
/* What to wait for on clothd_fd(): always READ, and WRITE while requests
 * are queued that the socket did not take yet. Thread: client. */
CLOTHD_API int clothd_wants(const clothd_client *c);

/* Waits up to timeout_ms (0: not at all; < 0: until something arrives) for
 * the socket, then writes what is queued and reads everything available:
 * frames go to targets and on_frame, events to on_event, replies are kept
 * for their tickets. Drives an automatic reconnect. *handled (may be NULL)
 * is the number of messages read. Returns CLOTHD_E_CLOSED once the
 * connection is gone for good, CLOTHD_E_PROTOCOL on a broken stream.
 * Thread: client (not from its own callbacks). */
CLOTHD_API clothd_code clothd_poll(clothd_client *c, int timeout_ms, int *handled, clothd_error *err);

/* Writes everything queued, waiting up to the client's timeout. Thread: client. */
CLOTHD_API clothd_code clothd_flush(clothd_client *c, clothd_error *err);

/* ---- pipelining ----------------------------------------------------------- */

/* Every command has clothd_send_X(): it queues the request (writing what the
 * socket takes at once, never waiting) and sets *ticket. Collect the reply
 * later with clothd_recv_X() (typed) or clothd_recv() (just ok or the
 * error), in any order: replies arrive in request order and are kept until
 * collected. With ticket == NULL the reply is dropped on arrival; an error
 * reply then counts in stats.async_errors and is kept for
 * clothd_take_async_error(). While automatic reconnect is re-establishing
 * the connection, clothd_send_X() fails at once with CLOTHD_E_CLOSED
 * (reconnecting = true); the blocking calls wait for the new connection.
 * Thread: client for all of them; clothd_send_X may also be called from the
 * client's own callbacks. A kept reply is owned by the client until its
 * ticket is collected, discarded or the client closed. */

/* True when the ticket's reply (or its failure) is there, so its
 * clothd_recv_X() will not wait. Reads nothing: pair it with clothd_poll. */
CLOTHD_API bool clothd_ready(const clothd_client *c, clothd_ticket ticket);
/* Waits for the ticket's reply; CLOTHD_OK or its error. */
CLOTHD_API clothd_code clothd_recv(clothd_client *c, clothd_ticket ticket, clothd_error *err);
/* Drops interest in a ticket: its reply is discarded when it comes. */
CLOTHD_API void clothd_discard(clothd_client *c, clothd_ticket ticket);
/* Requests whose replies have not been collected (or discarded) yet. */
CLOTHD_API size_t clothd_outstanding(const clothd_client *c);
/* Takes the oldest kept error of a ticketless request: true and *err filled,
 * or false. At most 16 are kept (the oldest beyond that are dropped). */
CLOTHD_API bool clothd_take_async_error(clothd_client *c, clothd_error *err);

/* ---- commands --------------------------------------------------------------
 * For each: the blocking call, clothd_send_X (pipelined), and clothd_recv_X
 * when the reply has members (else clothd_recv). Out pointers may be NULL.
 * Thread: client, every one. Options, strings and arrays passed in are read
 * during the call and never kept. An out struct is zeroed first, so a
 * failed call leaves it safe to free; what it owns is listed at its type.
 */

/* A painted per-vertex property (PROTOCOL.md "Painted properties"), in
 * `create` and `set`: not sent (the zero value), one number for every
 * vertex, one per vertex (`values`, `count` floats, read during the call),
 * or cleared (the wire's null: unpainted again). */
typedef enum clothd_paint_mode {
    CLOTHD_PAINT_UNSET = 0,
    CLOTHD_PAINT_ALL,     /* value, for every vertex */
    CLOTHD_PAINT_EACH,    /* values[count], one per vertex */
    CLOTHD_PAINT_CLEAR,   /* null: unpainted */
} clothd_paint_mode;

typedef struct clothd_paint {
    clothd_paint_mode mode;
    float value;
    const float *values;
    size_t count;
} clothd_paint;
static inline clothd_paint clothd_paint_all(float v)
{
    clothd_paint p = {CLOTHD_PAINT_ALL, v, NULL, 0};
    return p;
}
static inline clothd_paint clothd_paint_each(const float *values, size_t count)
{
    clothd_paint p = {CLOTHD_PAINT_EACH, 0, values, count};
    return p;
}
static inline clothd_paint clothd_paint_clear(void)
{
    clothd_paint p = {CLOTHD_PAINT_CLEAR, 0, NULL, 0};
    return p;
}

/* Options of `create` (all but the layout) and of `set`. */
typedef struct clothd_material {
    clothd_opt_f mass;               /* kg in total */
    clothd_opt_f stiffness;          /* [0, 1] */
    clothd_opt_f bend_stiffness;     /* [0, 1] */
    clothd_opt_f damping;            /* [0, 1] per step */
    clothd_opt_i solver_iterations;  /* [1, 256] */
    clothd_opt_v3 gravity;           /* m/s^2 */
    clothd_opt_f stretch_compliance; /* m/N: XPBD */
    clothd_opt_f bend_compliance;
    clothd_opt_i iterations;         /* the XPBD seed's name for solver_iterations */
    clothd_opt_i substeps;           /* [0, 64]; 0: automatic, ceil(dt x solver_frequency) */
    clothd_opt_f solver_frequency;   /* Hz, [1, 100000], default 360 (substeps 0 only) */
    clothd_opt_f velocity_retention; /* (0, 1] per second, default 0.5471566 */
    clothd_opt_f thickness;          /* m */
    clothd_opt_f particle_mass;      /* kg, for two-way coupling; unset: each particle's own */
    clothd_wind_model wind_model;
    clothd_opt_f air_density, drag, lift;
    clothd_opt_b tethers;
    clothd_opt_f tether_scale;
    clothd_opt_f sleep_threshold;    /* m/s */
    clothd_opt_f self_distance;      /* m, 0 is off */
    clothd_opt_f volume_stiffness;   /* soft bodies */
    clothd_opt_f volume_compliance;
    clothd_opt_i lod;                /* [0, 3] level of detail, 0 full (PROTOCOL.md, create) */
    clothd_opt_f priority;           /* a step's budget lowers the lowest first */
    clothd_opt_f linear_inertia;     /* [0, 1]: share of the inertia frame's move felt; 0: local space */
    clothd_opt_f angular_inertia;    /* [0, 1]: the same for its turn */
    clothd_opt_f tear_strain;        /* [0, 1000]: a structural edge stretched beyond it tears; 0: never */
    /* Painted per vertex (any instance type); see clothd_paint. */
    clothd_paint inv_mass_scale;           /* [0, 1000], 0: moved only by its skin */
    clothd_paint max_distance;             /* m from the skinned position; 0: follows the skin */
    clothd_paint backstop_distance;        /* m behind the skin, along -normal */
    clothd_paint backstop_radius;          /* m, the backstop sphere; 0: none */
    clothd_paint stretch_compliance_scale; /* XPBD stretch/shear compliance times the ends' mean */
    clothd_paint bend_compliance_scale;    /* the same for bending */
} clothd_material;

/* The longest scene name (PROTOCOL.md "Scenes and lifetimes"): 1 to 64
 * of A-Z a-z 0-9 . _ : - */
#define CLOTHD_SCENE_MAX 64

typedef struct clothd_cloth_options {
    clothd_opt_i width, height;      /* particles along right and down */
    clothd_opt_f spacing;            /* m */
    clothd_opt_v3 origin;            /* particle 0 */
    clothd_opt_v3 right, down;       /* grid axes */
    clothd_material material;
    const char *scene;               /* the scene it belongs to; NULL: "default" */
    bool ephemeral;                  /* destroyed when this connection closes */
} clothd_cloth_options;
CLOTHD_API clothd_cloth_options clothd_cloth_default(void);

typedef enum clothd_shape {
    CLOTHD_SHAPE_UNSET = 0, /* a mesh: vertices + tetrahedra */
    CLOTHD_SHAPE_BOX,
    CLOTHD_SHAPE_BALL,
} clothd_shape;

typedef struct clothd_softbody_options {
    clothd_shape shape;
    clothd_opt_v3 size;              /* box */
    clothd_opt_i3 cells;             /* box: cubes per axis */
    clothd_opt_v3 origin;            /* box */
    clothd_opt_f radius;             /* ball */
    clothd_opt_i resolution;         /* ball */
    clothd_opt_v3 center;            /* ball */
    const float *vertices;           /* 3*vertex_count floats; NULL: not sent. Read during the call. */
    size_t vertex_count;
    const uint32_t *tetrahedra;      /* 4*tetrahedron_count indices; NULL: not sent */
    size_t tetrahedron_count;
    clothd_material material;
    const char *scene;               /* NULL: "default" */
    bool ephemeral;                  /* destroyed when this connection closes */
} clothd_softbody_options;
CLOTHD_API clothd_softbody_options clothd_softbody_default(void);

/* A cloth cut as a triangle mesh (PROTOCOL.md "Mesh cloth"): the grid's
 * layout options do not apply. Arrays are read during the call only. */
typedef struct clothd_mesh_cloth_options {
    const float *vertices;           /* 3*vertex_count floats: rest shape and start */
    size_t vertex_count;
    const uint32_t *triangles;       /* 3*triangle_count indices, any winding */
    size_t triangle_count;
    const float *uvs;                /* 2*vertex_count floats, handed back by topology; NULL: none */
    clothd_material material;
    const char *scene;               /* NULL: "default" */
    bool ephemeral;                  /* destroyed when this connection closes */
} clothd_mesh_cloth_options;

typedef struct clothd_created {
    clothd_instance instance;
    uint32_t particles;
    uint32_t constraints;
} clothd_created;

/* create (a cloth; o may be NULL: the seed's 10 x 10) */
CLOTHD_API clothd_code clothd_create_cloth(clothd_client *c, const clothd_cloth_options *o,
                                           clothd_created *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_create_cloth(clothd_client *c, const clothd_cloth_options *o,
                                                clothd_ticket *ticket, clothd_error *err);
/* create with "type":"softbody" */
CLOTHD_API clothd_code clothd_create_softbody(clothd_client *c, const clothd_softbody_options *o,
                                              clothd_created *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_create_softbody(clothd_client *c, const clothd_softbody_options *o,
                                                   clothd_ticket *ticket, clothd_error *err);
/* create with "vertices" and "triangles" (a mesh cloth); o is required. */
CLOTHD_API clothd_code clothd_create_mesh_cloth(clothd_client *c, const clothd_mesh_cloth_options *o,
                                                clothd_created *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_create_mesh_cloth(clothd_client *c, const clothd_mesh_cloth_options *o,
                                                     clothd_ticket *ticket, clothd_error *err);
/* The reply of any create. */
CLOTHD_API clothd_code clothd_recv_create(clothd_client *c, clothd_ticket ticket, clothd_created *out,
                                          clothd_error *err);

/* destroy: the instance and its subscription (the client forgets it too). */
CLOTHD_API clothd_code clothd_destroy(clothd_client *c, clothd_instance inst, clothd_error *err);
CLOTHD_API clothd_code clothd_send_destroy(clothd_client *c, clothd_instance inst, clothd_ticket *ticket,
                                           clothd_error *err);
/* destroy {"scene":…}: every instance of the scene (none: not an error).
 * *ids (may be NULL) receives the destroyed ids, malloc'd (free with
 * clothd_free; NULL when none), *count how many. */
CLOTHD_API clothd_code clothd_destroy_scene(clothd_client *c, const char *scene, clothd_instance **ids,
                                            size_t *count, clothd_error *err);

/* scene: tie `scene` to this connection (ephemeral true: when it closes,
 * every instance of the scene is destroyed, whoever created it), let go
 * of it (false), or only ask (unset). *held (may be NULL): whether some
 * connection holds it after the request; *instances: how many it has.
 * scene NULL: the client's current scene (clothd_use_scene). */
CLOTHD_API clothd_code clothd_scene(clothd_client *c, const char *scene, clothd_opt_b ephemeral, bool *held,
                                    size_t *instances, clothd_error *err);

/* scenes: one entry per scene of the server, sorted by name. */
typedef struct clothd_scene_info {
    char scene[CLOTHD_SCENE_MAX + 1];
    uint32_t instances;
    bool ephemeral;          /* tied to a connection */
    const char *endpoint;    /* clothd_shards_scenes: its server (the set's copy); else NULL */
} clothd_scene_info;
/* Every scene, or only `scene`'s entry (none when it has no instance and
 * is not held); scene NULL: the client's current scene if any, else all.
 * *list (may be NULL) receives the entries, malloc'd (free with
 * clothd_free; NULL when none), *count how many. Blocking. */
CLOTHD_API clothd_code clothd_scenes(clothd_client *c, const char *scene, clothd_scene_info **list,
                                     size_t *count, clothd_error *err);

/* pin: `particle` (+ `position`) or `particles` (+ `positions`, 3 floats
 * per particle). Arrays are read during the call only. */
typedef struct clothd_pin_options {
    clothd_opt_u particle;
    clothd_opt_v3 position;
    const uint32_t *particles;
    size_t particle_count;
    const float *positions;
} clothd_pin_options;
CLOTHD_API clothd_code clothd_pin(clothd_client *c, clothd_instance inst, const clothd_pin_options *o,
                                  uint32_t *pinned, clothd_error *err);
CLOTHD_API clothd_code clothd_send_pin(clothd_client *c, clothd_instance inst, const clothd_pin_options *o,
                                       clothd_ticket *ticket, clothd_error *err);
/* The count of pin, unpin or attach ("pinned", "unpinned", "attached"). */
CLOTHD_API clothd_code clothd_recv_count(clothd_client *c, clothd_ticket ticket, uint32_t *count,
                                         clothd_error *err);

/* pin with positions as one binary request (PROTOCOL.md "Binary requests",
 * kind 2): `count` particles and 3*count floats, 16 bytes a particle and no
 * JSON. Same checks and reply as clothd_pin; collect with clothd_recv_count.
 * Non-finite positions are sent as they are: the server answers
 * invalid_argument. Arrays are read during the call only. */
CLOTHD_API clothd_code clothd_pin_bulk(clothd_client *c, clothd_instance inst, const uint32_t *particles,
                                       const float *positions, size_t count, uint32_t *pinned,
                                       clothd_error *err);
CLOTHD_API clothd_code clothd_send_pin_bulk(clothd_client *c, clothd_instance inst, const uint32_t *particles,
                                            const float *positions, size_t count, clothd_ticket *ticket,
                                            clothd_error *err);

typedef struct clothd_unpin_options {
    clothd_opt_u particle;
    const uint32_t *particles;
    size_t particle_count;
} clothd_unpin_options;
CLOTHD_API clothd_code clothd_unpin(clothd_client *c, clothd_instance inst, const clothd_unpin_options *o,
                                    uint32_t *unpinned, clothd_error *err);
CLOTHD_API clothd_code clothd_send_unpin(clothd_client *c, clothd_instance inst,
                                         const clothd_unpin_options *o, clothd_ticket *ticket,
                                         clothd_error *err);

/* wind: an instance's own wind, or with inst.id == 0 the global wind.
 * *stored (may be NULL): the wind as the server stored it (32-bit floats). */
CLOTHD_API clothd_code clothd_wind(clothd_client *c, clothd_instance inst, const float wind[3],
                                   float stored[3], clothd_error *err);
CLOTHD_API clothd_code clothd_send_wind(clothd_client *c, clothd_instance inst, const float wind[3],
                                        clothd_ticket *ticket, clothd_error *err);
CLOTHD_API clothd_code clothd_recv_wind(clothd_client *c, clothd_ticket ticket, float stored[3],
                                        clothd_error *err);

/* gravity */
CLOTHD_API clothd_code clothd_gravity(clothd_client *c, clothd_instance inst, const float gravity[3],
                                      clothd_error *err);
CLOTHD_API clothd_code clothd_send_gravity(clothd_client *c, clothd_instance inst, const float gravity[3],
                                           clothd_ticket *ticket, clothd_error *err);

/* addCollider */
typedef struct clothd_collider_options {
    clothd_collider_type type;
    clothd_opt_v3 position, normal;
    clothd_opt_f radius, height;
    clothd_opt_f friction, static_friction, coupling;
    const char *attachment;          /* a transform's name; NULL: not sent. Copied. */
    clothd_opt_f radius2;            /* tapered capsule: its +normal end's radius */
    clothd_opt_v3 half_extents;      /* box: half its size along its own axes */
    clothd_opt_v4 rotation;          /* box: unit quaternion x, y, z, w (boxes take no normal) */
} clothd_collider_options;
CLOTHD_API clothd_code clothd_add_collider(clothd_client *c, clothd_instance inst,
                                           const clothd_collider_options *o, clothd_collider *out,
                                           clothd_error *err);
CLOTHD_API clothd_code clothd_send_add_collider(clothd_client *c, clothd_instance inst,
                                                const clothd_collider_options *o, clothd_ticket *ticket,
                                                clothd_error *err);
CLOTHD_API clothd_code clothd_recv_add_collider(clothd_client *c, clothd_ticket ticket, clothd_collider *out,
                                                clothd_error *err);

/* moveCollider: at least one of position, normal and rotation (a box
 * turns by rotation, the others by normal). */
typedef struct clothd_move_options {
    clothd_opt_v3 position, normal;
    clothd_opt_v4 rotation;
} clothd_move_options;
CLOTHD_API clothd_code clothd_move_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                            const clothd_move_options *o, clothd_error *err);
CLOTHD_API clothd_code clothd_send_move_collider(clothd_client *c, clothd_instance inst,
                                                 clothd_collider col, const clothd_move_options *o,
                                                 clothd_ticket *ticket, clothd_error *err);

/* removeCollider */
CLOTHD_API clothd_code clothd_remove_collider(clothd_client *c, clothd_instance inst, clothd_collider col,
                                              clothd_error *err);
CLOTHD_API clothd_code clothd_send_remove_collider(clothd_client *c, clothd_instance inst,
                                                   clothd_collider col, clothd_ticket *ticket,
                                                   clothd_error *err);

/* enable: *now (may be NULL) is the setting the server replied. */
CLOTHD_API clothd_code clothd_enable(clothd_client *c, clothd_instance inst, bool enabled, bool *now,
                                     clothd_error *err);
CLOTHD_API clothd_code clothd_send_enable(clothd_client *c, clothd_instance inst, bool enabled,
                                          clothd_ticket *ticket, clothd_error *err);
/* The flag of enable or debug. */
CLOTHD_API clothd_code clothd_recv_flag(clothd_client *c, clothd_ticket ticket, bool *flag, clothd_error *err);

/* step: every enabled instance, or `instance` / `instances`. */
typedef struct clothd_step_options {
    clothd_opt_f dt;                     /* seconds; unset: 1/60 */
    clothd_instance instance;            /* id 0: not sent */
    const clothd_instance *instances;    /* NULL: not sent. Read during the call. */
    size_t instance_count;
    clothd_opt_f budget_ms;              /* [0, 60000] soft time budget; 0: none; unset: the
                                            server's --step-budget-ms */
    const char *scene;                   /* every instance of this scene (with instances: each
                                            must be in it); NULL, and no instances: every
                                            instance of every scene (v1) */
} clothd_step_options;

typedef struct clothd_impulse {
    clothd_instance instance;
    clothd_collider collider;
    float linear[3];   /* N s */
    float angular[3];  /* N m s about the collider's position */
} clothd_impulse;

/* An instance the step's budget ran below its own level of detail. */
typedef struct clothd_degraded {
    clothd_instance instance;
    int32_t lod; /* the level it ran at */
} clothd_degraded;

/* Owns its arrays (NULL when empty): clothd_step_result_free. */
typedef struct clothd_step_result {
    uint32_t stepped;
    clothd_instance *unstable;
    size_t unstable_count;
    clothd_instance *sleeping;
    size_t sleeping_count;
    clothd_impulse *impulses;
    size_t impulse_count;
    /* With a budget (has_budget): the budget applied, the plan's predicted
     * time and the time the step took on the server (ms), and the
     * instances it stepped below their own level. */
    bool has_budget;
    float budget_ms, predicted_ms, actual_ms;
    clothd_degraded *degraded;
    size_t degraded_count;
    clothd_instance *torn;         /* cloths that tore after this step: fetch their topology again */
    size_t torn_count;
} clothd_step_result;
/* Frees what it owns and zeroes it; NULL or a zeroed struct is fine. Thread: any. */
CLOTHD_API void clothd_step_result_free(clothd_step_result *r);

/* `out` may be NULL (nothing allocated then). */
CLOTHD_API clothd_code clothd_step(clothd_client *c, const clothd_step_options *o, clothd_step_result *out,
                                   clothd_error *err);
CLOTHD_API clothd_code clothd_send_step(clothd_client *c, const clothd_step_options *o,
                                        clothd_ticket *ticket, clothd_error *err);
CLOTHD_API clothd_code clothd_recv_step(clothd_client *c, clothd_ticket ticket, clothd_step_result *out,
                                        clothd_error *err);

/* get */
typedef struct clothd_collider_info {
    clothd_collider collider;
    clothd_collider_type type;
    float position[3], normal[3]; /* a box's normal: its own +y axis */
    float radius, height;
    float radius2;         /* tapered capsule; 0 for the others */
    float half_extents[3]; /* box; 0 for the others */
    float rotation[4];     /* box (x, y, z, w); 0 for the others */
} clothd_collider_info;

/* Owns pinned and colliders, and positions unless they went into the
 * caller's buffer: free with clothd_instance_state_free. */
typedef struct clothd_instance_state {
    clothd_instance instance;
    clothd_kind kind;
    uint32_t width, height;        /* a soft body: particles x 1 */
    uint64_t frame;
    double time;
    bool enabled, unstable, sleeping;
    clothd_wind_model wind_model;
    float wind[3], gravity[3];
    float *positions;              /* 3*particle_count floats */
    size_t particle_count;
    uint32_t *pinned;              /* increasing */
    size_t pinned_count;
    clothd_collider_info *colliders;
    size_t collider_count;
    bool has_self_collision;       /* selfDistance > 0: the three counters below */
    uint64_t self_searches, self_pairs, self_overflows;
    bool positions_owned_;         /* private */
    float *velocities;             /* 3*particle_count floats when asked for, else NULL */
    float *normals;                /* 3*particle_count floats when asked for, else NULL */
    uint32_t lod;                  /* its own level of detail (the lod option) */
    uint32_t current_lod;          /* the level its last step ran at (its own before one) */
    bool lod_degraded;             /* that level was a step budget's lowering (or the way back) */
    float priority;                /* its priority option */
} clothd_instance_state;
/* Frees what it owns and zeroes it; NULL or a zeroed struct is fine. Thread: any. */
CLOTHD_API void clothd_instance_state_free(clothd_instance_state *s);

/* Where `get` writes positions: the caller's buffer of `capacity`
 * particles (3 floats each), or NULL to have the library allocate. A buffer
 * too small is CLOTHD_E_USAGE. `velocities` / `normals`: ask for each
 * particle's velocity (m/s, over the last substep; zero before the first
 * step and while asleep) and unit normal (area-weighted over the topology's
 * triangles; cloth: the side of down x right, soft body: outwards; (0,0,0)
 * without a triangle): clothd_instance_state's velocities and normals,
 * allocated by the library. */
typedef struct clothd_get_options {
    float *positions;
    size_t capacity;
    bool velocities;
    bool normals;
} clothd_get_options;
CLOTHD_API clothd_code clothd_get(clothd_client *c, clothd_instance inst, const clothd_get_options *o,
                                  clothd_instance_state *out, clothd_error *err);
/* Asks for positions only; clothd_send_get_ex sends o's velocities and
 * normals too (o may be NULL). */
CLOTHD_API clothd_code clothd_send_get(clothd_client *c, clothd_instance inst, clothd_ticket *ticket,
                                       clothd_error *err);
CLOTHD_API clothd_code clothd_send_get_ex(clothd_client *c, clothd_instance inst, const clothd_get_options *o,
                                          clothd_ticket *ticket, clothd_error *err);
CLOTHD_API clothd_code clothd_recv_get(clothd_client *c, clothd_ticket ticket, const clothd_get_options *o,
                                       clothd_instance_state *out, clothd_error *err);

/* subscribe / unsubscribe: `instance`, `instances`, or neither (every
 * instance, those created later included). The client remembers its
 * subscriptions (with their options) to renew them after a reconnect. */
typedef struct clothd_subscribe_options {
    clothd_instance instance;           /* id 0: not sent */
    const clothd_instance *instances;   /* NULL: not sent. Read during the call. */
    size_t instance_count;
    clothd_opt_b quantize;              /* 16-bit frames */
    clothd_opt_i every;                 /* [1, 1000]: every k-th frame */
    /* What frames carry besides the positions: CLOTHD_CHANNEL_VELOCITIES |
     * CLOTHD_CHANNEL_NORMALS; 0: not sent (positions only). */
    uint32_t channels;
    /* Alone: every instance of the scene, those created in it later
     * included (renewed by name after a reconnect); unsubscribe: the
     * scene's. With instances: each must be in it. NULL: not sent. */
    const char *scene;
    /* true: frames through the server's shared-memory ring (PROTOCOL.md
     * "Shared-memory frames"), for a client on clothd's host (the Unix
     * socket or loopback) running as clothd's user. The socket then carries
     * 56-byte references; the client maps the ring the reply names
     * (read-only, once per connection, unmapped on close and reconnect),
     * copies each frame out and delivers it exactly as an ordinary one
     * (flags without bit 3); a frame overwritten before it was copied is
     * not delivered but counted (clothd_client_stats.frames_missed). Frames
     * over a quarter of the ring come through the socket as usual. Errors:
     * CLOTHD_E_INCOMPATIBLE, unsent, when the server's hello lacks "shm"
     * (an older clothd, or one started with --shm-mb 0); the server's
     * CLOTHD_E_INVALID_ARGUMENT for a client not on its host;
     * CLOTHD_E_IO naming the object ("shm: cannot open
     * /dev/shm/clothd-...: Permission denied") or CLOTHD_E_PROTOCOL (not
     * a clothd ring) when the ring cannot be mapped: the server holds the
     * subscription then, and its frames count as missed until it is
     * dropped. POSIX only: the Windows build fails with CLOTHD_E_USAGE,
     * unsent. */
    clothd_opt_b shm;
} clothd_subscribe_options;

/* subscribe's channels, the frame flags that announce them. */
#define CLOTHD_CHANNEL_VELOCITIES 0x2u
#define CLOTHD_CHANNEL_NORMALS 0x4u

typedef struct clothd_subscribed {
    bool all;                /* {"all":true} */
    size_t instance_count;   /* else: how many instances the reply listed */
} clothd_subscribed;

CLOTHD_API clothd_code clothd_subscribe(clothd_client *c, const clothd_subscribe_options *o,
                                        clothd_subscribed *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_subscribe(clothd_client *c, const clothd_subscribe_options *o,
                                             clothd_ticket *ticket, clothd_error *err);
CLOTHD_API clothd_code clothd_recv_subscribe(clothd_client *c, clothd_ticket ticket, clothd_subscribed *out,
                                             clothd_error *err);
/* quantize, every, channels and shm are not sent. o == NULL: every subscription. */
CLOTHD_API clothd_code clothd_unsubscribe(clothd_client *c, const clothd_subscribe_options *o,
                                          clothd_error *err);
CLOTHD_API clothd_code clothd_send_unsubscribe(clothd_client *c, const clothd_subscribe_options *o,
                                               clothd_ticket *ticket, clothd_error *err);

/* status */
typedef struct clothd_instance_summary {
    clothd_instance instance;
    clothd_kind kind;
    uint32_t particles, constraints, colliders;
    bool enabled, unstable, sleeping;
    uint64_t frame;
    char scene[CLOTHD_SCENE_MAX + 1];
    bool ephemeral;          /* destroyed when a connection closes */
} clothd_instance_summary;

/* Owns instances and text: clothd_status_free. */
typedef struct clothd_status {
    clothd_instance_summary *instances;
    size_t instance_count;
    uint32_t workers;
    float global_wind[3];
    char version[32];
    char simd[32];           /* the solver's SIMD path, "" when the server does not say */
    bool debug;
    char *text;              /* the seed's "=== Cloth Simulation ===" block, NUL-terminated */
} clothd_status;
/* Frees what it owns and zeroes it; NULL or a zeroed struct is fine. Thread: any. */
CLOTHD_API void clothd_status_free(clothd_status *s);
CLOTHD_API clothd_code clothd_get_status(clothd_client *c, clothd_status *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_status(clothd_client *c, clothd_ticket *ticket, clothd_error *err);
/* status {"scene":…}: only that scene's instances (scene NULL: all). */
CLOTHD_API clothd_code clothd_get_status_scene(clothd_client *c, const char *scene, clothd_status *out,
                                               clothd_error *err);
CLOTHD_API clothd_code clothd_send_status_scene(clothd_client *c, const char *scene, clothd_ticket *ticket,
                                                clothd_error *err);
CLOTHD_API clothd_code clothd_recv_status(clothd_client *c, clothd_ticket ticket, clothd_status *out,
                                          clothd_error *err);

/* debug: set the viewers' overlay flag, or (enabled unset) ask it. */
CLOTHD_API clothd_code clothd_debug(clothd_client *c, clothd_opt_b enabled, bool *now, clothd_error *err);
CLOTHD_API clothd_code clothd_send_debug(clothd_client *c, clothd_opt_b enabled, clothd_ticket *ticket,
                                         clothd_error *err);

/* set: change a live instance's options (only those set). */
CLOTHD_API clothd_code clothd_set(clothd_client *c, clothd_instance inst, const clothd_material *m,
                                  clothd_error *err);
CLOTHD_API clothd_code clothd_send_set(clothd_client *c, clothd_instance inst, const clothd_material *m,
                                       clothd_ticket *ticket, clothd_error *err);

/* transform: create or move a named transform (name: 1 to 31 bytes, copied). */
typedef struct clothd_transform_options {
    clothd_opt_v3 position;   /* required by the server */
    clothd_opt_v4 rotation;   /* quaternion x, y, z, w */
    clothd_opt_b inertia_frame; /* true: the instance's inertia frame (linear/angular_inertia); false: not */
} clothd_transform_options;
CLOTHD_API clothd_code clothd_transform(clothd_client *c, clothd_instance inst, const char *name,
                                        const clothd_transform_options *o, clothd_error *err);
CLOTHD_API clothd_code clothd_send_transform(clothd_client *c, clothd_instance inst, const char *name,
                                             const clothd_transform_options *o, clothd_ticket *ticket,
                                             clothd_error *err);

/* attach: pin particles to a transform, at offsets local to it (default:
 * where they are). Arrays are read during the call only. */
typedef struct clothd_attach_options {
    clothd_opt_u particle;
    clothd_opt_v3 offset;
    const uint32_t *particles;
    size_t particle_count;
    const float *offsets;     /* 3 per particle */
} clothd_attach_options;
CLOTHD_API clothd_code clothd_attach(clothd_client *c, clothd_instance inst, const char *name,
                                     const clothd_attach_options *o, uint32_t *attached, clothd_error *err);
CLOTHD_API clothd_code clothd_send_attach(clothd_client *c, clothd_instance inst, const char *name,
                                          const clothd_attach_options *o, clothd_ticket *ticket,
                                          clothd_error *err);

/* topology: owns triangles, uvs and the painted arrays: clothd_topology_free. */
typedef struct clothd_topology {
    clothd_instance instance;
    clothd_kind kind;
    uint32_t particles;
    uint32_t *triangles;      /* 3*triangle_count particle indices, counter-clockwise from outside */
    size_t triangle_count;
    float *uvs;               /* grid cloth, or a mesh cloth created with uvs: 2 per particle; else NULL */
    size_t uv_count;          /* pairs */
    /* The painted properties: `particles` floats each, NULL when unpainted. */
    float *inv_mass_scale, *max_distance, *backstop_distance, *backstop_radius;
    float *stretch_compliance_scale, *bend_compliance_scale;
    bool skinned;             /* the instance has had a skin */
} clothd_topology;
/* Frees what it owns and zeroes it; NULL or a zeroed struct is fine. Thread: any. */
CLOTHD_API void clothd_topology_free(clothd_topology *t);
CLOTHD_API clothd_code clothd_get_topology(clothd_client *c, clothd_instance inst, clothd_topology *out,
                                           clothd_error *err);
CLOTHD_API clothd_code clothd_send_topology(clothd_client *c, clothd_instance inst, clothd_ticket *ticket,
                                            clothd_error *err);
CLOTHD_API clothd_code clothd_recv_topology(clothd_client *c, clothd_ticket ticket, clothd_topology *out,
                                            clothd_error *err);

/* skin: the garment's animated pose for the next step (PROTOCOL.md
 * "skin"): one position per particle and optionally the skin's normals
 * (pointing away from the body; NULL: the server derives them). Sent as
 * the binary request (kind 1: 24 bytes a vertex with normals, no JSON to
 * print or parse) unless `json` is set. Non-finite values: the binary form
 * sends them and the server answers invalid_argument; the JSON form refuses
 * them (CLOTHD_E_USAGE). Arrays are read during the call only. */
typedef struct clothd_skin_options {
    const float *positions;   /* 3*vertex_count floats; required */
    const float *normals;     /* 3*vertex_count floats, or NULL */
    size_t vertex_count;
    bool json;                /* the JSON request instead of the binary one */
} clothd_skin_options;
CLOTHD_API clothd_code clothd_skin(clothd_client *c, clothd_instance inst, const clothd_skin_options *o,
                                   clothd_error *err);
CLOTHD_API clothd_code clothd_send_skin(clothd_client *c, clothd_instance inst, const clothd_skin_options *o,
                                        clothd_ticket *ticket, clothd_error *err);

/* teleport: move the whole instance rigidly, p -> pivot + rotation (p -
 * pivot) + translation, with no velocity spike (particles and their
 * history, pins, skin, transforms, attached colliders). Unset: identity. */
typedef struct clothd_teleport_options {
    clothd_opt_v3 translation;
    clothd_opt_v4 rotation;   /* quaternion x, y, z, w */
    clothd_opt_v3 pivot;
} clothd_teleport_options;
CLOTHD_API clothd_code clothd_teleport(clothd_client *c, clothd_instance inst,
                                       const clothd_teleport_options *o, clothd_error *err);
CLOTHD_API clothd_code clothd_send_teleport(clothd_client *c, clothd_instance inst,
                                            const clothd_teleport_options *o, clothd_ticket *ticket,
                                            clothd_error *err);

/* ping */
CLOTHD_API clothd_code clothd_ping(clothd_client *c, clothd_error *err);
CLOTHD_API clothd_code clothd_send_ping(clothd_client *c, clothd_ticket *ticket, clothd_error *err);

/* auth: present a token on this connection. On success the client keeps a
 * copy and presents it again after every reconnect. */
CLOTHD_API clothd_code clothd_auth(clothd_client *c, const char *token, clothd_access *granted,
                                   clothd_error *err);

/* stats: the server's counters since it started (plain data, nothing to
 * free). Lists longer than the arrays are cut (the counts say how many
 * entries were read). */
#define CLOTHD_STATS_MAX_BUCKETS 32
#define CLOTHD_STATS_MAX_COMMANDS 40

typedef struct clothd_command_count {
    char name[24];           /* "step", "get", ... */
    uint64_t count;
} clothd_command_count;

typedef struct clothd_server_stats {
    char version[32];
    char simd[32];           /* the distance solve's SIMD path: "scalar", "avx2", "avx512" */
    uint32_t workers;
    double uptime_seconds;
    struct { uint64_t current, total, refused, limit; } connections;
    struct { uint64_t awake, sleeping, disabled, unstable, limit; } instances;
    struct { uint64_t current, limit; } particles;
    struct {
        uint64_t total;          /* step requests that stepped at least one instance */
        uint64_t instance_steps; /* instances stepped by them */
        uint64_t slow;           /* over --slow-step-ms */
        /* with a time budget; of those slower than it; instances stepped
         * below their own level of detail by the budget */
        uint64_t budget_steps, budget_overruns, degraded_instances;
        double per_second;       /* over the last 10 whole seconds */
        uint64_t count;          /* durationSeconds: a histogram of start-to-reply times */
        double sum;
        size_t bucket_count;     /* bounds given; counts has one more (above them all) */
        double bounds[CLOTHD_STATS_MAX_BUCKETS];
        uint64_t counts[CLOTHD_STATS_MAX_BUCKETS + 1];
    } steps;
    struct { uint64_t reply_bytes, event_bytes, frame_bytes, frames, frames_skipped; } sent;
    clothd_command_count requests[CLOTHD_STATS_MAX_COMMANDS]; /* by command */
    size_t request_kinds;
    uint64_t errors[CLOTHD_WIRE_CODE_COUNT + 1]; /* error replies, indexed by clothd_code (1..) */
    /* The shared-memory ring (subscribe's shm): its data's size (0 until a
     * subscriber asks for it), the frames and bytes written into it (each
     * frame once, however many subscribers read it). */
    struct { uint64_t size_bytes, frames, bytes; } shm;
} clothd_server_stats;

CLOTHD_API clothd_code clothd_get_server_stats(clothd_client *c, clothd_server_stats *out, clothd_error *err);
CLOTHD_API clothd_code clothd_send_stats(clothd_client *c, clothd_ticket *ticket, clothd_error *err);

/* save / load: snapshots in the server's --data-dir (PROTOCOL.md, "save",
 * "load"). `name`: 1-64 of A-Z a-z 0-9 . _ -, not starting with '.'.
 * save writes every instance (instances NULL) or the `count` listed;
 * *saved and *bytes (each may be NULL): how many, the file's size. A disk
 * that refuses is CLOTHD_E_INTERNAL (nothing saved is damaged). load adds
 * the snapshot's instances under their saved ids (CLOTHD_E_INVALID_ARGUMENT
 * if one is in use) or, with `replace`, makes them the whole world; a
 * damaged file is refused naming its section; *loaded (may be NULL): how
 * many instances came back. Blocking calls. */
CLOTHD_API clothd_code clothd_save(clothd_client *c, const char *name, const clothd_instance *instances,
                                   size_t count, uint32_t *saved, uint64_t *bytes, clothd_error *err);
CLOTHD_API clothd_code clothd_load(clothd_client *c, const char *name, bool replace, uint32_t *loaded,
                                   clothd_error *err);

/* record / replay: journals in the server's --data-dir (PROTOCOL.md,
 * "record", "replay"). clothd_record starts the journal `name` of every
 * instance (instances NULL) or the `count` listed; clothd_record_stop
 * ends it (*frames, may be NULL: the steps recorded). clothd_replay
 * rebuilds the journal's instances under new ids at frame `to` (negative:
 * the whole journal); the new ids go to `ids` (up to `cap`, in the order
 * of the recorded ones; may be NULL) and *out (may be NULL) says how many
 * and how far. Blocking calls. */
typedef struct clothd_replayed {
    uint32_t instances;      /* rebuilt (ids beyond `cap` are not written) */
    uint64_t frames;         /* steps applied */
    uint64_t journal_frames; /* steps the journal holds */
    bool complete;           /* the journal ends with its STOP record */
    bool other_build;        /* recorded by another build or SIMD path: bits may differ */
} clothd_replayed;
CLOTHD_API clothd_code clothd_record(clothd_client *c, const char *name, const clothd_instance *instances,
                                     size_t count, clothd_error *err);
CLOTHD_API clothd_code clothd_record_stop(clothd_client *c, uint64_t *frames, clothd_error *err);
CLOTHD_API clothd_code clothd_replay(clothd_client *c, const char *name, int64_t to, clothd_instance *ids,
                                     size_t cap, clothd_replayed *out, clothd_error *err);
CLOTHD_API clothd_code clothd_recv_stats(clothd_client *c, clothd_ticket ticket, clothd_server_stats *out,
                                         clothd_error *err);

/* ---- scenes and sharding ---------------------------------------------------
 * A scene is a named group of instances on one server (PROTOCOL.md,
 * "Scenes"). A client has a current scene (none at first): each request of
 * a command that takes "scene" carries it (create, destroy, pin, unpin,
 * wind with an instance, gravity, the colliders, enable, step, get,
 * subscribe, unsubscribe, status, set, transform, attach, topology,
 * teleport, skin as JSON, save, record, and scene and scenes given no
 * name), so the server refuses instances of other scenes and step, status,
 * subscribe, save and record without instances act on the whole scene.
 * Like Redis's SELECT it is the connection's state, but kept on the client
 * side and written into each request as it is built: pipelined requests
 * keep the scene current when they were sent. The binary skin and pin
 * requests carry no scene (their instance id alone is checked).
 *
 * Sharding (PROTOCOL.md, "Sharding"): scenes spread over several servers
 * with no coordinator. Every client places a scene on the endpoint of the
 * highest rendezvous weight, so all processes given the same endpoint list
 * agree, and adding an endpoint moves about 1/N of the scenes (only onto
 * itself). A scene never spans two servers. */

/* A scene name: 1 to 64 bytes of A-Z a-z 0-9 . _ : - (NULL: false). Thread: any. */
CLOTHD_API bool clothd_scene_name_valid(const char *name);
/* The weight of `scene` on `endpoint` ("host:port" or "unix:PATH" as written in the
 * list): fmix64(fnv1a64(endpoint, one zero byte, scene)), the same number in
 * every clothd client (protocol/placement_vectors.json). NULL reads as "".
 * Thread: any. */
CLOTHD_API uint64_t clothd_rendezvous_weight(const char *endpoint, const char *scene);
/* The index in endpoints[0, count) of the endpoint that serves `scene`: the
 * highest weight; a tie goes to the endpoint whose bytes sort first
 * (strcmp). The order of the list does not matter. (size_t)-1 when count is
 * 0 or endpoints or scene is NULL. Thread: any. */
CLOTHD_API size_t clothd_place_scene(const char *const *endpoints, size_t count, const char *scene);

/* Makes `scene` the client's current scene (copied), or with NULL none.
 * CLOTHD_E_USAGE for a name clothd_scene_name_valid refuses (the current
 * scene is then unchanged). With a current scene, clothd_step without
 * instances steps the scene and clothd_get_status lists only its instances.
 * Thread: client. */
CLOTHD_API clothd_code clothd_use_scene(clothd_client *c, const char *scene, clothd_error *err);
/* The current scene, or NULL; valid until the next clothd_use_scene or
 * clothd_close. Thread: client. */
CLOTHD_API const char *clothd_current_scene(const clothd_client *c);
/* A set of endpoints and a lazy connection to each. */
typedef struct clothd_shards clothd_shards;

/* Checks and copies `count` endpoints ("host:port", "[v6addr]:port", or
 * "unix:PATH" for a clothd on this host listening on a Unix socket; "unix:"
 * and digits only is still host "unix"; each once; spelt the same way by
 * every process, since the hash reads the text) and the options every
 * connection is made with (their host, port and unix_path are ignored;
 * token strings are copied, callbacks and `user` are
 * shared by all connections). Connects to nothing. On success *out owns the
 * set: free it with clothd_shards_free. Thread: any. */
CLOTHD_API clothd_code clothd_shards_new(const char *const *endpoints, size_t count, const clothd_options *o,
                                         clothd_shards **out, clothd_error *err);
/* Closes every connection and frees the set (NULL is fine). Thread: the set's. */
CLOTHD_API void clothd_shards_free(clothd_shards *s);
/* The endpoint that serves `scene` (the set's own copy, valid until
 * clothd_shards_free), or NULL for an invalid name. Connects to nothing.
 * Thread: the set's. */
CLOTHD_API const char *clothd_shards_endpoint(const clothd_shards *s, const char *scene);
/* The connection to the scene's endpoint, with `scene` made its current
 * scene: the typed calls on *out then act in that scene. The connection is
 * opened now when there is none, or when the last one is gone (a look at
 * the socket without waiting, clothd_poll(c, 0, ...), notices a server that
 * closed it: frames and replies read then go where clothd_poll sends them).
 * It is shared by every scene of the endpoint, so call this again before
 * working in another scene. *out belongs to the set: never clothd_close it.
 * An endpoint that cannot be reached fails with its error (CLOTHD_E_IO,
 * CLOTHD_E_TIMEOUT, ...) and a message starting "endpoint HOST:PORT (scene
 * NAME): "; no other endpoint is tried, because the scene's instances live
 * on that one and a copy started elsewhere would split the scene. The next
 * call tries again. Every connection requires the "scenes" feature (and
 * those the options require): a server without it fails with
 * CLOTHD_E_INCOMPATIBLE ("endpoint HOST:PORT (scene NAME): clothd at
 * HOST:PORT lacks the feature \"scenes\" required by this client ..."),
 * since it would warn about "scene" and mix every scene's instances.
 * CLOTHD_E_USAGE for an invalid scene name.
 * Thread: the set's (one thread at a time for the set and its clients). */
CLOTHD_API clothd_code clothd_shards_scene(clothd_shards *s, const char *scene, clothd_client **out,
                                           clothd_error *err);
/* Every scene of every endpoint, sorted by name, each with its endpoint
 * (`scenes` sent to every server, merged; a scene lives on one server, so
 * each appears once). Connects to each endpoint not connected yet (its
 * current scene, if any, is left as it was). One that cannot be reached
 * fails the call with its error, naming it: a partial list would read as
 * scenes that are gone. *list (may be NULL): malloc'd, free with
 * clothd_free; *count how many. Thread: the set's. */
CLOTHD_API clothd_code clothd_shards_scenes(clothd_shards *s, clothd_scene_info **list, size_t *count,
                                            clothd_error *err);
/* How many endpoints; the i-th (NULL past the end); its open connection or
 * NULL (owned by the set). Thread: the set's. */
CLOTHD_API size_t clothd_shards_count(const clothd_shards *s);
CLOTHD_API const char *clothd_shards_endpoint_at(const clothd_shards *s, size_t i);
CLOTHD_API clothd_client *clothd_shards_client_at(const clothd_shards *s, size_t i);

/* ---- commands this header does not know yet ------------------------------- */

/* Sends {"id":N,"cmd":<cmd>,<members>} where `members` is JSON object
 * members text ("\"instance\":1,\"foo\":[1,2]", or NULL for none). The line
 * is checked (strict JSON, one object) before it is sent. */
CLOTHD_API clothd_code clothd_send_json(clothd_client *c, const char *cmd, const char *members,
                                        clothd_ticket *ticket, clothd_error *err);
/* Sends one line as it is (a '\n' is added), for tests and tools: it must
 * be one non-empty line (no '\n' inside); whatever it holds, its one reply
 * is this ticket's. */
CLOTHD_API clothd_code clothd_send_line(clothd_client *c, const char *line, size_t len,
                                        clothd_ticket *ticket, clothd_error *err);
/* The reply line (ok or not: an error reply is also returned as
 * CLOTHD_E_* with *line set). *line is NUL-terminated and owned by the
 * caller: free it with clothd_free(). */
CLOTHD_API clothd_code clothd_recv_json(clothd_client *c, clothd_ticket ticket, char **line, size_t *len,
                                        clothd_error *err);
/* Blocking clothd_send_json + clothd_recv_json. */
CLOTHD_API clothd_code clothd_request_json(clothd_client *c, const char *cmd, const char *members,
                                           char **line, size_t *len, clothd_error *err);
/* Frees what the library handed over (clothd_recv_json's line). NULL is
 * fine. Thread: any. */
CLOTHD_API void clothd_free(void *p);

/* ---- frames ---------------------------------------------------------------- */

/* A caller-owned array that receives every frame of one instance, decoded
 * in place (plain frames copied, quantized ones expanded): the poll API.
 * The caller sets positions and capacity; the library writes the rest on
 * each frame, inside clothd_poll or a blocking call. A frame with more
 * particles than capacity is not written (too_small counts it). */
typedef struct clothd_frame_target {
    float *positions;        /* 3*capacity floats, the caller's */
    uint32_t capacity;       /* particles */
    uint64_t frame;          /* of the last frame written */
    double time;
    uint32_t count;
    bool quantized;
    uint64_t updates;        /* frames written so far: compare to see a new one */
    uint64_t too_small;
    /* Optional, the caller's (3*capacity floats each, or NULL): where a
     * frame's velocities and normals go when it carries them; has_* tell
     * whether the last frame written did. */
    float *velocities;
    float *normals;
    bool has_velocities, has_normals;
} clothd_frame_target;

/* Registers (or with t == NULL removes) the target of an instance's frames.
 * The client keeps the pointer, not a copy: *t must live until removed or
 * the client closed. It does not subscribe: call clothd_subscribe too.
 * Thread: client. */
CLOTHD_API clothd_code clothd_set_frame_target(clothd_client *c, clothd_instance inst,
                                               clothd_frame_target *t, clothd_error *err);

/* Checks one complete frame (magic, version, flags, length) of `size`
 * bytes and fills *out (positions NULL; payload points into `bytes`).
 * CLOTHD_E_PROTOCOL with the reason when it is not a valid frame, and for
 * a shared-memory reference (flags bit 3), which only a client holding the
 * ring can resolve (clothd_poll does). Keeps nothing. Thread: any. */
CLOTHD_API clothd_code clothd_frame_parse(const void *bytes, size_t size, clothd_frame *out,
                                          clothd_error *err);
/* Decodes a parsed frame's positions into `out` (3*capacity floats,
 * caller-owned): plain frames are copied, quantized ones computed in
 * float64 and rounded to float32 as PROTOCOL.md says. CLOTHD_E_USAGE when
 * capacity < count. Thread: any. */
CLOTHD_API clothd_code clothd_frame_decode(const clothd_frame *f, float *out, size_t capacity,
                                           clothd_error *err);
/* The same for the frame's velocities (quantized: within their box's half
 * step) and unit normals (quantized: octahedral, within 0.005 degrees;
 * (0,0,0) for a particle no triangle touches). CLOTHD_E_USAGE when the
 * frame does not carry them (subscribe with `channels`). Thread: any. */
CLOTHD_API clothd_code clothd_frame_decode_velocities(const clothd_frame *f, float *out, size_t capacity,
                                                      clothd_error *err);
CLOTHD_API clothd_code clothd_frame_decode_normals(const clothd_frame *f, float *out, size_t capacity,
                                                   clothd_error *err);

#ifdef __cplusplus
}
#endif

#endif
