// Sizes without allocation: exact parameter counts, KV-cache sizes and forward FLOPs of
// ModernLM, computed analytically from a ModelConfig, so they work for 70B configs as well
// as for the garden models. tests/test_sizes.cpp checks the counts against the numel() of
// real models for every component variant.
//
// Letters: V vocab, C d_model, L layers, H query heads, Hk KV heads, D head dim, F d_ff,
// R MLA RoPE dim, Rkv / Rq MLA KV / query latent ranks, T sequence length.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace lmx {

// Checked size arithmetic: a·b and a+b, or InputError (exit 2) when the result does not fit in
// int64 (a size computed from user input is never printed wrapped, negative or rounded).
int64_t size_mul(int64_t a, int64_t b);
int64_t size_add(int64_t a, int64_t b);

// Parameters per component. The *_per_layer fields are for one Transformer block; the
// model has n_layers of them.
struct ParamCounts {
  int64_t embedding = 0;             // token embeddings V·C
  int64_t position = 0;              // learned: max_seq_len·C; t5_bias: buckets·H per layer; else 0
  int64_t attention_per_layer = 0;   // projections (+ biases, MLA's latent norms, QK-norm gains)
  int64_t ffn_per_layer = 0;         // plain 2·C·F, gated 3·C·F (+ biases)
  int64_t norms_per_layer = 0;       // the block's two norms (sandwich: four)
  int64_t final_norm = 0;            // pre-norm and sandwich
  int64_t head = 0;                  // untied: V·C (+ V bias); tied: the bias only, if any
  int64_t n_layers = 0;

  int64_t per_layer() const { return size_add(size_add(attention_per_layer, ffn_per_layer), norms_per_layer); }
  int64_t layers() const { return size_mul(per_layer(), n_layers); }
  int64_t total() const { return size_add(size_add(size_add(size_add(embedding, position), layers()), final_norm), head); }
  int64_t non_embedding() const { return total() - embedding - position; }
};

// Requires cfg.vocab_size > 0 (throws InputError otherwise).
ParamCounts count_params(const ModelConfig& cfg);
// One gated FFN's parameters (gate and up C -> F, down F -> C, F = ffn_hidden(true)), with or
// without its biases: the MoE row's experts.
int64_t gated_ffn_params(const ModelConfig& cfg, bool bias);

// Whether layer i attends through model.sliding_window: every layer with a window but every
// window_global_every-th (i % k == k − 1), which sees the whole prefix (Gemma 2: k = 2).
bool layer_windowed(const ModelConfig& cfg, int64_t layer);

// What incremental decoding keeps per token. MHA/GQA/MQA cache K and V: 2·Hk·D numbers per
// token per layer; MLA caches the latent c (Rkv) and the shared RoPE key part (R). A layer with a
// sliding window W needs only its last W tokens (a rolling cache: Mistral's 8× less at 32K
// tokens with W = 4096).
struct KVCacheSize {
  int64_t per_token_per_layer = 0;  // numbers
  int64_t n_layers = 0;
  int64_t window = 0;           // model.sliding_window (0: none)
  int64_t windowed_layers = 0;  // layers that keep at most `window` tokens

  int64_t per_token() const { return size_mul(per_token_per_layer, n_layers); }
  int64_t bytes_per_token(int dtype_bytes) const { return size_mul(per_token(), dtype_bytes); }
  // Token slots over all layers for a context of `context` tokens.
  int64_t layer_tokens(int64_t context) const {
    const int64_t windowed = window > 0 ? std::min(context, window) : context;
    return size_add(size_mul(n_layers - windowed_layers, context), size_mul(windowed_layers, windowed));
  }
  int64_t bytes(int dtype_bytes, int64_t context, int64_t batch) const {
    return size_mul(size_mul(size_mul(per_token_per_layer, layer_tokens(context)), dtype_bytes), batch);
  }
};

KVCacheSize kv_cache_size(const ModelConfig& cfg);

inline constexpr int kBf16Bytes = 2;  // bytes per number of a bf16 (or fp16) cache


// Forward FLOPs (multiply and add counted as 2) of one sequence of T tokens, batch 1.
//   matmul:    2·T·(weights of every linear layer, output head included even when tied).
//              Embedding lookups, biases, norms, activations, softmax and position
//              encodings are O(T·C) element-wise work and are not counted.
//   attention: per layer and head, Q·Kᵀ (2·D_qk per (query, key) pair) and A·V (2·D_v per
//              pair), D_qk = D (MLA: D + R), D_v = D. MLA is counted in its naive (training)
//              form: keys and values recovered from the latent, that cost is in `matmul`.
//              The number of (query, key) pairs is
//                causal: T·(T+1)/2, the pairs a causal model needs (what a causal kernel
//                        computes);
//                full:   T², what a dense masked matmul computes (lmx's LibTorch forward).
// A training step (forward + backward) is about 3× the forward.
struct ForwardFlops {
  int64_t seq_len = 0;
  int64_t matmul = 0;
  int64_t attention_causal = 0;
  int64_t attention_full = 0;

  int64_t total(bool causal = true) const { return size_add(matmul, causal ? attention_causal : attention_full); }
  double per_token(bool causal = true) const {
    return seq_len > 0 ? static_cast<double>(total(causal)) / static_cast<double>(seq_len) : 0.0;
  }
};

// Requires cfg.vocab_size > 0 and seq_len >= 1 (throws InputError otherwise).
ForwardFlops forward_flops(const ModelConfig& cfg, int64_t seq_len);

// Weights of the linear layers (matrices only, output head included even when tied) one token
// multiplies (an MoE FFN: its router, top-k and shared experts): the N of the "2·N FLOPs per
// token" rule.
int64_t matmul_params(const ModelConfig& cfg);

// "MHA", "GQA", "MQA" (by n_kv_heads) or "MLA".
std::string attention_kind(const ModelConfig& m);

// Parameter count of a config whose vocab_size may be auto (0): `vocab` fills it in.
int64_t params_of(ModelConfig m, int vocab);
// The FFN width (1 .. 16·d_model) that brings the parameter count closest to `target`, the
// other fields fixed: how ablation steps and sweep points are parameter-matched.
int match_d_ff(ModelConfig m, int vocab, int64_t target);

}  // namespace lmx
