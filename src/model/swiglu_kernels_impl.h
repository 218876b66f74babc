// The fused SwiGLU kernels (declared in attention_kernels.h, dispatched like the attention
// kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS set. The
// AVX-512 variant takes 16 columns at a time first: element-wise, the same bits.
#pragma once
#include <cmath>

#include "model/attention_kernels.h"
#include "model/kernel_vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

// SwiGLU: σ(g) = 1/(1+e^(−g)); out = g·σ(g)·u; dg = dy·u·σ(g)·(1 + g·(1 − σ(g))), du = dy·g·σ(g).
void swiglu_forward(const float* gu, int64_t rows, int64_t F, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F;
    float* o = out + r * F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) {
      const v16f gv = vload16(g + f);
      vstore16(o + f, gv / (1.0f + vexp(-gv)) * vload16(u + f));
    }
#endif
    for (; f + 8 <= F; f += 8) {
      const v8f gv = vload(g + f);
      vstore(o + f, gv / (splat(1.0f) + vexp(-gv)) * vload(u + f));
    }
    for (; f < F; ++f) o[f] = g[f] / (1.0f + std::exp(-g[f])) * u[f];
  }
}

void swiglu_backward(const float* gu, const float* dout, int64_t rows, int64_t F, float* dgu) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *g = gu + r * 2 * F, *u = g + F, *dy = dout + r * F;
    float *dg = dgu + r * 2 * F, *du = dg + F;
    int64_t f = 0;
#if defined(__AVX512F__)
    for (; f + 16 <= F; f += 16) {
      const v16f gv = vload16(g + f), dyv = vload16(dy + f);
      const v16f sg = 1.0f / (1.0f + vexp(-gv));
      vstore16(dg + f, dyv * vload16(u + f) * sg * (1.0f + gv * (1.0f - sg)));
      vstore16(du + f, dyv * gv * sg);
    }
#endif
    for (; f + 8 <= F; f += 8) {
      const v8f gv = vload(g + f), dyv = vload(dy + f);
      const v8f sg = splat(1.0f) / (splat(1.0f) + vexp(-gv));
      vstore(dg + f, dyv * vload(u + f) * sg * (splat(1.0f) + gv * (splat(1.0f) - sg)));
      vstore(du + f, dyv * gv * sg);
    }
    for (; f < F; ++f) {
      const float sg = 1.0f / (1.0f + std::exp(-g[f]));
      dg[f] = dy[f] * u[f] * sg * (1.0f + g[f] * (1.0f - sg));
      du[f] = dy[f] * g[f] * sg;
    }
  }
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
