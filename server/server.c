/* The server: loop, listening socket, signals, wake-ups from the worker
 * pool, and an orderly shutdown (pool joined first, so that no worker can
 * touch the async handle after it is closed; then every handle closed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void on_connection(uv_stream_t *listener, int status)
{
    cd_server *server = listener->data;
    if (status < 0 || server->shutting_down)
        return;
    cd_conn_accept(server, listener);
}

/* Runs on a worker thread: uv_async_send is the one thread-safe libuv call;
 * sends coalesce, and the callback drains the whole queue. Only the job that
 * completes its batch wakes the loop (stepper.c). */
static void notify_loop(void *arg)
{
    cd_server *server = arg;
    if (cd_stepper_job_done_wakes())
        uv_async_send(&server->wake);
}

static void on_wake(uv_async_t *handle)
{
    cd_stepper_drain(handle->data);
}

static void close_handle(uv_handle_t *handle, void *arg)
{
    (void)arg;
    if (uv_is_closing(handle))
        return;
    const cd_server *server = arg;
    if ((handle->type == UV_TCP || handle->type == UV_NAMED_PIPE) && handle->data != NULL &&
        handle != (const uv_handle_t *)&server->listener &&
        handle != (const uv_handle_t *)&server->unix_listener) {
        cd_conn_close(handle->data);
        return;
    }
    uv_close(handle, NULL);
}

static void on_signal(uv_signal_t *handle, int signum)
{
    cd_server *server = handle->data;
    if (server->shutting_down)
        return;
    server->shutting_down = true;
    cd_metrics_stopping(server, signum);
    cd_health_close(server);
    /* Join the workers before closing the handle they wake us with. */
    cd_pool_destroy(server->pool);
    server->pool = NULL;
    /* No step runs now: the journal and the last autosave see whole steps. */
    cd_recording_shutdown(server);
    cd_snapshots_stop(server);
    cd_unix_remove(server);
    cd_shm_close(server);
    uv_walk(server->loop, close_handle, server);
}

/* `instance` may be any id a client sent: its slot is checked against the
 * table's size before it is read (a slot beyond it is never busy). */
bool cd_server_is_busy(const cd_server *server, cd_id instance)
{
    uint32_t slot = cd_id_index(instance);
    return slot <= server->opts.max_instances && server->busy[slot] != 0;
}

void cd_server_set_busy(cd_server *server, cd_id instance, bool busy)
{
    uint8_t *slot = &server->busy[cd_id_index(instance)];
    if (busy && !*slot)
        server->busy_count++;
    else if (!busy && *slot)
        server->busy_count--;
    *slot = busy;
}

void cd_server_resume_deferred(cd_server *server)
{
    cd_snapshots_steps_idle(server); /* an autosave that waited for the steps */
    /* A resumed request may start a step or close its connection; walk with
     * the next pointer saved (closing only unlinks in the close callback).
     * First, a connection whose own step (or save) is back runs the lines
     * it sent after it, up to its next `step`: a client's "enable true,
     * step, enable false" runs whole, before another client's step that
     * was parked on those instances (a viewer's single step of paused
     * instances: without it the other step ran in between, on instances
     * just enabled). Its next step is parked with the others' requests,
     * which run before it, so a client stepping back to back starves
     * nobody. */
    for (cd_conn *conn = server->conns, *next; conn != NULL; conn = next) {
        next = conn->next;
        if (conn->resume && !conn->has_deferred) {
            conn->resume = false;
            conn->until_step = true;
            cd_conn_process(conn);
            conn->until_step = false;
        }
    }
    for (cd_conn *conn = server->conns, *next; conn != NULL; conn = next) {
        next = conn->next;
        if (conn->has_deferred)
            cd_conn_process(conn);
    }
    for (cd_conn *conn = server->conns, *next; conn != NULL; conn = next) {
        next = conn->next;
        if (conn->resume) {
            conn->resume = false;
            cd_conn_process(conn);
        }
    }
}

static int listen_on(cd_server *server, const cd_server_options *opts)
{
    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(opts->bind, opts->port, (struct sockaddr_in *)&addr);
    if (rc != 0)
        rc = uv_ip6_addr(opts->bind, opts->port, (struct sockaddr_in6 *)&addr);
    if (rc != 0) {
        fprintf(stderr, "clothd: --bind %s: not an IP address\n", opts->bind);
        return rc;
    }
    uv_tcp_init(server->loop, &server->listener);
    server->listener.data = server;
    rc = uv_tcp_bind(&server->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server->listener, 128, on_connection);
    if (rc != 0) {
        fprintf(stderr, "clothd: cannot listen on %s:%d: %s\n", opts->bind, opts->port,
                uv_strerror(rc));
        return rc;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server->listener, (struct sockaddr *)&bound, &len);
    char host[64] = "?";
    int port = 0;
    if (bound.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&bound, host, sizeof host);
        port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&bound, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    printf("clothd %s listening on %s:%d (%u workers)\n", CD_VERSION_STRING, host, port,
           opts->workers);
    if (opts->unix_path[0] != '\0') /* listening already: cd_listen_unix */
        printf("clothd listening on unix:%s\n", opts->unix_path);
    cd_health_announce(server, stdout);
    fflush(stdout);
    cd_metrics_started(server, host, port);
    return 0;
}

int cd_server_run(const cd_server_options *opts)
{
    cd_server server;
    memset(&server, 0, sizeof server);
    server.opts = *opts;
    cd_log_init(&server.log, (cd_log_level)opts->log_level, (cd_log_format)opts->log_format, stderr);
    server.limits = cd_default_limits();
    server.limits.max_particles = opts->max_particles;
    server.limits.max_step_work = opts->max_step_work;

    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return 1;
    server.loop = &loop;
    cd_world_def wdef = {.max_instances = opts->max_instances,
                         .max_particles = opts->max_particles,
                         .max_total_particles = opts->max_total_particles,
                         .max_step_work = opts->max_step_work};
    server.world = cd_world_create(&wdef);
    server.busy = calloc(opts->max_instances + 1u, 1);
    cd_budget_rate_init(&server.budget_rate, opts->step_cost_ps);
    const bool scenes = cd_scenes_init(&server);
    uv_async_init(&loop, &server.wake, on_wake);
    server.wake.data = &server;
    uv_timer_init(&loop, &server.line_timer);
    server.line_timer.data = &server;
    uv_timer_init(&loop, &server.pause_timer);
    server.pause_timer.data = &server;
    uv_check_init(&loop, &server.flush_check); /* started while frames are gathered (conn.c) */
    server.flush_check.data = &server;
    uv_idle_init(&loop, &server.flush_idle);
    server.flush_idle.data = &server;
    /* Jobs in flight: one step per instance, and the other workers' helper
     * jobs for each large one (stepper.c). */
    uint64_t large = opts->max_total_particles / CD_TEAM_MIN_PARTICLES;
    large = large < opts->max_instances ? large : opts->max_instances;
    uint64_t capacity = opts->max_instances + large * (opts->workers - 1u);
    capacity = capacity < (1u << 24) ? capacity : (1u << 24);
    server.pool = cd_pool_create(opts->workers, (uint32_t)capacity, notify_loop, &server);
    int exit_code = 1;
    if (server.world == NULL || server.busy == NULL || server.pool == NULL || !scenes) {
        fprintf(stderr, "clothd: out of memory or threads at start-up\n");
        goto shutdown;
    }
    if (!cd_auth_configure(&server, stderr)) {
        exit_code = 2;
        goto shutdown;
    }
    if (opts->autosave > 0 && opts->data_dir[0] == '\0') {
        fprintf(stderr, "clothd: --autosave needs --data-dir\n");
        exit_code = 2;
        goto shutdown;
    }
    cd_snapshots_start(&server); /* the newest snapshot, before any client */
    cd_shm_sweep(); /* rings a crashed clothd left */
    /* Signals are watched before the banner is printed: whoever starts
     * clothd may stop it the moment it says it listens. */
    uv_signal_init(&loop, &server.sigint);
    uv_signal_init(&loop, &server.sigterm);
    server.sigint.data = server.sigterm.data = &server;
    uv_signal_start(&server.sigint, on_signal, SIGINT);
    uv_signal_start(&server.sigterm, on_signal, SIGTERM);
    /* A client vanishing mid-write must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    if (!cd_health_start(&server) || cd_listen_unix(&server, on_connection) != 0 ||
        listen_on(&server, opts) != 0)
        goto shutdown;

    uv_run(&loop, UV_RUN_DEFAULT);
    exit_code = 0;

shutdown:
    if (!server.shutting_down) {
        server.shutting_down = true;
        cd_health_close(&server);
        cd_pool_destroy(server.pool);
        server.pool = NULL;
        cd_unix_remove(&server);
        cd_shm_close(&server);
        uv_walk(&loop, close_handle, &server);
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* let the close callbacks run */
    cd_stepper_drain(&server);     /* frees batches still held */
    uv_loop_close(&loop);
    cd_world_destroy(server.world);
    cd_scenes_free(&server);
    free(server.busy);
    return exit_code;
}
