/* The server module's private structures, shared by its .c files:
 *   server.c   loop, listening socket, signals, wake-ups from the pool, shutdown
 *   conn.c     one client: input framing, replies, frame delivery, closing
 *   dispatch.c one request -> one reply (or a step batch)
 *   queries.c  the read-only requests: get, topology, status
 *   scenes.c   scenes, connection-owned lifetimes, destroying instances
 *   stepper.c  step batches on the worker pool, completion, frame fan-out
 *   budget.c   the step budget's plan: levels of detail from predicted costs
 *   frames.c   reference-counted encoded frames
 *   shm.c      shared-memory frames: the ring's object, references (shm_ring.c: its layout)
 *   metrics.c  counters, the log lines of events, `stats`, Prometheus text
 *   health.c   the HTTP ports: /healthz, /readyz, /metrics
 *   log.c      the log line writer
 *   snapshots.c      save, load, autosave, the snapshot loaded at start
 *   snapshot_file.c  snapshot files: atomic writes, reads, the newest first
 *   recording.c      record (the journal's hooks) and replay
 *   journal.c        journal files: checksummed records, appended and read
 */
#ifndef CLOTHD_SERVER_INTERNAL_H
#define CLOTHD_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "../protocol/protocol.h"
#include "../solver/snapshot.h"
#include "../solver/solver.h"
#include "budget.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"
#include "server.h"
#include "shm_ring.h"

typedef struct cd_server cd_server;
typedef struct cd_conn cd_conn;
typedef struct cd_batch cd_batch;
typedef struct cd_event_slot cd_event_slot;
typedef struct cd_health cd_health;
typedef struct cd_save_job cd_save_job;
typedef struct cd_memory_snapshot cd_memory_snapshot;
typedef struct cd_recording cd_recording;

/* What a connection may send (server/auth.c). */
typedef enum cd_access_level {
    CD_CONN_ACCESS_NONE, /* a token is configured and none was presented: only auth */
    CD_CONN_ACCESS_READ, /* the read-only token: CD_ACCESS_READ commands */
    CD_CONN_ACCESS_FULL,
} cd_access_level;

typedef struct cd_token {
    char bytes[CD_TOKEN_MAX];
    size_t len; /* 0: not configured */
} cd_token;

/* An encoded frame shared by every subscriber it is sent to. */
typedef struct cd_frame_buf {
    uint32_t refs;
    cd_id instance;
    uint32_t particles;
    uint16_t flags; /* its form: quantized (bit 0), velocities (bit 1), normals (bit 2) */
    size_t len;
    uint8_t data[];
} cd_frame_buf;

/* The frame flags that name a form: 8 forms, an index into a step job's
 * buffers. */
#define CD_FRAME_FORMS 8u
_Static_assert(CD_FRAME_FLAGS_KNOWN == CD_FRAME_FORMS - 1, "every flag combination is a form");

/* One step's velocities and normals of one instance, computed once on the
 * worker for every form that carries them, into arrays the loop thread
 * allocated (one block: velocities, then normals). */
typedef struct cd_frame_channels {
    uint16_t wanted;   /* CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS */
    float *velocities; /* 3 floats per particle, NULL when not wanted */
    float *normals;
} cd_frame_channels;

/* Loop thread: the arrays for `wanted` (0: nothing allocated); false on OOM
 * (then *ch is empty). */
bool cd_frame_channels_alloc(cd_frame_channels *ch, uint32_t particles, uint16_t wanted);
/* The instance's current velocities and normals, as wanted. Allocates
 * nothing: a worker calls it right after the step. */
void cd_frame_channels_compute(cd_frame_channels *ch, const cd_instance *inst);
void cd_frame_channels_free(cd_frame_channels *ch); /* empties it */

/* A frame buffer for `particles` in the form `flags`, not yet filled;
 * refs = 1; NULL on OOM. Loop thread only. */
cd_frame_buf *cd_frame_buf_alloc(cd_id instance, uint32_t particles, uint16_t flags);
/* Encodes the current state of `inst` (its id and particle count are the
 * buffer's) into `frame`; the channels its flags carry come from `ch`
 * (computed for this state; may be NULL for a form without channels).
 * Allocates nothing: a worker calls it right after the step, on the
 * instance it owns. */
void cd_frame_buf_fill(cd_frame_buf *frame, const cd_instance *inst, const cd_frame_channels *ch);
/* The same into `out` (cd_frame_size_flags bytes of the form `flags`):
 * room in the shared-memory ring. */
void cd_frame_fill_bytes(uint8_t *out, uint16_t flags, const cd_instance *inst,
                         const cd_frame_channels *ch);
/* alloc + channels + fill on the loop thread; refs = 1; NULL on OOM. */
cd_frame_buf *cd_frame_buf_encode(const cd_instance *inst, uint16_t flags);
/* The reference (flags bit 3) to the frame whose header is `named`, in the
 * shared-memory ring at `position`; NULL when out of memory. */
cd_frame_buf *cd_frame_buf_alloc_shared(const cd_frame_header *named, uint64_t position);
void cd_frame_buf_ref(cd_frame_buf *frame);
void cd_frame_buf_unref(cd_frame_buf *frame); /* NULL is fine */

/* One named subscription of a connection, with its frame options. */
typedef struct cd_subscription {
    cd_id instance;
    cd_frame_options options;
} cd_subscription;

/* A connection's subscription to a scene: its instances' frames, those
 * created in it later included (it follows the scene by name). */
typedef struct cd_scene_sub {
    char name[CD_SCENE_NAME_MAX + 1];
    cd_frame_options options;
} cd_scene_sub;

/* The most scene subscriptions one connection holds (a scene need not
 * exist to be subscribed to, so they are not bounded by the instances). */
#define CD_SCENE_SUBS_MAX 256u

/* One scene: named, counted, perhaps tied to a connection. It exists
 * while it holds an instance or a connection holds it. */
typedef struct cd_scene {
    char name[CD_SCENE_NAME_MAX + 1];
    uint32_t hash;      /* of the name: compared before the bytes */
    uint32_t instances; /* live instances in it */
    cd_conn *owner;     /* the connection it is tied to ("ephemeral"), or NULL */
    bool used;          /* a free record otherwise */
} cd_scene;

/* Scenes and lifetimes (scenes.c), per instance slot (cd_id_index). */
typedef struct cd_scene_table {
    cd_scene *scenes;
    uint32_t scene_count, scene_cap; /* records used; records allocated */
    uint32_t slots;       /* max_instances + 1 */
    cd_id *id;            /* [slot]: the live instance, 0 for none */
    uint32_t *scene;      /* [slot]: its scene's record */
    cd_conn **owner;      /* [slot]: the connection it is tied to, or NULL */
    uint8_t *doomed;      /* [slot]: destroy once its step is back */
    uint32_t doomed_count;
} cd_scene_table;

/* The newest frame of one instance waiting for a slow subscriber. */
typedef struct cd_frame_slot {
    cd_id instance;
    cd_frame_buf *frame;
} cd_frame_slot;

struct cd_conn {
    /* The client's socket, by the listener that took it; its handle's
     * data == this. Cast to uv_stream_t or uv_handle_t to use. */
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe; /* --unix */
    } socket;
    bool over_unix; /* socket.pipe, else socket.tcp */
    cd_server *server;
    cd_conn *prev, *next; /* the server's list */

    /* Input: bytes read and not yet consumed as lines. */
    char *in;
    size_t in_len, in_cap;
    bool reading;
    bool draining; /* closing once what is queued is written */
    bool eof;      /* the client half-closed: finish its complete lines, then close */
    uint64_t line_started; /* uv_now() when the pending partial line began; 0: none */
    uint64_t paused_until; /* uv_now() before which nothing more is read or run; 0: none */

    cd_access_level access;
    uint32_t auth_failures; /* bad tokens presented */
    /* hello {"strict":true}: an unknown member is an error, not a warning */
    bool strict;
    /* The "warnings" of the request being answered (owned; NULL: none):
     * its reply carries them, whenever it is sent (a step's comes later). */
    cJSON *warnings;
    bool closing;  /* uv_close called; freed in its callback */
    bool sink;     /* replay's stand-in (recording.c): replies are dropped, no socket */

    /* A parsed request that can't run yet (its instance is being stepped,
     * or this client's own step has not replied); nothing after it runs. */
    bool has_deferred;
    cd_request deferred;
    cd_batch *own_batch; /* a step of this client's in flight */
    cd_save_job *own_save; /* a save of this client's being written */
    cd_memory_snapshot *memory_snapshots; /* its "memory":true saves (snapshots.c) */
    bool resume;         /* its step replied: run the lines that wait */
    bool until_step;     /* running those first: a `step` among them waits (server.c) */

    /* Output accounting: each write counted at its true cost while queued. */
    size_t reply_bytes; /* JSON replies */
    size_t frame_bytes; /* frames */
    size_t event_bytes; /* events */
    cd_frame_slot *slots; /* newest skipped frame per instance */
    uint32_t slot_count, slot_cap;
    /* Frames accepted (within the budget, counted in frame_bytes) and not
     * yet handed to libuv: written with one gathered uv_write per loop
     * wake-up (the server's flush check), or before any other write to
     * this connection so that nothing overtakes them. */
    cd_frame_buf **gather;
    uint32_t gather_count, gather_cap;
    cd_event_slot *event_slots; /* newest waiting event per kind and instance */
    uint32_t event_slot_count, event_slot_cap;

    /* Subscriptions. A named one's options win over a scene's, which win
     * over the "all" one's. */
    bool sub_all;
    cd_frame_options all_options; /* of the "all" subscription */
    cd_subscription *subs;
    uint32_t sub_count, sub_cap;
    cd_scene_sub *scene_subs;
    uint32_t scene_sub_count, scene_sub_cap;

    /* Instances and scenes tied to this connection (scenes.c): destroyed
     * when it closes. 0: nothing to look for then. */
    uint32_t owned;

    cd_conn_stats stats; /* peer, counters, log rate limits (metrics.c) */
};

struct cd_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_pipe_t unix_listener; /* --unix (listen_unix.c) */
    bool unix_bound;         /* its socket file is ours to remove */
    uv_async_t wake; /* the pool's "jobs done" */
    uv_signal_t sigint, sigterm;
    cd_server_options opts;
    cd_limits limits;
    cd_world *world;
    cd_pool *pool;
    cd_conn *conns;
    uint32_t conn_count;
    uv_timer_t line_timer; /* runs while a connection holds a partial line */
    uv_timer_t pause_timer; /* resumes paused connections */
    uv_check_t flush_check; /* after each poll: writes the gathered frames */
    uv_idle_t flush_idle;   /* with it: the poll does not block while frames wait */
    bool frames_gathered;   /* some connection holds gathered frames */
    cd_token full_token, readonly_token;
    uint8_t *busy; /* per instance slot (cd_id_index): being stepped */
    uint32_t busy_count;
    cd_batch *batches; /* step batches in flight */
    cd_batch *finished; /* finished, waiting for a worker's last notify */
    bool debug;        /* viewers' debug overlay, set by the debug command */
    bool shutting_down;
    cd_log log;
    cd_metrics metrics;
    cd_health *health; /* the HTTP ports; NULL when neither is configured */
    uv_timer_t autosave_timer; /* every --autosave seconds */
    bool autosave_due;         /* the timer fired while a step ran: save once it is back */
    uint32_t saves_writing;    /* snapshot files being written on libuv's thread pool */
    bool autosave_writing;     /* one of them is an autosave */
    bool final_autosave;       /* stopping: the last autosave waits for those writes */
    uint64_t memory_snapshot_particles; /* held by every connection's memory snapshots */
    cd_recording *recording;   /* the journal being written, NULL when none */
    cd_scene_table scenes;     /* each instance's scene and owner (scenes.c) */
    cd_budget_rate budget_rate; /* the step budget's rate: measured, or --step-cost-ps */
    cd_shm_ring shm;           /* shared-memory frames (shm.c); map NULL until asked for */
    char shm_name[48];         /* its shm_open name, "" while there is none */
};

/* ---- shm.c ---- */
/* Removes the memory objects of clothd processes that are gone. */
void cd_shm_sweep(void);
/* Makes the ring if there is none yet; false with `err` when --shm-mb is
 * 0 (invalid_argument) or the system refuses (internal). */
bool cd_shm_open(cd_server *server, cd_error *err);
void cd_shm_close(cd_server *server); /* unmapped and unlinked */
/* Over the Unix socket, or TCP from a loopback address. */
bool cd_conn_is_local(cd_conn *conn);
/* What a "shm" subscriber is sent for `frame`: *ref, made (the frame
 * copied into the ring) on the first call for it; the frame itself when it
 * does not fit the ring. The caller unrefs *ref once done. */
cd_frame_buf *cd_shm_reference(cd_server *server, cd_frame_buf *frame, cd_frame_buf **ref);

/* ---- conn.c ---- */
void cd_conn_accept(cd_server *server, uv_stream_t *listener);

/* listen_unix.c: the --unix listener (0 without one; else a libuv error,
 * printed), and its socket file's removal when the server stops. */
int cd_listen_unix(cd_server *server, uv_connection_cb on_connection);
void cd_unix_remove(cd_server *server);
/* Queues a reply line; `line` is taken over (freed with free()). */
void cd_conn_send_line(cd_conn *conn, char *line, size_t len);
/* The warnings of the request being answered, printed as a JSON array
 * (free() it), for a reply built by hand (step's); NULL when none. They
 * are gone from the connection afterwards. */
char *cd_conn_take_warnings(cd_conn *conn);
void cd_conn_send_reply(cd_conn *conn, cJSON *reply); /* deletes reply */
void cd_conn_send_error(cd_conn *conn, const cJSON *id, const cd_error *err);
/* Sends `frame` (gathered: written with the connection's other frames of
 * this loop wake-up in one uv_write), or keeps it as the instance's newest
 * pending frame when the client's frame budget is full. */
void cd_conn_send_frame(cd_conn *conn, cd_frame_buf *frame);
/* Writes the frames gathered on every connection, one uv_write each (the
 * server's check handle calls it once per loop iteration). */
void cd_conn_flush_gathered(cd_server *server);
/* Sends an event line (copied), or keeps it as the newest pending event of
 * its `key` (kind and instance: cd_event_key) when the client lags. */
void cd_conn_send_event(cd_conn *conn, uint64_t key, const char *line, size_t len);
/* The coalescing key of an event: its kind and, for per-instance events,
 * the instance (0 for server-wide ones). */
static inline uint64_t cd_event_key(uint32_t kind, cd_id instance)
{
    return ((uint64_t)kind << 32) | instance;
}
enum { CD_EVENT_KIND_WIND = 1, CD_EVENT_KIND_DEBUG = 2, CD_EVENT_KIND_TOPOLOGY = 3 };
/* {"event":"topology","instance":…,"particles":…,"triangles":…} to every
 * connection subscribed to the instance: it tore, renderers rebuild
 * (garment.c). */
void cd_announce_topology(cd_server *server, cd_instance *inst);
/* Runs every complete line that can run now. */
void cd_conn_process(cd_conn *conn);
void cd_conn_close(cd_conn *conn);
/* Reads and runs nothing more; closes once what is queued is written. */
void cd_conn_close_after_writes(cd_conn *conn);
/* Reads and runs nothing more for `ms` milliseconds (replies still go out). */
void cd_conn_pause(cd_conn *conn, uint64_t ms);
/* The line timer's callback: closes connections whose partial line is older
 * than --line-timeout; stops the timer when no connection holds one. */
void cd_conn_check_line_timeouts(uv_timer_t *timer);
bool cd_conn_is_subscribed(const cd_conn *conn, cd_id instance);
/* The frame options of the connection's subscription to `instance`, or
 * NULL when it is not subscribed (or closing). */
const cd_frame_options *cd_conn_subscription(const cd_conn *conn, cd_id instance);

/* ---- dispatch.c ---- */
typedef enum cd_dispatch_result {
    CD_DISPATCH_DONE,     /* replied */
    CD_DISPATCH_DEFER,    /* touches a busy instance: try again later */
    CD_DISPATCH_STARTED,  /* a step batch is running: reply comes later */
} cd_dispatch_result;
/* Runs one parsed request; `req` stays owned by the caller. */
cd_dispatch_result cd_dispatch(cd_conn *conn, cd_request *req);
/* Helpers shared by dispatch.c and queries.c. */
void cd_reply_fail(cd_conn *conn, const cd_request *req, cd_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The request's instance, or NULL after replying not_found (it does not
 * exist, or it is not in the request's "scene"). */
cd_instance *cd_require_instance(cd_conn *conn, const cd_request *req);
/* Is `id` in the request's "scene" (true when it names none)? */
bool cd_in_scene(const cd_server *server, const cd_request *req, cd_id id);
/* Painted properties (skin.c): whether each given one has 1 value or one
 * per vertex (else the error is sent and false returned), and applying
 * them (the solver checks the values). */
bool cd_paint_fits(cd_conn *conn, const cd_request *req, const cd_paint_request *paint,
                   uint32_t vertices);
cd_status cd_apply_paint(cd_instance *inst, const cd_paint_request *paint, cd_field_fault *fault);
void cd_add_vec3(cJSON *obj, const char *name, cd_vec3 v);
const char *cd_instance_type_name(cd_instance_type type);
/* The handler of every row of CD_COMMAND_MAP (protocol/commands.h), in
 * dispatch.c, or queries.c for the read-only get, topology and status, or
 * metrics.c for stats. */
#define CD_DECLARE_HANDLER(ID, name, wire, rule, touches, access, payload) \
    cd_dispatch_result cd_cmd_##name(cd_conn *conn, const cd_request *req);
CD_COMMAND_MAP(CD_DECLARE_HANDLER)
#undef CD_DECLARE_HANDLER
/* Runs `req` through its handler at once (no access or busy check): replay
 * applies journaled requests to the instances it owns. */
cd_dispatch_result cd_dispatch_apply(cd_conn *conn, const cd_request *req);
/* Forgets an instance in every connection's subscriptions and slots. */
void cd_dispatch_forget_instance(cd_server *server, cd_id instance);

/* Resolves an id list to live instances (`all`: every one); replies
 * not_found or invalid_argument (duplicate) and returns NULL on failure.
 * The caller frees the result. */
cd_id *cd_resolve_ids(cd_conn *conn, const cd_request *req, const cd_id_list *list,
                      uint32_t *count);

/* ---- scenes.c: scenes, lifetimes, destroying instances ---- */
/* The slot table for --max-instances; false when out of memory. */
bool cd_scenes_init(cd_server *server);
void cd_scenes_free(cd_server *server);
/* A new (created or loaded) instance joins `scene`, tied to `owner` when
 * not NULL. False when the scene cannot be made: CD_E_LIMIT_EXCEEDED (at
 * most --max-instances scenes) or CD_E_INTERNAL, with `err`; `limit`
 * false lets loads past the bound (they are bounded by the instances). */
bool cd_scenes_add(cd_server *server, cd_id id, const char *scene, cd_conn *owner, bool limit,
                   cd_error *err);
/* Whether a new instance could join `scene` (create asks before it
 * builds); false with `err` as cd_scenes_add. */
bool cd_scenes_room(cd_server *server, const char *scene, cd_error *err);
/* The instance's scene (NULL for an id that is not live). */
const cd_scene *cd_scenes_of(const cd_server *server, cd_id id);
/* Is it destroyed when a connection closes (its own tie or its scene's)? */
bool cd_scenes_ephemeral(const cd_server *server, cd_id id);
/* The scene named `name`, NULL when none exists. */
const cd_scene *cd_scenes_find(const cd_server *server, const char *name);
/* Keeps the ids of `ids` (count of them) that are in scene `name`, in
 * their order; how many. */
uint32_t cd_scenes_filter(const cd_server *server, const char *name, cd_id *ids, uint32_t count);
/* Is an instance of scene `name` being stepped? */
bool cd_scenes_busy(const cd_server *server, const char *name);
/* Destroys a live instance: the world's, its scene's, every subscription
 * and slot; `journal`: the recording gets a destroy for it (when no
 * request line was journaled for it). */
void cd_scenes_destroy(cd_server *server, cd_id id, bool journal);
/* The instance is gone from the world already (a load replaced it). */
void cd_scenes_forget(cd_server *server, cd_id id);
/* The connection is gone (its close callback: a safe point): what it
 * holds is destroyed, an instance being stepped once its batch is back. */
void cd_scenes_release_conn(cd_server *server, cd_conn *conn);
/* A step batch is back: destroys the doomed instances no batch holds. */
void cd_scenes_reap(cd_server *server);
/* The snapshot tag of an instance (scene and ephemeral), and back: a
 * loaded instance joins its saved scene; one saved as ephemeral is tied
 * to `owner`, or destroyed at once when `owner` is NULL (the load at
 * start: its connection is gone). Returns false when it was destroyed. */
void cd_scenes_tag(const cd_server *server, cd_id id, cd_snapshot_tag *tag);
bool cd_scenes_adopt(cd_server *server, cd_id id, const cd_snapshot_tag *tag, cd_conn *owner);
/* The scene list of `scenes` and `status` ("scenes": name, instances,
 * ephemeral), sorted by name; only `only` when not NULL. False on OOM. */
bool cd_scenes_add_list(const cd_server *server, cJSON *reply, const char *only);
/* Is `conn` subscribed to scene `scene` (NULL: no)? Its options. */
const cd_frame_options *cd_scenes_subscription(const cd_conn *conn, const cd_scene *scene);

/* ---- snapshot_file.c: files under --data-dir ---- */
typedef enum cd_file_status { CD_FILE_OK, CD_FILE_MISSING, CD_FILE_ERROR } cd_file_status;
/* Reads <dir>/<name><ext> whole into a malloc'd *data. */
cd_file_status cd_data_file_read(const char *dir, const char *name, const char *ext, uint8_t **data,
                                 size_t *len, char *err, size_t cap);
/* Writes <dir>/<name>.cds atomically (temporary, fsync, rename, folder
 * fsync); false with a one-line reason in `err` (the old file, if any, is
 * then intact). `seq` makes the temporary's name unique, so that two
 * writes of one name never share it. `crash_at`: --crash-at. Any thread. */
bool cd_snapshot_file_write(const char *dir, const char *name, uint64_t seq, const uint8_t *data,
                            size_t len, const char *crash_at, char *err, size_t cap);
/* Reads <dir>/<name>.cds whole into a malloc'd *data. */
cd_file_status cd_snapshot_file_read(const char *dir, const char *name, uint8_t **data,
                                     size_t *len, char *err, size_t cap);
/* Removes the temporaries a crash left in `dir` (".NAME.cds.SEQ.tmp");
 * how many. */
uint32_t cd_snapshot_file_clean(const char *dir);
/* The names of the files <name><ext> in `dir` (snapshots ".cds", journals
 * ".cdj"; only valid names), newest first (malloc'd *names); how many. */
uint32_t cd_data_file_list(const char *dir, const char *ext, char (**names)[CD_SNAPSHOT_NAME_MAX + 1]);

/* ---- snapshots.c: save, load, autosave ---- */
/* At start: loads the newest valid snapshot of --data-dir (logging what it
 * loaded and what it skipped) and starts the autosave timer. */
void cd_snapshots_start(cd_server *server);
/* A step batch is back: an autosave that waited for it runs now. */
void cd_snapshots_steps_idle(cd_server *server);
/* Shutting down, no step running (the pool is joined): the last autosave,
 * once the files being written are. */
void cd_snapshots_stop(cd_server *server);
/* The connection is going away: its save must not reply to it, and its
 * memory snapshots are freed. */
void cd_snapshots_forget_conn(cd_conn *conn);

/* ---- journal.c: journal files (record, replay) ---- */
/* Creates <dir>/<name>.cdj (replacing one of that name) with its preamble;
 * the descriptor, or -1 with `err`. */
int cd_journal_create(const char *dir, const char *name, char *err, size_t cap);
/* One record (kind, body) with one write(); false with `err`. */
bool cd_journal_append(int fd, uint8_t kind, const void *body, size_t len, char *err, size_t cap);
/* fsync and close; false with `err`. */
bool cd_journal_close(int fd, char *err, size_t cap);
/* The preamble of journal bytes; CD_E_INVALID_ARGUMENT with `err`. */
cd_status cd_journal_check_preamble(const uint8_t *data, size_t len, char *err, size_t cap);
typedef enum cd_journal_next { CD_JOURNAL_RECORD, CD_JOURNAL_END, CD_JOURNAL_TORN } cd_journal_next;
typedef struct cd_journal_rec {
    uint8_t kind;
    const uint8_t *body; /* into the bytes read */
    size_t len;
    size_t offset; /* of the record in the file */
} cd_journal_rec;
/* The record at *at (0: the first), moving *at past it: CD_JOURNAL_END at
 * the end, CD_JOURNAL_TORN where the rest is not a whole record (a crash
 * mid-write, or damage). */
cd_journal_next cd_journal_record(const uint8_t *data, size_t len, size_t *at, cd_journal_rec *out);

/* ---- recording.c: record, replay ---- */
/* Does the recording want each request's line (req->line)? */
bool cd_recording_wants_lines(const cd_server *server);
/* A request about to run: journaled when it changes a recorded instance. */
void cd_recording_command(cd_server *server, const cd_request *req);
/* A step of `ids` starting: journaled for the recorded ones among them,
 * with `levels`, the level of detail each steps at (NULL, out of memory:
 * the journal ends). */
void cd_recording_step(cd_server *server, const cd_id *ids, const int32_t *levels, uint32_t count,
                       float dt);
/* Does the recording hold any of these instances? */
bool cd_recording_holds(const cd_server *server, const cd_id *ids, uint32_t count);
/* A recorded instance was destroyed by no journaled request (a destroy of
 * a list or a scene, its connection closing): a destroy is journaled. */
void cd_recording_destroyed(cd_server *server, cd_id id);
/* Stopping (or a load replacing the world): the journal is closed with its
 * STOP record. */
void cd_recording_shutdown(cd_server *server);

/* ---- auth.c ---- */
/* Loads the tokens (files or environment) and checks the bind; false after
 * printing why to `err` (clothd then exits 2). */
bool cd_auth_configure(cd_server *server, FILE *err);
cd_access_level cd_auth_initial_access(const cd_server *server);
/* May this connection send `req`? false after replying unauthorized. */
bool cd_auth_allows(cd_conn *conn, const cd_request *req);

/* ---- stepper.c ---- */
/* Starts a step of `ids` (all exist, none busy, count > 0). */
/* budget_ms: the soft time budget (budget.c), 0 for none. */
cd_dispatch_result cd_stepper_start(cd_conn *conn, const cJSON *req_id, float dt,
                                    float budget_ms, const cd_id *ids, uint32_t count);
/* Drains the pool's finished jobs (called on the loop thread). */
void cd_stepper_drain(cd_server *server);
/* On a worker, in the pool's notify after a step job is queued as done:
 * whether the loop must be woken (the job completes its batch). */
bool cd_stepper_job_done_wakes(void);
/* The connection is going away: its batches must not reply to it. */
void cd_stepper_forget_conn(cd_conn *conn);
/* Sends the current frame of `inst` to one connection, in the form its
 * subscription asks for (plain when it has none); `every` does not apply. */
void cd_stepper_send_current(cd_conn *conn, const cd_instance *inst);

/* ---- metrics.c: counters and log lines; each hook is one call ---- */
/* The server listens on host:port: logs the start line. */
void cd_metrics_started(cd_server *server, const char *host, int port);
/* SIGINT/SIGTERM: logs the stop line. */
void cd_metrics_stopping(cd_server *server, int signum);
/* Accepted (counted in conn_count already): the peer, the connect line. */
void cd_metrics_conn_open(cd_conn *conn);
/* The connection is freed: the close line. */
void cd_metrics_conn_close(cd_conn *conn);
/* The command a line names (parsed or not), now being run on `conn`;
 * CD_CMD_COUNT for none (an error not tied to a request follows). */
void cd_metrics_command(cd_conn *conn, cd_command cmd);
/* An error reply to `conn`: counted, and logged by its code's level. */
void cd_metrics_error(cd_conn *conn, const cd_error *err);
/* A write of `bytes` (`frames` frames) to `conn` completed. */
void cd_metrics_sent(cd_conn *conn, cd_write_kind kind, size_t bytes, uint32_t frames);
/* A frame waiting in a slow subscriber's slot was replaced by a newer one. */
void cd_metrics_frame_skipped(cd_conn *conn);
/* A client that does not read its replies is closed (--max-output). */
void cd_metrics_output_limit(cd_conn *conn, size_t queued);
/* A step batch with a time budget of `budget_ms` took `actual_ms` and
 * stepped `degraded` instances below their own level of detail. */
void cd_metrics_budget(cd_server *server, double budget_ms, double actual_ms, uint32_t degraded);
/* A step batch of `instances` started at `started_ns` (uv_hrtime) has
 * finished; `conn` is its requester (NULL when it has gone). */
void cd_metrics_step(cd_server *server, const cd_conn *conn, uint64_t started_ns,
                     uint32_t instances);
/* The Prometheus text exposition of every metric (malloc'd, `*len` bytes);
 * NULL on OOM. */
char *cd_metrics_prometheus(cd_server *server, size_t *len);
/* The distance solve's SIMD path, as `stats` and clothd_info report it. */
const char *cd_metrics_simd_path(void);
/* "host:port" ("[host]:port" for IPv6; "?" for another family). */
void cd_addr_text(const struct sockaddr_storage *addr, char out[CD_ADDR_TEXT_MAX]);
/* The peer of a connected socket as cd_addr_text writes it. */
void cd_peer_text(uv_tcp_t *tcp, char out[CD_ADDR_TEXT_MAX]);
/* A connection's peer: its address and port, or "unix" over --unix. */
void cd_conn_peer_text(cd_conn *conn, char out[CD_ADDR_TEXT_MAX]);

/* ---- health.c: the HTTP ports ---- */
/* Binds --health-port and --metrics-port when given; false after logging
 * why (clothd then exits 1). */
bool cd_health_start(cd_server *server);
/* Prints "clothd health on HOST:PORT" (and metrics) to `out`. */
void cd_health_announce(const cd_server *server, FILE *out);
/* "host:port" of the health (metrics: false) or metrics port; "" if off. */
const char *cd_health_address(const cd_server *server, bool metrics);
/* Closes the listeners and every HTTP connection (shutdown). */
void cd_health_close(cd_server *server);

/* ---- server.c ---- */
bool cd_server_is_busy(const cd_server *server, cd_id instance);
void cd_server_set_busy(cd_server *server, cd_id instance, bool busy);
/* Gives every connection with a deferred request another chance, then the
 * connections whose own step has just replied (in that order, so that a
 * client stepping back to back cannot starve the others). */
void cd_server_resume_deferred(cd_server *server);

#endif
