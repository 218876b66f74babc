// Raw-pointer kernels of the fused causal attention (kernels/fused_attention.h), free of
// LibTorch so they can be compiled once per instruction set (cpu_kernels_avx512.cpp,
// cpu_kernels_avx2.cpp with -mavx2 -mfma, cpu_kernels_generic.cpp for any x86-64)
// and picked at run time.
//
// One call handles one sequence b and one KV head g with its `group` query heads (GQA: H/Hk).
// Rows are strided: query row i of group head r is q + r*q_sh + i*q_st, key row j is
// k + j*k_st, value row j is v + j*v_st; the D numbers of a row are contiguous. Queries sit at
// positions [q_start, q_start + Tq), keys at [0, Tk); query i sees keys j <= q_start + i, and
// with a sliding window w > 0 only those with j > q_start + i − w (model.sliding_window).
// RoPE (optional): cos/sin tables (positions × D/2) rotate queries and keys inside the kernel.
// Soft-cap (optional, model.attn_softcap c > 0): the scaled scores s become c·tanh(s/c) before
// the softmax (Gemma 2), and the backward multiplies their gradient by 1 − tanh²(s/c).
#pragma once
#include <cstdint>

namespace lmx::kernels {

struct AttnShape {
  int64_t Tq = 0, Tk = 0, D = 0, q_start = 0, group = 1;
  float scale = 1.0f;
  const float* cos = nullptr;  // (positions, D/2) or null: no rotation
  const float* sin = nullptr;
  bool interleaved = false;  // RoPE pair layout: (2i, 2i+1) instead of (i, i + D/2)
  int64_t window = 0;        // > 0: keys (p − window, p] only for the query at p
  float softcap = 0;         // > 0: scores c·tanh(s/c)

  int64_t tq_pad() const { return (Tq + 3) / 4 * 4; }
  int64_t tk_pad() const { return (Tk + 7) / 8 * 8; }
  // Query i sees the keys [first_visible(i), visible(i)).
  int64_t visible(int64_t i) const { return q_start + i + 1 < Tk ? q_start + i + 1 : Tk; }
  int64_t first_visible(int64_t i) const {
    return window > 0 && q_start + i + 1 > window ? q_start + i + 1 - window : 0;
  }
};

// Floats of scratch one forward / backward call needs, at an address align_scratch gives: 64
// bytes, so that the lanes kernels' 16-float rows never split a cache line (a buffer of
// kScratchAlign floats more than the need always holds it).
int64_t forward_scratch(const AttnShape& s);
int64_t backward_scratch(const AttnShape& s);
constexpr int64_t kScratchAlign = 16;
inline float* align_scratch(float* p) {
  const auto at = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) / sizeof(float) % kScratchAlign);
  return p + (kScratchAlign - at) % kScratchAlign;
}
// Asks the cache for n floats from p on, one prefetch per 64-byte line (no arithmetic: the same
// bits). The attention's backward and the gated FFN kernels read rows their forward wrote long
// before.
inline void prefetch_floats(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 0, 3);
}
// What attention_lanes.h's kernels (head dimension 16) lay out in theirs: Tk rows of 16 for
// the keys and a block's scores (forward), or for the keys, dK, dV, P and dS (backward), and
// two (forward) or four (backward) 16 × 16 blocks.
inline int64_t lanes_scratch(int64_t Tk, bool backward) {
  return (backward ? 5 : 2) * Tk * 16 + (backward ? 4 : 2) * 16 * 16;
}

// o rows (strided like q: o + r*o_sh + i*o_st) = softmax(causal(q·kᵀ·scale))·v. lse: when not
// null, each query row's log-sum-exp of its scaled scores (group × Tq, head r at lse + r*Tq),
// from which the backward recomputes the probabilities (flash-attention style: the (T, T)
// probabilities of every head never go to memory).
struct ForwardArgs {
  const float *q, *k, *v;
  int64_t q_st, q_sh, k_st, v_st;
  float* o;
  int64_t o_st, o_sh;
  float* lse;
};
using ForwardFn = void (*)(const ForwardArgs&, const AttnShape&, float* scratch);

// Gradients: dq rows (strided like q), dk and dv rows (strided like k and v) are written
// (not accumulated). dout and o are strided like q (o_st, o_sh); lse as the forward wrote it.
struct BackwardArgs {
  const float *q, *k, *v, *o, *dout, *lse;
  int64_t q_st, q_sh, k_st, v_st, o_st, o_sh;
  float *dq, *dk, *dv;
  int64_t dq_st, dq_sh, dk_st, dv_st;
};
using BackwardFn = void (*)(const BackwardArgs&, const AttnShape&, float* scratch);

// FFN activations (ffn_impl.h; same kernel files, same dispatch). Plain: y = φ(x) over
// n floats, backward dx = dy·φ'(x). Gated, on rows of the packed gate|up projection gu (rows,
// 2F): out (rows, F) = φ(gate)·up; backward: dgu (rows, 2F) from dout. beta: swish's β.
// keep (optional, null: none): where act_keeps(kind) (GELU: Φ), the forward writes the part of
// φ the backward would recompute (n floats, or rows × F), and the backward reads it instead:
// the same bits either way.
// Custom: an activation of a program's own (an FFN row added outside lmx's sources, model/
// registry.h): φ(x) and φ'(x) as scalar functions of x and β, which the kernels apply a lane at
// a time (slower than the built-ins' vector arithmetic; the same values on every variant).
// SoftCap is not an FFN's: c·tanh(x/c) with c = beta, the output logits' model.logit_softcap
// (model/lm.cpp), on the same element-wise kernels.
enum class ActKind : int32_t { Relu, Gelu, GeluTanh, Silu, Swish, Relu2, Custom, SoftCap };
struct CustomAct {
  float (*phi)(float x, float beta);
  float (*grad)(float x, float beta);  // φ'(x)
};
struct ActOp {
  ActKind kind = ActKind::Relu;
  float beta = 1.0f;
  const CustomAct* custom = nullptr;  // Custom's functions (they outlive every op that names them)
};
inline bool act_keeps(ActKind kind) { return kind == ActKind::Gelu; }
struct FfnKernels {
  void (*act_forward)(const ActOp&, const float* x, int64_t n, float* y, float* keep);
  void (*act_backward)(const ActOp&, const float* x, const float* keep, const float* dy, int64_t n, float* dx);
  void (*glu_forward)(const ActOp&, const float* gu, int64_t rows, int64_t F, float* out, float* keep);
  void (*glu_backward)(const ActOp&, const float* gu, const float* keep, const float* dout, int64_t rows, int64_t F,
                       float* dgu);
};
const FfnKernels& ffn_kernels();

// LayerNorm / RMSNorm over rows of C floats (norm_impl.h): y (and h = x + a when the
// residual branch a is not null), each row's mean (LayerNorm) and 1/σ or 1/rms in rstd.
struct NormArgs {
  const float *x, *a, *w, *b;  // b: LayerNorm's shift
  float *h, *y, *mean, *rstd;
  int64_t C;
  float eps;
};
// Backward: dx (+ dh, the stream's own gradient, when not null) written; dw (db) accumulated.
// dx null: only dw (db) accumulated; dw null: only dx written (db ignored). Each part's values
// are those of the call that does both, so rows can be split for dx and summed for dw apart.
struct NormGradArgs {
  const float *h, *w, *mean, *rstd, *dy, *dh;
  float *dx, *dw, *db;
  int64_t C;
};
using NormFn = void (*)(const NormArgs&, int64_t begin, int64_t end);
using NormGradFn = void (*)(const NormGradArgs&, int64_t begin, int64_t end);
struct NormKernels {
  NormFn layernorm_forward, rmsnorm_forward;
  NormGradFn layernorm_backward, rmsnorm_backward;
};
const NormKernels& norm_kernels();

// Cross-entropy over rows of V logits (loss_impl.h): losses[r] and dlogits (the
// gradient of scale·Σ losses) for rows [begin, end); rows whose target is `ignore`: 0. lse (when
// not null): each counted row's log-sum-exp (the z-loss's), 0 for ignored rows.
struct CrossEntropyArgs {
  const float* logits;
  const int64_t* targets;
  int64_t V, ignore;
  float scale;
  float *losses, *dlogits;
  float* lse = nullptr;
};
using CrossEntropyFn = void (*)(const CrossEntropyArgs&, int64_t begin, int64_t end);
CrossEntropyFn cross_entropy_kernel();

// Decoding one query row (s.Tq = 1, q_start = Tk − 1 ≥ 1) over a cache that keeps its keys
// rotated and transposed: Kt (D × kt_ld, kt_ld ≥ ceil8(Tk)) holds key j in column j, zeros or
// any finite values in the columns [Tk, ceil8(Tk)); a.k is not read. The bits of ForwardFn on the
// same keys, without transposing them again at every token. Scratch: decode_scratch floats.
using DecodeFn = void (*)(const ForwardArgs&, const float* Kt, int64_t kt_ld, const AttnShape&, float* scratch);
inline int64_t decode_scratch(int64_t D, int64_t kt_ld) { return 4 * D + 4 * kt_ld; }

// The best variant for this CPU: AVX-512 (16-float register tiles in the attention kernels),
// AVX2+FMA, or SSE2; LMX_KERNEL_ISA=avx2 or sse2 caps the choice (for A/B timing). The AVX-512
// and AVX2 variants compute every value in the same order: the same bits.
ForwardFn forward_kernel();
DecodeFn decode_kernel();
BackwardFn backward_kernel();
const char* kernel_isa();  // "avx512", "avx2+fma" or "sse2": the variant in use
// The variant LMX_KERNEL_ISA=cap would pick on this CPU (null: none set); throws InputError
// for a value other than avx512, avx2 or sse2.
const char* kernel_isa_capped(const char* cap);

// Every variant's entry points, declared once per namespace. `reference` holds their twins as
// plain loops over doubles (cpu_kernels_reference.cpp), which the kernel tests check each
// variant against; nothing in lmx runs them.
#define LMX_KERNEL_VARIANT(ns)                                                                         \
  namespace ns {                                                                                       \
  void forward(const ForwardArgs&, const AttnShape&, float*);                                          \
  void decode(const ForwardArgs&, const float*, int64_t, const AttnShape&, float*);                     \
  void backward(const BackwardArgs&, const AttnShape&, float*);                                        \
  void act_forward(const ActOp&, const float*, int64_t, float*, float*);                               \
  void act_backward(const ActOp&, const float*, const float*, const float*, int64_t, float*);          \
  void glu_forward(const ActOp&, const float*, int64_t, int64_t, float*, float*);                      \
  void glu_backward(const ActOp&, const float*, const float*, const float*, int64_t, int64_t, float*); \
  void layernorm_forward(const NormArgs&, int64_t, int64_t);                                           \
  void rmsnorm_forward(const NormArgs&, int64_t, int64_t);                                             \
  void layernorm_backward(const NormGradArgs&, int64_t, int64_t);                                      \
  void rmsnorm_backward(const NormGradArgs&, int64_t, int64_t);                                        \
  void cross_entropy(const CrossEntropyArgs&, int64_t, int64_t);                                       \
  }
LMX_KERNEL_VARIANT(avx512)
LMX_KERNEL_VARIANT(avx2)
LMX_KERNEL_VARIANT(generic)
LMX_KERNEL_VARIANT(reference)
#undef LMX_KERNEL_VARIANT

}  // namespace lmx::kernels
