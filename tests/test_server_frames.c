/* Frames filled on a worker thread (issue 8, item 5): the buffer the loop
 * thread allocates (cd_frame_buf_alloc) and a pool worker fills right after
 * the step (cd_frame_buf_fill) holds exactly the bytes cd_frame_encode /
 * cd_frame_encode_quantized write for the same state on the calling
 * thread, and with velocities and normals (issue 15) those of
 * cd_frame_encode_content. tests/e2e/test_frames_gathered.py checks the same through the
 * real server. Run under ASan by unit_tests_san. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../server/internal.h"

typedef struct fill_job {
    cd_job job; /* first */
    cd_instance *inst;
    cd_frame_buf *forms[CD_FRAME_FORMS]; /* every flag combination */
    cd_frame_channels channels;
} fill_job;

/* On a worker: a step, the channels once, then every form, as stepper.c's
 * run_step_job. */
static void run_fill(cd_job *job)
{
    fill_job *fj = (fill_job *)job;
    cd_instance_step(fj->inst, 1.0f / 60.0f, (cd_vec3){2.0f, 0.0f, 1.0f});
    cd_frame_channels_compute(&fj->channels, fj->inst);
    for (uint32_t f = 0; f < CD_FRAME_FORMS; f++)
        cd_frame_buf_fill(fj->forms[f], fj->inst, &fj->channels);
}

Test(server_frames, frames_filled_on_a_worker_should_equal_the_encoders_bytes)
{
    cd_world_def wdef = cd_default_world_def();
    cd_world *world = cd_world_create(&wdef);
    cr_assert_not_null(world);
    cd_pool *pool = cd_pool_create(2, 16, NULL, NULL);
    cr_assert_not_null(pool);

    enum { N = 3 };
    fill_job jobs[N];
    cd_job *ptrs[N];
    for (int i = 0; i < N; i++) {
        cd_cloth_def def = cd_default_cloth_def();
        def.width = 12 + 4 * i;
        def.height = 9;
        def.origin = (cd_vec3){1.5f * (float)i, 2.0f, 0.0f};
        def.sleep_threshold = 0.0f;
        cd_id id;
        cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK);
        jobs[i] = (fill_job){.job.run = run_fill, .inst = cd_world_get(world, id)};
        const uint32_t particles = cd_instance_particle_count(jobs[i].inst);
        for (uint32_t f = 0; f < CD_FRAME_FORMS; f++) {
            jobs[i].forms[f] = cd_frame_buf_alloc(id, particles, (uint16_t)f);
            cr_assert_not_null(jobs[i].forms[f]);
        }
        cr_assert(cd_frame_channels_alloc(&jobs[i].channels, particles,
                                          CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS));
        ptrs[i] = &jobs[i].job;
    }
    for (int step = 0; step < 5; step++)
        cd_pool_run_batch(pool, ptrs, N);

    for (int i = 0; i < N; i++) {
        cd_instance_info info;
        cd_instance_get_info(jobs[i].inst, &info);
        cr_assert_eq(info.frame, 5u);
        float *vel = malloc(sizeof(float) * 3 * info.particles);
        float *nrm = malloc(sizeof(float) * 3 * info.particles);
        cr_assert(vel != NULL && nrm != NULL);
        cd_instance_velocities(jobs[i].inst, vel);
        cd_instance_normals(jobs[i].inst, nrm);
        float *seen = malloc(sizeof(float) * 3 * info.particles); /* what a client sees */
        cr_assert_not_null(seen);
        cd_instance_copy_positions(jobs[i].inst, seen);
        const cd_frame_content content = {.instance = info.id, .frame = info.frame,
                                          .time = info.time, .count = info.particles,
                                          .positions = seen, .velocities = vel, .normals = nrm};
        for (uint16_t f = 0; f < CD_FRAME_FORMS; f++) {
            const size_t len = cd_frame_size_flags(info.particles, f);
            uint8_t *expected = malloc(len);
            cr_assert_not_null(expected);
            cd_frame_encode_content(expected, f, &content);
            cr_assert_eq(jobs[i].forms[f]->len, len);
            cr_assert_eq(memcmp(jobs[i].forms[f]->data, expected, len), 0,
                         "instance %d, flags %u", i, f);
            /* Forms without channels are the positions-only encoders' bytes. */
            if (f == 0 || f == CD_FRAME_FLAG_QUANTIZED) {
                uint8_t *old = malloc(len);
                cr_assert_not_null(old);
                if (f == 0)
                    cd_frame_encode(old, info.id, info.frame, info.time, content.positions,
                                    info.particles);
                else
                    cd_frame_encode_quantized(old, info.id, info.frame, info.time,
                                              content.positions, info.particles);
                cr_assert_eq(memcmp(old, expected, len), 0, "flags %u", f);
                free(old);
            }
            /* And the loop thread's own encoding of the same state. */
            cd_frame_buf *again = cd_frame_buf_encode(jobs[i].inst, f);
            cr_assert_not_null(again);
            cr_assert_eq(memcmp(again->data, expected, len), 0, "flags %u", f);
            cd_frame_buf_unref(again);
            free(expected);
            cd_frame_buf_unref(jobs[i].forms[f]);
        }
        cd_frame_channels_free(&jobs[i].channels);
        free(seen);
        free(vel);
        free(nrm);
    }
    cd_pool_destroy(pool);
    cd_world_destroy(world);
}

Test(server_frames, a_shared_frame_should_live_until_its_last_reference_goes)
{
    cd_frame_buf *frame = cd_frame_buf_alloc(7, 4, false);
    cr_assert_not_null(frame);
    cr_assert_eq(frame->len, cd_frame_size(4));
    cr_assert_eq(frame->refs, 1u);
    cd_frame_buf_ref(frame);
    cd_frame_buf_ref(frame);
    cd_frame_buf_unref(frame);
    cd_frame_buf_unref(frame);
    cr_assert_eq(frame->refs, 1u); /* still readable: ASan would object otherwise */
    cd_frame_buf_unref(frame);
    cd_frame_buf_unref(NULL); /* harmless */
}
