// Parallel loops for lmx's own kernels (attention, norms, FFN activations, cross-entropy,
// AdamW), on the OpenMP threads oneDNN's GEMMs run on: runtime::threads() of them (--threads),
// whatever LibTorch's own intra-op count is (1 at --threads <= 2, runtime.h). One pool for both,
// so a GEMM and a kernel never compete for the cores.
#pragma once
#include <cstdint>
#include <functional>

namespace lmx::kernels {

// fn(begin, end) over consecutive disjoint chunks that cover [0, n): one chunk per thread, at
// least `grain` items each, every chunk but the last a multiple of `align` items (the widest
// SIMD lanes, so that each item takes the same lanes as in one serial call). Serial (fn(0, n)
// on the caller) for one thread, n <= grain, or inside a parallel region. A kernel whose items
// are independent therefore gives the same bits at any thread count. fn must not throw.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn, int64_t align = 1);

// The threads parallel_for uses (runtime::threads()).
int parallel_threads();

// fn(0) ... fn(n-1), at once on min(n, threads) of the same OpenMP threads (the split training
// step, train/trainer.h), part i on thread i mod threads, part 0 on the caller; returns when all
// have, and rethrows the first exception a part threw (by part number). Each part runs under a
// runtime::ThreadShare of 1 (its GEMMs and kernels on its own thread) with OpenBLAS on one thread,
// its count restored after. threads <= 1, n = 1, or inside a parallel region: fn(0), fn(1), ... one
// after another on the caller with all its threads, the first exception ending the loop.
// OpenMP's threads are warm from the GEMMs: a thread of lmx's own waited milliseconds for its
// core while an OpenMP thread still spun there.
void parallel_parts(int n, const std::function<void(int)>& fn, int threads);

}  // namespace lmx::kernels
