// The fused LayerNorm and RMSNorm kernels (declared in cpu_kernels.h, dispatched like the
// attention kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS
// set. Rows of C floats; an optional residual branch a: h = x + a is written and normalized
// (the stream's add and the next norm in one pass). Row statistics (mean, 1/σ or 1/rms) are
// kept for the backward, which recomputes x̂ and adds the stream's own gradient dh when given.
//   LayerNorm: x̂ = (h − μ)·s, s = 1/√(mean((h − μ)²) + ε); y = x̂·w + b;
//              dx = s·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·w; dw = Σ dy·x̂; db = Σ dy.
//   RMSNorm:   s = 1/√(mean(h²) + ε); y = h·s·w; dx = s·g − h·s³·mean(g·h); dw = Σ dy·h·s.
#pragma once
#include <cmath>

#include "kernels/cpu_kernels.h"
#include "kernels/vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

// The 8 lanes summed in a fixed order.
static inline __attribute__((always_inline)) float lane_sum(v8f v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// h = x + a (a null: h is x) over one row, returning Σh (Σh² when squares).
static inline __attribute__((always_inline)) float residual_row(const float* x, const float* a, float* h, int64_t C,
                                                                bool squares) {
  v8f acc = splat(0.0f);
  float tail = 0;
  int64_t c = 0;
  for (; c + 8 <= C; c += 8) {
    v8f v = vload(x + c);
    if (a) {
      v += vload(a + c);
      vstore(h + c, v);
    }
    acc += squares ? v * v : v;
  }
  for (; c < C; ++c) {
    float v = x[c];
    if (a) h[c] = v = v + a[c];
    tail += squares ? v * v : v;
  }
  return lane_sum(acc) + tail;
}

}  // namespace

void layernorm_forward(const NormArgs& p, int64_t begin, int64_t end) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float* x = p.x + n * C;
    float* h = p.a ? p.h + n * C : nullptr;
    const float mu = residual_row(x, p.a ? p.a + n * C : nullptr, h, C, false) / C;
    const float* hr = h ? h : x;
    v8f acc = splat(0.0f);
    float tail = 0;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
      const v8f d = vload(hr + c) - splat(mu);
      acc += d * d;
    }
    for (; c < C; ++c) tail += (hr[c] - mu) * (hr[c] - mu);
    const float s = 1.0f / std::sqrt((lane_sum(acc) + tail) / C + p.eps);
    p.mean[n] = mu;
    p.rstd[n] = s;
    float* y = p.y + n * C;
    c = 0;
    for (; c + 8 <= C; c += 8)
      vstore(y + c, (vload(hr + c) - splat(mu)) * splat(s) * vload(p.w + c) + vload(p.b + c));
    for (; c < C; ++c) y[c] = (hr[c] - mu) * s * p.w[c] + p.b[c];
  }
}

void rmsnorm_forward(const NormArgs& p, int64_t begin, int64_t end) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float* x = p.x + n * C;
    float* h = p.a ? p.h + n * C : nullptr;
    const float s = 1.0f / std::sqrt(residual_row(x, p.a ? p.a + n * C : nullptr, h, C, true) / C + p.eps);
    p.rstd[n] = s;
    const float* hr = h ? h : x;
    float* y = p.y + n * C;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) vstore(y + c, vload(hr + c) * splat(s) * vload(p.w + c));
    for (; c < C; ++c) y[c] = hr[c] * s * p.w[c];
  }
}

// Rows [begin, end): dx written; dw (and db for LayerNorm) accumulated over the rows.
void layernorm_backward(const NormGradArgs& p, int64_t begin, int64_t end) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float *h = p.h + n * C, *dy = p.dy + n * C;
    const v8f mu = splat(p.mean[n]), s = splat(p.rstd[n]);
    v8f a1 = splat(0.0f), a2 = splat(0.0f);
    float t1 = 0, t2 = 0;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
      const v8f xh = (vload(h + c) - mu) * s, d = vload(dy + c), g = d * vload(p.w + c);
      a1 += g;
      a2 += g * xh;
      if (p.dw) {
        vstore(p.dw + c, vload(p.dw + c) + d * xh);
        vstore(p.db + c, vload(p.db + c) + d);
      }
    }
    for (; c < C; ++c) {
      const float xh = (h[c] - p.mean[n]) * p.rstd[n], g = dy[c] * p.w[c];
      t1 += g;
      t2 += g * xh;
      if (p.dw) {
        p.dw[c] += dy[c] * xh;
        p.db[c] += dy[c];
      }
    }
    if (!p.dx) continue;
    const float m1 = (lane_sum(a1) + t1) / C, m2 = (lane_sum(a2) + t2) / C;
    float* dx = p.dx + n * C;
    const float* dh = p.dh ? p.dh + n * C : nullptr;
    c = 0;
    for (; c + 8 <= C; c += 8) {
      const v8f xh = (vload(h + c) - mu) * s;
      v8f v = s * (vload(dy + c) * vload(p.w + c) - splat(m1) - xh * splat(m2));
      if (dh) v += vload(dh + c);
      vstore(dx + c, v);
    }
    for (; c < C; ++c) {
      const float xh = (h[c] - p.mean[n]) * p.rstd[n];
      float v = p.rstd[n] * (dy[c] * p.w[c] - m1 - xh * m2);
      dx[c] = dh ? v + dh[c] : v;
    }
  }
}

void rmsnorm_backward(const NormGradArgs& p, int64_t begin, int64_t end) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float *h = p.h + n * C, *dy = p.dy + n * C;
    const float sf = p.rstd[n];
    const v8f s = splat(sf);
    v8f acc = splat(0.0f);
    float tail = 0;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
      const v8f hv = vload(h + c), d = vload(dy + c);
      acc += d * vload(p.w + c) * hv;
      if (p.dw) vstore(p.dw + c, vload(p.dw + c) + d * hv * s);
    }
    for (; c < C; ++c) {
      tail += dy[c] * p.w[c] * h[c];
      if (p.dw) p.dw[c] += dy[c] * h[c] * sf;
    }
    if (!p.dx) continue;
    const float coef = sf * sf * sf * (lane_sum(acc) + tail) / C;
    float* dx = p.dx + n * C;
    const float* dh = p.dh ? p.dh + n * C : nullptr;
    c = 0;
    for (; c + 8 <= C; c += 8) {
      v8f v = s * vload(dy + c) * vload(p.w + c) - vload(h + c) * splat(coef);
      if (dh) v += vload(dh + c);
      vstore(dx + c, v);
    }
    for (; c < C; ++c) {
      const float v = sf * dy[c] * p.w[c] - h[c] * coef;
      dx[c] = dh ? v + dh[c] : v;
    }
  }
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
