#include "infer/decoder.h"

#include <fmt/format.h>
#include "torch_api.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/gemm.h"
#include "model/attention/attention.h"
#include "model/block.h"
#include "model/ffn.h"
#include "model/norm.h"
#include "model/position/position.h"
#include "util/runtime.h"

namespace lmx::infer {

namespace {

// A float32 copy of t, contiguous, that no module shares (the snapshot).
torch::Tensor own(const torch::Tensor& t) { return t.detach().to(torch::kFloat32).contiguous().clone(); }
float* ptr(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

// Whether the engine runs this position scheme: it adds a table, rotates or does nothing (a
// score bias is not one of the engine's kernels).
bool known_position(const Position* p) { return p->effect() != PositionEffect::BiasesScores; }
bool known_norm(const Norm* n) { return n->row_kernel().has_value(); }
bool known_ffn(const Ffn* f) { return f->fused().has_value(); }

}  // namespace

// (Named, not anonymous: Decoder::Impl holds them; see lm.cpp's lm_parts.)
namespace compiled {

// A norm as the fused kernel takes it.
struct NormW {
  kernels::NormFn fn = nullptr;
  torch::Tensor w, b;  // b: LayerNorm's shift
  float eps = 0;

  explicit NormW(const std::shared_ptr<Norm>& n) {
    const Norm::RowKernel k = *n->row_kernel();
    fn = k.fn, w = own(k.weight), eps = static_cast<float>(k.eps);
    if (k.bias.defined()) b = own(k.bias);
  }
  // y = N(x + a) (a null: N(x)), h = x + a (where a is not null), one row of C; stats: 2 floats
  // (the row's mean and 1/σ or 1/rms, which only a backward would read).
  void operator()(const float* x, const float* a, float* h, float* y, float* stats, int64_t C) const {
    kernels::NormArgs args{x, a, ptr(w), ptr(b), h, y, b.defined() ? stats : nullptr, stats + 1, C, eps};
    fn(args, 0, 1);
  }
};

// One block, compiled.
struct LayerW {
  NormW in, post;  // input_layernorm, post_attention_layernorm
  std::optional<NormW> ao, mo;  // sandwich's attn_output_layernorm, mlp_output_layernorm, or none
  std::optional<NormW> qn, kn;  // QK-norm (model.qk_norm), or none
  torch::Tensor wqkv, bqkv, wo, bo;  // q|k|v stacked ((H + 2Hk)·D, C), o (C, H·D)
  bool rope = false;
  // The cache: keys after RoPE transposed, (Hk, D, kt_ld) (the decode kernel reads them so, and
  // a token writes one column); values (Hk, rows, D). A column (row) per position, kt_ld =
  // ceil8(max_len); or, for a sliding window W with W + 1 < max_len, a ring of R = W + 1 slots
  // kept twice (position p in slots p mod R and p mod R + R, kt_ld = 2R + 8), so that a token's
  // keys are always R consecutive columns in position order, the oldest outside its window: the
  // module path's layout (its cache keeps the last W keys, and the token adds its own), and so
  // its bits.
  torch::Tensor kt, v;
  int64_t kt_ld = 0, rows = 0;
  int64_t window = 0, ring = 0;  // model.sliding_window where this layer has one; ring: W + 1 or 0
  float softcap = 0;             // model.attn_softcap
  // The slots position p is written to (the second -1 without a ring).
  std::pair<int64_t, int64_t> slots(int64_t p) const {
    return ring ? std::pair{p % ring, p % ring + ring} : std::pair{p, int64_t{-1}};
  }
  bool gated = false;
  kernels::ActOp act;
  torch::Tensor w1, b1, w2, b2;  // gate|up stacked (2F, C) or up (F, C); down (C, F)
  int64_t F = 0;

  LayerW(const BlockImpl& block) : in(block.input_layernorm), post(block.post_attention_layernorm) {}
};

}  // namespace compiled
using compiled::LayerW;
using compiled::NormW;

namespace {

// A one-row GEMM runs on all --threads only when its weight holds at least this many floats
// (256 KiB, ~10 µs of weight reads at ~25 GB/s); a smaller one on the calling thread, where
// starting and joining a parallel region (a few µs) would cost more than the split saves.
constexpr int64_t kSplitWeightFloats = int64_t{1} << 16;

// y (N) = x (K)·wᵀ + b for a weight (N, K).
void linear(const float* x, const torch::Tensor& w, const torch::Tensor& b, float* y) {
  std::optional<runtime::ThreadShare> calling_thread;
  if (w.numel() < kSplitWeightFloats) calling_thread.emplace(1);
  gemm::linear_rows(x, ptr(w), ptr(b), y, 1, w.size(0), w.size(1));
}

}  // namespace

struct Decoder::Impl {
  ModernLM model{nullptr};
  int64_t C, H, Hk, D, V, T;  // T: max_len
  int64_t kt_ld;              // the layers' longest transposed-key row (the kernel's scratch)
  bool pre_norm;
  float embed_scale;  // 0: none
  bool softcap = false;  // model.logit_softcap > 0: the module's soft_cap on the logits
  torch::Tensor embed, positions, head_w, head_b;  // positions: (T, C) added, or undefined
  torch::Tensor cos, sin;                          // RoPE (T, D/2), or undefined
  bool interleaved = false;
  std::unique_ptr<NormW> final_norm;
  std::vector<LayerW> layers;
  int64_t length = 0;

  // Per-token buffers.
  std::vector<float> x, s, a, n, h, qkv, q, krot, o, hidden, act, logits, stats;
  std::vector<std::vector<float>> scratch;  // one per KV head, for the attention kernel

  void embed_token(int64_t token, int64_t pos, float* out) const;
  void rotate(const float* in, int64_t pos, float* out) const;
  void attention(LayerW& L, const float* in, int64_t pos, float* out);
  void ffn(const LayerW& L, const float* in, float* out);
  const float* run(int64_t token);
};

std::string Decoder::unsupported(const ModernLM& model) {
  const auto w = model->token_embeddings();
  if (!w.device().is_cpu() || w.scalar_type() != torch::kFloat32) return "the weights are not float32 on the CPU";
  if (gemm::active() != gemm::Backend::onednn)
    return "the linear layers run LibTorch's GEMMs (LMX_GEMM=torch, or a build without oneDNN)";
  if (!fused_kernels_take(w)) return "the fused float32 kernels are off (LMX_FUSED_ATTENTION=0) or autocast is on";
  if (gemm::bf16_on()) return "bf16 GEMMs are on";
  const auto& cfg = model->config();
  if (!known_position(model->position().get()))
    return fmt::format("position '{}' is not one the engine runs (none, sinusoidal, learned, rope)", cfg.position);
  if (model->final_norm() && !known_norm(model->final_norm().get()))
    return fmt::format("norm '{}' is not one the engine runs (layernorm, rmsnorm)", cfg.norm);
  for (int64_t i = 0; i < model->n_layers(); ++i) {
    const auto block = model->block(i);
    const auto* mha = dynamic_cast<const MultiHeadAttentionImpl*>(block->self_attn.get());
    if (!mha) return fmt::format("layer {}'s attention is '{}'; the engine runs MHA, GQA and MQA", i, cfg.attention);
    if (!mha->takes_packed(w) || !known_position(mha->position().get()))
      return fmt::format("layer {}'s attention has no fused kernel here (position '{}', head dim {})", i, cfg.position,
                         cfg.dim_head());
    if (!known_norm(block->input_layernorm.get()) || !known_norm(block->post_attention_layernorm.get()) ||
        (mha->q_norm && (!known_norm(mha->q_norm.get()) || !known_norm(mha->k_norm.get()))) ||
        (block->sandwich() &&
         (!known_norm(block->attn_output_layernorm.get()) || !known_norm(block->mlp_output_layernorm.get()))))
      return fmt::format("norm '{}' is not one the engine runs (layernorm, rmsnorm)", cfg.norm);
    if (!known_ffn(block->mlp.get())) return fmt::format("FFN '{}' is not one the engine runs", cfg.ffn);
  }
  return "";
}

Decoder::Decoder(const ModernLM& model, int64_t max_len) : impl_(std::make_unique<Impl>()) {
  if (const auto why = unsupported(model); !why.empty()) throw std::logic_error("infer::Decoder: " + why);
  if (max_len < 1) throw std::logic_error("infer::Decoder: max_len must be positive");
  torch::NoGradGuard no_grad;
  auto& m = *impl_;
  m.model = model;
  const auto& cfg = model->config();
  m.C = cfg.d_model, m.H = cfg.n_heads, m.Hk = cfg.kv_heads(), m.D = cfg.dim_head(), m.T = max_len;
  m.kt_ld = 0;
  m.embed = own(model->token_embeddings());
  m.V = m.embed.size(0);
  m.head_w = own(model->head_weight());
  if (model->head_bias().defined()) m.head_b = own(model->head_bias());
  m.embed_scale = static_cast<float>(model->embedding_scale());
  m.softcap = cfg.logit_softcap > 0;
  const auto position = model->position();
  if (Rotary* rope = position->rotary()) {
    auto [cos, sin] = rope->tables(max_len, torch::kCPU);
    m.cos = own(cos), m.sin = own(sin), m.interleaved = rope->interleaved();
  } else if (position->effect() == PositionEffect::AddsTable) {  // 0 + table = table
    m.positions = own(position->embed(torch::zeros({1, max_len, m.C}), 0).squeeze(0));
  }
  if (model->final_norm()) m.final_norm = std::make_unique<NormW>(model->final_norm());
  m.pre_norm = model->block(0)->pre_norm();

  const auto cache_opts = torch::TensorOptions().dtype(torch::kFloat32);
  int64_t F_max = 0;
  for (int64_t i = 0; i < model->n_layers(); ++i) {
    const auto block = model->block(i);
    LayerW L(*block);
    const auto& attn = dynamic_cast<const MultiHeadAttentionImpl&>(*block->self_attn);
    L.wqkv = own(torch::cat({attn.q_proj->weight, attn.k_proj->weight, attn.v_proj->weight}, 0));
    if (attn.q_proj->bias.defined())
      L.bqkv = own(torch::cat({attn.q_proj->bias, attn.k_proj->bias, attn.v_proj->bias}, 0));
    if (attn.q_norm) L.qn.emplace(attn.q_norm), L.kn.emplace(attn.k_norm);
    if (block->sandwich()) L.ao.emplace(block->attn_output_layernorm), L.mo.emplace(block->mlp_output_layernorm);
    L.wo = own(attn.o_proj->weight);
    if (attn.o_proj->bias.defined()) L.bo = own(attn.o_proj->bias);
    L.rope = m.cos.defined();
    L.window = attn.window(), L.softcap = static_cast<float>(attn.softcap());
    L.ring = L.window > 0 && L.window + 1 < max_len ? L.window + 1 : 0;
    L.kt_ld = L.ring ? 2 * L.ring + 8 : (max_len + 7) / 8 * 8;
    L.rows = L.ring ? 2 * L.ring : max_len;
    m.kt_ld = std::max(m.kt_ld, L.kt_ld);
    L.kt = torch::zeros({m.Hk, m.D, L.kt_ld}, cache_opts);
    L.v = torch::zeros({m.Hk, L.rows, m.D}, cache_opts);
    const Ffn::Fused f = *block->mlp->fused();
    L.gated = f.gate.defined(), L.act = f.act;
    L.w1 = own(L.gated ? torch::cat({f.gate, f.up}, 0) : f.up), L.w2 = own(f.down);  // gate|up stacked
    if (f.up_b.defined()) L.b1 = own(L.gated ? torch::cat({f.gate_b, f.up_b}, 0) : f.up_b);
    if (f.down_b.defined()) L.b2 = own(f.down_b);
    L.F = f.down.size(1);
    F_max = std::max(F_max, L.F);
    m.layers.push_back(std::move(L));
  }

  for (auto* b : {&m.x, &m.s, &m.a, &m.n, &m.h}) b->assign(m.C, 0.0f);
  m.qkv.assign((m.H + 2 * m.Hk) * m.D, 0.0f);
  m.q.assign(m.H * m.D, 0.0f);
  m.o.assign(m.H * m.D, 0.0f);
  m.hidden.assign(2 * F_max, 0.0f);
  m.act.assign(F_max, 0.0f);
  m.logits.assign(m.V, 0.0f);
  m.stats.assign(2, 0.0f);
  m.krot.assign(m.D, 0.0f);
  m.scratch.assign(m.Hk, std::vector<float>(kernels::decode_scratch(m.D, m.kt_ld) + kernels::kScratchAlign));
}

Decoder::~Decoder() = default;

int64_t Decoder::length() const { return impl_->length; }
int64_t Decoder::max_len() const { return impl_->T; }
int64_t Decoder::vocab() const { return impl_->V; }

const float* Decoder::prefill(const std::vector<int64_t>& tokens) {
  auto& m = *impl_;
  const auto n = static_cast<int64_t>(tokens.size());
  if (n < 1 || n > m.T) throw std::logic_error(fmt::format("infer::Decoder::prefill: {} tokens for a context of {}", n, m.T));
  torch::NoGradGuard no_grad;
  KVCache cache;
  auto logits = m.model->forward(torch::tensor(tokens, torch::kInt64).unsqueeze(0), &cache);  // (1, n, V)
  for (size_t i = 0; i < m.layers.size(); ++i) {  // [k, v] (1, Hk, c, D) each: positions [n − c, n)
    auto& L = m.layers[i];
    const auto k = cache.layers[i].at(0).squeeze(0), v = cache.layers[i].at(1).squeeze(0);
    const int64_t c = k.size(1), first = n - c;  // c < n where a window trimmed the module's cache
    L.kt.zero_();  // columns past n as a fresh cache's, after an earlier sequence
    if (!L.ring) {
      L.kt.narrow(2, first, c).copy_(k.transpose(1, 2));
      L.v.narrow(1, first, c).copy_(v);
      continue;
    }
    for (int64_t t = 0; t < c; ++t)
      for (int64_t slot : {L.slots(first + t).first, L.slots(first + t).second}) {
        L.kt.select(2, slot).copy_(k.select(1, t));
        L.v.select(1, slot).copy_(v.select(1, t));
      }
  }
  m.length = n;
  auto last = logits.select(1, n - 1).squeeze(0).contiguous();
  std::memcpy(m.logits.data(), last.data_ptr<float>(), m.V * sizeof(float));
  return m.logits.data();
}

const float* Decoder::step(int64_t token) {
  auto& m = *impl_;
  if (m.length >= m.T) throw std::logic_error(fmt::format("infer::Decoder::step: the context of {} is full", m.T));
  if (token < 0 || token >= m.V) throw std::logic_error(fmt::format("infer::Decoder::step: token {} outside the vocabulary", token));
  return m.run(token);
}

// The token's embedding (times the scale), plus its position's row where a table adds one: the
// module path's ops, one float operation each, in its order.
void Decoder::Impl::embed_token(int64_t token, int64_t pos, float* out) const {
  const float* e = ptr(embed) + token * C;
  const float* p = positions.defined() ? ptr(positions) + pos * C : nullptr;
  for (int64_t c = 0; c < C; ++c) {
    float v = e[c];
    if (embed_scale != 0) v = v * embed_scale;
    if (p) v = v + p[c];
    out[c] = v;
  }
}

// RoPE of one D-wide head at pos, as RoPEImpl::rotate: pairs (i, i + D/2), or (2i, 2i + 1)
// interleaved; each product rounded before the sum, as LibTorch's separate ops.
void Decoder::Impl::rotate(const float* in, int64_t pos, float* out) const {
  const int64_t half = D / 2;
  const float* c = ptr(cos) + pos * half;
  const float* s = ptr(sin) + pos * half;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
    const float x1 = in[i1], x2 = in[i2];
    const float a1 = x1 * c[i], b1 = x2 * s[i], a2 = x2 * c[i], b2 = x1 * s[i];
    out[i1] = a1 - b1;
    out[i2] = a2 + b2;
  }
}

// The attention of one token at pos: q, k, v from one GEMM; keys (after RoPE) and values into
// the cache; the fused kernel over the pos + 1 cached rows of each KV head; the output GEMM.
void Decoder::Impl::attention(LayerW& L, const float* in, int64_t pos, float* out) {
  linear(in, L.wqkv, L.bqkv, qkv.data());
  if (L.qn) {  // QK-norm: each query head, then each key head, in place (the module's h = x)
    for (int64_t r = 0; r < H + Hk; ++r) {
      float* row = qkv.data() + r * D;
      (r < H ? *L.qn : *L.kn)(row, nullptr, row, row, stats.data(), D);
    }
  }
  const float* qk = qkv.data();
  float* kt = ptr(L.kt);
  float* vc = ptr(L.v);
  float* key = krot.data();
  const int64_t ld = L.kt_ld;
  const auto [slot, mirror] = L.slots(pos);
  for (int64_t g = 0; g < Hk; ++g) {
    const float* kh = qk + (H + g) * D;
    if (L.rope) rotate(kh, pos, key), kh = key;
    for (int64_t at : {slot, mirror}) {
      if (at < 0) continue;
      for (int64_t d = 0; d < D; ++d) kt[(g * D + d) * ld + at] = kh[d];
      std::memcpy(vc + (g * L.rows + at) * D, qk + (H + Hk + g) * D, D * sizeof(float));
    }
  }
  const float* qr = qk;
  if (L.rope) {
    for (int64_t h = 0; h < H; ++h) rotate(qk + h * D, pos, q.data() + h * D);
    qr = q.data();
  }
  // The keys the kernel reads: [0, pos], or with a ring the last R from column first on (the
  // window masks the oldest, as on the module path)
  const int64_t seen = L.ring ? std::min(pos + 1, L.ring) : pos + 1;
  const int64_t first = L.ring ? (pos + 1 - seen) % L.ring : 0;
  kernels::AttnShape shape;
  shape.Tq = 1, shape.Tk = seen, shape.D = D, shape.q_start = seen - 1, shape.group = H / Hk;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  shape.window = L.window, shape.softcap = L.softcap;
  const auto kernel = kernels::decode_kernel();
  // One KV head after another on this thread: a head's share of one token is a few
  // microseconds, about what starting a parallel region costs.
  for (int64_t g = 0; g < Hk; ++g) {
    const int64_t h0 = g * shape.group;
    kernels::ForwardArgs args{};
    args.q = qr + h0 * D, args.q_st = H * D, args.q_sh = D;
    args.v = vc + (g * L.rows + first) * D, args.v_st = D;
    args.o = o.data() + h0 * D, args.o_st = H * D, args.o_sh = D;
    kernel(args, kt + g * D * ld + first, ld, shape, kernels::align_scratch(scratch[g].data()));
  }
  linear(o.data(), L.wo, L.bo, out);
}

void Decoder::Impl::ffn(const LayerW& L, const float* in, float* out) {
  const auto& k = kernels::ffn_kernels();
  linear(in, L.w1, L.b1, hidden.data());
  if (L.gated)
    k.glu_forward(L.act, hidden.data(), 1, L.F, act.data(), nullptr);
  else
    k.act_forward(L.act, hidden.data(), L.F, act.data(), nullptr);
  linear(act.data(), L.w2, L.b2, out);
}

// One token through the blocks, as ModernLMImpl::run and BlockImpl::forward_residual order the
// adds: pre-norm  s, n = N1(x + branch); h, n2 = N2(s + attn(n)); branch = ffn(n2); x = h
//                 (the first block has no branch; the final norm adds the last one)
//           post  y = N1(x + attn(x)); x = N2(y + ffn(y)).
const float* Decoder::Impl::run(int64_t token) {
  const int64_t pos = length;
  float *stream = x.data(), *spare = s.data(), *as = a.data(), *ns = n.data(), *hs = h.data(), *st = stats.data();
  embed_token(token, pos, stream);
  bool branch = false;  // as holds the last FFN's output, not yet added (pre-norm)
  for (auto& L : layers) {
    if (pre_norm) {
      if (branch) {
        L.in(stream, as, spare, ns, st, C);
        std::swap(stream, spare);
      } else {
        L.in(stream, nullptr, nullptr, ns, st, C);
      }
      attention(L, ns, pos, hs);
      if (L.ao) (*L.ao)(hs, nullptr, nullptr, as, st, C), std::swap(hs, as);  // sandwich: N'(attention)
      L.post(stream, hs, spare, ns, st, C);
      std::swap(stream, spare);
      ffn(L, ns, as);
      if (L.mo) (*L.mo)(as, nullptr, nullptr, hs, st, C), std::swap(hs, as);  // sandwich: N'(FFN)
      branch = true;
    } else {
      attention(L, stream, pos, as);
      L.in(stream, as, hs, ns, st, C);  // y = N1(x + attn(x))
      ffn(L, ns, as);
      L.post(ns, as, hs, stream, st, C);  // x = N2(y + ffn(y))
    }
  }
  const float* out = stream;
  if (final_norm) {
    (*final_norm)(stream, branch ? as : nullptr, spare, ns, st, C);
    out = ns;
  }
  linear(out, head_w, head_b, logits.data());
  if (softcap) model->soft_cap(torch::from_blob(logits.data(), {V}));  // the module's ops, in place
  ++length;
  return logits.data();
}

int64_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (std::isnan(logits[best])) break;
    if (std::isnan(logits[i]) || logits[i] > logits[best]) best = i;
  }
  return best;
}

}  // namespace lmx::infer
