/* The tethers' pass (pins.c, tether_block) with AVX2: 8 particles at a
 * time. Compiled for AVX2 whatever the build's flags (target attribute);
 * pins.c calls it only on the "avx2" path (distance.c picks it from the
 * CPU).
 *
 * A tether rarely acts (a particle farther from its pin than the tether
 * allows), so the pass is mostly a check: a block loads its 8 particles as
 * a run, their anchors one by one, compares the squared distances with the
 * squared lengths and goes on when none is over. The few particles pulled
 * back are stored one by one (12 bytes each): a whole run's store would
 * rewrite the block's pinned particles, which another thread's block may
 * be reading as its anchors at the same moment.
 *
 * The arithmetic is the scalar reference's, the same IEEE operations in
 * the same order (no fused multiply-add; division and square root are
 * correctly rounded in both), so the two paths give bit-identical
 * positions (tests/test_solver_simd.c). */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#include "avx2_runs.h"

#define AVX2 __attribute__((target("avx2")))

AVX2 uint32_t cd_tethers_avx2(float *pos, const uint32_t *anchor, const float *length,
                              uint32_t begin, uint32_t end)
{
    const __m256i none = _mm256_set1_epi32((int)CD_NO_ANCHOR);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    uint32_t i = begin;
    for (; i + 8 <= end; i += 8) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(anchor + i));
        const __m256i untethered = _mm256_cmpeq_epi32(a, none);
        if ((uint32_t)_mm256_movemask_epi8(untethered) == 0xFFFFFFFFu)
            continue;
        /* An untethered lane reads its own particle (in this block). */
        const __m256i self = _mm256_add_epi32(_mm256_set1_epi32((int)i), lane);
        uint32_t idx[8] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)idx, _mm256_blendv_epi8(a, self, untethered));
        __m256 px, py, pz, qx, qy, qz;
        cd_avx2_load_run(pos + 3 * (size_t)i, &px, &py, &pz);
        if (cd_avx2_is_run(a, idx[0])) /* a row under a pinned row: the pins in a row too */
            cd_avx2_load_run(pos + 3 * (size_t)idx[0], &qx, &qy, &qz);
        else
            cd_avx2_load_indexed(pos, idx, &qx, &qy, &qz);
        const __m256 dx = _mm256_sub_ps(px, qx), dy = _mm256_sub_ps(py, qy),
                     dz = _mm256_sub_ps(pz, qz);
        const __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                        _mm256_mul_ps(dz, dz));
        const __m256 limit = _mm256_loadu_ps(length + i);
        /* Over: not d2 <= limit^2 (a NaN distance is over, as in the
         * reference), and tethered. */
        const __m256 over = _mm256_andnot_ps(
            _mm256_castsi256_ps(untethered),
            _mm256_cmp_ps(d2, _mm256_mul_ps(limit, limit), _CMP_NLE_UQ));
        const int lanes = _mm256_movemask_ps(over);
        if (lanes == 0)
            continue;
        const __m256 s = _mm256_div_ps(limit, _mm256_sqrt_ps(d2)); /* only the free end moves */
        float nx[8], ny[8], nz[8];
        _mm256_storeu_ps(nx, _mm256_add_ps(qx, _mm256_mul_ps(dx, s)));
        _mm256_storeu_ps(ny, _mm256_add_ps(qy, _mm256_mul_ps(dy, s)));
        _mm256_storeu_ps(nz, _mm256_add_ps(qz, _mm256_mul_ps(dz, s)));
        for (int l = 0; l < 8; l++)
            if (lanes & (1 << l)) {
                float *p = &pos[3 * (size_t)(i + (uint32_t)l)];
                p[0] = nx[l];
                p[1] = ny[l];
                p[2] = nz[l];
            }
    }
    return i;
}

#endif
