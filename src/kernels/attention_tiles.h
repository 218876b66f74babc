// The attention kernels' matrix products over register tiles (attention_impl.h
// includes it, once per instruction set, with LMX_KERNEL_NS set): S = α·A·Bᵀ for the visible
// keys (scores), P·V (pv) and Pᵀ·X without forming Pᵀ (ptx), each in 4 × 16 tiles (vec.h's
// Tile4x16) kept in registers over the summed axis, then 8-column tails.
// The AVX-512 variant runs two of those 4-row (4-key) tiles at once where it can, sharing the
// loads: one 16-float vector per tile row makes 4 chains of dependent FMAs, too few for two FMA
// pipes at their latency, and 8 keep them busy. Every sum still runs over the same terms in the
// same order as in the AVX2 variant: the same bits.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/vec.h"

#ifndef LMX_KERNEL_NS
#error "define LMX_KERNEL_NS before including attention_tiles.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// S[i][j] = alpha·Σ_d A[i][d]·Bt[d][j] for rows i < rows (A padded to a multiple of 4 rows,
// lda = D) and, per 4-row tile, the keys j < ceil8(hi(last row)). S and Bt have ld columns.
template <class Hi>
void scores(const float* A, int64_t rows, int64_t D, const float* Bt, int64_t ld, float alpha, Hi hi,
            float* S) {
  int64_t i0 = 0;
#if defined(__AVX512F__)
  // Two 4-row tiles at once, sharing each key load (see the top of the file); the first tile's
  // rows also get the second's extra keys, past their causal range, which every caller overwrites.
  for (; i0 + 4 < rows; i0 += 8) {
    const int64_t n = hi(std::min(i0 + 7, rows - 1)), n8 = (n + 7) / 8 * 8;
    const float* a = A + i0 * D;
    int64_t j = 0;
    for (; j + 16 <= n8; j += 16) {
      Tile4x16 t, u;
      const float* b = Bt + j;
      for (int64_t d = 0; d < D; ++d, b += ld) {
        t.add(a[d], a[D + d], a[2 * D + d], a[3 * D + d], b);
        u.add(a[4 * D + d], a[5 * D + d], a[6 * D + d], a[7 * D + d], b);
      }
      float* s = S + i0 * ld + j;
      for (int r = 0; r < 4; ++r) {
        vstore16(s + r * ld, t.a[r] * alpha);
        vstore16(s + (r + 4) * ld, u.a[r] * alpha);
      }
    }
    for (; j < n; j += 8) {
      v8f c[8] = {};
      const float* b = Bt + j;
      for (int64_t d = 0; d < D; ++d, b += ld) {
        const v8f bv = vload(b);
        for (int r = 0; r < 8; ++r) c[r] += a[r * D + d] * bv;
      }
      float* s = S + i0 * ld + j;
      for (int r = 0; r < 8; ++r) vstore(s + r * ld, c[r] * alpha);
    }
  }
#endif
  for (; i0 < rows; i0 += 4) {
    const int64_t n = hi(std::min(i0 + 3, rows - 1));
    const float *a0 = A + i0 * D, *a1 = a0 + D, *a2 = a1 + D, *a3 = a2 + D;
    const int64_t n8 = (n + 7) / 8 * 8;
    int64_t j = 0;
    for (; j + 16 <= n8; j += 16) {  // 4 rows × 16 keys
      Tile4x16 t;
      const float* b = Bt + j;
      for (int64_t d = 0; d < D; ++d, b += ld) t.add(a0[d], a1[d], a2[d], a3[d], b);
      float* s = S + i0 * ld + j;
      for (int r = 0; r < 4; ++r) {
        vstore(s + r * ld, t.lo(r) * alpha);
        vstore(s + r * ld + 8, t.hi(r) * alpha);
      }
    }
    for (; j < n; j += 8) {
      v8f c0 = splat(0), c1 = c0, c2 = c0, c3 = c0;
      const float* b = Bt + j;
      for (int64_t d = 0; d < D; ++d, b += ld) {
        const v8f bv = vload(b);
        c0 += a0[d] * bv;
        c1 += a1[d] * bv;
        c2 += a2[d] * bv;
        c3 += a3[d] * bv;
      }
      float* s = S + i0 * ld + j;
      vstore(s, c0 * alpha);
      vstore(s + ld, c1 * alpha);
      vstore(s + 2 * ld, c2 * alpha);
      vstore(s + 3 * ld, c3 * alpha);
    }
  }
}

// out[i] (+)= Σ_{j in [0, hi)} P[i][j]·V[j] for rows i < rows (P padded to a multiple of 4
// rows, ld columns, zero past each row's range); per tile, hi of its last row. V rows at stride
// v_st, D a multiple of 8; out rows at out_st.
template <class Hi>
void pv(const float* P, int64_t ld, int64_t rows, Hi hi, const float* V, int64_t v_st, int64_t D, float* out,
        int64_t out_st, bool accumulate) {
  int64_t i0 = 0;
#if defined(__AVX512F__)
  // Two 4-row tiles at once, sharing each row of V (see the top of the file): keys [0,
  // hi(first tile)) go to both, the second tile's extra keys to it alone; each sum keeps its order.
  if (D % 16 == 0)
    for (; i0 + 4 < rows; i0 += 8) {
      const int64_t ja = hi(i0 + 3), jb = hi(std::min(i0 + 7, rows - 1));
      const float* p = P + i0 * ld;
      for (int64_t c = 0; c < D; c += 16) {
        Tile4x16 t, u;
        int64_t j = 0;
        for (; j < ja; ++j) {
          const float* vr = V + j * v_st + c;
          t.add(p[j], p[ld + j], p[2 * ld + j], p[3 * ld + j], vr);
          u.add(p[4 * ld + j], p[5 * ld + j], p[6 * ld + j], p[7 * ld + j], vr);
        }
        for (; j < jb; ++j) u.add(p[4 * ld + j], p[5 * ld + j], p[6 * ld + j], p[7 * ld + j], V + j * v_st + c);
        for (int r = 0; r < 8 && i0 + r < rows; ++r) {
          float* o = out + (i0 + r) * out_st + c;
          const v16f x = r < 4 ? t.a[r] : u.a[r - 4];
          vstore16(o, accumulate ? vload16(o) + x : x);
        }
      }
    }
#endif
  for (; i0 < rows; i0 += 4) {
    const int64_t j1 = hi(std::min(i0 + 3, rows - 1));
    const float *p0 = P + i0 * ld, *p1 = p0 + ld, *p2 = p1 + ld, *p3 = p2 + ld;
    int64_t c = 0;
    for (; c + 16 <= D; c += 16) {  // 4 rows × 16 columns
      Tile4x16 t;
      for (int64_t j = 0; j < j1; ++j) {
        const float* vr = V + j * v_st + c;
        t.add(p0[j], p1[j], p2[j], p3[j], vr);
      }
      for (int r = 0; r < 4 && i0 + r < rows; ++r) {
        float* o = out + (i0 + r) * out_st + c;
        vstore(o, accumulate ? vload(o) + t.lo(r) : t.lo(r));
        vstore(o + 8, accumulate ? vload(o + 8) + t.hi(r) : t.hi(r));
      }
    }
    for (; c < D; c += 8) {
      v8f c0 = splat(0), c1 = c0, c2 = c0, c3 = c0;
      for (int64_t j = 0; j < j1; ++j) {
        const v8f vv = vload(V + j * v_st + c);
        c0 += p0[j] * vv;
        c1 += p1[j] * vv;
        c2 += p2[j] * vv;
        c3 += p3[j] * vv;
      }
      const v8f acc[4] = {c0, c1, c2, c3};
      for (int r = 0; r < 4 && i0 + r < rows; ++r) {
        float* o = out + (i0 + r) * out_st + c;
        vstore(o, accumulate ? vload(o) + acc[r] : acc[r]);
      }
    }
  }
}

// out[j] += Σ_i P[i][j]·X[i] for keys j < cols: Pᵀ·X without forming Pᵀ. Tiles of 4 keys ×
// 8 columns stay in registers over the rows i in [first(j0), rows) (P is zero where a row does
// not see a key; first(j0) is the first row that sees key j0). P has ld >= ceil4(cols) columns,
// X rows at x_st, D a multiple of 8, out rows at out_st (accumulated).
template <class First>
void ptx(const float* P, int64_t ld, int64_t rows, int64_t cols, First first, const float* X, int64_t x_st,
         int64_t D, float* out, int64_t out_st) {
  int64_t j0 = 0;
#if defined(__AVX512F__)
  // Two 4-key tiles at once, sharing each row of X (see the top of the file): the second tile's
  // keys are seen from a later row on; each sum keeps its order.
  if (D % 16 == 0)
    for (; j0 + 4 < cols; j0 += 8) {
      const int64_t ia = first(j0), ib = std::min(first(j0 + 4), rows), nb = std::min<int64_t>(4, cols - j0 - 4);
      for (int64_t c = 0; c < D; c += 16) {
        Tile4x16 t, u;
        const float* p = P + ia * ld + j0;
        const float* x = X + ia * x_st + c;
        int64_t i = ia;
        for (; i < ib; ++i, p += ld, x += x_st) t.add(p[0], p[1], p[2], p[3], x);
        for (; i < rows; ++i, p += ld, x += x_st) {
          t.add(p[0], p[1], p[2], p[3], x);
          u.add(p[4], p[5], p[6], p[7], x);
        }
        for (int64_t r = 0; r < 4 + nb; ++r) {
          float* o = out + (j0 + r) * out_st + c;
          vstore16(o, vload16(o) + (r < 4 ? t.a[r] : u.a[r - 4]));
        }
      }
    }
#endif
  for (; j0 < cols; j0 += 4) {
    const int64_t i0 = first(j0), nj = std::min<int64_t>(4, cols - j0);
    int64_t c = 0;
    for (; c + 16 <= D; c += 16) {  // 4 keys × 16 columns
      Tile4x16 t;
      const float* p = P + i0 * ld + j0;
      const float* x = X + i0 * x_st + c;
      for (int64_t i = i0; i < rows; ++i, p += ld, x += x_st) t.add(p[0], p[1], p[2], p[3], x);
      for (int64_t r = 0; r < nj; ++r) {
        float* o = out + (j0 + r) * out_st + c;
        vstore(o, vload(o) + t.lo(r));
        vstore(o + 8, vload(o + 8) + t.hi(r));
      }
    }
    for (; c < D; c += 8) {
      v8f c0 = splat(0), c1 = c0, c2 = c0, c3 = c0;
      const float* p = P + i0 * ld + j0;
      const float* x = X + i0 * x_st + c;
      for (int64_t i = i0; i < rows; ++i, p += ld, x += x_st) {
        const v8f xv = vload(x);
        c0 += p[0] * xv;
        c1 += p[1] * xv;
        c2 += p[2] * xv;
        c3 += p[3] * xv;
      }
      const v8f acc[4] = {c0, c1, c2, c3};
      for (int64_t r = 0; r < nj; ++r) {
        float* o = out + (j0 + r) * out_st + c;
        vstore(o, vload(o) + acc[r]);
      }
    }
  }
}

}  // namespace

}  // namespace lmx::kernels::LMX_KERNEL_NS
