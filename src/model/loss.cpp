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

// The counted targets of a loss over (N, V) logits (those not `ignore`, each checked against
// the vocabulary) and the gradient's scale: 1 for a sum, 1/count for the mean (NaN over no
// counted target, as LibTorch's cross_entropy gives).
struct Counted {
  int64_t count = 0;
  float scale = 0;
};
Counted count_targets(const torch::Tensor& targets, int64_t V, int64_t ignore, bool sum) {
  const int64_t* tp = targets.data_ptr<int64_t>();
  Counted c;
  for (int64_t r = 0; r < targets.size(0); ++r) {
    if (tp[r] == ignore) continue;
    if (tp[r] < 0 || tp[r] >= V)
      throw InputError(fmt::format("cross-entropy: target id {} is outside the model's vocabulary [0, {}); "
                                   "check model.vocab_size against the tokenizer",
                                   tp[r], V));
    ++c.count;
  }
  c.scale = sum ? 1.0f : (c.count > 0 ? 1.0f / c.count : std::numeric_limits<float>::quiet_NaN());
  return c;
}

// The fused kernel over every row of the contiguous logits: each row's loss, the gradient of
// scale·Σ losses into dlogits, each row's log-sum-exp into lse where it is defined (N floats);
// total: the rows' losses summed in row order (the same sum at any thread count).
struct FusedPass {
  torch::Tensor dlogits;
  Counted counted;
  double total = 0;
};
FusedPass fused_pass(const torch::Tensor& logits_in, const torch::Tensor& targets_in, int64_t ignore, bool sum,
                     const torch::Tensor& lse = {}) {
  const auto logits = logits_in.contiguous(), targets = targets_in.contiguous();
  const int64_t N = logits.size(0), V = logits.size(1);
  FusedPass out;
  out.counted = count_targets(targets, V, ignore, sum);
  out.dlogits = torch::empty_like(logits);
  std::vector<float> losses(N);
  kernels::CrossEntropyArgs args{logits.data_ptr<float>(), targets.data_ptr<int64_t>(), V, ignore, out.counted.scale,
                                 losses.data(), out.dlogits.data_ptr<float>(),
                                 lse.defined() ? lse.data_ptr<float>() : nullptr};
  const auto kernel = kernels::cross_entropy_kernel();
  kernels::parallel_for(N, 64, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
  for (float l : losses) out.total += l;
  return out;
}

class CrossEntropyFn : public torch::autograd::Function<CrossEntropyFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits_in,
                               const torch::Tensor& targets_in, int64_t ignore, bool sum) {
    op_timer::Scope timed(op_timer::Kind::Loss);
    const FusedPass f = fused_pass(logits_in, targets_in, ignore, sum);
    ctx->save_for_backward({f.dlogits});
    return torch::scalar_tensor(sum ? f.total : f.total / static_cast<double>(f.counted.count), logits_in.options());
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

// {cross-entropy, z-loss term} from one kernel pass. The kernel's dlogits is d = (p − onehot)·s
// (s: the scale); the z term's gradient is 2·lse·p·s = 2·lse·(d + onehot·s), so the backward's
// g₁·∂CE + g₂·∂z is (g₁ + c)·d + c·s at the target, c = 2·g₂·lse, row by row in one pass.
class CrossEntropyZFn : public torch::autograd::Function<CrossEntropyZFn> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits_in,
                                                const torch::Tensor& targets_in, int64_t ignore, bool sum) {
    op_timer::Scope timed(op_timer::Kind::Loss);
    auto lse = torch::empty({logits_in.size(0)}, logits_in.options());
    const FusedPass f = fused_pass(logits_in, targets_in, ignore, sum, lse);
    double z = 0;  // Σ lse² over the counted rows (ignored rows hold 0), in row order
    for (const float* l = lse.data_ptr<float>(); l != lse.data_ptr<float>() + lse.numel(); ++l)
      z += static_cast<double>(*l) * *l;
    const double n = sum ? 1.0 : static_cast<double>(f.counted.count);
    ctx->save_for_backward({f.dlogits, lse, targets_in.contiguous()});
    ctx->saved_data["scale"] = static_cast<double>(f.counted.scale);
    ctx->saved_data["ignore"] = ignore;
    return {torch::scalar_tensor(f.total / n, logits_in.options()), torch::scalar_tensor(z / n, logits_in.options())};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Loss);
    const auto saved = ctx->get_saved_variables();
    const auto &dlogits = saved[0], &lse = saved[1], &targets = saved[2];
    const float g1 = grads[0].defined() ? grads[0].item<float>() : 0.0f;
    const float g2 = grads[1].defined() ? grads[1].item<float>() : 0.0f;
    const float s = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const int64_t ignore = ctx->saved_data["ignore"].toInt(), V = dlogits.size(1);
    auto out = torch::empty_like(dlogits);
    const float *d = dlogits.data_ptr<float>(), *l = lse.data_ptr<float>();
    const int64_t* t = targets.data_ptr<int64_t>();
    float* o = out.data_ptr<float>();
    kernels::parallel_for(dlogits.size(0), 64, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float c = 2.0f * g2 * l[r], a = g1 + c;
        const float* dr = d + r * V;
        float* orow = o + r * V;
        for (int64_t j = 0; j < V; ++j) orow[j] = a * dr[j];  // 0 for ignored rows (d is 0 there)
        if (t[r] != ignore) orow[t[r]] += c * s;
      }
    });
    return {out, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

namespace {
bool fused_takes(const torch::Tensor& logits, const torch::Tensor& targets) {
  return logits.dim() == 2 && targets.dim() == 1 && logits.size(0) == targets.size(0) && logits.size(1) > 0 &&
         targets.scalar_type() == torch::kInt64 && fused_kernels_take(logits);
}
}  // namespace

torch::Tensor lm_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum) {
  if (fused_takes(logits, targets)) return CrossEntropyFn::apply(logits, targets, ignore, sum);
  auto opts = torch::nn::functional::CrossEntropyFuncOptions().ignore_index(ignore);
  if (sum) opts = opts.reduction(torch::kSum);
  return torch::nn::functional::cross_entropy(logits, targets, opts);
}

torch::Tensor z_loss_term(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum) {
  const torch::Tensor z = torch::logsumexp(logits.to(torch::kFloat32), -1);
  const torch::Tensor counted = targets != ignore;
  const torch::Tensor total = torch::where(counted, z * z, torch::zeros_like(z)).sum();
  return sum ? total : total / std::max<int64_t>(1, counted.sum().item<int64_t>());
}

std::pair<torch::Tensor, torch::Tensor> lm_cross_entropy_z(const torch::Tensor& logits, const torch::Tensor& targets,
                                                            int64_t ignore, bool sum) {
  if (fused_takes(logits, targets)) {
    const auto out = CrossEntropyZFn::apply(logits, targets, ignore, sum);
    return {out[0], out[1]};
  }
  return {lm_cross_entropy(logits, targets, ignore, sum), z_loss_term(logits, targets, ignore, sum)};
}

}  // namespace lmx
