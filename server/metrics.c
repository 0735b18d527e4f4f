/* What the server counts and what it logs about it. conn.c, server.c and
 * stepper.c call one hook per event (cd_metrics_* in internal.h); each
 * counts on the loop thread and writes the event's log line. The same
 * counters answer `stats` (JSON) and /metrics (Prometheus text, served by
 * health.c).
 *
 * What is logged at which level, and why (docs: README "Logs and metrics"):
 *   info   start and stop; one connect and one close line per connection
 *          (the close line sums its requests, errors, frames sent and
 *          skipped). Nothing per request: a game server steps 60 times a
 *          second per connection.
 *   debug  each rejected request: peer, command and error code, never the
 *          payload (invalid_argument, not_found, parse_error,
 *          unknown_command). Like redis' error stats and nginx's 4xx, they
 *          are the client's mistakes, counted in clothd_errors_total and in
 *          the close line; at info they would flood the log.
 *   warn   limits hit (limit_exceeded, line_too_long, a client over its
 *          output budget), unauthorized requests, subscribers skipping
 *          frames, steps slower than --slow-step-ms: at most one line a
 *          second per connection and kind (slow steps: per server), each
 *          saying how many were not logged since ("suppressed").
 *   error  internal errors (out of memory).
 *
 * Instances by state are read when asked for. An instance in the middle
 * of a step is counted as awake: a worker owns it until its batch is back. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* One second between two warn lines of a kind from one connection. */
#define CD_WARN_INTERVAL_MS 1000u

static const double step_bounds[CD_STEP_BUCKET_COUNT] = {
#define CD_STEP_BOUND(bound) bound,
    CD_STEP_BUCKETS(CD_STEP_BOUND)
#undef CD_STEP_BOUND
};

static const char *const write_kind_names[CD_WRITE_KINDS] = {"reply", "event", "frame"};

/* The one place that names the SIMD path, for stats, clothd_info and the
 * start line: the solver's choice for this process. */
const char *cd_metrics_simd_path(void)
{
    return cd_solver_simd_path();
}

void cd_addr_text(const struct sockaddr_storage *addr, char out[CD_ADDR_TEXT_MAX])
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
        uv_ip6_name(a, host, sizeof host);
        snprintf(out, CD_ADDR_TEXT_MAX, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
    } else if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
        uv_ip4_name(a, host, sizeof host);
        snprintf(out, CD_ADDR_TEXT_MAX, "%s:%u", host, (unsigned)ntohs(a->sin_port));
    } else {
        snprintf(out, CD_ADDR_TEXT_MAX, "?");
    }
}

static double seconds_since(uint64_t start_ns)
{
    return (double)(uv_hrtime() - start_ns) / 1e9;
}

/* ---- start, stop ---------------------------------------------------------- */

void cd_metrics_started(cd_server *server, const char *host, int port)
{
    cd_metrics *m = &server->metrics;
    m->started_ns = uv_hrtime();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    m->started_unix = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    cd_log *log = &server->log;
    if (!cd_log_begin(log, CD_LOG_INFO, "start"))
        return;
    const cd_server_options *o = &server->opts;
    cd_log_str(log, "version", CD_VERSION_STRING);
    cd_log_str(log, "address", host);
    cd_log_uint(log, "port", (uint64_t)port);
    if (o->unix_path[0] != '\0')
        cd_log_str(log, "unix", o->unix_path);
    cd_log_uint(log, "workers", o->workers);
    cd_log_str(log, "simd", cd_metrics_simd_path());
    cd_log_str(log, "access", server->full_token.len > 0 ? "token" : "open");
    cd_log_uint(log, "max_connections", o->max_connections);
    cd_log_uint(log, "max_instances", o->max_instances);
    cd_log_uint(log, "max_particles", o->max_particles);
    cd_log_uint(log, "max_total_particles", o->max_total_particles);
    cd_log_uint(log, "max_step_work", o->max_step_work);
    cd_log_uint(log, "slow_step_ms", o->slow_step_ms);
    if (o->health_port >= 0)
        cd_log_str(log, "health", cd_health_address(server, false));
    if (o->metrics_port >= 0)
        cd_log_str(log, "metrics", cd_health_address(server, true));
    cd_log_end(log);
}

void cd_metrics_stopping(cd_server *server, int signum)
{
    cd_log *log = &server->log;
    if (!cd_log_begin(log, CD_LOG_INFO, "stop"))
        return;
    cd_log_str(log, "signal", signum == SIGINT ? "SIGINT" : signum == SIGTERM ? "SIGTERM" : "other");
    cd_log_fixed(log, "uptime_s", seconds_since(server->metrics.started_ns), 3);
    cd_log_uint(log, "connections", server->conn_count);
    cd_log_uint(log, "connections_total", server->metrics.connections_total);
    cd_log_uint(log, "steps", server->metrics.steps);
    cd_log_end(log);
}

/* ---- connections -------------------------------------------------------- */

void cd_peer_text(uv_tcp_t *tcp, char out[CD_ADDR_TEXT_MAX])
{
    struct sockaddr_storage addr;
    int len = sizeof addr;
    memset(&addr, 0, sizeof addr);
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&addr, &len) != 0)
        addr.ss_family = AF_UNSPEC;
    cd_addr_text(&addr, out);
}

void cd_conn_peer_text(cd_conn *conn, char out[CD_ADDR_TEXT_MAX])
{
    if (conn->over_unix)
        snprintf(out, CD_ADDR_TEXT_MAX, "unix");
    else
        cd_peer_text(&conn->socket.tcp, out);
}

void cd_metrics_conn_open(cd_conn *conn)
{
    cd_server *server = conn->server;
    cd_conn_stats *st = &conn->stats;
    st->opened = uv_now(server->loop);
    st->cmd = CD_CMD_COUNT;
    cd_conn_peer_text(conn, st->peer);
    server->metrics.connections_total++;
    if (server->conn_count > server->opts.max_connections)
        server->metrics.connections_refused++;
    cd_log *log = &server->log;
    if (cd_log_begin(log, CD_LOG_INFO, "connect")) {
        cd_log_str(log, "peer", st->peer);
        cd_log_uint(log, "connections", server->conn_count);
        cd_log_end(log);
    }
}

void cd_metrics_conn_close(cd_conn *conn)
{
    cd_server *server = conn->server;
    const cd_conn_stats *st = &conn->stats;
    cd_log *log = &server->log;
    if (st->peer[0] == '\0')
        return; /* never accepted: no connect line either */
    if (!cd_log_begin(log, CD_LOG_INFO, "close"))
        return;
    cd_log_str(log, "peer", st->peer);
    cd_log_fixed(log, "duration_s", (double)(uv_now(server->loop) - st->opened) / 1000.0, 3);
    cd_log_uint(log, "requests", st->requests);
    cd_log_uint(log, "errors", st->errors);
    cd_log_uint(log, "bytes_sent", st->bytes_sent);
    cd_log_uint(log, "frames_sent", st->frames_sent);
    cd_log_uint(log, "frames_skipped", st->frames_skipped);
    cd_log_uint(log, "connections", server->conn_count);
    cd_log_end(log);
}

/* ---- requests and errors ------------------------------------------------ */

void cd_metrics_command(cd_conn *conn, cd_command cmd)
{
    conn->stats.cmd = (int)cmd;
    if ((unsigned)cmd >= CD_CMD_COUNT)
        return;
    conn->server->metrics.requests[cmd]++;
    conn->stats.requests++;
}

/* A warn line of a connection, at most one a second per kind: true when
 * this one may be written (`*unlogged` then holds how many were not). */
static bool warn_due(cd_conn *conn, uint64_t *logged_at, uint64_t *unlogged, uint64_t *suppressed)
{
    const uint64_t now = uv_now(conn->server->loop);
    if (*logged_at != 0 && now - *logged_at < CD_WARN_INTERVAL_MS) {
        (*unlogged)++;
        return false;
    }
    *suppressed = *unlogged;
    *unlogged = 0;
    *logged_at = now;
    return true;
}

static const char *command_name(const cd_conn *conn)
{
    return (unsigned)conn->stats.cmd < CD_CMD_COUNT ? cd_command_name((cd_command)conn->stats.cmd)
                                                    : "-";
}

void cd_metrics_error(cd_conn *conn, const cd_error *err)
{
    cd_server *server = conn->server;
    const cd_status code = err->code;
    if ((unsigned)code < CD_STATUS_COUNT)
        server->metrics.errors[code]++;
    conn->stats.errors++;

    cd_log_level level = CD_LOG_DEBUG;
    const char *event = "reject";
    bool with_message = false;
    if (code == CD_E_LIMIT_EXCEEDED || code == CD_E_LINE_TOO_LONG) {
        level = CD_LOG_WARN;
        event = "limit";
        with_message = true; /* which limit: the server's words, no payload */
    } else if (code == CD_E_UNAUTHORIZED) {
        level = CD_LOG_WARN;
        event = "unauthorized";
        with_message = true;
    } else if (code == CD_E_INTERNAL) {
        level = CD_LOG_ERROR;
        event = "internal";
        with_message = true;
    }
    cd_log *log = &server->log;
    if (!cd_log_enabled(log, level))
        return;
    uint64_t suppressed = 0;
    if (level == CD_LOG_WARN &&
        !warn_due(conn, &conn->stats.warn_logged_at, &conn->stats.warn_unlogged, &suppressed))
        return;
    cd_log_begin(log, level, event);
    cd_log_str(log, "peer", conn->stats.peer);
    cd_log_str(log, "command", command_name(conn));
    cd_log_str(log, "code", cd_status_name(code));
    if (with_message)
        cd_log_str(log, "message", err->message);
    if (level == CD_LOG_WARN)
        cd_log_uint(log, "suppressed", suppressed);
    cd_log_end(log);
}

/* ---- output ------------------------------------------------------------ */

void cd_metrics_sent(cd_conn *conn, cd_write_kind kind, size_t bytes, uint32_t frames)
{
    cd_metrics *m = &conn->server->metrics;
    if ((unsigned)kind < CD_WRITE_KINDS)
        m->sent_bytes[kind] += bytes;
    m->frames_sent += frames;
    conn->stats.bytes_sent += bytes;
    conn->stats.frames_sent += frames;
}

void cd_metrics_frame_skipped(cd_conn *conn)
{
    cd_server *server = conn->server;
    server->metrics.frames_skipped++;
    conn->stats.frames_skipped++;
    cd_log *log = &server->log;
    uint64_t suppressed = 0;
    if (!cd_log_enabled(log, CD_LOG_WARN) ||
        !warn_due(conn, &conn->stats.skip_logged_at, &conn->stats.skip_unlogged, &suppressed))
        return;
    cd_log_begin(log, CD_LOG_WARN, "frames_skipped");
    cd_log_str(log, "peer", conn->stats.peer);
    cd_log_uint(log, "skipped", suppressed + 1);
    cd_log_uint(log, "skipped_total", conn->stats.frames_skipped);
    cd_log_uint(log, "frame_bytes_in_flight", conn->frame_bytes);
    cd_log_end(log);
}

void cd_metrics_output_limit(cd_conn *conn, size_t queued)
{
    cd_log *log = &conn->server->log;
    if (!cd_log_begin(log, CD_LOG_WARN, "output_limit"))
        return;
    cd_log_str(log, "peer", conn->stats.peer);
    cd_log_uint(log, "queued_bytes", queued);
    cd_log_uint(log, "limit_bytes", conn->server->opts.max_output);
    cd_log_str(log, "message", "the client does not read its replies: closed");
    cd_log_end(log);
}

/* ---- steps ------------------------------------------------------------- */

static void count_rate(cd_metrics *m, uint64_t now_ms)
{
    const uint64_t second = now_ms / 1000u;
    const unsigned slot = (unsigned)(second % CD_RATE_SECONDS);
    if (m->rate_second[slot] != second) {
        m->rate_second[slot] = second;
        m->rate_steps[slot] = 0;
    }
    m->rate_steps[slot]++;
}

/* Steps per second over the last CD_RATE_SECONDS whole seconds (fewer
 * while the server is younger; 0 in its first second). */
static double step_rate(const cd_server *server)
{
    const cd_metrics *m = &server->metrics;
    const uint64_t second = uv_now(server->loop) / 1000u;
    uint64_t seconds = (uint64_t)seconds_since(m->started_ns);
    if (seconds > CD_RATE_SECONDS)
        seconds = CD_RATE_SECONDS;
    if (seconds == 0)
        return 0.0;
    uint64_t steps = 0;
    for (unsigned i = 0; i < CD_RATE_SECONDS; i++)
        if (m->rate_second[i] < second && m->rate_second[i] + seconds >= second)
            steps += m->rate_steps[i];
    return (double)steps / (double)seconds;
}

void cd_metrics_budget(cd_server *server, double budget_ms, double actual_ms, uint32_t degraded)
{
    cd_metrics *m = &server->metrics;
    m->budget_steps++;
    m->budget_overruns += actual_ms > budget_ms;
    m->budget_seconds += budget_ms / 1000.0;
    m->degraded_instance_steps += degraded;
}

void cd_metrics_step(cd_server *server, const cd_conn *conn, uint64_t started_ns, uint32_t instances)
{
    cd_metrics *m = &server->metrics;
    const double seconds = (double)(uv_hrtime() - started_ns) / 1e9;
    m->steps++;
    m->instance_steps += instances;
    m->step_seconds += seconds;
    unsigned b = 0;
    while (b < CD_STEP_BUCKET_COUNT && seconds > step_bounds[b])
        b++;
    m->step_buckets[b]++;
    const uint64_t now = uv_now(server->loop);
    count_rate(m, now);

    const uint32_t threshold = server->opts.slow_step_ms;
    if (threshold == 0 || seconds * 1000.0 <= (double)threshold)
        return;
    m->slow_steps++;
    if (m->slow_logged_at != 0 && now - m->slow_logged_at < CD_WARN_INTERVAL_MS) {
        m->slow_unlogged++;
        return;
    }
    cd_log *log = &server->log;
    if (!cd_log_begin(log, CD_LOG_WARN, "slow_step"))
        return;
    cd_log_fixed(log, "duration_ms", seconds * 1000.0, 1);
    cd_log_uint(log, "threshold_ms", threshold);
    cd_log_uint(log, "instances", instances);
    cd_log_str(log, "peer", conn != NULL ? conn->stats.peer : "-");
    cd_log_uint(log, "suppressed", m->slow_unlogged);
    cd_log_end(log);
    m->slow_logged_at = now;
    m->slow_unlogged = 0;
}

/* ---- instances by state ------------------------------------------------ */

typedef struct instance_states {
    uint32_t awake, sleeping, disabled, unstable;
} instance_states;

static instance_states count_states(const cd_server *server)
{
    instance_states s = {0, 0, 0, 0};
    const uint32_t n = cd_world_count(server->world);
    cd_id *ids = malloc((n ? n : 1) * sizeof *ids);
    if (ids == NULL)
        return s;
    const uint32_t listed = cd_world_list(server->world, ids, n);
    for (uint32_t i = 0; i < listed; i++) {
        if (cd_server_is_busy(server, ids[i])) {
            s.awake++; /* a worker owns it until its batch is back */
            continue;
        }
        cd_instance_info info;
        cd_instance_get_info(cd_world_get(server->world, ids[i]), &info);
        if (info.unstable)
            s.unstable++;
        else if (!info.enabled)
            s.disabled++;
        else if (info.sleeping)
            s.sleeping++;
        else
            s.awake++;
    }
    free(ids);
    return s;
}

/* ---- stats ------------------------------------------------------------- */

cd_dispatch_result cd_cmd_stats(cd_conn *conn, const cd_request *req)
{
    cd_server *server = conn->server;
    const cd_metrics *m = &server->metrics;
    cJSON *reply = cd_reply_ok(req->id);
    cJSON_AddStringToObject(reply, "version", CD_VERSION_STRING);
    cJSON_AddStringToObject(reply, "simd", cd_metrics_simd_path());
    cJSON_AddNumberToObject(reply, "workers", server->opts.workers);
    cJSON_AddNumberToObject(reply, "uptimeSeconds", round(seconds_since(m->started_ns) * 1e3) / 1e3);

    cJSON *conns = cJSON_AddObjectToObject(reply, "connections");
    cJSON_AddNumberToObject(conns, "current", server->conn_count);
    cJSON_AddNumberToObject(conns, "total", (double)m->connections_total);
    cJSON_AddNumberToObject(conns, "refused", (double)m->connections_refused);
    cJSON_AddNumberToObject(conns, "limit", server->opts.max_connections);

    const instance_states s = count_states(server);
    cJSON *inst = cJSON_AddObjectToObject(reply, "instances");
    cJSON_AddNumberToObject(inst, "awake", s.awake);
    cJSON_AddNumberToObject(inst, "sleeping", s.sleeping);
    cJSON_AddNumberToObject(inst, "disabled", s.disabled);
    cJSON_AddNumberToObject(inst, "unstable", s.unstable);
    cJSON_AddNumberToObject(inst, "limit", server->opts.max_instances);

    cJSON *particles = cJSON_AddObjectToObject(reply, "particles");
    cJSON_AddNumberToObject(particles, "current", (double)cd_world_total_particles(server->world));
    cJSON_AddNumberToObject(particles, "limit", server->opts.max_total_particles);

    cJSON *steps = cJSON_AddObjectToObject(reply, "steps");
    cJSON_AddNumberToObject(steps, "total", (double)m->steps);
    cJSON_AddNumberToObject(steps, "instanceSteps", (double)m->instance_steps);
    cJSON_AddNumberToObject(steps, "slow", (double)m->slow_steps);
    cJSON *budget = cJSON_AddObjectToObject(steps, "budget");
    cJSON_AddNumberToObject(budget, "steps", (double)m->budget_steps);
    cJSON_AddNumberToObject(budget, "overruns", (double)m->budget_overruns);
    cJSON_AddNumberToObject(budget, "degradedInstances", (double)m->degraded_instance_steps);
    /* To the nanosecond: the float budgets' last bits are noise. */
    cJSON_AddNumberToObject(budget, "budgetSeconds", round(m->budget_seconds * 1e9) / 1e9);
    cJSON_AddNumberToObject(budget, "costPs", server->budget_rate.ps);
    cJSON_AddBoolToObject(budget, "measured", server->budget_rate.fixed_ps == 0);
    cJSON_AddNumberToObject(steps, "perSecond", round(step_rate(server) * 100.0) / 100.0);
    cJSON *dur = cJSON_AddObjectToObject(steps, "durationSeconds");
    cJSON_AddNumberToObject(dur, "count", (double)m->steps);
    cJSON_AddNumberToObject(dur, "sum", m->step_seconds);
    cJSON *bounds = cJSON_AddArrayToObject(dur, "bounds");
    cJSON *counts = cJSON_AddArrayToObject(dur, "counts");
    for (unsigned b = 0; b <= CD_STEP_BUCKET_COUNT; b++) {
        if (b < CD_STEP_BUCKET_COUNT)
            cJSON_AddItemToArray(bounds, cJSON_CreateNumber(step_bounds[b]));
        cJSON_AddItemToArray(counts, cJSON_CreateNumber((double)m->step_buckets[b]));
    }

    cJSON *sent = cJSON_AddObjectToObject(reply, "sent");
    cJSON_AddNumberToObject(sent, "replyBytes", (double)m->sent_bytes[CD_WRITE_REPLY]);
    cJSON_AddNumberToObject(sent, "eventBytes", (double)m->sent_bytes[CD_WRITE_EVENT]);
    cJSON_AddNumberToObject(sent, "frameBytes", (double)m->sent_bytes[CD_WRITE_FRAME]);
    cJSON_AddNumberToObject(sent, "frames", (double)m->frames_sent);
    cJSON_AddNumberToObject(sent, "framesSkipped", (double)m->frames_skipped);
    cJSON *shm = cJSON_AddObjectToObject(reply, "shm");
    cJSON_AddNumberToObject(shm, "sizeBytes", (double)server->shm.size);
    cJSON_AddNumberToObject(shm, "frames", (double)server->shm.frames);
    cJSON_AddNumberToObject(shm, "bytes", (double)server->shm.bytes);

    cJSON *requests = cJSON_AddObjectToObject(reply, "requests");
    for (unsigned c = 0; c < CD_CMD_COUNT; c++)
        cJSON_AddNumberToObject(requests, cd_command_name((cd_command)c), (double)m->requests[c]);
    cJSON *errors = cJSON_AddObjectToObject(reply, "errors");
    for (unsigned e = 1; e < CD_STATUS_COUNT; e++)
        cJSON_AddNumberToObject(errors, cd_status_name((cd_status)e), (double)m->errors[e]);
    cd_conn_send_reply(conn, reply);
    return CD_DISPATCH_DONE;
}

/* ---- Prometheus text ----------------------------------------------------- */

typedef struct cd_text {
    char *data;
    size_t len, cap;
    bool failed;
} cd_text;

static void text_printf(cd_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_printf(cd_text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n;
        char *grown = realloc(t->data, cap);
        if (grown == NULL) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
}

/* "# HELP" and "# TYPE" of one metric family. */
static void family(cd_text *t, const char *name, const char *type, const char *help)
{
    text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(cd_text *t, const char *name, const char *type, const char *help, double value)
{
    family(t, name, type, help);
    text_printf(t, "%s %.17g\n", name, value);
}

char *cd_metrics_prometheus(cd_server *server, size_t *len)
{
    const cd_metrics *m = &server->metrics;
    cd_text t = {.data = malloc(8192), .cap = 8192};
    if (t.data == NULL)
        return NULL;
    family(&t, "clothd_info", "gauge", "The server's version and the distance solve's SIMD path.");
    text_printf(&t, "clothd_info{version=\"%s\",simd=\"%s\"} 1\n", CD_VERSION_STRING,
                cd_metrics_simd_path());
    sample(&t, "clothd_start_time_seconds", "gauge", "Start time since the Unix epoch in seconds.",
           m->started_unix);
    sample(&t, "clothd_workers", "gauge", "Worker threads stepping instances.", server->opts.workers);

    const instance_states s = count_states(server);
    family(&t, "clothd_instances", "gauge", "Live instances by state (one being stepped is awake).");
    text_printf(&t, "clothd_instances{state=\"awake\"} %u\n", s.awake);
    text_printf(&t, "clothd_instances{state=\"sleeping\"} %u\n", s.sleeping);
    text_printf(&t, "clothd_instances{state=\"disabled\"} %u\n", s.disabled);
    text_printf(&t, "clothd_instances{state=\"unstable\"} %u\n", s.unstable);
    sample(&t, "clothd_instances_limit", "gauge", "Live instances at most (--max-instances).",
           server->opts.max_instances);
    sample(&t, "clothd_particles", "gauge", "Particles of all live instances.",
           (double)cd_world_total_particles(server->world));
    sample(&t, "clothd_particles_limit", "gauge",
           "Particles of all live instances at most (--max-total-particles).",
           server->opts.max_total_particles);

    sample(&t, "clothd_steps_total", "counter", "Step requests that stepped at least one instance.",
           (double)m->steps);
    sample(&t, "clothd_instance_steps_total", "counter", "Instances stepped, summed over the steps.",
           (double)m->instance_steps);
    sample(&t, "clothd_slow_steps_total", "counter", "Steps slower than --slow-step-ms.",
           (double)m->slow_steps);
    sample(&t, "clothd_budget_steps_total", "counter", "Steps with a time budget (budgetMs).",
           (double)m->budget_steps);
    sample(&t, "clothd_budget_overruns_total", "counter",
           "Steps with a time budget that took longer than it.", (double)m->budget_overruns);
    sample(&t, "clothd_budget_seconds_total", "counter",
           "The time budgets of the steps with one, summed, in seconds.", m->budget_seconds);
    sample(&t, "clothd_degraded_instance_steps_total", "counter",
           "Instances a step's budget stepped below their own level of detail.",
           (double)m->degraded_instance_steps);
    sample(&t, "clothd_budget_cost_picoseconds", "gauge",
           "The step budget's rate: a batch's wall time per cost unit the next plan predicts at.",
           server->budget_rate.ps);
    family(&t, "clothd_step_duration_seconds", "histogram",
           "Time from a step request's start to its reply, in seconds.");
    uint64_t cumulative = 0;
    for (unsigned b = 0; b < CD_STEP_BUCKET_COUNT; b++) {
        cumulative += m->step_buckets[b];
        text_printf(&t, "clothd_step_duration_seconds_bucket{le=\"%g\"} %llu\n", step_bounds[b],
                    (unsigned long long)cumulative);
    }
    text_printf(&t, "clothd_step_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                (unsigned long long)m->steps);
    text_printf(&t, "clothd_step_duration_seconds_sum %.9g\n", m->step_seconds);
    text_printf(&t, "clothd_step_duration_seconds_count %llu\n", (unsigned long long)m->steps);

    family(&t, "clothd_sent_bytes_total", "counter", "Bytes written to clients, by kind.");
    for (unsigned k = 0; k < CD_WRITE_KINDS; k++)
        text_printf(&t, "clothd_sent_bytes_total{kind=\"%s\"} %llu\n", write_kind_names[k],
                    (unsigned long long)m->sent_bytes[k]);
    sample(&t, "clothd_frames_sent_total", "counter", "Frames written to subscribers.",
           (double)m->frames_sent);
    sample(&t, "clothd_frames_skipped_total", "counter",
           "Frames a slow subscriber skipped (replaced by a newer one before being sent).",
           (double)m->frames_skipped);
    sample(&t, "clothd_shm_size_bytes", "gauge",
           "The shared-memory frame ring's data bytes (0 until a subscriber asks for it).",
           (double)server->shm.size);
    sample(&t, "clothd_shm_frames_total", "counter", "Frames written into the shared-memory ring.",
           (double)server->shm.frames);
    sample(&t, "clothd_shm_bytes_total", "counter", "Bytes written into the shared-memory ring.",
           (double)server->shm.bytes);

    sample(&t, "clothd_connections", "gauge", "Client connections open now.", server->conn_count);
    sample(&t, "clothd_connections_limit", "gauge", "Client connections at most (--max-connections).",
           server->opts.max_connections);
    sample(&t, "clothd_connections_total", "counter", "Client connections accepted.",
           (double)m->connections_total);
    sample(&t, "clothd_connections_refused_total", "counter",
           "Connections refused over --max-connections.", (double)m->connections_refused);
    family(&t, "clothd_requests_total", "counter", "Request lines naming a known command, by command.");
    for (unsigned c = 0; c < CD_CMD_COUNT; c++)
        text_printf(&t, "clothd_requests_total{command=\"%s\"} %llu\n", cd_command_name((cd_command)c),
                    (unsigned long long)m->requests[c]);
    family(&t, "clothd_errors_total", "counter", "Error replies, by code.");
    for (unsigned e = 1; e < CD_STATUS_COUNT; e++)
        text_printf(&t, "clothd_errors_total{code=\"%s\"} %llu\n", cd_status_name((cd_status)e),
                    (unsigned long long)m->errors[e]);
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    *len = t.len;
    return t.data;
}
