/* Encoded frames, shared by reference between every subscriber they are
 * written to. Only the loop thread touches them, so the count is plain. */
#include <stdlib.h>

#include "internal.h"

cd_frame_buf *cd_frame_buf_encode(const cd_instance *inst, bool quantize)
{
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    size_t len = quantize ? cd_frame_size_quantized(info.particles) : cd_frame_size(info.particles);
    cd_frame_buf *frame = malloc(sizeof *frame + len);
    if (frame == NULL)
        return NULL;
    frame->refs = 1;
    frame->instance = info.id;
    frame->len = len;
    if (quantize)
        cd_frame_encode_quantized(frame->data, info.id, info.frame, info.time,
                                  cd_instance_positions(inst), info.particles);
    else
        cd_frame_encode(frame->data, info.id, info.frame, info.time, cd_instance_positions(inst),
                        info.particles);
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
