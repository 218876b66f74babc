// Auxiliary training losses a forward records beside the model's output (the MoE FFN's load
// balancing), per thread: the split-batch step runs a forward on each thread, and each thread's
// backward takes what its own forward recorded.
#pragma once
#include <torch/types.h>

namespace lmx {

// Adds a scalar loss of the forward running on this thread.
void record_aux_loss(const torch::Tensor& loss);
// The sum of what this thread recorded since the last call (undefined: nothing), and clears it.
torch::Tensor take_aux_loss();

}  // namespace lmx
