// train.precision: fp32, or bf16 mixed precision through LibTorch's autocast (the weights,
// gradients and AdamW state stay float32; matmul-class ops run in bfloat16 and numerically
// sensitive ones such as log_softmax in float32, by autocast's own op lists). On CUDA this is
// torch.autocast(device_type="cuda", dtype=torch.bfloat16); on the CPU, LibTorch's CPU
// autocast, whose bf16 matmuls (oneDNN) are fast only on CPUs with AVX512-BF16 or AMX. lmx's
// fused float32 kernels step aside under autocast (LibTorch's ops run instead).
#pragma once
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace lmx {

// True while autocast is on for `device` (the fused float32 kernels step aside).
bool autocast_active(c10::DeviceType device);

// Enables autocast for `device` while alive when precision is "bf16"; does nothing for "fp32".
class AutocastGuard {
 public:
  AutocastGuard(const std::string& precision, c10::DeviceType device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Float;
  c10::DeviceType device_ = c10::DeviceType::CPU;
};

}  // namespace lmx
