#include "model/loss.h"

#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include <fmt/format.h>

#include <limits>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "util/error.h"
#include "util/op_timer.h"

namespace lmx {

namespace {

class CrossEntropyFn : public torch::autograd::Function<CrossEntropyFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits_in,
                               const torch::Tensor& targets_in, int64_t ignore, bool sum) {
    op_timer::Scope timed(op_timer::Kind::Loss);
    auto logits = logits_in.contiguous();
    auto targets = targets_in.contiguous();
    const int64_t N = logits.size(0), V = logits.size(1);
    const int64_t* tp = targets.data_ptr<int64_t>();
    int64_t count = 0;
    for (int64_t r = 0; r < N; ++r) {
      if (tp[r] == ignore) continue;
      if (tp[r] < 0 || tp[r] >= V)
        throw InputError(fmt::format("cross-entropy: target id {} is outside the model's vocabulary [0, {}); "
                                     "check model.vocab_size against the tokenizer",
                                     tp[r], V));
      ++count;
    }
    // mean over no counted targets: NaN, as LibTorch's cross_entropy gives.
    const float scale = sum ? 1.0f : (count > 0 ? 1.0f / count : std::numeric_limits<float>::quiet_NaN());
    auto dlogits = torch::empty_like(logits);
    std::vector<float> losses(N);
    kernels::CrossEntropyArgs args{logits.data_ptr<float>(), tp, V, ignore, scale, losses.data(),
                                   dlogits.data_ptr<float>()};
    const auto kernel = kernels::cross_entropy_kernel();
    kernels::parallel_for(N, 64, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
    double total = 0;  // in row order: the same sum at any thread count
    for (float l : losses) total += l;
    ctx->save_for_backward({dlogits});
    return torch::scalar_tensor(sum ? total : total / static_cast<double>(count), logits.options());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Loss);
    auto dlogits = ctx->get_saved_variables()[0];
    // The loss is the graph's output: its gradient is usually exactly 1, and x·1 is x (no pass
    // over the logits, no allocation). Otherwise (a summed loss divided by the token count)
    // scaled as before.
    const auto& g = grads[0];
    if (g.numel() == 1 && g.scalar_type() == torch::kFloat32 && g.item<float>() == 1.0f)
      return {dlogits, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    return {dlogits * g, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor lm_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum) {
  if (logits.dim() == 2 && targets.dim() == 1 && logits.size(0) == targets.size(0) && logits.size(1) > 0 &&
      targets.scalar_type() == torch::kInt64 && fused_kernels_take(logits))
    return CrossEntropyFn::apply(logits, targets, ignore, sum);
  auto opts = torch::nn::functional::CrossEntropyFuncOptions().ignore_index(ignore);
  if (sum) opts = opts.reduction(torch::kSum);
  return torch::nn::functional::cross_entropy(logits, targets, opts);
}

}  // namespace lmx
