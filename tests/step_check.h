// Checks for training steps that must agree up to float rounding (micro-batches and
// padding-free batches against the whole padded batch; packed sequences against each alone).
#pragma once
#include "catch.h"
#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "train/trainer.h"

namespace lmx::test {

// Every gradient within 1e-5 of its reference's largest entry (at least 1e-3).
inline void check_same_gradients(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const double scale = std::max(1e-3, want[i].abs().max().item<double>());
    CHECK((got[i] - want[i]).abs().max().item<double>() / scale < 1e-5);
  }
}

// The same step: it stepped, the same target count, loss to 1e-6, gradient norm and gradients
// to 1e-5.
inline void check_same_step(const StepResult& got, const std::vector<torch::Tensor>& got_grads, const StepResult& want,
                            const std::vector<torch::Tensor>& want_grads) {
  CHECK(got.stepped);
  CHECK(got.tokens == want.tokens);
  CHECK(got.loss == Approx(want.loss).epsilon(1e-6));
  CHECK(got.grad_norm == Approx(want.grad_norm).epsilon(1e-5));
  check_same_gradients(got_grads, want_grads);
}

}  // namespace lmx::test
