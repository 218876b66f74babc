// lmx sweep SPEC: a grid of configs × seeds, one combined summary.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/app.h"
#include "cli/common.h"
#include "experiments/spec.h"
#include "experiments/sweep.h"
#include "train/summary.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx::cli {

struct SweepVerbOptions {
  std::string spec, seeds;
  std::vector<std::string> sets;
  int jobs = 1;
  bool quick = false;
  std::string resume;
  std::string shard;
  std::vector<std::string> merge;
};

namespace {

// --merge DIR...: the shards' runs as one sweep's summary.
int merge_sweep(const SweepVerbOptions& o, const Globals& g) {
  if (!o.spec.empty() || !o.shard.empty() || !o.resume.empty())
    throw InputError("--merge takes only the shards' directories (and --out)",
                     "lmx sweep --merge runs/01_ffn/shard0 runs/01_ffn/shard1 [--out DIR]");
  std::string spec_path;
  Table seeds = merge_shards(o.merge, &spec_path);
  const std::string out = g.out.empty() ? default_out_dir(fs::path(spec_path).stem().string() + "-merged") : g.out;
  prepare_out_dir(out);
  std::string sources;
  for (const auto& d : o.merge) sources += d + "\n";
  write_file_atomic((fs::path(out) / "shards.txt").string(), sources);
  write_summary(out, seeds);
  log::info("sweep", "{} shards merged into {}", o.merge.size(), out);
  return 0;
}

}  // namespace

int run_sweep_verb(const SweepVerbOptions& o, const Globals& g) {
  if (!o.merge.empty()) return merge_sweep(o, g);
  if (o.spec.empty()) throw InputError("sweep needs a spec (or --merge DIR...)", "lmx sweep experiments/01_ffn.yaml");
  const auto [shard, shards] = o.shard.empty() ? std::pair<int, int>{0, 1} : parse_shard(o.shard);
  ExperimentSpec spec = load_spec(o.spec);
  add_cli_sets(spec, o.sets);
  if (!o.seeds.empty()) spec.seeds = parse_seeds(o.seeds);
  if (o.quick) spec.seeds.resize(1);
  const auto points = expand(spec, o.quick);  // every config validated before any run
  const bool resume = !o.resume.empty();
  const std::string out = sweep_out_dir(o.resume, g.out, fs::path(o.spec).stem().string());
  signals::install();
  SweepOptions so{out, o.jobs, g.threads, g.quiet};
  so.child_args = train_child_args;
  so.resume = resume;
  so.spec = o.spec;
  so.shard = shard;
  so.shards = shards;
  SweepResult r = run_sweep(points, spec.seeds, so);
  if (resume) log::info("sweep", "resume: {} finished run(s) kept, {} continued", r.skipped, r.resumed);
  if (!r.seeds.header.empty()) write_summary(out, r.seeds);
  log::info("sweep", "results in {} (figures: lmx plot {})", out, out);
  if (r.interrupted) {
    log::warn("sweep", "interrupted: continue with  lmx sweep {} --resume {}", o.spec, out);
    return 130;
  }
  if (r.failed) {
    log::warn("sweep", "{} run(s) failed; their logs are under {}/logs", r.failed, out);
    return 1;
  }
  return 0;
}

void add_sweep_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<SweepVerbOptions>();
  auto* cmd = app.add_subcommand("sweep", "Run an experiment spec's grid × seeds; one summary with mean ± std per point");
  cmd->add_option("spec", o->spec, "experiment spec (experiments/*.yaml)");
  add_set_option(cmd, o->sets, "override: key=value, or a grid axis key=a,b,c (repeatable)");
  add_seeds_option(cmd, o->seeds, "comma-separated seeds (replaces the spec's)");
  cmd->add_option("--jobs", o->jobs, "runs at once (each gets cores/jobs threads unless --threads)")->check(Positive);
  cmd->add_option("--resume", o->resume,
                  "continue the interrupted sweep in this directory: finished runs are kept, interrupted ones resumed");
  cmd->add_flag("--quick", o->quick, "the spec's quick overrides and its first seed only (smoke test)");
  cmd->add_option("--shard", o->shard,
                  "I/N: run only runs k (grid point-major, seed-minor) with k % N == I; merge with --merge");
  cmd->add_option("--merge", o->merge,
                  "combine the output directories of every --shard I/N into one summary (no SPEC)")
      ->expected(1, -1);
  on_run(cmd, g, o, run_sweep_verb);
}

}  // namespace lmx::cli
