/* One client connection: line framing of requests, replies in request order,
 * and frame and event delivery that never queues more than a budget per
 * client.
 *
 * Frame delivery: while the client's frames in flight stay within
 * opts.frame_budget bytes, a frame is accepted at once. Beyond it, each
 * instance keeps only its newest frame in a slot, and slots are flushed in
 * order as writes complete: a slow viewer skips frames, never grows a queue
 * and never slows the stepping. Accepted frames are gathered and written
 * with ONE uv_write (one buffer per frame) per loop wake-up: the server's
 * check handle, which runs right after libuv's poll, flushes every
 * connection's gathered frames. Any other write to the connection (a reply,
 * an event) flushes them first, so nothing overtakes a frame.
 *
 * Events (wind and debug changes) work the same way: while the client's
 * events in flight stay within CD_EVENT_BUDGET they are written at once;
 * beyond, only the newest event of each kind (and instance) is kept, so a
 * subscriber that never reads costs a bounded amount however often the wind
 * changes.
 *
 * Every write is counted at its true cost (the bytes plus the write request
 * that carries them) against its limit.
 *
 * A client that half-closes (shutdown(SHUT_WR)) still gets the replies of
 * every complete line it sent: they run, their replies are flushed, then the
 * connection closes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CD_READ_CHUNK 65536u
/* Event bytes in flight to one client before only the newest per kind is kept. */
#define CD_EVENT_BUDGET (64u * 1024u)

typedef struct cd_write {
    uv_write_t req;
    cd_conn *conn;
    cd_write_kind kind;
    char *line;           /* owned reply or event line */
    size_t len;           /* bytes written */
    size_t cost;          /* what it is counted at: len + this struct (+ entries) */
    uint32_t frame_count; /* CD_WRITE_FRAME: the gathered frames, a reference each */
    cd_frame_buf *frames[];
} cd_write;

/* What one gathered frame costs besides its bytes: its pointer in the
 * write, its uv_buf_t, and libuv's copy of that buffer array. */
#define CD_FRAME_ENTRY_COST (sizeof(cd_frame_buf *) + 2 * sizeof(uv_buf_t))

/* The newest event of one kind (and instance) waiting for a slow client. */
struct cd_event_slot {
    uint64_t key;
    char *line;
    size_t len;
};

static void on_close(uv_handle_t *handle);
static void start_reading(cd_conn *conn);
static void stop_reading(cd_conn *conn);

/* ---- output ---------------------------------------------------------- */

static void flush_slots(cd_conn *conn);
static void flush_event_slots(cd_conn *conn);
static void flush_gather(cd_conn *conn);

static size_t *bytes_of(cd_conn *conn, cd_write_kind kind)
{
    return kind == CD_WRITE_FRAME   ? &conn->frame_bytes
           : kind == CD_WRITE_EVENT ? &conn->event_bytes
                                    : &conn->reply_bytes;
}

static void on_write_done(uv_write_t *req, int status)
{
    cd_write *w = (cd_write *)req;
    cd_conn *conn = w->conn;
    *bytes_of(conn, w->kind) -= w->cost;
    if (status >= 0)
        cd_metrics_sent(conn, w->kind, w->len, w->frame_count);
    for (uint32_t i = 0; i < w->frame_count; i++)
        cd_frame_buf_unref(w->frames[i]);
    free(w->line);
    free(w);
    if (status < 0) {
        cd_conn_close(conn);
        return;
    }
    if (!conn->closing) {
        flush_slots(conn);
        flush_event_slots(conn);
    }
}

/* Queues `w` (a reply or event line: kind, line, len set); counts its cost
 * while it is in flight. Gathered frames go first. On failure nothing is
 * counted and the caller frees. */
static bool queue_write(cd_conn *conn, cd_write *w, const void *data)
{
    flush_gather(conn);
    if (conn->closing)
        return false;
    uv_buf_t buf = uv_buf_init((char *)data, (unsigned)w->len);
    w->conn = conn;
    w->cost = w->len + sizeof *w;
    if (uv_write(&w->req, (uv_stream_t *)&conn->socket, &buf, 1, on_write_done) != 0)
        return false;
    *bytes_of(conn, w->kind) += w->cost;
    return true;
}

/* Queues a reply or event line (taken over). False when it could not be
 * queued: out of memory (the line is freed), or the write failed (the line
 * is freed and the connection closed). */
static bool write_line(cd_conn *conn, cd_write_kind kind, char *line, size_t len)
{
    cd_write *w = calloc(1, sizeof *w);
    if (w == NULL) {
        free(line);
        return false;
    }
    w->kind = kind;
    w->line = line;
    w->len = len;
    if (!queue_write(conn, w, line)) {
        free(line);
        free(w);
        cd_conn_close(conn);
        return false;
    }
    return true;
}

void cd_conn_send_line(cd_conn *conn, char *line, size_t len)
{
    if (conn->sink) {
        free(line);
        return;
    }
    if (line == NULL) {
        cd_conn_close(conn); /* out of memory building the reply */
        return;
    }
    /* A client that never reads its replies is closed, not buffered for. */
    if (conn->closing ||
        conn->reply_bytes + len + sizeof(cd_write) > conn->server->opts.max_output) {
        if (!conn->closing)
            cd_metrics_output_limit(conn, conn->reply_bytes + len);
        free(line);
        cd_conn_close(conn);
        return;
    }
    /* A reply that cannot be queued would break the request order: close. */
    if (!write_line(conn, CD_WRITE_REPLY, line, len))
        cd_conn_close(conn);
}

/* ---- events: the newest per kind once the budget is full --------------- */

static bool event_fits(const cd_conn *conn, size_t len)
{
    return conn->event_bytes + len + sizeof(cd_write) <= CD_EVENT_BUDGET;
}

static void flush_event_slots(cd_conn *conn)
{
    uint32_t sent = 0;
    while (sent < conn->event_slot_count && !conn->closing &&
           event_fits(conn, conn->event_slots[sent].len)) {
        /* The slot gives its line up first: a failed write closes the
         * connection, which frees what the slots still hold. */
        char *line = conn->event_slots[sent].line;
        conn->event_slots[sent].line = NULL;
        write_line(conn, CD_WRITE_EVENT, line, conn->event_slots[sent].len);
        sent++;
    }
    if (sent == 0 || conn->closing)
        return;
    memmove(conn->event_slots, conn->event_slots + sent,
            (conn->event_slot_count - sent) * sizeof *conn->event_slots);
    conn->event_slot_count -= sent;
}

void cd_conn_send_event(cd_conn *conn, uint64_t key, const char *line, size_t len)
{
    if (conn->closing || conn->draining)
        return;
    char *copy = malloc(len);
    if (copy == NULL)
        return; /* out of memory: this client misses the event */
    memcpy(copy, line, len);
    /* Once an event waits, later ones wait too: events never overtake. */
    if (conn->event_slot_count == 0 && event_fits(conn, len)) {
        write_line(conn, CD_WRITE_EVENT, copy, len);
        return;
    }
    for (uint32_t i = 0; i < conn->event_slot_count; i++) {
        if (conn->event_slots[i].key == key) {
            free(conn->event_slots[i].line);
            conn->event_slots[i].line = copy;
            conn->event_slots[i].len = len;
            return;
        }
    }
    if (conn->event_slot_count == conn->event_slot_cap) {
        uint32_t cap = conn->event_slot_cap ? conn->event_slot_cap * 2 : 4;
        cd_event_slot *grown = realloc(conn->event_slots, cap * sizeof *grown);
        if (grown == NULL) {
            free(copy);
            return;
        }
        conn->event_slots = grown;
        conn->event_slot_cap = cap;
    }
    conn->event_slots[conn->event_slot_count++] = (cd_event_slot){.key = key, .line = copy, .len = len};
}

static void free_event_slots(cd_conn *conn)
{
    for (uint32_t i = 0; i < conn->event_slot_count; i++)
        free(conn->event_slots[i].line);
    conn->event_slot_count = 0;
}

/* The reply to the request being answered carries its warnings (unknown
 * members); there is one reply per request, so they go with the first. */
static void add_warnings(cd_conn *conn, cJSON *reply)
{
    if (conn->warnings == NULL)
        return;
    if (reply == NULL || !cJSON_AddItemToObject(reply, "warnings", conn->warnings))
        cJSON_Delete(conn->warnings);
    conn->warnings = NULL;
}

static void drop_warnings(cd_conn *conn)
{
    cJSON_Delete(conn->warnings);
    conn->warnings = NULL;
}

char *cd_conn_take_warnings(cd_conn *conn)
{
    char *text = conn->warnings != NULL ? cJSON_PrintUnformatted(conn->warnings) : NULL;
    drop_warnings(conn);
    return text;
}

void cd_conn_send_reply(cd_conn *conn, cJSON *reply)
{
    add_warnings(conn, reply);
    size_t len = 0;
    char *line = cd_reply_print(reply, &len);
    cd_conn_send_line(conn, line, len);
}

void cd_conn_send_error(cd_conn *conn, const cJSON *id, const cd_error *err)
{
    if (conn->sink)
        return;
    cd_metrics_error(conn, err);
    cJSON *reply = cd_reply_error(id, err);
    add_warnings(conn, reply);
    size_t len = 0;
    char *line = cd_reply_print(reply, &len);
    cd_conn_send_line(conn, line, len);
}

static void on_flush_check(uv_check_t *check)
{
    cd_server *server = check->data;
    uv_check_stop(check);
    uv_idle_stop(&server->flush_idle);
    cd_conn_flush_gathered(server);
}

/* An active idle handle makes libuv poll without blocking: frames gathered
 * before the poll (in a timer, or in a write callback libuv deferred to its
 * pending phase) are flushed by the check right after it, not whenever the
 * next event comes. */
static void on_flush_idle(uv_idle_t *idle)
{
    (void)idle;
}

/* Takes a reference to `frame` into the connection's gather and counts its
 * cost (and, for the first, the write that will carry them). */
static void gather_frame(cd_conn *conn, cd_frame_buf *frame)
{
    if (conn->gather_count == conn->gather_cap) {
        uint32_t cap = conn->gather_cap ? conn->gather_cap * 2 : 16;
        cd_frame_buf **grown = realloc(conn->gather, cap * sizeof *grown);
        if (grown == NULL)
            return; /* out of memory: this frame is skipped */
        conn->gather = grown;
        conn->gather_cap = cap;
    }
    if (conn->gather_count == 0)
        conn->frame_bytes += sizeof(cd_write);
    cd_frame_buf_ref(frame);
    conn->gather[conn->gather_count++] = frame;
    conn->frame_bytes += frame->len + CD_FRAME_ENTRY_COST;
    cd_server *server = conn->server;
    if (!server->frames_gathered && !uv_is_closing((uv_handle_t *)&server->flush_check) &&
        !uv_is_closing((uv_handle_t *)&server->flush_idle)) {
        server->frames_gathered = true;
        uv_check_start(&server->flush_check, on_flush_check);
        uv_idle_start(&server->flush_idle, on_flush_idle);
    }
}

/* The gathered frames in one uv_write, one buffer each. */
static void flush_gather(cd_conn *conn)
{
    const uint32_t n = conn->gather_count;
    if (n == 0 || conn->closing)
        return;
    conn->gather_count = 0;
    size_t len = 0, cost = sizeof(cd_write);
    for (uint32_t i = 0; i < n; i++) {
        len += conn->gather[i]->len;
        cost += conn->gather[i]->len + CD_FRAME_ENTRY_COST;
    }
    uv_buf_t few[64];
    uv_buf_t *bufs = n <= 64 ? few : malloc(n * sizeof *bufs);
    cd_write *w = malloc(sizeof *w + n * sizeof w->frames[0]);
    if (w != NULL) {
        memset(w, 0, sizeof *w);
        w->conn = conn;
        w->kind = CD_WRITE_FRAME;
        w->len = len;
        w->cost = cost;
        w->frame_count = n;
        memcpy(w->frames, conn->gather, n * sizeof w->frames[0]);
    }
    int rc = UV_ENOMEM;
    if (w != NULL && bufs != NULL) {
        for (uint32_t i = 0; i < n; i++)
            bufs[i] = uv_buf_init((char *)w->frames[i]->data, (unsigned)w->frames[i]->len);
        rc = uv_write(&w->req, (uv_stream_t *)&conn->socket, bufs, n, on_write_done);
    }
    if (bufs != few)
        free(bufs);
    if (rc == 0)
        return; /* counted since each frame was gathered; on_write_done uncounts */
    conn->frame_bytes -= cost;
    for (uint32_t i = 0; i < n; i++)
        cd_frame_buf_unref(conn->gather[i]);
    free(w);
    cd_conn_close(conn);
}

void cd_conn_flush_gathered(cd_server *server)
{
    server->frames_gathered = false;
    for (cd_conn *conn = server->conns; conn != NULL; conn = conn->next)
        flush_gather(conn);
}

/* Fits the budget: a frame, its entry and (for the first gathered) its
 * write. A client with nothing in flight always takes one frame. */
static bool within_budget(const cd_conn *conn, size_t len)
{
    size_t cost = len + CD_FRAME_ENTRY_COST + (conn->gather_count == 0 ? sizeof(cd_write) : 0);
    return conn->frame_bytes == 0 || conn->frame_bytes + cost <= conn->server->opts.frame_budget;
}

static void flush_slots(cd_conn *conn)
{
    uint32_t sent = 0;
    while (sent < conn->slot_count && !conn->closing &&
           within_budget(conn, conn->slots[sent].frame->len)) {
        cd_frame_buf *frame = conn->slots[sent].frame;
        conn->slots[sent].frame = NULL;
        gather_frame(conn, frame);
        cd_frame_buf_unref(frame);
        sent++;
    }
    if (sent == 0 || conn->closing)
        return;
    memmove(conn->slots, conn->slots + sent, (conn->slot_count - sent) * sizeof *conn->slots);
    conn->slot_count -= sent;
}

/* Keeps `frame` as the newest pending frame of its instance. */
static void put_slot(cd_conn *conn, cd_frame_buf *frame)
{
    for (uint32_t i = 0; i < conn->slot_count; i++) {
        if (conn->slots[i].instance == frame->instance) {
            cd_metrics_frame_skipped(conn);
            cd_frame_buf_unref(conn->slots[i].frame);
            cd_frame_buf_ref(frame);
            conn->slots[i].frame = frame;
            return;
        }
    }
    if (conn->slot_count == conn->slot_cap) {
        uint32_t cap = conn->slot_cap ? conn->slot_cap * 2 : 8;
        cd_frame_slot *grown = realloc(conn->slots, cap * sizeof *grown);
        if (grown == NULL)
            return; /* out of memory: this frame is skipped */
        conn->slots = grown;
        conn->slot_cap = cap;
    }
    cd_frame_buf_ref(frame);
    conn->slots[conn->slot_count++] = (cd_frame_slot){.instance = frame->instance, .frame = frame};
}

void cd_conn_send_frame(cd_conn *conn, cd_frame_buf *frame)
{
    if (conn->closing || conn->draining)
        return;
    /* Once a frame waits in a slot, later ones go through the slots too, so
     * that an instance's frames never overtake each other. */
    if (conn->slot_count == 0 && within_budget(conn, frame->len)) {
        gather_frame(conn, frame);
        return;
    }
    put_slot(conn, frame);
    flush_slots(conn);
}

/* ---- input ----------------------------------------------------------- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    cd_conn *conn = handle->data;
    /* Room for one line at the limit, its newline and one more read. */
    size_t limit = conn->server->opts.max_line + 1 + CD_READ_CHUNK;
    if (conn->in_cap - conn->in_len < CD_READ_CHUNK && conn->in_cap < limit) {
        size_t cap = conn->in_cap ? conn->in_cap * 2 : CD_READ_CHUNK;
        while (cap - conn->in_len < CD_READ_CHUNK && cap < limit)
            cap *= 2;
        if (cap > limit)
            cap = limit;
        char *grown = realloc(conn->in, cap);
        if (grown != NULL) {
            conn->in = grown;
            conn->in_cap = cap;
        }
    }
    *buf = uv_buf_init(conn->in + conn->in_len, (unsigned)(conn->in_cap - conn->in_len));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    cd_conn *conn = stream->data;
    if (nread == UV_EOF) {
        /* Half-closed: answer the complete lines, then close (see the top). */
        conn->eof = true;
        stop_reading(conn);
        cd_conn_process(conn);
        return;
    }
    if (nread < 0) {
        cd_conn_close(conn);
        return;
    }
    conn->in_len += (size_t)nread;
    cd_conn_process(conn);
}

static void start_reading(cd_conn *conn)
{
    if (conn->reading || conn->closing || conn->draining || conn->eof)
        return;
    if (uv_read_start((uv_stream_t *)&conn->socket, on_alloc, on_read) == 0)
        conn->reading = true;
    else
        cd_conn_close(conn);
}

static void stop_reading(cd_conn *conn)
{
    if (!conn->reading)
        return;
    uv_read_stop((uv_stream_t *)&conn->socket);
    conn->reading = false;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    cd_conn *conn = req->handle->data;
    free(req);
    cd_conn_close(conn);
}

/* Closes once everything queued is written: uv_shutdown waits for queued
 * writes, and its callback closes. Nothing more is read or run. */
void cd_conn_close_after_writes(cd_conn *conn)
{
    if (conn->closing || conn->draining)
        return;
    stop_reading(conn);
    conn->in_len = 0;
    flush_gather(conn); /* frames accepted before go out before the close */
    if (conn->closing)
        return;
    conn->draining = true;
    uv_shutdown_t *req = calloc(1, sizeof *req);
    if (req == NULL || uv_shutdown(req, (uv_stream_t *)&conn->socket, on_shutdown) != 0) {
        free(req);
        cd_conn_close(conn);
    }
}

/* A connection over --max-connections, or a line that took too long:
 * answered limit_exceeded, then closed once that is written. */
static void fail_limit(cd_conn *conn, const char *message)
{
    cd_error err;
    cd_fail(&err, CD_E_LIMIT_EXCEEDED, "%s", message);
    cd_metrics_command(conn, CD_CMD_COUNT); /* not a request's error */
    drop_warnings(conn);
    cd_conn_send_error(conn, NULL, &err);
    cd_conn_close_after_writes(conn);
}

static void fail_line_too_long(cd_conn *conn)
{
    cd_error err;
    cd_fail(&err, CD_E_LINE_TOO_LONG, "line: longer than the limit of %zu bytes",
            conn->server->opts.max_line);
    cd_metrics_command(conn, CD_CMD_COUNT); /* not a request's error */
    drop_warnings(conn);
    cd_conn_send_error(conn, NULL, &err);
    cd_conn_close_after_writes(conn);
}

static bool is_blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

/* While a recording runs, the request keeps its message for the journal;
 * false after replying internal (out of memory; `req` freed). */
static bool keep_message(cd_conn *conn, cd_request *req, const char *msg, size_t len)
{
    if (!cd_recording_wants_lines(conn->server))
        return true;
    if ((req->line = malloc(len ? len : 1)) != NULL) {
        memcpy(req->line, msg, len);
        req->line_len = len;
        return true;
    }
    cd_error oom;
    cd_fail(&oom, CD_E_INTERNAL, "line: out of memory");
    cd_conn_send_error(conn, req->id, &oom);
    cd_request_free(req);
    return false;
}

/* A step read while its connection runs the lines after its own finished
 * step ahead of the others (cd_server_resume_deferred): it waits, parked,
 * behind their parked requests, as any request of a stepping client. */
static cd_dispatch_result wait_behind_parked(cd_conn *conn, cd_request *req)
{
    conn->deferred = *req; /* ownership moves to the connection */
    conn->has_deferred = true;
    return CD_DISPATCH_DEFER;
}

/* Parses and runs one line; returns what dispatch said. */
static cd_dispatch_result run_line(cd_conn *conn, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (is_blank(line, len))
        return CD_DISPATCH_DONE;
    cd_request req;
    cd_error err;
    drop_warnings(conn); /* the last request's reply has gone */
    cd_status parsed = cd_request_parse(line, len, &conn->server->limits, &req, &err);
    cd_metrics_command(conn, req.cmd);
    /* Unknown members (PROTOCOL.md "Unknown members"): warnings in the
     * reply, or on a strict connection the request's error. */
    if (parsed == CD_OK && conn->strict && req.unknown_count > 0)
        parsed = cd_fail_unknown_member(&err, &req);
    if (parsed != CD_OK) {
        cd_conn_send_error(conn, req.id, &err);
        cd_request_free(&req);
        return CD_DISPATCH_DONE;
    }
    conn->warnings = cd_request_warnings(&req);
    if (!keep_message(conn, &req, line, len))
        return CD_DISPATCH_DONE;
    if (conn->until_step && req.cmd == CD_CMD_STEP)
        return wait_behind_parked(conn, &req);
    cd_dispatch_result r = cd_dispatch(conn, &req);
    if (r == CD_DISPATCH_DEFER) {
        conn->deferred = req; /* ownership moves to the connection */
        conn->has_deferred = true;
        return r;
    }
    cd_request_free(&req);
    return r;
}

/* Runs one complete binary request (PROTOCOL.md "Binary requests"). */
static cd_dispatch_result run_binary(cd_conn *conn, const unsigned char *msg, size_t len)
{
    cd_request req;
    cd_error err;
    drop_warnings(conn);
    cd_status parsed = cd_binary_request_parse(msg, len, &conn->server->limits, &req, &err);
    cd_metrics_command(conn, req.cmd);
    if (parsed != CD_OK) {
        cd_conn_send_error(conn, req.id, &err);
        cd_request_free(&req);
        return CD_DISPATCH_DONE;
    }
    if (!keep_message(conn, &req, (const char *)msg, len))
        return CD_DISPATCH_DONE;
    if (conn->until_step && req.cmd == CD_CMD_STEP)
        return wait_behind_parked(conn, &req);
    cd_dispatch_result r = cd_dispatch(conn, &req);
    if (r == CD_DISPATCH_DEFER) {
        conn->deferred = req;
        conn->has_deferred = true;
        return r;
    }
    cd_request_free(&req);
    return r;
}

/* A message that starts with 0x89 is binary: its header says how long it
 * is. Returns how many bytes it takes once complete, 0 while incomplete;
 * on a bad magic or a length over --max-line the connection is failed
 * (no resynchronising inside an unknown stream) and SIZE_MAX returned. */
static size_t binary_message(cd_conn *conn, size_t start)
{
    const unsigned char *msg = (const unsigned char *)conn->in + start;
    const size_t available = conn->in_len - start;
    if (!cd_binary_request_magic(msg, available)) {
        cd_error err;
        cd_fail(&err, CD_E_PARSE_ERROR, "binary request: bad magic (0x89 'C' 'L' 'R')");
        cd_metrics_command(conn, CD_CMD_COUNT);
        drop_warnings(conn);
        cd_conn_send_error(conn, NULL, &err);
        cd_conn_close_after_writes(conn);
        return SIZE_MAX;
    }
    const size_t len = cd_binary_request_length(msg, available);
    if (available >= CD_BINARY_HEADER && (len < CD_BINARY_HEADER || len > conn->server->opts.max_line)) {
        fail_line_too_long(conn);
        return SIZE_MAX;
    }
    return len != 0 && available >= len ? len : 0;
}

/* Keeps line_started: when the bytes left after the complete lines began
 * to arrive (`new_line`: a new partial line started with this read). The
 * server's line timer watches it while any connection has one. */
static void track_partial_line(cd_conn *conn, bool new_line)
{
    if (conn->in_len == 0) {
        conn->line_started = 0;
        return;
    }
    if (new_line || conn->line_started == 0)
        conn->line_started = uv_now(conn->server->loop);
    uv_timer_t *timer = &conn->server->line_timer;
    if (!uv_is_active((uv_handle_t *)timer) && !uv_is_closing((uv_handle_t *)timer))
        uv_timer_start(timer, cd_conn_check_line_timeouts, 1000, 1000);
}

void cd_conn_process(cd_conn *conn)
{
    if (conn->closing || conn->draining)
        return;
    if (conn->own_batch != NULL || conn->own_save != NULL)
        return;
    if (conn->paused_until != 0)
        return;
    if (conn->has_deferred) {
        cd_dispatch_result r = cd_dispatch(conn, &conn->deferred);
        if (r == CD_DISPATCH_DEFER)
            return;
        cd_request_free(&conn->deferred);
        conn->has_deferred = false;
    }

    const size_t max_line = conn->server->opts.max_line;
    const bool had_partial = conn->in_len > 0;
    size_t start = 0;
    bool binary_pending = false;
    while (!conn->closing && !conn->draining && !conn->has_deferred && conn->own_batch == NULL &&
           conn->own_save == NULL && conn->paused_until == 0 && start < conn->in_len) {
        if ((unsigned char)conn->in[start] == 0x89) {
            const size_t len = binary_message(conn, start);
            if (len == SIZE_MAX)
                return;
            if (len == 0) {
                binary_pending = true;
                break;
            }
            start += len;
            run_binary(conn, (const unsigned char *)conn->in + start - len, len);
            continue;
        }
        char *nl = memchr(conn->in + start, '\n', conn->in_len - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (conn->in + start));
        if (len > max_line) {
            fail_line_too_long(conn);
            return;
        }
        size_t line_start = start;
        start += len + 1;
        run_line(conn, conn->in + line_start, len);
    }
    if (conn->closing || conn->draining)
        return;
    memmove(conn->in, conn->in + start, conn->in_len - start);
    conn->in_len -= start;
    track_partial_line(conn, start > 0 || !had_partial);
    if (!binary_pending && conn->in_len > max_line && memchr(conn->in, '\n', conn->in_len) == NULL) {
        fail_line_too_long(conn);
        return;
    }
    /* Stop reading while a request waits: TCP pushes back on the client. */
    if (conn->has_deferred || conn->own_batch != NULL || conn->own_save != NULL ||
        conn->paused_until != 0)
        stop_reading(conn);
    else if (conn->eof)
        cd_conn_close_after_writes(conn); /* every complete line has run; a partial one is dropped */
    else
        start_reading(conn);
}

/* ---- lifetime ---------------------------------------------------------- */

/* The pause timer: resumes every connection whose pause is over, then
 * waits for the next one to end. */
static void resume_paused(uv_timer_t *timer)
{
    cd_server *server = timer->data;
    const uint64_t now = uv_now(server->loop);
    uint64_t next = 0;
    for (cd_conn *conn = server->conns, *after; conn != NULL; conn = after) {
        after = conn->next;
        if (conn->paused_until == 0 || conn->closing)
            continue;
        if (conn->paused_until <= now) {
            conn->paused_until = 0;
            cd_conn_process(conn);
        } else if (next == 0 || conn->paused_until < next) {
            next = conn->paused_until;
        }
    }
    if (next != 0)
        uv_timer_start(timer, resume_paused, next - now, 0);
}

void cd_conn_pause(cd_conn *conn, uint64_t ms)
{
    cd_server *server = conn->server;
    const uint64_t now = uv_now(server->loop);
    conn->paused_until = now + (ms > 0 ? ms : 1);
    stop_reading(conn);
    uv_timer_t *timer = &server->pause_timer;
    if (uv_is_closing((uv_handle_t *)timer))
        return;
    uint64_t due = uv_timer_get_due_in(timer);
    if (!uv_is_active((uv_handle_t *)timer) || due > ms)
        uv_timer_start(timer, resume_paused, ms, 0);
}

void cd_conn_check_line_timeouts(uv_timer_t *timer)
{
    cd_server *server = timer->data;
    const uint64_t now = uv_now(server->loop);
    const uint64_t limit_ms = (uint64_t)server->opts.line_timeout * 1000u;
    bool any = false;
    for (cd_conn *conn = server->conns, *next; conn != NULL; conn = next) {
        next = conn->next;
        if (conn->line_started == 0 || conn->closing || conn->draining || !conn->reading)
            continue;
        if (now - conn->line_started < limit_ms) {
            any = true;
            continue;
        }
        char message[96];
        snprintf(message, sizeof message, "line: incomplete %u s after its first byte (--line-timeout)",
                 server->opts.line_timeout);
        conn->line_started = 0;
        conn->in_len = 0;
        fail_limit(conn, message);
    }
    if (!any)
        uv_timer_stop(timer);
}

void cd_conn_accept(cd_server *server, uv_stream_t *listener)
{
    cd_conn *conn = calloc(1, sizeof *conn);
    if (conn == NULL)
        return;
    conn->server = server;
    conn->over_unix = listener->type == UV_NAMED_PIPE;
    if (conn->over_unix) {
        uv_pipe_init(server->loop, &conn->socket.pipe, 0);
        conn->socket.pipe.data = conn;
    } else {
        uv_tcp_init(server->loop, &conn->socket.tcp);
        conn->socket.tcp.data = conn;
    }
    conn->next = server->conns;
    if (server->conns != NULL)
        server->conns->prev = conn;
    server->conns = conn;
    server->conn_count++; /* until on_close */
    if (uv_accept(listener, (uv_stream_t *)&conn->socket) != 0) {
        cd_conn_close(conn);
        return;
    }
    if (!conn->over_unix)
        uv_tcp_nodelay(&conn->socket.tcp, 1);
    cd_metrics_conn_open(conn);
    conn->access = cd_auth_initial_access(server);
    if (server->conn_count > server->opts.max_connections) {
        char message[96];
        snprintf(message, sizeof message, "connections: at most %u at once (--max-connections)",
                 server->opts.max_connections);
        fail_limit(conn, message);
        return;
    }
    start_reading(conn);
}

void cd_conn_close(cd_conn *conn)
{
    if (conn->closing)
        return;
    conn->closing = true;
    stop_reading(conn);
    cd_stepper_forget_conn(conn);
    cd_snapshots_forget_conn(conn);
    for (uint32_t i = 0; i < conn->slot_count; i++)
        cd_frame_buf_unref(conn->slots[i].frame);
    conn->slot_count = 0;
    for (uint32_t i = 0; i < conn->gather_count; i++)
        cd_frame_buf_unref(conn->gather[i]);
    conn->gather_count = 0;
    free_event_slots(conn);
    uv_close((uv_handle_t *)&conn->socket, on_close);
}

static void on_close(uv_handle_t *handle)
{
    cd_conn *conn = handle->data;
    cd_server *server = conn->server;
    /* A safe point: no request is running. What it held goes now (or, for
     * an instance being stepped, when its batch is back). */
    cd_scenes_release_conn(server, conn);
    server->conn_count--;
    cd_metrics_conn_close(conn);
    if (conn->prev != NULL)
        conn->prev->next = conn->next;
    else
        server->conns = conn->next;
    if (conn->next != NULL)
        conn->next->prev = conn->prev;
    if (conn->has_deferred)
        cd_request_free(&conn->deferred);
    drop_warnings(conn);
    free(conn->in);
    free(conn->slots);
    free(conn->gather);
    free(conn->event_slots);
    free(conn->subs);
    free(conn->scene_subs);
    free(conn);
}

const cd_frame_options *cd_conn_subscription(const cd_conn *conn, cd_id instance)
{
    if (conn->closing)
        return NULL;
    for (uint32_t i = 0; i < conn->sub_count; i++)
        if (conn->subs[i].instance == instance)
            return &conn->subs[i].options;
    if (conn->scene_sub_count > 0) {
        const cd_frame_options *opts =
            cd_scenes_subscription(conn, cd_scenes_of(conn->server, instance));
        if (opts != NULL)
            return opts;
    }
    return conn->sub_all ? &conn->all_options : NULL;
}

bool cd_conn_is_subscribed(const cd_conn *conn, cd_id instance)
{
    return cd_conn_subscription(conn, instance) != NULL;
}
