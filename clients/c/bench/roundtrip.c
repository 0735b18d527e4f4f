/* The C client's cost of one `step` round trip: one tiny instance (2 x 2),
 * N blocking clothd_step calls one after another (each waits for its
 * reply), then the same N pipelined (all sent, then all collected).
 * Prints one line per mode in microseconds per step (and the client's own
 * CPU time per blocking step, from getrusage); roundtrip.py runs it
 * beside the Python client against the same server.
 *
 *   roundtrip --port P [--steps N] */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <clothd/client.h>

#include "bench_util.h"

/* This process's CPU time (user + system), seconds. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    clothd_options o = clothd_options_default();
    int steps = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            o.port = (uint16_t)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
    }
    clothd_client *c = NULL;
    clothd_error err;
    clothd_cloth_options co = clothd_cloth_default();
    co.width = clothd_i(2);
    co.height = clothd_i(2);
    clothd_created cl;
    if (clothd_connect(&o, &c, &err) != CLOTHD_OK || clothd_create_cloth(c, &co, &cl, &err) != CLOTHD_OK) {
        fprintf(stderr, "roundtrip: %s\n", err.message);
        return 1;
    }
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = cl.instance;
    for (int i = 0; i < 50; i++) /* warm-up */
        clothd_step(c, &so, NULL, &err);

    double t0 = now_s(), c0 = bench_cpu_s();
    for (int i = 0; i < steps; i++) {
        if (clothd_step(c, &so, NULL, &err) != CLOTHD_OK) {
            fprintf(stderr, "roundtrip: step: %s\n", err.message);
            return 1;
        }
    }
    double blocking = (now_s() - t0) / steps * 1e6;
    double cpu = (bench_cpu_s() - c0) / steps * 1e6;

    clothd_ticket *t = malloc((size_t)steps * sizeof *t);
    t0 = now_s();
    for (int i = 0; i < steps; i++)
        clothd_send_step(c, &so, &t[i], &err);
    for (int i = 0; i < steps; i++) {
        if (clothd_recv(c, t[i], &err) != CLOTHD_OK) {
            fprintf(stderr, "roundtrip: step: %s\n", err.message);
            return 1;
        }
    }
    double pipelined = (now_s() - t0) / steps * 1e6;
    free(t);
    printf("c blocking %.1f us/step, client cpu %.1f us/step\n", blocking, cpu);
    printf("c pipelined %.1f us/step\n", pipelined);
    clothd_destroy(c, cl.instance, NULL);
    clothd_close(c);
    return 0;
}
