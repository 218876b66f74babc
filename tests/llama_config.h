// A small Llama-shaped model config (pre-norm RMSNorm, SwiGLU, RoPE, GQA 4/2, no biases) for the
// export tests (test_hf_llama.cpp, test_gguf.cpp).
#pragma once
#include "config/config.h"

namespace lmx::test {

inline ModelConfig small_llama() {
  ModelConfig m;
  m.vocab_size = 19;
  m.d_model = 24;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.d_ff = 40;
  m.norm = "rmsnorm";
  m.ffn = "swiglu";
  m.position = "rope";
  m.bias = false;
  m.max_seq_len = 64;  // >= the default data.seq_len
  return m;
}

}  // namespace lmx::test
