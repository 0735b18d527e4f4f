/* What a subscriber on clothd's host pays per frame through libclothd:
 * shared-memory frames (subscribe's shm: a 56-byte reference through the
 * socket, the frame copied out of the ring) against ordinary frames over
 * TCP loopback and over the Unix socket. It starts its own clothd (the
 * path given, with --unix), creates N cloths of S x S (pinned by the top
 * row, never asleep), and per round and mode: a reader thread connects,
 * registers a frame target per instance, subscribes to them all and reads
 * every frame with clothd_poll, while the main thread steps them all
 * `steps` times (blocking steps, as a game server ticks). The reader's own
 * CPU time (CLOCK_THREAD_CPUTIME_ID, from its subscribe to its last frame)
 * over the frames it was handed is the number; the modes take turns for a
 * few rounds and the median is printed.
 *
 *   shm_reader --clothd build/clothd [--instances 64] [--size 32]
 *              [--steps 500] [--rounds 1] */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clothd/client.h>

#include "bench_util.h"

#define MAX_ROUNDS 9
#define MODES 3

static const char *const mode_names[MODES] = {"tcp plain", "unix plain", "tcp shm"};

typedef struct run {
    /* in */
    int mode;
    uint16_t port;
    const char *unix_path;
    const clothd_instance *ids;
    int n;
    uint32_t particles;
    /* between the threads */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool subscribed, stepped, failed;
    /* out */
    double cpu_s;
    uint64_t delivered, missed, bytes_in;
} run;

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(run *r, bool *flag)
{
    pthread_mutex_lock(&r->lock);
    *flag = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static bool flag_of(run *r, const bool *flag)
{
    pthread_mutex_lock(&r->lock);
    bool s = *flag;
    pthread_mutex_unlock(&r->lock);
    return s;
}

static void *reader(void *arg)
{
    run *r = arg;
    clothd_options o = clothd_options_default();
    o.port = r->port;
    o.unix_path = r->mode == 1 ? r->unix_path : NULL;
    clothd_client *c = NULL;
    clothd_error err;
    clothd_frame_target *targets = calloc((size_t)r->n, sizeof *targets);
    float *arrays = calloc((size_t)r->n * 3 * r->particles, sizeof *arrays);
    if (targets == NULL || arrays == NULL || clothd_connect(&o, &c, &err) != CLOTHD_OK) {
        fprintf(stderr, "shm_reader: connect: %s\n", c == NULL ? err.message : "out of memory");
        say(r, &r->failed);
        say(r, &r->subscribed);
        free(targets);
        free(arrays);
        return NULL;
    }
    for (int i = 0; i < r->n; i++) {
        targets[i].positions = arrays + (size_t)i * 3 * r->particles;
        targets[i].capacity = r->particles;
        clothd_set_frame_target(c, r->ids[i], &targets[i], NULL);
    }
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instances = r->ids;
    so.instance_count = (size_t)r->n;
    so.shm = clothd_b(r->mode == 2);
    const double cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    if (clothd_subscribe(c, &so, NULL, &err) != CLOTHD_OK) {
        fprintf(stderr, "shm_reader: subscribe (%s): %s\n", mode_names[r->mode], err.message);
        say(r, &r->failed);
    }
    say(r, &r->subscribed);
    /* Every frame until the steps are done and nothing more comes for
     * 200 ms (the wait costs no CPU). */
    int quiet = 0;
    while (!flag_of(r, &r->failed) && quiet < 2) {
        int handled = 0;
        if (clothd_poll(c, 100, &handled, &err) != CLOTHD_OK) {
            fprintf(stderr, "shm_reader: poll: %s\n", err.message);
            say(r, &r->failed);
        }
        quiet = handled == 0 && flag_of(r, &r->stepped) ? quiet + 1 : 0;
    }
    r->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    clothd_client_stats st = clothd_get_client_stats(c);
    for (int i = 0; i < r->n; i++)
        r->delivered += targets[i].updates;
    r->missed = st.frames_missed;
    r->bytes_in = st.bytes_in;
    clothd_close(c);
    free(targets);
    free(arrays);
    return NULL;
}

/* One round of one mode; false on failure. */
static bool round_of(clothd_client *driver, run *r, int steps)
{
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, reader, r) != 0)
        return false;
    pthread_mutex_lock(&r->lock);
    while (!r->subscribed)
        pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instances = r->ids;
    so.instance_count = (size_t)r->n;
    clothd_error err;
    for (int i = 0; i < steps && !flag_of(r, &r->failed); i++) {
        if (clothd_step(driver, &so, NULL, &err) != CLOTHD_OK) {
            fprintf(stderr, "shm_reader: step: %s\n", err.message);
            say(r, &r->failed);
        }
    }
    say(r, &r->stepped);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    return !r->failed;
}

int main(int argc, char **argv)
{
    const char *clothd = NULL;
    int n = 64, size = 32, steps = 500, rounds = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--clothd") == 0)
            clothd = argv[i + 1];
        else if (strcmp(argv[i], "--instances") == 0)
            n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--size") == 0)
            size = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    }
    if (clothd == NULL || n < 1 || n > 1024 || size < 2 || size > 256 || steps < 1 || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: shm_reader --clothd PATH [--instances 1..1024] [--size 2..256] [--steps N] "
                        "[--rounds 1..%d]\n", MAX_ROUNDS);
        return 2;
    }
    char dir[] = "/tmp/clothd-shm-bench-XXXXXX", path[64];
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(path, sizeof path, "%s/clothd.sock", dir);
    pid_t pid;
    clothd_options o = clothd_options_default();
    o.port = bench_start_server(clothd, path, &pid);
    clothd_client *driver = NULL;
    clothd_error err;
    if (o.port == 0 || clothd_connect(&o, &driver, &err) != CLOTHD_OK) {
        fprintf(stderr, "shm_reader: cannot start or reach %s\n", clothd);
        return 1;
    }
    clothd_instance *ids = calloc((size_t)n, sizeof *ids);
    uint32_t *top = calloc((size_t)size, sizeof *top);
    for (int i = 0; i < size; i++)
        top[i] = (uint32_t)i;
    int made = 0;
    for (; ids != NULL && top != NULL && made < n; made++) {
        clothd_cloth_options co = clothd_cloth_default();
        co.width = clothd_i(size);
        co.height = clothd_i(size);
        co.spacing = clothd_f(0.05f);
        co.origin = clothd_v3((float)(made % 16) * 2.0f, 2.0f, (float)(made / 16) * 2.0f);
        co.material.sleep_threshold = clothd_f(0);
        clothd_created cr;
        clothd_pin_options po;
        memset(&po, 0, sizeof po);
        po.particles = top;
        po.particle_count = (size_t)size;
        if (clothd_create_cloth(driver, &co, &cr, &err) != CLOTHD_OK ||
            clothd_pin(driver, cr.instance, &po, NULL, &err) != CLOTHD_OK) {
            fprintf(stderr, "shm_reader: create: %s\n", err.message);
            break;
        }
        ids[made] = cr.instance;
    }
    int rc = made == n ? 0 : 1;
    const uint32_t particles = (uint32_t)(size * size);
    printf("shm_reader: %d instances of %dx%d (%u-byte frames), %d steps a round, %d rounds\n", n, size, size,
           40 + 12 * particles, steps, rounds);
    double us[MODES][MAX_ROUNDS], bytes[MODES][MAX_ROUNDS];
    uint64_t delivered[MODES] = {0}, missed[MODES] = {0};
    for (int k = 0; rc == 0 && k < rounds; k++) {
        for (int m = 0; rc == 0 && m < MODES; m++) {
            run r;
            memset(&r, 0, sizeof r);
            r.mode = (m + k) % MODES; /* each mode in every slot of the order in turn */
            r.port = o.port;
            r.unix_path = path;
            r.ids = ids;
            r.n = n;
            r.particles = particles;
            if (!round_of(driver, &r, steps) || r.delivered == 0) {
                rc = 1;
                break;
            }
            us[r.mode][k] = r.cpu_s / (double)r.delivered * 1e6;
            bytes[r.mode][k] = (double)r.bytes_in / (double)r.delivered;
            delivered[r.mode] += r.delivered;
            missed[r.mode] += r.missed;
            printf("  round %d %-10s %7.2f us of reader CPU a frame, %6.0f socket bytes a frame, %llu frames, "
                   "%llu missed\n", k + 1, mode_names[r.mode], us[r.mode][k], bytes[r.mode][k],
                   (unsigned long long)r.delivered, (unsigned long long)r.missed);
            fflush(stdout);
        }
    }
    if (rc == 0) {
        const uint64_t want = (uint64_t)rounds * (uint64_t)n * (uint64_t)(steps + 1);
        for (int m = 0; m < MODES; m++)
            printf("%-10s median %7.2f us of reader CPU a frame (%6.0f socket bytes a frame); %llu of %llu "
                   "frames delivered, %llu missed\n", mode_names[m], bench_median(us[m], rounds),
                   bench_median(bytes[m], rounds), (unsigned long long)delivered[m], (unsigned long long)want,
                   (unsigned long long)missed[m]);
    }
    clothd_close(driver);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    unlink(path);
    rmdir(dir);
    free(ids);
    free(top);
    return rc;
}
