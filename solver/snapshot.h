/* clothd solver — snapshots: a world's instances to bytes and back.
 *
 * A snapshot holds every field a step reads, so that a loaded instance's
 * next steps are bit-identical to the original's (same build, same SIMD
 * path). The bytes are the file format of PROTOCOL.md ("Snapshot files"):
 * little-endian, a preamble with a magic and a version, then sections, each
 * with a tag, a version, a length and a CRC-32C. This module does no I/O:
 * the server writes the bytes to a file (server/snapshot_file.c).
 *
 * Threading: like every cd_world call, from the world's thread, while no
 * step runs on the instances read or replaced. */
#ifndef CLOTHD_SOLVER_SNAPSHOT_H
#define CLOTHD_SOLVER_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "solver.h"

#define CD_SNAPSHOT_VERSION 1u

/* CRC-32C (Castagnoli) of `len` bytes, continuing from `crc` (0 to start):
 * cd_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t cd_crc32c(uint32_t crc, const void *data, size_t len);
/* The same without the CPU's instruction (tests compare the two). */
uint32_t cd_crc32c_portable(uint32_t crc, const void *data, size_t len);

/* What a snapshot holds (its HEAD section). */
typedef struct cd_snapshot_info {
    uint32_t instances;
    uint64_t particles;
    char simd[16]; /* the SIMD path it was saved on ("avx2", "scalar") */
} cd_snapshot_info;

/* The host's bytes for one instance (the server keeps its scene and
 * lifetime there): saved and loaded with the instance, never read by the
 * solver. len 0: none (the field is then not written at all). */
#define CD_SNAPSHOT_TAG_MAX 128u
typedef struct cd_snapshot_tag {
    uint32_t len;
    uint8_t bytes[CD_SNAPSHOT_TAG_MAX];
} cd_snapshot_tag;

/* Serialises the instances `ids` (count of them; every one live) and the
 * world's slot table and global wind into a malloc'd buffer (*out, *len;
 * the caller frees it with free()). CD_E_INTERNAL when out of memory,
 * CD_E_NOT_FOUND for an id that is not live (*fault names it). */
cd_status cd_snapshot_save(const cd_world *world, const cd_id *ids, uint32_t count,
                           uint8_t **out, size_t *len, cd_field_fault *fault);
/* The same with a tag per instance (`tags[i]` goes with `ids[i]`; NULL:
 * none), each written as the INST field "tag". */
cd_status cd_snapshot_save_tagged(const cd_world *world, const cd_id *ids, uint32_t count,
                                  const cd_snapshot_tag *tags, uint8_t **out, size_t *len,
                                  cd_field_fault *fault);

/* Checks a snapshot whole (preamble, every section's framing, checksum,
 * version and fields, every instance rebuilt) without touching any world;
 * fills *info (may be NULL). CD_E_INVALID_ARGUMENT with *fault naming the
 * section ("section 3 (INST)") and what is wrong. */
cd_status cd_snapshot_check(const uint8_t *data, size_t len, cd_snapshot_info *info,
                            cd_field_fault *fault);

/* Where a load puts the instances. */
typedef enum cd_snapshot_mode {
    /* Under their saved ids, which must all be free (CD_E_INVALID_ARGUMENT,
     * fault "instances"); the global wind is left alone. */
    CD_SNAPSHOT_ADD,
    /* Every live instance is destroyed first, and the world's slot table
     * (generations, free-slot order) and global wind become the saved
     * ones, so ids handed out afterwards are those the saved world would
     * have handed out. */
    CD_SNAPSHOT_REPLACE,
    /* Under new ids, as create hands them out (replay: the originals may
     * still be live); the global wind is left alone. */
    CD_SNAPSHOT_NEW_IDS,
    /* Under their saved ids, each replacing the live instance of that very
     * id (a reset to a saved state: same id, every field as saved) or
     * taking its free slot; a slot that holds another instance (another
     * generation: the saved one is gone) is CD_E_INVALID_ARGUMENT, fault
     * "instances". The other live instances and the global wind are left
     * alone. */
    CD_SNAPSHOT_RESTORE,
} cd_snapshot_mode;

/* What a load did: the ids in file order (malloc'd), as saved and as
 * placed (the same but with CD_SNAPSHOT_NEW_IDS). */
typedef struct cd_snapshot_loaded {
    cd_snapshot_info info;
    cd_id *ids;
    cd_id *saved_ids;
    cd_snapshot_tag *tags; /* each instance's tag (len 0 when it had none) */
} cd_snapshot_loaded;
void cd_snapshot_loaded_free(cd_snapshot_loaded *loaded); /* NULL is fine */

/* Loads a snapshot into `world` as `mode` says. The world's limits apply
 * (CD_E_LIMIT_EXCEEDED). All or nothing: on any error the world is
 * unchanged. On success *loaded (may be NULL; free it with
 * cd_snapshot_loaded_free) says what was loaded. */
cd_status cd_snapshot_load(cd_world *world, const uint8_t *data, size_t len, cd_snapshot_mode mode,
                           cd_snapshot_loaded *loaded, cd_field_fault *fault);

#endif
