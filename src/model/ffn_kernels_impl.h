// The fused FFN activation kernels (declared in attention_kernels.h, dispatched like the
// attention kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS
// set. Plain φ(x) over a flat array, and the gated φ(g)·u over rows of a packed gate|up
// projection. Each op's arithmetic is one template over V = v16f (AVX-512), v8f or float (the
// scalar tail, whose exp is std::exp): element-wise, so the AVX-512 and AVX2 variants give the
// same bits.
#pragma once
#include <cmath>

#include "model/attention_kernels.h"
#include "model/kernel_vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// The scalar tail's exp, so that one template below serves 16, 8 and 1 lanes. vexp_capped caps
// x at 88.3 as the vector exp does (finite: e·σ below stays a number where σ underflows).
static inline __attribute__((always_inline)) float vexp(float x) { return std::exp(x); }
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

// φ(x) and dy·φ'(x) per activation.
// 1 − σ is written e·σ (e = e^(−βx)): no cancellation where σ is near 1.
struct SiluOp {
  template <class V>
  V phi(V x) const { return x / (1.0f + vexp(-x)); }
  template <class V>
  V grad(V x, V dy) const {
    const V e = vexp_capped(-x), s = 1.0f / (1.0f + e);
    return dy * s * (1.0f + x * (e * s));
  }
};
struct SwishOp {
  float beta;
  template <class V>
  V phi(V x) const { return x / (1.0f + vexp(-beta * x)); }
  template <class V>
  V grad(V x, V dy) const {
    const V e = vexp_capped(-beta * x), s = 1.0f / (1.0f + e);
    return dy * s * (1.0f + beta * x * (e * s));
  }
};

// GELU, tanh approximation: 0.5x(1 + tanh(u)) with u = √(2/π)(x + 0.044715x³), written as
// x·σ(2u) (the same function: 0.5(1 + tanh(u)) = σ(2u)), so that one exp serves and no
// 1 + tanh cancels for negative x. φ' = σ + x·σ(1 − σ)·2u', σ(1 − σ) = e·σ² with e = e^(−2u).
struct GeluTanhOp {
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
  V grad(V x, V dy) const {
    return dy * (cdf(x) + x * (0.39894228040143268f * vexp(-0.5f * x * x)));
  }
};

// ReLU: x < 0 ? 0 : x (NaN stays NaN, as LibTorch's); φ' = 1 for x > 0, else 0. ReGLU's products
// are LibTorch's: relu(g)·u, and dg = (g > 0 ? dy·u : 0).
struct ReluOp {
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

// The ops above over [0, n): 16 lanes (AVX-512), then 8, then one at a time.
template <class Op>
static inline __attribute__((always_inline)) void map1(const Op& op, const float* x, int64_t n, float* y) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) vstore16(y + i, op.phi(vload16(x + i)));
#endif
  for (; i + 8 <= n; i += 8) vstore(y + i, op.phi(vload(x + i)));
  for (; i < n; ++i) y[i] = op.phi(x[i]);
}
template <class Op>
static inline __attribute__((always_inline)) void map2(const Op& op, const float* x, const float* dy, int64_t n,
                                                       float* dx) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) vstore16(dx + i, op.grad(vload16(x + i), vload16(dy + i)));
#endif
  for (; i + 8 <= n; i += 8) vstore(dx + i, op.grad(vload(x + i), vload(dy + i)));
  for (; i < n; ++i) dx[i] = op.grad(x[i], dy[i]);
}

// Gated: o = φ(g)·u; dg = dy·u·φ'(g) (for ReLU: φ' masks dy·u), du = dy·φ(g).
template <class Op, class V>
static inline __attribute__((always_inline)) V glu(const Op& op, V g, V u) { return op.phi(g) * u; }
template <class Op, class V>
static inline __attribute__((always_inline)) void glu_grad(const Op& op, V g, V u, V dy, V& dg, V& du) {
  dg = op.grad(g, dy * u);
  du = dy * op.phi(g);
}
// SwiGLU: its own expressions (above).
template <class V>
static inline __attribute__((always_inline)) V glu(const SiluOp&, V g, V u) { return silu_mul(g, u); }
template <class V>
static inline __attribute__((always_inline)) void glu_grad(const SiluOp&, V g, V u, V dy, V& dg, V& du) {
  silu_mul_grad(g, u, dy, dg, du);
}

template <class Op>
static inline __attribute__((always_inline)) void glu_rows(const Op& op, const float* gu, int64_t rows, int64_t F,
                                                           float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F;
    float* o = out + r * F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) vstore16(o + f, glu(op, vload16(g + f), vload16(u + f)));
#endif
    for (; f + 8 <= F; f += 8) vstore(o + f, glu(op, vload(g + f), vload(u + f)));
    for (; f < F; ++f) o[f] = glu(op, g[f], u[f]);
  }
}
template <class Op>
static inline __attribute__((always_inline)) void glu_grad_rows(const Op& op, const float* gu, const float* dout,
                                                                int64_t rows, int64_t F, float* dgu) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F, *dy = dout + r * F;
    float *dg = dgu + r * 2 * F, *du = dg + F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) {
      v16f dgv, duv;
      glu_grad(op, vload16(g + f), vload16(u + f), vload16(dy + f), dgv, duv);
      vstore16(dg + f, dgv);
      vstore16(du + f, duv);
    }
#endif
    for (; f + 8 <= F; f += 8) {
      v8f dgv, duv;
      glu_grad(op, vload(g + f), vload(u + f), vload(dy + f), dgv, duv);
      vstore(dg + f, dgv);
      vstore(du + f, duv);
    }
    for (; f < F; ++f) glu_grad(op, g[f], u[f], dy[f], dg[f], du[f]);
  }
}

// Calls f with the op of act.kind.
template <class F>
static inline __attribute__((always_inline)) void with_op(const ActOp& act, F&& f) {
  switch (act.kind) {
    case ActKind::Relu: return f(ReluOp{});
    case ActKind::Gelu: return f(GeluOp{});
    case ActKind::GeluTanh: return f(GeluTanhOp{});
    case ActKind::Silu: return f(SiluOp{});
    case ActKind::Swish: return f(SwishOp{act.beta});
  }
}

}  // namespace

void act_forward(const ActOp& act, const float* x, int64_t n, float* y) {
  with_op(act, [&](const auto& op) { map1(op, x, n, y); });
}

void act_backward(const ActOp& act, const float* x, const float* dy, int64_t n, float* dx) {
  with_op(act, [&](const auto& op) { map2(op, x, dy, n, dx); });
}

void glu_forward(const ActOp& act, const float* gu, int64_t rows, int64_t F, float* out) {
  with_op(act, [&](const auto& op) { glu_rows(op, gu, rows, F, out); });
}

void glu_backward(const ActOp& act, const float* gu, const float* dout, int64_t rows, int64_t F, float* dgu) {
  with_op(act, [&](const auto& op) { glu_grad_rows(op, gu, dout, rows, F, dgu); });
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
