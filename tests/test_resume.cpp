// Reliability: interruption (fault-injected and real SIGINT / SIGTERM / SIGKILL), resume
// bit for bit, atomic results and output checks, the memory guard and NaN faults. Sweep and
// ablation resume: test_sweep_resume.cpp.
#include "catch.h"
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/common.h"
#include "data/corpus.h"
#include "checkpoint_helpers.h"
#include "helpers.h"
#include "model/checkpoint.h"
#include "model/memory.h"
#include "model/sizes.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/signals.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::metrics_without_speed;
using lmx::test::read_file;
using lmx::test::require_same_weights;
using lmx::test::lines;
using lmx::test::spawn_lmx;
using lmx::test::split_args;
using lmx::test::wait_exit;
using lmx::test::wait_for_lines;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kResumeSets = {"data.train_docs=300", "data.val_docs=60", "data.test_docs=60",
                                         "train.steps=24",      "train.eval_every=5", "train.warmup_steps=5",
                                         "train.batch_size=16"};

Config resume_config() { return load_config(lmx::test::source_path("configs/textbook.yaml"), kResumeSets); }

const data::Corpus& resume_corpus() {
  static const data::Corpus corpus = data::load_corpus(resume_config().data);
  return corpus;
}


bool has_optimizer_state(const Checkpoint& ck) {
  std::set<std::string> names;
  for (const auto& [n, t] : ck.tensors) names.insert(n);
  for (const auto& [n, t] : ck.tensors) {
    if (n.rfind("optim.", 0) == 0 || n.rfind("state.", 0) == 0) continue;
    if (!names.count("optim." + n + ".exp_avg") || !names.count("optim." + n + ".exp_avg_sq") ||
        !names.count("optim." + n + ".step"))
      return false;
  }
  return names.count("state.torch_rng") > 0;
}

const std::string kCliSmall =
    "--set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.batch_size=8 "
    "--set train.eval_every=40 --set train.warmup_steps=10";

}  // namespace

TEST_CASE("interrupted twice and resumed: metrics and weights bitwise identical to one run", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  const auto full = dir.path / "full", cut = dir.path / "cut";
  fs::create_directories(full);
  fs::create_directories(cut);
  RunResult a = train_run(cfg, resume_corpus(), {11, full.string(), false});
  REQUIRE(a.status == "ok");

  // Fault injection: as if SIGINT arrived during step 7 (not an eval step), then during 15 (after
  // the eval at 15: best_val_ppl must survive), then the rest.
  RunOptions o1(11, cut.string());
  o1.interrupt_after_step = 7;
  RunResult b1 = train_run(cfg, resume_corpus(), o1);
  signals::reset();
  CHECK(b1.status == "interrupted");
  CHECK(b1.steps == 7);
  Checkpoint ck = read_checkpoint((cut / "model.safetensors").string());
  CHECK(ck.metadata.at("status") == "interrupted");
  CHECK(ck.metadata.at("steps") == "7");
  CHECK(has_optimizer_state(ck));
  CHECK(lines((cut / "metrics.csv").string()) == 8);  // header + 7 steps, flushed

  RunOptions o2(11, cut.string());
  o2.resume = true;
  o2.interrupt_after_step = 15;
  RunResult b2 = train_run(cfg, resume_corpus(), o2);
  signals::reset();
  CHECK(b2.status == "interrupted");
  CHECK(b2.steps == 15);

  RunOptions o3(11, cut.string());
  o3.resume = true;
  RunResult b3 = train_run(cfg, resume_corpus(), o3);
  REQUIRE(b3.status == "ok");
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
  CHECK(b4.status == "ok");
  CHECK(b4.steps == 24);
  CHECK(b4.test.ppl == a.test.ppl);
  CHECK(b4.final_val_ppl == a.final_val_ppl);
  CHECK(read_file((cut / "model.safetensors").string()) == finished);  // not rewritten
  CHECK(metrics_without_speed((cut / "metrics.csv").string()) == metrics_without_speed((full / "metrics.csv").string()));
}

TEST_CASE("resume refuses another config or seed and a checkpoint without optimizer state", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  RunOptions o(3, dir.path.string());
  o.interrupt_after_step = 2;
  train_run(cfg, resume_corpus(), o);
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

TEST_CASE("SIGTERM to lmx train: checkpoint with optimizer state, exit 130, --resume matches a full run",
          "[resume][cli][signal]") {
  TempDir dir;
  const std::string full = dir.file("full"), cut = dir.file("cut");
  const std::string common = "-q train configs/textbook.yaml --seeds 5 --set train.steps=300 " + kCliSmall;
  auto r = lmx::test::run_lmx(common + " --out '" + full + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);

  auto args = split_args(common);
  args.insert(args.end(), {"--out", cut});
  const pid_t pid = spawn_lmx(args, dir.file("cut.log"));
  REQUIRE(wait_for_lines(cut + "/seed5/metrics.csv", 4, pid));
  kill(pid, SIGTERM);
  const int code = wait_exit(pid);
  INFO(read_file(dir.file("cut.log")));
  REQUIRE(code == 130);
  Checkpoint ck = read_checkpoint(cut + "/seed5/model.safetensors");
  CHECK(ck.metadata.at("status") == "interrupted");
  CHECK(has_optimizer_state(ck));
  const int steps = std::stoi(ck.metadata.at("steps"));
  CHECK(steps < 300);
  CHECK(lines(cut + "/seed5/metrics.csv") == static_cast<size_t>(steps) + 1);  // consistent with the checkpoint
  CHECK(read_file(cut + "/summary.csv").find(",5,interrupted,") != std::string::npos);
  CHECK(read_file(dir.file("cut.log")).find("--resume") != std::string::npos);

  auto res = lmx::test::run_lmx("-q train --resume '" + cut + "'");
  INFO(res.output);
  REQUIRE(res.code == 0);
  CHECK(metrics_without_speed(cut + "/seed5/metrics.csv") == metrics_without_speed(full + "/seed5/metrics.csv"));
  require_same_weights(full + "/seed5/model.safetensors", cut + "/seed5/model.safetensors");
  CHECK(read_file(cut + "/summary.csv").find(",5,ok,") != std::string::npos);
  // Nothing left to do: finished seeds are kept.
  auto again = lmx::test::run_lmx("train --resume '" + cut + "'");
  CHECK(again.code == 0);
  CHECK(again.output.find("kept") != std::string::npos);
}

TEST_CASE("SIGKILL after a periodic checkpoint: --resume continues from it, bitwise", "[resume][cli][signal]") {
  TempDir dir;
  const std::string full = dir.file("full"), cut = dir.file("cut");
  const std::string common =
      "-q train configs/textbook.yaml --seeds 2 --set train.steps=200 --set train.checkpoint_every=7 " + kCliSmall;
  auto r = lmx::test::run_lmx(common + " --out '" + full + "'");
  REQUIRE(r.code == 0);
  auto args = split_args(common);
  args.insert(args.end(), {"--out", cut});
  const pid_t pid = spawn_lmx(args, dir.file("cut.log"));
  REQUIRE(wait_for_lines(cut + "/seed2/metrics.csv", 20, pid));
  kill(pid, SIGKILL);
  CHECK(wait_exit(pid) == 128 + SIGKILL);
  const std::string status = read_checkpoint(cut + "/seed2/model.safetensors").metadata.at("status");
  CHECK((status == "running" || status == "ok"));
  auto res = lmx::test::run_lmx("-q train --resume '" + cut + "'");
  INFO(res.output);
  REQUIRE(res.code == 0);
  CHECK(metrics_without_speed(cut + "/seed2/metrics.csv") == metrics_without_speed(full + "/seed2/metrics.csv"));
  require_same_weights(full + "/seed2/model.safetensors", cut + "/seed2/model.safetensors");
}

TEST_CASE("a second SIGINT exits at once and leaves only whole files", "[resume][cli][signal]") {
  TempDir dir;
  const std::string out = dir.file("out");
  // A larger model (slow steps), so that the second signal comes while the first is pending.
  auto args = split_args("-q train configs/textbook.yaml --seeds 0 --set train.steps=2000 " + kCliSmall +
                         " --set model.d_model=256 --set model.d_ff=1024 --set model.n_layers=4 --set train.batch_size=32");
  args.insert(args.end(), {"--out", out});
  const pid_t pid = spawn_lmx(args, dir.file("log"));
  REQUIRE(wait_for_lines(out + "/seed0/metrics.csv", 3, pid));
  kill(pid, SIGINT);
  // Signals do not queue: wait until the first one is handled, then send the second.
  for (int i = 0; i < 2000 && read_file(dir.file("log")).find("interrupt:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(pid, SIGINT);
  CHECK(wait_exit(pid) == 130);
  INFO(read_file(dir.file("log")));
  CHECK(read_file(dir.file("log")).find("second interrupt") != std::string::npos);
  // Whatever exists is complete: metrics rows are whole lines, a checkpoint (if written) reads.
  const std::string m = read_file(out + "/seed0/metrics.csv");
  CHECK(m.back() == '\n');
  if (fs::exists(out + "/seed0/model.safetensors")) CHECK_NOTHROW(read_checkpoint(out + "/seed0/model.safetensors"));
  CHECK(fs::exists(out + "/seed0/config.yaml"));
}

TEST_CASE("output directories: unwritable, not a directory, no space: exit 2 before training", "[resume][cli]") {
  CHECK_THROWS_AS(cli::check_writable("/proc"), InputError);
  TempDir dir;
  CHECK_NOTHROW(cli::check_writable(dir.path.string()));
  CHECK_THROWS_AS(cli::check_free_space(dir.path.string(), 1e30, "checkpoints"), InputError);
  CHECK_NOTHROW(cli::check_free_space(dir.path.string(), 1, "checkpoints"));
  const std::string file = dir.write("f", "x");
  auto r = lmx::test::run_lmx("-q train configs/textbook.yaml --out '" + file + "/sub'");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find(file + "/sub") != std::string::npos);
  auto p = lmx::test::run_lmx("-q train configs/textbook.yaml --out /proc/lmx-test");
  CHECK(p.code == 2);
  auto n = lmx::test::run_lmx("-q train --resume '" + dir.path.string() + "'");
  CHECK(n.code == 2);
  CHECK(n.output.find("train.json") != std::string::npos);
}

TEST_CASE("a write that fails mid-run (file size limit, as a full disk) is exit 1 and keeps the old checkpoint",
          "[resume][cli]") {
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string train = "-q train configs/textbook.yaml --seeds 0 --set train.steps=300 " + kCliSmall;
  auto args = split_args(train);
  args.insert(args.end(), {"--out", out});
  // An interrupted run leaves a resumable checkpoint ...
  const pid_t pid = spawn_lmx(args, dir.file("log"));
  REQUIRE(wait_for_lines(out + "/seed0/metrics.csv", 3, pid));
  kill(pid, SIGINT);
  REQUIRE(wait_exit(pid) == 130);
  const std::string ckpt = out + "/seed0/model.safetensors";
  const std::string before = read_file(ckpt);
  // ... then the resume cannot write files larger than 64 KiB (SIGXFSZ ignored: writes fail with EFBIG).
  auto r = lmx::test::run_lmx("-q train --resume '" + out + "' --set train.lr=1");  // --resume keeps the config
  CHECK(r.code == 2);
  const std::string cmd2 = "ulimit -f 128; trap '' XFSZ; exec '" + std::string(LMX_BINARY) + "' -q train --resume '" + out + "'";
  const auto full_disk = lmx::test::run_shell("cd '" + std::string(LMX_SOURCE_DIR) + "' && bash -c \"" + cmd2 + "\" 2>&1");
  INFO(full_disk.output);
  CHECK(full_disk.code == 1);
  CHECK(full_disk.output.find("lmx: error: " + ckpt + ": write failed") != std::string::npos);
  CHECK(read_file(ckpt) == before);  // untouched, still resumable
  CHECK_FALSE(fs::exists(ckpt + ".tmp"));
  auto ok = lmx::test::run_lmx("-q train --resume '" + out + "'");
  INFO(ok.output);
  CHECK(ok.code == 0);
}

TEST_CASE("memory estimate: parts, scaling, and the 70B refusal", "[resume][memory]") {
  Config cfg = load_config(lmx::test::source_path("configs/textbook.yaml"));
  cfg.model.vocab_size = 40;
  MemoryEstimate e = estimate_training_memory(cfg);
  CHECK(e.params == count_params(cfg.model).total());
  CHECK(e.weights_bytes == 4.0 * e.params);
  CHECK(e.optimizer_bytes == 8.0 * e.params);
  CHECK(e.total() < 2.0 * 1024 * 1024 * 1024);
  Config big = cfg;
  big.train.batch_size *= 2;
  CHECK(estimate_training_memory(big).activation_bytes == Approx(2 * e.activation_bytes));
  CHECK_THROWS_AS(check_training_memory(cfg, 1024.0), InputError);
  CHECK_NOTHROW(check_training_memory(cfg, 1e15));
  CHECK_NOTHROW(check_training_memory(cfg, -1));  // unknown: not refused
  CHECK(available_memory_bytes() > 0);

  // The estimate is not below what a real training run of this config takes.
  TempDir dir;
  Config small = resume_config();
  RunResult r = train_run(small, resume_corpus(), {0, dir.path.string(), false});
  CHECK(estimate_training_memory(resolve_for_corpus(small, resume_corpus())).total() / (1024.0 * 1024) >
        r.peak_rss_mib * 0.5);

  auto cli = lmx::test::run_lmx("train configs/models/llama2-70b.yaml --out /tmp/lmx-never-created-70b");
  INFO(cli.output);
  CHECK(cli.code == 2);
  CHECK(cli.output.find("llama2-70b.yaml") != std::string::npos);
  CHECK(cli.output.find("MemAvailable") != std::string::npos);
  CHECK(cli.output.find("TiB") != std::string::npos);
  CHECK_FALSE(fs::exists("/tmp/lmx-never-created-70b"));
}

TEST_CASE("a NaN gradient in one parameter: diverged at its step, naming the parameter and group", "[resume][train]") {
  TempDir dir;
  const Config cfg = resume_config();
  RunOptions o(1, dir.path.string());
  o.inject_nan_grad_at_step = 6;
  o.inject_nan_grad_param = "model.layers.1.mlp.down_proj.weight";
  RunResult r = train_run(cfg, resume_corpus(), o);
  INFO(r.message);
  CHECK(r.status == "diverged");
  CHECK(r.steps == 6);
  CHECK(r.message.find("step 6") != std::string::npos);
  CHECK(r.message.find("first non-finite gradient in model.layers.1.mlp.down_proj.weight") != std::string::npos);
  CHECK(r.message.find("parameter group model.layers.1.mlp") != std::string::npos);
  // The loss itself was finite: the gradient check caught it.
  CHECK(r.message.find("loss nan") == std::string::npos);
  // The weights saved are those before the bad step, all finite.
  Checkpoint ck = read_checkpoint(dir.file("model.safetensors"));
  CHECK(ck.metadata.at("status") == "diverged");
  for (const auto& [n, t] : ck.tensors) CHECK(torch::isfinite(t).all().item<bool>());
}

TEST_CASE("a resumable checkpoint without any optimizer state is refused", "[resume]") {
  TempDir dir;
  const Config cfg = resume_config();
  RunOptions o(6, dir.path.string());
  o.interrupt_after_step = 3;
  train_run(cfg, resume_corpus(), o);
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

TEST_CASE("two lmx train on one output folder: the second exits 2 naming the holder's pid", "[resume][cli][lock]") {
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string train = "-q train configs/textbook.yaml --seeds 0 --set train.steps=300 " + kCliSmall;
  // Two fresh runs started together: exactly one trains.
  {
    auto args = split_args(train);
    args.insert(args.end(), {"--out", out});
    const pid_t a = spawn_lmx(args, dir.file("a.log"));
    const pid_t b = spawn_lmx(args, dir.file("b.log"));
    const int ca = wait_exit(a), cb = wait_exit(b);
    INFO(read_file(dir.file("a.log")) << "\n---\n" << read_file(dir.file("b.log")));
    CHECK(std::min(ca, cb) == 0);
    CHECK(std::max(ca, cb) == 2);
    const std::string loser = read_file(dir.file(ca == 2 ? "a.log" : "b.log"));
    CHECK(loser.find("in use by another lmx process") != std::string::npos);
    CHECK(lines(out + "/seed0/metrics.csv") == 301);  // written once
    CHECK(read_file(out + "/summary.csv").find(",0,ok,") != std::string::npos);
  }
  // While a run is going, --resume of its folder is refused with the holder's pid; two
  // --resume at once: one continues, the other exits 2.
  const std::string cut = dir.file("cut");
  auto args = split_args(train);
  args.insert(args.end(), {"--out", cut});
  const pid_t pid = spawn_lmx(args, dir.file("cut.log"));
  REQUIRE(wait_for_lines(cut + "/seed0/metrics.csv", 4, pid));
  auto busy = lmx::test::run_lmx("train --resume '" + cut + "'");
  INFO(busy.output);
  CHECK(busy.code == 2);
  CHECK(busy.output.find("in use by another lmx process (pid " + std::to_string(pid) + ")") != std::string::npos);
  kill(pid, SIGINT);
  REQUIRE(wait_exit(pid) == 130);
  const pid_t r1 = spawn_lmx({"-q", "train", "--resume", cut}, dir.file("r1.log"));
  const pid_t r2 = spawn_lmx({"-q", "train", "--resume", cut}, dir.file("r2.log"));
  const int c1 = wait_exit(r1), c2 = wait_exit(r2);
  INFO(read_file(dir.file("r1.log")) << "\n---\n" << read_file(dir.file("r2.log")));
  CHECK(std::min(c1, c2) == 0);
  CHECK(std::max(c1, c2) == 2);
  CHECK(lines(cut + "/seed0/metrics.csv") == 301);
  CHECK(metrics_without_speed(cut + "/seed0/metrics.csv") == metrics_without_speed(out + "/seed0/metrics.csv"));
  // --resume with another --out is refused, not ignored.
  auto other = lmx::test::run_lmx("train --resume '" + cut + "' --out '" + dir.file("elsewhere") + "'");
  CHECK(other.code == 2);
  CHECK_FALSE(fs::exists(dir.file("elsewhere")));
}

TEST_CASE("SIGTERM before the first step exits 130, as SIGINT does", "[resume][cli][signal]") {
  TempDir dir;
  // A large corpus: the signal comes while it is generated, before training starts.
  const pid_t pid = spawn_lmx({"train", "configs/textbook.yaml", "--set", "data.train_docs=2000000", "--out",
                               dir.file("out")},
                              dir.file("log"));
  REQUIRE(lmx::test::wait_for_signal_setup(pid));
  kill(pid, SIGTERM);
  CHECK(wait_exit(pid) == 130);
  INFO(read_file(dir.file("log")));
  CHECK_FALSE(fs::exists(dir.file("out") + "/seed0/model.safetensors"));
}
