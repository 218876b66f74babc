// Each module's own options (LibTorch's XOptions habit): the few sizes and switches a module
// reads, with defaults, so that a module is built and tested without a whole ModelConfig.
// The *_options functions are the one place that reads them off a config; the registry's
// factories (model/registry.cpp) and the model (model/lm.cpp) call them. Option names are
// parsed here into enums or booleans: no module compares a config string.
#pragma once
#include <cstdint>

#include "config/config.h"

namespace lmx {

// RoPE (model/position/rope.h) over `dim` numbers of a head.
struct RopeOptions {
  int64_t dim = 16;              // the rotated width (head dim; MLA: its decoupled part)
  double theta = 10000.0;        // base θ
  bool interleaved = false;      // pairs (2i, 2i+1) instead of (i, i + D/2)
  RopeScaling scaling = RopeScaling::None;
  double factor = 1.0;           // s, the context extension factor
  int64_t original_len = 0;      // yarn: the trained length the ramp is measured in
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn: the ramp's ends (rotations)
  int64_t table_len = 512;       // cos/sin tables are built for at least this many positions
};

// Multi-head attention (MHA / GQA / MQA, model/attention/attention.h).
struct AttentionOptions {
  int64_t d_model = 64, n_heads = 4, n_kv_heads = 4, head_dim = 16;
  bool bias = true;
  double softcap = 0;  // > 0: scores c·tanh(s/c) (model.attn_softcap)
};

// Multi-head latent attention (DeepSeek-V2).
struct MlaOptions {
  int64_t d_model = 64, n_heads = 4, head_dim = 16;
  int64_t kv_rank = 32, q_rank = 0;  // latent ranks; q_rank 0: full-rank queries
  int64_t rope_dim = 8;              // decoupled RoPE part per head; 0 without a rotary position
  bool absorb = false, latent_norm = true, bias = true;
  double norm_eps = 1e-5;            // of the latents' RMSNorms
  RopeOptions nope_rope;             // the probe's RoPE over the whole head (rope_on_keys_scores)
};

// A plain or gated FFN (model/ffn.h); hidden: the resolved d_ff for its kind.
struct FfnOptions {
  int64_t d_model = 64, hidden = 256;
  bool bias = true;
  double swish_beta = 1.0;
};

// A mixture-of-experts FFN (model/moe.h): its experts' FFN options (SwiGLU), their numbers and
// the load-balancing loss's coefficient.
struct MoeOptions {
  FfnOptions expert;
  int64_t experts = 8, top_k = 2, shared = 0;
  double aux_loss = 0.01;
};

// One block (model/block.h): where its norms sit.
struct BlockOptions {
  bool pre_norm = true;  // x + f(N(x)) with a final norm; false: N(x + f(x)) (2017)
  bool sandwich = false; // pre_norm with a norm on each sublayer's output: x + N'(f(N(x)))
};

RopeOptions rope_options(const ModelConfig& cfg, int64_t dim);
AttentionOptions attention_options(const ModelConfig& cfg);
MlaOptions mla_options(const ModelConfig& cfg);
FfnOptions ffn_options(const ModelConfig& cfg, bool gated);
BlockOptions block_options(const ModelConfig& cfg);
MoeOptions moe_options(const ModelConfig& cfg);

}  // namespace lmx
