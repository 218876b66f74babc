// Weight initialization, in one place (model/init.cpp).
#pragma once
#include <torch/nn/module.h>

#include "config/config.h"

namespace lmx {

// Every Norm's scale ("weight") -> 1 and its shift ("bias") -> 0 under both schemes. Then
// by cfg.init:
//   normal         every parameter named "bias" -> 0; every other one (linear weights, token
//                  embeddings, learned positions, T5 bias tables) -> N(0, init_std²). Output
//                  projections are NOT scaled by depth: all matrices share one σ.
//   torch_default  what PyTorch's modules do on construction: a linear layer (fan_in = in
//                  features) -> weight and bias U(−1/√fan_in, 1/√fan_in) (nn.Linear's
//                  kaiming_uniform_(a=√5) and its bias rule); an embedding table (tokens,
//                  learned positions, T5 bias) -> N(0, 1) (nn.Embedding). The output head is
//                  a linear layer of fan_in d_model; tied, the shared matrix gets the
//                  embedding's N(0, 1) (tied_init embedding) or the head's U(±1/√d_model)
//                  (tied_init linear), and the head's bias is drawn as a linear layer's.
//   gpt2           normal, but each residual branch's output projection (o_proj, down_proj)
//                  N(0, (init_std/√(2·n_layers))²) (GPT-2: "scale the weights of residual
//                  layers at initialization by 1/√N", N the residual layers).
//   zero_proj      normal, but those output projections zero (modded-nanogpt): every block
//                  starts as the identity.
// Uses torch's global generator: seed it with torch::manual_seed.
void init_weights(torch::nn::Module& model, const ModelConfig& cfg);

}  // namespace lmx
