// The process's compute environment without LibTorch: thread counts and their split, BLAS,
// cores, the executable's own path. The LibTorch side (its thread pool, denormals, devices) is
// kernels/torch_runtime.h.
#pragma once
#include <string>

namespace lmx::runtime {

struct BlasInfo {
  std::string library;  // resolved path of the loaded libblas, or "unknown"
  bool openblas = false;
  std::string config;   // openblas_get_config() when available
  std::string core;     // openblas_get_corename(): the kernels in use (e.g. Haswell, SkylakeX)
  std::string core_env; // OPENBLAS_CORETYPE when set: it overrides OpenBLAS's CPU detection
  bool cpu_avx512 = false;  // the CPU runs AVX-512 (F, CD, BW, DQ, VL: OpenBLAS's SkylakeX kernels)
  // A one-line note when OpenBLAS runs pre-AVX-512 kernels on an AVX-512 CPU: held there by
  // OPENBLAS_CORETYPE, or fallen back because its CPU detection does not know the CPU ("" otherwise).
  std::string core_note() const;
  // "Haswell" or "Haswell (OPENBLAS_CORETYPE)" or "" when not OpenBLAS.
  std::string core_label() const;
};

BlasInfo blas_info();

// Records n as the process's thread count and gives OpenBLAS its part (thread_split(n));
// throws InputError for n < 1. torch_torch_runtime::set_threads (kernels/torch_runtime.h) calls it and
// gives LibTorch its part.
void set_blas_threads(int n);
int threads();        // n, as last set; a ThreadShare's count on a thread that holds one
int blas_threads();   // OpenBLAS threads (as last set)

// While alive, threads() is n on the calling thread only (the GEMMs and lmx's kernels it runs
// take n threads); other threads keep the process's count. The parts of a split training step
// (kernels/parallel.h: parallel_parts) run on one thread each.
class ThreadShare {
 public:
  explicit ThreadShare(int n);
  ~ThreadShare();
  ThreadShare(const ThreadShare&) = delete;
  ThreadShare& operator=(const ThreadShare&) = delete;

 private:
  int before_;
};

// OpenBLAS's own thread count, alone (threads() and the split unchanged): a split step gives it
// 1 while its parts run, so that two parts' LibTorch matmuls do not each start n threads.
void set_openblas_threads(int n);

struct ThreadSplit {
  int torch_threads = 1;  // at::set_num_threads (OpenMP: elementwise ops, reductions, lmx kernels)
  int blas_threads = 1;   // openblas_set_num_threads (sgemm)
};
// The split of n threads; LMX_TORCH_THREADS / LMX_BLAS_THREADS override either part.
ThreadSplit thread_split(int n);

// Cores this process may run on (its CPU affinity).
int available_cores();

// The most threads lmx accepts (--threads, OMP_NUM_THREADS): 4 x the machine's cores. More only
// oversubscribes, and a huge count makes thread-pool start-up hang.
int max_threads();

// Threads when --threads is not given: OMP_NUM_THREADS when set; else the cores available to
// this process divided among the workers on its node (LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE),
// at most 2.
int default_threads();

// The workers started together on this node (lmx launch, torchrun: LOCAL_WORLD_SIZE; srun:
// SLURM_NTASKS_PER_NODE); 1 without a launcher.
int local_world_size();

// glibc malloc: keep freed blocks for reuse instead of returning them to the kernel (no
// mmap / munmap and page faults for every multi-MiB activation of every step). Call once at
// start; peak RSS is unchanged (freed memory is reused, not grown).
void tune_allocator();

// This executable, opened at start (call once in main): the path a sweep, ablate or launch
// parent runs its children from. Through the open file, a rebuild that replaces the binary
// while a sweep runs does not change the children's program, nor stop them starting
// (/proc/self/exe would name a deleted file). Falls back to /proc/self/exe's target.
void open_self();
std::string self_exec_path();
// This executable's path for people (ps, logs): /proc/self/exe's target without the
// " (deleted)" the kernel appends once the file is replaced.
std::string self_path();

}  // namespace lmx::runtime
