#include "model/init.h"

#include "model/norm.h"

namespace lmx {

void init_weights(torch::nn::Module& model, double init_std) {
  torch::NoGradGuard no_grad;
  auto visit = [init_std](torch::nn::Module& m) {
    const bool is_norm = dynamic_cast<Norm*>(&m) != nullptr;
    for (auto& p : m.named_parameters(/*recurse=*/false)) {
      if (p.key() == "bias")
        p.value().zero_();
      else if (is_norm)
        p.value().fill_(1.0);
      else
        p.value().normal_(0.0, init_std);
    }
  };
  visit(model);
  for (auto& child : model.modules(/*include_self=*/false)) visit(*child);
}

}  // namespace lmx
