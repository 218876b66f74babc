// What guards a training run: output folders (unwritable, not a directory, no space, locked
// by another lmx), a write that fails mid-run, the memory estimate and its refusal, and a NaN
// gradient reported as a divergence naming the parameter.
#include "catch.h"
#include <signal.h>
#include "torch_api.h"

#include <filesystem>

#include "cli/common.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "model/memory.h"
#include "model/sizes.h"
#include "resume_helpers.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/faults.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::kCliSmall;
using lmx::test::lines;
using lmx::test::metrics_without_speed;
using lmx::test::read_file;
using lmx::test::resume_config;
using lmx::test::resume_corpus;
using lmx::test::spawn_lmx;
using lmx::test::split_args;
using lmx::test::wait_exit;
using lmx::test::wait_for_lines;
namespace fs = std::filesystem;

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

  // The estimate is not below what a real training run of this config takes. (Not under
  // AddressSanitizer: its shadow memory and freed-block quarantine are in the RSS too.)
  TempDir dir;
  Config small = resume_config();
  RunResult r = train_run(small, resume_corpus(), {0, dir.path.string(), false});
#ifndef __SANITIZE_ADDRESS__
  CHECK(estimate_training_memory(resolve_for_corpus(small, resume_corpus())).total() / (1024.0 * 1024) >
        r.peak_rss_mib * 0.5);
#endif

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
  lmx::faults::Plan plan;
  plan.nan_grad_step = 6;
  plan.nan_grad_param = "model.layers.1.mlp.down_proj.weight";
  const lmx::faults::Scope fault(plan);
  RunResult r = train_run(cfg, resume_corpus(), {1, dir.path.string()});
  INFO(r.message);
  CHECK(r.status == RunStatus::Diverged);
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
  lmx::test::freeze(pid);  // still running (holding its folder) through the check
  auto busy = lmx::test::run_lmx("train --resume '" + cut + "'");
  INFO(busy.output);
  CHECK(busy.code == 2);
  CHECK(busy.output.find("in use by another lmx process (pid " + std::to_string(pid) + ")") != std::string::npos);
  kill(pid, SIGINT);
  lmx::test::thaw(pid);
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
