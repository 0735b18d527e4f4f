/* Runs of 8 consecutive particles in and out of AVX2 registers, shared by
 * the distance kernel (distance_avx2.c) and the aerodynamic one
 * (aero_avx2.c). Positions are packed xyz, so 8 particles are 24 floats:
 * 6 plain 16-byte loads or stores and a few shuffles move them, where
 * particle-by-particle moves would take 16 or more. Include only from a
 * file compiled for x86 with <immintrin.h>; every function here is built
 * for AVX2 whatever the file's own target. */
#ifndef CLOTHD_SOLVER_AVX2_RUNS_H
#define CLOTHD_SOLVER_AVX2_RUNS_H

#include <immintrin.h>

#define CD_AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

/* x, y, z of the 8 particles whose 24 floats start at p. */
CD_AVX2_INLINE void cd_avx2_load_run(const float *p, __m256 *x, __m256 *y, __m256 *z)
{
    __m256 m03 = _mm256_castps128_ps256(_mm_loadu_ps(p));     /* x0 y0 z0 x1 */
    __m256 m14 = _mm256_castps128_ps256(_mm_loadu_ps(p + 4)); /* y1 z1 x2 y2 */
    __m256 m25 = _mm256_castps128_ps256(_mm_loadu_ps(p + 8)); /* z2 x3 y3 z3 */
    m03 = _mm256_insertf128_ps(m03, _mm_loadu_ps(p + 12), 1); /* | x4 y4 z4 x5 */
    m14 = _mm256_insertf128_ps(m14, _mm_loadu_ps(p + 16), 1); /* | y5 z5 x6 y6 */
    m25 = _mm256_insertf128_ps(m25, _mm_loadu_ps(p + 20), 1); /* | z6 x7 y7 z7 */
    const __m256 xy = _mm256_shuffle_ps(m14, m25, _MM_SHUFFLE(2, 1, 3, 2)); /* x2 y2 x3 y3 */
    const __m256 yz = _mm256_shuffle_ps(m03, m14, _MM_SHUFFLE(1, 0, 2, 1)); /* y0 z0 y1 z1 */
    *x = _mm256_shuffle_ps(m03, xy, _MM_SHUFFLE(2, 0, 3, 0));
    *y = _mm256_shuffle_ps(yz, xy, _MM_SHUFFLE(3, 1, 2, 0));
    *z = _mm256_shuffle_ps(yz, m25, _MM_SHUFFLE(3, 0, 3, 1));
}

/* The inverse of cd_avx2_load_run: exactly the run's 24 floats. */
CD_AVX2_INLINE void cd_avx2_store_run(float *p, __m256 x, __m256 y, __m256 z)
{
    const __m256 rxy = _mm256_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)); /* x0 x2 y0 y2 */
    const __m256 ryz = _mm256_shuffle_ps(y, z, _MM_SHUFFLE(3, 1, 3, 1)); /* y1 y3 z1 z3 */
    const __m256 rzx = _mm256_shuffle_ps(z, x, _MM_SHUFFLE(3, 1, 2, 0)); /* z0 z2 x1 x3 */
    const __m256 r03 = _mm256_shuffle_ps(rxy, rzx, _MM_SHUFFLE(2, 0, 2, 0)); /* x0 y0 z0 x1 */
    const __m256 r14 = _mm256_shuffle_ps(ryz, rxy, _MM_SHUFFLE(3, 1, 2, 0)); /* y1 z1 x2 y2 */
    const __m256 r25 = _mm256_shuffle_ps(rzx, ryz, _MM_SHUFFLE(3, 1, 3, 1)); /* z2 x3 y3 z3 */
    _mm_storeu_ps(p, _mm256_castps256_ps128(r03));
    _mm_storeu_ps(p + 4, _mm256_castps256_ps128(r14));
    _mm_storeu_ps(p + 8, _mm256_castps256_ps128(r25));
    _mm_storeu_ps(p + 12, _mm256_extractf128_ps(r03, 1));
    _mm_storeu_ps(p + 16, _mm256_extractf128_ps(r14, 1));
    _mm_storeu_ps(p + 20, _mm256_extractf128_ps(r25, 1));
}

#endif
