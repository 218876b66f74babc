// oneDNN's matmul primitive (bf16 source and weights, f32 destination: brgemm kernels where the
// CPU has AVX512-BF16) against its bf16 GEMM (dnnl_gemm_bf16bf16f32, the call lmx's
// train.precision bf16 makes) on the linear layers' shapes of a B=32, T=64 step (llama and
// textbook), M fixed when the primitive is created, or with `runtime` given at run time (what
// padding-free batches, a different M every step, would need). Best of 9 rounds of 20 calls.
// Measured on the Zen 4 VM of docs/PERFORMANCE.md (oneDNN 2.6.3, 1 thread): fixed M 0.77-1.01x
// the GEMM's time (brg:avx512_core_bf16), runtime M 0.98-1.03x (it falls back to gemm:jit).
//   g++ -O2 -std=c++17 scripts/dev/matmul_shapes.cpp -o /tmp/matmul_shapes -ldnnl -ldl
//   OMP_NUM_THREADS=1 /tmp/matmul_shapes [runtime]
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace dnnl;
using GemmBf16 = dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float, const uint16_t*, dnnl_dim_t,
                                   const uint16_t*, dnnl_dim_t, float, float*, dnnl_dim_t);
template <class F> double time_ms(F&& f) {
  double best = 1e9;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 20);
  }
  return best;
}
struct S { const char* name; char ta, tb; int M, N, K; };
int main(int argc, char** argv) {
  bool runtime_m = argc > 1;
  auto gemm = reinterpret_cast<GemmBf16>(dlsym(RTLD_DEFAULT, "dnnl_gemm_bf16bf16f32"));
  engine eng(engine::kind::cpu, 0); stream st(eng);
  S shapes[] = {{"fwd qkv", 'N','T',2048,128,64},{"fwd gate|up",'N','T',2048,342,64},{"fwd down",'N','T',2048,64,171},
                {"fwd up tb",'N','T',2048,256,64},{"fwd down tb",'N','T',2048,64,256},
                {"dx gate|up",'N','N',2048,64,342},{"dx down tb",'N','N',2048,256,64},
                {"dw gate|up",'T','N',342,64,2048},{"dw down",'T','N',64,171,2048},{"dw up tb",'T','N',256,64,2048}};
  for (auto s : shapes) {
    // row-major op(A) (M,K), op(B) (K,N). A stored as (M,K) if 'N' else (K,M).
    std::vector<uint16_t> a((size_t)s.M*s.K, 0x3f80), b((size_t)s.K*s.N, 0x3f00);
    std::vector<float> c((size_t)s.M*s.N);
    dnnl_dim_t lda = s.ta=='N'? s.K : s.M, ldb = s.tb=='N'? s.N : s.K;
    double tg = time_ms([&]{ gemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), s.N); });
    memory::dim M = runtime_m ? DNNL_RUNTIME_DIM_VAL : s.M;
    memory::dims astr = s.ta=='N'? memory::dims{s.K,1} : memory::dims{1,s.M};
    memory::dims bstr = s.tb=='N'? memory::dims{s.N,1} : memory::dims{1,s.K};
    if (runtime_m) { if (s.ta=='N') astr = {DNNL_RUNTIME_DIM_VAL, 1}; else astr = {1, DNNL_RUNTIME_DIM_VAL}; }
    memory::desc ad({M, s.K}, memory::data_type::bf16, astr);
    memory::desc bd({s.K, s.N}, memory::data_type::bf16, bstr);
    memory::desc cd({M, s.N}, memory::data_type::f32, runtime_m ? memory::dims{DNNL_RUNTIME_DIM_VAL,1} : memory::dims{s.N,1});
    auto pd = matmul::primitive_desc(matmul::desc(ad, bd, cd), eng);
    matmul mm(pd);
    memory::desc adr({s.M, s.K}, memory::data_type::bf16, s.ta=='N'? memory::dims{s.K,1} : memory::dims{1,s.M});
    memory::desc cdr({s.M, s.N}, memory::data_type::f32, memory::dims{s.N,1});
    memory am(adr, eng, a.data()), bm(bd, eng, b.data()), cm(cdr, eng, c.data());
    double tm = time_ms([&]{ mm.execute(st, {{DNNL_ARG_SRC, am},{DNNL_ARG_WEIGHTS, bm},{DNNL_ARG_DST, cm}}); st.wait(); });
    printf("%-12s %5dx%4dx%5d gemm_bf16 %.4f ms  matmul %.4f ms  ratio %.2f  impl %s\n", s.name, s.M, s.N, s.K, tg, tm, tm/tg, pd.impl_info_str());
  }
}
