// The fused attention kernels for head dimension 16, queries in vector lanes (attention_impl.h
// includes it, once per instruction set, with LMX_KERNEL_NS set; AVX2 and AVX-512 only).
//
// With 16 numbers per head, the row-wise kernels spent most of their time outside the FMAs (row
// maxima and sums across lanes, short dot products, a pass per softmax step). Here a block of 16
// queries sits in the 16 lanes of one vector: the score of key j for all 16 queries is one chain
// of 16 FMAs over the block's transposed, rotated queries, broadcasting key j's numbers; the
// softmax runs down the keys, lane by lane, with no sums across lanes; the output's 16 columns
// are 16 accumulators (Σ_j e_j·V[j], divided by Σ_j e_j at the end). The backward recomputes the
// block's probabilities from the log-sum-exp and forms dQ the same way, dK and dV as key rows
// (the block's 16 query rows times its transposed probabilities and score gradients).
// A query's results depend only on its own lane, not on which block or lane it sits in. Every
// sum runs in one order in both variants (16 lanes per register with AVX-512, two registers with AVX2): the
// same bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu_kernels.h"
#include "kernels/vec.h"

#ifndef LMX_KERNEL_NS
#error "define LMX_KERNEL_NS before including attention_lanes.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

namespace lanes {

constexpr int64_t L = 16;  // queries per block = head dimension

// vL: 16 lanes. With AVX-512 one v16f; with AVX2 two v8f (GCC's own lowering of 64-byte vectors
// to AVX2 goes through general registers, 5x slower), with the same arithmetic lane for lane.
#if defined(__AVX512F__)
typedef v16f vL;
static inline __attribute__((always_inline)) vL ld(const float* p) { return vload16(p); }
static inline __attribute__((always_inline)) void st(float* p, vL x) { vstore16(p, x); }
static inline __attribute__((always_inline)) vL bc(float a) { return splat16(a); }
static inline __attribute__((always_inline)) vL iota() { return Lanes16::iota(); }
static inline __attribute__((always_inline)) vL lexp(vL x) { return vexp(x); }
static inline __attribute__((always_inline)) vL vmax(vL a, vL b) { return a > b ? a : b; }
static inline __attribute__((always_inline)) vL ltanh(vL x) { return vtanh(x); }
// a where j <= pos, else b
static inline __attribute__((always_inline)) vL if_le(float j, vL pos, vL a, vL b) { return j <= pos ? a : b; }
// a where lo <= j <= pos, else b
static inline __attribute__((always_inline)) vL if_in(float j, vL lo, vL pos, vL a, vL b) {
  return (j >= lo) & (j <= pos) ? a : b;
}
#else
struct vL {
  v8f lo = {}, hi = {};
};
static inline __attribute__((always_inline)) vL operator+(vL a, vL b) { return {a.lo + b.lo, a.hi + b.hi}; }
static inline __attribute__((always_inline)) vL operator-(vL a, vL b) { return {a.lo - b.lo, a.hi - b.hi}; }
static inline __attribute__((always_inline)) vL operator*(vL a, vL b) { return {a.lo * b.lo, a.hi * b.hi}; }
static inline __attribute__((always_inline)) vL operator+(vL a, float b) { return {a.lo + b, a.hi + b}; }
static inline __attribute__((always_inline)) vL operator*(vL a, float b) { return {a.lo * b, a.hi * b}; }
static inline __attribute__((always_inline)) vL operator*(float a, vL b) { return {a * b.lo, a * b.hi}; }
static inline __attribute__((always_inline)) vL operator/(float a, vL b) { return {a / b.lo, a / b.hi}; }
static inline __attribute__((always_inline)) vL& operator+=(vL& a, vL b) { return a = a + b; }
static inline __attribute__((always_inline)) vL ld(const float* p) { return {vload(p), vload(p + 8)}; }
static inline __attribute__((always_inline)) void st(float* p, vL x) { vstore(p, x.lo), vstore(p + 8, x.hi); }
static inline __attribute__((always_inline)) vL bc(float a) { return {splat(a), splat(a)}; }
static inline __attribute__((always_inline)) vL iota() { return {Lanes8::iota(), Lanes8::iota() + 8.0f}; }
static inline __attribute__((always_inline)) vL lexp(vL x) { return {vexp(x.lo), vexp(x.hi)}; }
static inline __attribute__((always_inline)) vL vmax(vL a, vL b) {
  return {a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}
static inline __attribute__((always_inline)) vL if_le(float j, vL pos, vL a, vL b) {
  return {splat(j) <= pos.lo ? a.lo : b.lo, splat(j) <= pos.hi ? a.hi : b.hi};
}
static inline __attribute__((always_inline)) vL operator-(float a, vL b) { return {a - b.lo, a - b.hi}; }
static inline __attribute__((always_inline)) vL ltanh(vL x) { return {vtanh(x.lo), vtanh(x.hi)}; }
static inline __attribute__((always_inline)) vL if_in(float j, vL lo, vL pos, vL a, vL b) {
  const v8f jv = splat(j);
  return {(jv >= lo.lo) & (jv <= pos.lo) ? a.lo : b.lo, (jv >= lo.hi) & (jv <= pos.hi) ? a.hi : b.hi};
}
#endif

// dst[c·16 + r] = src[r·src_st + c] for a 16 × 16 block (four 8 × 8 transposes).
static inline __attribute__((always_inline)) void transpose16(const float* src, int64_t src_st, float* dst) {
  for (int r = 0; r < 16; r += 8)
    for (int c = 0; c < 16; c += 8) transpose8(src + r * src_st + c, src_st, dst + c * 16 + r, 16);
}

// Rows [0, n) of x (strided, 16 floats each) rotated to their positions pos0 + l into the 16 × 16
// block `rows`, rows [n, 16) zeroed; `cols` gets its transpose.
static inline __attribute__((always_inline)) void load_block(const float* x, int64_t x_st, int64_t n, int64_t pos0,
                                                            const AttnShape& s, bool rotated, float* rows,
                                                            float* cols) {
  for (int64_t l = 0; l < n; ++l) {
    if (rotated)
      rotate(x + l * x_st, rows + l * L, pos0 + l, s);
    else
      copy_row(rows + l * L, x + l * x_st, L);
  }
  std::fill(rows + n * L, rows + L * L, 0.0f);
  transpose16(rows, L, cols);
}

// acc[k] = Σ_d X[(j + k)·x_st + d]·c[d] for k < K: K keys' dot products with the block's 16
// columns c[d] = c + 16·d, d in order.
template <int K>
static inline __attribute__((always_inline)) void dots(const float* X, int64_t x_st, int64_t j, const float* c,
                                                      vL* acc) {
  // From zero, so that every term is one FMA: with acc = x0·c0 first, which of x0·c0 and x1·c1
  // the compiler fused varied with K (and the AVX-512 variant lost the AVX2 bits).
  for (int k = 0; k < K; ++k) acc[k] = vL{};
  for (int d = 0; d < L; ++d) {
    const vL cd = ld(c + d * L);
    for (int k = 0; k < K; ++k) acc[k] += X[(j + k) * x_st + d] * cd;
  }
}

// dots() of keys j.. with c (rows of X) into acc and with e (rows of Y) into bcc: in one loop
// where the registers hold both (AVX-512), else one after the other (the same bits).
template <int K>
static inline __attribute__((always_inline)) void dots2(const float* X, int64_t x_st, const float* Y, int64_t y_st,
                                                       int64_t j, const float* c, const float* e, vL* acc, vL* bcc) {
#if defined(__AVX512F__)
  for (int k = 0; k < K; ++k) acc[k] = bcc[k] = vL{};
  for (int d = 0; d < L; ++d) {
    const vL cd = ld(c + d * L), ed = ld(e + d * L);
    for (int k = 0; k < K; ++k) {
      acc[k] += X[(j + k) * x_st + d] * cd;
      bcc[k] += Y[(j + k) * y_st + d] * ed;
    }
  }
#else
  dots<K>(X, x_st, j, c, acc);
  dots<K>(Y, y_st, j, e, bcc);
#endif
}

// Keys (and output columns) per register tile: AVX-512 holds a vL in one register, AVX2 in two
// of its 16; the tiles only group independent sums (the same bits either way).
#if defined(__AVX512F__)
constexpr int kKeys = 8, kCols = 16;
#else
constexpr int kKeys = 4, kCols = 4;
#endif

// fn(j, K) over [begin, n) in steps of kKeys keys, then single ones.
template <class Fn>
static inline __attribute__((always_inline)) void over_keys(int64_t begin, int64_t n, Fn&& fn) {
  int64_t j = begin;
  for (; j + kKeys <= n; j += kKeys) fn(j, std::integral_constant<int, kKeys>{});
  for (; j < n; ++j) fn(j, std::integral_constant<int, 1>{});
}

// fn(l, Σ_{j in [begin, n)} E[j·16 + l]·X[j·x_st + (0..15)]) for rows l < rows: the block's output
// rows, with the lanes' weights e_j (rows of E) broadcast against rows of X; kCols rows at a time.
template <class Fn>
static inline __attribute__((always_inline)) void mix_rows(const float* X, int64_t x_st, const float* E, int64_t begin,
                                                          int64_t n, int64_t rows, Fn&& fn) {
  for (int64_t l0 = 0; l0 < rows; l0 += kCols) {
    vL t[kCols] = {};
    for (int64_t j = begin; j < n; ++j) {
      const vL x = ld(X + j * x_st);
      const float* e = E + j * L + l0;
      for (int l = 0; l < kCols; ++l) t[l] += e[l] * x;
    }
    for (int l = 0; l < kCols && l0 + l < rows; ++l) fn(l0 + l, t[l]);
  }
}

// The lanes kernels take head dimension 16, except a few queries over a KV cache (decoding:
// q_start > 0, fewer than 16 queries), where a block of 16 lanes would mostly compute padding
// and the row kernels' 4-row tiles waste less. Training (q_start 0) always takes them.
static inline bool takes(const AttnShape& s) { return s.D == L && (s.q_start == 0 || s.Tq >= L); }

}  // namespace lanes

// kWindow: a sliding window (each lane's first key lo = pos − window + 1, the block's keys from
// its first lane's lo on); kCap: the soft-cap c·tanh(s/c) on the scaled scores. Both false is
// the plain causal kernel, the code it was before either existed (the same bits).
template <bool kWindow, bool kCap>
void lanes_forward_as(const ForwardArgs& a, const AttnShape& s, float* scratch) {
  using namespace lanes;
  const int64_t Tq = s.Tq, Tk = s.Tk;
  // lanes_scratch(Tk, false) floats (cpu_kernels.h):
  float* Kr = scratch;         // Tk rows of rotated keys
  float* St = Kr + Tk * L;     // a block's scaled scores, then exps, key by key (16 lanes each)
  float* rows = St + Tk * L;   // 16 × 16
  float* cols = rows + L * L;  // 16 × 16
  for (int64_t j = 0; j < Tk; ++j) rotate(a.k + j * a.k_st, Kr + j * L, j, s);
  const vL lane = iota();
  const float cap = s.softcap, inv_cap = kCap ? 1.0f / s.softcap : 0.0f;
  for (int64_t r = 0; r < s.group; ++r)
    for (int64_t q0 = 0; q0 < Tq; q0 += L) {
      const int64_t nq = std::min(L, Tq - q0), nk = s.visible(q0 + nq - 1), j0 = kWindow ? s.first_visible(q0) : 0;
      const vL pos = lane + static_cast<float>(s.q_start + q0);  // each lane's query position
      const vL lo = pos + static_cast<float>(1 - s.window);      // each lane's first key (kWindow)
      auto seen = [&](int64_t j, vL x, vL otherwise) {
        if constexpr (kWindow)
          return if_in(static_cast<float>(j), lo, pos, x, otherwise);
        else
          return if_le(static_cast<float>(j), pos, x, otherwise);
      };
      load_block(a.q + r * a.q_sh + q0 * a.q_st, a.q_st, nq, s.q_start + q0, s, true, rows, cols);
      // Scores and their maximum down the keys; keys a query does not see are −inf there.
      vL m = bc(-INFINITY);
      over_keys(j0, nk, [&](int64_t j, auto KK) {
        constexpr int K = decltype(KK)::value;
        vL acc[K];
        dots<K>(Kr, L, j, cols, acc);
        for (int k = 0; k < K; ++k) {
          vL x = acc[k] * s.scale;
          if constexpr (kCap) x = ltanh(x * inv_cap) * cap;
          x = seen(j + k, x, bc(-INFINITY));
          st(St + (j + k) * L, x);
          m = vmax(m, x);
        }
      });
      // e_j = exp(s_j − m) (0 where unseen), Σ e_j and Σ e_j·V[j] per lane.
      vL sum = {};
      for (int64_t j = j0; j < nk; ++j) {  // apart from the products: independent exps pipeline
        const vL e = seen(j, lexp(ld(St + j * L) - m), vL{});
        st(St + j * L, e);
        sum += e;
      }
      float inv[L];
      st(inv, 1.0f / sum);
      float* o = a.o + r * a.o_sh + q0 * a.o_st;
      mix_rows(a.v, a.v_st, St, j0, nk, nq, [&](int64_t l, vL x) { st(o + l * a.o_st, x * inv[l]); });
      if (a.lse) {
        float mf[L], sf[L];
        st(mf, m);
        st(sf, sum);
        for (int64_t l = 0; l < nq; ++l) a.lse[r * Tq + q0 + l] = mf[l] + std::log(sf[l]);
      }
    }
}

void lanes_forward(const ForwardArgs& a, const AttnShape& s, float* scratch) {
  if (s.window > 0)
    return s.softcap > 0 ? lanes_forward_as<true, true>(a, s, scratch) : lanes_forward_as<true, false>(a, s, scratch);
  return s.softcap > 0 ? lanes_forward_as<false, true>(a, s, scratch) : lanes_forward_as<false, false>(a, s, scratch);
}

template <bool kWindow, bool kCap>
void lanes_backward_as(const BackwardArgs& a, const AttnShape& s, float* scratch) {
  using namespace lanes;
  const int64_t Tq = s.Tq, Tk = s.Tk;
  // lanes_scratch(Tk, true) floats (cpu_kernels.h):
  float* Kr = scratch;            // Tk rows of rotated keys
  float* dK = Kr + Tk * L;        // rotated-space key gradient, Tk rows
  float* dV = dK + Tk * L;        // value gradient
  float* Pt = dV + Tk * L;        // a block's probabilities, key by key
  float* dSt = Pt + Tk * L;       // a block's score gradients, key by key
  float* qrows = dSt + Tk * L;    // 16 × 16 rotated queries
  float* orows = qrows + L * L;   // 16 × 16 output gradients
  float* buf = orows + L * L;     // 16 × 16
  float* cols = buf + L * L;      // 16 × 16
  for (int64_t j = 0; j < Tk; ++j) rotate(a.k + j * a.k_st, Kr + j * L, j, s);
  std::fill(dK, dK + 2 * Tk * L, 0.0f);  // dK and dV
  const vL lane = iota();
  const float cap = s.softcap, inv_cap = kCap ? 1.0f / s.softcap : 0.0f;
  for (int64_t r = 0; r < s.group; ++r)
    for (int64_t q0 = 0; q0 < Tq; q0 += L) {
      const int64_t nq = std::min(L, Tq - q0), nk = s.visible(q0 + nq - 1), j0 = kWindow ? s.first_visible(q0) : 0;
      const vL pos = lane + static_cast<float>(s.q_start + q0);
      const vL lo = pos + static_cast<float>(1 - s.window);
      const float* dout = a.dout + r * a.o_sh + q0 * a.o_st;
      float lf[L] = {}, df[L] = {}, livef[L] = {};  // live: 1 in the block's queries, 0 in the padding lanes
      for (int64_t l = 0; l < nq; ++l) {
        lf[l] = a.lse[r * Tq + q0 + l];
        df[l] = dot_row(dout + l * a.o_st, a.o + r * a.o_sh + (q0 + l) * a.o_st, L);
        livef[l] = 1.0f;
      }
      const vL lse = ld(lf), delta = ld(df), live = ld(livef);
      // P = exp(scale·q·k − lse), 0 where unseen and in the padding lanes; dS = P·(dO·v − δ)·scale
      // (with a cap: P = exp(c·t − lse), t = tanh(scale·q·k / c), and dS gets the factor 1 − t²)
      load_block(a.q + r * a.q_sh + q0 * a.q_st, a.q_st, nq, s.q_start + q0, s, true, qrows, cols);
      load_block(dout, a.o_st, nq, 0, s, false, orows, buf);
      over_keys(j0, nk, [&](int64_t j, auto KK) {
        constexpr int K = decltype(KK)::value;
        vL sc[K], dp[K];
        dots2<K>(Kr, L, a.v, a.v_st, j, cols, buf, sc, dp);
        for (int k = 0; k < K; ++k) {
          const float jf = static_cast<float>(j + k);
          if constexpr (kCap) {
            const vL t = ltanh(sc[k] * s.scale * inv_cap);
            vL p = lexp(t * cap - lse) * live;
            p = kWindow ? if_in(jf, lo, pos, p, vL{}) : if_le(jf, pos, p, vL{});
            st(Pt + (j + k) * L, p);
            st(dSt + (j + k) * L, p * (dp[k] - delta) * s.scale * (1.0f - t * t));
          } else {
            vL p = lexp(sc[k] * s.scale - lse) * live;
            p = kWindow ? if_in(jf, lo, pos, p, vL{}) : if_le(jf, pos, p, vL{});
            st(Pt + (j + k) * L, p);
            st(dSt + (j + k) * L, p * (dp[k] - delta) * s.scale);
          }
        }
      });
      // dQ = dS·K, row by row, rotated back
      float* dq = a.dq + r * a.dq_sh + q0 * a.dq_st;
      mix_rows(Kr, L, dSt, j0, nk, nq, [&](int64_t l, vL g) {
        st(cols + l * L, g);
        unrotate(cols + l * L, dq + l * a.dq_st, s.q_start + q0 + l, s);
      });
      // dK[j] += Σ_l dS[l][j]·q[l], dV[j] += Σ_l P[l][j]·dO[l], l over the block's 16 queries in order
      over_keys(j0, nk, [&](int64_t j, auto KK) {
        constexpr int K = decltype(KK)::value;
        vL dk[K], dv[K];
        dots2<K>(dSt, L, Pt, L, j, qrows, orows, dk, dv);
        for (int k = 0; k < K; ++k) {
          st(dK + (j + k) * L, ld(dK + (j + k) * L) + dk[k]);
          st(dV + (j + k) * L, ld(dV + (j + k) * L) + dv[k]);
        }
      });
    }
  for (int64_t j = 0; j < Tk; ++j) {
    unrotate(dK + j * L, a.dk + j * a.dk_st, j, s);
    copy_row(a.dv + j * a.dv_st, dV + j * L, L);
  }
}

void lanes_backward(const BackwardArgs& a, const AttnShape& s, float* scratch) {
  if (s.window > 0)
    return s.softcap > 0 ? lanes_backward_as<true, true>(a, s, scratch) : lanes_backward_as<true, false>(a, s, scratch);
  return s.softcap > 0 ? lanes_backward_as<false, true>(a, s, scratch) : lanes_backward_as<false, false>(a, s, scratch);
}

}  // namespace

}  // namespace lmx::kernels::LMX_KERNEL_NS
