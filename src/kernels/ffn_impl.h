// The fused FFN activation kernels (declared in cpu_kernels.h, dispatched like the
// attention kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS
// set. Plain φ(x) over a flat array, and the gated φ(g)·u over rows of a packed gate|up
// projection. Each op's arithmetic is one template over V = v16f (AVX-512), v8f or float (the
// scalar tail, whose exp is std::exp): element-wise, so the AVX-512 and AVX2 variants give the
// same bits.
#pragma once
#include <cmath>
#include <type_traits>

#include "kernels/cpu_kernels.h"
#include "kernels/vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// vexp_capped caps x at 88.3 as the vector exp does (finite: e·σ below stays a number where σ
// underflows); the scalar tail's plain exp is vec.h's vexp(float).
static inline __attribute__((always_inline)) float vexp_capped(float x) { return std::exp(std::fmin(x, 88.3f)); }
#if defined(__AVX512F__)
static inline __attribute__((always_inline)) v16f vexp_capped(v16f x) { return vexp(x); }
#endif
static inline __attribute__((always_inline)) v8f vexp_capped(v8f x) { return vexp(x); }

// SiLU and swish: σ(βx) = 1/(1+e^(−βx)); φ = x·σ(βx), φ' = σ·(1 + βx·(1 − σ)) (SiLU: β = 1).
// SwiGLU keeps the expressions it had as its own kernel (silu_mul, silu_mul_grad): the same bits.
template <class V>
static inline __attribute__((always_inline)) V silu_mul(V g, V u) {
  return g / (1.0f + vexp(-g)) * u;
}
template <class V>
static inline __attribute__((always_inline)) void silu_mul_grad(V g, V u, V dy, V& dg, V& du) {
  const V sg = 1.0f / (1.0f + vexp(-g));
  dg = dy * u * sg * (1.0f + g * (1.0f - sg));
  du = dy * g * sg;
}

// φ(x) and dy·φ'(x) per activation. An op with kKeeps (GELU) can also hand the forward's
// expensive part to the backward: phi_kept writes it to k, grad_kept takes it back (the same
// arithmetic as grad, so the same bits, without recomputing it).
// 1 − σ is written e·σ (e = e^(−βx)): no cancellation where σ is near 1.
struct NoKeep {
  static constexpr bool kKeeps = false;
};
struct SwishOp : NoKeep {
  float beta;
  template <class V>
  V phi(V x) const { return x / (1.0f + vexp(-beta * x)); }
  template <class V>
  V grad(V x, V dy) const {
    const V e = vexp_capped(-beta * x), s = 1.0f / (1.0f + e);
    return dy * s * (1.0f + beta * x * (e * s));
  }
};
// SiLU: swish with β = 1 (its own type for SwiGLU's expressions below).
struct SiluOp : SwishOp {
  SiluOp() : SwishOp{{}, 1.0f} {}
};

// GELU, tanh approximation: 0.5x(1 + tanh(u)) with u = √(2/π)(x + 0.044715x³), written as
// x·σ(2u) (the same function: 0.5(1 + tanh(u)) = σ(2u)), so that one exp serves and no
// 1 + tanh cancels for negative x. φ' = σ + x·σ(1 − σ)·2u', σ(1 − σ) = e·σ² with e = e^(−2u).
struct GeluTanhOp : NoKeep {
  static constexpr float k2 = 1.5957691216057308f;  // 2·√(2/π)
  static constexpr float kappa = 0.044715f;
  template <class V>
  V phi(V x) const { return x / (1.0f + vexp(-k2 * (x + kappa * x * x * x))); }
  template <class V>
  V grad(V x, V dy) const {
    const V x2 = x * x;
    const V e = vexp_capped(-k2 * (x + kappa * x2 * x)), s = 1.0f / (1.0f + e);
    return dy * (s + x * (e * s * s) * (k2 * (1.0f + 3.0f * kappa * x2)));
  }
};

// GELU, exact: x·Φ(x), Φ(x) = erfc(−x/√2)/2. erfc(a) for a >= 0 as t·exp(−a² + P(t)),
// t = 1/(1 + a/2) (Numerical Recipes' erfcc, relative error < 1.2e-7 for every a >= 0), and
// erfc(−a) = 2 − erfc(a): Φ keeps its relative accuracy where it is small (x < 0).
// φ' = Φ(x) + x·φ(x), φ(x) = exp(−x²/2)/√(2π).
struct GeluOp {
  static constexpr bool kKeeps = true;  // Φ(x): an erfc (a division and an exp) per element
  template <class V>
  static V half_erfc_abs(V a) {  // erfc(a)/2, a >= 0
    const V t = 1.0f / (1.0f + 0.5f * a);
    V p = t * 0.17087277f - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    return 0.5f * t * vexp(p - a * a);
  }
  template <class V>
  static V cdf(V x) {  // Φ(x)
    const V z = x * -0.70710678118654752f;  // erfc's argument −x/√2
    const V zero{};
    const V h = half_erfc_abs(z < zero ? -z : z);
    return z < zero ? 1.0f - h : h;
  }
  template <class V>
  V phi(V x) const { return x * cdf(x); }
  template <class V>
  V grad(V x, V dy) const { return grad_kept(x, cdf(x), dy); }
  template <class V>
  V phi_kept(V x, V& k) const {
    k = cdf(x);
    return x * k;
  }
  template <class V>
  V grad_kept(V x, V k, V dy) const {
    return dy * (k + x * (0.39894228040143268f * vexp(-0.5f * x * x)));
  }
};

// ReLU: x < 0 ? 0 : x (NaN stays NaN, as LibTorch's); φ' = 1 for x > 0, else 0. ReGLU's products
// are LibTorch's: relu(g)·u, and dg = (g > 0 ? dy·u : 0).
struct ReluOp : NoKeep {
  template <class V>
  V phi(V x) const {
    const V zero{};
    return x < zero ? zero : x;
  }
  template <class V>
  V grad(V x, V dy) const {
    const V zero{};
    return x > zero ? dy : zero;
  }
};

// Squared ReLU (Primer, So et al. 2021): r·r with r = relu(x), as LibTorch's relu(x).square();
// φ' = 2x for x > 0, else 0.
struct Relu2Op : NoKeep {
  template <class V>
  V phi(V x) const {
    const V zero{};
    const V r = x < zero ? zero : x;
    return r * r;
  }
  template <class V>
  V grad(V x, V dy) const {
    const V zero{};
    return x > zero ? dy * (x + x) : zero;
  }
};

// f(lanes, i) over [0, n) with the widest lanes first (vec.h's Lanes16, Lanes8, Lanes1):
// every loop below takes the same lanes, so each element's arithmetic is the same.
template <class F>
static inline __attribute__((always_inline)) void for_lanes(int64_t n, F&& f) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) f(Lanes16{}, i);
#endif
  for (; i + 8 <= n; i += 8) f(Lanes8{}, i);
  for (; i < n; ++i) f(Lanes1{}, i);
}

// Plain: y = φ(x) (and keep = the op's kept part, where it keeps one and keep is not null);
// dx = dy·φ'(x).
template <class Op>
static inline __attribute__((always_inline)) void map1(const Op& op, const float* x, int64_t n, float* y,
                                                       float* keep) {
  if constexpr (Op::kKeeps) {
    if (keep) {
      for_lanes(n, [&](auto L, int64_t i) {
        decltype(L.load(x)) k;
        L.store(y + i, op.phi_kept(L.load(x + i), k));
        L.store(keep + i, k);
      });
      return;
    }
  }
  for_lanes(n, [&](auto L, int64_t i) { L.store(y + i, op.phi(L.load(x + i))); });
}
template <class Op>
static inline __attribute__((always_inline)) void map2(const Op& op, const float* x, const float* keep,
                                                       const float* dy, int64_t n, float* dx) {
  if constexpr (Op::kKeeps) {
    if (keep) {
      for_lanes(n, [&](auto L, int64_t i) {
        L.store(dx + i, op.grad_kept(L.load(x + i), L.load(keep + i), L.load(dy + i)));
      });
      return;
    }
  }
  for_lanes(n, [&](auto L, int64_t i) { L.store(dx + i, op.grad(L.load(x + i), L.load(dy + i))); });
}

// Gated: o = φ(g)·u; dg = dy·u·φ'(g) (for ReLU: φ' masks dy·u), du = dy·φ(g). With a kept part
// k (GELU's Φ(g)), φ(g) and φ'(g) come from it.
template <class Op, class V>
static inline __attribute__((always_inline)) V glu(const Op& op, V g, V u) { return op.phi(g) * u; }
template <class Op, class V>
static inline __attribute__((always_inline)) void glu_grad(const Op& op, V g, V u, V dy, V& dg, V& du) {
  dg = op.grad(g, dy * u);
  du = dy * op.phi(g);
}
template <class Op, class V>
static inline __attribute__((always_inline)) void glu_grad_kept(const Op& op, V g, V k, V u, V dy, V& dg, V& du) {
  dg = op.grad_kept(g, k, dy * u);
  du = dy * (g * k);  // φ(g) = g·Φ(g), as phi_kept computes it
}
// SwiGLU: its own expressions (above).
template <class V>
static inline __attribute__((always_inline)) V glu(const SiluOp&, V g, V u) { return silu_mul(g, u); }
template <class V>
static inline __attribute__((always_inline)) void glu_grad(const SiluOp&, V g, V u, V dy, V& dg, V& du) {
  silu_mul_grad(g, u, dy, dg, du);
}

// Rows ahead of the one computed that the gated kernels prefetch (prefetch_floats, cpu_kernels.h).
constexpr int64_t kPrefetchRows = 2;

// Rows of the packed gate|up projection gu (rows, 2F); out and keep (rows, F).
template <class Op>
static inline __attribute__((always_inline)) void glu_rows(const Op& op, const float* gu, int64_t rows, int64_t F,
                                                           float* out, float* keep) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F;
    float *o = out + r * F, *kr = keep ? keep + r * F : nullptr;
    if (r + kPrefetchRows < rows) prefetch_floats(g + kPrefetchRows * 2 * F, 2 * F);
    if constexpr (Op::kKeeps) {
      if (kr) {
        for_lanes(F, [&](auto L, int64_t f) {
          decltype(L.load(g)) k;
          L.store(o + f, op.phi_kept(L.load(g + f), k) * L.load(u + f));
          L.store(kr + f, k);
        });
        continue;
      }
    }
    for_lanes(F, [&](auto L, int64_t f) { L.store(o + f, glu(op, L.load(g + f), L.load(u + f))); });
  }
}
template <class Op>
static inline __attribute__((always_inline)) void glu_grad_rows(const Op& op, const float* gu, const float* keep,
                                                                const float* dout, int64_t rows, int64_t F,
                                                                float* dgu) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F, *dy = dout + r * F, *kr = keep ? keep + r * F : nullptr;
    float *dg = dgu + r * 2 * F, *du = dg + F;
    if (r + kPrefetchRows < rows) {
      prefetch_floats(g + kPrefetchRows * 2 * F, 2 * F);
      prefetch_floats(dy + kPrefetchRows * F, F);
      if (kr) prefetch_floats(kr + kPrefetchRows * F, F);
    }
    if constexpr (Op::kKeeps) {
      if (kr) {
        for_lanes(F, [&](auto L, int64_t f) {
          decltype(L.load(g)) dgv, duv;
          glu_grad_kept(op, L.load(g + f), L.load(kr + f), L.load(u + f), L.load(dy + f), dgv, duv);
          L.store(dg + f, dgv);
          L.store(du + f, duv);
        });
        continue;
      }
    }
    for_lanes(F, [&](auto L, int64_t f) {
      decltype(L.load(g)) dgv, duv;
      glu_grad(op, L.load(g + f), L.load(u + f), L.load(dy + f), dgv, duv);
      L.store(dg + f, dgv);
      L.store(du + f, duv);
    });
  }
}

// An activation of a program's own (ActKind::Custom): its scalar φ and φ' a lane at a time.
struct CustomOp : NoKeep {
  const CustomAct* f;
  float beta;
  template <class V>
  V phi(V x) const {
    if constexpr (std::is_same_v<V, float>) {
      return f->phi(x, beta);
    } else {
      for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i) x[i] = f->phi(x[i], beta);
      return x;
    }
  }
  template <class V>
  V grad(V x, V dy) const {
    if constexpr (std::is_same_v<V, float>) {
      return dy * f->grad(x, beta);
    } else {
      for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i) dy[i] *= f->grad(x[i], beta);
      return dy;
    }
  }
};

// The soft-cap c·tanh(x/c) (β = c) of the output logits (model.logit_softcap), not an FFN's:
// φ' = 1 − tanh²(x/c), the tanh computed again from x.
struct SoftCapOp : NoKeep {
  float c;
  template <class V>
  V phi(V x) const { return vtanh(x * (1.0f / c)) * c; }
  template <class V>
  V grad(V x, V dy) const {
    const V t = vtanh(x * (1.0f / c));
    return dy * (1.0f - t * t);
  }
};

// Calls f with the op of act.kind.
template <class F>
static inline __attribute__((always_inline)) void with_op(const ActOp& act, F&& f) {
  switch (act.kind) {
    case ActKind::Relu: return f(ReluOp{});
    case ActKind::Gelu: return f(GeluOp{});
    case ActKind::GeluTanh: return f(GeluTanhOp{});
    case ActKind::Silu: return f(SiluOp{});
    case ActKind::Swish: return f(SwishOp{{}, act.beta});
    case ActKind::Relu2: return f(Relu2Op{});
    case ActKind::Custom: return f(CustomOp{{}, act.custom, act.beta});
    case ActKind::SoftCap: return f(SoftCapOp{{}, act.beta});
  }
}

}  // namespace

void act_forward(const ActOp& act, const float* x, int64_t n, float* y, float* keep) {
  with_op(act, [&](const auto& op) { map1(op, x, n, y, keep); });
}

void act_backward(const ActOp& act, const float* x, const float* keep, const float* dy, int64_t n, float* dx) {
  with_op(act, [&](const auto& op) { map2(op, x, keep, dy, n, dx); });
}

void glu_forward(const ActOp& act, const float* gu, int64_t rows, int64_t F, float* out, float* keep) {
  with_op(act, [&](const auto& op) { glu_rows(op, gu, rows, F, out, keep); });
}

void glu_backward(const ActOp& act, const float* gu, const float* keep, const float* dout, int64_t rows, int64_t F,
                  float* dgu) {
  with_op(act, [&](const auto& op) { glu_grad_rows(op, gu, keep, dout, rows, F, dgu); });
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
