#include "catch.h"
#include "torch_api.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/pronoun.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "kernels/gemm.h"
#include "kernels/precision.h"
#include "small_run.h"
#include "step_check.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/faults.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::small_config;
using lmx::test::small_corpus;
using lmx::test::metrics_without_speed;
using lmx::test::read_file;
namespace fs = std::filesystem;

namespace {

double naive_grad_norm(ModernLM& model) {
  double ss = 0;
  for (auto& p : model->parameters())
    if (p.grad().defined()) ss += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(ss);
}

}  // namespace

TEST_CASE("padding is masked out of the loss", "[train]") {
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  torch::manual_seed(0);
  ModernLM model(cfg.model);
  model->eval();
  const auto& docs = small_corpus().train;
  std::vector<data::Doc> two = {docs[0], docs[1]};
  REQUIRE(two[0].size() != two[1].size());
  auto rows = data::make_rows(two, data::Layout::Doc, 512, small_corpus().vocab.eos);
  auto batches = data::eval_batches(rows, 2, small_corpus().vocab.pad);
  REQUIRE(batches.size() == 1);
  const auto& b = batches[0];
  auto logits = model->forward(b.inputs);
  auto batch_loss = torch::nn::functional::cross_entropy(
                        logits.reshape({-1, logits.size(-1)}), b.targets.reshape(-1),
                        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(data::kIgnore))
                        .item<double>();
  // Reference: each document alone, no padding, summed NLL over all predicted tokens.
  double nll = 0;
  int64_t n = 0;
  for (const auto& d : two) {
    auto x = torch::tensor(std::vector<int64_t>(d.begin(), d.end() - 1)).unsqueeze(0);
    auto y = torch::tensor(std::vector<int64_t>(d.begin() + 1, d.end()));
    auto l = model->forward(x).squeeze(0);
    nll += torch::nn::functional::cross_entropy(l, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
    n += y.size(0);
  }
  CHECK(b.tokens == n);
  CHECK(batch_loss == Approx(nll / n).epsilon(1e-5));
}

TEST_CASE("gradient clipping bounds the global norm and reports the unclipped one", "[train]") {
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  torch::manual_seed(1);
  ModernLM model(cfg.model);
  auto rows = data::make_rows(small_corpus().train, data::Layout::Doc, 64, small_corpus().vocab.eos);
  data::Batcher batcher(rows, 8, 0, small_corpus().vocab.pad);
  auto batch = batcher.batch(0);
  const double clip = 0.05;
  // Unclipped norm by a naive sum over parameters, then the trainer's clipped step.
  model->zero_grad();
  auto logits = model->forward(batch.inputs);
  torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), batch.targets.reshape(-1),
                                       torch::nn::functional::CrossEntropyFuncOptions().ignore_index(data::kIgnore))
      .backward();
  const double expected = naive_grad_norm(model);
  REQUIRE(expected > clip);
  const double reported = clip_gradients(model, clip);
  CHECK(reported == Approx(expected).epsilon(1e-5));
  CHECK(naive_grad_norm(model) == Approx(clip).epsilon(1e-4));
  const double after = clip_gradients(model, 0);  // 0 = no clipping: only measures
  CHECK(after == Approx(clip).epsilon(1e-4));
}

TEST_CASE("micro_batches: rows sorted by length, each group trimmed to its longest row, every row once",
          "[train][micro]") {
  // 7 rows of lengths 5 3 7 1 3 6 2 (targets counted up to the last one that is not ignored).
  const std::vector<int64_t> lens = {5, 3, 7, 1, 3, 6, 2};
  const int64_t B = lens.size(), T = 8;
  auto inputs = torch::zeros({B, T}, torch::kInt64), targets = torch::full({B, T}, data::kIgnore, torch::kInt64);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < T; ++t) {
      inputs[r][t] = 100 * r + t;
      if (t < lens[r]) targets[r][t] = 1000 * r + t;
    }
  auto micro = micro_batches(inputs, targets, 3);
  // Sorted (stable): 1(r3) 2(r6) 3(r1) | 3(r4) 5(r0) 6(r5) | 7(r2).
  const std::vector<std::vector<int64_t>> rows = {{3, 6, 1}, {4, 0, 5}, {2}};
  const std::vector<int64_t> widths = {3, 6, 7};
  REQUIRE(micro.size() == 3);
  for (size_t k = 0; k < micro.size(); ++k) {
    CHECK(micro[k].inputs.size(1) == widths[k]);
    CHECK(micro[k].targets.sizes() == micro[k].inputs.sizes());
    for (size_t i = 0; i < rows[k].size(); ++i) {
      CHECK(torch::equal(micro[k].inputs[i], inputs[rows[k][i]].narrow(0, 0, widths[k])));
      CHECK(torch::equal(micro[k].targets[i], targets[rows[k][i]].narrow(0, 0, widths[k])));
    }
  }
  // The whole batch: size 0, size >= B, and rows all of one length (packed layout).
  for (int64_t size : {int64_t{0}, B, B + 5}) {
    auto whole = micro_batches(inputs, targets, size);
    REQUIRE(whole.size() == 1);
    CHECK(torch::equal(whole[0].inputs, inputs));
  }
  auto full = torch::ones({B, T}, torch::kInt64);
  CHECK(micro_batches(full, full, 2).size() == 1);
}

TEST_CASE("a micro-batched step is the whole batch's step: loss, gradient norm and gradients up to rounding",
          "[train][micro]") {
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  auto rows = data::make_rows(small_corpus().train, data::Layout::Doc, 512, small_corpus().vocab.eos);
  data::Batcher batcher(rows, 16, 0, small_corpus().vocab.pad);
  auto batch = batcher.batch(0);
  // One step from the same initial weights, whole and in micro-batches of 4 (and of 5: a
  // smaller last group). The weights after AdamW are not compared: its first update is
  // lr·g/(|g| + ε), so a gradient entry near 0 moves by up to lr on a rounding difference.
  auto step = [&](int64_t size, std::vector<torch::Tensor>* grads) {
    torch::manual_seed(5);
    ModernLM model(cfg.model);
    auto opt = make_optimizer(model, cfg.train);
    const auto r = train_step(model, *opt, micro_batches(batch.inputs, batch.targets, size), 1e-3, 0.0);
    // AdamW has stepped (grad_clip 0: no scaling): p.grad() is the accumulated gradient it used.
    for (auto& p : model->parameters()) grads->push_back(p.grad().clone());
    return r;
  };
  std::vector<torch::Tensor> g_whole;
  const StepResult r_whole = step(0, &g_whole);
  CHECK(r_whole.stepped);
  REQUIRE(micro_batches(batch.inputs, batch.targets, 4).size() == 4);
  for (int64_t size : {4, 5}) {
    DYNAMIC_SECTION("micro-batches of " << size) {
      std::vector<torch::Tensor> g_micro;
      const StepResult r_micro = step(size, &g_micro);
      CHECK(r_micro.tokens == batch.tokens);
      lmx::test::check_same_step(r_micro, g_micro, r_whole, g_whole);
    }
  }
}

TEST_CASE("same seed and threads give bitwise-identical metrics — eval of the checkpoint matches", "[train]") {
  TempDir dir;
  Config cfg = small_config();
  auto a = dir.path / "a", b = dir.path / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  RunResult ra = train_run(cfg, small_corpus(), {7, a.string(), false});
  RunResult rb = train_run(cfg, small_corpus(), {7, b.string(), false});
  REQUIRE(ra.status == RunStatus::Ok);
  CHECK(ra.steps == 20);
  CHECK(metrics_without_speed((a / "metrics.csv").string()) == metrics_without_speed((b / "metrics.csv").string()));
  CHECK(ra.test.ppl == rb.test.ppl);
  CHECK(ra.final_val_ppl == rb.final_val_ppl);

  // A different seed changes the run.
  auto c = dir.path / "c";
  fs::create_directories(c);
  RunResult rc = train_run(cfg, small_corpus(), {8, c.string(), false});
  CHECK(rc.final_train_loss != ra.final_train_loss);

  // Evaluating the saved checkpoint reproduces the numbers of the training run.
  Checkpoint ck = read_checkpoint((a / "model.safetensors").string());
  ModernLM model = load_model(ck);
  EvalOptions opt;
  opt.split = data::Split::Test;
  opt.batch_size = std::max(cfg.train.batch_size, 32);
  EvalResult e = evaluate(model, small_corpus(), opt);
  CHECK(e.ppl == Approx(ra.test.ppl).epsilon(1e-9));
  CHECK(e.metrics.get("far_pronoun_acc") == ra.test.metrics.get("far_pronoun_acc"));
  opt.split = data::Split::Val;
  CHECK(evaluate(model, small_corpus(), opt).ppl == Approx(ra.final_val_ppl).epsilon(1e-9));
  CHECK(fs::exists(a / "config.yaml"));
}

TEST_CASE("a NaN loss marks the run diverged at its step", "[train]") {
  TempDir dir;
  Config cfg = small_config();
  lmx::faults::Plan plan;
  plan.nan_loss_step = 4;
  const lmx::faults::Scope fault(plan);
  RunResult r = train_run(cfg, small_corpus(), {3, dir.path.string(), false});
  CHECK(r.status == RunStatus::Diverged);
  CHECK(r.steps == 4);
  CHECK(r.message.find("step 4") != std::string::npos);
  CHECK(r.message.find("model.") != std::string::npos);  // names the offending parameter
}

TEST_CASE("packed layout trains on fixed-length rows", "[train]") {
  TempDir dir;
  Config cfg = small_config();
  apply_override(cfg, "data.layout=packed");
  apply_override(cfg, "data.seq_len=32");
  RunResult r = train_run(cfg, small_corpus(), {0, dir.path.string(), false});
  CHECK(r.status == RunStatus::Ok);
  CHECK(std::isfinite(r.test.ppl));
  // The pronoun metric is defined on whole documents only: its columns, no values.
  CHECK(std::isnan(r.test.metrics.get("far_pronoun_acc")));
  CHECK(r.test.metrics.get("far_sites") == 0);
}

TEST_CASE("mean train loss over the last epoch and the first steps: the mean of metrics.csv's rows", "[train]") {
  // The reference: metrics.csv's per-step losses (6 decimals), weighted by each step's target
  // tokens, counted here from the same batches (a packed row at the end of an epoch is shorter).
  TempDir dir;
  Config cfg = small_config();
  apply_override(cfg, "data.layout=packed");
  apply_override(cfg, "data.seq_len=32");
  apply_override(cfg, "train.steps=0");
  apply_override(cfg, "train.epochs=2");
  RunResult r = train_run(cfg, small_corpus(), {0, dir.path.string(), false});
  REQUIRE(r.status == RunStatus::Ok);
  Table m = read_csv((dir.path / "metrics.csv").string());
  const int loss = column(m, "train_loss");
  const data::Corpus& c = small_corpus();
  data::Batcher batcher(data::make_rows(c.train, data::Layout::Packed, 32, c.vocab.eos), cfg.train.batch_size, 0,
                        c.vocab.pad, 0, 1);
  const int64_t per_epoch = batcher.batches_per_epoch();
  REQUIRE(r.steps == 2 * per_epoch);
  double last = 0, first = 0, n_last = 0, n_first = 0;
  for (int64_t s = 0; s < r.steps; ++s) {
    const double v = std::stod(m.rows[s][loss]);
    const double n = batcher.batch(s).targets.ne(data::kIgnore).sum().item<double>();
    if (s >= r.steps - per_epoch) last += v * n, n_last += n;
    if (s < kFirstSteps) first += v * n, n_first += n;
  }
  CHECK(r.train_loss_last_epoch == Approx(last / n_last).margin(2e-6));
  CHECK(r.train_loss_first == Approx(first / n_first).margin(2e-6));
  CHECK(r.train_loss_last_epoch < r.train_loss_first);
}

TEST_CASE("lmx train: 30-step smoke run of every preset, summary and refusal to overwrite", "[train][cli]") {
  TempDir dir;
  for (const char* preset : {"textbook", "original", "llama"}) {
    INFO(preset);
    auto out = (dir.path / preset).string();
    auto r = lmx::test::run_lmx(fmt::format(
        "-q train configs/{}.yaml --seeds 0,1 --out '{}' --set train.steps=30 --set data.train_docs=200 "
        "--set data.val_docs=40 --set data.test_docs=40 --set train.eval_every=15",
        preset, out));
    INFO(r.output);
    REQUIRE(r.code == 0);
    auto summary = read_file(out + "/summary.csv");
    CHECK(summary.find(std::string(preset) + ",0,ok") != std::string::npos);
    CHECK(summary.find(std::string(preset) + ",1,ok") != std::string::npos);
    CHECK(summary.find(std::string(preset) + ",mean,2 ok") != std::string::npos);
    CHECK(fs::exists(out + "/seed1/model.safetensors"));
    // The same output directory is never overwritten silently.
    auto again = lmx::test::run_lmx(fmt::format("-q train configs/{}.yaml --out '{}' --set train.steps=2", preset, out));
    CHECK(again.code == 2);
    CHECK(again.output.find("not empty") != std::string::npos);
  }
  // eval --by-position: a range that no test document reaches has no mean: refused, nothing written.
  const std::string ckpt = (dir.path / "llama" / "seed0" / "model.safetensors").string();
  auto ok = lmx::test::run_lmx("-q eval '" + ckpt + "' --by-position 0,8 --csv '" + dir.file("pos.csv") + "'");
  INFO(ok.output);
  CHECK(ok.code == 0);
  CHECK(ok.output.find("8-end") != std::string::npos);
  auto past = lmx::test::run_lmx("-q eval '" + ckpt + "' --by-position 0,100000 --csv '" + dir.file("past.csv") + "'");
  INFO(past.output);
  CHECK(past.code == 2);
  CHECK(past.output.find("--by-position 0,100000: no test target at positions 100000 or later") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("past.csv")));
}

TEST_CASE("lmx train exits 1 when every seed diverged and 0 when one finished", "[train][cli]") {
  TempDir dir;
  const std::string tiny = " --set train.steps=6 --set train.eval_every=0 --set data.train_docs=60 "
                           "--set data.val_docs=20 --set data.test_docs=20";
  auto all = lmx::test::run_shell("cd '" + std::string(LMX_SOURCE_DIR) + "' && LMX_FAULT_NAN_STEP=3 '" + LMX_BINARY +
                                  "' -q train configs/textbook.yaml --seeds 0,1" + tiny + " --out '" + dir.file("all") +
                                  "' 2>&1");
  INFO(all.output);
  CHECK(all.code == 1);
  CHECK_THAT(all.output, Catch::Contains("every seed diverged"));
  Table t = read_csv(dir.file("all/summary.csv"));
  CHECK(t.rows.at(0)[column(t, "status")] == "diverged");
  CHECK(t.rows.at(0)[column(t, "message")].find("step 3") != std::string::npos);
  auto fine = lmx::test::run_lmx("-q train configs/textbook.yaml --seeds 0" + tiny + " --out '" + dir.file("ok") + "'");
  CHECK(fine.code == 0);
  // In a sweep a diverged run is a result (status diverged), not a failed run: exit 0.
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0]\nset: {train.steps: 6, train.eval_every: 0, data.train_docs: 60, "
                                      "data.val_docs: 20, data.test_docs: 20}\n");
  auto sweep = lmx::test::run_shell("cd '" + std::string(LMX_SOURCE_DIR) + "' && LMX_FAULT_NAN_STEP=2 '" + LMX_BINARY +
                                    "' -q sweep '" + spec + "' --out '" + dir.file("sw") + "' 2>&1");
  INFO(sweep.output);
  CHECK(sweep.code == 0);
  Table st = read_csv(dir.file("sw/summary.csv"));
  CHECK(st.rows.at(0)[column(st, "status")] == "diverged");
}

TEST_CASE("train.precision bf16: the CPU's bf16 GEMMs where it has them, else autocast, on for the forward only, and training lands close to fp32", "[train][precision]") {
  auto a = torch::randn({8, 16}), b = torch::randn({16, 4});
  const bool gemms = gemm::bf16_unavailable().empty();
  INFO("bf16 GEMMs: " << (gemms ? "yes" : gemm::bf16_unavailable()));
  {
    AutocastGuard on(Precision::Bf16, c10::DeviceType::CPU);
    CHECK(gemm::bf16_on() == gemms);
    CHECK(autocast_active(c10::DeviceType::CPU) == !gemms);
    CHECK(torch::mm(a, b).scalar_type() == (gemms ? torch::kFloat32 : torch::kBFloat16));
    {
      AutocastGuard off(Precision::Fp32, c10::DeviceType::CPU);  // fp32 leaves the outer state alone
      CHECK(gemm::bf16_on() == gemms);
      CHECK(autocast_active(c10::DeviceType::CPU) == !gemms);
    }
  }
  CHECK_FALSE(gemm::bf16_on());
  CHECK_FALSE(autocast_active(c10::DeviceType::CPU));
  CHECK(torch::mm(a, b).scalar_type() == torch::kFloat32);

  // The same 20 steps in fp32 and bf16: both finish, the bf16 test perplexity within 5%, and
  // not identical (bf16 did change the arithmetic).
  TempDir dir;
  Config cfg = small_config();
  fs::create_directories(dir.path / "fp");
  fs::create_directories(dir.path / "bf");
  RunResult fp = train_run(cfg, small_corpus(), {3, (dir.path / "fp").string(), false});
  cfg.train.precision = Precision::Bf16;
  RunResult bf = train_run(cfg, small_corpus(), {3, (dir.path / "bf").string(), false});
  REQUIRE(fp.status == RunStatus::Ok);
  REQUIRE(bf.status == RunStatus::Ok);
  CHECK(std::isfinite(bf.test.ppl));
  CHECK(bf.test.ppl == Approx(fp.test.ppl).epsilon(0.05));
  CHECK(bf.test.ppl != fp.test.ppl);
  CHECK_FALSE(autocast_active(c10::DeviceType::CPU));
  CHECK_FALSE(gemm::bf16_on());
}

TEST_CASE("train.precision bf16 with LMX_BF16_GEMM=0: LibTorch's autocast on the CPU", "[train][precision]") {
  ::setenv("LMX_BF16_GEMM", "0", 1);
  CHECK_FALSE(gemm::bf16_unavailable().empty());
  {
    AutocastGuard on(Precision::Bf16, c10::DeviceType::CPU);
    CHECK(autocast_active(c10::DeviceType::CPU));
    CHECK_FALSE(gemm::bf16_on());
    CHECK(torch::mm(torch::randn({4, 8}), torch::randn({8, 2})).scalar_type() == torch::kBFloat16);
  }
  ::unsetenv("LMX_BF16_GEMM");
  CHECK_FALSE(autocast_active(c10::DeviceType::CPU));
}

TEST_CASE("train.max_tokens: steps = ceil(budget / the split's mean targets per batch), over steps and epochs",
          "[train]") {
  Config cfg = small_config();
  const data::Corpus& corpus = small_corpus();
  // The reference: the training rows' targets counted here (each row: its tokens but the first).
  const data::Rows rows = data::train_rows(corpus.train, resolve_for_corpus(cfg, corpus), corpus.vocab.eos);
  double targets = 0;
  for (const auto& r : rows.rows) targets += static_cast<double>(r.size()) - 1;
  const double per_batch = targets / static_cast<double>(rows.rows.size()) * cfg.train.batch_size;
  for (double budget : {1.0, 5000.0, 123456.0}) {
    apply_override(cfg, fmt::format("train.max_tokens={}", budget));
    INFO("budget " << budget);
    CHECK(planned_steps(cfg, corpus) == std::max<int64_t>(1, static_cast<int64_t>(std::ceil(budget / per_batch))));
  }
  apply_override(cfg, "train.max_tokens=0");
  CHECK(planned_steps(cfg, corpus) == 20);  // train.steps again
}

TEST_CASE("train.max_time ends the run after the step that reaches it: validated, checkpointed, tested", "[train]") {
  TempDir dir;
  Config cfg = small_config();
  apply_override(cfg, "train.max_time=1e-9");  // reached by the first step
  RunResult r = train_run(cfg, small_corpus(), {0, dir.path.string(), false});
  CHECK(r.status == RunStatus::Ok);
  CHECK(r.steps == 1);
  CHECK(std::isfinite(r.final_val_ppl));
  CHECK(std::isfinite(r.test.ppl));
  const Checkpoint ck = read_checkpoint((dir.path / "model.safetensors").string());
  CHECK(ck.metadata.at("steps") == "1");
  CHECK(ck.metadata.at("status") == "ok");
}

TEST_CASE("the components after Llama train: relu2, soft-cap, z-loss, init, Adam, Muon, QK-norm, sandwich, window, MoE",
          "[train][optim]") {
  const std::vector<std::vector<std::string>> variants = {
      {"model.ffn=relu2"},           {"model.logit_softcap=30"}, {"train.z_loss=1e-4"},
      {"model.init=gpt2"},           {"model.init=zero_proj"},   {"train.optimizer=adam"},
      {"train.optimizer=muon"},      {"train.warmup_frac=0.1"},  {"model.qk_norm=true"},
      {"model.norm_placement=sandwich"}, {"model.sliding_window=8", "model.window_global_every=2"},
      {"model.ffn=moe", "model.moe_experts=4", "model.d_ff=64"}, {"model.attn_softcap=50"},
  };
  for (const auto& sets : variants) {
    DYNAMIC_SECTION(sets[0]) {
      TempDir dir;
      Config cfg = small_config();
      for (const auto& s : sets) apply_override(cfg, s);
      RunResult r = train_run(cfg, small_corpus(), {1, dir.path.string(), false});
      REQUIRE(r.status == RunStatus::Ok);
      CHECK(r.steps == 20);
      CHECK(std::isfinite(r.test.ppl));
      CHECK(r.final_train_loss < r.train_loss_first);  // it learns
    }
  }
}
