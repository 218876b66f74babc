// Causal self-attention variants. Dimension letters: B batch, T new tokens, Tk keys (cached
// plus new), C = d_model, H query heads, Hk KV heads, D head dim, r MLA KV latent rank,
// rq MLA query latent rank, R MLA decoupled-RoPE width.
//
// scores = q·kᵀ/√(D_qk) + position bias, future keys masked, softmax over keys.
// With a KV cache (per layer: the variant's tensors), x holds only the new tokens, at
// positions [start, start + T); the cache is extended in place.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <utility>
#include <vector>

#include "config/config.h"
#include "model/options.h"
#include "model/position/position.h"

namespace lmx {

class RMSNormImpl;
class Norm;

// The attention kind: x (B, T, C) -> (B, T, C).
class Attention : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache) = 0;
  // A padding-free batch (train.padding_free): x (1, N, C) holds sequences of these lengths
  // end to end, each attending only within itself at positions [0, length). Only where
  // takes_packed(x); the base class takes none.
  virtual bool takes_packed(const torch::Tensor& x) const { return false; }
  virtual torch::Tensor forward_packed(const torch::Tensor& x, const std::vector<int64_t>& lengths);
  // Numbers cached per token (all heads) by this layer: MHA 2·Hk·D, MLA r + R.
  virtual int64_t cached_per_token() const = 0;
  // The layer's position scheme (the inference engine, infer/decoder.h, reads its tables).
  const std::shared_ptr<Position>& position() const { return position_; }
  // Sliding-window attention (model.sliding_window): each query sees itself and the w − 1 keys
  // before it; 0 = the whole prefix. A variant without it throws std::logic_error (validation
  // refuses such configs first).
  virtual void set_window(int64_t w);
  int64_t window() const { return window_; }

 protected:
  // Keeps the position scheme; registers a per-layer one with parameters under its HF name.
  void attach_position(std::shared_ptr<Position> position);
  std::shared_ptr<Position> position_;
  int64_t window_ = 0;
};

// Masked softmax attention. q (B, H, Tq, Dqk), k (B, H|1, Tk, Dqk), v (B, H|1, Tk, Dv); the
// queries sit at positions [q_start, q_start + Tq), the keys at [0, Tk). bias (H, Tq, Tk) or
// undefined; window > 0: a query at p sees the keys at (p − window, p] only; softcap > 0: the
// scaled scores c·tanh(s/c) before the bias and mask (Gemma 2). -> (B, H, Tq, Dv).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& bias, double scale, int64_t q_start, int64_t window = 0,
                               double softcap = 0);
// Softmax of masked scores (B, H, Tq, Tk) with queries at [q_start, ...) -> probabilities.
torch::Tensor causal_softmax(const torch::Tensor& scores, int64_t q_start, int64_t window = 0);
// Appends t to (*cache)[slot] along dim (creating the slot) and returns the whole cached tensor.
torch::Tensor append_to_cache(std::vector<torch::Tensor>* cache, size_t slot, const torch::Tensor& t, int64_t dim);
// Keeps the last `keep` entries along dim of every cached tensor: a layer with a sliding window W
// keeps its last W tokens between calls (Mistral's rolling buffer; model/sizes.h counts them so),
// of which the next token sees W − 1 and itself.
void trim_cache(std::vector<torch::Tensor>* cache, int64_t keep, int64_t dim);

// Multi-head attention; grouped-query (GQA) when Hk < H, multi-query (MQA) when Hk = 1.
// Query head h reads KV head h / (H / Hk). Cache: [k (B, Hk, Tk, D) after RoPE, v (B, Hk, Tk, D)]:
// every token before, or with a sliding window W only the last W (trim_cache).
// QK-norm (q_norm and k_norm given, model.qk_norm): each head's q and k through a norm of
// width D (one for the queries, one for the keys) before RoPE, on every path.
class MultiHeadAttentionImpl : public Attention {
 public:
  MultiHeadAttentionImpl(const AttentionOptions& o, std::shared_ptr<Position> position,
                         std::shared_ptr<Norm> q_norm = nullptr, std::shared_ptr<Norm> k_norm = nullptr);
  torch::Tensor forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache) override;
  // The fused kernel's case: rotate-only positions (NoPE, absolute, RoPE over the whole head).
  bool takes_packed(const torch::Tensor& x) const override;
  torch::Tensor forward_packed(const torch::Tensor& x, const std::vector<int64_t>& lengths) override;
  int64_t cached_per_token() const override { return 2 * n_kv_heads_ * head_dim_; }
  // The fused kernels take the window (and the soft-cap) as a lower bound of each query's keys.
  void set_window(int64_t w) override { window_ = w; }

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  std::shared_ptr<Norm> q_norm, k_norm;  // QK-norm, or null
  double softcap() const { return softcap_; }  // model.attn_softcap (0: none)

 private:
  torch::Tensor qkv(const torch::Tensor& x);  // (B, T, H + 2Hk, D), one GEMM (then QK-norm)
  bool rotate_only() const;
  int64_t n_heads_, n_kv_heads_, head_dim_;
  double softcap_ = 0;
};
TORCH_MODULE(MultiHeadAttention);

// Multi-head latent attention (DeepSeek-V2, §2.1), parameter names as DeepSeek-V2's code, with
// its RMSNorms on the latents (q_a_layernorm, kv_a_layernorm; model.mla_latent_norm, on by
// default; the paper's equations do not have them):
//   queries   q = W_Q x (q_proj), or with rq > 0: c_q = W_DQ x (q_a_proj), q = W_UQ c_q (q_b_proj);
//             per head [q_nope (D) | q_pe (R)]
//   KV latent [c (r) | k_pe (R)] = kv_a_proj_with_mqa(x); k_pe is one RoPE key part shared by
//             every head
//   up        per head [k_nope (D) | v (D)] = kv_b_proj(c): W_UK and W_UV stacked per head
//   scores    (q_nope·k_nope + RoPE(q_pe)·RoPE(k_pe)) / √(D + R); out = o_proj(concat_h P·v)
// Cache: [c (B, Tk, r), k_pe (B, Tk, R) after RoPE] — r + R numbers per token per layer.
// naive path: recover k_nope and v from c; absorbed path (model.mla_absorb): q_nope·W_UK·c and
// (P·c)·W_UVᵀ, never forming k or v. Both give the same outputs (biases included).
class MultiHeadLatentAttentionImpl : public Attention {
 public:
  MultiHeadLatentAttentionImpl(const MlaOptions& o, std::shared_ptr<Position> position);
  torch::Tensor forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache) override;
  int64_t cached_per_token() const override { return kv_rank_ + rope_dim_; }

  // Probes (lecture 03.3), for x (B, T, C) at positions [0, T), no cache; scores are the
  // scaled pre-softmax scores (B, H, T, T), future keys not masked.
  torch::Tensor scores(const torch::Tensor& x, bool absorbed);
  // Without decoupling: RoPE applied to q_nope and to the keys k_nope = W_UK c recovered from
  // the latent. first: the exact scores (R_i q)·(R_j W_UK c_j) / √D; second: the naive
  // absorption (R_i q)ᵀW_UK·c_j / √D, which loses R_j — a large difference. (B, H, T, T) each.
  std::pair<torch::Tensor, torch::Tensor> rope_on_keys_scores(const torch::Tensor& x);

  bool absorb = false;  // path used by forward; starts as MlaOptions::absorb (model.mla_absorb)
  torch::nn::Linear q_proj{nullptr}, q_a_proj{nullptr}, q_b_proj{nullptr};
  torch::nn::Linear kv_a_proj_with_mqa{nullptr}, kv_b_proj{nullptr}, o_proj{nullptr};
  // RMSNorms on the latents (model.mla_latent_norm), as DeepSeek-V2; null when off.
  std::shared_ptr<RMSNormImpl> q_a_layernorm, kv_a_layernorm;

 private:
  struct Projected {
    torch::Tensor q_nope, q_pe;  // (B, H, T, D), (B, H, T, R) after RoPE
    torch::Tensor c, k_pe;       // (B, T, r), (B, T, R) after RoPE
  };
  Projected project(const torch::Tensor& x, int64_t start);
  torch::Tensor raw_scores(const Projected& p, bool absorbed);          // (B, H, T, Tk), scaled
  torch::Tensor values(const torch::Tensor& probs, const torch::Tensor& c, bool absorbed);  // (B, H, T, D)
  torch::Tensor w_uk();  // (H, D, r)
  torch::Tensor w_uv();  // (H, D, r)

  const RopeOptions nope_rope_;
  int64_t n_heads_, head_dim_, kv_rank_, q_rank_, rope_dim_;
};
TORCH_MODULE(MultiHeadLatentAttention);

}  // namespace lmx
