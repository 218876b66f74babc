// oneDNN's float32 sgemm against its bf16 GEMM (dnnl_gemm_bf16bf16f32: bfloat16 operands,
// float32 accumulation, the call lmx's train.precision bf16 makes) on the linear layers' shapes
// of a B=32, T=64 step (llama and textbook), each call alone and repeated (warm caches): what
// the bf16 GEMMs could save before conversions and cold operands (issue 27, item 2). Measured on
// the project's Zen 5 VM (oneDNN 2.6.3, 1 thread, two runs): bf16 0.49-0.61x the sgemm time on
// every shape but one weight gradient (64x171x2048, 0.78-0.79x), 0.50x at 1024^3 (388-421
// against 194-209 GFLOP/s).
//   g++ -O2 -std=c++17 scripts/dev/gemm_shapes.cpp -o /tmp/gemm_shapes -ldnnl -ldl
//   OMP_NUM_THREADS=1 /tmp/gemm_shapes
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

using GemmBf16 = dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float, const uint16_t*, dnnl_dim_t,
                                   const uint16_t*, dnnl_dim_t, float, float*, dnnl_dim_t);

struct Shape {
  const char* name;
  char ta, tb;
  int M, N, K;
};

// Best of 7 rounds of 20 calls, ms per call.
template <class F>
double time_ms(F&& f) {
  double best = 1e9;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 20);
  }
  return best;
}

int main() {
  const auto bf16 = reinterpret_cast<GemmBf16>(dlsym(RTLD_DEFAULT, "dnnl_gemm_bf16bf16f32"));
  if (!bf16) {
    std::puts("this oneDNN does not export dnnl_gemm_bf16bf16f32");
    return 1;
  }
  // y = x·wᵀ (forward), dx = dy·w, dw = dyᵀ·x, as src/kernels/gemm.cpp calls them.
  const std::vector<Shape> shapes = {
      {"fwd qkv 2048x128x64 (llama)", 'N', 'T', 2048, 128, 64}, {"fwd gate|up 2048x342x64", 'N', 'T', 2048, 342, 64},
      {"fwd down 2048x64x171", 'N', 'T', 2048, 64, 171},        {"fwd up 2048x256x64 (textbook)", 'N', 'T', 2048, 256, 64},
      {"fwd down 2048x64x256", 'N', 'T', 2048, 64, 256},        {"dx gate|up 2048x64x342", 'N', 'N', 2048, 64, 342},
      {"dw gate|up 342x64x2048", 'T', 'N', 342, 64, 2048},      {"dw down 64x171x2048", 'T', 'N', 64, 171, 2048},
      {"1024^3", 'N', 'N', 1024, 1024, 1024}};
  for (const auto& s : shapes) {
    const int lda = s.ta == 'N' ? s.K : s.M, ldb = s.tb == 'N' ? s.N : s.K;
    const size_t asz = size_t(s.M) * s.K, bsz = size_t(s.K) * s.N;
    std::vector<float> A(asz, 0.01f), B(bsz, 0.02f), C(size_t(s.M) * s.N);
    std::vector<uint16_t> Ab(asz, 0x3c23), Bb(bsz, 0x3ca3);  // bfloat16 0.01, 0.02
    const double tf = time_ms([&] {
      dnnl_sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), s.N);
    });
    const double tb = time_ms([&] {
      bf16(s.ta, s.tb, s.M, s.N, s.K, 1.f, Ab.data(), lda, Bb.data(), ldb, 0.f, C.data(), s.N);
    });
    const double mflop = 2.0 * s.M * s.N * s.K / 1e6;
    std::printf("%-32s fp32 %.4f ms (%.0f GFLOP/s)  bf16 %.4f ms (%.0f GFLOP/s)  bf16/fp32 %.2f\n", s.name, tf,
                mflop / tf, tb, mflop / tb, tb / tf);
  }
}
