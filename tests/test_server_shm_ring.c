/* The shared-memory frame ring's writer and reference reader
 * (server/shm_ring.c; PROTOCOL.md "Shared-memory frames"): positions,
 * the wrap (a frame never straddles the end), frames too large, and the
 * seqlock: a read is accepted only when nothing overwrote it, checked by a
 * reader thread racing the writer. Run under ASan by unit_tests_san. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../server/shm_ring.h"

#define SIZE 4096u

static uint8_t *new_map(void)
{
    uint8_t *map = aligned_alloc(4096, CD_SHM_HEADER_SIZE + SIZE);
    cr_assert_not_null(map);
    return map;
}

static uint64_t header_u64(const uint8_t *map, size_t offset)
{
    uint64_t v;
    memcpy(&v, map + offset, sizeof v);
    return v;
}

Test(server_shm_ring, the_header_should_say_what_the_protocol_says)
{
    uint8_t *map = new_map();
    cd_shm_ring ring;
    cd_shm_ring_format(&ring, map, SIZE, 4242);
    cr_assert_eq(memcmp(map, "CLSM", 4), 0);
    uint32_t version, pid;
    memcpy(&version, map + 4, 4);
    memcpy(&pid, map + 40, 4);
    cr_assert_eq(version, 1u);
    cr_assert_eq(header_u64(map, 8), 4096u, "data offset");
    cr_assert_eq(header_u64(map, 16), SIZE);
    cr_assert_eq(header_u64(map, 24), 0u, "claimed");
    cr_assert_eq(header_u64(map, 32), 0u, "published");
    cr_assert_eq(pid, 4242u);
    free(map);
}

Test(server_shm_ring, frames_should_never_straddle_the_end_and_old_ones_should_read_as_overwritten)
{
    uint8_t *map = new_map();
    cd_shm_ring ring;
    cd_shm_ring_format(&ring, map, SIZE, 1);
    uint8_t frame[1000], out[1000];
    uint64_t pos[6];
    for (int i = 0; i < 6; i++) {
        memset(frame, 'a' + i, sizeof frame);
        cr_assert(cd_shm_ring_put(&ring, frame, sizeof frame, &pos[i]));
    }
    /* 4096 holds four 1000-byte frames; the fifth starts the next lap at 4096. */
    const uint64_t expected[6] = {0, 1000, 2000, 3000, 4096, 5096};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(pos[i], expected[i], "frame %d at %llu", i, (unsigned long long)pos[i]);
    cr_assert_eq(header_u64(map, 24), 6096u, "claimed: the newest frame's end");
    cr_assert_eq(header_u64(map, 32), 6096u, "published");
    cr_assert_eq(ring.frames, 6u);
    cr_assert_eq(ring.bytes, 6000u);
    /* 0 and 1000 were overwritten by the second lap; 2000 and up are whole. */
    cr_assert_not(cd_shm_ring_read(map, pos[0], 1000, out));
    cr_assert_not(cd_shm_ring_read(map, pos[1], 1000, out));
    for (int i = 2; i < 6; i++) {
        cr_assert(cd_shm_ring_read(map, pos[i], 1000, out), "frame %d", i);
        cr_assert_eq(out[0], 'a' + i);
        cr_assert_eq(out[999], 'a' + i);
    }
    cr_assert_not(cd_shm_ring_read(map, 6096, 10, out), "not published yet");
    cr_assert_not(cd_shm_ring_read(map, 4000, 200, out), "would straddle the end");
    free(map);
}

Test(server_shm_ring, a_frame_over_a_quarter_of_the_ring_should_be_refused)
{
    uint8_t *map = new_map();
    cd_shm_ring ring;
    cd_shm_ring_format(&ring, map, SIZE, 1);
    static uint8_t frame[SIZE];
    uint64_t pos = 99;
    cr_assert(cd_shm_ring_put(&ring, frame, SIZE / 4, &pos));
    cr_assert_not(cd_shm_ring_put(&ring, frame, SIZE / 4 + 1, &pos));
    cr_assert_not(cd_shm_ring_put(&ring, frame, 0, &pos));
    cr_assert_eq(pos, 0u, "the refused ones wrote nothing");
    cr_assert_eq(header_u64(map, 24), SIZE / 4);
    free(map);
}

/* A writer thread fills frames with their sequence number, as fast as it
 * can, until the reader has seen enough; the reader reads a recent frame
 * again and again. Every accepted read must be one frame's bytes, never a
 * mix of two. Frames of 600 bytes sit 6 to a 4096-byte lap, so a frame's
 * position follows from its number. */
typedef struct race {
    cd_shm_ring ring;
    uint8_t *map;
    int stop;
    uint32_t written;
} race;

enum { FRAME = 600, PER_LAP = SIZE / FRAME };

static uint64_t position_of(uint32_t seq)
{
    return (uint64_t)(seq / PER_LAP) * SIZE + (uint64_t)(seq % PER_LAP) * FRAME;
}

static void *writer(void *arg)
{
    race *r = arg;
    uint8_t frame[FRAME];
    for (uint32_t seq = 0; !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); seq++) {
        memset(frame, seq & 0xff, sizeof frame);
        memcpy(frame, &seq, sizeof seq);
        uint64_t pos;
        cr_assert(cd_shm_ring_put(&r->ring, frame, FRAME, &pos));
        cr_assert_eq(pos, position_of(seq));
        __atomic_store_n(&r->written, seq + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

Test(server_shm_ring, a_racing_reader_should_accept_only_whole_frames, .timeout = 60)
{
    race *r = calloc(1, sizeof *r);
    r->map = new_map();
    cd_shm_ring_format(&r->ring, r->map, SIZE, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, writer, r), 0);
    uint8_t out[FRAME];
    long accepted = 0, refused = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* Until 2,000 whole and 2,000 overwritten reads, or 20 s on a loaded
     * machine (the writer may run alone for whole time slices). */
    for (now = start; (accepted < 2000 || refused < 2000) && now.tv_sec - start.tv_sec < 20;
         clock_gettime(CLOCK_MONOTONIC, &now)) {
        const uint32_t n = __atomic_load_n(&r->written, __ATOMIC_ACQUIRE);
        if (n < 2)
            continue;
        const uint32_t seq = n - 2; /* an older one: more often overwritten meanwhile */
        if (!cd_shm_ring_read(r->map, position_of(seq), FRAME, out)) {
            refused++;
            continue;
        }
        accepted++;
        uint32_t got;
        memcpy(&got, out, sizeof got);
        cr_assert_eq(got, seq, "frame %u: its own number", seq);
        for (int i = 4; i < FRAME; i++)
            if (out[i] != (uint8_t)(seq & 0xff))
                cr_assert_fail("frame %u: byte %d is %u, torn", seq, i, out[i]);
    }
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    cr_log_info("racing reads: %ld whole, %ld refused as overwritten", accepted, refused);
    cr_assert_gt(accepted, 0);
    free(r->map);
    free(r);
}

/* Rooms reserved for workers (the step's frames written in place): each
 * claims at once; published rises as their references go out, never
 * falling when an earlier room's goes out after a later one's. */
Test(server_shm_ring, reserved_rooms_should_claim_at_once_and_publish_only_upwards)
{
    uint8_t *map = new_map();
    cd_shm_ring ring;
    cd_shm_ring_format(&ring, map, SIZE, 1);
    uint64_t a, b;
    uint8_t *room_a = cd_shm_ring_reserve(&ring, 500, &a);
    uint8_t *room_b = cd_shm_ring_reserve(&ring, 700, &b);
    cr_assert_not_null(room_a);
    cr_assert_not_null(room_b);
    cr_assert_eq(a, 0u);
    cr_assert_eq(b, 500u);
    cr_assert_eq(room_b - room_a, 500);
    cr_assert_eq(header_u64(map, 24), 1200u, "both claimed before anything is written");
    cr_assert_eq(header_u64(map, 32), 0u, "nothing published yet");
    uint8_t out[700];
    cr_assert_not(cd_shm_ring_read(map, b, 700, out), "not published: not readable");
    memset(room_b, 'b', 700);
    cd_shm_ring_publish(&ring, b + 700);
    memset(room_a, 'a', 500);
    cd_shm_ring_publish(&ring, a + 500);
    cr_assert_eq(header_u64(map, 32), 1200u, "published never falls");
    cr_assert(cd_shm_ring_read(map, a, 500, out));
    cr_assert_eq(out[499], 'a');
    cr_assert(cd_shm_ring_read(map, b, 700, out));
    cr_assert_eq(out[0], 'b');
    cr_assert_null(cd_shm_ring_reserve(&ring, SIZE / 4 + 1, &a), "over a quarter of the ring");
    free(map);
}
