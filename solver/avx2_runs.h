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
#include <stdbool.h>
#include <stdint.h>

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

/* True when idx[0..7] are first, first + 1, ..., first + 7: a run. */
CD_AVX2_INLINE bool cd_avx2_is_run(__m256i idx, uint32_t first)
{
    const __m256i want = _mm256_add_epi32(_mm256_set1_epi32((int)first),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi32(idx, want)) == 0xFFFFFFFFu;
}

/* One particle's x y z and a zero: an 8-byte and a 4-byte load, exactly
 * its 12 bytes. (One 16-byte load would also read the next particle's x,
 * which another thread may be writing when a colour is split across
 * threads: team.c. Unused, but a data race all the same.) */
CD_AVX2_INLINE __m128 cd_avx2_load_particle(const float *p)
{
    const __m128 xy = _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)p);
    return _mm_movelh_ps(xy, _mm_load_ss(p + 2));
}

/* x, y, z of the 8 particles idx[0..7], anywhere: loaded one by one and
 * transposed 4 x 4 in each 128-bit half (cheaper than 6 gathers on the
 * EPYC we measure: bench/README.md section 7). */
CD_AVX2_INLINE void cd_avx2_load_indexed(const float *pos, const uint32_t *idx, __m256 *x,
                                         __m256 *y, __m256 *z)
{
#define CD_P(l) cd_avx2_load_particle(pos + 3 * (size_t)idx[l])
    const __m256 r0 = _mm256_insertf128_ps(_mm256_castps128_ps256(CD_P(0)), CD_P(4), 1);
    const __m256 r1 = _mm256_insertf128_ps(_mm256_castps128_ps256(CD_P(1)), CD_P(5), 1);
    const __m256 r2 = _mm256_insertf128_ps(_mm256_castps128_ps256(CD_P(2)), CD_P(6), 1);
    const __m256 r3 = _mm256_insertf128_ps(_mm256_castps128_ps256(CD_P(3)), CD_P(7), 1);
#undef CD_P
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1); /* x0 x1 y0 y1 | x4 x5 y4 y5 */
    const __m256 t1 = _mm256_unpackhi_ps(r0, r1); /* z0 z1 .. .. | z4 z5 .. .. */
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3);
    const __m256 t3 = _mm256_unpackhi_ps(r2, r3);
    *x = _mm256_shuffle_ps(t0, t2, 0x44);
    *y = _mm256_shuffle_ps(t0, t2, 0xEE);
    *z = _mm256_shuffle_ps(t1, t3, 0x44);
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
