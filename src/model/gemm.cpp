#include "model/gemm.h"

#include <torch/autograd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "model/fused_attention.h"
#include "util/error.h"

#ifndef LMX_WITH_ONEDNN
#define LMX_WITH_ONEDNN 0
#endif
#if LMX_WITH_ONEDNN
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "util/runtime.h"
#endif

namespace lmx::gemm {

namespace {

// LMX_GEMM: unset or empty (oneDNN where built with it), "onednn" or "torch".
bool onednn_on() {
  static const bool on = [] {
    const char* env = std::getenv("LMX_GEMM");
    const std::string v = env ? env : "";
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

// y (M, N) = x·wᵀ (+ bias), every tensor contiguous.
torch::Tensor forward_gemm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  auto y = torch::empty({x.size(0), w.size(0)}, x.options());
  if (bias.defined() && bias.numel() > 0) {
    y.copy_(bias.expand_as(y));  // the GEMM adds onto the bias (β = 1), as addmm does
    sgemm(x, false, w, true, y, 1.0f);
  } else {
    sgemm(x, false, w, true, y, 0.0f);
  }
  return y;
}

class LinearFn : public torch::autograd::Function<LinearFn> {
 public:
  // bias: (N), or an empty tensor for none (autograd inputs must be defined).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& w_in, const torch::Tensor& bias) {
    auto x = x_in.contiguous(), w = w_in.contiguous();
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = bias.numel() > 0;
    return forward_gemm(x, w, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1];
    auto dy = grads[0].contiguous();
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty_like(x);
      sgemm(dy, false, w, false, dx, 0.0f);  // (M, N)·(N, K)
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty_like(w);
      sgemm(dy, true, x, false, dw, 0.0f);  // (N, M)·(M, K)
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = dy.sum(0);
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

void sgemm(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& out, float beta,
           Backend be) {
#if LMX_WITH_ONEDNN
  if (be == Backend::onednn) {
    const int64_t M = out.size(0), N = out.size(1), K = ta ? a.size(0) : a.size(1);
    TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && out.stride(1) == 1, "gemm::sgemm: rows must be contiguous");
    // oneDNN runs on OpenMP with the calling thread's thread count, which runtime::set_threads
    // keeps at 1 for LibTorch's own ops at --threads <= 2: the GEMM gets all --threads.
    const int before = omp_get_max_threads(), want = std::max(1, runtime::threads());
    if (want != before) omp_set_num_threads(want);
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, a.data_ptr<float>(), a.stride(0),
                                        b.data_ptr<float>(), b.stride(0), beta, out.data_ptr<float>(), out.stride(0));
    if (want != before) omp_set_num_threads(before);
    if (st != dnnl_success)
      throw std::runtime_error(fmt::format("oneDNN sgemm ({}x{}x{}) failed with status {}; LMX_GEMM=torch uses LibTorch's",
                                           M, N, K, static_cast<int>(st)));
    return;
  }
#endif
  if (be == Backend::onednn) throw std::logic_error("gemm::sgemm: lmx was built without oneDNN");
  out.addmm_(ta ? a.t() : a, tb ? b.t() : b, beta, 1.0f);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  if (!torch::GradMode::is_enabled() || !(x.requires_grad() || w.requires_grad() || (bias.defined() && bias.requires_grad())))
    return forward_gemm(x.contiguous(), w.contiguous(), bias);
  return LinearFn::apply(x, w, bias.defined() ? bias : torch::empty({0}, x.options()));
}

}  // namespace lmx::gemm
