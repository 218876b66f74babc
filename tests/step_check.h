// Checks for training steps that must agree up to float rounding (micro-batches and
// padding-free batches against the whole padded batch; packed sequences against each alone; a
// step split over threads against its parts), the small model they train and a thread count
// for a scope.
#pragma once
#include "catch.h"
#include "torch_api.h"

#include <algorithm>
#include <vector>

#include "kernels/torch_runtime.h"
#include "train/trainer.h"

namespace lmx::test {

// A small model the fused kernels take (d 32, 2 layers, 4 heads of 8), its components named.
inline ModelConfig fused_model(const std::string& position, const std::string& norm, const std::string& placement,
                               const std::string& ffn, int kv_heads, bool bias, bool tie = false) {
  ModelConfig m;
  m.vocab_size = 23;
  m.d_model = 32;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = kv_heads;
  m.d_ff = 48;
  m.position = position;
  m.norm = norm;
  m.norm_placement = parse_option<NormPlacement>(placement);
  m.ffn = ffn;
  m.bias = bias;
  m.tie_embeddings = tie;
  m.max_seq_len = 64;
  return m;
}

// torch_runtime::set_threads(n) for a scope (the tests run at OMP_NUM_THREADS=1).
struct ThreadsScope {
  int before = runtime::threads();
  explicit ThreadsScope(int n) { torch_runtime::set_threads(n); }
  ~ThreadsScope() { torch_runtime::set_threads(before); }
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;
};

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
