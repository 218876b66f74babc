// The fused kernels (attention, FFN activations, norms, cross-entropy) for any x86-64 (SSE2), and
// the run-time choice of variant.
#define LMX_KERNEL_NS generic
#include "kernels/attention_impl.h"
#include "kernels/ffn_impl.h"
#include "kernels/loss_impl.h"
#include "kernels/norm_impl.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "util/env.h"
#include "util/error.h"

namespace lmx::kernels {

// Head dimension 16 may run either the row kernels or attention_lanes.h's (by ISA and shape):
// enough for both.
int64_t forward_scratch(const AttnShape& s) {
  const int64_t rows = s.D * s.tk_pad() + s.tq_pad() * s.D + s.tq_pad() * s.tk_pad() + 8 * s.D;
  return s.D == 16 ? std::max(rows, lanes_scratch(s.Tk, false)) : rows;
}

int64_t backward_scratch(const AttnShape& s) {
  const int64_t tq = s.tq_pad(), tk = s.tk_pad(), D = s.D;
  const int64_t rows = 5 * tk * D + 3 * tq * D + (s.softcap > 0 ? 3 : 2) * tq * tk + tq;  // the cap's derivative
  return D == 16 ? std::max(rows, lanes_scratch(s.Tk, true)) : rows;
}

namespace {

enum class Isa { sse2, avx2, avx512 };

// The widest variant this CPU runs.
Isa cpu_isa() {
  Isa cpu = Isa::sse2;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpu = Isa::avx2;
  if (cpu == Isa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    cpu = Isa::avx512;
#endif
  return cpu;
}

// This CPU's widest variant capped by cap (an LMX_KERNEL_ISA value; null or empty: no cap).
Isa capped(const char* cap_in) {
  const Isa cpu = cpu_isa();
  const std::string cap = cap_in ? cap_in : "";
  if (cap.empty() || cap == "avx512") return cpu;
  if (cap == "avx2") return std::min(cpu, Isa::avx2);
  if (cap == "sse2") return Isa::sse2;
  throw InputError("LMX_KERNEL_ISA=" + cap + ": expected avx512, avx2 or sse2",
                   "unset it for the widest kernels this CPU runs");
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2+fma";
    case Isa::sse2: break;
  }
  return "sse2";
}

Isa isa() {
  static const Isa chosen = capped(env::get("LMX_KERNEL_ISA"));
  return chosen;
}

// The variant's entry point: f512, f2 or fgen by isa().
template <class F>
F pick(F f512, F f2, F fgen) {
  switch (isa()) {
    case Isa::avx512: return f512;
    case Isa::avx2: return f2;
    case Isa::sse2: break;
  }
  return fgen;
}

}  // namespace

ForwardFn forward_kernel() {
  static const ForwardFn fn = pick<ForwardFn>(&avx512::forward, &avx2::forward, &generic::forward);
  return fn;
}

DecodeFn decode_kernel() {
  static const DecodeFn fn = pick<DecodeFn>(&avx512::decode, &avx2::decode, &generic::decode);
  return fn;
}

BackwardFn backward_kernel() {
  static const BackwardFn fn = pick<BackwardFn>(&avx512::backward, &avx2::backward, &generic::backward);
  return fn;
}

const FfnKernels& ffn_kernels() {
  static const FfnKernels k = pick<FfnKernels>(
      {&avx512::act_forward, &avx512::act_backward, &avx512::glu_forward, &avx512::glu_backward},
      {&avx2::act_forward, &avx2::act_backward, &avx2::glu_forward, &avx2::glu_backward},
      {&generic::act_forward, &generic::act_backward, &generic::glu_forward, &generic::glu_backward});
  return k;
}

const NormKernels& norm_kernels() {
  static const NormKernels k = pick<NormKernels>(
      {&avx512::layernorm_forward, &avx512::rmsnorm_forward, &avx512::layernorm_backward, &avx512::rmsnorm_backward},
      {&avx2::layernorm_forward, &avx2::rmsnorm_forward, &avx2::layernorm_backward, &avx2::rmsnorm_backward},
      {&generic::layernorm_forward, &generic::rmsnorm_forward, &generic::layernorm_backward,
       &generic::rmsnorm_backward});
  return k;
}

CrossEntropyFn cross_entropy_kernel() {
  static const CrossEntropyFn fn = pick<CrossEntropyFn>(&avx512::cross_entropy, &avx2::cross_entropy,
                                                        &generic::cross_entropy);
  return fn;
}

const char* kernel_isa() { return isa_name(isa()); }
const char* kernel_isa_capped(const char* cap) { return isa_name(capped(cap)); }

}  // namespace lmx::kernels
