/* Encoded frames, shared by reference between every subscriber they are
 * written to.
 *
 * A step's frames are encoded on the worker that stepped the instance, into
 * buffers the loop thread allocated when it started the batch
 * (cd_frame_buf_alloc, then cd_frame_buf_fill on the worker: no allocation
 * there). The pool's rings order the worker's writes before the loop
 * thread's reads. The reference count is touched only on the loop thread,
 * so it is plain. */
#include <assert.h>
#include <stdlib.h>

#include "internal.h"

cd_frame_buf *cd_frame_buf_alloc(cd_id instance, uint32_t particles, bool quantize)
{
    size_t len = quantize ? cd_frame_size_quantized(particles) : cd_frame_size(particles);
    cd_frame_buf *frame = malloc(sizeof *frame + len);
    if (frame == NULL)
        return NULL;
    frame->refs = 1;
    frame->instance = instance;
    frame->particles = particles;
    frame->quantize = quantize;
    frame->len = len;
    return frame;
}

void cd_frame_buf_fill(cd_frame_buf *frame, const cd_instance *inst)
{
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    /* The buffer was sized for this instance, whose particles cannot change
     * while it is being stepped (or read). */
    assert(info.id == frame->instance && info.particles == frame->particles);
    if (frame->quantize)
        cd_frame_encode_quantized(frame->data, info.id, info.frame, info.time,
                                  cd_instance_positions(inst), info.particles);
    else
        cd_frame_encode(frame->data, info.id, info.frame, info.time, cd_instance_positions(inst),
                        info.particles);
}

cd_frame_buf *cd_frame_buf_encode(const cd_instance *inst, bool quantize)
{
    cd_frame_buf *frame =
        cd_frame_buf_alloc(cd_instance_id(inst), cd_instance_particle_count(inst), quantize);
    if (frame != NULL)
        cd_frame_buf_fill(frame, inst);
    return frame;
}

void cd_frame_buf_ref(cd_frame_buf *frame)
{
    frame->refs++;
}

void cd_frame_buf_unref(cd_frame_buf *frame)
{
    if (frame != NULL && --frame->refs == 0)
        free(frame);
}
