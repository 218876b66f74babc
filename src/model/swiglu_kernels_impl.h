// The fused SwiGLU kernels (declared in attention_kernels.h, dispatched like the attention
// kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS set. The
// AVX-512 variant takes 16 columns at a time first: element-wise, the same bits.
#pragma once
#include <cmath>

#include "model/attention_kernels.h"
#include "model/kernel_vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// The scalar tail's exp, so that one template below serves 16, 8 and 1 lanes.
static inline __attribute__((always_inline)) float vexp(float x) { return std::exp(x); }

// SwiGLU: σ(g) = 1/(1+e^(−g)); out = g·σ(g)·u; dg = dy·u·σ(g)·(1 + g·(1 − σ(g))), du = dy·g·σ(g).
// V: v16f, v8f or float, lane for lane the same arithmetic.
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

}  // namespace

void swiglu_forward(const float* gu, int64_t rows, int64_t F, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F;
    float* o = out + r * F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) vstore16(o + f, silu_mul(vload16(g + f), vload16(u + f)));
#endif
    for (; f + 8 <= F; f += 8) vstore(o + f, silu_mul(vload(g + f), vload(u + f)));
    for (; f < F; ++f) o[f] = silu_mul(g[f], u[f]);
  }
}

void swiglu_backward(const float* gu, const float* dout, int64_t rows, int64_t F, float* dgu) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F, *dy = dout + r * F;
    float *dg = dgu + r * 2 * F, *du = dg + F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) {
      v16f dgv, duv;
      silu_mul_grad(vload16(g + f), vload16(u + f), vload16(dy + f), dgv, duv);
      vstore16(dg + f, dgv);
      vstore16(du + f, duv);
    }
#endif
    for (; f + 8 <= F; f += 8) {
      v8f dgv, duv;
      silu_mul_grad(vload(g + f), vload(u + f), vload(dy + f), dgv, duv);
      vstore(dg + f, dgv);
      vstore(du + f, duv);
    }
    for (; f < F; ++f) silu_mul_grad(g[f], u[f], dy[f], dg[f], du[f]);
  }
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
