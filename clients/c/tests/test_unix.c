/* libclothd over a Unix-domain socket (clothd_options.unix_path, `clothd
 * --unix PATH`): the shared server listens on one beside TCP. Over it a
 * client creates, steps and gets; a subscription's binary frames (large
 * ones, over many reads) land in a frame target bitwise equal to get; what
 * goes wrong names "unix:PATH" (nothing listening there, a socket file
 * nobody accepts on, a missing feature), a path too long for sun_path is
 * CLOTHD_E_USAGE naming unix_path; a shard set mixes a "unix:PATH"
 * endpoint with a "host:port" one; a reconnecting client finds a restarted
 * server at the same path. */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static clothd_client *connect_unix(const char *path, clothd_error *err)
{
    clothd_options o = clothd_options_default();
    o.unix_path = path;
    o.port = 1; /* not used: unix_path wins */
    clothd_client *c = NULL;
    if (clothd_connect(&o, &c, err) != CLOTHD_OK)
        return NULL;
    return c;
}

static clothd_instance cloth(clothd_client *c, int w, int h, clothd_error *err)
{
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(w);
    o.height = clothd_i(h);
    o.spacing = clothd_f(0.02f);
    o.ephemeral = true;
    clothd_created made = {{0}, 0, 0};
    clothd_create_cloth(c, &o, &made, err);
    return made.instance;
}

/* A fresh folder for a path nothing listens on; removed by the caller. */
static bool nowhere(char *dir, size_t dcap, char *path, size_t pcap)
{
    snprintf(dir, dcap, "/tmp/clothd-c-none-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return false;
    snprintf(path, pcap, "%s/clothd.sock", dir);
    return true;
}

static void a_client_should_create_step_and_get_over_the_socket(void)
{
    clothd_error err;
    clothd_client *c = connect_unix(ct_main_server.unix_path, &err);
    REQUIRE(c != NULL, "%s: %s", clothd_code_name(err.code), err.message);
    CHECK(clothd_server(c).hello == CLOTHD_HELLO_ANSWERED, "hello went through the socket");
    clothd_instance id = cloth(c, 4, 4, &err);
    REQUIRE(id.id != 0, "%s", err.message);
    clothd_instance_state before = {0}, after = {0};
    REQUIRE_OK(clothd_get(c, id, NULL, &before, &err), err);
    clothd_step_options so = {0};
    so.instance = id;
    for (int i = 0; i < 5; i++)
        REQUIRE_OK(clothd_step(c, &so, NULL, &err), err);
    REQUIRE_OK(clothd_get(c, id, NULL, &after, &err), err);
    CHECK(after.frame == 5 && after.particle_count == 16, "frame %llu, %zu particles",
          (unsigned long long)after.frame, after.particle_count);
    for (size_t i = 0; i < after.particle_count && i < before.particle_count; i++) /* 0.5 g t^2 = 0.034 m */
        CHECK(after.positions[3 * i + 1] < before.positions[3 * i + 1] - 0.02f, "particle %zu falls", i);
    clothd_instance_state_free(&before);
    clothd_instance_state_free(&after);
    clothd_close(c);
}

static void a_subscription_should_bring_frames_over_the_socket(void)
{
    enum { W = 64, H = 64, N = W * H }; /* 49,192-byte frames: many reads each */
    clothd_error err;
    clothd_client *c = connect_unix(ct_main_server.unix_path, &err);
    REQUIRE(c != NULL, "%s", err.message);
    clothd_instance id = cloth(c, W, H, &err);
    REQUIRE(id.id != 0, "%s", err.message);
    float *positions = calloc(3 * N, sizeof *positions);
    REQUIRE(positions != NULL);
    clothd_frame_target target = {0};
    target.positions = positions;
    target.capacity = N;
    REQUIRE_OK(clothd_set_frame_target(c, id, &target, &err), err);
    clothd_subscribe_options sub = {0};
    sub.instance = id;
    REQUIRE_OK(clothd_subscribe(c, &sub, NULL, &err), err);
    clothd_step_options so = {0};
    so.instance = id;
    REQUIRE_OK(clothd_step(c, &so, NULL, &err), err);
    int64_t until = ct_now_ms() + 5000;
    while (target.frame < 1 && ct_now_ms() < until)
        clothd_poll(c, 20, NULL, NULL);
    CHECK(target.frame == 1 && target.count == N && !target.quantized, "frame %llu, %u particles",
          (unsigned long long)target.frame, target.count);
    clothd_instance_state state = {0};
    REQUIRE_OK(clothd_get(c, id, NULL, &state, &err), err);
    CHECK(state.frame == 1 && state.particle_count == N &&
              memcmp(state.positions, positions, sizeof(float) * 3 * N) == 0,
          "the frame's positions bitwise equal to get's");
    clothd_instance_state_free(&state);
    clothd_close(c);
    free(positions);
}

static void nothing_listening_should_name_the_socket_path(void)
{
    char dir[64], path[96];
    REQUIRE(nowhere(dir, sizeof dir, path, sizeof path));
    clothd_error err;
    clothd_client *c = connect_unix(path, &err);
    CHECK(c == NULL && err.code == CLOTHD_E_IO, "%s", clothd_code_name(err.code));
    char want[512];
    snprintf(want, sizeof want, "cannot connect to clothd at unix:%s: connect unix:%s: No such file or directory",
             path, path);
    CHECK(strcmp(err.message, want) == 0, "%s", err.message);
    /* A socket file nobody accepts on (a server that died without removing it). */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {0};
    un.sun_family = AF_UNIX;
    snprintf(un.sun_path, sizeof un.sun_path, "%s", path);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&un, sizeof un) == 0, "bind: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    c = connect_unix(path, &err);
    snprintf(want, sizeof want, "cannot connect to clothd at unix:%s: connect unix:%s: Connection refused", path,
             path);
    CHECK(c == NULL && err.code == CLOTHD_E_IO && strcmp(err.message, want) == 0, "%s", err.message);
    unlink(path);
    rmdir(dir);
}

static void a_path_too_long_for_a_socket_should_be_refused_by_name(void)
{
    char path[200];
    memset(path, 'x', sizeof path - 1);
    memcpy(path, "/tmp/", 5);
    path[sizeof(((struct sockaddr_un *)0)->sun_path)] = '\0'; /* one byte more than fits with its zero */
    clothd_error err;
    clothd_client *c = connect_unix(path, &err);
    char want[128];
    snprintf(want, sizeof want, "unix_path: the path is %zu bytes; a Unix socket path holds 1 to %zu: \"/tmp/xxx",
             strlen(path), strlen(path) - 1);
    CHECK(c == NULL && err.code == CLOTHD_E_USAGE && strncmp(err.message, want, strlen(want)) == 0, "%s: %s",
          clothd_code_name(err.code), err.message);
    c = connect_unix("", &err);
    CHECK(c == NULL && err.code == CLOTHD_E_USAGE && strncmp(err.message, "unix_path: ", 11) == 0, "%s",
          err.message);
    path[sizeof(((struct sockaddr_un *)0)->sun_path) - 1] = '\0'; /* the longest: fits, nothing there */
    c = connect_unix(path, &err);
    CHECK(c == NULL && err.code == CLOTHD_E_IO && strstr(err.message, "No such file or directory"), "%s",
          err.message);
}

static void a_missing_feature_should_name_the_socket(void)
{
    const char *const require[] = {"snapshots"}; /* no --data-dir: not listed */
    clothd_options o = clothd_options_default();
    o.unix_path = ct_main_server.unix_path;
    o.require = require;
    o.require_count = 1;
    clothd_client *c = NULL;
    clothd_error err;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_INCOMPATIBLE && c == NULL, "%s", clothd_code_name(err.code));
    char want[160];
    snprintf(want, sizeof want, "clothd at unix:%s lacks the feature \"snapshots\"", ct_main_server.unix_path);
    CHECK(strstr(err.message, want) != NULL, "%s", err.message);
}

/* The first scene "mixed-N" placed on endpoints[which]. */
static void scene_on(const char *const *endpoints, size_t which, char *name, size_t cap)
{
    for (int i = 0; i < 1000; i++) {
        snprintf(name, cap, "mixed-%d", i);
        if (clothd_place_scene(endpoints, 2, name) == which)
            return;
    }
}

static void a_unix_shard_should_serve_its_scenes_beside_a_tcp_one(void)
{
    ct_server other;
    REQUIRE(ct_server_start(&other, NULL, 0));
    char unix_ep[128], tcp_ep[32];
    snprintf(unix_ep, sizeof unix_ep, "unix:%s", ct_main_server.unix_path);
    snprintf(tcp_ep, sizeof tcp_ep, "127.0.0.1:%u", (unsigned)other.port);
    const char *const list[] = {tcp_ep, unix_ep};
    const uint16_t tcp_ports[] = {other.port, ct_main_server.port}; /* each server's TCP side */
    clothd_shards *s = NULL;
    clothd_error err;
    if (clothd_shards_new(list, 2, NULL, &s, &err) != CLOTHD_OK) {
        ct_fail(__FILE__, __LINE__, "clothd_shards_new", "%s", err.message);
        ct_server_kill(&other);
        return;
    }
    for (size_t i = 0; i < 2; i++) {
        char name[32];
        scene_on(list, i, name, sizeof name);
        clothd_client *c = NULL;
        CHECK(clothd_shards_scene(s, name, &c, &err) == CLOTHD_OK, "%s: %s", list[i], err.message);
        if (c == NULL)
            continue;
        clothd_instance id = cloth(c, 4, 4, &err);
        clothd_step_options so = {0};
        clothd_step_result stepped = {0};
        CHECK(id.id != 0 && clothd_step(c, &so, &stepped, &err) == CLOTHD_OK, "%s", err.message);
        clothd_instance_state state = {0};
        CHECK(clothd_get(c, id, NULL, &state, &err) == CLOTHD_OK && state.frame == 1, "%s: frame %llu",
              err.message, (unsigned long long)state.frame);
        clothd_instance_state_free(&state);
        /* The scene is on that server: its TCP side lists the instance. */
        clothd_client *direct = ct_connect(tcp_ports[i], NULL);
        if (direct != NULL) {
            clothd_status st = {0};
            CHECK(clothd_get_status_scene(direct, name, &st, &err) == CLOTHD_OK && st.instance_count == 1 &&
                      st.instances[0].instance.id == id.id,
                  "%s on %s: %zu instances", name, list[i], st.instance_count);
            clothd_status_free(&st);
            clothd_close(direct);
        }
    }
    CHECK(clothd_shards_client_at(s, 0) != NULL && clothd_shards_client_at(s, 1) != NULL, "both connected");
    clothd_shards_free(s);
    CHECK(ct_server_stop(&other) == 0);

    /* A unix endpoint where nothing listens: named in the error. */
    char dir[64], path[96], gone[112];
    REQUIRE(nowhere(dir, sizeof dir, path, sizeof path));
    snprintf(gone, sizeof gone, "unix:%s", path);
    const char *const lost[] = {gone};
    REQUIRE_OK(clothd_shards_new(lost, 1, NULL, &s, &err), err);
    clothd_client *c = NULL;
    CHECK(clothd_shards_scene(s, "npc-capes", &c, &err) == CLOTHD_E_IO && c == NULL);
    char want[512];
    snprintf(want, sizeof want, "endpoint %s (scene npc-capes): cannot connect to clothd at %s: ", gone, gone);
    CHECK(strncmp(err.message, want, strlen(want)) == 0, "%s", err.message);
    clothd_shards_free(s);
    rmdir(dir);
}

static void a_reconnecting_client_should_come_back_on_the_same_socket(void)
{
    char dir[64], path[96];
    REQUIRE(nowhere(dir, sizeof dir, path, sizeof path));
    ct_server s;
    if (!ct_server_start_unix_at(&s, path, NULL)) {
        ct_fail(__FILE__, __LINE__, "start", "clothd --unix %s", path);
        rmdir(dir);
        return;
    }
    clothd_options o = clothd_options_default();
    o.unix_path = path;
    o.reconnect = true;
    o.reconnect_timeout_ms = 10000;
    clothd_client *c = NULL;
    clothd_error err;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_OK, "%s", err.message);
    clothd_instance id = c ? cloth(c, 3, 3, &err) : (clothd_instance){0};
    CHECK(id.id != 0, "%s", err.message);
    CHECK(ct_server_stop(&s) == 0);
    CHECK(access(path, F_OK) != 0, "clothd removes its socket file when it stops");
    CHECK(ct_server_start_unix_at(&s, path, NULL), "restart at %s", path);
    /* The request that meets the drop fails (reconnecting); the next one
     * waits for the new connection, to the new server (no instance). */
    clothd_status st = {0};
    clothd_code rc = c ? clothd_get_status(c, &st, &err) : CLOTHD_E_USAGE;
    if (rc != CLOTHD_OK) {
        CHECK(rc == CLOTHD_E_CLOSED && err.reconnecting, "%s: %s", clothd_code_name(rc), err.message);
        rc = clothd_get_status(c, &st, &err);
    }
    CHECK(rc == CLOTHD_OK && st.instance_count == 0, "%s: %zu instances", err.message, st.instance_count);
    CHECK(c != NULL && clothd_get_client_stats(c).reconnects == 1 && clothd_link_state(c) == CLOTHD_LINK_CONNECTED);
    clothd_status_free(&st);
    clothd_close(c);
    CHECK(ct_server_stop(&s) == 0);
    rmdir(dir);
}

static void unix_endpoints_should_be_read_apart_from_host_port(void)
{
    clothd_shards *s = NULL;
    clothd_error err;
    const char *const ok[] = {"unix:/run/clothd.sock", "unix:7878", "unix:./7878"};
    REQUIRE_OK(clothd_shards_new(ok, 3, NULL, &s, &err), err);
    CHECK(clothd_shards_count(s) == 3);
    clothd_shards_free(s);
    const char *const empty[] = {"unix:"};
    CHECK(clothd_shards_new(empty, 1, NULL, &s, &err) == CLOTHD_E_USAGE && s == NULL);
    CHECK(strstr(err.message, "or \"unix:PATH\"") != NULL, "%s", err.message);
    const char *const twice[] = {"unix:/a.sock", "unix:/a.sock"};
    CHECK(clothd_shards_new(twice, 2, NULL, &s, &err) == CLOTHD_E_USAGE && s == NULL);
}

const ct_test ct_unix_tests[] = {
    {"unix: a client should create, step and get over the socket", a_client_should_create_step_and_get_over_the_socket, 0},
    {"unix: a subscription should bring frames over the socket", a_subscription_should_bring_frames_over_the_socket, 0},
    {"unix: nothing listening should name the socket path", nothing_listening_should_name_the_socket_path, 0},
    {"unix: a path too long for a socket should be refused by name", a_path_too_long_for_a_socket_should_be_refused_by_name, 0},
    {"unix: a missing feature should name the socket", a_missing_feature_should_name_the_socket, 0},
    {"unix: a unix shard should serve its scenes beside a tcp one", a_unix_shard_should_serve_its_scenes_beside_a_tcp_one, 0},
    {"unix: a reconnecting client should come back on the same socket", a_reconnecting_client_should_come_back_on_the_same_socket, 30},
    {"unix: endpoints should be read apart from host:port", unix_endpoints_should_be_read_apart_from_host_port, 0},
    {NULL, NULL, 0},
};
