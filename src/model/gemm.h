// The GEMMs of lmx's linear layers. Built with oneDNN (libdnnl-dev; CMake sets LMX_WITH_ONEDNN),
// float32 CPU GEMMs go to oneDNN's sgemm (dnnl_sgemm), whose JIT kernels target the CPU it runs
// on (AVX-512 included), whatever kernels the BLAS under LibTorch picked: Debian's OpenBLAS 0.3.21
// falls back to its Prescott (SSE3) kernels on CPUs newer than it knows, 4-5× slower. Measured on
// the linear layers' shapes (docs/PERFORMANCE.md): oneDNN ≥ OpenBLAS's AVX-512 kernels too.
// LMX_GEMM=torch (or a build without oneDNN, the fused kernels off, bf16 autocast) keeps
// LibTorch's ops (OpenBLAS). tests/test_gemm.cpp checks values and gradients against them.
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

}  // namespace lmx::gemm
