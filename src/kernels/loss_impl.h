// The fused cross-entropy kernel (declared in cpu_kernels.h, dispatched like the
// attention kernels): included by the same per-instruction-set .cpp files with LMX_KERNEL_NS set.
// Per row of V logits x with target t: loss = lse(x) − x[t] and, in the same pass, the
// gradient (softmax(x) − onehot(t))·scale; a row whose target is `ignore` gets loss 0 and a zero
// gradient. The backward then only scales the gradient (llm.c's fused classifier).
#pragma once
#include <cmath>

#include "kernels/cpu_kernels.h"
#include "kernels/vec.h"

namespace lmx::kernels::LMX_KERNEL_NS {

void cross_entropy(const CrossEntropyArgs& p, int64_t begin, int64_t end) {
  const int64_t V = p.V;
  for (int64_t r = begin; r < end; ++r) {
    const float* x = p.logits + r * V;
    float* d = p.dlogits + r * V;
    const int64_t t = p.targets[r];
    if (t == p.ignore) {
      for (int64_t j = 0; j < V; ++j) d[j] = 0;
      p.losses[r] = 0;
      if (p.lse) p.lse[r] = 0;
      continue;
    }
    const float m = row_max(x, V);
    v8f sumv = splat(0.0f);
    float tail = 0;
    int64_t j = 0;
    for (; j + 8 <= V; j += 8) {
      const v8f e = vexp(vload(x + j) - splat(m));
      vstore(d + j, e);
      sumv += e;
    }
    for (; j < V; ++j) tail += d[j] = std::exp(x[j] - m);
    float sum = tail;
    for (int k = 0; k < 8; ++k) sum += sumv[k];
    p.losses[r] = m + std::log(sum) - x[t];
    if (p.lse) p.lse[r] = m + std::log(sum);
    const float s = p.scale / sum;
    j = 0;
    for (; j + 8 <= V; j += 8) vstore(d + j, vload(d + j) * splat(s));
    for (; j < V; ++j) d[j] *= s;
    d[t] -= p.scale;
  }
}

}  // namespace lmx::kernels::LMX_KERNEL_NS
