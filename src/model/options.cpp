#include "model/options.h"

#include "config/registry.h"

namespace lmx {

RopeOptions rope_options(const ModelConfig& cfg, int64_t dim) {
  RopeOptions o;
  o.dim = dim;
  o.theta = cfg.rope_theta;
  o.interleaved = cfg.rope_layout == RopeLayout::Interleaved;
  o.scaling = cfg.rope_scaling;
  o.factor = cfg.rope_factor;
  o.original_len = cfg.rope_original_len > 0 ? cfg.rope_original_len
                                             : static_cast<int64_t>(cfg.max_seq_len / cfg.rope_factor);
  o.beta_fast = cfg.yarn_beta_fast;
  o.beta_slow = cfg.yarn_beta_slow;
  o.table_len = cfg.max_seq_len;
  return o;
}

AttentionOptions attention_options(const ModelConfig& cfg) {
  return {cfg.d_model, cfg.n_heads, cfg.kv_heads(), cfg.dim_head(), cfg.bias, cfg.attn_softcap};
}

MlaOptions mla_options(const ModelConfig& cfg) {
  MlaOptions o;
  o.d_model = cfg.d_model;
  o.n_heads = cfg.n_heads;
  o.head_dim = cfg.dim_head();
  o.kv_rank = cfg.mla_kv_rank;
  o.q_rank = cfg.mla_q_rank;
  o.rope_dim = registry::position(cfg).rotary ? cfg.mla_rope_dim : 0;
  o.absorb = cfg.mla_absorb;
  o.latent_norm = cfg.mla_latent_norm;
  o.bias = cfg.bias;
  o.norm_eps = cfg.norm_eps;
  o.nope_rope = rope_options(cfg, cfg.dim_head());
  return o;
}

FfnOptions ffn_options(const ModelConfig& cfg, bool gated) {
  return {cfg.d_model, cfg.ffn_hidden(gated), cfg.bias, cfg.swish_beta};
}

MoeOptions moe_options(const ModelConfig& cfg) {
  return {ffn_options(cfg, /*gated=*/true), cfg.moe_experts, cfg.moe_top_k, cfg.moe_shared_experts, cfg.moe_aux_loss};
}

BlockOptions block_options(const ModelConfig& cfg) {
  return {cfg.norm_placement != NormPlacement::Post, cfg.norm_placement == NormPlacement::Sandwich};
}

}  // namespace lmx
