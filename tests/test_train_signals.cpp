// Real signals to lmx train: SIGTERM and SIGKILL then --resume to the same result, a second
// SIGINT that exits at once leaving only whole files, SIGTERM before the first step.
#include "catch.h"
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "checkpoint_helpers.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "resume_helpers.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::has_optimizer_state;
using lmx::test::kCliSmall;
using lmx::test::lines;
using lmx::test::metrics_without_speed;
using lmx::test::read_file;
using lmx::test::require_same_weights;
using lmx::test::spawn_lmx;
using lmx::test::split_args;
using lmx::test::wait_exit;
using lmx::test::wait_for_lines;
namespace fs = std::filesystem;

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

TEST_CASE("SIGTERM while the libraries start, before main, exits 130 too", "[cli][signal]") {
  // A preloaded library's constructor sends the signal, as if it came while LibTorch's
  // constructors run (the ~0.2 s between the loader's relocation and main). The ASan build's
  // runtime must come first in the library list; the preloaded test library does not matter to it.
  const auto r = lmx::test::run_shell("ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0\" "
                                      "LD_PRELOAD='" LMX_SIGTERM_PRELOAD "' '" LMX_BINARY "' list 2>&1");
  INFO(r.output);
  CHECK(r.code == 130);
  CHECK_THAT(r.output, Catch::Contains("interrupt while starting"));
}
