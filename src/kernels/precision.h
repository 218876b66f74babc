// train.precision: fp32, or bf16 mixed precision (the weights, gradients and AdamW state stay
// float32 in both).
// - On the CPU, where gemm::bf16_unavailable() is "" (oneDNN's bf16 GEMM on a CPU with
//   AVX512-BF16 or AMX): the linear layers' GEMMs in bfloat16 with float32 accumulation
//   (gemm::Bf16Scope); everything else, lmx's fused kernels included, stays float32.
// - Elsewhere, LibTorch's autocast: on CUDA torch.autocast(device_type="cuda",
//   dtype=torch.bfloat16); on a CPU without bf16 GEMMs, LibTorch's CPU autocast (slower than
//   fp32 there: the first guard warns once and says why). Matmul-class ops run in bfloat16,
//   numerically sensitive ones such as log_softmax in float32, by autocast's own op lists; lmx's
//   fused float32 kernels step aside under autocast (LibTorch's ops run instead).
#pragma once
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

#include "config/config.h"
#include "kernels/gemm.h"

namespace lmx {

// True while autocast is on for `device` (the fused float32 kernels step aside).
bool autocast_active(c10::DeviceType device);
// Whether an AutocastGuard for this precision and device turns LibTorch's autocast on.
bool autocasts(Precision precision, c10::DeviceType device);

// While alive, bf16 for `device` when precision is Bf16 (the CPU's bf16 GEMMs, else
// autocast); does nothing for Fp32.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, c10::DeviceType device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Float;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  std::optional<gemm::Bf16Scope> bf16_gemms_;
};

}  // namespace lmx
