/* Encoded frames, shared by reference between every subscriber they are
 * written to.
 *
 * A step's frames are encoded on the worker that stepped the instance, into
 * buffers the loop thread allocated when it started the batch
 * (cd_frame_buf_alloc, then cd_frame_buf_fill on the worker: no allocation
 * there). A form with velocities or normals takes them from arrays the
 * loop thread allocated with the buffers (cd_frame_channels), computed once
 * per step on the worker for all the forms that carry them. The pool's
 * rings order the worker's writes before the loop thread's reads. The
 * reference count is touched only on the loop thread, so it is plain. */
#include <assert.h>
#include <stdlib.h>

#include "internal.h"

/* A buffer of `len` bytes for a frame (or a reference to one) of
 * `instance`, one reference held. */
static cd_frame_buf *buf_new(cd_id instance, uint32_t particles, uint16_t flags, size_t len)
{
    cd_frame_buf *frame = malloc(sizeof *frame + len);
    if (frame == NULL)
        return NULL;
    frame->refs = 1;
    frame->instance = instance;
    frame->particles = particles;
    frame->flags = flags;
    frame->len = len;
    return frame;
}

cd_frame_buf *cd_frame_buf_alloc(cd_id instance, uint32_t particles, uint16_t flags)
{
    assert((flags & ~CD_FRAME_FLAGS_KNOWN) == 0);
    return buf_new(instance, particles, flags, cd_frame_size_flags(particles, flags));
}

bool cd_frame_channels_alloc(cd_frame_channels *ch, uint32_t particles, uint16_t wanted)
{
    *ch = (cd_frame_channels){0};
    wanted &= CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS;
    if (wanted == 0)
        return true;
    const size_t each = 3 * (size_t)(particles ? particles : 1);
    const bool both = wanted == (CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS);
    float *block = malloc((both ? 2 : 1) * each * sizeof(float));
    if (block == NULL)
        return false;
    ch->wanted = wanted;
    if (wanted & CD_FRAME_FLAG_VELOCITIES)
        ch->velocities = block;
    if (wanted & CD_FRAME_FLAG_NORMALS)
        ch->normals = both ? block + each : block;
    return true;
}

void cd_frame_channels_compute(cd_frame_channels *ch, const cd_instance *inst)
{
    if (ch->velocities != NULL)
        cd_instance_velocities(inst, ch->velocities);
    if (ch->normals != NULL)
        cd_instance_normals(inst, ch->normals);
}

void cd_frame_channels_free(cd_frame_channels *ch)
{
    free(ch->velocities != NULL ? ch->velocities : ch->normals); /* the block's start */
    *ch = (cd_frame_channels){0};
}

void cd_frame_fill_bytes(uint8_t *out, uint16_t flags, const cd_instance *inst,
                         const cd_frame_channels *ch)
{
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    const cd_vec3 anchor = cd_instance_anchor(inst);
    const cd_frame_content content = {
        .instance = info.id,
        .frame = info.frame,
        .time = info.time,
        .count = info.particles,
        .positions = cd_instance_local_positions(inst), /* + the anchor: world */
        .origin = {anchor.x, anchor.y, anchor.z},
        .velocities = ch != NULL ? ch->velocities : NULL,
        .normals = ch != NULL ? ch->normals : NULL,
    };
    /* Whoever prepared the form computed its channels. */
    assert(!(flags & CD_FRAME_FLAG_VELOCITIES) || content.velocities != NULL);
    assert(!(flags & CD_FRAME_FLAG_NORMALS) || content.normals != NULL);
    cd_frame_encode_content(out, flags, &content);
}

void cd_frame_buf_fill(cd_frame_buf *frame, const cd_instance *inst, const cd_frame_channels *ch)
{
    /* The buffer was sized for this instance, whose particles cannot change
     * while it is being stepped (or read). */
    assert(cd_instance_id(inst) == frame->instance &&
           cd_instance_particle_count(inst) == frame->particles);
    cd_frame_fill_bytes(frame->data, frame->flags, inst, ch);
}

cd_frame_buf *cd_frame_buf_encode(const cd_instance *inst, uint16_t flags)
{
    const uint32_t particles = cd_instance_particle_count(inst);
    cd_frame_channels ch;
    if (!cd_frame_channels_alloc(&ch, particles, flags))
        return NULL;
    cd_frame_buf *frame = cd_frame_buf_alloc(cd_instance_id(inst), particles, flags);
    if (frame != NULL) {
        cd_frame_channels_compute(&ch, inst);
        cd_frame_buf_fill(frame, inst, &ch);
    }
    cd_frame_channels_free(&ch);
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

cd_frame_buf *cd_frame_buf_alloc_shared(const cd_frame_header *named, uint64_t position)
{
    cd_frame_buf *ref = buf_new(named->instance, named->count, named->flags, CD_FRAME_SHARED_SIZE);
    if (ref != NULL)
        cd_frame_encode_shared(ref->data, named, position);
    return ref;
}
