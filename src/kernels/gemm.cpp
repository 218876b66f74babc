#include "kernels/gemm.h"

#include <torch/autograd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/fused_attention.h"
#include "util/env.h"
#include "util/error.h"
#include "util/op_timer.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#ifndef LMX_WITH_ONEDNN
#define LMX_WITH_ONEDNN 0
#endif
#if LMX_WITH_ONEDNN
#include <dlfcn.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "util/runtime.h"
#endif

namespace lmx::gemm {

namespace {

// LMX_GEMM: unset or empty (oneDNN where built with it), "onednn" or "torch".
bool onednn_on() {
  static const bool on = [] {
    const std::string v = env::text("LMX_GEMM");
    if (v == "torch") return false;
    if (!v.empty() && v != "onednn")
      throw InputError("LMX_GEMM=" + v + ": expected onednn or torch", "unset it for the default (onednn)");
    if (v == "onednn" && !LMX_WITH_ONEDNN)
      throw InputError("LMX_GEMM=onednn: this lmx was built without oneDNN",
                       "install libdnnl-dev (scripts/bootstrap.sh does) and rebuild, or unset LMX_GEMM");
    return static_cast<bool>(LMX_WITH_ONEDNN);
  }();
  return on;
}

thread_local bool t_bf16 = false;  // a Bf16Scope is alive on this thread

#if LMX_WITH_ONEDNN
// oneDNN exports its bf16 GEMM (src/cpu/gemm/gemm.cpp) without declaring it in its 2.x public
// headers: looked up at run time in the libdnnl lmx links (null where a oneDNN lacks it).
// Row-major like dnnl_sgemm, A and B bfloat16 (passed as their bit patterns), C float32,
// accumulation in float32.
using GemmBf16Fn = dnnl_status_t (*)(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                     const uint16_t* A, dnnl_dim_t lda, const uint16_t* B, dnnl_dim_t ldb, float beta,
                                     float* C, dnnl_dim_t ldc);
GemmBf16Fn gemm_bf16_fn() {
  static const auto fn = reinterpret_cast<GemmBf16Fn>(::dlsym(RTLD_DEFAULT, "dnnl_gemm_bf16bf16f32"));
  return fn;
}

// fn() on OpenMP with all --threads: torch_runtime::set_threads keeps the calling thread's OpenMP
// count at 1 for LibTorch's own ops at --threads <= 2, and oneDNN runs on the caller's count.
template <class F>
dnnl_status_t at_threads(F&& fn) {
  const int before = omp_get_max_threads(), want = std::max(1, runtime::threads());
  if (want != before) omp_set_num_threads(want);
  const dnnl_status_t st = fn();
  if (want != before) omp_set_num_threads(before);
  return st;
}
#endif

// bfloat16 = the high half of a float32, rounded to nearest even (NaN stays a quiet NaN).
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define LMX_BF16_AVX512 1
// VCVTNEPS2BF16: the same rounding, 16 values per instruction (treats denormals as zero, as
// lmx's FTZ/DAZ float32 arithmetic already does).
__attribute__((target("avx512f,avx512bf16"))) void convert_avx512(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
    std::memcpy(dst + i, &r, sizeof r);
  }
  for (; i < n; ++i) dst[i] = bf16_bits(src[i]);
}
bool cpu_has_bf16() { return __builtin_cpu_supports("avx512bf16"); }
#else
#define LMX_BF16_AVX512 0
bool cpu_has_bf16() { return false; }
#endif

// a and b bfloat16 (rows contiguous), out float32: out = op(a)·op(b) + beta·out.
void gemm_bf16(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& out, float beta) {
#if LMX_WITH_ONEDNN
  const GemmBf16Fn fn = gemm_bf16_fn();
  if (!fn) throw std::logic_error("gemm::gemm_bf16: this oneDNN has no bf16 GEMM");
  const int64_t M = out.size(0), N = out.size(1), K = ta ? a.size(0) : a.size(1);
  TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && out.stride(1) == 1, "gemm::gemm_bf16: rows must be contiguous");
  const auto* pa = static_cast<const uint16_t*>(a.data_ptr());
  const auto* pb = static_cast<const uint16_t*>(b.data_ptr());
  const dnnl_status_t st = at_threads([&] {
    return fn(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, pa, a.stride(0), pb, b.stride(0), beta,
              out.data_ptr<float>(), out.stride(0));
  });
  if (st != dnnl_success)
    throw std::runtime_error(fmt::format("oneDNN bf16 GEMM ({}x{}x{}) failed with status {}; train.precision fp32 avoids it",
                                         M, N, K, static_cast<int>(st)));
#else
  (void)a, (void)ta, (void)b, (void)tb, (void)out, (void)beta;
  throw std::logic_error("gemm::gemm_bf16: lmx was built without oneDNN");
#endif
}

// out = op(a)·op(b) + beta·out in the operands' precision (bfloat16 or float32; out float32).
void gemm_any(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& out, float beta) {
  if (a.scalar_type() == torch::kBFloat16)
    gemm_bf16(a, ta, b, tb, out, beta);
  else
    sgemm(a, ta, b, tb, out, beta);
}

// x (M, K) and w (N, K) as the GEMMs take them: contiguous float32, or bfloat16 copies in bf16.
struct Operands {
  torch::Tensor x, w;
};
Operands operands(const torch::Tensor& x, const torch::Tensor& w, bool bf16) {
  if (bf16) return {to_bf16(x), to_bf16(w)};
  return {x.contiguous(), w.contiguous()};
}

// y (M, N) = x·wᵀ (+ bias), float32.
torch::Tensor forward_gemm(const Operands& o, const torch::Tensor& bias) {
  auto y = torch::empty({o.x.size(0), o.w.size(0)}, o.x.options().dtype(torch::kFloat32));
  const bool with_bias = bias.defined() && bias.numel() > 0;
  if (o.x.scalar_type() == torch::kFloat32 && onednn_on()) {
    const auto b = with_bias ? bias.contiguous() : bias;
    linear_rows(o.x.data_ptr<float>(), o.w.data_ptr<float>(), with_bias ? b.data_ptr<float>() : nullptr,
                y.data_ptr<float>(), y.size(0), y.size(1), o.x.size(1));
    return y;
  }
  if (with_bias) {
    y.copy_(bias.expand_as(y));  // the GEMM adds onto the bias (β = 1), as addmm does
    gemm_any(o.x, false, o.w, true, y, 1.0f);
  } else {
    gemm_any(o.x, false, o.w, true, y, 0.0f);
  }
  return y;
}

// dx = dy·w (M, K) and dw = dyᵀ·x (N, K), float32, those asked for; dy in the operands'
// precision.
void backward_gemms(const Operands& o, const torch::Tensor& dy_in, bool want_dx, bool want_dw, torch::Tensor& dx,
                    torch::Tensor& dw) {
  const auto dy = o.x.scalar_type() == torch::kBFloat16 ? to_bf16(dy_in) : dy_in.contiguous();
  const auto f32 = dy_in.options().dtype(torch::kFloat32);
  if (want_dx) {
    dx = torch::empty({o.x.size(0), o.x.size(1)}, f32);
    gemm_any(dy, false, o.w, false, dx, 0.0f);  // (M, N)·(N, K)
  }
  if (want_dw) {
    dw = torch::empty({o.w.size(0), o.w.size(1)}, f32);
    gemm_any(dy, true, o.x, false, dw, 0.0f);  // (N, M)·(M, K)
  }
}

class LinearFn : public torch::autograd::Function<LinearFn> {
 public:
  // bias: (N), or an empty tensor for none (autograd inputs must be defined). x and w are
  // saved as the GEMMs take them (in bf16, their bfloat16 copies: the backward runs in the
  // precision of its forward).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w, const torch::Tensor& bias) {
    op_timer::Scope timed(op_timer::Kind::Linear);
    const Operands o = operands(x, w, t_bf16);
    ctx->save_for_backward({o.x, o.w});
    ctx->saved_data["bias"] = bias.numel() > 0;
    return forward_gemm(o, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Linear);
    auto saved = ctx->get_saved_variables();
    torch::Tensor dx, dw, db;
    backward_gemms({saved[0], saved[1]}, grads[0], ctx->needs_input_grad(0), ctx->needs_input_grad(1), dx, dw);
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = grads[0].sum(0);
    return {dx, dw, db};
  }
};

}  // namespace

Backend active() { return onednn_on() ? Backend::onednn : Backend::torch; }
const char* name(Backend b) { return b == Backend::onednn ? "onednn" : "torch"; }
bool built_with_onednn() { return LMX_WITH_ONEDNN; }

std::string describe() {
#if LMX_WITH_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  const std::string lib = fmt::format("oneDNN {}.{}.{} sgemm", v->major, v->minor, v->patch);
  return onednn_on() ? lib : "LibTorch's (BLAS); " + lib + " off (LMX_GEMM=torch)";
#else
  return "LibTorch's (BLAS); lmx built without oneDNN";
#endif
}

bool takes(const torch::Tensor& x) { return onednn_on() && fused_kernels_take(x); }

namespace {

// c (M, N; row stride ldc) = op(a)·op(b) + beta·c on oneDNN's sgemm, row-major.
void onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float beta, float* c, int64_t ldc) {
#if LMX_WITH_ONEDNN
  const dnnl_status_t st = at_threads(
      [&] { return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, a, lda, b, ldb, beta, c, ldc); });
  if (st != dnnl_success)
    throw std::runtime_error(fmt::format("oneDNN sgemm ({}x{}x{}) failed with status {}; LMX_GEMM=torch uses LibTorch's",
                                         M, N, K, static_cast<int>(st)));
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)a, (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
  throw std::logic_error("gemm: lmx was built without oneDNN");
#endif
}

}  // namespace

void sgemm(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& out, float beta,
           Backend be) {
  if (be == Backend::onednn) {
    const int64_t M = out.size(0), N = out.size(1), K = ta ? a.size(0) : a.size(1);
    TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && out.stride(1) == 1, "gemm::sgemm: rows must be contiguous");
    onednn_sgemm(ta, tb, M, N, K, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(), b.stride(0), beta,
                 out.data_ptr<float>(), out.stride(0));
    return;
  }
  out.addmm_(ta ? a.t() : a, tb ? b.t() : b, beta, 1.0f);
}

void linear_rows(const float* x, const float* w, const float* bias, float* y, int64_t M, int64_t N, int64_t K) {
  if (!onednn_on()) throw std::logic_error("gemm::linear_rows: the oneDNN backend is off");
  if (bias)
    for (int64_t r = 0; r < M; ++r) std::memcpy(y + r * N, bias, N * sizeof(float));
  onednn_sgemm(false, true, M, N, K, x, K, w, K, bias ? 1.0f : 0.0f, y, N);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  if (!torch::GradMode::is_enabled() || !(x.requires_grad() || w.requires_grad() || (bias.defined() && bias.requires_grad())))
    return forward_gemm(operands(x, w, t_bf16), bias);
  return LinearFn::apply(x, w, bias.defined() ? bias : torch::empty({0}, x.options()));
}

std::string bf16_unavailable() {
  // LMX_BF16_GEMM: unset, empty or 1 (oneDNN's bf16 GEMMs where possible) or 0; anything else
  // is an error, as for LMX_GEMM, whatever this build and CPU allow.
  const std::string bf16_env = env::text("LMX_BF16_GEMM");
  if (!bf16_env.empty() && bf16_env != "0" && bf16_env != "1")
    throw InputError("LMX_BF16_GEMM=" + bf16_env + ": expected 0 or 1",
                     "unset it for the default (oneDNN's bf16 GEMMs where the CPU has them)");
#if !LMX_WITH_ONEDNN
  return "lmx was built without oneDNN";
#else
  // What this process's oneDNN and CPU allow: fixed for its lifetime, looked up once (every
  // bf16 step asks).
  static const std::string hardware = [] {
    if (!gemm_bf16_fn()) return std::string("this oneDNN does not export its bf16 GEMM (dnnl_gemm_bf16bf16f32)");
    const bool isa = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    if (!cpu_has_bf16() || !isa)
      return std::string("this CPU has neither AVX512-BF16 nor AMX (or DNNL_MAX_CPU_ISA caps oneDNN below them): "
                         "bf16 GEMMs would be emulated, slower than fp32");
    return std::string();
  }();
  if (!hardware.empty()) return hardware;
  if (!onednn_on()) return "LMX_GEMM=torch keeps LibTorch's GEMMs";
  if (!fused_attention_enabled()) return "the fused float32 kernels are off (LMX_FUSED_ATTENTION=0)";
  if (bf16_env == "0") return "LMX_BF16_GEMM=0";
  return "";
#endif
}

Bf16Scope::Bf16Scope() : prev_(t_bf16) { t_bf16 = true; }
Bf16Scope::~Bf16Scope() { t_bf16 = prev_; }
bool bf16_on() { return t_bf16; }

Bf16Rates measure_bf16_rates(int64_t n, int reps) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  // Fixed values in [0, 1), not LibTorch's random generator (a run's draws stay as they were).
  const torch::Tensor a = torch::arange(n * n, f32).remainder(13).div(13).reshape({n, n});
  const torch::Tensor b = torch::arange(n * n, f32).remainder(7).div(7).reshape({n, n});
  const torch::Tensor a16 = to_bf16(a), b16 = to_bf16(b);
  torch::Tensor c = torch::empty({n, n}, f32);
  auto best_s = [&](const auto& call) {
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {  // the first call warms up (JIT, caches)
      const auto t0 = std::chrono::steady_clock::now();
      call();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) best = std::min(best, s);
    }
    return best;
  };
  const double flop = 2.0 * n * n * n;
  Bf16Rates r;
  r.fp32_gflops = flop / best_s([&] { sgemm(a, false, b, false, c, 0.0f); }) / 1e9;
  r.bf16_gflops = flop / best_s([&] { gemm_bf16(a16, false, b16, false, c, 0.0f); }) / 1e9;
  return r;
}

std::string bf16_slower_note(const Bf16Rates& r) {
  if (r.bf16_gflops >= r.fp32_gflops) return "";
  return fmt::format(
      "train.precision bf16: this CPU's bf16 GEMMs are slower than its float32 ones ({:.0f} against {:.0f} "
      "GFLOP/s, oneDNN at 512x512x512, measured now), so the bf16 step is slower than fp32's; "
      "train.precision fp32 is faster here",
      r.bf16_gflops, r.fp32_gflops);
}

torch::Tensor to_bf16(const torch::Tensor& x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.device().is_cpu(), "gemm::to_bf16: float32 CPU tensors only");
  const auto src = x.contiguous();
  auto out = torch::empty(src.sizes(), src.options().dtype(torch::kBFloat16));
  const float* s = src.data_ptr<float>();
  auto* d = static_cast<uint16_t*>(out.data_ptr());
  const int64_t n = src.numel();
#if LMX_BF16_AVX512
  if (cpu_has_bf16()) {
    convert_avx512(s, d, n);
    return out;
  }
#endif
  for (int64_t i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
  return out;
}

void linear_gemms_once(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                       const torch::Tensor& dy) {
  torch::NoGradGuard no_grad;
  const Operands o = operands(x, w, t_bf16);
  auto y = forward_gemm(o, bias);
  torch::Tensor dx, dw;
  backward_gemms(o, dy, true, true, dx, dw);
  if (bias.defined()) auto db = dy.sum(0);
}

}  // namespace lmx::gemm
