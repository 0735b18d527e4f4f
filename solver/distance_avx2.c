/* The distance kernels with AVX2: 8 constraints of one colour at a time.
 * Compiled for AVX2 whatever the build's flags (target attribute);
 * distance.c calls them only when the CPU has AVX2.
 *
 * Positions stay packed xyz (pos[3 * i]), so each block gathers x, y and z
 * of its 8 a-ends and 8 b-ends (6 gathers, indices 3a and 3b) and the
 * inverse masses (2 gathers), computes the 8 projections with exactly the
 * scalar reference's IEEE operations in its order (no fused multiply-add:
 * FMA is deliberately not enabled, so the compiler cannot contract either;
 * sqrt and division are correctly rounded in both), so the two paths give
 * bit-identical positions. Then it stores the corrected positions lane by
 * lane: no two constraints of a colour share a particle, so no lane
 * overwrites another's work. A colour's last block stores only its real
 * lanes; the padding (particle 0 to itself, inverse masses read as they
 * are) is computed and dropped.
 *
 * A lane the reference skips (both ends pinned, coincident ends, XPBD's
 * zero denominator) keeps its positions and multiplier exactly: its
 * results are blended away rather than multiplied by zero. */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

typedef struct block {
    __m256 xa, ya, za, xb, yb, zb;
    __m256 wa, wb;
    __m256 dx, dy, dz, d2;
} block;

AVX2 static inline void gather_block(block *k, const float *pos, const float *w,
                                     const uint32_t *a, const uint32_t *b)
{
    const __m256i ia = _mm256_load_si256((const __m256i *)a);
    const __m256i ib = _mm256_load_si256((const __m256i *)b);
    const __m256i ia3 = _mm256_add_epi32(ia, _mm256_add_epi32(ia, ia));
    const __m256i ib3 = _mm256_add_epi32(ib, _mm256_add_epi32(ib, ib));
    k->xa = _mm256_i32gather_ps(pos, ia3, 4);
    k->ya = _mm256_i32gather_ps(pos + 1, ia3, 4);
    k->za = _mm256_i32gather_ps(pos + 2, ia3, 4);
    k->xb = _mm256_i32gather_ps(pos, ib3, 4);
    k->yb = _mm256_i32gather_ps(pos + 1, ib3, 4);
    k->zb = _mm256_i32gather_ps(pos + 2, ib3, 4);
    k->wa = _mm256_i32gather_ps(w, ia, 4);
    k->wb = _mm256_i32gather_ps(w, ib, 4);
    k->dx = _mm256_sub_ps(k->xb, k->xa);
    k->dy = _mm256_sub_ps(k->yb, k->ya);
    k->dz = _mm256_sub_ps(k->zb, k->za);
    /* dx dx + dy dy + dz dz, left to right as the reference */
    k->d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(k->dx, k->dx), _mm256_mul_ps(k->dy, k->dy)),
                          _mm256_mul_ps(k->dz, k->dz));
}

/* pa -= dx * sa, pb += dx * sb (cd_move_pair) on the lanes of `valid`;
 * stores `lanes` lanes back into pos. */
AVX2 static inline void store_block(const block *k, float *pos, const uint32_t *a,
                                    const uint32_t *b, __m256 sa, __m256 sb, __m256 valid,
                                    uint32_t lanes)
{
    float out[6][CD_LANES] __attribute__((aligned(32)));
#define MOVE(p, d, s, op) _mm256_blendv_ps(k->p, op(k->p, _mm256_mul_ps(k->d, s)), valid)
    _mm256_store_ps(out[0], MOVE(xa, dx, sa, _mm256_sub_ps));
    _mm256_store_ps(out[1], MOVE(ya, dy, sa, _mm256_sub_ps));
    _mm256_store_ps(out[2], MOVE(za, dz, sa, _mm256_sub_ps));
    _mm256_store_ps(out[3], MOVE(xb, dx, sb, _mm256_add_ps));
    _mm256_store_ps(out[4], MOVE(yb, dy, sb, _mm256_add_ps));
    _mm256_store_ps(out[5], MOVE(zb, dz, sb, _mm256_add_ps));
#undef MOVE
    for (uint32_t l = 0; l < lanes; l++) {
        float *pa = &pos[3 * a[l]], *pb = &pos[3 * b[l]];
        pa[0] = out[0][l];
        pa[1] = out[1][l];
        pa[2] = out[2][l];
        pb[0] = out[3][l];
        pb[1] = out[4][l];
        pb[2] = out[5][l];
    }
}

AVX2 void cd_solve_seed_avx2(float *restrict pos, const float *restrict w,
                             const cd_constraints *restrict c, uint32_t colour_begin,
                             uint32_t colour_end, float k)
{
    const __m256 vk = _mm256_set1_ps(k);
    const __m256 eps = _mm256_set1_ps(1e-20f);
    const __m256 zero = _mm256_setzero_ps();
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (uint32_t col = colour_begin; col < colour_end; col++) {
        const uint32_t begin = c->colours[col].begin, end = begin + c->colours[col].count;
        for (uint32_t i = begin; i < end; i += CD_LANES) {
            block q;
            gather_block(&q, pos, w, c->a + i, c->b + i);
            const __m256 wsum = _mm256_add_ps(q.wa, q.wb);
            const __m256 valid = _mm256_and_ps(_mm256_cmp_ps(q.d2, eps, _CMP_GT_OQ),
                                               _mm256_cmp_ps(wsum, zero, _CMP_NEQ_OQ));
            const __m256 d = _mm256_sqrt_ps(q.d2);
            /* s = (d - rest) / d * k / wsum; the reference moves by -s w
             * (an exact sign flip: xor, not 0 - x, which loses -0). */
            const __m256 rest = _mm256_load_ps(c->rest + i);
            const __m256 s = _mm256_div_ps(
                _mm256_mul_ps(_mm256_div_ps(_mm256_sub_ps(d, rest), d), vk), wsum);
            const __m256 minus_s = _mm256_xor_ps(s, sign);
            store_block(&q, pos, c->a + i, c->b + i, _mm256_mul_ps(minus_s, q.wa),
                        _mm256_mul_ps(minus_s, q.wb), valid,
                        end - i < CD_LANES ? end - i : CD_LANES);
        }
    }
}

AVX2 void cd_solve_xpbd_avx2(float *restrict pos, const float *restrict w,
                             cd_constraints *restrict c, uint32_t colour_begin,
                             uint32_t colour_end, float alpha_tilde)
{
    const __m256 alpha = _mm256_set1_ps(alpha_tilde);
    const __m256 eps = _mm256_set1_ps(1e-20f);
    const __m256 zero = _mm256_setzero_ps();
    for (uint32_t col = colour_begin; col < colour_end; col++) {
        const uint32_t begin = c->colours[col].begin, end = begin + c->colours[col].count;
        for (uint32_t i = begin; i < end; i += CD_LANES) {
            block q;
            gather_block(&q, pos, w, c->a + i, c->b + i);
            const __m256 denom = _mm256_add_ps(_mm256_add_ps(q.wa, q.wb), alpha);
            const __m256 valid = _mm256_and_ps(_mm256_cmp_ps(q.d2, eps, _CMP_GT_OQ),
                                               _mm256_cmp_ps(denom, zero, _CMP_NEQ_OQ));
            const __m256 d = _mm256_sqrt_ps(q.d2);
            const __m256 lambda = _mm256_load_ps(c->lambda + i);
            /* dl = (rest - d - alpha~ lambda) / denom */
            const __m256 num = _mm256_sub_ps(_mm256_sub_ps(_mm256_load_ps(c->rest + i), d),
                                             _mm256_mul_ps(alpha, lambda));
            const __m256 dl = _mm256_div_ps(num, denom);
            _mm256_store_ps(c->lambda + i,
                            _mm256_blendv_ps(lambda, _mm256_add_ps(lambda, dl), valid));
            const __m256 s = _mm256_div_ps(dl, d);
            /* The reference: pa -= dx s wa, pb += dx s wb. */
            store_block(&q, pos, c->a + i, c->b + i, _mm256_mul_ps(s, q.wa),
                        _mm256_mul_ps(s, q.wb), valid, end - i < CD_LANES ? end - i : CD_LANES);
        }
    }
}

#endif
