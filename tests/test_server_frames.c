/* Frames filled on a worker thread (issue 8, item 5): the buffer the loop
 * thread allocates (cd_frame_buf_alloc) and a pool worker fills right after
 * the step (cd_frame_buf_fill) holds exactly the bytes cd_frame_encode /
 * cd_frame_encode_quantized write for the same state on the calling
 * thread. tests/e2e/test_frames_gathered.py checks the same through the
 * real server. Run under ASan by unit_tests_san. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../server/internal.h"

typedef struct fill_job {
    cd_job job; /* first */
    cd_instance *inst;
    cd_frame_buf *forms[2];
} fill_job;

/* On a worker: a step, then both forms, as stepper.c's run_step_job. */
static void run_fill(cd_job *job)
{
    fill_job *fj = (fill_job *)job;
    cd_instance_step(fj->inst, 1.0f / 60.0f, (cd_vec3){2.0f, 0.0f, 1.0f});
    cd_frame_buf_fill(fj->forms[0], fj->inst);
    cd_frame_buf_fill(fj->forms[1], fj->inst);
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
        jobs[i].forms[0] = cd_frame_buf_alloc(id, particles, false);
        jobs[i].forms[1] = cd_frame_buf_alloc(id, particles, true);
        cr_assert(jobs[i].forms[0] != NULL && jobs[i].forms[1] != NULL);
        ptrs[i] = &jobs[i].job;
    }
    for (int step = 0; step < 5; step++)
        cd_pool_run_batch(pool, ptrs, N);

    for (int i = 0; i < N; i++) {
        cd_instance_info info;
        cd_instance_get_info(jobs[i].inst, &info);
        cr_assert_eq(info.frame, 5u);
        const float *pos = cd_instance_positions(jobs[i].inst);
        size_t plain_len = cd_frame_size(info.particles);
        size_t quant_len = cd_frame_size_quantized(info.particles);
        uint8_t *plain = malloc(plain_len), *quant = malloc(quant_len);
        cr_assert(plain != NULL && quant != NULL);
        cd_frame_encode(plain, info.id, info.frame, info.time, pos, info.particles);
        cd_frame_encode_quantized(quant, info.id, info.frame, info.time, pos, info.particles);
        cr_assert_eq(jobs[i].forms[0]->len, plain_len);
        cr_assert_eq(jobs[i].forms[1]->len, quant_len);
        cr_assert_eq(memcmp(jobs[i].forms[0]->data, plain, plain_len), 0, "plain, instance %d", i);
        cr_assert_eq(memcmp(jobs[i].forms[1]->data, quant, quant_len), 0, "quantized, instance %d", i);
        /* And the loop thread's own encoding of the same state. */
        cd_frame_buf *again = cd_frame_buf_encode(jobs[i].inst, true);
        cr_assert_not_null(again);
        cr_assert_eq(memcmp(again->data, quant, quant_len), 0);
        cd_frame_buf_unref(again);
        free(plain);
        free(quant);
        cd_frame_buf_unref(jobs[i].forms[0]);
        cd_frame_buf_unref(jobs[i].forms[1]);
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
