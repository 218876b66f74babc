#include "model/embedding.h"

#include <torch/autograd.h>

#include <fmt/format.h>

#include <algorithm>

#include "kernels/fused_attention.h"
#include "util/error.h"

namespace lmx {

namespace {

class EmbeddingFn : public torch::autograd::Function<EmbeddingFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& weight_in,
                               const torch::Tensor& tokens_in) {
    auto weight = weight_in.contiguous();
    auto tokens = tokens_in.contiguous();
    const int64_t V = weight.size(0), C = weight.size(1), N = tokens.numel();
    const int64_t* tp = tokens.data_ptr<int64_t>();
    for (int64_t i = 0; i < N; ++i)
      if (tp[i] < 0 || tp[i] >= V)
        throw InputError(fmt::format("embedding: token id {} is outside the model's vocabulary [0, {}); "
                                     "check model.vocab_size against the tokenizer",
                                     tp[i], V));
    auto sizes = tokens.sizes().vec();
    sizes.push_back(C);
    auto out = torch::empty(sizes, weight.options());
    const float* w = weight.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < N; ++i) std::copy_n(w + tp[i] * C, C, o + i * C);
    ctx->save_for_backward({tokens});
    ctx->saved_data["V"] = V;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto tokens = ctx->get_saved_variables()[0];
    const auto dout = grads[0].contiguous();
    const int64_t V = ctx->saved_data["V"].toInt(), C = dout.size(-1), N = tokens.numel();
    auto dw = torch::zeros({V, C}, dout.options());
    const int64_t* tp = tokens.data_ptr<int64_t>();
    const float* g = dout.data_ptr<float>();
    float* d = dw.data_ptr<float>();
    for (int64_t i = 0; i < N; ++i) {
      float* row = d + tp[i] * C;
      const float* gi = g + i * C;
      for (int64_t c = 0; c < C; ++c) row[c] += gi[c];
    }
    return {dw, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor embed_tokens(const torch::Tensor& weight, const torch::Tensor& tokens) {
  if (weight.dim() == 2 && tokens.scalar_type() == torch::kInt64 && tokens.device() == weight.device() &&
      fused_kernels_take(weight))
    return EmbeddingFn::apply(weight, tokens);
  return torch::embedding(weight, tokens);
}

}  // namespace lmx
