// Weight initialization, in one place (model/init.cpp).
#pragma once
#include <torch/nn/module.h>

namespace lmx {

// Every parameter named "bias" -> 0; every Norm's scale ("weight") -> 1; every other
// parameter (linear weights, token embeddings, learned positions, T5 bias tables) ->
// N(0, init_std²). Output projections (o_proj, down_proj) are NOT scaled by depth: all
// matrices share one σ. Uses torch's global generator: seed it with torch::manual_seed.
void init_weights(torch::nn::Module& model, double init_std);

}  // namespace lmx
