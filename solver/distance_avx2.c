/* The distance kernels with AVX2: 8 constraints of one colour at a time.
 * Compiled for AVX2 whatever the build's flags (target attribute);
 * distance.c calls them only when the CPU has AVX2.
 *
 * Positions stay packed xyz (pos[3 * i]), so each block loads its 8 a-ends
 * and 8 b-ends with one 16-byte load each and transposes them to x, y, z
 * vectors (cheaper than 6 gathers on the EPYC we measure: bench/README.md
 * section 7), gathers the inverse masses (2 gathers), and computes the 8
 * projections with exactly the scalar reference's IEEE operations in its
 * order: no fused multiply-add (FMA is deliberately not enabled, so the
 * compiler cannot contract either), and sqrt and division are correctly
 * rounded in both, so the two paths give bit-identical positions. Then it
 * transposes back and stores each corrected position (8 + 4 bytes, never
 * the next particle's x) lane by lane: no two constraints of a colour share
 * a particle, so no lane overwrites another's work. A colour's last block
 * stores only its real lanes; its padding lanes (particle 0 to itself in
 * the arrays) are computed on the block's own first ends and dropped
 * (gather_block says why).
 *
 * Two shapes skip the particle-by-particle moves. A run: 8 consecutive
 * a-ends or b-ends (a grid's vertical and diagonal links), one run load
 * and store (avx2_runs.h). A window: a block whose 16 ends are exactly 16
 * consecutive particles, as a grid row's horizontal links are (a colour of
 * structural links pairs 0-1 2-3 ..., one of bending links 0-2 1-3 4-6
 * 5-7 ...): two run loads, a shuffle that deals the particles to their
 * ends and a 64-bit lane permute that puts them in slot order, and the
 * same backwards to store. Every particle of a window is an end of exactly
 * one of the block's constraints, so the window's stores overwrite no one
 * else's work. (Before windows, those blocks were a third of a curtain's
 * and cost the most: perf, bench_clothd smallsteps 64 8 1.)
 *
 * A lane the reference skips (both ends pinned, coincident ends, XPBD's
 * zero denominator) keeps its positions and multiplier exactly: its
 * results are blended away rather than multiplied by zero. */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#include "avx2_runs.h"

#define AVX2 __attribute__((target("avx2")))

/* How a block's 16 ends lie in the window of 16 consecutive particles. */
enum window_shape {
    NO_WINDOW,
    WINDOW_PAIRS, /* a = first + 0 2 4 ... 14, b = a + 1 */
    WINDOW_QUADS, /* a = first + 0 1 4 5 8 9 12 13, b = a + 2 */
};

typedef struct block {
    __m256 xa, ya, za, xb, yb, zb;
    __m256 wa, wb;
    __m256 dx, dy, dz, d2;
    bool run_a, run_b; /* the 8 ends are consecutive particles */
    enum window_shape window;
} block;

AVX2 static inline enum window_shape window_of(__m256i ia, __m256i ib, uint32_t first)
{
    const __m256i base = _mm256_set1_epi32((int)first);
    const __m256i pairs = _mm256_add_epi32(base, _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i quads = _mm256_add_epi32(base, _mm256_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13));
    const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
    if ((uint32_t)_mm256_movemask_epi8(_mm256_and_si256(
            _mm256_cmpeq_epi32(ia, pairs), _mm256_cmpeq_epi32(ib, _mm256_add_epi32(pairs, one)))) ==
        0xFFFFFFFFu)
        return WINDOW_PAIRS;
    if ((uint32_t)_mm256_movemask_epi8(_mm256_and_si256(
            _mm256_cmpeq_epi32(ia, quads), _mm256_cmpeq_epi32(ib, _mm256_add_epi32(quads, two)))) ==
        0xFFFFFFFFu)
        return WINDOW_QUADS;
    return NO_WINDOW;
}

/* Slot order from a shuffle's (0 1 4 5 2 3 6 7) and back: 64-bit lanes
 * 0 2 1 3 (its own inverse). */
AVX2 static inline __m256 slot_order(__m256 v)
{
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

/* The a-ends and b-ends of a window from its two halves lo (particles
 * first..first + 7) and hi (first + 8..first + 15), in slot order. */
AVX2 static inline void deal(enum window_shape shape, __m256 lo, __m256 hi, __m256 *a, __m256 *b)
{
    if (shape == WINDOW_PAIRS) {
        *a = slot_order(_mm256_shuffle_ps(lo, hi, 0x88)); /* evens */
        *b = slot_order(_mm256_shuffle_ps(lo, hi, 0xDD)); /* odds */
    } else {
        *a = slot_order(_mm256_shuffle_ps(lo, hi, 0x44)); /* 0 1 of each 4 */
        *b = slot_order(_mm256_shuffle_ps(lo, hi, 0xEE)); /* 2 3 of each 4 */
    }
}

/* The inverse of deal. */
AVX2 static inline void undeal(enum window_shape shape, __m256 a, __m256 b, __m256 *lo, __m256 *hi)
{
    a = slot_order(a);
    b = slot_order(b);
    if (shape == WINDOW_PAIRS) {
        *lo = _mm256_unpacklo_ps(a, b);
        *hi = _mm256_unpackhi_ps(a, b);
    } else {
        *lo = _mm256_shuffle_ps(a, b, 0x44);
        *hi = _mm256_shuffle_ps(a, b, 0xEE);
    }
}

AVX2 static inline void load_window(block *k, const float *pos, const float *w, uint32_t first)
{
    __m256 x0, y0, z0, x1, y1, z1;
    cd_avx2_load_run(pos + 3 * (size_t)first, &x0, &y0, &z0);
    cd_avx2_load_run(pos + 3 * (size_t)(first + 8), &x1, &y1, &z1);
    deal(k->window, x0, x1, &k->xa, &k->xb);
    deal(k->window, y0, y1, &k->ya, &k->yb);
    deal(k->window, z0, z1, &k->za, &k->zb);
    deal(k->window, _mm256_loadu_ps(w + first), _mm256_loadu_ps(w + first + 8), &k->wa, &k->wb);
}

/* `lanes` < 8: a colour's last block, whose padding slots name particle 0
 * to itself. Particle 0 may be an end of this colour's constraints in
 * another thread's block (team.c), so the padding lanes read this block's
 * own first ends instead, and their distance is zeroed: inert lanes,
 * computed and dropped, that touch nothing another thread writes. */
AVX2 __attribute__((always_inline)) static inline void gather_block(block *k, const float *pos,
                                                                    const float *w,
                                                                    const uint32_t *a,
                                                                    const uint32_t *b,
                                                                    uint32_t lanes)
{
    uint32_t own_a[CD_LANES] __attribute__((aligned(32)));
    uint32_t own_b[CD_LANES] __attribute__((aligned(32)));
    if (lanes < CD_LANES) {
        for (uint32_t l = 0; l < CD_LANES; l++) {
            own_a[l] = a[l < lanes ? l : 0];
            own_b[l] = b[l < lanes ? l : 0];
        }
        a = own_a;
        b = own_b;
    }
    const __m256i ia = _mm256_load_si256((const __m256i *)a);
    const __m256i ib = _mm256_load_si256((const __m256i *)b);
    /* Decided in registers: GCC read k->run_a || k->run_b back as one
     * 16-bit load over two byte stores, which cannot be forwarded (perf put
     * 40% of the kernel's samples on the branch after it; without it the
     * divider is where they wait, and a step is 2% faster). */
    const bool run_a = cd_avx2_is_run(ia, a[0]), run_b = cd_avx2_is_run(ib, b[0]);
    const enum window_shape window = run_a || run_b ? NO_WINDOW : window_of(ia, ib, a[0]);
    k->run_a = run_a;
    k->run_b = run_b;
    k->window = window;
    if (window != NO_WINDOW) {
        load_window(k, pos, w, a[0]);
    } else if (run_a) {
        cd_avx2_load_run(pos + 3 * (size_t)a[0], &k->xa, &k->ya, &k->za);
        k->wa = _mm256_loadu_ps(w + a[0]);
    } else {
        cd_avx2_load_indexed(pos, a, &k->xa, &k->ya, &k->za);
        k->wa = _mm256_i32gather_ps(w, ia, 4);
    }
    if (window != NO_WINDOW) {
        /* loaded with the a-ends */
    } else if (run_b) {
        cd_avx2_load_run(pos + 3 * (size_t)b[0], &k->xb, &k->yb, &k->zb);
        k->wb = _mm256_loadu_ps(w + b[0]);
    } else {
        cd_avx2_load_indexed(pos, b, &k->xb, &k->yb, &k->zb);
        k->wb = _mm256_i32gather_ps(w, ib, 4);
    }
    k->dx = _mm256_sub_ps(k->xb, k->xa);
    k->dy = _mm256_sub_ps(k->yb, k->ya);
    k->dz = _mm256_sub_ps(k->zb, k->za);
    /* dx dx + dy dy + dz dz, left to right as the reference */
    k->d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(k->dx, k->dx), _mm256_mul_ps(k->dy, k->dy)),
                          _mm256_mul_ps(k->dz, k->dz));
    if (lanes < CD_LANES) { /* padding: no distance, so no projection (valid is false) */
        const __m256i real = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lanes),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        k->d2 = _mm256_and_ps(k->d2, _mm256_castsi256_ps(real));
    }
}

/* One particle: x y from the low half, z from lane 2 (12 bytes written,
 * never the neighbour's x: another lane may own it). */
AVX2 static inline void store_xyz(float *p, __m128 v)
{
    _mm_storel_pi((__m64 *)p, v);
    _mm_store_ss(p + 2, _mm_movehl_ps(v, v));
}

/* Transposes x, y, z of 8 particles back to one x y z . vector each. */
AVX2 static inline void transpose_out(__m256 x, __m256 y, __m256 z, __m128 out[CD_LANES])
{
    const __m256 t0 = _mm256_unpacklo_ps(x, y); /* x0 y0 x1 y1 | x4 y4 x5 y5 */
    const __m256 t1 = _mm256_unpackhi_ps(x, y); /* x2 y2 x3 y3 | x6 y6 x7 y7 */
    const __m256 t2 = _mm256_unpacklo_ps(z, z); /* z0 z0 z1 z1 | z4 z4 z5 z5 */
    const __m256 t3 = _mm256_unpackhi_ps(z, z);
    const __m256 r0 = _mm256_shuffle_ps(t0, t2, 0x44); /* x0 y0 z0 z0 | x4 y4 z4 z4 */
    const __m256 r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 r2 = _mm256_shuffle_ps(t1, t3, 0x44);
    const __m256 r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    out[0] = _mm256_castps256_ps128(r0);
    out[1] = _mm256_castps256_ps128(r1);
    out[2] = _mm256_castps256_ps128(r2);
    out[3] = _mm256_castps256_ps128(r3);
    out[4] = _mm256_extractf128_ps(r0, 1);
    out[5] = _mm256_extractf128_ps(r1, 1);
    out[6] = _mm256_extractf128_ps(r2, 1);
    out[7] = _mm256_extractf128_ps(r3, 1);
}

/* pa -= dx * sa, pb += dx * sb (cd_move_pair) on the lanes of `valid`;
 * stores `lanes` lanes back into pos. */
/* Stores 8 particles (or the first `lanes`) one by one. */
AVX2 static inline void store_lanes(float *pos, const uint32_t *idx, __m256 x, __m256 y,
                                    __m256 z, uint32_t lanes)
{
    __m128 v[CD_LANES];
    transpose_out(x, y, z, v);
    if (lanes == CD_LANES) {
        for (uint32_t l = 0; l < CD_LANES; l++)
            store_xyz(&pos[3 * (size_t)idx[l]], v[l]);
        return;
    }
    for (uint32_t l = 0; l < lanes; l++)
        store_xyz(&pos[3 * (size_t)idx[l]], v[l]);
}

AVX2 __attribute__((always_inline)) static inline void store_block(const block *k, float *pos, const uint32_t *a,
                                    const uint32_t *b, __m256 sa, __m256 sb, __m256 valid,
                                    uint32_t lanes)
{
#define MOVE(p, d, s, op) _mm256_blendv_ps(k->p, op(k->p, _mm256_mul_ps(k->d, s)), valid)
    const __m256 xa = MOVE(xa, dx, sa, _mm256_sub_ps), ya = MOVE(ya, dy, sa, _mm256_sub_ps),
                 za = MOVE(za, dz, sa, _mm256_sub_ps);
    const __m256 xb = MOVE(xb, dx, sb, _mm256_add_ps), yb = MOVE(yb, dy, sb, _mm256_add_ps),
                 zb = MOVE(zb, dz, sb, _mm256_add_ps);
#undef MOVE
    if (k->window != NO_WINDOW) { /* 8 real lanes: padding makes no window */
        __m256 x0, y0, z0, x1, y1, z1;
        undeal(k->window, xa, xb, &x0, &x1);
        undeal(k->window, ya, yb, &y0, &y1);
        undeal(k->window, za, zb, &z0, &z1);
        cd_avx2_store_run(pos + 3 * (size_t)a[0], x0, y0, z0);
        cd_avx2_store_run(pos + 3 * (size_t)(a[0] + 8), x1, y1, z1);
        return;
    }
    /* A run is never padded (padding is particle 0 after a real lane), so
     * its block has 8 real lanes and owns all 24 floats it stores. */
    if (k->run_a)
        cd_avx2_store_run(pos + 3 * (size_t)a[0], xa, ya, za);
    else
        store_lanes(pos, a, xa, ya, za, lanes);
    if (k->run_b)
        cd_avx2_store_run(pos + 3 * (size_t)b[0], xb, yb, zb);
    else
        store_lanes(pos, b, xb, yb, zb, lanes);
}

/* The projection of one block: the corrections' scales (pa -= dx sa,
 * pb += dx sb) and which lanes the reference would project. */
typedef struct scales {
    __m256 sa, sb, valid;
} scales;

AVX2 static inline scales seed_scales(const block *q, const float *rest, __m256 vk)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256 wsum = _mm256_add_ps(q->wa, q->wb);
    const __m256 valid = _mm256_and_ps(_mm256_cmp_ps(q->d2, _mm256_set1_ps(1e-20f), _CMP_GT_OQ),
                                       _mm256_cmp_ps(wsum, zero, _CMP_NEQ_OQ));
    const __m256 d = _mm256_sqrt_ps(q->d2);
    /* s = (d - rest) / d * k / wsum; the reference moves by -s w (an exact
     * sign flip: xor, not 0 - x, which loses -0). */
    const __m256 s = _mm256_div_ps(
        _mm256_mul_ps(_mm256_div_ps(_mm256_sub_ps(d, _mm256_load_ps(rest)), d), vk), wsum);
    const __m256 minus_s = _mm256_xor_ps(s, _mm256_set1_ps(-0.0f));
    return (scales){_mm256_mul_ps(minus_s, q->wa), _mm256_mul_ps(minus_s, q->wb), valid};
}

AVX2 static inline scales xpbd_scales(const block *q, const float *rest, float *lambda_io,
                                      __m256 alpha)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256 denom = _mm256_add_ps(_mm256_add_ps(q->wa, q->wb), alpha);
    const __m256 valid = _mm256_and_ps(_mm256_cmp_ps(q->d2, _mm256_set1_ps(1e-20f), _CMP_GT_OQ),
                                       _mm256_cmp_ps(denom, zero, _CMP_NEQ_OQ));
    const __m256 d = _mm256_sqrt_ps(q->d2);
    const __m256 lambda = _mm256_load_ps(lambda_io);
    /* dl = (rest - d - alpha~ lambda) / denom */
    const __m256 num = _mm256_sub_ps(_mm256_sub_ps(_mm256_load_ps(rest), d),
                                     _mm256_mul_ps(alpha, lambda));
    const __m256 dl = _mm256_div_ps(num, denom);
    _mm256_store_ps(lambda_io, _mm256_blendv_ps(lambda, _mm256_add_ps(lambda, dl), valid));
    const __m256 s = _mm256_div_ps(dl, d);
    /* The reference: pa -= dx s wa, pb += dx s wb. */
    return (scales){_mm256_mul_ps(s, q->wa), _mm256_mul_ps(s, q->wb), valid};
}

/* Blocks go two at a time: each block's sqrt and two divisions form a
 * chain of ~45 cycles, longer than the rest of its work, and a block is
 * ~200 instructions, so the CPU's window does not reach the next block's
 * chain on its own; written side by side, the two chains overlap. The two
 * blocks are of one colour, so no particle is in both: loading the second
 * before storing the first changes nothing. */
#define CD_SOLVE_RANGE(SCALES_OF)                                                             \
    uint32_t i = begin;                                                                       \
    for (; i + CD_LANES < end; i += 2 * CD_LANES) {                                           \
        const uint32_t j = i + CD_LANES;                                                      \
        block q0, q1;                                                                         \
        const uint32_t lanes1 = end - j < CD_LANES ? end - j : CD_LANES;                      \
        gather_block(&q0, pos, w, c->a + i, c->b + i, CD_LANES);                              \
        gather_block(&q1, pos, w, c->a + j, c->b + j, lanes1);                                \
        const scales s0 = SCALES_OF(q0, i), s1 = SCALES_OF(q1, j);                            \
        store_block(&q0, pos, c->a + i, c->b + i, s0.sa, s0.sb, s0.valid, CD_LANES);          \
        store_block(&q1, pos, c->a + j, c->b + j, s1.sa, s1.sb, s1.valid, lanes1);            \
    }                                                                                         \
    if (i < end) {                                                                            \
        block q;                                                                              \
        gather_block(&q, pos, w, c->a + i, c->b + i, end - i);                                \
        const scales s = SCALES_OF(q, i);                                                     \
        store_block(&q, pos, c->a + i, c->b + i, s.sa, s.sb, s.valid, end - i);               \
    }

AVX2 void cd_solve_seed_avx2(float *restrict pos, const float *restrict w,
                             const cd_constraints *restrict c, uint32_t begin, uint32_t end,
                             float k)
{
    const __m256 vk = _mm256_set1_ps(k);
#define SEED(q, i) seed_scales(&(q), c->rest + (i), vk)
    CD_SOLVE_RANGE(SEED)
#undef SEED
}

AVX2 void cd_solve_xpbd_avx2(float *restrict pos, const float *restrict w,
                             cd_constraints *restrict c, uint32_t begin, uint32_t end,
                             float alpha_tilde)
{
    const __m256 alpha = _mm256_set1_ps(alpha_tilde);
#define XPBD(q, i) xpbd_scales(&(q), c->rest + (i), c->lambda + (i), alpha)
    CD_SOLVE_RANGE(XPBD)
#undef XPBD
}

#endif
