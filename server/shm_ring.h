/* The shared-memory frame ring: subscribers on clothd's host read frames
 * from one memory object instead of through their socket, which then
 * carries only 56-byte references (subscribe's "shm"; PROTOCOL.md
 * "Shared-memory frames").
 *
 * The object: a 4096-byte header page, then `size` bytes of data.
 *
 *   offset size
 *        0    4  magic 'C' 'L' 'S' 'M'
 *        4    4  u32 version (1)
 *        8    8  u64 where the data starts (4096)
 *       16    8  u64 the data's size
 *       24    8  u64 claimed: the end of the newest frame being written, or
 *                    written (a running byte count, like the positions)
 *       32    8  u64 published: the end of the furthest frame written whose
 *                    reference may have been sent
 *       40    4  u32 the server's process id
 *
 * One writer (the loop thread) appends frames at running positions; a
 * frame that would straddle the end starts again at offset 0 (the tail is
 * left unused). Before it overwrites anything the writer raises `claimed`;
 * after, `published`. A reader copies a frame at position p of length n
 * out, then reads `claimed`: the copy is whole iff claimed <= p + size
 * (nothing written since reaches back to the frame). It is a seqlock over
 * the whole ring, so the writer never waits for a reader and a stalled
 * reader costs the server nothing. Little-endian hosts only: the counters
 * are native u64s that readers load as little-endian. */
#ifndef CLOTHD_SERVER_SHM_RING_H
#define CLOTHD_SERVER_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CD_SHM_HEADER_SIZE 4096u
#define CD_SHM_VERSION 1u
#define CD_SHM_MAGIC "CLSM"
/* --shm-mb: the data's size in MiB (0: no shared memory) */
#define CD_SHM_DEFAULT_MB 64u
#define CD_SHM_MAX_MB 4096u
/* A frame larger than this share of the ring goes through the socket as
 * an ordinary frame: a reader would have too little time to copy it. */
#define CD_SHM_FRAME_SHARE 4u

typedef struct cd_shm_ring {
    uint8_t *map;      /* header page then data; NULL: not open */
    uint64_t size;     /* data bytes */
    uint64_t head;     /* the next write position (the writer's own copies: */
    uint64_t published; /* the server never reads what a client could write) */
    uint64_t frames;   /* written, for status and metrics */
    uint64_t bytes;
} cd_shm_ring;

/* Lays the header out over `map` (CD_SHM_HEADER_SIZE + size bytes) and
 * starts `ring` empty on it. */
void cd_shm_ring_format(cd_shm_ring *ring, uint8_t *map, uint64_t size, uint32_t pid);
/* Room for `len` bytes at the next position (*position), claimed: where a
 * worker may write them (after cd_shm_ring_before_writes). NULL (nothing
 * claimed) when `len` is 0 or over size / CD_SHM_FRAME_SHARE. */
uint8_t *cd_shm_ring_reserve(cd_shm_ring *ring, uint32_t len, uint64_t *position);
/* On the thread that writes reserved room, before it writes: the claim,
 * made on another thread, is ordered before the bytes for any reader. */
void cd_shm_ring_before_writes(void);
/* The bytes up to `end` are written: `published` rises to it (it never
 * falls: rooms of other batches may still be being written below it). */
void cd_shm_ring_publish(cd_shm_ring *ring, uint64_t end);
/* Reserve, copy `len` bytes in, publish; false as cd_shm_ring_reserve. */
bool cd_shm_ring_put(cd_shm_ring *ring, const uint8_t *data, uint32_t len, uint64_t *position);
/* The reader's side, for tests (each client has its own): copies the `len` bytes at
 * `position` of the ring mapped at `map` to `out`; false when the writer
 * overwrote (or was overwriting) them meanwhile. */
bool cd_shm_ring_read(const uint8_t *map, uint64_t position, uint32_t len, uint8_t *out);

#endif
