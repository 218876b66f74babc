// Resume bit for bit: in-process interruptions resumed to the same metrics and weights, the
// checkpoints a resume refuses, and a seed killed during its final evaluation. Real signals:
// test_train_signals.cpp; output folders, write failures, the memory guard and NaN faults:
// test_train_guards.cpp; sweep and ablation resume: test_sweep_resume.cpp.
#include "catch.h"
#include "torch_api.h"

#include <filesystem>

#include "checkpoint_helpers.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "resume_helpers.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/signals.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::has_optimizer_state;
using lmx::test::kCliSmall;
using lmx::test::lines;
using lmx::test::metrics_without_speed;
using lmx::test::read_file;
using lmx::test::train_interrupted;
using lmx::test::require_same_weights;
using lmx::test::resume_config;
using lmx::test::resume_corpus;
namespace fs = std::filesystem;

TEST_CASE("interrupted twice and resumed: metrics and weights bitwise identical to one run", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  const auto full = dir.path / "full", cut = dir.path / "cut";
  fs::create_directories(full);
  fs::create_directories(cut);
  RunResult a = train_run(cfg, resume_corpus(), {11, full.string(), false});
  REQUIRE(a.status == RunStatus::Ok);

  // Fault injection: as if SIGINT arrived during step 7 (not an eval step), then during 15 (after
  // the eval at 15: best_val_ppl must survive), then the rest.
  RunResult b1 = train_interrupted(cfg, {11, cut.string()}, 7);
  signals::reset();
  CHECK(b1.status == RunStatus::Interrupted);
  CHECK(b1.steps == 7);
  Checkpoint ck = read_checkpoint((cut / "model.safetensors").string());
  CHECK(ck.metadata.at("status") == "interrupted");
  CHECK(ck.metadata.at("steps") == "7");
  CHECK(has_optimizer_state(ck));
  CHECK(lines((cut / "metrics.csv").string()) == 8);  // header + 7 steps, flushed

  RunOptions o2(11, cut.string());
  o2.resume = true;
  RunResult b2 = train_interrupted(cfg, o2, 15);
  signals::reset();
  CHECK(b2.status == RunStatus::Interrupted);
  CHECK(b2.steps == 15);

  RunOptions o3(11, cut.string());
  o3.resume = true;
  RunResult b3 = train_run(cfg, resume_corpus(), o3);
  REQUIRE(b3.status == RunStatus::Ok);
  CHECK(b3.steps == 24);
  CHECK(metrics_without_speed((cut / "metrics.csv").string()) == metrics_without_speed((full / "metrics.csv").string()));
  require_same_weights((full / "model.safetensors").string(), (cut / "model.safetensors").string());
  CHECK(b3.final_train_loss == a.final_train_loss);
  CHECK(b3.best_val_ppl == a.best_val_ppl);
  CHECK(b3.final_val_ppl == a.final_val_ppl);
  CHECK(b3.test.ppl == a.test.ppl);
  // The finished checkpoint holds weights only; resuming it (its result was lost: killed during
  // the test evaluation) trains nothing and gives the same result again.
  CHECK_FALSE(has_optimizer_state(read_checkpoint((cut / "model.safetensors").string())));
  const std::string finished = read_file((cut / "model.safetensors").string());
  RunOptions o4(11, cut.string());
  o4.resume = true;
  RunResult b4 = train_run(cfg, resume_corpus(), o4);
  CHECK(b4.status == RunStatus::Ok);
  CHECK(b4.steps == 24);
  CHECK(b4.test.ppl == a.test.ppl);
  CHECK(b4.final_val_ppl == a.final_val_ppl);
  CHECK(read_file((cut / "model.safetensors").string()) == finished);  // not rewritten
  CHECK(metrics_without_speed((cut / "metrics.csv").string()) == metrics_without_speed((full / "metrics.csv").string()));
}

TEST_CASE("resume refuses another config or seed and a checkpoint without optimizer state", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  train_interrupted(cfg, {3, dir.path.string()}, 2);
  signals::reset();
  Config other = cfg;
  apply_override(other, "train.lr=0.01");
  RunOptions r(3, dir.path.string());
  r.resume = true;
  try {
    train_run(other, resume_corpus(), r);
    FAIL("resumed with another config");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("config differs") != std::string::npos);
  }
  RunOptions s(4, dir.path.string());
  s.resume = true;
  CHECK_THROWS_AS(train_run(cfg, resume_corpus(), s), InputError);
  // Drop the optimizer state: a clear InputError, not a silent fresh optimizer.
  Checkpoint ck = read_checkpoint(dir.file("model.safetensors"));
  NamedTensors kept;
  for (const auto& [n, t] : ck.tensors)
    if (n.find(".exp_avg_sq") == std::string::npos) kept.push_back({n, t});
  ck.metadata.erase("lmx_config");
  ck.metadata.erase("lmx_run_name");
  ck.metadata.erase("format");
  NamedTensors extra;
  for (const auto& [n, t] : kept)
    if (n.rfind("optim.", 0) == 0 || n.rfind("state.", 0) == 0) extra.push_back({n, t});
  ModernLM m = load_model(read_checkpoint(dir.file("model.safetensors")));
  save_checkpoint(dir.file("model.safetensors"), m, ck.config, extra, ck.metadata);
  try {
    train_run(cfg, resume_corpus(), r);
    FAIL("resumed without exp_avg_sq");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("incomplete") != std::string::npos);
  }
}

TEST_CASE("a resumable checkpoint without any optimizer state is refused", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  train_interrupted(cfg, {6, dir.path.string()}, 3);
  signals::reset();
  Checkpoint ck = read_checkpoint(dir.file("model.safetensors"));
  REQUIRE(ck.metadata.at("status") == "interrupted");
  ck.metadata.erase("lmx_config");
  ck.metadata.erase("lmx_run_name");
  ck.metadata.erase("format");
  ModernLM m = load_model(read_checkpoint(dir.file("model.safetensors")));
  save_checkpoint(dir.file("model.safetensors"), m, ck.config, {}, ck.metadata);  // weights and metadata only
  RunOptions r(6, dir.path.string());
  r.resume = true;
  CHECK_THROWS_WITH(train_run(cfg, resume_corpus(), r), Catch::Contains("no optimizer state"));
}

TEST_CASE("resume after a kill during the final test evaluation finishes the seed, never trusts the stale result",
          "[resume][cli]") {
  TempDir dir;
  const std::string full = dir.file("full"), cut = dir.file("cut");
  auto r = lmx::test::run_lmx("-q train configs/textbook.yaml --seeds 3 --set train.steps=30 " + kCliSmall +
                              " --out '" + full + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const Table done = read_csv(full + "/seed3/result.csv");
  const int status = column(done, "status"), steps = column(done, "steps"), test_ppl = column(done, "test_ppl");
  REQUIRE(done.rows.at(0)[status] == "ok");
  REQUIRE(!done.rows.at(0)[test_ppl].empty());
  // What a kill -9 during the test evaluation leaves after "interrupt, resume": the final
  // checkpoint (status ok) next to the result of the interrupted attempt.
  fs::copy(full, cut, fs::copy_options::recursive);
  Table stale = done;
  stale.rows[0][status] = "interrupted";
  stale.rows[0][steps] = "12";
  stale.rows[0][test_ppl] = "";
  write_file_atomic(cut + "/seed3/result.csv", stale.csv());
  fs::remove(cut + "/summary.csv");
  auto res = lmx::test::run_lmx("train --resume '" + cut + "'");
  INFO(res.output);
  CHECK(res.code == 0);
  CHECK(res.output.find("finishing it") != std::string::npos);
  CHECK(res.output.find("finished before") == std::string::npos);
  Table again = read_csv(cut + "/seed3/result.csv");
  CHECK(again.rows.at(0)[status] == "ok");
  CHECK(again.rows.at(0)[steps] == "30");
  CHECK(again.rows.at(0)[test_ppl] == done.rows.at(0)[test_ppl]);  // the same weights, the same test
  CHECK(read_file(cut + "/summary.csv").find(",3,ok,") != std::string::npos);
  // A missing result too.
  fs::remove(cut + "/seed3/result.csv");
  auto missing = lmx::test::run_lmx("-q train --resume '" + cut + "'");
  CHECK(missing.code == 0);
  CHECK(read_csv(cut + "/seed3/result.csv").rows.at(0)[test_ppl] == done.rows.at(0)[test_ppl]);
  // Consistent now: kept.
  auto kept = lmx::test::run_lmx("train --resume '" + cut + "'");
  CHECK(kept.code == 0);
  CHECK(kept.output.find("finished before (ok), kept") != std::string::npos);
}

TEST_CASE("Muon and z-loss runs resume bit for bit: the momentum buffers travel, Muon's without exp_avg_sq",
          "[resume][optim]") {
  TempDir dir;
  Config cfg = resume_config();
  apply_override(cfg, "train.optimizer=muon");
  apply_override(cfg, "train.z_loss=1e-3");
  const auto full = dir.path / "full", cut = dir.path / "cut";
  fs::create_directories(full);
  fs::create_directories(cut);
  RunResult a = train_run(cfg, resume_corpus(), {5, full.string(), false});
  REQUIRE(a.status == RunStatus::Ok);
  RunResult b1 = train_interrupted(cfg, {5, cut.string()}, 9);
  signals::reset();
  REQUIRE(b1.status == RunStatus::Interrupted);
  const Checkpoint ck = read_checkpoint((cut / "model.safetensors").string());
  std::set<std::string> names;
  for (const auto& [n, t] : ck.tensors) names.insert(n);
  CHECK(names.count("optim.model.layers.0.mlp.up_proj.weight.exp_avg"));       // Muon: momentum
  CHECK_FALSE(names.count("optim.model.layers.0.mlp.up_proj.weight.exp_avg_sq"));
  CHECK(names.count("optim.model.embed_tokens.weight.exp_avg_sq"));            // AdamW
  CHECK(names.count("optim.model.layers.0.input_layernorm.weight.exp_avg_sq"));
  RunOptions o2(5, cut.string());
  o2.resume = true;
  RunResult b2 = train_run(cfg, resume_corpus(), o2);
  REQUIRE(b2.status == RunStatus::Ok);
  CHECK(metrics_without_speed((cut / "metrics.csv").string()) == metrics_without_speed((full / "metrics.csv").string()));
  require_same_weights((full / "model.safetensors").string(), (cut / "model.safetensors").string());
  CHECK(b2.test.ppl == a.test.ppl);
}
