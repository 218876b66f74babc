// The fused attention kernels for any x86-64 (SSE2), and the run-time choice of variant.
#define LMX_KERNEL_NS generic
#include "model/attention_kernels_impl.h"
#include "model/loss_kernels_impl.h"
#include "model/norm_kernels_impl.h"
#include "model/swiglu_kernels_impl.h"

namespace lmx::kernels {

int64_t forward_scratch(const AttnShape& s) {
  return s.D * s.tk_pad() + s.tq_pad() * s.D + s.tq_pad() * s.tk_pad() + 8 * s.D;
}

int64_t backward_scratch(const AttnShape& s) {
  const int64_t tq = s.tq_pad(), tk = s.tk_pad(), D = s.D;
  return 5 * tk * D + 3 * tq * D + 2 * tq * tk + tq;
}

namespace {
bool has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
}  // namespace

ForwardFn forward_kernel() {
  static const ForwardFn fn = has_avx2() ? &avx2::forward : &generic::forward;
  return fn;
}

BackwardFn backward_kernel() {
  static const BackwardFn fn = has_avx2() ? &avx2::backward : &generic::backward;
  return fn;
}

SwigluForwardFn swiglu_forward_kernel() {
  static const SwigluForwardFn fn = has_avx2() ? &avx2::swiglu_forward : &generic::swiglu_forward;
  return fn;
}

SwigluBackwardFn swiglu_backward_kernel() {
  static const SwigluBackwardFn fn = has_avx2() ? &avx2::swiglu_backward : &generic::swiglu_backward;
  return fn;
}

const NormKernels& norm_kernels() {
  static const NormKernels k = has_avx2() ? NormKernels{&avx2::layernorm_forward, &avx2::rmsnorm_forward,
                                                        &avx2::layernorm_backward, &avx2::rmsnorm_backward}
                                          : NormKernels{&generic::layernorm_forward, &generic::rmsnorm_forward,
                                                        &generic::layernorm_backward, &generic::rmsnorm_backward};
  return k;
}

CrossEntropyFn cross_entropy_kernel() {
  static const CrossEntropyFn fn = has_avx2() ? &avx2::cross_entropy : &generic::cross_entropy;
  return fn;
}

const char* kernel_isa() { return has_avx2() ? "avx2+fma" : "sse2"; }

}  // namespace lmx::kernels
