// The process's compute environment: threads, BLAS, device.
#pragma once
#include <string>

namespace lmx::runtime {

struct BlasInfo {
  std::string library;  // resolved path of the loaded libblas, or "unknown"
  bool openblas = false;
  std::string config;   // openblas_get_config() when available
};

BlasInfo blas_info();

// Sets LibTorch intra-op threads and OpenBLAS threads together (no oversubscription).
void set_threads(int n);
int threads();

// Default intra-op threads when --threads is not given.
int default_threads();

bool cuda_available();

// Checks that `device` ("cpu" or "cuda") can be used; throws InputError otherwise.
void check_device(const std::string& device);

}  // namespace lmx::runtime
