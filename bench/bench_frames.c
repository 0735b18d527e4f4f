/* bench_frames — what a frame costs with and without its channels (issue
 * 15): the bytes on the wire and the build time on the worker, for each of
 * the eight forms (plain or quantized; with or without velocities and
 * normals), for one N x N curtain swinging in the wind.
 *
 * A form's build time is what the worker does for it after the step: the
 * channels it carries computed (cd_frame_channels_compute: velocities and/or
 * normals from the solver) and the frame encoded (cd_frame_buf_fill), into
 * buffers allocated beforehand, as server/stepper.c does. Each form is timed
 * REPS times in a row on the same state; the median of SAMPLES such runs is
 * printed, with the curtain's own step time for scale.
 *
 * Usage: bench_frames [N [SAMPLES [REPS]]]      (defaults 64, 9, 200)
 * Prints one line per form and one for the step:
 *   FRAME {"n":64,"flags":7,"form":"quantized+velocities+normals","bytes":65624,"us":...}
 *   STEP {"n":64,"us":...}
 * `make bench-frames` builds and runs it (a few seconds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../server/internal.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *form_name(uint16_t flags)
{
    static const char *const names[8] = {
        "plain", "quantized", "plain+velocities", "quantized+velocities", "plain+normals",
        "quantized+normals", "plain+velocities+normals", "quantized+velocities+normals"};
    return names[flags & 7u];
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 64;
    const int samples = argc > 2 ? atoi(argv[2]) : 9;
    const int reps = argc > 3 ? atoi(argv[3]) : 200;
    if (n < 2 || n > 1024 || samples < 1 || samples > 99 || reps < 1) {
        fprintf(stderr, "usage: %s [N [SAMPLES [REPS]]]\n", argv[0]);
        return 2;
    }
    cd_world_def wdef = cd_default_world_def();
    cd_world *world = cd_world_create(&wdef);
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = n;
    def.spacing = 2.0f / (float)(n - 1);
    def.origin = (cd_vec3){-1, 2, 0};
    def.sleep_threshold = 0.0f;
    cd_id id;
    if (world == NULL || cd_world_create_cloth(world, &def, &id) != CD_OK)
        return 1;
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t x = 0; x < (uint32_t)n; x++)
        cd_instance_pin(inst, x, NULL);
    cd_instance_set_wind(inst, (cd_vec3){3, 0, 1.5f});
    const cd_vec3 calm = {0, 0, 0};
    for (int s = 0; s < 60; s++)
        cd_instance_step(inst, 1.0f / 60.0f, calm);

    double step_us[99];
    for (int k = 0; k < samples; k++) {
        const double t0 = now_us();
        cd_instance_step(inst, 1.0f / 60.0f, calm);
        step_us[k] = now_us() - t0;
    }
    const uint32_t particles = cd_instance_particle_count(inst);
    for (uint16_t flags = 0; flags < CD_FRAME_FORMS; flags++) {
        cd_frame_buf *frame = cd_frame_buf_alloc(id, particles, flags);
        cd_frame_channels ch;
        if (frame == NULL || !cd_frame_channels_alloc(&ch, particles, flags))
            return 1;
        double us[99];
        for (int k = 0; k < samples; k++) {
            const double t0 = now_us();
            for (int r = 0; r < reps; r++) {
                cd_frame_channels_compute(&ch, inst);
                cd_frame_buf_fill(frame, inst, &ch);
            }
            us[k] = (now_us() - t0) / reps;
        }
        printf("FRAME {\"n\":%d,\"flags\":%u,\"form\":\"%s\",\"bytes\":%zu,\"bytes_per_particle\":%.2f,"
               "\"us\":%.1f}\n",
               n, (unsigned)flags, form_name(flags), frame->len, (double)frame->len / particles,
               median(us, samples));
        cd_frame_channels_free(&ch);
        cd_frame_buf_unref(frame);
    }
    printf("STEP {\"n\":%d,\"us\":%.1f,\"simd\":\"%s\"}\n", n, median(step_us, samples),
           cd_solver_simd_path());
    cd_world_destroy(world);
    return 0;
}
