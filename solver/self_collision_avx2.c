/* The self-collision search's candidate test (self_search.h, candidate)
 * with AVX2: 8 hash entries of a bucket at a time, inlined into the
 * search's loop (self_search.h), which this file compiles for AVX2
 * whatever the build's flags (target attribute); the search runs it only
 * on the "avx2" path (distance.c picks it from the CPU).
 *
 * The scalar test is a chain of branches that a folded sheet makes
 * unpredictable (half a bucket's particles come before i, and about half
 * of the rest are within reach): tested 8 at a time without a branch,
 * the search takes a third less time at 128 x 128 (bench/README.md,
 * section 5a). The entries are arrays (cd_hash_entries), so 8 of them are
 * plain loads; the arrays' padding lets the last block of the last bucket
 * read past it, and lanes at `end` or beyond are dropped.
 *
 * The arithmetic is the scalar test's, the same IEEE operations in the
 * same order (no fused multiply-add), and min(move scale + margin, cap)
 * gives cap for a NaN move as fminf does, so both paths keep the same
 * pairs in the same order and give bit-identical positions
 * (tests/test_solver_self.c). */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <math.h>

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

/* The candidates among the entries [e, min(end, e + CD_SELF_CHUNK)) of a
 * bucket, into out in order; returns how many. */
AVX2 __attribute__((always_inline)) static inline uint32_t
avx2_candidates(const cd_hash_entries *h, uint32_t e, uint32_t end, const cd_self_query *q,
                uint32_t *out)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i i = _mm256_set1_epi32((int32_t)q->i), cx = _mm256_set1_epi32(q->x),
                  cy = _mm256_set1_epi32(q->y), cz = _mm256_set1_epi32(q->z);
    const __m256 xi = _mm256_set1_ps(q->xi), yi = _mm256_set1_ps(q->yi), zi = _mm256_set1_ps(q->zi);
    const __m256 far = _mm256_set1_ps(q->reach_i_max * q->reach_i_max);
    const __m256 reach = _mm256_set1_ps(q->reach_i), scale = _mm256_set1_ps(q->scale),
                 margin = _mm256_set1_ps(q->margin), cap = _mm256_set1_ps(q->cap);
    __m256i joined[CD_SELF_JOINED];
    for (int k = 0; k < CD_SELF_JOINED; k++)
        joined[k] = _mm256_set1_epi32(q->joined[k]);
    const uint32_t stop = end - e > CD_SELF_CHUNK ? e + CD_SELF_CHUNK : end;
    /* Skip to the first particle after i: the bucket holds its particles in
     * order (build_hash), so about half of it is skipped with one compare
     * a block. (Only the speed depends on that order.) */
    while (e < stop) {
        const __m256i later = _mm256_and_si256(
            _mm256_cmpgt_epi32(_mm256_loadu_si256((const __m256i *)(h->particle + e)), i),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(stop - e)), lane));
        const uint32_t mask = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(later));
        if (mask != 0) {
            e += (uint32_t)__builtin_ctz(mask);
            break;
        }
        e += 8;
    }
    uint32_t n = 0;
    for (; e < stop; e += 8) {
        /* e + lane < stop, and the particle after i (indices < 2^31: signed is exact) */
        __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(stop - e)), lane);
        const __m256i particle = _mm256_loadu_si256((const __m256i *)(h->particle + e));
        keep = _mm256_and_si256(keep, _mm256_cmpgt_epi32(particle, i));
        const __m256i delta = _mm256_sub_epi32(particle, i);
        __m256i tied = _mm256_cmpeq_epi32(delta, joined[0]);
        for (int k = 1; k < CD_SELF_JOINED; k++)
            tied = _mm256_or_si256(tied, _mm256_cmpeq_epi32(delta, joined[k]));
        keep = _mm256_andnot_si256(tied, keep);
        keep = _mm256_and_si256(
            keep, _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(h->cx + e)), cx));
        keep = _mm256_and_si256(
            keep, _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(h->cy + e)), cy));
        keep = _mm256_and_si256(
            keep, _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(h->cz + e)), cz));
        const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(h->px + e), xi);
        const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(h->py + e), yi);
        const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(h->pz + e), zi);
        const __m256 d2 = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
        /* min: its second operand on NaN, cap, as fminf gives */
        const __m256 travel = _mm256_min_ps(
            _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(h->move + e), scale), margin), cap);
        const __m256 meet = _mm256_add_ps(reach, travel);
        const __m256 near = _mm256_and_ps(_mm256_cmp_ps(d2, far, _CMP_LT_OQ),
                                          _mm256_cmp_ps(d2, _mm256_mul_ps(meet, meet), _CMP_LT_OQ));
        for (uint32_t bits = (uint32_t)_mm256_movemask_ps(
                 _mm256_and_ps(near, _mm256_castsi256_ps(keep)));
             bits != 0; bits &= bits - 1)
            out[n++] = e + (uint32_t)__builtin_ctz(bits);
    }
    return n;
}

#define SELF_SEARCH_FN AVX2 cd_self_found cd_self_search_avx2
#define SELF_TEST avx2_candidates
#include "self_search.h"

#endif
