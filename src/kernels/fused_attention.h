// Fused causal attention for small head dims (MHA / GQA / MQA without a score bias, with or
// without a sliding window and a soft-cap on the scores): one
// LibTorch autograd Function whose forward and backward run the hand-vectorized kernels of
// kernels/cpu_kernels.h over (sequence, KV head) pairs in parallel. Compared with the
// plain path (matmul, mask, softmax, matmul; repeat_interleave for GQA; RoPE as separate
// ops) it makes no (B, H, T, D) copies, never materializes the mask, applies RoPE inside the
// kernel, and keeps only the probabilities for the backward.
// tests/test_fused_attention.cpp checks outputs and gradients against the plain path.
#pragma once
#include <torch/types.h>

#include <vector>

namespace lmx {

// Whether the kernels handle this case: float32 on the CPU, head dim a multiple of 8 up to
// 256, and fused attention enabled (set_fused_attention; LMX_FUSED_ATTENTION=0 turns it off).
// The same switch turns the other fused float32 kernels on and off: LayerNorm / RMSNorm with
// the residual add (model/norm.cpp), the FFN activations but ReLU (model/ffn.cpp), cross-entropy
// (model/loss.h).
bool fused_attention_supported(const torch::Tensor& x, int64_t head_dim);
void set_fused_attention(bool enabled);
bool fused_attention_enabled();
// Sets the switch for its lifetime, then restores it (tests, A/B runs).
struct FusedKernelsScope {
  bool before = fused_attention_enabled();
  explicit FusedKernelsScope(bool on) { set_fused_attention(on); }
  ~FusedKernelsScope() { set_fused_attention(before); }
  FusedKernelsScope(const FusedKernelsScope&) = delete;
  FusedKernelsScope& operator=(const FusedKernelsScope&) = delete;
};
// Whether the fused kernels take x: enabled, float32, on the CPU.
bool fused_kernels_take(const torch::Tensor& x);

// What limits the scores beyond the causal mask: a sliding window (> 0: the query at p sees the
// keys (p − window, p]; model.sliding_window) and a soft-cap (> 0: scaled scores c·tanh(s/c);
// model.attn_softcap). Zeros: neither.
struct AttnLimits {
  int64_t window = 0;
  double softcap = 0;
};

// qkv (B, T, H + 2·Hk, D): the fused projection's output, queries then keys then values, for
// tokens at positions [0, T). cos, sin: RoPE tables (>= T rows, D/2 columns; the rotation
// pairs (i, i + D/2), or (2i, 2i+1) when interleaved), or undefined tensors (no rotation).
// -> (B, T, H, D) = softmax(causal(RoPE(q)·RoPE(k)ᵀ·scale))·v; differentiable in qkv.
// lengths (padding-free batches, train.padding_free): qkv is (1, T, ...) holding sequences of
// these lengths end to end (summing to T); each attends only within itself, its tokens at
// positions [0, length). Empty: B sequences of T. limits: the window and soft-cap.
torch::Tensor fused_causal_attention(const torch::Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, double scale,
                                     const torch::Tensor& cos, const torch::Tensor& sin, bool interleaved,
                                     const std::vector<int64_t>& lengths = {}, const AttnLimits& limits = {});

// Inference only (no autograd): q (B, H, Tq, D) at positions [q_start, q_start + Tq), k and v
// (B, Hk, Tk, D), already rotated (a KV cache) for the keys at positions [0, Tk); any strides
// with a contiguous last dim. -> (B, Tq, H, D).
torch::Tensor fused_attention_inference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                        double scale, int64_t q_start, const AttnLimits& limits = {});

}  // namespace lmx
