// The inference engine: token-by-token decoding (lmx generate, the KV-cache benchmarks) on a
// model compiled once into flat float32 buffers, as llama.cpp runs a graph built once: the
// q|k|v and gate|up weights stacked once (the modules stack them at every call), a KV cache
// allocated once for the whole context, or a ring of W + 1 slots for a layer with a sliding
// window W (the modules' KVCache grows by concatenation, O(T) a
// token; its keys are kept rotated and transposed, one column written a token, for
// kernels::decode), and each token one pass of raw-pointer calls into the kernels the modules
// run (oneDNN's sgemm through gemm::linear_rows; the fused norm, activation and attention
// kernels of kernels/cpu_kernels.h), with nothing allocated.
//
// The prompt runs through the modules (ModernLM::forward with a KVCache), whose keys and values
// are then copied in; each later token's logits are bit-identical to what the module path
// gives with a KVCache (the same kernels on the same numbers in the same order;
// tests/test_decoder.cpp checks every supported variant), so greedy output is identical too.
//
// Runs MHA / GQA / MQA with positions that only add or rotate (none, sinusoidal, learned, RoPE
// over the whole head), QK-norm or not, sliding windows (a ring of W slots per windowed layer)
// or not, soft-capped scores and logits or not, LayerNorm or RMSNorm, pre or post, every plain and
// gated FFN, biases or not, tied or not, sandwich norms or not: float32 on the CPU with the fused
// kernels and oneDNN on. Elsewhere (MLA, T5 bias, ALiBi, partial RoPE, the MoE
// FFN, components added at run time, LMX_GEMM=torch, LMX_FUSED_ATTENTION=0) unsupported() says
// why, and callers keep the module path.
#pragma once
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "model/lm.h"

namespace lmx::infer {

class Decoder {
 public:
  // Why the engine cannot run this model in this process ("" when it can).
  static std::string unsupported(const ModernLM& model);

  // Compiles the model for one sequence of up to max_len tokens (learned positions: at most
  // model.max_seq_len). A snapshot: weights changed later are not seen (build it again).
  // Throws std::logic_error where unsupported() is not "".
  Decoder(const ModernLM& model, int64_t max_len);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Starts a sequence with tokens (1 to max_len of them) through the model's modules and keeps
  // their keys and values. -> the last position's logits: vocab() floats, valid until the next
  // call.
  const float* prefill(const std::vector<int64_t>& tokens);
  // Appends one token at position length() (< max_len()). -> its logits, as prefill's.
  const float* step(int64_t token);

  int64_t length() const;   // tokens in the sequence so far
  int64_t max_len() const;
  int64_t vocab() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The index of the largest of n logits: the first on ties, a NaN counting as the largest, as
// torch::argmax.
int64_t argmax(const float* logits, int64_t n);

}  // namespace lmx::infer
