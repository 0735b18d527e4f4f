/* The cost of one `skin` round trip through the C client, binary against
 * JSON: a 1,960-vertex mesh cape (a 49 x 40 sheet at 2 cm, maxDistance
 * 0.1 m) in a bent, turned pose, each request its positions and normals,
 * sent with the blocking clothd_skin (send, wait for the reply). It starts
 * its own clothd (the path given), takes turns between the forms for a few
 * rounds and prints the median milliseconds per request, the bytes of one
 * request and the client's CPU time per request.
 *
 *   skin --clothd build/clothd [--requests N] [--rounds R] */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clothd/client.h>

#include "bench_util.h"

#define COLS 49
#define ROWS 40
#define N (COLS * ROWS)
#define MAX_ROUNDS 15

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *clothd = NULL;
    int requests = 100, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--clothd") == 0)
            clothd = argv[i + 1];
        else if (strcmp(argv[i], "--requests") == 0)
            requests = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    }
    if (clothd == NULL || requests < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: skin --clothd PATH [--requests N] [--rounds 1..%d]\n", MAX_ROUNDS);
        return 2;
    }
    pid_t pid;
    clothd_options o = clothd_options_default();
    o.port = bench_start_server(clothd, NULL, &pid);
    if (o.port == 0) {
        fprintf(stderr, "skin: cannot start %s\n", clothd);
        return 1;
    }
    static float verts[3 * N], normals[3 * N];
    static uint32_t tris[6 * (COLS - 1) * (ROWS - 1)];
    size_t nt = 0;
    /* A pose as a game sends it: the sheet bent round a back, turned and
     * carried away from the origin, so every coordinate and normal takes
     * all of its digits in JSON (a flat sheet at the origin prints zeros). */
    for (int i = 0; i < N; i++) {
        double u = (i % COLS - (COLS - 1) / 2.0) * 0.02, a = 0.7 + 0.8 * u, bend = -0.25 * u * u;
        verts[3 * i] = (float)(12.3456 + u * cos(a) + bend * sin(a));
        verts[3 * i + 1] = (float)(1.4 - (i / COLS) * 0.02);
        verts[3 * i + 2] = (float)(-7.891 - u * sin(a) + bend * cos(a));
        double nx = sin(a) - 0.5 * u * cos(a), nz = cos(a) + 0.5 * u * sin(a), len = sqrt(nx * nx + 0.01 + nz * nz);
        normals[3 * i] = (float)(nx / len);
        normals[3 * i + 1] = (float)(0.1 / len);
        normals[3 * i + 2] = (float)(nz / len);
    }
    for (uint32_t y = 0; y + 1 < ROWS; y++)
        for (uint32_t x = 0; x + 1 < COLS; x++) {
            uint32_t tl = y * COLS + x;
            const uint32_t q[6] = {tl, tl + COLS, tl + 1, tl + 1, tl + COLS, tl + COLS + 1};
            memcpy(&tris[3 * nt], q, sizeof q);
            nt += 2;
        }
    clothd_client *c = NULL;
    clothd_error err;
    clothd_mesh_cloth_options mo = {0};
    mo.vertices = verts;
    mo.vertex_count = N;
    mo.triangles = tris;
    mo.triangle_count = nt;
    mo.material.max_distance = clothd_paint_all(0.1f);
    clothd_created cape;
    int status = 1;
    if (clothd_connect(&o, &c, &err) != CLOTHD_OK || clothd_create_mesh_cloth(c, &mo, &cape, &err) != CLOTHD_OK) {
        fprintf(stderr, "skin: %s\n", err.message);
        goto out;
    }
    double ms[2][MAX_ROUNDS], cpu[2][MAX_ROUNDS], bytes[2] = {0, 0};
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        for (int json = 0; json < 2; json++) {
            clothd_skin_options s = {verts, normals, N, json != 0};
            uint64_t b0 = clothd_get_client_stats(c).bytes_out;
            double t0 = now_s(), c0 = bench_cpu_s();
            for (int i = 0; i < requests; i++)
                if (clothd_skin(c, cape.instance, &s, &err) != CLOTHD_OK) {
                    fprintf(stderr, "skin: %s\n", err.message);
                    goto out;
                }
            if (r < 0)
                continue;
            ms[json][r] = (now_s() - t0) / requests * 1e3;
            cpu[json][r] = (bench_cpu_s() - c0) / requests * 1e3;
            bytes[json] = (double)(clothd_get_client_stats(c).bytes_out - b0) / requests;
        }
    }
    double load = 0;
    FILE *la = fopen("/proc/loadavg", "r");
    if (la == NULL || fscanf(la, "%lf", &load) != 1)
        load = NAN;
    if (la != NULL)
        fclose(la);
    printf("skin round trip, %d vertices with normals, %d requests x %d rounds (median; load average %.2f):\n", N,
           requests, rounds, load);
    static const char *const names[2] = {"binary", "JSON"};
    for (int json = 0; json < 2; json++)
        printf("%-7s %7.3f ms/request  %7.0f bytes/request  client CPU %.3f ms/request\n", names[json],
               bench_median(ms[json], rounds), bytes[json], bench_median(cpu[json], rounds));
    printf("JSON / binary: %.1fx the time, %.1fx the bytes\n", bench_median(ms[1], rounds) / bench_median(ms[0], rounds),
           bytes[1] / bytes[0]);
    clothd_destroy(c, cape.instance, NULL);
    status = 0;
out:
    clothd_close(c);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return status;
}
