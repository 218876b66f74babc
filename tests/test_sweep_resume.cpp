// Sweep and ablation resume after a real SIGINT: finished runs kept, the interrupted one
// continued, a changed spec refused.
#include "catch.h"
#include <signal.h>

#include <filesystem>

#include "formats/checkpoint.h"
#include "helpers.h"
#include "util/csv.h"

using namespace lmx;
using lmx::test::TempDir;
using lmx::test::lines;
using lmx::test::read_file;
using lmx::test::spawn_lmx;
using lmx::test::split_args;
using lmx::test::wait_exit;
using lmx::test::wait_for_lines;
namespace fs = std::filesystem;

TEST_CASE("lmx sweep --resume keeps finished runs and resumes the interrupted one", "[resume][sweep][cli][signal]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0]\nset: {train.eval_every: 0, data.train_docs: 100, data.val_docs: 20, "
                                      "data.test_docs: 20, train.batch_size: 8}\n"
                                      "points:\n  short: {train.steps: 4}\n  long: {train.steps: 300}\n"
                                      "  third: {train.steps: 3}\n");
  const std::string out = dir.file("out");
  const pid_t pid = spawn_lmx({"-q", "--threads", "1", "sweep", spec, "--jobs", "1", "--out", out}, dir.file("sweep.log"));
  REQUIRE(wait_for_lines(out + "/runs/001-long-s0/seed0/metrics.csv", 4, pid));
  // A second sweep on the running one's folder (or a train on its running run) is refused,
  // naming the holder: the sweep and its run are frozen through both commands.
  lmx::test::freeze(pid);
  auto busy = lmx::test::run_lmx("-q sweep '" + spec + "' --resume '" + out + "'");
  CHECK(busy.code == 2);
  CHECK(busy.output.find("in use by another lmx process (pid " + std::to_string(pid) + ")") != std::string::npos);
  auto busy_run = lmx::test::run_lmx("-q train --resume '" + out + "/runs/001-long-s0'");
  CHECK(busy_run.code == 2);
  CHECK(busy_run.output.find("in use by another lmx process (pid ") != std::string::npos);
  kill(pid, SIGINT);  // the sweep forwards it to its running child
  lmx::test::thaw(pid);
  CHECK(wait_exit(pid) == 130);
  INFO(read_file(dir.file("sweep.log")));
  CHECK(read_checkpoint(out + "/runs/001-long-s0/seed0/model.safetensors").metadata.at("status") == "interrupted");
  CHECK_FALSE(fs::exists(out + "/runs/002-third-s0"));
  const auto short_time = fs::last_write_time(out + "/runs/000-short-s0/seed0/model.safetensors");

  // A changed spec is refused.
  const std::string text = read_file(spec);
  auto changed = dir.write("changed.yaml", std::string(text).replace(text.find("steps: 300"), 10, "steps: 299"));
  auto bad = lmx::test::run_lmx("-q sweep '" + changed + "' --resume '" + out + "'");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("differs") != std::string::npos);

  // Other seeds would drop the finished runs: refused.
  auto seeds = lmx::test::run_lmx("-q sweep '" + spec + "' --seeds 1 --resume '" + out + "'");
  INFO(seeds.output);
  CHECK(seeds.code == 2);
  CHECK(seeds.output.find("seeds [0]") != std::string::npos);
  CHECK(fs::exists(out + "/runs/000-short-s0"));

  auto r = lmx::test::run_lmx("--threads 1 sweep '" + spec + "' --resume '" + out + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("1 finished run(s) kept, 1 continued") != std::string::npos);
  CHECK(fs::last_write_time(out + "/runs/000-short-s0/seed0/model.safetensors") == short_time);
  Table t = read_csv(out + "/summary.csv");
  int ok = 0;
  for (const auto& row : t.rows) ok += row[2] == "ok";
  CHECK(ok == 3);
  CHECK(lines(out + "/runs/001-long-s0/seed0/metrics.csv") == 301);
}

TEST_CASE("lmx ablate --resume continues an interrupted ablation", "[resume][sweep][cli][signal]") {
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string common =
      "--one-at-a-time --order norm --jobs 1 --set train.steps=300 --set train.eval_every=0 --set data.train_docs=100 "
      "--set data.val_docs=20 --set data.test_docs=20 --set train.batch_size=8";
  auto args = split_args("-q --threads 1 ablate " + common);
  args.insert(args.end(), {"--out", out});
  const pid_t pid = spawn_lmx(args, dir.file("ablate.log"));
  REQUIRE(wait_for_lines(out + "/runs/000-0_original-s0/seed0/metrics.csv", 4, pid));
  kill(pid, SIGINT);
  CHECK(wait_exit(pid) == 130);
  INFO(read_file(dir.file("ablate.log")));
  CHECK(read_file(dir.file("ablate.log")).find("--resume") != std::string::npos);

  auto r = lmx::test::run_lmx("--threads 1 ablate " + common + " --resume '" + out + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("0 finished run(s) kept, 1 continued") != std::string::npos);
  CHECK(lines(out + "/runs/000-0_original-s0/seed0/metrics.csv") == 301);
  Table t = read_csv(out + "/ablation.csv");
  REQUIRE(t.rows.size() == 2);
  for (const auto& row : t.rows) CHECK(row.back() == "1");  // one finished seed per step

  // Not an ablation directory: refused before any work.
  auto bad = lmx::test::run_lmx("-q ablate " + common + " --resume '" + dir.path.string() + "'");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("no runs/") != std::string::npos);
}
