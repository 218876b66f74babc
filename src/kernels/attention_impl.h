// The fused causal-attention kernels (declared in cpu_kernels.h). Included by one .cpp
// per instruction set with LMX_KERNEL_NS set to its namespace; GCC/Clang vector extensions
// (8 floats, and 16 where AVX-512 is on) become AVX-512, AVX2+FMA or SSE2 code depending on that
// file's flags.
//
// Forward, per query head: Qr = RoPE(q); S = scale·Qr·Krᵀ for the visible keys; P = softmax
// rows (vector exp); O = P·V. The forward keeps each row's log-sum-exp, not P.
// Backward: P = exp(scale·Qr·Krᵀ − lse) recomputed, dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O))·scale,
// dQr = dS·Kr, dKr = dSᵀ·Qr, dV = Pᵀ·dO (summed over the group's query heads), then the inverse
// RoPE rotation. A soft-cap c (AttnShape::softcap) turns each scaled score s into c·tanh(s/c)
// before the softmax and multiplies dS by 1 − tanh²(s/c); a sliding window gives every row a first
// visible key, before which its probabilities are zero (the products still run over them: the
// row kernels serve head dims other than 16, where windows are rare).
// The matrix products run over register tiles (attention_tiles.h); this file
// holds the row operations (RoPE, transposes, softmax) and the two passes. Head dimension 16
// with AVX2 or AVX-512 takes attention_lanes.h's kernels instead (queries in vector lanes),
// except for decoding over a KV cache (lanes::takes).
#include <algorithm>
#include <cmath>

#include "kernels/attention_tiles.h"
#include "kernels/cpu_kernels.h"
#include "kernels/vec.h"

#ifndef LMX_KERNEL_NS
#error "define LMX_KERNEL_NS before including attention_impl.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// Σ_d a[d]·b[d], D a multiple of 8.
static inline __attribute__((always_inline)) float dot_row(const float* a, const float* b, int64_t D) {
  v8f acc = vload(a) * vload(b);
  for (int64_t d = 8; d < D; d += 8) acc += vload(a + d) * vload(b + d);
  float sum = 0;
  for (int k = 0; k < 8; ++k) sum += acc[k];
  return sum;
}

// y[0, D) = x[0, D), D a multiple of 8 (inline: no libc call per row).
static inline __attribute__((always_inline)) void copy_row(float* y, const float* x, int64_t D) {
  for (int64_t d = 0; d < D; d += 8) vstore(y + d, vload(x + d));
}

// a·c + b with the product a·c fused (an FMA where the variant has one), lane for lane: the
// same bits as rotate_by's scalar rot().
static inline __attribute__((always_inline)) v8f fma_ac(v8f a, v8f c, v8f b) {
#if defined(__FMA__)
  return __builtin_ia32_vfmaddps256(a, c, b);
#else
  return a * c + b;
#endif
}

// RoPE of one row x at position pos into y (y may not alias x); identity without tables.
// sign −1 rotates by −θ: the transpose of the rotation (its inverse), which takes a gradient
// in rotated space back to the input space.
static inline __attribute__((always_inline)) void rotate_by(const float* x, float* y, int64_t pos,
                                                           const AttnShape& s, float sign) {
  const int64_t D = s.D, h = D / 2;
  if (!s.cos) {
    copy_row(y, x, D);
    return;
  }
  const float *c = s.cos + pos * h, *sn = s.sin + pos * h;
  // a·c ∓ b·s with the FMA on a·c, spelled out: left to the compiler, which product it fuses
  // depended on the code around the inlined call (and the AVX-512 variant lost the AVX2 bits).
  auto rot = [](float a, float c, float bs) {
#if defined(__FMA__)
    return __builtin_fmaf(a, c, bs);
#else
    return a * c + bs;
#endif
  };
  if (h % 8 == 0) {  // 8 pairs at a time, the same arithmetic per pair (no alias checks, no tail)
    if (s.interleaved) {
      // lanes (2d, 2d+1) of 8: y = x·c' + x_swapped·(−s, +s)', with c' and s' each pair's twice
      const v8i dup_lo = {0, 0, 1, 1, 2, 2, 3, 3}, dup_hi = {4, 4, 5, 5, 6, 6, 7, 7}, swap = {1, 0, 3, 2, 5, 4, 7, 6};
      const v8f alt = {-1, 1, -1, 1, -1, 1, -1, 1};
      for (int64_t d = 0; d < h; d += 8) {
        const v8f cv = vload(c + d), sv = vload(sn + d) * sign;
        for (int half = 0; half < 2; ++half) {
          const v8i dup = half ? dup_hi : dup_lo;
          const v8f xv = vload(x + 2 * d + 8 * half);
          const v8f cd = __builtin_shuffle(cv, dup), sd = __builtin_shuffle(sv, dup) * alt;
          vstore(y + 2 * d + 8 * half, fma_ac(xv, cd, __builtin_shuffle(xv, swap) * sd));
        }
      }
    } else {
      for (int64_t d = 0; d < h; d += 8) {
        const v8f xl = vload(x + d), xh = vload(x + d + h), cv = vload(c + d), sv = vload(sn + d) * sign;
        vstore(y + d, fma_ac(xl, cv, -(xh * sv)));
        vstore(y + d + h, fma_ac(xh, cv, xl * sv));
      }
    }
    return;
  }
  if (s.interleaved) {
    for (int64_t d = 0; d < h; ++d) {
      const float sd = sign * sn[d];
      y[2 * d] = rot(x[2 * d], c[d], -(x[2 * d + 1] * sd));
      y[2 * d + 1] = rot(x[2 * d + 1], c[d], x[2 * d] * sd);
    }
  } else {
    for (int64_t d = 0; d < h; ++d) {
      const float sd = sign * sn[d];
      y[d] = rot(x[d], c[d], -(x[d + h] * sd));
      y[d + h] = rot(x[d + h], c[d], x[d] * sd);
    }
  }
}
static inline __attribute__((always_inline)) void rotate(const float* x, float* y, int64_t pos, const AttnShape& s) {
  rotate_by(x, y, pos, s, 1.0f);
}
static inline __attribute__((always_inline)) void unrotate(const float* g, float* y, int64_t pos, const AttnShape& s) {
  rotate_by(g, y, pos, s, -1.0f);
}

// dst[c·dst_st + r] = src[r·src_st + c] for an 8 × 8 block (r, c < 8): three rounds of
// shuffles (AVX's unpack, shuffle and 128-bit permute) instead of 64 scalar stores.
static inline __attribute__((always_inline)) void transpose8(const float* src, int64_t src_st, float* dst,
                                                            int64_t dst_st) {
  v8f r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = vload(src + k * src_st);
  const v8i lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
  for (int k = 0; k < 8; k += 2) {  // t[k] = (r_k[0], r_k+1[0], r_k[1], r_k+1[1], ... [4], [5])
    t[k] = __builtin_shuffle(r[k], r[k + 1], lo);
    t[k + 1] = __builtin_shuffle(r[k], r[k + 1], hi);
  }
  const v8i pair_lo = {0, 1, 8, 9, 4, 5, 12, 13}, pair_hi = {2, 3, 10, 11, 6, 7, 14, 15};
  for (int k = 0; k < 8; k += 4) {  // u[k + c]: column c and c + 4 of rows k..k+3
    u[k] = __builtin_shuffle(t[k], t[k + 2], pair_lo);
    u[k + 1] = __builtin_shuffle(t[k], t[k + 2], pair_hi);
    u[k + 2] = __builtin_shuffle(t[k + 1], t[k + 3], pair_lo);
    u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], pair_hi);
  }
  const v8i half_lo = {0, 1, 2, 3, 8, 9, 10, 11}, half_hi = {4, 5, 6, 7, 12, 13, 14, 15};
  for (int c = 0; c < 4; ++c) {
    vstore(dst + c * dst_st, __builtin_shuffle(u[c], u[c + 4], half_lo));
    vstore(dst + (c + 4) * dst_st, __builtin_shuffle(u[c], u[c + 4], half_hi));
  }
}

// Rows [0, n) of X (x_st apart, D floats each, D a multiple of 8) into the columns of Xt
// (D × ld): Xt[d·ld + j] = X[j][d]; with AVX 8 rows at a time (SSE2's two-half shuffles
// were slower than the scalar stores), then the remaining rows one by one.
static inline __attribute__((always_inline)) void transpose_rows(const float* X, int64_t x_st, int64_t n, int64_t D,
                                                                float* Xt, int64_t ld) {
  int64_t j = 0;
#if defined(__AVX__)
  for (; j + 8 <= n; j += 8)
    for (int64_t d = 0; d < D; d += 8) transpose8(X + j * x_st + d, x_st, Xt + d * ld + j, ld);
#endif
  for (; j < n; ++j)
    for (int64_t d = 0; d < D; ++d) Xt[d * ld + j] = X[j * x_st + d];
}

// Columns [n, ld) of the rows × ld matrix X zeroed: the padding keys of a transposed K or V,
// which the score tiles read (the columns [0, n) are written by transpose_rows).
static inline __attribute__((always_inline)) void zero_columns(float* X, int64_t rows, int64_t n, int64_t ld) {
  if (n < ld)
    for (int64_t r = 0; r < rows; ++r) std::fill(X + r * ld + n, X + (r + 1) * ld, 0.0f);
}

// Row i of S, softmax in three steps: exps_row writes exp(s − m) on [0, n) and zeros on
// [n, ceil8(n)) and returns their sum; normalize_row scales them by 1/sum and zeros [ceil8(n),
// ld); the log-sum-exp is m + log(sum). The forward runs them for four rows at a time, so that
// each row's serial steps (the max, the sum over lanes, the division) overlap the other's work.
static inline __attribute__((always_inline)) float exps_row(float* s, int64_t n, float m) {
  const v8f mv = splat(m);
  v8f sumv = splat(0);
  int64_t j = 0;
#if defined(__AVX512F__)
  // 16 exps at a time, summed as two 8-lane blocks in the 8-lane loop's order (the same bits).
  for (const v16f mw = splat16(m); j + 16 <= n; j += 16) {
    const v16f e = vexp(vload16(s + j) - mw);
    vstore16(s + j, e);
    sumv += lo8(e);
    sumv += hi8(e);
  }
#endif
  for (; j + 8 <= n; j += 8) {
    v8f e = vexp(vload(s + j) - mv);
    vstore(s + j, e);
    sumv += e;
  }
  if (j < n) {  // the last partial block: a whole vector (ld >= ceil8(n)), lanes >= n zeroed
    const v8f lane = {0, 1, 2, 3, 4, 5, 6, 7};
    v8f e = vexp(vload(s + j) - mv);
    e = lane < splat(static_cast<float>(n - j)) ? e : splat(0);
    vstore(s + j, e);
    sumv += e;
  }
  float sum = 0;
  for (int k = 0; k < 8; ++k) sum += sumv[k];
  return sum;
}
static inline __attribute__((always_inline)) void normalize_row(float* s, int64_t n, int64_t ld, float sum) {
  const float inv = 1.0f / sum;
  const int64_t filled = (n + 7) / 8 * 8;  // exps written on [0, filled), zeros on [n, filled)
  int64_t j = 0;
#if defined(__AVX512F__)
  for (; j + 16 <= filled; j += 16) vstore16(s + j, vload16(s + j) * inv);
#endif
  for (; j < filled; j += 8) vstore(s + j, vload(s + j) * inv);
  zero_from(s, j, ld);
}

// Row i of S (scaled scores) -> P = exp(s − lse) on [0, n), zeros on [n, ld).
static inline __attribute__((always_inline)) void probs_row(float* s, int64_t n, int64_t ld, float lse) {
  const v8f l = splat(lse);
  int64_t j = 0;
#if defined(__AVX512F__)
  for (const v16f lw = splat16(lse); j + 16 <= n; j += 16) vstore16(s + j, vexp(vload16(s + j) - lw));
#endif
  for (; j + 8 <= n; j += 8) vstore(s + j, vexp(vload(s + j) - l));
  if (j < n) {
    const v8f lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const v8f e = vexp(vload(s + j) - l);
    vstore(s + j, lane < splat(static_cast<float>(n - j)) ? e : splat(0));
    j += 8;
  }
  zero_from(s, j, ld);
}

// Row s[0, ceil8(n)) of scaled scores soft-capped to c·tanh(s/c); g (when not null) gets
// 1 − tanh²(s/c) there, the cap's derivative, for the backward.
static inline __attribute__((always_inline)) void cap_row(float* s, int64_t n, float c, float* g) {
  const float inv = 1.0f / c;
  for (int64_t j = 0; j < n; j += 8) {
    const v8f t = vtanh(vload(s + j) * inv);
    vstore(s + j, t * c);
    if (g) vstore(g + j, 1.0f - t * t);
  }
}

// The forward's row of scores for a soft-cap and a window: capped, and −inf before the first key
// the row sees (its exp is then ~1e-38, which the caller zeroes: no term of the row's sum moves).
static inline __attribute__((always_inline)) void limit_row(float* s, int64_t n, int64_t lo, const AttnShape& sh) {
  if (sh.softcap > 0) cap_row(s, n, sh.softcap, nullptr);
  std::fill(s, s + lo, -INFINITY);
}

}  // namespace

}  // namespace lmx::kernels::LMX_KERNEL_NS

#if defined(__AVX2__)
#include "kernels/attention_lanes.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

// One query row (decoding over a KV cache): the group's heads, all at the same position and
// seeing the same keys, are the rows of the 4-row tiles, up to 4 at a time, where one head at a
// time fills one row of 4. Every row's sums run over the same terms in the same order as with one
// head per call: the same bits. Kt: the rotated keys (D × ld, zero or unread past ceil8(Tk));
// Qr: 4 × D; S: 4 rows of ld.
static void decode_rows(const ForwardArgs& a, const AttnShape& s, const float* Kt, int64_t ld, float* Qr, float* S) {
  const int64_t D = s.D, tkp = s.tk_pad(), n = s.visible(0), lo = s.first_visible(0);
  const bool limited = s.softcap > 0 || lo > 0;
  auto visible = [n](int64_t) { return n; };
  for (int64_t r0 = 0; r0 < s.group; r0 += 4) {
    const int64_t nr = std::min<int64_t>(4, s.group - r0);
    for (int64_t k = 0; k < nr; ++k) rotate(a.q + (r0 + k) * a.q_sh, Qr + k * D, s.q_start, s);
    std::fill(Qr + nr * D, Qr + 4 * D, 0.0f);
    scores(Qr, nr, D, Kt, ld, s.scale, visible, S);
    float m[4], sum[4];
    if (limited)
      for (int64_t k = 0; k < nr; ++k) limit_row(S + k * ld, n, lo, s);
    for (int64_t k = 0; k < nr; ++k) m[k] = row_max(S + k * ld, n);
    for (int64_t k = 0; k < nr; ++k) sum[k] = exps_row(S + k * ld, n, m[k]);
    if (lo > 0)
      for (int64_t k = 0; k < nr; ++k) std::fill(S + k * ld, S + k * ld + lo, 0.0f);
    for (int64_t k = 0; k < nr; ++k) normalize_row(S + k * ld, n, tkp, sum[k]);
    if (a.lse)
      for (int64_t k = 0; k < nr; ++k) a.lse[r0 + k] = m[k] + std::log(sum[k]);
    for (int64_t k = nr; k < 4; ++k) std::fill(S + k * ld, S + k * ld + tkp, 0.0f);
    pv(S, ld, nr, visible, a.v, a.v_st, D, a.o + r0 * a.o_sh, a.o_sh, /*accumulate=*/false);
  }
}

void decode(const ForwardArgs& a, const float* Kt, int64_t kt_ld, const AttnShape& s, float* scratch) {
  decode_rows(a, s, Kt, kt_ld, scratch, scratch + 4 * s.D);
}

void forward(const ForwardArgs& a, const AttnShape& s, float* scratch) {
#if defined(__AVX2__)
  if (lanes::takes(s)) return lanes_forward(a, s, scratch);
#endif
  const int64_t D = s.D, Tq = s.Tq, Tk = s.Tk, tqp = s.tq_pad(), tkp = s.tk_pad();
  float* Kt = scratch;             // D × tkp rotated keys, transposed
  float* Qr = Kt + D * tkp;        // tqp × D rotated queries of one head
  float* S = Qr + tqp * D;         // tqp × tkp scores, then probabilities
  float* rows = S + tqp * tkp;     // 8 × D rotated keys
  zero_columns(Kt, D, Tk, tkp);
  for (int64_t j0 = 0; j0 < Tk; j0 += 8) {
    const int64_t n = std::min<int64_t>(8, Tk - j0);
    for (int64_t j = 0; j < n; ++j) rotate(a.k + (j0 + j) * a.k_st, rows + j * D, j0 + j, s);
    transpose_rows(rows, D, n, D, Kt + j0, tkp);
  }
  if (Tq == 1) return decode_rows(a, s, Kt, tkp, Qr, S);
  std::fill(Qr + Tq * D, Qr + tqp * D, 0.0f);
  auto visible = [&](int64_t i) { return s.visible(i); };
  const bool limited = s.softcap > 0 || s.window > 0;
  for (int64_t r = 0; r < s.group; ++r) {
    for (int64_t i = 0; i < Tq; ++i) rotate(a.q + r * a.q_sh + i * a.q_st, Qr + i * D, s.q_start + i, s);
    scores(Qr, Tq, D, Kt, tkp, s.scale, visible, S);
    constexpr int64_t R = 4;  // rows at a time
    for (int64_t i = 0; i < Tq; i += R) {
      const int64_t nr = std::min(R, Tq - i);
      int64_t n[R];
      float m[R], sum[R];
      for (int64_t k = 0; k < nr; ++k) n[k] = s.visible(i + k);
      if (limited)
        for (int64_t k = 0; k < nr; ++k) limit_row(S + (i + k) * tkp, n[k], s.first_visible(i + k), s);
      for (int64_t k = 0; k < nr; ++k) m[k] = row_max(S + (i + k) * tkp, n[k]);
      for (int64_t k = 0; k < nr; ++k) sum[k] = exps_row(S + (i + k) * tkp, n[k], m[k]);
      if (s.window > 0)
        for (int64_t k = 0; k < nr; ++k) std::fill(S + (i + k) * tkp, S + (i + k) * tkp + s.first_visible(i + k), 0.0f);
      for (int64_t k = 0; k < nr; ++k) normalize_row(S + (i + k) * tkp, n[k], tkp, sum[k]);
      if (a.lse)
        for (int64_t k = 0; k < nr; ++k) a.lse[r * Tq + i + k] = m[k] + std::log(sum[k]);
    }
    for (int64_t i = Tq; i < tqp; ++i) std::fill(S + i * tkp, S + (i + 1) * tkp, 0.0f);
    pv(S, tkp, Tq, visible, a.v, a.v_st, D, a.o + r * a.o_sh, a.o_st, /*accumulate=*/false);
  }
}

void backward(const BackwardArgs& a, const AttnShape& s, float* scratch) {
#if defined(__AVX2__)
  if (lanes::takes(s)) return lanes_backward(a, s, scratch);
#endif
  const int64_t D = s.D, Tq = s.Tq, Tk = s.Tk, tqp = s.tq_pad(), tkp = s.tk_pad();
  float* Kr = scratch;           // tkp × D rotated keys (rows)
  float* Kt = Kr + tkp * D;      // D × tkp rotated keys, transposed
  float* Vt = Kt + D * tkp;      // D × tkp values, transposed
  float* Qr = Vt + D * tkp;      // tqp × D rotated queries of one head
  float* dO = Qr + tqp * D;      // tqp × D
  float* P = dO + tqp * D;       // tqp × tkp recomputed probabilities
  float* dS = P + tqp * tkp;     // tqp × tkp
  float* dK = dS + tqp * tkp;    // tkp × D rotated-space key gradient
  float* dV = dK + tkp * D;      // tkp × D
  float* dq = dV + tkp * D;      // tqp × D rotated-space query gradient
  float* delta = dq + tqp * D;   // tqp
  float* G = delta + tqp;        // tqp × tkp: the soft-cap's derivative (with one only)
  std::fill(Kr + Tk * D, Kr + tkp * D, 0.0f);
  zero_columns(Kt, 2 * D, Tk, tkp);  // Kt and Vt
  for (int64_t j = 0; j < Tk; ++j) rotate(a.k + j * a.k_st, Kr + j * D, j, s);
  transpose_rows(Kr, D, Tk, D, Kt, tkp);
  transpose_rows(a.v, a.v_st, Tk, D, Vt, tkp);
  std::fill(Qr + Tq * D, Qr + tqp * D, 0.0f);
  std::fill(dO + Tq * D, dO + tqp * D, 0.0f);
  std::fill(dK, dK + 2 * tkp * D, 0.0f);  // dK and dV
  auto visible = [&](int64_t i) { return s.visible(i); };
  auto first = [&](int64_t j) { return std::max<int64_t>(0, j - s.q_start); };  // first row seeing key j
  for (int64_t r = 0; r < s.group; ++r) {
    for (int64_t i = 0; i < Tq; ++i) {
      rotate(a.q + r * a.q_sh + i * a.q_st, Qr + i * D, s.q_start + i, s);
      const float *g = a.dout + r * a.o_sh + i * a.o_st, *o = a.o + r * a.o_sh + i * a.o_st;
      copy_row(dO + i * D, g, D);
      delta[i] = dot_row(g, o, D);
    }
    scores(Qr, Tq, D, Kt, tkp, s.scale, visible, P);
    if (s.softcap > 0)
      for (int64_t i = 0; i < Tq; ++i) cap_row(P + i * tkp, s.visible(i), s.softcap, G + i * tkp);
    for (int64_t i = 0; i < Tq; ++i) probs_row(P + i * tkp, s.visible(i), tkp, a.lse[r * Tq + i]);
    if (s.window > 0)
      for (int64_t i = 0; i < Tq; ++i) std::fill(P + i * tkp, P + i * tkp + s.first_visible(i), 0.0f);
    for (int64_t i = Tq; i < tqp; ++i) std::fill(P + i * tkp, P + (i + 1) * tkp, 0.0f);
    scores(dO, Tq, D, Vt, tkp, 1.0f, visible, dS);  // dP
    for (int64_t i = 0; i < tqp; ++i) {
      float* ds = dS + i * tkp;
      const float* p = P + i * tkp;
      const int64_t n = i < Tq ? s.visible(i) : 0;
      const v8f di = splat(i < Tq ? delta[i] : 0.0f), sc = splat(s.scale);
      int64_t j = 0;
      if (s.softcap > 0)
        for (const float* g = G + i * tkp; j < n; j += 8) vstore(ds + j, vload(p + j) * (vload(ds + j) - di) * sc * vload(g + j));
      else
        for (; j < n; j += 8) vstore(ds + j, vload(p + j) * (vload(ds + j) - di) * sc);  // P is 0 past n
      zero_from(ds, j, tkp);
    }
    pv(dS, tkp, Tq, visible, Kr, D, D, dq, D, /*accumulate=*/false);
    for (int64_t i = 0; i < Tq; ++i) unrotate(dq + i * D, a.dq + r * a.dq_sh + i * a.dq_st, s.q_start + i, s);
    ptx(dS, tkp, Tq, Tk, first, Qr, D, D, dK, D);
    ptx(P, tkp, Tq, Tk, first, dO, D, D, dV, D);
  }
  for (int64_t j = 0; j < Tk; ++j) {
    unrotate(dK + j * D, a.dk + j * a.dk_st, j, s);
    copy_row(a.dv + j * a.dv_st, dV + j * D, D);
  }
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
