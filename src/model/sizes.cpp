// Analytic sizes of ModernLM. Every count below mirrors one module of model/ (the test
// builds the real model and compares with numel()); the layouts:
//   attention mha: q C→H·D, k and v C→Hk·D, out H·D→C
//   attention mla: query C→H·(D+R), or C→Rq→H·(D+R) with a query latent;
//                  kv-down C→Rkv+R (latent and shared RoPE key), kv-up Rkv→H·2D (W_UK and
//                  W_UV), out H·D→C (DeepSeek-V2's projections), with mla_latent_norm an
//                  RMSNorm scale on each latent (Rkv, and Rq with a query latent)
//   ffn plain: up C→F, down F→C; gated: gate C→F, up C→F, down F→C
//   norm: layernorm γ and β, rmsnorm γ; two per block (sandwich: four), plus a final one with
//         pre-norm and sandwich; with qk_norm two more of head_dim in each attention
#include "model/sizes.h"

#include <fmt/format.h>

#include <cstdlib>

#include "config/registry.h"
#include "util/error.h"

namespace lmx {

namespace {

struct Linear {
  int64_t in = 0, out = 0;
};

int64_t linear_params(const Linear& l, bool bias) { return size_add(size_mul(l.in, l.out), bias ? l.out : 0); }

int64_t norm_params(const ModelConfig& cfg, int64_t width) {
  return size_mul(registry::norm(cfg).vectors, width);
}

// MLA's decoupled RoPE part exists only with RoPE positions.
int64_t mla_rope_dim(const ModelConfig& cfg) { return registry::position(cfg).rotary ? cfg.mla_rope_dim : 0; }

// The linear layers of one attention block.
std::vector<Linear> attention_linears(const ModelConfig& cfg) {
  const int64_t C = cfg.d_model, H = cfg.n_heads, Hk = cfg.kv_heads(), D = cfg.dim_head();
  if (registry::attention(cfg).latent) {
    const int64_t R = mla_rope_dim(cfg), Rkv = cfg.mla_kv_rank, Rq = cfg.mla_q_rank;
    std::vector<Linear> out;
    if (Rq > 0) {
      out.push_back({C, Rq});             // W_DQ
      out.push_back({Rq, size_mul(H, D + R)});   // W_UQ and W_QR
    } else {
      out.push_back({C, size_mul(H, D + R)});    // W_Q and W_QR
    }
    out.push_back({C, Rkv + R});                 // W_DKV and W_KR
    out.push_back({Rkv, size_mul(H, 2 * D)});    // W_UK and W_UV
    out.push_back({size_mul(H, D), C});          // W_O
    return out;
  }
  return {{C, size_mul(H, D)}, {C, size_mul(Hk, D)}, {C, size_mul(Hk, D)}, {size_mul(H, D), C}};
}

std::vector<Linear> gated_linears(const ModelConfig& cfg) {
  const int64_t C = cfg.d_model, F = cfg.ffn_hidden(true);
  return {{C, F}, {C, F}, {F, C}};
}

std::vector<Linear> ffn_linears(const ModelConfig& cfg) {
  if (registry::ffn(cfg).gated) return gated_linears(cfg);
  const int64_t C = cfg.d_model, F = cfg.ffn_hidden(false);
  return {{C, F}, {F, C}};
}

void require_vocab(const ModelConfig& cfg) {
  if (cfg.vocab_size <= 0)
    throw InputError("model.vocab_size is auto: parameter counts and FLOPs need the vocabulary size",
                     "set model.vocab_size in the config or with --set model.vocab_size=N");
}

}  // namespace

namespace {
[[noreturn]] void size_overflow(int64_t a, const char* op, int64_t b) {
  throw InputError(fmt::format("size {} {} {} does not fit in a 64-bit integer", a, op, b),
                   "the config's dimensions are too large to count: reduce them");
}
}  // namespace

int64_t size_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) size_overflow(a, "x", b);
  return r;
}

int64_t size_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) size_overflow(a, "+", b);
  return r;
}

int64_t params_of(ModelConfig m, int vocab) {
  if (m.vocab_size == 0) m.vocab_size = vocab;
  return count_params(m).total();
}

int match_d_ff(ModelConfig m, int vocab, int64_t target) {
  int best = 1;
  int64_t best_gap = -1;
  for (int f = 1; f <= 16 * m.d_model; ++f) {
    m.d_ff = f;
    const int64_t gap = std::llabs(params_of(m, vocab) - target);
    if (best_gap < 0 || gap < best_gap) best = f, best_gap = gap;
  }
  return best;
}

int64_t gated_ffn_params(const ModelConfig& cfg, bool bias) {
  int64_t n = 0;
  for (const auto& l : gated_linears(cfg)) n = size_add(n, linear_params(l, bias));
  return n;
}

ParamCounts count_params(const ModelConfig& cfg) {
  require_vocab(cfg);
  const int64_t V = cfg.vocab_size, C = cfg.d_model, L = cfg.n_layers;
  ParamCounts p;
  p.n_layers = L;
  p.embedding = size_mul(V, C);
  if (const auto params = registry::position(cfg).params) p.position = params(cfg);
  for (const auto& l : attention_linears(cfg)) p.attention_per_layer = size_add(p.attention_per_layer, linear_params(l, cfg.bias));
  if (registry::attention(cfg).latent && cfg.mla_latent_norm)  // RMSNorm scales on the latents
    p.attention_per_layer = size_add(p.attention_per_layer, cfg.mla_kv_rank + (cfg.mla_q_rank > 0 ? cfg.mla_q_rank : 0));
  if (const auto params = registry::ffn(cfg).params)
    p.ffn_per_layer = params(cfg);
  else
    for (const auto& l : ffn_linears(cfg)) p.ffn_per_layer = size_add(p.ffn_per_layer, linear_params(l, cfg.bias));
  if (cfg.qk_norm)  // one norm of head_dim for the queries, one for the keys
    p.attention_per_layer = size_add(p.attention_per_layer, 2 * norm_params(cfg, cfg.dim_head()));
  p.norms_per_layer = (cfg.norm_placement == NormPlacement::Sandwich ? 4 : 2) * norm_params(cfg, C);
  p.final_norm = cfg.norm_placement != NormPlacement::Post ? norm_params(cfg, C) : 0;
  p.head = (cfg.tie_embeddings ? 0 : p.embedding) + (cfg.bias ? V : 0);
  return p;
}

bool layer_windowed(const ModelConfig& cfg, int64_t layer) {
  const int64_t k = cfg.window_global_every;
  return cfg.sliding_window > 0 && !(k > 0 && layer % k == k - 1);
}

KVCacheSize kv_cache_size(const ModelConfig& cfg) {
  KVCacheSize s;
  s.n_layers = cfg.n_layers;
  s.window = cfg.sliding_window;
  for (int64_t i = 0; i < cfg.n_layers; ++i) s.windowed_layers += layer_windowed(cfg, i) ? 1 : 0;
  if (registry::attention(cfg).latent)
    s.per_token_per_layer = cfg.mla_kv_rank + mla_rope_dim(cfg);
  else
    s.per_token_per_layer = size_mul(2 * static_cast<int64_t>(cfg.kv_heads()), cfg.dim_head());
  return s;
}

int64_t matmul_params(const ModelConfig& cfg) {
  require_vocab(cfg);
  int64_t per_layer = 0;
  for (const auto& l : attention_linears(cfg)) per_layer = size_add(per_layer, linear_params(l, false));
  if (const auto active = registry::ffn(cfg).active_matmul)
    per_layer = size_add(per_layer, active(cfg));
  else
    for (const auto& l : ffn_linears(cfg)) per_layer = size_add(per_layer, linear_params(l, false));
  return size_add(size_mul(per_layer, cfg.n_layers), size_mul(cfg.vocab_size, cfg.d_model));
}

ForwardFlops forward_flops(const ModelConfig& cfg, int64_t seq_len) {
  if (seq_len < 1) throw InputError(fmt::format("sequence length must be >= 1, got {}", seq_len));
  const int64_t T = seq_len, H = cfg.n_heads, D = cfg.dim_head();
  const int64_t d_qk = D + (registry::attention(cfg).latent ? mla_rope_dim(cfg) : 0), d_v = D;
  const int64_t per_pair = size_mul(size_mul(2 * H, d_qk + d_v), cfg.n_layers);  // Q·Kᵀ and A·V, all layers
  ForwardFlops f;
  f.seq_len = T;
  f.matmul = size_mul(size_mul(2, T), matmul_params(cfg));
  f.attention_causal = size_mul(per_pair, size_mul(T, size_add(T, 1)) / 2);
  f.attention_full = size_mul(per_pair, size_mul(T, T));
  return f;
}

std::string attention_kind(const ModelConfig& m) {
  if (registry::attention(m).latent) return "MLA";
  if (m.kv_heads() == m.n_heads) return "MHA";
  return m.kv_heads() == 1 ? "MQA" : "GQA";
}

}  // namespace lmx
