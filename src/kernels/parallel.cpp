// Compiled with -fopenmp (CMakeLists.txt): the only lmx file with OpenMP pragmas. LibTorch's
// at::parallel_for is a header template whose OpenMP region exists only in files built with
// -fopenmp, and runs on LibTorch's own thread count.
#include "kernels/parallel.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "util/runtime.h"

namespace lmx::kernels {

int parallel_threads() { return std::max(1, runtime::threads()); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn, int64_t align) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  align = std::max<int64_t>(align, 1);
  const int64_t most = std::max<int64_t>(1, n / grain);
  const int threads = static_cast<int>(std::min<int64_t>(parallel_threads(), most));
  if (threads <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // Equal chunks rounded up to `align`; the last one takes what is left (it may be empty).
  const int64_t chunk = ((n + threads - 1) / threads + align - 1) / align * align;
#pragma omp parallel num_threads(threads)
  {
    const int64_t begin = std::min(n, omp_get_thread_num() * chunk);
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end) fn(begin, end);
  }
}

void parallel_parts(int n, const std::function<void(int)>& fn, int threads) {
  if (n <= 0) return;
  threads = std::min(n, threads);
  if (threads <= 1 || omp_in_parallel()) {  // one after another, each with the caller's threads
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  auto part = [&](int i) {
    runtime::ThreadShare one(1);
    try {
      fn(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  runtime::set_openblas_threads(1);  // OpenBLAS's count is the process's, not a thread's
#pragma omp parallel num_threads(threads)
  {
    // OpenMP may give fewer threads than asked: each takes every k-th part.
    for (int i = omp_get_thread_num(); i < n; i += omp_get_num_threads()) part(i);
  }
  runtime::set_openblas_threads(runtime::blas_threads());
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace lmx::kernels
