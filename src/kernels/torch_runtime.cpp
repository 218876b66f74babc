#include "kernels/torch_runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <algorithm>

#include "util/env.h"
#include "util/error.h"

namespace lmx::torch_runtime {

void set_threads(int n) {
  runtime::set_blas_threads(n);
  at::set_num_threads(runtime::thread_split(n).torch_threads);
}

int torch_threads() { return at::get_num_threads(); }

namespace {
bool g_flushed = false;
}

bool flush_denormals() {
  if (env::text("LMX_KEEP_DENORMALS") == "1") return g_flushed = false;
  return g_flushed = at::globalContext().setFlushDenormal(true);
}

bool denormals_flushed() { return g_flushed; }

bool cuda_available() { return torch::cuda::is_available(); }

void check_device(DeviceKind device) {
  if (device == DeviceKind::Cuda && !cuda_available())
    throw InputError("--device cuda: this LibTorch build has no CUDA (or no GPU is visible)",
                     "use --device cpu, or rebuild lmx against a CUDA LibTorch (see README)");
}

c10::Device make_device(DeviceKind device, int local_rank) {
  check_device(device);
  if (device == DeviceKind::Cpu) return c10::Device(c10::kCPU);
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  const c10::Device d(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank % std::max(1, gpus)));
  // The current device too, so that this rank's CUDA context (and NCCL's) is on its own GPU.
  c10::impl::getDeviceGuardImpl(c10::kCUDA)->setDevice(d);
  return d;
}

}  // namespace lmx::torch_runtime
