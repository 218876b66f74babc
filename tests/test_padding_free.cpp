// Padding-free batches (train.padding_free): ModernLM::forward_packed against each sequence
// run alone through forward (the reference: the plain batch path), the packing of a batch's
// rows, which models take it, and a padding-free training step against the whole padded batch.
#include "catch.h"
#include "torch_api.h"

#include <vector>

#include "data/batch.h"
#include "kernels/fused_attention.h"
#include "model/lm.h"
#include "step_check.h"
#include "train/trainer.h"

using namespace lmx;
using lmx::test::fused_model;

namespace {

struct PackableCase {
  const char* name;
  ModelConfig cfg;
};

std::vector<PackableCase> packable_cases() {
  ModelConfig interleaved = fused_model("rope", "rmsnorm", "pre", "swiglu", 2, false);
  interleaved.rope_layout = RopeLayout::Interleaved;
  return {
      {"textbook-like: sinusoidal, LayerNorm, ReLU, biases", fused_model("sinusoidal", "layernorm", "pre", "relu", 4, true)},
      {"llama-like: RoPE, RMSNorm, SwiGLU, GQA 4/2", fused_model("rope", "rmsnorm", "pre", "swiglu", 2, false)},
      {"learned positions, GELU, MQA", fused_model("learned", "layernorm", "pre", "gelu", 1, true)},
      {"NoPE, post-norm", fused_model("none", "layernorm", "post", "relu", 4, true)},
      {"interleaved RoPE", interleaved},
  };
}

// Sequences of these lengths with random tokens; the packed (1, N) row and each one alone.
struct Sequences {
  std::vector<int64_t> lengths;
  std::vector<torch::Tensor> alone;  // (1, len) each
  torch::Tensor packed;              // (1, N)
};
Sequences make_sequences(const std::vector<int64_t>& lengths, int64_t vocab) {
  Sequences s{lengths, {}, {}};
  for (int64_t n : lengths) s.alone.push_back(torch::randint(vocab, {1, n}, torch::kInt64));
  s.packed = torch::cat(s.alone, 1);
  return s;
}

}  // namespace

TEST_CASE("forward_packed: each sequence's logits are those of the sequence alone", "[padding_free]") {
  // Lengths: 1 (a lone token), 4-row tile edges (4, 5), an 8-key block edge (8, 9), longer.
  const std::vector<int64_t> lengths = {5, 1, 9, 8, 33, 4, 17};
  for (const auto& c : packable_cases()) {
    DYNAMIC_SECTION(c.name) {
      torch::manual_seed(3);
      ModernLM model(c.cfg);
      REQUIRE(model->packable());
      torch::manual_seed(4);
      const Sequences s = make_sequences(lengths, c.cfg.vocab_size);
      torch::NoGradGuard no_grad;
      const auto packed = model->forward_packed(s.packed, s.lengths);  // (1, N, V)
      REQUIRE(packed.sizes() == torch::IntArrayRef({1, s.packed.size(1), c.cfg.vocab_size}));
      int64_t at = 0;
      for (size_t b = 0; b < lengths.size(); ++b) {
        const auto alone = model->forward(s.alone[b])[0];  // (len, V)
        const auto part = packed[0].narrow(0, at, lengths[b]);
        // Float rounding only (other GEMM row counts): 1e-5 of the logits' scale.
        const double scale = std::max(1.0, alone.abs().max().item<double>());
        CHECK((part - alone).abs().max().item<double>() / scale < 1e-5);
        at += lengths[b];
      }
    }
  }
}

TEST_CASE("forward_packed: gradients are those of the sequences run one by one", "[padding_free]") {
  const std::vector<int64_t> lengths = {7, 1, 12, 4, 20};
  for (const auto& c : packable_cases()) {
    DYNAMIC_SECTION(c.name) {
      torch::manual_seed(3);
      ModernLM model(c.cfg);
      torch::manual_seed(6);
      const Sequences s = make_sequences(lengths, c.cfg.vocab_size);
      auto targets = torch::randint(c.cfg.vocab_size, s.packed.sizes(), torch::kInt64);
      // Reference: the summed token losses of each sequence alone (plain path per sequence).
      model->zero_grad();
      int64_t at = 0;
      for (size_t b = 0; b < lengths.size(); ++b) {
        auto logits = model->forward(s.alone[b])[0];
        torch::nn::functional::cross_entropy(
            logits, targets[0].narrow(0, at, lengths[b]),
            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .backward();
        at += lengths[b];
      }
      std::vector<torch::Tensor> ref;
      for (auto& p : model->parameters()) ref.push_back(p.grad().clone());
      model->zero_grad();
      auto logits = model->forward_packed(s.packed, s.lengths)[0];
      torch::nn::functional::cross_entropy(logits, targets[0],
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
          .backward();
      std::vector<torch::Tensor> grads;
      for (auto& p : model->parameters()) grads.push_back(p.grad());
      lmx::test::check_same_gradients(grads, ref);
    }
  }
}

TEST_CASE("packable: score-bias positions, MLA, odd head dims and the plain path take no padding-free batch",
          "[padding_free]") {
  for (const char* position : {"alibi", "t5_bias"}) {
    ModernLM model(fused_model(position, "layernorm", "pre", "relu", 4, true));
    CHECK_FALSE(model->packable());
    CHECK_THROWS_AS(model->forward_packed(torch::zeros({1, 3}, torch::kInt64), {1, 2}), std::logic_error);
  }
  ModelConfig mla = fused_model("rope", "rmsnorm", "pre", "swiglu", 4, false);
  mla.attention = "mla";
  mla.mla_kv_rank = 16;
  mla.mla_rope_dim = 8;
  CHECK_FALSE(ModernLM(mla)->packable());
  ModelConfig odd = fused_model("rope", "rmsnorm", "pre", "swiglu", 4, false);
  odd.d_model = 24;  // head dim 6: not the fused kernel's
  CHECK_FALSE(ModernLM(odd)->packable());
  ModernLM plain(fused_model("rope", "rmsnorm", "pre", "swiglu", 2, false));
  set_fused_attention(false);
  CHECK_FALSE(plain->packable());
  set_fused_attention(true);
  CHECK(plain->packable());
  // Lengths that do not tile the row.
  CHECK_THROWS_AS(plain->forward_packed(torch::zeros({1, 5}, torch::kInt64), {2, 2}), std::logic_error);
  CHECK_THROWS_AS(plain->forward_packed(torch::zeros({1, 2}, torch::kInt64), {2, 0}), std::logic_error);
}

TEST_CASE("padding_free_batch: rows cut at their last target, end to end in order, empty rows left out",
          "[padding_free]") {
  // Rows of lengths 5 3 0 7 2 (targets counted up to the last one that is not ignored; row 1
  // has an ignored target inside, which stays).
  const std::vector<int64_t> lens = {5, 3, 0, 7, 2};
  const int64_t B = lens.size(), T = 8;
  auto inputs = torch::zeros({B, T}, torch::kInt64), targets = torch::full({B, T}, data::kIgnore, torch::kInt64);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < T; ++t) {
      inputs[r][t] = 100 * r + t;
      if (t < lens[r] && !(r == 1 && t == 1)) targets[r][t] = 1000 * r + t;
    }
  const MicroBatch m = padding_free_batch(inputs, targets);
  CHECK(m.lengths == std::vector<int64_t>{5, 3, 7, 2});
  REQUIRE(m.inputs.sizes() == torch::IntArrayRef({1, 17}));
  REQUIRE(m.targets.sizes() == m.inputs.sizes());
  int64_t at = 0;
  for (int64_t r : {0, 1, 3, 4}) {
    CHECK(torch::equal(m.inputs[0].narrow(0, at, lens[r]), inputs[r].narrow(0, 0, lens[r])));
    CHECK(torch::equal(m.targets[0].narrow(0, at, lens[r]), targets[r].narrow(0, 0, lens[r])));
    at += lens[r];
  }
  CHECK(m.targets[0][6].item<int64_t>() == data::kIgnore);  // row 1's ignored target, kept
  // Rows all of the full length (packed layout): the batch as it is.
  auto full = torch::ones({B, T}, torch::kInt64);
  const MicroBatch same = padding_free_batch(full, full);
  CHECK(same.lengths.empty());
  CHECK(torch::equal(same.inputs, full));
}

TEST_CASE("a padding-free step is the whole padded batch's step: loss, gradient norm and gradients up to rounding",
          "[padding_free][train]") {
  // Doc-layout rows of a garden-like spread of lengths: random tokens, padded at the end.
  const std::vector<int64_t> lens = {12, 3, 30, 7, 19, 1, 25, 9};
  const int64_t B = lens.size(), T = 30;
  ModelConfig mc = fused_model("rope", "rmsnorm", "pre", "swiglu", 2, false);
  torch::manual_seed(9);
  auto inputs = torch::randint(mc.vocab_size, {B, T}, torch::kInt64);
  auto targets = torch::randint(mc.vocab_size, {B, T}, torch::kInt64);
  for (int64_t r = 0; r < B; ++r) targets[r].narrow(0, lens[r], T - lens[r]).fill_(data::kIgnore);
  TrainConfig tc;
  auto step = [&](const std::vector<MicroBatch>& micro, std::vector<torch::Tensor>* grads) {
    torch::manual_seed(5);
    ModernLM model(mc);
    auto opt = make_optimizer(model, tc);
    const auto r = train_step(model, *opt, micro, 1e-3, 0.0);
    for (auto& p : model->parameters()) grads->push_back(p.grad().clone());
    return r;
  };
  std::vector<torch::Tensor> g_whole, g_free;
  const StepResult whole = step({{inputs, targets, {}}}, &g_whole);
  const MicroBatch packed = padding_free_batch(inputs, targets);
  REQUIRE(packed.lengths == lens);
  const StepResult free = step({packed}, &g_free);
  lmx::test::check_same_step(free, g_free, whole, g_whole);
}
