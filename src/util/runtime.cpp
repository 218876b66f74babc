#include "util/runtime.h"

#include <dlfcn.h>
#include <torch/cuda.h>
#include <ATen/Parallel.h>

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace lmx::runtime {

namespace {
using SetThreadsFn = void (*)(int);
using GetConfigFn = char* (*)();

template <class Fn>
Fn blas_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

BlasInfo blas_info() {
  BlasInfo info;
  info.library = "unknown";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    auto base = path.substr(path.rfind('/') + 1);
    if (base.rfind("libblas", 0) == 0 || base.rfind("libopenblas", 0) == 0) {
      info.library = path;
      break;
    }
  }
  if (auto get_config = blas_symbol<GetConfigFn>("openblas_get_config")) {
    info.openblas = true;
    info.config = get_config();
  }
  return info;
}

void set_threads(int n) {
  if (n < 1) throw InputError("--threads must be at least 1, got " + std::to_string(n));
  at::set_num_threads(n);
  if (auto set_blas = blas_symbol<SetThreadsFn>("openblas_set_num_threads")) set_blas(n);
}

int threads() { return at::get_num_threads(); }

int default_threads() { return 1; }

bool cuda_available() { return torch::cuda::is_available(); }

void check_device(const std::string& device) {
  if (device == "cpu") return;
  if (device == "cuda") {
    if (!cuda_available())
      throw InputError("--device cuda: this LibTorch build has no CUDA (or no GPU is visible)",
                       "use --device cpu, or rebuild lmx against a CUDA LibTorch (see README)");
    return;
  }
  throw InputError("unknown device '" + device + "'", "valid devices: cpu, cuda");
}

}  // namespace lmx::runtime
