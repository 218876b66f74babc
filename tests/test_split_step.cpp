// The split training step (train.step_parts; train/trainer.h: step_parts, split_step): a step
// runs each part of its batch on its own (on several threads, each on a thread of its own) and
// sums the parts' gradients. The
// reference is the step that already exists: the same parts as micro-batches, one after the
// other on one thread, whose gradients LibTorch accumulates part by part. With two parts both sum
// the same two gradients, so the bits must be the same; with more micro-batches than parts only
// the order of the sums differs (checked up to rounding).
#include "catch.h"
#include "torch_api.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include "data/batch.h"
#include "kernels/parallel.h"
#include "kernels/torch_runtime.h"
#include "model/lm.h"
#include "step_check.h"
#include "train/trainer.h"

using namespace lmx;
using lmx::test::ThreadsScope;

namespace {

// Doc-layout rows of a garden-like spread of lengths: random tokens, padded at the end.
struct SplitBatch {
  torch::Tensor inputs, targets;
};
SplitBatch split_rows(const std::vector<int64_t>& lens, int64_t T, int64_t vocab) {
  const int64_t B = lens.size();
  SplitBatch b{torch::randint(vocab, {B, T}, torch::kInt64), torch::randint(vocab, {B, T}, torch::kInt64)};
  for (int64_t r = 0; r < B; ++r) b.targets[r].narrow(0, lens[r], T - lens[r]).fill_(data::kIgnore);
  return b;
}

struct SplitOutcome {
  StepResult step;
  std::vector<torch::Tensor> grads, params;
};
// One step of a fresh model (seed 5) at `threads` threads in `parts` parts.
SplitOutcome split_outcome(const ModelConfig& mc, const std::vector<MicroBatch>& micro, int threads, int parts = 2) {
  ThreadsScope t(threads);
  torch::manual_seed(5);
  ModernLM model(mc);
  TrainConfig tc;
  tc.step_parts = parts;
  auto opt = make_optimizer(model, tc);
  SplitOutcome o;
  o.step = train_step(model, *opt, micro, 1e-2, 1.0, Precision::Fp32, -1, step_parts(tc, torch::kCPU));
  for (auto& p : model->parameters()) {
    o.grads.push_back(p.grad().clone());
    o.params.push_back(p.detach().clone());
  }
  return o;
}

void require_same_bits(const SplitOutcome& got, const SplitOutcome& want) {
  CHECK(got.step.stepped);
  CHECK(got.step.tokens == want.step.tokens);
  CHECK(got.step.loss == want.step.loss);
  CHECK(got.step.grad_norm == want.step.grad_norm);
  REQUIRE(got.grads.size() == want.grads.size());
  for (size_t i = 0; i < want.grads.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::equal(got.grads[i], want.grads[i]));
    CHECK(torch::equal(got.params[i], want.params[i]));
  }
}

std::vector<MicroBatch> flat(const std::vector<std::vector<MicroBatch>>& parts) {
  std::vector<MicroBatch> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("split_step: sequences cut nearest the token midpoint, row blocks, micro-batches dealt largest first",
          "[train][split]") {
  torch::manual_seed(1);
  const SplitBatch b = split_rows({12, 3, 30, 7, 19, 1, 25, 9}, 30, 23);
  const MicroBatch packed = padding_free_batch(b.inputs, b.targets);
  REQUIRE(packed.inputs.size(1) == 106);
  auto parts = split_step({packed}, 2);
  REQUIRE(parts.size() == 2);
  // 12+3+30+7 = 52 is nearer 53 than 71 with the 19: the cut falls there.
  CHECK(parts[0].size() == 1);
  CHECK(parts[0][0].lengths == std::vector<int64_t>{12, 3, 30, 7});
  CHECK(parts[1][0].lengths == std::vector<int64_t>{19, 1, 25, 9});
  CHECK(torch::equal(torch::cat({parts[0][0].inputs, parts[1][0].inputs}, 1), packed.inputs));
  CHECK(torch::equal(torch::cat({parts[0][0].targets, parts[1][0].targets}, 1), packed.targets));
  // Three parts of 106 tokens: the cuts nearest 35 (45, not 15) and 70 (71, not 52).
  parts = split_step({packed}, 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0][0].lengths == std::vector<int64_t>{12, 3, 30});
  CHECK(parts[1][0].lengths == std::vector<int64_t>{7, 19});
  CHECK(parts[2][0].lengths == std::vector<int64_t>{1, 25, 9});
  // Fewer sequences than parts: one each. One part: the micro-batches as they are.
  const MicroBatch two = padding_free_batch(b.inputs.narrow(0, 0, 2), b.targets.narrow(0, 0, 2));
  parts = split_step({two}, 4);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0][0].lengths == std::vector<int64_t>{12});
  CHECK(parts[1][0].lengths == std::vector<int64_t>{3});
  CHECK(split_step({packed}, 1).size() == 1);

  // A (B, T) batch: row blocks, the first ones a row longer.
  const auto rows = torch::arange(5 * 4, torch::kInt64).reshape({5, 4});
  parts = split_step({{rows, rows, {}}}, 2);
  REQUIRE(parts.size() == 2);
  CHECK(torch::equal(parts[0][0].inputs, rows.narrow(0, 0, 3)));
  CHECK(torch::equal(parts[1][0].inputs, rows.narrow(0, 3, 2)));

  // Micro-batches of 2, 4, 4, 8 and 1 rows of 4, largest first to the lighter part: the 8 to
  // part 0, both 4s to part 1, the 2 to part 0 (8 rows against 8: the lower part), the 1 to part 1.
  std::vector<MicroBatch> micro;
  for (int64_t n : {2, 4, 4, 8, 1}) micro.push_back({torch::full({n, 4}, n, torch::kInt64), torch::zeros({n, 4}, torch::kInt64), {}});
  parts = split_step(micro, 2);
  REQUIRE(parts.size() == 2);
  std::vector<int64_t> rows0, rows1;
  for (const auto& m : parts[0]) rows0.push_back(m.inputs.size(0));
  for (const auto& m : parts[1]) rows1.push_back(m.inputs.size(0));
  CHECK(rows0 == std::vector<int64_t>{8, 2});
  CHECK(rows1 == std::vector<int64_t>{4, 4, 1});
}

TEST_CASE("step_parts: train.step_parts on the CPU at any thread count, 1 elsewhere; at once on <= 2 threads",
          "[train][split]") {
  TrainConfig tc;
  CHECK(tc.step_parts == 2);  // the default
  tc.step_parts = 3;
  for (int threads : {1, 2, 3}) {
    ThreadsScope t(threads);
    CHECK(step_parts(tc, torch::kCPU) == 3);
    CHECK(step_parts(tc, c10::Device(torch::kCUDA, 0)) == 1);
    // At once where LibTorch's own ops run on one thread (--threads <= 2), else one after another.
    CHECK(concurrent_parts(torch::kCPU) == (threads <= 2 ? threads : 1));
  }
}

TEST_CASE("parallel_parts: every part once, at once on up to `threads` threads, the first error rethrown",
          "[train][split]") {
  ThreadsScope t(2);
  // {parts, threads}: one thread each; more parts than threads (part i on thread i mod threads);
  // one thread or one part: one after another on the caller, with its threads.
  for (auto [n, threads] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}, {3, 3}, {3, 2}, {2, 1}, {3, 1}}) {
    std::vector<int> seen(n, 0), share(n, 0);
    std::vector<std::thread::id> ids(n);
    kernels::parallel_parts(
        n,
        [&](int part) {
          ++seen[part];
          share[part] = runtime::threads();
          ids[part] = std::this_thread::get_id();
        },
        threads);
    INFO(n << " parts on " << threads << " threads");
    CHECK(seen == std::vector<int>(n, 1));
    const int used = std::min(n, threads);
    for (int i = 0; i < n; ++i) {
      CHECK((ids[i] == ids[i % used]));
      if (i >= used) continue;
      CHECK((ids[i] == std::this_thread::get_id()) == (i == 0));
    }
    CHECK(share == std::vector<int>(n, used > 1 ? 1 : 2));
    CHECK(runtime::threads() == 2);  // the caller's count is back
  }
  for (int threads : {3, 1}) {
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(kernels::parallel_parts(
                          3,
                          [&](int part) {
                            ++ran;
                            if (part >= 1) throw std::runtime_error("part " + std::to_string(part));
                          },
                          threads),
                      "part 1");
    CHECK(ran == (threads > 1 ? 3 : 2));  // at once every part ran; one after another the loop ends at the error
    CHECK(runtime::threads() == 2);
  }
}

TEST_CASE("a step in two parts: the same bits on 1, 2 and 3 threads, and its parts' step as micro-batches in one pass",
          "[train][split]") {
  struct Case {
    const char* name;
    ModelConfig cfg;
    bool padding_free;
  };
  const std::vector<Case> cases = {
      {"llama-like, padding-free: RoPE, RMSNorm, SwiGLU, GQA 4/2", lmx::test::fused_model("rope", "rmsnorm", "pre", "swiglu", 2, false), true},
      {"textbook-like, padding-free: sinusoidal, LayerNorm, ReLU, biases, tied embeddings",
       lmx::test::fused_model("sinusoidal", "layernorm", "pre", "relu", 4, true, true), true},
      {"learned positions, GELU, (B, T) rows", lmx::test::fused_model("learned", "layernorm", "pre", "gelu", 1, true), false},
      {"ALiBi (LibTorch's attention ops), (B, T) rows", lmx::test::fused_model("alibi", "rmsnorm", "pre", "swiglu", 4, false), false},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      torch::manual_seed(9);
      const SplitBatch b = split_rows({12, 3, 30, 7, 19, 1, 25, 9}, 30, c.cfg.vocab_size);
      const MicroBatch whole = c.padding_free ? padding_free_batch(b.inputs, b.targets) : MicroBatch{b.inputs, b.targets, {}};
      const auto parts = split_step({whole}, 2);
      REQUIRE(parts.size() == 2);
      const SplitOutcome two = split_outcome(c.cfg, {whole}, 2);
      const SplitOutcome one = split_outcome(c.cfg, flat(parts), 1, /*parts=*/1);
      require_same_bits(two, one);
      // At once on two threads, one after another on one, and on three (each op over them).
      require_same_bits(split_outcome(c.cfg, {whole}, 1), two);
      require_same_bits(split_outcome(c.cfg, {whole}, 3), two);
      // And the whole batch's step in one pass, up to rounding.
      const SplitOutcome plain = split_outcome(c.cfg, {whole}, 1, /*parts=*/1);
      lmx::test::check_same_step(two.step, two.grads, plain.step, plain.grads);
    }
  }
}

TEST_CASE("micro-batches dealt to two parts: the whole batch's step up to rounding, the same bits every time",
          "[train][split]") {
  const ModelConfig mc = lmx::test::fused_model("alibi", "rmsnorm", "pre", "swiglu", 2, false);
  torch::manual_seed(11);
  const SplitBatch b = split_rows({12, 3, 30, 7, 19, 1, 25, 9}, 30, mc.vocab_size);
  const auto micro = micro_batches(b.inputs, b.targets, 2);
  REQUIRE(micro.size() == 4);
  const SplitOutcome two = split_outcome(mc, micro, 2);
  const SplitOutcome again = split_outcome(mc, micro, 2);
  require_same_bits(again, two);
  require_same_bits(split_outcome(mc, micro, 1), two);  // the same lists one after another
  const SplitOutcome one = split_outcome(mc, {{b.inputs, b.targets, {}}}, 1, /*parts=*/1);
  lmx::test::check_same_step(two.step, two.grads, one.step, one.grads);
}
