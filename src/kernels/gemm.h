// The GEMMs of lmx's linear layers. Built with oneDNN (libdnnl-dev; CMake sets LMX_WITH_ONEDNN),
// float32 CPU GEMMs go to oneDNN's sgemm (dnnl_sgemm), whose JIT kernels target the CPU it runs
// on (AVX-512 included), whatever kernels the BLAS under LibTorch picked: Debian's OpenBLAS 0.3.21
// falls back to its Prescott (SSE3) kernels on CPUs newer than it knows, 4-5× slower. Measured on
// the linear layers' shapes (docs/PERFORMANCE.md): oneDNN ≥ OpenBLAS's AVX-512 kernels too.
// LMX_GEMM=torch (or a build without oneDNN, the fused kernels off, bf16 autocast) keeps
// LibTorch's ops (OpenBLAS). tests/test_gemm.cpp checks values and gradients against them.
//
// bf16 (train.precision bf16 on the CPU, kernels/precision.h): while a Bf16Scope is on, linear()
// runs its three GEMMs as oneDNN's gemm_bf16bf16f32: bfloat16 operands (x, w and the output
// gradient rounded to nearest even, w once per forward pass), float32 accumulation and
// float32 results; weights, gradients and AdamW state stay float32, and everything outside the
// linear layers' GEMMs (the fused kernels included) stays float32. Only where the CPU has
// AVX512-BF16 or AMX (oneDNN's ISA check): elsewhere bf16 GEMMs are emulated and slower than
// fp32, and bf16_unavailable() says so.
#pragma once
#include <string>

#include <torch/types.h>

namespace lmx::gemm {

enum class Backend { torch, onednn };
// oneDNN when built with it and LMX_GEMM is not "torch"; else LibTorch's. The first call reads
// LMX_GEMM: a value other than onednn / torch (or onednn without oneDNN) is an InputError.
Backend active();
const char* name(Backend b);  // "torch", "onednn"
bool built_with_onednn();
// For logs and --version: the backend in use and what it runs (e.g. "oneDNN 2.6.3 sgemm").
std::string describe();
// Whether linear() takes x: the active backend is oneDNN and the fused float32 kernels are on
// for x (fused_kernels_take: float32, CPU, not under autocast).
bool takes(const torch::Tensor& x);

// out = op(a)·op(b) + beta·out for 2-D row-major float32 CPU tensors with a contiguous last
// dim (op: transpose when ta / tb); out (M, N) must already have its shape. `be`: oneDNN's
// sgemm (only in a build with it) or LibTorch's addmm_.
void sgemm(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& out, float beta,
           Backend be = active());

// y = x·wᵀ (+ bias) for x (M, K), w (N, K), bias (N) or undefined; differentiable in all three
// (dx = dy·w, dw = dyᵀ·x, dbias = Σ_rows dy), on the active backend (linear_2d calls it
// where takes(x)).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias);

// Why linear() cannot run bf16 GEMMs in this process, or "" when it can: a build without oneDNN
// (or without its bf16 GEMM), LMX_GEMM=torch, the fused kernels off, LMX_BF16_GEMM=0, or a CPU
// without AVX512-BF16 / AMX.
std::string bf16_unavailable();
// oneDNN's bf16 GEMM and its sgemm timed on one n×n×n problem in this process (best of `reps`
// calls each, this thread's threads): GFLOP/s of each. The bf16 instructions' rate differs by
// CPU: on the Zen 5 VM of docs/PERFORMANCE.md the bf16 GEMM runs at about twice the sgemm's, on
// an Emerald Rapids VM without AMX at about half. Precondition: bf16_unavailable() is "".
struct Bf16Rates {
  double fp32_gflops = 0, bf16_gflops = 0;
};
Bf16Rates measure_bf16_rates(int64_t n = 512, int reps = 5);
// The one-line warning for train.precision bf16 when the bf16 GEMM measured slower than the
// sgemm ("" when it is faster).
std::string bf16_slower_note(const Bf16Rates& r);

// While alive on this thread, linear() runs bf16 GEMMs (precondition: bf16_unavailable() is "").
// A gradient computed later (the backward) runs in the precision its forward ran in.
class Bf16Scope {
 public:
  Bf16Scope();
  ~Bf16Scope();
  Bf16Scope(const Bf16Scope&) = delete;
  Bf16Scope& operator=(const Bf16Scope&) = delete;

 private:
  bool prev_;
};
bool bf16_on();  // a Bf16Scope is alive on this thread

// x (float32) rounded to bfloat16, nearest even (contiguous result).
torch::Tensor to_bf16(const torch::Tensor& x);

// The float32 forward of linear() on raw pointers, for the inference engine (infer/decoder.h):
// y (M, N) = x (M, K)·wᵀ (w (N, K)) + bias (N; null: none), rows contiguous. The same oneDNN
// sgemm call linear() makes (onto the bias, β = 1, as addmm), so the same bits. Only where
// active() is oneDNN (a logic_error elsewhere).
void linear_rows(const float* x, const float* w, const float* bias, float* y, int64_t M, int64_t N, int64_t K);

// What one linear layer's GEMMs cost without autograd, for lmx bench --breakdown: the forward
// (onto the bias), the input and weight gradients and the bias's column sum, with the
// conversions to bfloat16 that linear() and its backward make when bf16_on().
void linear_gemms_once(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                       const torch::Tensor& dy);

}  // namespace lmx::gemm
