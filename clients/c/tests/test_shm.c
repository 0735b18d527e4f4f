/* Shared-memory frames (clothd_subscribe_options.shm; PROTOCOL.md
 * "Shared-memory frames") against the real server: over TCP loopback and
 * over the Unix socket an shm subscriber's frames are field for field and
 * byte for byte what a plain subscriber of the same instances receives
 * (plain, and quantized with velocities and normals), through 56-byte
 * references (its bytes in are a fraction of the plain one's) and a ring
 * mapped read-only once and unmapped at close (/proc/self/maps says so);
 * a reader that stalls while 12 steps of a 100 x 100 cloth go through a
 * 1 MiB ring gets the newest 8 frames whole and counts the 5 overwritten
 * ones as missed; a frame over a quarter of the ring comes as an ordinary
 * frame; a server with --shm-mb 0 lacks the feature (CLOTHD_E_INCOMPATIBLE,
 * unsent; without hello its own invalid_argument); a ring that cannot be
 * opened or is not a ring is an error naming the object, and the frames
 * it would hold count as missed; PROTOCOL.md's reference vector resolves
 * through a ring written by hand, is missed once the claim reaches past
 * it, and drops the connection when the ring holds another frame there; a
 * reconnect maps the ring again, once. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RECORDS 64

/* One frame as the callback saw it: the header fields and its payload. */
typedef struct record {
    uint32_t instance;
    uint64_t frame;
    double time;
    uint32_t count;
    uint16_t flags;
    bool quantized, has_velocities, has_normals;
    unsigned char *payload;
    size_t payload_size;
} record;

typedef struct tape {
    int n;
    record r[MAX_RECORDS];
} tape;

static void on_frame(void *user, const clothd_frame *f)
{
    tape *t = user;
    if (t->n == MAX_RECORDS)
        return;
    record *r = &t->r[t->n++];
    r->instance = f->instance.id;
    r->frame = f->frame;
    r->time = f->time;
    r->count = f->count;
    r->flags = f->flags;
    r->quantized = f->quantized;
    r->has_velocities = f->has_velocities;
    r->has_normals = f->has_normals;
    r->payload = malloc(f->payload_size ? f->payload_size : 1);
    r->payload_size = f->payload_size;
    if (r->payload != NULL)
        memcpy(r->payload, f->payload, f->payload_size);
}

static void tape_free(tape *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->r[i].payload);
    t->n = 0;
}

static const record *find(const tape *t, uint32_t instance, uint64_t frame)
{
    for (int i = 0; i < t->n; i++)
        if (t->r[i].instance == instance && t->r[i].frame == frame)
            return &t->r[i];
    return NULL;
}

static int count_of(const tape *t, uint32_t instance)
{
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += t->r[i].instance == instance;
    return n;
}

/* A client of the server at `port` (or its Unix socket `path`) whose frames land on `t`. */
static clothd_client *connect_tape(uint16_t port, const char *path, tape *t, bool no_hello)
{
    memset(t, 0, sizeof *t);
    clothd_options o = clothd_options_default();
    o.port = port;
    o.unix_path = path;
    o.on_frame = on_frame;
    o.user = t;
    o.no_hello = no_hello;
    return ct_connect_with(&o);
}

/* The mappings of server `pid`'s ring in this process, each read-only and
 * shared ("r--s") or counted in *other. */
static int ring_maps(pid_t pid, int *other)
{
    char want[64];
    snprintf(want, sizeof want, "/dev/shm/clothd-%ld-", (long)pid);
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0;
    *other = 0;
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (strstr(line, want) == NULL)
            continue;
        char perms[8] = "";
        if (sscanf(line, "%*s %7s", perms) == 1 && strcmp(perms, "r--s") == 0)
            n++;
        else
            (*other)++;
    }
    if (f != NULL)
        fclose(f);
    return n;
}

static clothd_instance cloth(clothd_client *c, int w, int h, float spacing)
{
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(w);
    o.height = clothd_i(h);
    o.spacing = clothd_f(spacing);
    o.ephemeral = true;
    o.material.sleep_threshold = clothd_f(0);
    clothd_created made = {{0}, 0, 0};
    clothd_error err;
    if (clothd_create_cloth(c, &o, &made, &err) != CLOTHD_OK)
        ct_fail(__FILE__, __LINE__, "create", "%s", err.message);
    return made.instance;
}

static clothd_code subscribe(clothd_client *c, clothd_instance inst, bool shm, bool quantize, uint32_t channels,
                             clothd_error *err)
{
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    if (quantize)
        so.quantize = clothd_b(true);
    so.channels = channels;
    if (shm)
        so.shm = clothd_b(true);
    return clothd_subscribe(c, &so, NULL, err);
}

static void step_each(clothd_client *c, const clothd_instance *ids, size_t n, int steps)
{
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instances = ids;
    so.instance_count = n;
    clothd_error err;
    for (int i = 0; i < steps; i++)
        if (clothd_step(c, &so, NULL, &err) != CLOTHD_OK)
            ct_fail(__FILE__, __LINE__, "step", "%s", err.message);
}

/* Frames 0..3 of two instances (one plain, one quantized with velocities
 * and normals) through a plain subscriber and an shm one. */
static void shm_frames_should_equal_plain_frames(const char *unix_path)
{
    enum { STEPS = 3, CHANNELS = CLOTHD_CHANNEL_VELOCITIES | CLOTHD_CHANNEL_NORMALS };
    const uint16_t port = unix_path ? 0 : ct_main_server.port;
    clothd_client *driver = ct_connect(0, NULL);
    tape plain, shm;
    clothd_client *p = connect_tape(port, unix_path, &plain, false);
    clothd_client *s = connect_tape(port, unix_path, &shm, false);
    REQUIRE(driver != NULL && p != NULL && s != NULL);
    clothd_instance ids[2] = {cloth(driver, 12, 9, 0.05f), cloth(driver, 7, 5, 0.1f)};
    clothd_error err;
    REQUIRE_OK(subscribe(p, ids[0], false, false, 0, &err), err);
    REQUIRE_OK(subscribe(p, ids[1], false, true, CHANNELS, &err), err);
    REQUIRE_OK(subscribe(s, ids[0], true, false, 0, &err), err);
    REQUIRE_OK(subscribe(s, ids[1], true, true, CHANNELS, &err), err);
    int other = 0;
    CHECK(ring_maps(ct_main_server.pid, &other) == 1 && other == 0,
          "the ring mapped once, read-only (%d other mappings)", other);
    step_each(driver, ids, 2, STEPS);
    POLL_UNTIL(p, plain.n == 2 * (STEPS + 1), 5000);
    POLL_UNTIL(s, shm.n == 2 * (STEPS + 1), 5000);
    CHECK(plain.n == 2 * (STEPS + 1) && shm.n == plain.n, "%d plain frames, %d through shm", plain.n, shm.n);
    for (int k = 0; k < 2; k++) {
        for (uint64_t frame = 0; frame <= STEPS; frame++) {
            const record *a = find(&plain, ids[k].id, frame), *b = find(&shm, ids[k].id, frame);
            if (a == NULL || b == NULL) {
                ct_fail(__FILE__, __LINE__, "find", "instance %u frame %llu: plain %p, shm %p",
                        (unsigned)ids[k].id, (unsigned long long)frame, (const void *)a, (const void *)b);
                continue;
            }
            CHECK(b->flags == (k == 0 ? 0 : 0x7) && b->flags == a->flags, "flags 0x%x (plain 0x%x), never bit 3",
                  b->flags, a->flags);
            CHECK(memcmp(&a->time, &b->time, sizeof a->time) == 0 && a->count == b->count &&
                      a->quantized == b->quantized && a->has_velocities == b->has_velocities &&
                      a->has_normals == b->has_normals,
                  "instance %u frame %llu: the same header", (unsigned)ids[k].id, (unsigned long long)frame);
            CHECK(a->payload_size == b->payload_size && a->payload_size > 0 &&
                      memcmp(a->payload, b->payload, a->payload_size) == 0,
                  "instance %u frame %llu: the same %zu payload bytes (shm %zu)", (unsigned)ids[k].id,
                  (unsigned long long)frame, a->payload_size, b->payload_size);
        }
    }
    clothd_client_stats ps = clothd_get_client_stats(p), ss = clothd_get_client_stats(s);
    CHECK(ss.frames == 2 * (STEPS + 1) && ss.frames_missed == 0, "%llu references, %llu missed",
          (unsigned long long)ss.frames, (unsigned long long)ss.frames_missed);
    /* 1,336- and 648-byte frames against 56-byte references */
    CHECK(ss.bytes_in * 3 < ps.bytes_in, "bytes in: shm %llu, plain %llu", (unsigned long long)ss.bytes_in,
          (unsigned long long)ps.bytes_in);
    clothd_close(s);
    CHECK(ring_maps(ct_main_server.pid, &other) == 0 && other == 0, "unmapped at close");
    clothd_close(p);
    clothd_close(driver);
    tape_free(&plain);
    tape_free(&shm);
}

static void shm_frames_over_tcp_should_equal_plain_frames(void)
{
    shm_frames_should_equal_plain_frames(NULL);
}

static void shm_frames_over_unix_should_equal_plain_frames(void)
{
    shm_frames_should_equal_plain_frames(ct_main_server.unix_path);
}

/* Waits until the server `c` talks to has answered `n` subscribe requests
 * (frames false) or written `n` frames to its subscribers (frames true). */
static bool server_counted(clothd_client *c, bool frames, uint64_t n)
{
    int64_t until = ct_now_ms() + 5000;
    while (ct_now_ms() < until) {
        clothd_server_stats st;
        clothd_error err;
        if (clothd_get_server_stats(c, &st, &err) != CLOTHD_OK)
            return false;
        if (frames && st.sent.frames >= n)
            return true;
        for (size_t i = 0; !frames && i < CLOTHD_STATS_MAX_COMMANDS; i++)
            if (strcmp(st.requests[i].name, "subscribe") == 0 && st.requests[i].count >= n)
                return true;
        ct_sleep_ms(10);
    }
    return false;
}

static void a_stalled_reader_should_get_the_newest_frames_and_count_the_rest_missed(void)
{
    enum { W = 100, H = 100, N = W * H, STEPS = 12 };
    const char *args[] = {"--shm-mb", "1", NULL};
    ct_server srv;
    REQUIRE(ct_server_start(&srv, args, 0));
    tape t;
    clothd_client *driver = ct_connect(srv.port, NULL);
    clothd_client *s = connect_tape(srv.port, NULL, &t, false);
    float *positions = calloc(3 * N, sizeof *positions);
    clothd_instance_state state = {0};
    clothd_error err;
    if (driver == NULL || s == NULL || positions == NULL) {
        ct_fail(__FILE__, __LINE__, "set-up", "clients");
        goto out;
    }
    clothd_instance id = cloth(driver, W, H, 0.01f);
    clothd_frame_target target = {0};
    target.positions = positions;
    target.capacity = N;
    CHECK(clothd_set_frame_target(s, id, &target, &err) == CLOTHD_OK);
    /* Sent, not read: the reply, frame 0's reference and the 12 after it
     * wait in the socket while the server writes 13 frames of 120,040
     * bytes through a ring that holds 8. */
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = id;
    so.shm = clothd_b(true);
    clothd_ticket ticket = 0;
    CHECK(clothd_send_subscribe(s, &so, &ticket, &err) == CLOTHD_OK, "%s", err.message);
    CHECK(server_counted(driver, false, 1), "the server took the subscription");
    step_each(driver, &id, 1, STEPS);
    CHECK(server_counted(driver, true, STEPS + 1), "13 references sent (the ring written first)");
    clothd_subscribed sub;
    CHECK(clothd_recv_subscribe(s, ticket, &sub, &err) == CLOTHD_OK, "%s", err.message);
    POLL_UNTIL(s, target.frame == STEPS, 5000);
    clothd_client_stats st = clothd_get_client_stats(s);
    CHECK(st.frames == STEPS + 1 && st.frames_missed == 5 && t.n == 8,
          "%llu references: %llu missed, %d delivered (want 13: 5, 8)", (unsigned long long)st.frames,
          (unsigned long long)st.frames_missed, t.n);
    for (int i = 0; i < t.n; i++)
        CHECK(t.r[i].frame == (uint64_t)(STEPS - 7 + i) && t.r[i].flags == 0 && t.r[i].count == N,
              "delivered %d: frame %llu (want %d), flags 0x%x", i, (unsigned long long)t.r[i].frame, STEPS - 7 + i,
              t.r[i].flags);
    CHECK(target.updates == 8 && target.frame == STEPS, "the target: %llu updates, frame %llu",
          (unsigned long long)target.updates, (unsigned long long)target.frame);
    clothd_server_stats ss;
    CHECK(clothd_get_server_stats(driver, &ss, &err) == CLOTHD_OK && ss.shm.size_bytes == 1u << 20 &&
              ss.shm.frames == STEPS + 1 && ss.shm.bytes == (STEPS + 1) * (40 + 12ull * N),
          "the server's ring: %llu bytes, %llu frames, %llu bytes written", (unsigned long long)ss.shm.size_bytes,
          (unsigned long long)ss.shm.frames, (unsigned long long)ss.shm.bytes);
    if (clothd_get(driver, id, NULL, &state, &err) == CLOTHD_OK)
        CHECK(state.frame == STEPS && state.particle_count == N &&
                  memcmp(state.positions, positions, sizeof(float) * 3 * N) == 0,
              "the newest frame bitwise what get says");
    else
        ct_fail(__FILE__, __LINE__, "get", "%s", err.message);
out:
    clothd_instance_state_free(&state);
    clothd_close(s);
    clothd_close(driver);
    free(positions);
    tape_free(&t);
    CHECK(ct_server_stop(&srv) == 0);
}

static void a_frame_over_a_quarter_of_the_ring_should_come_as_an_ordinary_frame(void)
{
    enum { W = 160, H = 160, N = W * H };
    const char *args[] = {"--shm-mb", "1", NULL};
    ct_server srv;
    REQUIRE(ct_server_start(&srv, args, 0));
    tape t;
    clothd_client *driver = ct_connect(srv.port, NULL);
    clothd_client *s = connect_tape(srv.port, NULL, &t, false);
    clothd_error err;
    if (driver != NULL && s != NULL) {
        clothd_instance id = cloth(driver, W, H, 0.01f);
        CHECK(subscribe(s, id, true, false, 0, &err) == CLOTHD_OK, "%s", err.message);
        POLL_UNTIL(s, t.n == 1, 5000);
        clothd_client_stats st = clothd_get_client_stats(s);
        CHECK(t.n == 1 && t.r[0].flags == 0 && t.r[0].count == N && t.r[0].payload_size == 12u * N,
              "one frame of %u particles", t.n ? t.r[0].count : 0);
        CHECK(st.bytes_in > 40 + 12u * N && st.frames_missed == 0,
              "307,240 bytes > 1 MiB / 4: through the socket (%llu bytes in)", (unsigned long long)st.bytes_in);
    } else {
        ct_fail(__FILE__, __LINE__, "set-up", "clients");
    }
    clothd_close(s);
    clothd_close(driver);
    tape_free(&t);
    CHECK(ct_server_stop(&srv) == 0);
}

static void a_server_without_shared_memory_should_refuse_shm(void)
{
    const char *args[] = {"--shm-mb", "0", NULL};
    ct_server srv;
    REQUIRE(ct_server_start(&srv, args, 0));
    tape t, t2;
    clothd_client *c = connect_tape(srv.port, NULL, &t, false);
    clothd_client *bare = connect_tape(srv.port, NULL, &t2, true);
    clothd_error err;
    if (c != NULL && bare != NULL) {
        clothd_instance id = cloth(c, 4, 4, 0.1f);
        CHECK(!clothd_has_feature(c, "shm"), "hello lists no shm");
        clothd_code rc = subscribe(c, id, true, false, 0, &err);
        CHECK(rc == CLOTHD_E_INCOMPATIBLE && strstr(err.message, "lacks the feature \"shm\" needed by subscribe"),
              "%s: %s", clothd_code_name(rc), err.message);
        /* Without hello nothing is known: the server's own refusal. */
        rc = subscribe(bare, id, true, false, 0, &err);
        CHECK(rc == CLOTHD_E_INVALID_ARGUMENT && strcmp(err.wire_code, "invalid_argument") == 0 &&
                  strcmp(err.message, "shm: this server has no shared memory (--shm-mb 0)") == 0,
              "%s (%s): %s", clothd_code_name(rc), err.wire_code, err.message);
        step_each(c, &id, 1, 1);
        CHECK(clothd_ping(bare, &err) == CLOTHD_OK && clothd_ping(c, &err) == CLOTHD_OK);
        CHECK(t.n == 0 && t2.n == 0, "nothing subscribed: no frame (%d, %d)", t.n, t2.n);
    } else {
        ct_fail(__FILE__, __LINE__, "set-up", "clients");
    }
    clothd_close(bare);
    clothd_close(c);
    CHECK(ct_server_stop(&srv) == 0);
}

/* A fake clothd's answer to a subscribe (id 1): ok, naming `name`, then a
 * reference to a 136-byte frame at position 0. */
static size_t fake_reply(unsigned char *out, size_t cap, const char *name)
{
    int n = snprintf((char *)out, cap, "{\"id\":1,\"ok\":true,\"instances\":[1],\"shm\":{\"name\":\"%s\",\"size\":1048576}}\n",
                     name);
    const unsigned char ref[56] = {0x89, 'C', 'L', 'F', 1, 0, 8, 0, 56, 0, 0, 0, 1, 0, 0, 0,
                                   [32] = 8, [48] = 136};
    memcpy(out + n, ref, sizeof ref);
    return (size_t)n + sizeof ref;
}

static void a_ring_that_cannot_be_mapped_should_be_an_error_naming_it(void)
{
    char missing[64], bogus[64], path[96];
    snprintf(missing, sizeof missing, "/clothd-c-test-%ld-missing", (long)getpid());
    snprintf(bogus, sizeof bogus, "/clothd-c-test-%ld-bogus", (long)getpid());
    snprintf(path, sizeof path, "/dev/shm%s", bogus);
    FILE *f = fopen(path, "wb"); /* large enough, but no "CLSM" */
    REQUIRE(f != NULL && fseek(f, 4096 + 1048576 - 1, SEEK_SET) == 0 && fputc(0, f) == 0, "%s", path);
    fclose(f);
    struct {
        const char *name;
        clothd_code code;
        const char *text;
    } cases[] = {
        {missing, CLOTHD_E_IO, "shm: cannot open /dev/shm/clothd-c-test-"},
        {bogus, CLOTHD_E_PROTOCOL, "is not a clothd ring this client reads (magic 00 00 00 00"},
    };
    for (size_t i = 0; i < 2; i++) {
        unsigned char reply[256];
        size_t len = fake_reply(reply, sizeof reply, cases[i].name);
        ct_fake *fake = ct_fake_start(reply, len, false);
        if (fake == NULL) {
            ct_fail(__FILE__, __LINE__, "ct_fake_start", "case %zu", i);
            break; /* the file still goes */
        }
        tape t;
        clothd_client *c = connect_tape(ct_fake_port(fake), NULL, &t, true);
        if (c != NULL) {
            clothd_error err;
            clothd_code rc;
            if (i == 0) {
                rc = subscribe(c, (clothd_instance){1}, true, false, 0, &err);
            } else { /* ticketless: kept for clothd_take_async_error */
                clothd_subscribe_options so;
                memset(&so, 0, sizeof so);
                so.instance.id = 1;
                so.shm = clothd_b(true);
                CHECK(clothd_send_subscribe(c, &so, NULL, &err) == CLOTHD_OK);
                POLL_UNTIL(c, clothd_get_client_stats(c).frames == 1, 3000);
                rc = clothd_take_async_error(c, &err) ? err.code : CLOTHD_OK;
            }
            CHECK(rc == cases[i].code && strstr(err.message, cases[i].text) && strstr(err.message, cases[i].name),
                  "case %zu: %s: %s", i, clothd_code_name(rc), err.message);
            POLL_UNTIL(c, clothd_get_client_stats(c).frames == 1, 3000);
            clothd_client_stats st = clothd_get_client_stats(c);
            CHECK(st.frames == 1 && st.frames_missed == 1 && t.n == 0 && clothd_link_state(c) == CLOTHD_LINK_CONNECTED,
                  "case %zu: the reference counted missed (%llu), the connection kept", i,
                  (unsigned long long)st.frames_missed);
            clothd_close(c);
        }
        ct_fake_stop(fake);
    }
    unlink(path);
}

/* PROTOCOL.md's reference test vector: frame 2 of instance 1 (4
 * particles, time 1.0, plain: 88 bytes) at ring position 4096. */
static const unsigned char vector_ref[56] = {
    0x89, 0x43, 0x4c, 0x46, 0x01, 0x00, 0x08, 0x00, 0x38, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x58, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* A ring written by hand at `path`: 1 MiB of data, the vector's frame (of
 * `instance`) at position 4096, and `claimed`. */
static bool hand_made_ring(const char *path, uint32_t instance, uint64_t claimed, const float xyz[12])
{
    unsigned char head[48] = {'C', 'L', 'S', 'M', 1}, frame[88] = {0x89, 'C', 'L', 'F', 1, 0, 0, 0, 88};
    const uint64_t data = 4096, size = 1 << 20, published = 4096 + 88, frame_no = 2;
    const uint32_t pid = (uint32_t)getpid(), count = 4;
    const double time = 1.0;
    memcpy(head + 8, &data, 8);
    memcpy(head + 16, &size, 8);
    memcpy(head + 24, &claimed, 8);
    memcpy(head + 32, &published, 8);
    memcpy(head + 40, &pid, 4);
    memcpy(frame + 12, &instance, 4);
    memcpy(frame + 16, &frame_no, 8);
    memcpy(frame + 24, &time, 8);
    memcpy(frame + 32, &count, 4);
    memcpy(frame + 40, xyz, 48);
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL && fwrite(head, 1, sizeof head, f) == sizeof head && fseek(f, 4096 + 4096, SEEK_SET) == 0 &&
              fwrite(frame, 1, sizeof frame, f) == sizeof frame && fseek(f, 4096 + (1 << 20) - 1, SEEK_SET) == 0 &&
              fputc(0, f) == 0;
    return f != NULL && fclose(f) == 0 && ok;
}

static void the_reference_vector_should_resolve_through_a_hand_made_ring(void)
{
    const float xyz[12] = {0, 2, 0, 0.5f, 2, 0, 0, 1.5f, 0, 0.5f, 1.5f, -0.25f};
    char name[64], path[96];
    snprintf(name, sizeof name, "/clothd-c-test-%ld-vector", (long)getpid());
    snprintf(path, sizeof path, "/dev/shm%s", name);
    struct {
        uint32_t instance;
        uint64_t claimed;
        int delivered, missed;
        const char *closed; /* the drop's reason, or NULL: still connected */
    } cases[] = {
        {1, 4096 + 88, 1, 0, NULL},
        {1, 4096 + (1 << 20) + 1, 0, 1, NULL}, /* claimed past position + size: overwritten, missed */
        {1, 4096 + (1 << 20), 1, 0, NULL},     /* claimed just up to position + size: still whole */
        {2, 4096 + 88, 0, 0, "the 88 bytes at ring position 4096 are not the frame their reference names"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!hand_made_ring(path, cases[i].instance, cases[i].claimed, xyz)) {
            ct_fail(__FILE__, __LINE__, "hand_made_ring", "%s", path);
            break; /* the file still goes */
        }
        unsigned char reply[256];
        int n = snprintf((char *)reply, sizeof reply,
                         "{\"id\":1,\"ok\":true,\"instances\":[1],\"shm\":{\"name\":\"%s\",\"size\":1048576}}\n", name);
        memcpy(reply + n, vector_ref, sizeof vector_ref);
        ct_fake *fake = ct_fake_start(reply, (size_t)n + sizeof vector_ref, false);
        if (fake == NULL) {
            ct_fail(__FILE__, __LINE__, "ct_fake_start", "case %zu", i);
            break; /* the file still goes */
        }
        tape t;
        clothd_client *c = connect_tape(ct_fake_port(fake), NULL, &t, true);
        float got[12] = {0};
        clothd_frame_target target = {.positions = got, .capacity = 4};
        clothd_error err;
        if (c != NULL && clothd_set_frame_target(c, (clothd_instance){1}, &target, &err) == CLOTHD_OK) {
            CHECK(subscribe(c, (clothd_instance){1}, true, false, 0, &err) == CLOTHD_OK, "case %zu: %s", i,
                  err.message);
            POLL_UNTIL(c, clothd_get_client_stats(c).frames == 1 || clothd_link_state(c) == CLOTHD_LINK_CLOSED, 3000);
            clothd_client_stats st = clothd_get_client_stats(c);
            CHECK(t.n == cases[i].delivered && st.frames_missed == (uint64_t)cases[i].missed,
                  "case %zu: %d delivered, %llu missed", i, t.n, (unsigned long long)st.frames_missed);
            if (cases[i].delivered)
                CHECK(t.r[0].instance == 1 && t.r[0].frame == 2 && t.r[0].time == 1.0 && t.r[0].count == 4 &&
                          t.r[0].flags == 0 && t.r[0].payload_size == 48 && memcmp(got, xyz, sizeof xyz) == 0 &&
                          target.frame == 2,
                      "case %zu: frame 2 of instance 1, its 4 positions in the target", i);
            if (cases[i].closed != NULL) {
                clothd_code rc = clothd_ping(c, &err);
                CHECK(rc == CLOTHD_E_CLOSED && strstr(err.message, cases[i].closed), "case %zu: %s: %s", i,
                      clothd_code_name(rc), err.message);
            } else {
                CHECK(clothd_link_state(c) == CLOTHD_LINK_CONNECTED, "case %zu: connected", i);
            }
        }
        clothd_close(c);
        ct_fake_stop(fake);
        tape_free(&t);
    }
    unlink(path);
}

static void a_reconnect_should_map_the_ring_again_once(void)
{
    ct_proxy *proxy = ct_proxy_start(ct_main_server.port);
    clothd_client *driver = ct_connect(0, NULL);
    REQUIRE(proxy != NULL && driver != NULL);
    tape t;
    memset(&t, 0, sizeof t);
    clothd_options o = clothd_options_default();
    o.port = ct_proxy_port(proxy);
    o.reconnect = true;
    o.reconnect_timeout_ms = 5000;
    o.on_frame = on_frame;
    o.user = &t;
    clothd_client *c = NULL;
    clothd_error err;
    int other = 0;
    if (clothd_connect(&o, &c, &err) != CLOTHD_OK) {
        ct_fail(__FILE__, __LINE__, "connect", "%s", err.message);
        goto out;
    }
    clothd_instance id = cloth(driver, 5, 5, 0.1f);
    CHECK(subscribe(c, id, true, false, 0, &err) == CLOTHD_OK, "%s", err.message);
    POLL_UNTIL(c, t.n == 1, 3000);
    ct_proxy_cut(proxy);
    ct_sleep_ms(50);
    clothd_ping(c, &err); /* fails: the drop */
    CHECK(clothd_ping(c, &err) == CLOTHD_OK && clothd_get_client_stats(c).reconnects == 1, "%s", err.message);
    CHECK(ring_maps(ct_main_server.pid, &other) == 1 && other == 0, "one mapping after the reconnect");
    step_each(driver, &id, 1, 2);
    POLL_UNTIL(c, find(&t, id.id, 2) != NULL, 3000);
    CHECK(find(&t, id.id, 2) != NULL && clothd_get_client_stats(c).frames_missed == 0,
          "frames through the ring after the reconnect (%d frames)", count_of(&t, id.id));
out:
    clothd_close(c);
    CHECK(ring_maps(ct_main_server.pid, &other) == 0, "none after close");
    clothd_close(driver);
    ct_proxy_stop(proxy);
    tape_free(&t);
}

const ct_test ct_shm_tests[] = {
    {"shm: frames over TCP loopback equal a plain subscriber's", shm_frames_over_tcp_should_equal_plain_frames, 0},
    {"shm: frames over the Unix socket equal a plain subscriber's", shm_frames_over_unix_should_equal_plain_frames, 0},
    {"shm: a stalled reader gets the newest 8 frames, 5 missed",
     a_stalled_reader_should_get_the_newest_frames_and_count_the_rest_missed, 0},
    {"shm: a frame over a quarter of the ring comes as an ordinary frame",
     a_frame_over_a_quarter_of_the_ring_should_come_as_an_ordinary_frame, 0},
    {"shm: --shm-mb 0 refuses shm (incompatible; the server's invalid_argument)",
     a_server_without_shared_memory_should_refuse_shm, 0},
    {"shm: a ring that cannot be mapped is an error naming it", a_ring_that_cannot_be_mapped_should_be_an_error_naming_it,
     0},
    {"shm: PROTOCOL.md's reference vector through a hand-made ring (whole, missed, not its frame)",
     the_reference_vector_should_resolve_through_a_hand_made_ring, 0},
    {"shm: a reconnect maps the ring again, once", a_reconnect_should_map_the_ring_again_once, 0},
    {NULL, NULL, 0},
};
