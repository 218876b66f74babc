// Data-parallel training (c10d Gloo over loopback), launcher environments, dead workers,
// sharded sweeps and their merge.
#include "catch.h"
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "distributed/dist.h"
#include "experiments/sweep.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "kernels/torch_runtime.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/runtime.h"

using namespace lmx;
using lmx::test::run_lmx;
using lmx::test::TempDir;
namespace fs = std::filesystem;

namespace {

dist::GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// Sets environment variables for the lifetime of the object (children inherit them).
struct ScopedEnv {
  std::vector<std::string> names;
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto& [k, v] : vars) {
      setenv(k, v, 1);
      names.push_back(k);
    }
  }
  ~ScopedEnv() {
    for (auto& n : names) unsetenv(n.c_str());
  }
};

// A tiny but real training run: 2 layers, batch 8 (4 rows per rank), a few steps.
const std::string kSmallRun =
    "--set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.batch_size=8 "
    "--set train.steps=12 --set train.eval_every=6 --set train.warmup_steps=3 --set model.n_layers=2 "
    "--set model.d_model=32 --set model.d_ff=64";

double cell(const Table& t, size_t row, const std::string& col) {
  const int c = column(t, col);
  REQUIRE(c >= 0);
  REQUIRE(row < t.rows.size());
  return t.rows[row][c].empty() ? std::nan("") : std::stod(t.rows[row][c]);
}

void check_close(double a, double b, double rel, const std::string& what) {
  INFO(what << ": " << a << " vs " << b);
  if (std::isnan(a) || std::isnan(b)) {
    CHECK(std::isnan(a) == std::isnan(b));
    return;
  }
  CHECK(std::abs(a - b) <= rel * std::max(1.0, std::abs(b)));
}

}  // namespace

TEST_CASE("the backend: NCCL for cuda where built, else Gloo, and refusals that name the variable", "[dist]") {
  const auto built = dist::backends();
  const auto has = [&](const char* b) { return std::find(built.begin(), built.end(), b) != built.end(); };
  CHECK(has("gloo"));  // this build (Debian's LibTorch, libgloo-dev)
  CHECK(dist::choose_backend(DeviceKind::Cpu, nullptr) == "gloo");
  CHECK(dist::choose_backend(DeviceKind::Cpu, "") == "gloo");
  CHECK(dist::choose_backend(DeviceKind::Cpu, "gloo") == "gloo");
  CHECK(dist::choose_backend(DeviceKind::Cuda, nullptr) == (has("nccl") ? "nccl" : "gloo"));
  CHECK(dist::choose_backend(DeviceKind::Cuda, "gloo") == "gloo");
  CHECK(dist::choose_backend(DeviceKind::Cuda, nullptr, /*gpu_per_rank=*/false) == "gloo");  // NCCL: one rank per GPU
  CHECK_THROWS_WITH(dist::choose_backend(DeviceKind::Cpu, "mpi"), Catch::Contains("LMX_DIST_BACKEND=mpi: expected gloo or nccl"));
  if (has("nccl")) {
    CHECK(dist::choose_backend(DeviceKind::Cuda, "nccl") == "nccl");
    CHECK_THROWS_WITH(dist::choose_backend(DeviceKind::Cpu, "nccl"), Catch::Contains("needs train.device cuda"));
  } else {
    CHECK_THROWS_WITH(dist::choose_backend(DeviceKind::Cuda, "nccl"), Catch::Contains("built without it (built: gloo)"));
  }
  // Each rank's device: the CPU whatever the local rank; cuda is refused without CUDA.
  CHECK(torch_runtime::make_device(DeviceKind::Cpu, 3) == torch::Device(torch::kCPU));
  if (!torch::cuda::is_available()) {
    CHECK_THROWS_AS(torch_runtime::make_device(DeviceKind::Cuda, 0), InputError);
  } else {
    const auto gpus = static_cast<int>(torch::cuda::device_count());
    CHECK(torch_runtime::make_device(DeviceKind::Cuda, gpus + 1).index() == (gpus + 1) % gpus);
  }
  CHECK_THROWS_AS(parse_option<DeviceKind>("tpu"), InputError);  // the config key (the --device flag: test_config)
}

TEST_CASE("launcher environments: torchrun, Slurm, none", "[dist]") {
  auto e = dist::read_env(env_of({}));
  CHECK(e.world == 1);
  CHECK(e.launcher.empty());

  e = dist::read_env(env_of({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.5"},
                             {"MASTER_PORT", "29600"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  CHECK(e.rank == 1);
  CHECK(e.world == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "10.0.0.5");
  CHECK(e.master_port == 29600);
  CHECK(e.agent_store);
  CHECK(e.launcher == "env");

  e = dist::read_env(env_of({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_LOCALID", "1"},
                             {"SLURM_JOB_NODELIST", "gpu[07-10,12],cpu1"}, {"SLURM_JOB_ID", "123456"}}));
  CHECK(e.rank == 3);
  CHECK(e.world == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "gpu07");
  CHECK(e.master_port == 20000 + 123456 % 20000);
  CHECK(e.launcher == "slurm");
  // A one-task Slurm step (a sweep shard in a job array) is one process; so is a batch script
  // or an salloc shell (no srun step: SLURM_NTASKS is the allocation's, not this process's).
  CHECK(dist::read_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}})).world == 1);
  CHECK(dist::read_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})).world == 1);
  CHECK(dist::read_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                               {"LMX_DIST", "0"}}))
            .world == 1);

  CHECK(dist::slurm_first_host("node01") == "node01");
  CHECK(dist::slurm_first_host("a,b") == "a");
  CHECK(dist::slurm_first_host("node[3-5]") == "node3");
  CHECK(dist::slurm_first_host("node[03,9],x[1-2]") == "node03");

  CHECK_THROWS_WITH(dist::read_env(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}})), Catch::Contains("RANK=2"));
  CHECK_THROWS_WITH(dist::read_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}})), Catch::Contains("MASTER_ADDR"));
  CHECK_THROWS_WITH(dist::read_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})),
                    Catch::Contains("MASTER_PORT"));
  CHECK_THROWS_WITH(dist::read_env(env_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}})), Catch::Contains("RANK=x"));
  CHECK_THROWS_WITH(dist::read_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}})),
                    Catch::Contains("SLURM_JOB_NODELIST"));
}

TEST_CASE("two data-parallel processes give the metrics of one process with the same global batch", "[dist]") {
  TempDir dir;
  const std::string one = dir.file("one"), two = dir.file("two");
  auto r1 = run_lmx("-q --threads 1 train configs/textbook.yaml --seeds 3 " + kSmallRun + " --out " + one);
  INFO(r1.output);
  REQUIRE(r1.code == 0);
  auto r2 = run_lmx("-q --threads 1 launch --nproc 2 -- train configs/textbook.yaml --seeds 3 " + kSmallRun +
                    " --out " + two);
  INFO(r2.output);
  REQUIRE(r2.code == 0);
  Table m1 = read_csv(one + "/seed3/metrics.csv"), m2 = read_csv(two + "/seed3/metrics.csv");
  REQUIRE(m1.rows.size() == 12);
  REQUIRE(m2.rows.size() == 12);
  for (size_t i = 0; i < m1.rows.size(); ++i) {
    check_close(cell(m1, i, "train_loss"), cell(m2, i, "train_loss"), 1e-4, "train_loss step " + std::to_string(i + 1));
    check_close(cell(m1, i, "grad_norm"), cell(m2, i, "grad_norm"), 1e-3, "grad_norm step " + std::to_string(i + 1));
    check_close(cell(m1, i, "val_ppl"), cell(m2, i, "val_ppl"), 1e-4, "val_ppl step " + std::to_string(i + 1));
  }
  Table s1 = read_csv(one + "/summary.csv"), s2 = read_csv(two + "/summary.csv");
  for (const char* col : {"params", "steps", "final_train_loss", "test_ppl", "far_pronoun_acc"})
    check_close(cell(s1, 0, col), cell(s2, 0, col), 1e-4, col);
  // Only rank 0 wrote: one seed directory, no stray files of rank 1.
  CHECK(fs::exists(two + "/seed3/model.safetensors"));
  CHECK(fs::exists(two + "/train.json"));
}

TEST_CASE("a dead data-parallel worker ends the others with an error, not a hang", "[dist]") {
  TempDir dir;
  const std::string out = dir.file("dead");
  const auto t0 = std::chrono::steady_clock::now();
  ScopedEnv env{{"LMX_FAULT", "die:1:3"}, {"LMX_DIST_TIMEOUT", "20"}};
  auto r = run_lmx("--threads 1 launch --nproc 2 -- train configs/textbook.yaml --seeds 0 " + kSmallRun +
                   " --set train.steps=200 --out " + out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  CHECK(r.code != 0);
  CHECK(seconds < 90);
  CHECK(r.output.find("rank 0 of 2: gradient all-reduce failed") != std::string::npos);
  CHECK(r.output.find("rank 1 failed") != std::string::npos);
  // Nothing half-written: no final checkpoint, no result, no summary.
  CHECK_FALSE(fs::exists(out + "/seed0/model.safetensors"));
  CHECK_FALSE(fs::exists(out + "/seed0/result.csv"));
  CHECK_FALSE(fs::exists(out + "/summary.csv"));
}

TEST_CASE("an interrupt on one data-parallel rank stops every rank after the same step, and --resume finishes", "[dist]") {
  TempDir dir;
  const std::string full = dir.file("full"), cut = dir.file("cut");
  const std::string train = "-q --threads 1 launch --nproc 2 -- train configs/textbook.yaml --seeds 3 " + kSmallRun;
  auto r = run_lmx(train + " --out " + full);
  INFO(r.output);
  REQUIRE(r.code == 0);
  {
    // Rank 1 alone is interrupted at its step 4 (counted from 0): its flag rides in that step's
    // gradient all-reduce, so both ranks stop after step 5 and rank 0 writes the checkpoint.
    ScopedEnv env{{"LMX_FAULT", "int:1:4"}};
    r = run_lmx(train + " --out " + cut);
  }
  INFO(r.output);
  REQUIRE(r.code == 130);
  CHECK(r.output.find("LMX_FAULT: rank 1 is interrupted at step 4") != std::string::npos);
  CHECK(r.output.find("failed") == std::string::npos);
  Checkpoint ck = read_checkpoint(cut + "/seed3/model.safetensors");
  CHECK(ck.metadata.at("status") == "interrupted");
  CHECK(ck.metadata.at("steps") == "5");
  CHECK(lmx::test::lines(cut + "/seed3/metrics.csv") == 6);  // header + 5 steps
  r = run_lmx("-q --threads 1 launch --nproc 2 -- train --resume " + cut);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(lmx::test::metrics_without_speed(cut + "/seed3/metrics.csv") ==
        lmx::test::metrics_without_speed(full + "/seed3/metrics.csv"));
  Table a = read_csv(full + "/summary.csv"), b = read_csv(cut + "/summary.csv");
  CHECK(cell(a, 0, "test_ppl") == cell(b, 0, "test_ppl"));
}

TEST_CASE("a hung data-parallel worker is detected within LMX_DIST_TIMEOUT", "[dist]") {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  ScopedEnv env{{"LMX_FAULT", "hang:1:2"}, {"LMX_DIST_TIMEOUT", "4"}};
  auto r = run_lmx("--threads 1 launch --nproc 2 -- train configs/textbook.yaml --seeds 0 " + kSmallRun +
                   " --set train.steps=200 --out " + dir.file("hung"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  CHECK(r.code != 0);
  CHECK(seconds < 60);
  CHECK(r.output.find("rank 0 of 2") != std::string::npos);
  CHECK(r.output.find("LMX_DIST_TIMEOUT=4s") != std::string::npos);
}

TEST_CASE("lmx launch and data-parallel misuse give one-line errors", "[dist]") {
  auto r = run_lmx("launch --nproc 2 -- sweep x.yaml");
  CHECK(r.code == 2);
  CHECK(r.output.find("runs `train` only") != std::string::npos);
  {
    ScopedEnv env{{"RANK", "0"}, {"WORLD_SIZE", "2"}};
    r = run_lmx("train configs/textbook.yaml --set train.steps=1");
    CHECK(r.code == 2);
    CHECK(r.output.find("MASTER_ADDR is not set") != std::string::npos);
  }
  {
    // Refused before any rendezvous: no worker waits for a peer.
    ScopedEnv env{{"LMX_DIST_BACKEND", "mpi"}};
    r = run_lmx("-q launch --nproc 2 -- train configs/textbook.yaml --set train.steps=1");
    CHECK(r.code != 0);
    CHECK(r.output.find("LMX_DIST_BACKEND=mpi: expected gloo or nccl") != std::string::npos);
  }
  TempDir dir;
  r = run_lmx("-q --threads 1 launch --nproc 2 -- train configs/textbook.yaml " + kSmallRun +
              " --set train.batch_size=1 --out " + dir.file("b"));
  CHECK(r.code != 0);
  CHECK(r.output.find("smaller than the 2 data-parallel processes") != std::string::npos);
}

TEST_CASE("torchrun --no_python starts lmx train data-parallel", "[dist]") {
  if (!fs::exists("/usr/bin/torchrun")) {
    WARN("skipped: /usr/bin/torchrun is not installed (Debian python3-torch)");
    return;
  }
  TempDir dir;
  const std::string out = dir.file("tr");
  const std::string cmd = "cd '" + std::string(LMX_SOURCE_DIR) +
                          "' && /usr/bin/torchrun --standalone --redirects 9:1 --tee 9:1 --no_python --nproc_per_node 2 '" + LMX_BINARY +
                          "' -q --threads 1 train configs/textbook.yaml --seeds 3 " + kSmallRun + " --out " + out +
                          " 2>&1";
  const auto tr = lmx::test::run_shell(cmd);
  INFO(tr.output);
  REQUIRE(tr.code == 0);
  // The same metrics as lmx launch / one process.
  auto r1 = run_lmx("-q --threads 1 train configs/textbook.yaml --seeds 3 " + kSmallRun + " --out " + dir.file("one"));
  REQUIRE(r1.code == 0);
  Table m = read_csv(out + "/seed3/metrics.csv"), m1 = read_csv(dir.file("one/seed3/metrics.csv"));
  REQUIRE(m.rows.size() == 12);
  for (size_t i = 0; i < m.rows.size(); ++i)
    check_close(cell(m1, i, "train_loss"), cell(m, i, "train_loss"), 1e-4, "train_loss step " + std::to_string(i + 1));
  CHECK(fs::exists(out + "/summary.csv"));
}

TEST_CASE("sweep shard I/N parsing", "[dist][sweep]") {
  CHECK(parse_shard("0/1") == std::pair<int, int>{0, 1});
  CHECK(parse_shard("3/4") == std::pair<int, int>{3, 4});
  for (const char* bad : {"4/4", "-1/2", "1/0", "1", "a/b", "1/2x"}) CHECK_THROWS_AS(parse_shard(bad), InputError);
}

TEST_CASE("sharded sweeps merge into the summary of one sweep", "[dist][sweep]") {
  TempDir dir;
  dir.write("base.yaml",
            "extends: " + std::string(LMX_SOURCE_DIR) +
                "/configs/textbook.yaml\nmodel: {n_layers: 1, d_model: 32, d_ff: 64}\n"
                "data: {train_docs: 100, val_docs: 20, test_docs: 20}\n"
                "train: {steps: 4, batch_size: 8, warmup_steps: 1, eval_every: 4}\n");
  const std::string spec = dir.write("spec.yaml",
                                     "base: base.yaml\nseeds: [0, 1]\n"
                                     "points:\n  relu: {model.ffn: relu}\n  gelu: {model.ffn: gelu}\n"
                                     "  swiglu: {model.ffn: swiglu}\n");
  auto whole = run_lmx("-q --threads 1 sweep " + spec + " --out " + dir.file("whole"));
  INFO(whole.output);
  REQUIRE(whole.code == 0);
  for (int i = 0; i < 2; ++i) {
    auto r = run_lmx("-q --threads 1 sweep " + spec + " --shard " + std::to_string(i) + "/2 --out " +
                     dir.file("shard" + std::to_string(i)));
    INFO(r.output);
    REQUIRE(r.code == 0);
  }
  // Each shard ran its share only: runs 0, 2, 4 and 1, 3, 5 of 6.
  size_t n0 = 0, n1 = 0;
  for (auto& e : fs::directory_iterator(dir.file("shard0/runs"))) n0 += e.is_directory();
  for (auto& e : fs::directory_iterator(dir.file("shard1/runs"))) n1 += e.is_directory();
  CHECK(n0 == 3);
  CHECK(n1 == 3);
  CHECK(fs::exists(dir.file("shard0/runs/000-relu-s0")));
  CHECK(fs::exists(dir.file("shard1/runs/000-relu-s1")));

  // Missing and repeated shards are refused.
  auto bad = run_lmx("sweep --merge " + dir.file("shard0") + " --out " + dir.file("bad"));
  CHECK(bad.code == 2);
  CHECK(bad.output.find("shard 1/2 is missing") != std::string::npos);
  bad = run_lmx("sweep --merge " + dir.file("shard0") + " " + dir.file("shard0") + " --out " + dir.file("bad2"));
  CHECK(bad.code == 2);
  CHECK(bad.output.find("given twice") != std::string::npos);

  auto merged = run_lmx("-q sweep --merge " + dir.file("shard1") + " " + dir.file("shard0") + " --out " +
                        dir.file("merged"));
  INFO(merged.output);
  REQUIRE(merged.code == 0);
  Table a = read_csv(dir.file("whole/summary.csv")), b = read_csv(dir.file("merged/summary.csv"));
  REQUIRE(a.header == b.header);
  REQUIRE(a.rows.size() == b.rows.size());
  REQUIRE(a.rows.size() == 6 + 3 * 6);  // 6 runs, then mean/std/min/max/ci95_lo/ci95_hi per point
  for (size_t i = 0; i < a.rows.size(); ++i)
    for (size_t c = 0; c < a.header.size(); ++c) {
      const std::string& h = a.header[c];
      if (h == "wall_s" || h == "tokens_per_s" || h == "peak_rss_mib") continue;  // timing, not results
      INFO("row " << i << " column " << h);
      CHECK(a.rows[i][c] == b.rows[i][c]);
    }
}

TEST_CASE("device cuda trains to the CPU metrics (skipped without CUDA)", "[dist][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA tests skipped: this LibTorch build has no CUDA or no GPU is visible "
         "(rebuild against a CUDA LibTorch, see docs/USAGE.md, Building); checking the error instead");
    auto r = run_lmx("--device cuda train configs/textbook.yaml --set train.steps=1");
    CHECK(r.code == 2);
    CHECK(r.output.find("--device cuda: this LibTorch build has no CUDA") != std::string::npos);
    r = run_lmx("train configs/textbook.yaml --set train.device=cuda --set train.steps=1");
    CHECK(r.code == 2);
    CHECK(r.output.find("this LibTorch build has no CUDA") != std::string::npos);
    return;
  }
  TempDir dir;
  auto cpu = run_lmx("-q --threads 1 train configs/textbook.yaml --seeds 3 " + kSmallRun + " --out " + dir.file("cpu"));
  REQUIRE(cpu.code == 0);
  auto gpu = run_lmx("-q --device cuda train configs/textbook.yaml --seeds 3 " + kSmallRun + " --out " + dir.file("gpu"));
  INFO(gpu.output);
  REQUIRE(gpu.code == 0);
  Table a = read_csv(dir.file("cpu/seed3/metrics.csv")), b = read_csv(dir.file("gpu/seed3/metrics.csv"));
  REQUIRE(a.rows.size() == b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i)
    check_close(cell(a, i, "train_loss"), cell(b, i, "train_loss"), 1e-3, "train_loss step " + std::to_string(i + 1));
  // Two data-parallel CUDA processes: NCCL where each has a GPU of its own, else Gloo; both
  // backends where the build and the GPUs allow.
  std::vector<std::string> backends{""};
  for (const auto& b : dist::backends())
    if (b == "gloo" || torch::cuda::device_count() >= 2) backends.push_back(b);
  for (const auto& b : backends) {
    INFO("LMX_DIST_BACKEND=" << b);
    ScopedEnv env{{"LMX_DIST_BACKEND", b.c_str()}};
    const std::string out = dir.file("dp" + b);
    auto dp = run_lmx("-q --device cuda launch --nproc 2 -- train configs/textbook.yaml --seeds 3 " + kSmallRun +
                      " --out " + out);
    INFO(dp.output);
    REQUIRE(dp.code == 0);
    Table c = read_csv(out + "/seed3/metrics.csv");
    REQUIRE(c.rows.size() == a.rows.size());
    for (size_t i = 0; i < a.rows.size(); ++i)
      check_close(cell(a, i, "train_loss"), cell(c, i, "train_loss"), 1e-3, "train_loss step " + std::to_string(i + 1));
  }
}
