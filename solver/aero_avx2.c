/* The flat plate's aerodynamic kernel with AVX2: 8 triangles of a run at a
 * time. Compiled for AVX2 whatever the build's flags (target attribute);
 * aero.c calls it only on the "avx2" path (distance.c picks it from the
 * CPU).
 *
 * A run (aero.c) is every other cell of one grid row, so 8 consecutive
 * cells of a run have their corners in 16 consecutive particles of row y
 * (tl, tr, tl, tr, ...) and of row y + 1 (bl, br, ...). A block loads the
 * two rows' 16-particle windows of positions, Verlet history and inverse
 * masses with plain loads (no gathers), splits each into its even and odd
 * particles (tl and tr, bl and br), computes the 8 tl-bl-tr triangles and
 * then the 8 tr-bl-br ones on the history held in registers, and stores
 * the two windows back once: the history is moved in and out once for 16
 * triangles. The scalar reference does all the run's tl-bl-tr triangles
 * before its tr-bl-br ones; a block's tr-bl-br triangles and the next
 * block's tl-bl-tr ones share no particle, so the order is the same. A
 * run's last, partial block is the window of its last 8 cells, with only
 * the cells not yet done applied (the others are recomputed and dropped;
 * the windows stay within the run's two rows, which no other row of cells
 * of the stage touches, so no other thread reads or writes them
 * meanwhile). Runs shorter than 8 cells go to the scalar kernel.
 *
 * The arithmetic is the scalar reference's (aero.c, plate_triangle), the
 * same IEEE operations in the same order: no fused multiply-add (FMA is
 * not enabled, so the compiler cannot contract), and division and square
 * root are correctly rounded in both. A lane the reference skips (a
 * degenerate triangle, a pinned corner) keeps its history exactly: the
 * result is blended away. The two paths give bit-identical positions
 * (tests/test_solver_aero.c, tests/test_solver_simd.c). */
#include "internal.h"

#ifdef CD_HAVE_AVX2_KERNELS

#include <immintrin.h>

#include "avx2_runs.h"

#define AVX2 __attribute__((target("avx2")))
#define INLINE AVX2 __attribute__((always_inline)) static inline

typedef struct xyz {
    __m256 x, y, z;
} xyz;

/* x, y, z of 8 consecutive particles (avx2_runs.h). */
INLINE xyz load_run(const float *p)
{
    xyz v;
    cd_avx2_load_run(p, &v.x, &v.y, &v.z);
    return v;
}

INLINE void store_run(float *p, xyz v)
{
    cd_avx2_store_run(p, v.x, v.y, v.z);
}

/* 8 + 8 values -> the even ones (0 2 .. 14) and the odd ones (1 3 .. 15),
 * both with pair k = i / 2 in lane order 0 1 4 5 2 3 6 7 (no cross-lane
 * permute: the lanes are independent triangles, any order will do as long
 * as every corner uses the same one). */
INLINE void split(__m256 lo, __m256 hi, __m256 *even, __m256 *odd)
{
    *even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    *odd = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}

/* The inverse of split. */
INLINE void join(__m256 even, __m256 odd, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_unpacklo_ps(even, odd);
    *hi = _mm256_unpackhi_ps(even, odd);
}

/* A window of 16 consecutive particles, split into even and odd ones. */
typedef struct window {
    xyz even, odd;
} window;

INLINE window load_window(const float *p)
{
    const xyz lo = load_run(p), hi = load_run(p + 24);
    window w;
    split(lo.x, hi.x, &w.even.x, &w.odd.x);
    split(lo.y, hi.y, &w.even.y, &w.odd.y);
    split(lo.z, hi.z, &w.even.z, &w.odd.z);
    return w;
}

INLINE void store_window(float *p, window w)
{
    xyz lo, hi;
    join(w.even.x, w.odd.x, &lo.x, &hi.x);
    join(w.even.y, w.odd.y, &lo.y, &hi.y);
    join(w.even.z, w.odd.z, &lo.z, &hi.z);
    store_run(p, lo);
    store_run(p + 24, hi);
}

INLINE xyz sub3(xyz a, xyz b)
{
    return (xyz){_mm256_sub_ps(a.x, b.x), _mm256_sub_ps(a.y, b.y), _mm256_sub_ps(a.z, b.z)};
}

/* (a.x b.x + a.y b.y) + a.z b.z, the reference's order. */
INLINE __m256 dot3(xyz a, xyz b)
{
    return _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(a.x, b.x), _mm256_mul_ps(a.y, b.y)),
                         _mm256_mul_ps(a.z, b.z));
}

/* q + N (g w) where the lane applies and the corner is free; else q. */
INLINE xyz push(xyz q, xyz n, __m256 g, __m256 w, __m256 apply)
{
    const __m256 t = _mm256_mul_ps(g, w);
    const __m256 keep = _mm256_and_ps(apply, _mm256_cmp_ps(w, _mm256_setzero_ps(), _CMP_NEQ_UQ));
    return (xyz){_mm256_blendv_ps(q.x, _mm256_add_ps(q.x, _mm256_mul_ps(n.x, t)), keep),
                 _mm256_blendv_ps(q.y, _mm256_add_ps(q.y, _mm256_mul_ps(n.y, t)), keep),
                 _mm256_blendv_ps(q.z, _mm256_add_ps(q.z, _mm256_mul_ps(n.z, t)), keep)};
}

/* 8 triangles: corners' positions p, histories q (updated) and inverse
 * masses w; `apply` selects the lanes to update. */
INLINE void plate8(xyz pa, xyz pb, xyz pc, xyz *qa, xyz *qb, xyz *qc, __m256 wa,
                               __m256 wb, __m256 wc, __m256 apply, const cd_aero_params *p)
{
    const xyz e1 = sub3(pb, pa), e2 = sub3(pc, pa);
    const xyz n = {_mm256_sub_ps(_mm256_mul_ps(e1.y, e2.z), _mm256_mul_ps(e1.z, e2.y)),
                   _mm256_sub_ps(_mm256_mul_ps(e1.z, e2.x), _mm256_mul_ps(e1.x, e2.z)),
                   _mm256_sub_ps(_mm256_mul_ps(e1.x, e2.y), _mm256_mul_ps(e1.y, e2.x))};
    const xyz da = sub3(pa, *qa), db = sub3(pb, *qb), dc = sub3(pc, *qc);
    const __m256 inv_3h = _mm256_set1_ps(p->inv_3h);
    const xyz u = {
        _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(da.x, db.x), dc.x), inv_3h),
                      _mm256_set1_ps(p->wind.x)),
        _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(da.y, db.y), dc.y), inv_3h),
                      _mm256_set1_ps(p->wind.y)),
        _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(da.z, db.z), dc.z), inv_3h),
                      _mm256_set1_ps(p->wind.z))};
    const __m256 nn = dot3(n, n), uu = dot3(u, u), nu = dot3(n, u);
    const __m256 g = _mm256_mul_ps(
        _mm256_mul_ps(_mm256_set1_ps(p->plate), _mm256_div_ps(nu, _mm256_sqrt_ps(nn))),
        _mm256_sqrt_ps(uu));
    const __m256 ok =
        _mm256_and_ps(apply, _mm256_cmp_ps(nn, _mm256_set1_ps(CD_AERO_MIN_NORMAL2), _CMP_GT_OQ));
    *qa = push(*qa, n, g, wa, ok);
    *qb = push(*qb, n, g, wb, ok);
    *qc = push(*qc, n, g, wc, ok);
}

/* Pair index of each lane after split(). */
#define LANE_PAIRS _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)

/* The 8 cells whose top-left corners are r0, r0 + 2, ..., r0 + 14 (their
 * bottom-left ones r1, ...): both triangles of each. Cells below `from`
 * are already done: they are computed and not applied. */
AVX2 static void block(const float *pos, float *prev, const float *w, uint32_t r0, uint32_t r1,
                       uint32_t from, const cd_aero_params *p)
{
    const window p0 = load_window(pos + 3 * (size_t)r0), p1 = load_window(pos + 3 * (size_t)r1);
    window q0 = load_window(prev + 3 * (size_t)r0), q1 = load_window(prev + 3 * (size_t)r1);
    __m256 w0e, w0o, w1e, w1o;
    split(_mm256_loadu_ps(w + r0), _mm256_loadu_ps(w + r0 + 8), &w0e, &w0o);
    split(_mm256_loadu_ps(w + r1), _mm256_loadu_ps(w + r1 + 8), &w1e, &w1o);
    const __m256 apply = _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(LANE_PAIRS, _mm256_set1_epi32((int)from - 1)));
    /* tl bl tr, then tr bl br: row y's even and odd particles are tl and
     * tr, row y + 1's bl and br. */
    plate8(p0.even, p1.even, p0.odd, &q0.even, &q1.even, &q0.odd, w0e, w1e, w0o, apply, p);
    plate8(p0.odd, p1.even, p1.odd, &q0.odd, &q1.even, &q1.odd, w0o, w1e, w1o, apply, p);
    store_window(prev + 3 * (size_t)r0, q0);
    store_window(prev + 3 * (size_t)r1, q1);
}

AVX2 void cd_aero_plate_avx2(const float *pos, float *prev, const float *inv_mass, uint32_t tl,
                             uint32_t width, uint32_t count, const cd_aero_params *p)
{
    if (count < 8) {
        cd_aero_plate_scalar(pos, prev, inv_mass, tl, width, count, p);
        return;
    }
    uint32_t k = 0;
    for (; k + 8 <= count; k += 8)
        block(pos, prev, inv_mass, tl + 2 * k, tl + width + 2 * k, 0, p);
    if (k < count) { /* the last 8 cells, of which the first 8 - (count - k) are done */
        const uint32_t first = count - 8;
        block(pos, prev, inv_mass, tl + 2 * first, tl + width + 2 * first, k - first, p);
    }
}

#endif
