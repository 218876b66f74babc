#include "model/lm.h"

#include <fmt/format.h>

#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "config/registry.h"
#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "model/attention/attention.h"
#include "model/block.h"
#include "model/embedding.h"
#include "model/ffn.h"
#include "model/init.h"
#include "model/linear.h"
#include "model/norm.h"
#include "model/position/position.h"
#include "model/registry.h"
#include "model/sizes.h"
#include "util/error.h"

namespace lmx {

// (Named, not anonymous: ModernLMImpl::Parts holds them, and in a unity build a class with a
// member of an anonymous-namespace type outside the main file is a -Wsubobject-linkage warning.)
namespace lm_parts {

// The HF "model." prefix: embeddings, layers and final norm live in this submodule.
class DecoderImpl : public torch::nn::Module {};

// The output head; with tied embeddings it holds only the bias and reads the embedding matrix.
class LmHeadImpl : public torch::nn::Module {
 public:
  // tied_weight undefined: a (vocab, d_model) matrix of its own.
  LmHeadImpl(int64_t vocab, int64_t d_model, bool with_bias, torch::Tensor tied_weight) {
    weight = tied_weight.defined() ? tied_weight : register_parameter("weight", torch::zeros({vocab, d_model}));
    if (with_bias) bias = register_parameter("bias", torch::zeros({vocab}));
  }
  torch::Tensor forward(const torch::Tensor& x) { return linear_2d(x, weight, bias); }  // (B, T, V)

  torch::Tensor weight, bias;
};

}  // namespace lm_parts
using lm_parts::DecoderImpl;
using lm_parts::LmHeadImpl;

int64_t KVCache::numel() const {
  int64_t n = 0;
  for (const auto& layer : layers)
    for (const auto& t : layer)
      if (t.defined()) n += t.numel();
  return n;
}

struct ModernLMImpl::Parts {
  std::shared_ptr<DecoderImpl> model;
  torch::nn::Embedding embed_tokens{nullptr};
  std::shared_ptr<Position> position;  // model-level: embed() for absolute schemes
  std::vector<std::shared_ptr<BlockImpl>> layers;
  std::shared_ptr<Norm> norm;  // pre-norm only
  std::shared_ptr<LmHeadImpl> lm_head;
};

ModernLMImpl::ModernLMImpl(const ModelConfig& cfg) : cfg_(cfg), parts_(std::make_shared<Parts>()) {
  if (cfg.vocab_size <= 0)
    throw InputError(fmt::format("model.vocab_size is {}; it must be resolved before building the model", cfg.vocab_size),
                     "set model.vocab_size, or let the dataset fill it in");
  auto& p = *parts_;
  p.model = register_module("model", std::make_shared<DecoderImpl>());
  p.embed_tokens = p.model->register_module("embed_tokens", torch::nn::Embedding(cfg.vocab_size, cfg.d_model));
  p.position = make_position(cfg);
  if (!p.position->per_layer() && !p.position->parameters().empty())
    p.model->register_module(p.position->module_name(), p.position);
  auto layers = p.model->register_module("layers", torch::nn::ModuleList());
  for (int i = 0; i < cfg.n_layers; ++i) {
    // A per-layer scheme (T5 bias) gets a table per layer, or when shared by the layers (T5 with
    // t5_shared) one table that layer 0 owns (T5: "model.layers.0.self_attn.relative_attention_bias")
    // and every layer reads.
    auto layer_position = p.position->per_layer() && !p.position->shared_by_layers() ? make_position(cfg) : p.position;
    // Built in this order (each construction draws from the RNG): attention, FFN, the two norms.
    BlockParts parts;
    parts.self_attn = make_attention(cfg, layer_position);
    if (layer_windowed(cfg, i)) parts.self_attn->set_window(cfg.sliding_window);
    parts.mlp = make_ffn(cfg);
    parts.input_layernorm = make_norm(cfg, cfg.d_model);
    parts.post_attention_layernorm = make_norm(cfg, cfg.d_model);
    if (block_options(cfg).sandwich)
      parts.attn_output_layernorm = make_norm(cfg, cfg.d_model), parts.mlp_output_layernorm = make_norm(cfg, cfg.d_model);
    auto block = std::make_shared<BlockImpl>(block_options(cfg), std::move(parts));
    layers->push_back(block);
    p.layers.push_back(block);
  }
  if (block_options(cfg).pre_norm) p.norm = p.model->register_module("norm", make_norm(cfg, cfg.d_model));
  p.lm_head = register_module("lm_head", std::make_shared<LmHeadImpl>(cfg.vocab_size, cfg.d_model, cfg.bias,
                                                                         cfg.tie_embeddings ? p.embed_tokens->weight : torch::Tensor()));
  init_weights(*this, cfg);
}

torch::Tensor ModernLMImpl::forward(const torch::Tensor& tokens, KVCache* cache) { return run(tokens, cache, nullptr); }

torch::Tensor ModernLMImpl::forward_packed(const torch::Tensor& tokens, const std::vector<int64_t>& lengths) {
  const int64_t n = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  if (tokens.dim() != 2 || tokens.size(0) != 1 || lengths.empty() || n != tokens.size(1) ||
      *std::min_element(lengths.begin(), lengths.end()) <= 0)
    throw std::logic_error("forward_packed: tokens must be (1, N) with positive lengths summing to N");
  if (!packable()) throw std::logic_error("forward_packed: this model cannot take a padding-free batch now");
  return run(tokens, nullptr, &lengths);
}

bool ModernLMImpl::packable() const {
  const auto probe = torch::empty({0}, parts_->embed_tokens->weight.options());
  for (const auto& layer : parts_->layers)
    if (!layer->self_attn->takes_packed(probe)) return false;
  return true;
}

torch::Tensor ModernLMImpl::run(const torch::Tensor& tokens, KVCache* cache, const std::vector<int64_t>* lengths) {
  auto& p = *parts_;
  if (tokens.dim() != 2 || tokens.scalar_type() != torch::kInt64)
    throw InputError(fmt::format("ModernLM expects tokens (B, T) int64, got {} dims of {}", tokens.dim(),
                                 c10::toString(tokens.scalar_type())));
  const int64_t start = cache ? cache->length : 0;
  if (cache && cache->layers.size() != p.layers.size()) cache->layers.resize(p.layers.size());
  auto x = embed_tokens(p.embed_tokens->weight, tokens);  // (B, T, C)
  if (const double s = embedding_scale()) x = x * s;
  if (lengths) {  // each sequence's tokens at positions [0, length)
    std::vector<int64_t> pos;
    pos.reserve(tokens.size(1));
    for (int64_t len : *lengths)
      for (int64_t i = 0; i < len; ++i) pos.push_back(i);
    x = p.position->embed_at(x, torch::tensor(pos, torch::kInt64).to(tokens.device()));
  } else {
    x = p.position->embed(x, start);
  }
  if (keep_stream) first_stream = x.detach();
  torch::Tensor branch;  // the last block's residual branch, added by the next norm
  for (size_t i = 0; i < p.layers.size(); ++i)
    std::tie(x, branch) =
        p.layers[i]->forward_residual(x, branch, start, cache ? &cache->layers[i] : nullptr, lengths);
  // Pre-norm: the final norm adds the last branch; post-norm blocks leave none.
  auto [stream, out] = p.norm ? p.norm->add_forward(x, branch) : std::pair{x, x};
  if (keep_stream) last_stream = stream.detach();
  x = out;
  if (cache) cache->length += tokens.size(1);
  return soft_cap(p.lm_head->forward(x));  // (B, T, V)
}

namespace {

// c·tanh(z/c) on the element-wise kernels (ActKind::SoftCap, float32 on the CPU with the fused
// kernels on): one pass forward, one pass backward recomputing the tanh from z (kept: the input,
// which the head's GEMM wrote anyway). In LibTorch's div, tanh and mul (three passes forward,
// and (1 − t²)·dy over a kept t backward) the step cost of model.logit_softcap was ~0.8 ms of
// the Llama preset's ~11.5 (lmx bench --breakdown). Every path that caps logits (training,
// evaluation, generation, the decoding engine) calls soft_cap, so they all take the same values.
// y[0, n) = c·tanh(z/c) (y may be z: in place), over the threads.
void cap_floats(const float* z, float* y, int64_t n, double c) {
  const kernels::ActOp op{kernels::ActKind::SoftCap, static_cast<float>(c)};
  const auto& k = kernels::ffn_kernels();
  kernels::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) { k.act_forward(op, z + b, e - b, y + b, nullptr); });
}

class SoftCapFn : public torch::autograd::Function<SoftCapFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& z, double c) {
    auto y = torch::empty_like(z);
    cap_floats(z.data_ptr<float>(), y.data_ptr<float>(), z.numel(), c);
    ctx->save_for_backward({z});
    ctx->saved_data["c"] = c;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto z = ctx->get_saved_variables()[0];
    const kernels::ActOp op{kernels::ActKind::SoftCap, static_cast<float>(ctx->saved_data["c"].toDouble())};
    const auto dy = grads[0].contiguous();
    auto dz = torch::empty_like(z);
    const auto& k = kernels::ffn_kernels();
    const float *pz = z.data_ptr<float>(), *pdy = dy.data_ptr<float>();
    float* pdz = dz.data_ptr<float>();
    kernels::parallel_for(z.numel(), 1 << 14, [&](int64_t b, int64_t e) {
      k.act_backward(op, pz + b, nullptr, pdy + b, e - b, pdz + b);
    });
    return {dz, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ModernLMImpl::soft_cap(torch::Tensor logits) const {
  const double c = cfg_.logit_softcap;
  if (!(c > 0)) return logits;
  // c·tanh(z/c) (Gemma 2's final_logit_softcapping)
  if (fused_kernels_take(logits)) {
    logits = logits.contiguous();
    if (logits.requires_grad()) return SoftCapFn::apply(logits, c);
    torch::NoGradGuard no_grad;  // in place: lmx generate, evaluation, the decoding engine
    cap_floats(logits.data_ptr<float>(), logits.data_ptr<float>(), logits.numel(), c);
    return logits;
  }
  // LibTorch's ops elsewhere (bf16, another device, the kernels off), as HF's Gemma 2 runs them
  if (logits.requires_grad()) return logits.div(c).tanh().mul(c);
  return logits.div_(c).tanh_().mul_(c);
}

std::shared_ptr<Attention> ModernLMImpl::attention(int64_t layer) const { return parts_->layers.at(layer)->self_attn; }
std::shared_ptr<Ffn> ModernLMImpl::ffn(int64_t layer) const { return parts_->layers.at(layer)->mlp; }
int64_t ModernLMImpl::n_layers() const { return static_cast<int64_t>(parts_->layers.size()); }
std::shared_ptr<BlockImpl> ModernLMImpl::block(int64_t layer) const { return parts_->layers.at(layer); }
std::shared_ptr<Position> ModernLMImpl::position() const { return parts_->position; }
std::shared_ptr<Norm> ModernLMImpl::final_norm() const { return parts_->norm; }
torch::Tensor ModernLMImpl::token_embeddings() const { return parts_->embed_tokens->weight; }
torch::Tensor ModernLMImpl::head_weight() const { return parts_->lm_head->weight; }
torch::Tensor ModernLMImpl::head_bias() const { return parts_->lm_head->bias; }
double ModernLMImpl::embedding_scale() const {
  return cfg_.embed_scale == EmbedScale::SqrtD ? std::sqrt(static_cast<double>(cfg_.d_model)) : 0.0;
}

}  // namespace lmx
