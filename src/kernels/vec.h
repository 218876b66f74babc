// 8-float vectors (GCC/Clang vector extensions, 16-float ones too where AVX-512 is on), a vector
// exp and the attention kernels' 4 × 16 register tile, for the kernel files: AVX-512, AVX2+FMA or
// SSE2 code depending on the flags of the .cpp that includes this with LMX_KERNEL_NS set
// (cpu_kernels_avx512.cpp, cpu_kernels_avx2.cpp, cpu_kernels_generic.cpp).
#pragma once
#include <cmath>
#include <cstdint>

#ifndef LMX_KERNEL_NS
#error "define LMX_KERNEL_NS before including vec.h"
#endif

namespace lmx::kernels::LMX_KERNEL_NS {

namespace {

typedef float v8f __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef int v8i __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v8f vload(const float* p) { return *reinterpret_cast<const v8u*>(p); }
static inline __attribute__((always_inline)) void vstore(float* p, v8f x) { *reinterpret_cast<v8u*>(p) = x; }
static inline __attribute__((always_inline)) v8f splat(float a) { return v8f{a, a, a, a, a, a, a, a}; }

// exp for x <= 88 (Cephes expf polynomial, ~1 ulp); inputs below −87 give ~1e-38. V is v8f or
// (AVX-512) v16f, VI its int vector: lane for lane the same arithmetic, the same bits.
template <class V, class VI>
static inline __attribute__((always_inline)) V vexp_lanes(V x) {
  const V zero = {};
  x = x < zero + 88.3f ? x : zero + 88.3f;
  x = x > zero - 87.3f ? x : zero - 87.3f;
  const V magic = zero + 12582912.0f;  // 1.5·2^23: rounds to an integer
  V n = (x * 1.44269504088896341f + magic) - magic;
  V r = x - n * 0.693359375f - n * -2.12194440e-4f;
  V p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  VI e = (__builtin_convertvector(n, VI) + 127) << 23;
  return p * (V)e;
}
static inline __attribute__((always_inline)) v8f vexp(v8f x) { return vexp_lanes<v8f, v8i>(x); }

#if defined(__AVX512F__)
// 16-float vectors for the AVX-512 variant's element-wise loops and register tiles.
typedef float v16f __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int v16i __attribute__((vector_size(64)));
static inline __attribute__((always_inline)) v16f vload16(const float* p) { return *reinterpret_cast<const v16u*>(p); }
static inline __attribute__((always_inline)) void vstore16(float* p, v16f x) { *reinterpret_cast<v16u*>(p) = x; }
static inline __attribute__((always_inline)) v16f vexp(v16f x) { return vexp_lanes<v16f, v16i>(x); }
static inline __attribute__((always_inline)) v16f splat16(float a) { return v16f{} + a; }
static inline __attribute__((always_inline)) v8f lo8(v16f x) {
  return __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7);
}
static inline __attribute__((always_inline)) v8f hi8(v16f x) {
  return __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15);
}
#endif

// The scalar exp (std::exp), so that a template over V serves 16, 8 and 1 lanes.
static inline __attribute__((always_inline)) float vexp(float x) { return std::exp(x); }

// tanh (Cephes tanhf, ~2 ulp): an odd polynomial below |x| = 0.625, 1 − 2/(e^{2|x|} + 1) with the
// sign from there on (vexp's clamp gives ±1 for |x| > 44). V is v8f, (AVX-512) v16f or float.
// NaN stays NaN (the polynomial's lane: vexp's clamp would make it ±1), so a soft-cap does not
// hide a diverged run's logits from the trainer's NaN check.
template <class V>
static inline __attribute__((always_inline)) V vtanh(V x) {
  const V zero = {};
  const V a = x < zero ? -x : x, x2 = x * x;
  V p = zero - 5.70498872745e-3f;
  p = p * x2 + 2.06390887954e-2f;
  p = p * x2 - 5.37397155531e-2f;
  p = p * x2 + 1.33314422036e-1f;
  p = p * x2 - 3.33332819422e-1f;
  p = p * x2 * x + x;
  V t = 1.0f - 2.0f / (vexp(a + a) + 1.0f);
  t = x < zero ? -t : t;
  return a >= zero + 0.625f ? t : p;
}

// Loads and stores of 16 (AVX-512), 8 and 1 lanes, for loops written once over the lane count;
// iota() is (0, 1, ..., lanes − 1).
#if defined(__AVX512F__)
struct Lanes16 {
  static v16f load(const float* p) { return vload16(p); }
  static void store(float* p, v16f v) { vstore16(p, v); }
  static v16f iota() { return v16f{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }
};
#endif
struct Lanes8 {
  static v8f load(const float* p) { return vload(p); }
  static void store(float* p, v8f v) { vstore(p, v); }
  static v8f iota() { return v8f{0, 1, 2, 3, 4, 5, 6, 7}; }
};
struct Lanes1 {
  static float load(const float* p) { return *p; }
  static void store(float* p, float v) { *p = v; }
};

// A 4 × 16 register tile: add() accumulates x_r · p[0, 16) into row r; lo(r) and hi(r) are
// row r's columns 0-7 and 8-15. With AVX-512 one 16-float vector per row (half the FMAs and
// loads), else two 8-float ones; each element's sum runs in the same order either way (the
// same bits). Eight 8-float accumulators keep both FMA pipes busy (four leave them waiting on
// the FMA latency).
#if defined(__AVX512F__)
struct Tile4x16 {
  v16f a[4] = {};
  inline __attribute__((always_inline)) void add(float x0, float x1, float x2, float x3, const float* p) {
    const v16f v = vload16(p);
    a[0] += x0 * v;
    a[1] += x1 * v;
    a[2] += x2 * v;
    a[3] += x3 * v;
  }
  inline __attribute__((always_inline)) v8f lo(int r) const { return lo8(a[r]); }
  inline __attribute__((always_inline)) v8f hi(int r) const { return hi8(a[r]); }
};
#else
struct Tile4x16 {
  v8f c[4] = {splat(0), splat(0), splat(0), splat(0)};
  v8f e[4] = {splat(0), splat(0), splat(0), splat(0)};
  inline __attribute__((always_inline)) void add(float x0, float x1, float x2, float x3, const float* p) {
    const v8f v = vload(p), w = vload(p + 8);
    const float x[4] = {x0, x1, x2, x3};
    for (int r = 0; r < 4; ++r) {
      const v8f xr = splat(x[r]);
      c[r] += xr * v;
      e[r] += xr * w;
    }
  }
  inline __attribute__((always_inline)) v8f lo(int r) const { return c[r]; }
  inline __attribute__((always_inline)) v8f hi(int r) const { return e[r]; }
};
#endif

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

// s[j, ld) = 0, j and ld multiples of 8.
static inline __attribute__((always_inline)) void zero_from(float* s, int64_t j, int64_t ld) {
  for (; j < ld; j += 8) vstore(s + j, splat(0));
}

}  // namespace

}  // namespace lmx::kernels::LMX_KERNEL_NS
