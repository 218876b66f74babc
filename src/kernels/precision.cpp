#include "kernels/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <atomic>

#include "config/config.h"
#include "util/log.h"

namespace lmx {

// LibTorch >= 2.4 names autocast's switches by device type; 1.13 has one pair per device.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define LMX_AUTOCAST_BY_DEVICE 1
#else
#define LMX_AUTOCAST_BY_DEVICE 0
#endif

bool autocast_active(c10::DeviceType d) {
#if LMX_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

namespace {

void set_autocast(c10::DeviceType d, bool enabled, c10::ScalarType dtype) {
#if LMX_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_enabled(d, enabled);
  at::autocast::set_autocast_dtype(d, dtype);
#else
  if (d == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType d) {
#if LMX_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

}  // namespace

bool autocasts(Precision precision, c10::DeviceType device) {
  return precision == Precision::Bf16 && (device != c10::DeviceType::CPU || !gemm::bf16_unavailable().empty());
}

AutocastGuard::AutocastGuard(Precision precision, c10::DeviceType device) : device_(device) {
  if (precision != Precision::Bf16) return;
  if (!autocasts(precision, device)) {
    // Measured once a process (~30 ms), and warned about then: whether the bf16 GEMMs pay here.
    static const bool measured = [] {
      const std::string slower = gemm::bf16_slower_note(gemm::measure_bf16_rates());
      if (!slower.empty()) log::warn("precision", "{}", slower);
      return true;
    }();
    (void)measured;
    bf16_gemms_.emplace();
    return;
  }
  if (device == c10::DeviceType::CPU) {
    const std::string why = gemm::bf16_unavailable();
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log::warn("precision", "train.precision bf16: {}; LibTorch's CPU autocast runs instead (fp32 is faster here)", why);
  }
  active_ = true;
  prev_enabled_ = autocast_active(device);
  prev_dtype_ = autocast_dtype(device);
  set_autocast(device, true, c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();  // casts of this step's weights
  set_autocast(device_, prev_enabled_, prev_dtype_);
}

}  // namespace lmx
