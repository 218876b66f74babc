// Thread defaults and the BLAS kernel note (util/runtime.h); denormals (kernels/torch_runtime.h).
#include "catch.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include <ATen/Context.h>
#include "torch_api.h"

#include "kernels/torch_runtime.h"
#include "util/runtime.h"

using namespace lmx;

namespace {

// Sets (or unsets, value nullptr) an environment variable for the scope.
struct EnvVar {
  std::string name;
  std::string old;
  bool had = false;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) had = true, old = v;
    value ? setenv(n, value, 1) : unsetenv(n);
  }
  ~EnvVar() { had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("default threads: OMP_NUM_THREADS, else the cores shared by the node's workers, at most 2", "[runtime]") {
  EnvVar omp("OMP_NUM_THREADS", nullptr), local("LOCAL_WORLD_SIZE", nullptr), slurm("SLURM_NTASKS_PER_NODE", nullptr);
  const int cores = runtime::available_cores();
  REQUIRE(cores >= 1);
  CHECK(runtime::default_threads() == std::min(2, cores));
  {
    EnvVar many("LOCAL_WORLD_SIZE", "1000");  // more workers than cores: one thread each
    CHECK(runtime::default_threads() == 1);
  }
  {
    EnvVar tasks("SLURM_NTASKS_PER_NODE", "1000");
    CHECK(runtime::default_threads() == 1);
  }
  {
    EnvVar three("OMP_NUM_THREADS", "3");
    CHECK(runtime::default_threads() == 3);
  }
  {
    EnvVar junk("OMP_NUM_THREADS", "lots");  // not a number: ignored
    CHECK(runtime::default_threads() == std::min(2, cores));
  }
}

TEST_CASE("thread split: at most 2 threads go to OpenBLAS, LibTorch keeps 1", "[runtime]") {
  EnvVar t("LMX_TORCH_THREADS", nullptr), b("LMX_BLAS_THREADS", nullptr);
  CHECK(runtime::thread_split(1).torch_threads == 1);
  CHECK(runtime::thread_split(1).blas_threads == 1);
  CHECK(runtime::thread_split(2).torch_threads == 1);
  CHECK(runtime::thread_split(2).blas_threads == 2);
  EnvVar over("LMX_TORCH_THREADS", "2");
  CHECK(runtime::thread_split(2).torch_threads == 2);
}

TEST_CASE("BLAS note: only when an AVX-512 CPU runs older kernels (pinned, or OpenBLAS fell back)", "[runtime]") {
  runtime::BlasInfo b;
  b.openblas = true;
  b.core = "Haswell";
  b.core_env = "Haswell";
  b.cpu_avx512 = true;
  CHECK(b.core_note().find("OPENBLAS_CORETYPE=Haswell") != std::string::npos);
  CHECK(b.core_label() == "Haswell (OPENBLAS_CORETYPE)");
  b.cpu_avx512 = false;  // an AVX2 CPU: Haswell kernels are right
  CHECK(b.core_note().empty());
  b.cpu_avx512 = true;
  b.core_env.clear();  // OpenBLAS chose by itself, an older kernel: it did not know the CPU
  CHECK(b.core_note().find("OPENBLAS_CORETYPE=SkylakeX selects") != std::string::npos);
  CHECK(b.core_label() == "Haswell");
  b.core = "SkylakeX";  // chose its AVX-512 kernels by itself
  CHECK(b.core_note().empty());
  b.core_env = "SkylakeX";
  b.core = "SkylakeX";  // pinned, but to AVX-512 kernels
  CHECK(b.core_note().empty());
}

TEST_CASE("denormals: flushed to zero by default, kept with LMX_KEEP_DENORMALS=1", "[runtime]") {
  // 1e-20 * 1e-20 = 1e-40 is subnormal in fp32 (the smallest normal is 1.18e-38): IEEE keeps it,
  // FTZ/DAZ make it 0. Checked on a scalar and on a LibTorch element-wise op.
  auto product = [] {
    volatile float a = 1e-20f, b = 1e-20f;
    return a * b;
  };
  auto tensor_product = [] { return (torch::full({8}, 1e-20f) * torch::full({8}, 1e-20f)).abs().sum().item<float>(); };
  {
    EnvVar keep("LMX_KEEP_DENORMALS", nullptr);
    if (!torch_runtime::flush_denormals()) {
      WARN("this CPU cannot flush denormals (not x86 SSE3): nothing to check");
      return;
    }
    CHECK(torch_runtime::denormals_flushed());
    CHECK(product() == 0.0f);
    CHECK(tensor_product() == 0.0f);
  }
  {
    EnvVar keep("LMX_KEEP_DENORMALS", "1");
    at::globalContext().setFlushDenormal(false);  // the process's state before any flush_denormals()
    CHECK_FALSE(torch_runtime::flush_denormals());
    CHECK_FALSE(torch_runtime::denormals_flushed());
    CHECK(product() == Approx(1e-40f).epsilon(1e-2));
    CHECK(tensor_product() == Approx(8e-40f).epsilon(1e-2));
  }
}
