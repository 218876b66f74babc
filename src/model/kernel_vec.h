// 8-float vectors (GCC/Clang vector extensions) and a vector exp for the kernel files: AVX2+FMA
// or SSE2 code depending on the flags of the .cpp that includes this with LMX_KERNEL_NS set
// (attention_kernels_avx2.cpp, attention_kernels_generic.cpp).
#pragma once
#include <cstdint>

#ifndef LMX_KERNEL_NS
#error "define LMX_KERNEL_NS before including kernel_vec.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

typedef float v8f __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef int v8i __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v8f vload(const float* p) { return *reinterpret_cast<const v8u*>(p); }
static inline __attribute__((always_inline)) void vstore(float* p, v8f x) { *reinterpret_cast<v8u*>(p) = x; }
static inline __attribute__((always_inline)) v8f splat(float a) { return v8f{a, a, a, a, a, a, a, a}; }

// exp for x <= 88 (Cephes expf polynomial, ~1 ulp); inputs below −87 give ~1e-38.
static inline __attribute__((always_inline)) v8f vexp(v8f x) {
  x = x < splat(88.3f) ? x : splat(88.3f);
  x = x > splat(-87.3f) ? x : splat(-87.3f);
  const v8f magic = splat(12582912.0f);  // 1.5·2^23: rounds to an integer
  v8f n = (x * splat(1.44269504088896341f) + magic) - magic;
  v8f r = x - n * splat(0.693359375f) - n * splat(-2.12194440e-4f);
  v8f p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r * r + r + splat(1.0f);
  v8i e = (__builtin_convertvector(n, v8i) + 127) << 23;
  return p * (v8f)e;
}

// max of x[0, n), n >= 1: 8 lanes, then the tail.
static inline __attribute__((always_inline)) float row_max(const float* x, int64_t n) {
  int64_t j = 0;
  float m = x[0];
  if (n >= 8) {
    v8f mx = vload(x);
    for (j = 8; j + 8 <= n; j += 8) {
      const v8f v = vload(x + j);
      mx = v > mx ? v : mx;
    }
    for (int k = 0; k < 8; ++k) m = m > mx[k] ? m : mx[k];
  }
  for (; j < n; ++j) m = m > x[j] ? m : x[j];
  return m;
}

}  // namespace

}  // namespace lmx::kernels::LMX_KERNEL_NS
