#include "util/runtime.h"

#include <dlfcn.h>
#include <malloc.h>

#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/env.h"
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
  if (auto get_core = blas_symbol<GetConfigFn>("openblas_get_corename")) info.core = get_core();
  if (const char* env = std::getenv("OPENBLAS_CORETYPE"); env && *env) info.core_env = env;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  info.cpu_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
#endif
  return info;
}

std::string BlasInfo::core_label() const {
  if (core.empty()) return "";
  return core_env.empty() ? core : core + " (OPENBLAS_CORETYPE)";
}

std::string BlasInfo::core_note() const {
  if (!openblas || !cpu_avx512) return "";
  static const char* avx2_cores[] = {"haswell", "zen", "sandybridge", "nehalem", "core2", "prescott", "excavator"};
  std::string lower;
  for (char c : core) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool avx2_only = false;
  for (const char* c : avx2_cores) avx2_only = avx2_only || lower == c;
  if (!avx2_only) return "";
  if (core_env.empty())  // OpenBLAS did not recognize this (newer) CPU and fell back to old kernels
    return "OpenBLAS chose its " + core + " kernels on this AVX-512 CPU (its CPU detection does not map this CPU to its AVX-512 kernels); "
           "OPENBLAS_CORETYPE=SkylakeX selects its AVX-512 kernels (lmx bench --peak shows the difference)";
  return "OPENBLAS_CORETYPE=" + core_env + " holds OpenBLAS to its " + core +
         " kernels on this AVX-512 CPU; unset it to let OpenBLAS pick its AVX-512 kernels (lmx bench --peak shows the difference)";
}

namespace {
int g_blas_threads = 1;
int g_threads = 1;
thread_local int t_share = 0;  // a ThreadShare's count on this thread (0: none)

// LMX_BLAS_THREADS / LMX_TORCH_THREADS override the split (for measuring it).
int env_int(const char* name, int fallback) {
  const char* v = env::any(name);
  if (!v || !*v) return fallback;
  try {
    int n = std::stoi(v);
    return n >= 1 ? n : fallback;
  } catch (...) {
    return fallback;
  }
}
}  // namespace

void set_blas_threads(int n) {
  if (n < 1) throw InputError("--threads must be at least 1, got " + std::to_string(n));
  const ThreadSplit split = thread_split(n);
  g_threads = n;
  g_blas_threads = split.blas_threads;
  set_openblas_threads(split.blas_threads);
}

void set_openblas_threads(int n) {
  if (auto set_blas = blas_symbol<SetThreadsFn>("openblas_set_num_threads")) set_blas(n);
}

ThreadShare::ThreadShare(int n) : before_(t_share) { t_share = std::max(1, n); }
ThreadShare::~ThreadShare() { t_share = before_; }

// OpenMP (LibTorch) workers spin after every parallel region while OpenBLAS's own workers run
// the next sgemm, so n LibTorch threads + n OpenBLAS threads oversubscribe n cores (on the
// 2-core machine of docs/PERFORMANCE.md, busy with other jobs, a textbook step took 390 ms
// with 2 + 2, 157 ms with 2 + 1 and 53 ms with 1 + 2). At
// n <= 2 the matmuls, most of a small model's step, get the n threads and LibTorch's
// element-wise ops run on the calling thread; beyond 2 cores both get n (not measured here).
ThreadSplit thread_split(int n) {
  ThreadSplit s;
  s.torch_threads = env_int("LMX_TORCH_THREADS", n <= 2 ? 1 : n);
  s.blas_threads = env_int("LMX_BLAS_THREADS", n);
  return s;
}

int threads() { return t_share > 0 ? t_share : g_threads; }
int blas_threads() { return g_blas_threads; }

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int max_threads() { return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int default_threads() {
  // An explicit OMP_NUM_THREADS wins (torchrun sets it to 1 for several workers per node).
  if (const int omp = env_int("OMP_NUM_THREADS", 0); omp > 0) return omp;
  // Workers started together on one node share its cores.
  // At most 2: measured faster than 1 on the 2-core machine (docs/PERFORMANCE.md); more
  // threads were never measured and the split beyond 2 gives LibTorch n threads too.
  return std::min(2, std::max(1, available_cores() / local_world_size()));
}

int local_world_size() {
  int local = env_int("LOCAL_WORLD_SIZE", 0);
  if (local <= 0) local = env_int("SLURM_NTASKS_PER_NODE", 1);
  return std::max(1, local);
}

namespace {
int self_fd = -1;
}  // namespace

void open_self() {
  if (self_fd < 0) self_fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

std::string self_exec_path() {
  // O_CLOEXEC: the child resolves /proc/self/fd/N at the start of its exec, before the flag
  // closes the descriptor, so it opens this same file and does not keep the descriptor.
  if (self_fd >= 0) return "/proc/self/fd/" + std::to_string(self_fd);
  return self_path();
}

std::string self_path() {
  std::string path = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() && path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
    path.resize(path.size() - deleted.size());
  return path;
}

void tune_allocator() {
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

}  // namespace lmx::runtime
