// The process's compute environment on LibTorch's side: its intra-op threads (beside
// OpenBLAS's, util/runtime.h), subnormal floats, and the device a run computes on.
#pragma once
#include <c10/core/Device.h>

#include <string>

#include "config/config.h"
#include "util/runtime.h"

namespace lmx::torch_runtime {

// Sets LibTorch intra-op threads and OpenBLAS threads together (no oversubscription): n
// threads are split as thread_split(n) says. Throws InputError for n < 1.
void set_threads(int n);
int torch_threads();  // LibTorch intra-op threads (at::get_num_threads)

// Subnormal floats (|x| < 1.2e-38) flushed to zero on this thread and the threads it starts
// later (x86 MXCSR FTZ/DAZ): a diverging or high-lr run whose softmax tails, Adam moments or
// activations fall into that range otherwise takes the CPU's slow microcode path (a pre-norm
// model at lr 4e-2 trained 3.6x slower, docs/PERFORMANCE.md). Skipped when
// LMX_KEEP_DENORMALS=1 (IEEE gradual underflow, as PyTorch's default). Call once at start,
// before any thread pool exists. Returns whether denormals are flushed now.
bool flush_denormals();
// Whether flush_denormals() turned flushing on (for --version).
bool denormals_flushed();

bool cuda_available();

// Checks that `device` can be used (cuda: a CUDA build of LibTorch and a visible GPU); throws
// InputError otherwise.
void check_device(DeviceKind device);

// The checked device: cuda is GPU local_rank (modulo the GPUs this process sees), so that
// the ranks of a data-parallel run on one node (torchrun, srun, lmx launch) take one GPU each;
// it also becomes the process's current CUDA device.
c10::Device make_device(DeviceKind device, int local_rank = 0);

}  // namespace lmx::torch_runtime
