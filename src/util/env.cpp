#include "util/env.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lmx::env {

const std::vector<Variable>& variables() {
  static const std::vector<Variable> table = {
      {"LMX_TORCH_THREADS",    "LibTorch's intra-op threads (overrides the split of --threads)"},
      {"LMX_BLAS_THREADS",     "OpenBLAS / oneDNN threads (overrides the split of --threads)"},
      {"LMX_GEMM",             "onednn | torch: the linear layers' float32 GEMMs"},
      {"LMX_BF16_GEMM",        "0 | 1: bf16 on the CPU through oneDNN's bf16 GEMMs (1) or LibTorch's autocast (0)"},
      {"LMX_FUSED_ATTENTION",  "0: LibTorch's ops instead of lmx's fused CPU kernels"},
      {"LMX_KERNEL_ISA",       "avx512 | avx2 | sse2: caps the fused kernels' instruction set"},
      {"LMX_KEEP_DENORMALS",   "1: keep IEEE gradual underflow (denormals are flushed by default)"},
      {"LMX_JOBSERVER",        "a pipe of job slots shared by sweeps and ablations side by side"},
      {"LMX_FORK_SERVER",      "0: a sweep execs each run instead of forking it from its fork server"},
      {"LMX_FORK_SERVER_FD",   "internal: set by a sweep on the fork server it starts (its socket)"},
      {"LMX_DIST",             "0: ignore the launchers' variables (no data-parallel group)"},
      {"LMX_DIST_TIMEOUT",     "seconds a data-parallel collective waits before the run fails"},
      {"LMX_DIST_BACKEND",     "gloo | nccl: the data-parallel backend"},
      {"LMX_FAULT",            "tests: a data-parallel worker that dies, is interrupted or hangs"},
      {"LMX_FAULT_NAN_STEP",   "tests: a NaN loss injected at this step"},
  };
  return table;
}

const char* get(const char* name) {
  for (const auto& v : variables())
    if (std::strcmp(v.name, name) == 0) return std::getenv(name);
  throw std::logic_error(std::string("env::get: ") + name + " is not in util/env.cpp's table");
}

const char* any(const char* name) { return std::strncmp(name, "LMX_", 4) == 0 ? get(name) : std::getenv(name); }

std::string text(const char* name) {
  const char* v = get(name);
  return v ? v : "";
}

}  // namespace lmx::env
