/* The shared-memory frame ring's layout and its one writer (shm_ring.h
 * explains the seqlock); the reader beside it is the reference the tests
 * and the C client follow. No allocation, no system call: server/shm.c
 * owns the memory object. */
#include "shm_ring.h"

#include <string.h>

enum { OFF_MAGIC = 0, OFF_VERSION = 4, OFF_DATA = 8, OFF_SIZE = 16, OFF_CLAIMED = 24,
       OFF_PUBLISHED = 32, OFF_PID = 40 };

static uint64_t *counter(uint8_t *map, size_t offset)
{
    return (uint64_t *)(void *)(map + offset); /* 8-aligned: the map is page-aligned */
}

static uint64_t load_counter(const uint8_t *map, size_t offset)
{
    return __atomic_load_n((const uint64_t *)(const void *)(map + offset), __ATOMIC_SEQ_CST);
}

void cd_shm_ring_format(cd_shm_ring *ring, uint8_t *map, uint64_t size, uint32_t pid)
{
    memset(map, 0, CD_SHM_HEADER_SIZE);
    memcpy(map + OFF_MAGIC, CD_SHM_MAGIC, 4);
    const uint32_t version = CD_SHM_VERSION;
    memcpy(map + OFF_VERSION, &version, sizeof version);
    const uint64_t data = CD_SHM_HEADER_SIZE;
    memcpy(map + OFF_DATA, &data, sizeof data);
    memcpy(map + OFF_SIZE, &size, sizeof size);
    memcpy(map + OFF_PID, &pid, sizeof pid);
    *ring = (cd_shm_ring){.map = map, .size = size};
}

uint8_t *cd_shm_ring_reserve(cd_shm_ring *ring, uint32_t len, uint64_t *position)
{
    if (len == 0 || len > ring->size / CD_SHM_FRAME_SHARE)
        return NULL;
    uint64_t pos = ring->head;
    if (pos % ring->size + len > ring->size)
        pos += ring->size - pos % ring->size; /* never straddle the end */
    const uint64_t end = pos + len;
    /* Claimed before the bytes change: a reader that sees any new byte then
     * sees the claim. The exchange's acquire keeps this thread's writes
     * after it (a store alone would let them move ahead); a worker that
     * writes the room orders them with cd_shm_ring_before_writes; the
     * reader's acquire fence pairs with either. */
    (void)__atomic_exchange_n(counter(ring->map, OFF_CLAIMED), end, __ATOMIC_ACQ_REL);
    ring->head = end;
    ring->frames++;
    ring->bytes += len;
    *position = pos;
    return ring->map + CD_SHM_HEADER_SIZE + pos % ring->size;
}

void cd_shm_ring_before_writes(void)
{
    /* The claim happened before the worker's job was handed over (the
     * pool's rings): this fence makes it so for the readers too. There is
     * no fence under ThreadSanitizer (gcc refuses it there), whose server
     * has no reader to order for. */
#if !defined(__SANITIZE_THREAD__)
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

void cd_shm_ring_publish(cd_shm_ring *ring, uint64_t end)
{
    if (end <= ring->published)
        return;
    ring->published = end;
    __atomic_store_n(counter(ring->map, OFF_PUBLISHED), end, __ATOMIC_RELEASE);
}

bool cd_shm_ring_put(cd_shm_ring *ring, const uint8_t *data, uint32_t len, uint64_t *position)
{
    uint8_t *room = cd_shm_ring_reserve(ring, len, position);
    if (room == NULL)
        return false;
    memcpy(room, data, len);
    cd_shm_ring_publish(ring, *position + len);
    return true;
}

bool cd_shm_ring_read(const uint8_t *map, uint64_t position, uint32_t len, uint8_t *out)
{
    uint64_t size;
    memcpy(&size, map + OFF_SIZE, sizeof size);
    if (size == 0 || len > size || position % size + len > size ||
        load_counter(map, OFF_PUBLISHED) < position + len)
        return false; /* not a frame this ring holds (yet) */
    memcpy(out, map + CD_SHM_HEADER_SIZE + position % size, len);
    /* The copy's loads stay before the claim's. ThreadSanitizer has no
     * fences (gcc refuses them there): a sequentially consistent load
     * stands in, in that build, whose server never reads a ring. */
#if defined(__SANITIZE_THREAD__)
    const uint64_t claimed = load_counter(map, OFF_CLAIMED);
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const uint64_t claimed = __atomic_load_n(
        (const uint64_t *)(const void *)(map + OFF_CLAIMED), __ATOMIC_RELAXED);
#endif
    return claimed <= position + size;
}
