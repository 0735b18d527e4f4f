/* Compensated Verlet integration (integrate.c) with AVX2: 8 particles at a
 * time. Compiled for AVX2 whatever the build's flags (target attribute);
 * integrate.c calls it only on the "avx2" path (distance.c picks it from
 * the CPU).
 *
 * Positions, history and residual are packed xyz, so 8 particles are 24
 * consecutive floats: three plain 8-float loads of each array, no
 * shuffles, since every coordinate takes the same operations. Only the
 * acceleration differs by axis (its x y z pattern repeats every 3 floats,
 * so the three vectors of a block always see the same three patterns), and
 * the skip of a particle of inverse mass 0 (pinned, kinematic: moved by
 * its pin or skin) is a per-particle mask spread over its 3 floats with a
 * lane permutation. Skipped lanes keep their values exactly (blends).
 *
 * The arithmetic is the scalar reference's, the same IEEE operations in
 * the same order (no fused multiply-add: FMA is not enabled, so nothing is
 * contracted), so the two paths give bit-identical positions
 * (tests/test_solver_simd.c). Moves XPBD's small-steps case from 14.5% of
 * a step in the scalar loop (perf, bench_clothd smallsteps 64 8 1). */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))


AVX2 uint32_t cd_integrate_avx2(float *pos, float *prev, float *residual, const float *inv_mass,
                           uint32_t begin, uint32_t end, float keep, const float accel[3])
{
    /* Float j of a block belongs to particle j / 3 and axis j % 3. */
    const __m256 a0 = _mm256_setr_ps(accel[0], accel[1], accel[2], accel[0], accel[1], accel[2],
                                     accel[0], accel[1]);
    const __m256 a1 = _mm256_setr_ps(accel[2], accel[0], accel[1], accel[2], accel[0], accel[1],
                                     accel[2], accel[0]);
    const __m256 a2 = _mm256_setr_ps(accel[1], accel[2], accel[0], accel[1], accel[2], accel[0],
                                     accel[1], accel[2]);
    const __m256i spread0 = _mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2);
    const __m256i spread1 = _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5);
    const __m256i spread2 = _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7);
    const __m256 k = _mm256_set1_ps(keep);
    const __m256 zero = _mm256_setzero_ps();
    uint32_t i = begin;
    for (; i + 8 <= end; i += 8) {
        /* All ones where the particle moves (inverse mass not 0). */
        const __m256 moves = _mm256_cmp_ps(_mm256_loadu_ps(inv_mass + i), zero, _CMP_NEQ_UQ);
        if (_mm256_movemask_ps(moves) == 0)
            continue;
        const __m256i m = _mm256_castps_si256(moves);
        const __m256 masks[3] = {_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(m, spread0)),
                                 _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(m, spread1)),
                                 _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(m, spread2))};
        const __m256 accels[3] = {a0, a1, a2};
        for (int v = 0; v < 3; v++) {
            float *p = pos + 3 * (size_t)i + 8 * v, *q = prev + 3 * (size_t)i + 8 * v,
                  *c = residual + 3 * (size_t)i + 8 * v;
            const __m256 x = _mm256_loadu_ps(p), before = _mm256_loadu_ps(q),
                         carry = _mm256_loadu_ps(c);
            /* move = ((x - q) + c) * keep + a; next = x + move */
            const __m256 move = _mm256_add_ps(
                _mm256_mul_ps(_mm256_add_ps(_mm256_sub_ps(x, before), carry), k), accels[v]);
            const __m256 next = _mm256_add_ps(x, move);
            /* Two-sum: next + lost == x + move exactly. */
            const __m256 moved = _mm256_sub_ps(next, x);
            const __m256 lost = _mm256_add_ps(_mm256_sub_ps(x, _mm256_sub_ps(next, moved)),
                                              _mm256_sub_ps(move, moved));
            _mm256_storeu_ps(p, _mm256_blendv_ps(x, next, masks[v]));
            _mm256_storeu_ps(q, _mm256_blendv_ps(before, x, masks[v]));
            _mm256_storeu_ps(c, _mm256_blendv_ps(carry, lost, masks[v]));
        }
    }
    return i;
}

#endif
