/* The distance kernels with AVX-512: 16 constraints of one colour at a
 * time. Compiled for AVX-512 (F, VL, BW, DQ) whatever the build's flags
 * (target attribute); distance.c calls them only when the CPU has it.
 *
 * The same contract as the AVX2 kernels (distance_avx2.c, whose head
 * comment says why each rule holds): positions stay packed xyz, the 16
 * projections are exactly the scalar reference's IEEE operations in its
 * order, so the paths give bit-identical positions; no fused multiply-add
 * even though AVX-512F has one: GCC contracts a * b + c only when asked
 * (-ffp-contract=fast), and the build is ISO C (-std=c11), where it is off;
 * the bit-identical tests would show a contraction. No store writes a byte
 * of a particle the block does not own, and a lane the reference skips
 * keeps its positions and multiplier exactly.
 *
 * What AVX-512 changes is the bookkeeping. A block of 16 slots carries a
 * mask of its live lanes: the range's last block may be shorter (a colour
 * of 8 x 3 slots ends on 8 live lanes), and a masked-off lane neither
 * loads nor stores anything, its index included. The lanes the reference
 * projects (`valid`) are a mask too, so the moves are masked arithmetic:
 * a skipped lane keeps its input exactly.
 *
 * Shapes, as with AVX2, with the 16 slots as two halves of 8:
 * - runs: each half's 8 a-ends (or b-ends) are 8 consecutive particles,
 *   the halves' firsts anywhere (a grid's vertical and diagonal links).
 *   The halves' 2 x 24 floats are loaded into 3 registers as if they were
 *   one run of 16 particles (one 64-byte and four 32-byte loads) and dealt
 *   to x, y, z with 2 two-register permutes each (vpermt2ps); the same
 *   backwards to store.
 * - a window: each half's 16 ends are 16 consecutive particles, pairs
 *   0-1 2-3 ... or quads 0-2 1-3 4-6 5-7 ... in both halves (a grid row's
 *   structural and bending links). Each half's 16 particles are one run
 *   load (3 registers, 6 permutes) and one permute per coordinate and end
 *   deals them to slot order. Every particle of a window is an end of one
 *   of the block's constraints, so its stores overwrite no one else's.
 * - anything else (a row's end inside the block, a range's last block,
 *   a mesh's scattered ends): particle by particle, a masked load or store
 *   of exactly its 12 bytes each and 4 x 4 transposes (faster here than
 *   3 gathers and 3 scatters per end: a 64 x 64 curtain's step went from
 *   375 to 337 us with the stores, from 322 to 312 with the loads).
 * A block where only one half has a shape goes particle by particle
 * too: taking the shaped half's loads (merged by mask, in line or out of
 * line) measured 13-20% slower on the curtain than not. Blocks go two at
 * a time (three measured no faster). */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX512_INLINE AVX512 __attribute__((always_inline)) static inline

#define WIDE 16u /* slots per block */

enum window_shape {
    NO_WINDOW,
    WINDOW_PAIRS, /* per half: a = first + 0 2 4 ... 14, b = a + 1 */
    WINDOW_QUADS, /* per half: a = first + 0 1 4 5 8 9 12 13, b = a + 2 */
};

typedef struct block {
    __m512 xa, ya, za, xb, yb, zb;
    __m512 wa, wb;
    __m512 dx, dy, dz, d2;
    __mmask16 live; /* the lanes in [begin, end) */
    uint32_t lanes; /* how many: the first ones */
    bool run_a, run_b;
    enum window_shape window;
} block;

/* ---- runs of 16 particles (48 floats in 3 registers) -------------------- */

/* x, y, z of the 16 particles whose 48 floats are m0 m1 m2: coordinate c
 * of particle j is float 3 j + c; the first permute takes what lies in
 * m0 m1 (floats 0..31), the second the rest from m2. */
AVX512_INLINE void deal_run(__m512 m0, __m512 m1, __m512 m2, __m512 *x, __m512 *y, __m512 *z)
{
    const __m512i x01 = _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0, 0, 0, 0, 0);
    const __m512i x2 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 20, 23, 26, 29);
    const __m512i y01 = _mm512_setr_epi32(1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 0, 0, 0, 0, 0);
    const __m512i y2 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 18, 21, 24, 27, 30);
    const __m512i z01 = _mm512_setr_epi32(2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0, 0);
    const __m512i z2 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 19, 22, 25, 28, 31);
    *x = _mm512_permutex2var_ps(_mm512_permutex2var_ps(m0, x01, m1), x2, m2);
    *y = _mm512_permutex2var_ps(_mm512_permutex2var_ps(m0, y01, m1), y2, m2);
    *z = _mm512_permutex2var_ps(_mm512_permutex2var_ps(m0, z01, m1), z2, m2);
}

/* The inverse of deal_run: float e of m_k is coordinate (16 k + e) % 3 of
 * particle (16 k + e) / 3, taken from x or y first, then from z. */
AVX512_INLINE void undeal_run(__m512 x, __m512 y, __m512 z, __m512 *m0, __m512 *m1, __m512 *m2)
{
    const __m512i m0xy = _mm512_setr_epi32(0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5);
    const __m512i m0z = _mm512_setr_epi32(0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15);
    const __m512i m1xy = _mm512_setr_epi32(21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26);
    const __m512i m1z = _mm512_setr_epi32(0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15);
    const __m512i m2xy = _mm512_setr_epi32(0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0);
    const __m512i m2z = _mm512_setr_epi32(26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31);
    *m0 = _mm512_permutex2var_ps(_mm512_permutex2var_ps(x, m0xy, y), m0z, z);
    *m1 = _mm512_permutex2var_ps(_mm512_permutex2var_ps(x, m1xy, y), m1z, z);
    *m2 = _mm512_permutex2var_ps(_mm512_permutex2var_ps(x, m2xy, y), m2z, z);
}

/* x, y, z of the 16 particles whose 48 floats start at p. */
AVX512_INLINE void load_run16(const float *p, __m512 *x, __m512 *y, __m512 *z)
{
    deal_run(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_loadu_ps(p + 32), x, y, z);
}

AVX512_INLINE void store_run16(float *p, __m512 x, __m512 y, __m512 z)
{
    __m512 m0, m1, m2;
    undeal_run(x, y, z, &m0, &m1, &m2);
    _mm512_storeu_ps(p, m0);
    _mm512_storeu_ps(p + 16, m1);
    _mm512_storeu_ps(p + 32, m2);
}

/* Two runs of 8 particles, at p0 (slots 0..7) and p1 (8..15): their
 * 2 x 24 floats laid out as one run of 16. */
AVX512_INLINE void load_runs(const float *p0, const float *p1, __m512 *x, __m512 *y, __m512 *z)
{
    const __m512 m0 = _mm512_loadu_ps(p0);
    const __m512 m1 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p0 + 16)),
                                         _mm256_loadu_ps(p1), 1);
    const __m512 m2 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p1 + 8)),
                                         _mm256_loadu_ps(p1 + 16), 1);
    deal_run(m0, m1, m2, x, y, z);
}

AVX512_INLINE void store_runs(float *p0, float *p1, __m512 x, __m512 y, __m512 z)
{
    __m512 m0, m1, m2;
    undeal_run(x, y, z, &m0, &m1, &m2);
    _mm512_storeu_ps(p0, m0);
    _mm256_storeu_ps(p0 + 16, _mm512_castps512_ps256(m1));
    _mm256_storeu_ps(p1, _mm512_extractf32x8_ps(m1, 1));
    _mm256_storeu_ps(p1 + 8, _mm512_castps512_ps256(m2));
    _mm256_storeu_ps(p1 + 16, _mm512_extractf32x8_ps(m2, 1));
}

/* ---- shapes ----------------------------------------------------------- */

/* Lane l's half's first index: idx[0] in lanes 0..7, idx[8] in 8..15. */
AVX512_INLINE __m512i half_firsts(__m512i idx)
{
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8,
                                                      8, 8),
                                    idx);
}

/* True when idx = firsts + pattern in every lane. */
AVX512_INLINE bool is_shape(__m512i idx, __m512i firsts, __m512i pattern)
{
    return _mm512_cmpneq_epi32_mask(idx, _mm512_add_epi32(firsts, pattern)) == 0;
}

AVX512_INLINE enum window_shape window_of(__m512i ia, __m512i ib, __m512i firsts)
{
    const __m512i pairs =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i quads = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 1, 4, 5, 8, 9, 12, 13);
    if (is_shape(ia, firsts, pairs) && is_shape(ib, ia, _mm512_set1_epi32(1)))
        return WINDOW_PAIRS;
    if (is_shape(ia, firsts, quads) && is_shape(ib, ia, _mm512_set1_epi32(2)))
        return WINDOW_QUADS;
    return NO_WINDOW;
}

/* The a-ends and b-ends of a window in slot order, from its halves'
 * particles lo (half 0's first + 0..15) and hi (half 1's): slot j of
 * half h is particle 2 j (pairs) or 4 (j / 2) + j % 2 (quads) of its
 * half's 16, which as an index into lo:hi is the same number for both
 * halves. */
AVX512_INLINE void deal(enum window_shape shape, __m512 lo, __m512 hi, __m512 *a, __m512 *b)
{
    const __m512i pairs_a =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i quads_a =
        _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29);
    const __m512i ia = shape == WINDOW_PAIRS ? pairs_a : quads_a;
    const __m512i ib = _mm512_add_epi32(ia, _mm512_set1_epi32(shape == WINDOW_PAIRS ? 1 : 2));
    *a = _mm512_permutex2var_ps(lo, ia, hi);
    *b = _mm512_permutex2var_ps(lo, ib, hi);
}

/* The inverse of deal: particle e of lo is an a-end (index e's slot) or a
 * b-end (16 + its slot). */
AVX512_INLINE void undeal(enum window_shape shape, __m512 a, __m512 b, __m512 *lo, __m512 *hi)
{
    const __m512i pairs_lo =
        _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i quads_lo =
        _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
    const __m512i ilo = shape == WINDOW_PAIRS ? pairs_lo : quads_lo;
    const __m512i ihi = _mm512_add_epi32(ilo, _mm512_set1_epi32(8));
    *lo = _mm512_permutex2var_ps(a, ilo, b);
    *hi = _mm512_permutex2var_ps(a, ihi, b);
}

AVX512_INLINE void load_window(block *k, const float *pos, const float *w, uint32_t f0,
                               uint32_t f1)
{
    __m512 x0, y0, z0, x1, y1, z1;
    load_run16(pos + 3 * (size_t)f0, &x0, &y0, &z0);
    load_run16(pos + 3 * (size_t)f1, &x1, &y1, &z1);
    deal(k->window, x0, x1, &k->xa, &k->xb);
    deal(k->window, y0, y1, &k->ya, &k->yb);
    deal(k->window, z0, z1, &k->za, &k->zb);
    deal(k->window, _mm512_loadu_ps(w + f0), _mm512_loadu_ps(w + f1), &k->wa, &k->wb);
}

/* x, y, z and the inverse mass of the particles idx[0..lanes) (0 in the
 * other lanes, which read nothing): each particle one masked load of its
 * 12 bytes (never the neighbour's x, which another thread may be
 * writing), 4 of them to a register (particle l in lane l / 4 of r[l % 4])
 * and a 4 x 4 transpose within each 128-bit lane. */
AVX512_INLINE void load_ends(const float *pos, const float *w, const uint32_t *idx, __m512i vidx,
                             __mmask16 live, uint32_t lanes, __m512 *x, __m512 *y, __m512 *z,
                             __m512 *wi)
{
    __m512 r[4];
    if (lanes >= WIDE) {
#define P(l) _mm_maskz_loadu_ps(0x7, &pos[3 * (size_t)idx[l]])
#define ROW(q)                                                                                     \
    _mm512_insertf32x4(                                                                            \
        _mm512_insertf32x4(_mm512_insertf32x4(_mm512_castps128_ps512(P(q)), P((q) + 4), 1),       \
                           P((q) + 8), 2),                                                         \
        P((q) + 12), 3)
        r[0] = ROW(0), r[1] = ROW(1), r[2] = ROW(2), r[3] = ROW(3);
#undef ROW
#undef P
    } else {
        float in[4 * WIDE] __attribute__((aligned(64))) = {0};
        for (uint32_t l = 0; l < lanes; l++)
            _mm_store_ps(in + 16 * (l % 4) + 4 * (l / 4),
                         _mm_maskz_loadu_ps(0x7, &pos[3 * (size_t)idx[l]]));
        for (uint32_t q = 0; q < 4; q++)
            r[q] = _mm512_load_ps(in + 16 * q);
    }
    const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]); /* x0 x1 y0 y1 | x4 x5 y4 y5 | ... */
    const __m512 t1 = _mm512_unpackhi_ps(r[0], r[1]); /* z0 z1 .. .. | ... */
    const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]);
    const __m512 t3 = _mm512_unpackhi_ps(r[2], r[3]);
    *x = _mm512_shuffle_ps(t0, t2, 0x44);
    *y = _mm512_shuffle_ps(t0, t2, 0xEE);
    *z = _mm512_shuffle_ps(t1, t3, 0x44);
    *wi = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, vidx, w, 4);
}

/* Stores x, y, z of the particles idx[0..lanes) one by one: 12 bytes each
 * (a masked store), never the neighbour's x. The 4 x 4 transposes within
 * each 128-bit lane give particle l in lane l / 4 of r[l % 4]. */
AVX512_INLINE void store_ends(float *pos, const uint32_t *idx, uint32_t lanes, __m512 x, __m512 y,
                              __m512 z)
{
    const __m512 t0 = _mm512_unpacklo_ps(x, y); /* x0 y0 x1 y1 | x4 y4 x5 y5 | ... */
    const __m512 t1 = _mm512_unpackhi_ps(x, y); /* x2 y2 x3 y3 | ... */
    const __m512 t2 = _mm512_unpacklo_ps(z, z); /* z0 z0 z1 z1 | ... */
    const __m512 t3 = _mm512_unpackhi_ps(z, z);
    const __m512 r[4] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                         _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE)};
#define STORE_LANE(l)                                                                              \
    _mm_mask_storeu_ps(&pos[3 * (size_t)idx[l]], 0x7,                                              \
                       (l) < 4 ? _mm512_castps512_ps128(r[(l) % 4])                                \
                               : _mm512_extractf32x4_ps(r[(l) % 4], (l) / 4))
    if (lanes >= WIDE) {
        STORE_LANE(0), STORE_LANE(1), STORE_LANE(2), STORE_LANE(3);
        STORE_LANE(4), STORE_LANE(5), STORE_LANE(6), STORE_LANE(7);
        STORE_LANE(8), STORE_LANE(9), STORE_LANE(10), STORE_LANE(11);
        STORE_LANE(12), STORE_LANE(13), STORE_LANE(14), STORE_LANE(15);
        return;
    }
#undef STORE_LANE
    float out[4 * WIDE] __attribute__((aligned(64)));
    for (uint32_t q = 0; q < 4; q++)
        _mm512_store_ps(out + 16 * q, r[q]);
    for (uint32_t l = 0; l < lanes; l++)
        _mm_mask_storeu_ps(&pos[3 * (size_t)idx[l]], 0x7, _mm_load_ps(out + 16 * (l % 4) + 4 * (l / 4)));
}

/* Loads the block of slots a[0..lanes) b[0..lanes), lanes in 1..16. */
AVX512_INLINE void load_block(block *k, const float *pos, const float *w, const uint32_t *a,
                              const uint32_t *b, uint32_t lanes)
{
    const __mmask16 live = (__mmask16)(lanes >= WIDE ? 0xFFFFu : (1u << lanes) - 1u);
    const __m512i ia = _mm512_maskz_loadu_epi32(live, a);
    const __m512i ib = _mm512_maskz_loadu_epi32(live, b);
    k->live = live;
    k->lanes = lanes;
    bool run_a = false, run_b = false;
    enum window_shape window = NO_WINDOW;
    if (lanes >= WIDE) {
        const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
        const __m512i fa = half_firsts(ia), fb = half_firsts(ib);
        run_a = is_shape(ia, fa, iota);
        run_b = is_shape(ib, fb, iota);
        window = run_a || run_b ? NO_WINDOW : window_of(ia, ib, fa);
    }
    k->run_a = run_a;
    k->run_b = run_b;
    k->window = window;
    if (window != NO_WINDOW) {
        load_window(k, pos, w, a[0], a[8]);
    } else {
        if (run_a) {
            load_runs(pos + 3 * (size_t)a[0], pos + 3 * (size_t)a[8], &k->xa, &k->ya, &k->za);
            k->wa = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(w + a[0])),
                                       _mm256_loadu_ps(w + a[8]), 1);
        } else {
            load_ends(pos, w, a, ia, live, lanes, &k->xa, &k->ya, &k->za, &k->wa);
        }
        if (run_b) {
            load_runs(pos + 3 * (size_t)b[0], pos + 3 * (size_t)b[8], &k->xb, &k->yb, &k->zb);
            k->wb = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(w + b[0])),
                                       _mm256_loadu_ps(w + b[8]), 1);
        } else {
            load_ends(pos, w, b, ib, live, lanes, &k->xb, &k->yb, &k->zb, &k->wb);
        }
    }
    k->dx = _mm512_sub_ps(k->xb, k->xa);
    k->dy = _mm512_sub_ps(k->yb, k->ya);
    k->dz = _mm512_sub_ps(k->zb, k->za);
    /* dx dx + dy dy + dz dz, left to right as the reference */
    k->d2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(k->dx, k->dx), _mm512_mul_ps(k->dy, k->dy)),
                          _mm512_mul_ps(k->dz, k->dz));
}

/* The projection of one block: pa -= dx sa, pb += dx sb on the lanes of
 * `valid` (those the reference projects). */
typedef struct scales {
    __m512 sa, sb;
    __mmask16 valid;
} scales;

AVX512_INLINE void store_block(const block *k, float *pos, const uint32_t *a, const uint32_t *b,
                               scales s)
{
#define MOVE(p, d, sc, op) op(k->p, s.valid, k->p, _mm512_mul_ps(k->d, sc))
    const __m512 xa = MOVE(xa, dx, s.sa, _mm512_mask_sub_ps),
                 ya = MOVE(ya, dy, s.sa, _mm512_mask_sub_ps),
                 za = MOVE(za, dz, s.sa, _mm512_mask_sub_ps);
    const __m512 xb = MOVE(xb, dx, s.sb, _mm512_mask_add_ps),
                 yb = MOVE(yb, dy, s.sb, _mm512_mask_add_ps),
                 zb = MOVE(zb, dz, s.sb, _mm512_mask_add_ps);
#undef MOVE
    if (k->window != NO_WINDOW) {
        __m512 x0, y0, z0, x1, y1, z1;
        undeal(k->window, xa, xb, &x0, &x1);
        undeal(k->window, ya, yb, &y0, &y1);
        undeal(k->window, za, zb, &z0, &z1);
        store_run16(pos + 3 * (size_t)a[0], x0, y0, z0);
        store_run16(pos + 3 * (size_t)a[8], x1, y1, z1);
        return;
    }
    if (k->run_a)
        store_runs(pos + 3 * (size_t)a[0], pos + 3 * (size_t)a[8], xa, ya, za);
    else
        store_ends(pos, a, k->lanes, xa, ya, za);
    if (k->run_b)
        store_runs(pos + 3 * (size_t)b[0], pos + 3 * (size_t)b[8], xb, yb, zb);
    else
        store_ends(pos, b, k->lanes, xb, yb, zb);
}

AVX512_INLINE scales seed_scales(const block *q, const float *rest, __m512 vk)
{
    const __m512 wsum = _mm512_add_ps(q->wa, q->wb);
    const __mmask16 valid =
        _mm512_mask_cmp_ps_mask(q->live, q->d2, _mm512_set1_ps(1e-20f), _CMP_GT_OQ) &
        _mm512_cmp_ps_mask(wsum, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    const __m512 d = _mm512_sqrt_ps(q->d2);
    /* s = (d - rest) / d * k / wsum; the reference moves by -s w (an exact
     * sign flip: xor, not 0 - x, which loses -0). */
    const __m512 s = _mm512_div_ps(
        _mm512_mul_ps(_mm512_div_ps(_mm512_sub_ps(d, _mm512_maskz_loadu_ps(q->live, rest)), d),
                      vk),
        wsum);
    const __m512 minus_s = _mm512_xor_ps(s, _mm512_set1_ps(-0.0f));
    return (scales){_mm512_mul_ps(minus_s, q->wa), _mm512_mul_ps(minus_s, q->wb), valid};
}

AVX512_INLINE scales xpbd_scales(const block *q, const float *rest, float *lambda_io,
                                 __m512 alpha)
{
    const __m512 denom = _mm512_add_ps(_mm512_add_ps(q->wa, q->wb), alpha);
    const __mmask16 valid =
        _mm512_mask_cmp_ps_mask(q->live, q->d2, _mm512_set1_ps(1e-20f), _CMP_GT_OQ) &
        _mm512_cmp_ps_mask(denom, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    const __m512 d = _mm512_sqrt_ps(q->d2);
    const __m512 lambda = _mm512_maskz_loadu_ps(q->live, lambda_io);
    /* dl = (rest - d - alpha~ lambda) / denom */
    const __m512 num = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(q->live, rest), d),
                                     _mm512_mul_ps(alpha, lambda));
    const __m512 dl = _mm512_div_ps(num, denom);
    _mm512_mask_storeu_ps(lambda_io, valid, _mm512_add_ps(lambda, dl));
    const __m512 s = _mm512_div_ps(dl, d);
    /* The reference: pa -= dx s wa, pb += dx s wb. */
    return (scales){_mm512_mul_ps(s, q->wa), _mm512_mul_ps(s, q->wb), valid};
}

/* Blocks go two at a time, as with AVX2 (distance_avx2.c says why): each
 * block's sqrt and two divisions are a chain of ~60 cycles that the CPU
 * does not overlap with the next block's on its own. */
#define CD_SOLVE_RANGE(SCALES_OF)                                                             \
    uint32_t i = begin;                                                                       \
    for (; i + WIDE < end; i += 2 * WIDE) {                                                   \
        const uint32_t j = i + WIDE;                                                          \
        block q0, q1;                                                                         \
        load_block(&q0, pos, w, c->a + i, c->b + i, WIDE);                                    \
        load_block(&q1, pos, w, c->a + j, c->b + j, end - j);                                 \
        const scales s0 = SCALES_OF(q0, i), s1 = SCALES_OF(q1, j);                            \
        store_block(&q0, pos, c->a + i, c->b + i, s0);                                        \
        store_block(&q1, pos, c->a + j, c->b + j, s1);                                        \
    }                                                                                         \
    if (i < end) {                                                                            \
        block q;                                                                              \
        load_block(&q, pos, w, c->a + i, c->b + i, end - i);                                  \
        store_block(&q, pos, c->a + i, c->b + i, SCALES_OF(q, i));                           \
    }

AVX512 void cd_solve_seed_avx512(float *restrict pos, const float *restrict w,
                                 const cd_constraints *restrict c, uint32_t begin, uint32_t end,
                                 float k)
{
    const __m512 vk = _mm512_set1_ps(k);
#define SEED(q, i) seed_scales(&(q), c->rest + (i), vk)
    CD_SOLVE_RANGE(SEED)
#undef SEED
}

AVX512 void cd_solve_xpbd_avx512(float *restrict pos, const float *restrict w,
                                 cd_constraints *restrict c, uint32_t begin, uint32_t end,
                                 float alpha_tilde)
{
    const __m512 alpha = _mm512_set1_ps(alpha_tilde);
#define XPBD(q, i) xpbd_scales(&(q), c->rest + (i), c->lambda + (i), alpha)
    CD_SOLVE_RANGE(XPBD)
#undef XPBD
}

#endif
