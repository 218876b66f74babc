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

namespace {

// summary.csv (seed rows + aggregates) and summary.md in out; the Markdown also to stdout.
void write_summary(const std::string& out, const Table& seeds) {
  write_file_atomic((std::filesystem::path(out) / "summary.csv").string(), with_aggregates(seeds).csv());
  const std::string md = summary_markdown(seeds);
  write_file_atomic((std::filesystem::path(out) / "summary.md").string(), md);
  std::cout << md;
}

}  // namespace

void add_sweep_command(CLI::App& app, Globals& g) {
  struct Args {
    std::string spec, seeds;
    std::vector<std::string> sets;
    int jobs = 1;
    bool quick = false;
    std::string resume;
    std::string shard;
    std::vector<std::string> merge;
  };
  auto a = std::make_shared<Args>();
  auto* sweep = app.add_subcommand("sweep", "Run an experiment spec's grid × seeds; one summary with mean ± std per point");
  sweep->add_option("spec", a->spec, "experiment spec (experiments/*.yaml)");
  sweep->add_option("--set", a->sets, "override: key=value, or a grid axis key=a,b,c (repeatable)");
  sweep->add_option("--seeds", a->seeds, "comma-separated seeds (replaces the spec's)");
  sweep->add_option("--jobs", a->jobs, "runs at once (each gets cores/jobs threads unless --threads)")->check(Positive);
  sweep->add_option("--resume", a->resume,
                    "continue the interrupted sweep in this directory: finished runs are kept, interrupted ones resumed");
  sweep->add_flag("--quick", a->quick, "the spec's quick overrides and its first seed only (smoke test)");
  sweep->add_option("--shard", a->shard,
                    "I/N: run only runs k (grid point-major, seed-minor) with k % N == I; merge with --merge");
  sweep->add_option("--merge", a->merge,
                    "combine the output directories of every --shard I/N into one summary (no SPEC)")
      ->expected(1, -1);
  sweep->callback([&g, a] {
    g.run = [&g, a] {
      if (!a->merge.empty()) {
        if (!a->spec.empty() || !a->shard.empty() || !a->resume.empty())
          throw InputError("--merge takes only the shards' directories (and --out)",
                           "lmx sweep --merge runs/01_ffn/shard0 runs/01_ffn/shard1 [--out DIR]");
        std::string spec_path;
        Table seeds = merge_shards(a->merge, &spec_path);
        const std::string out =
            g.out.empty() ? default_out_dir(fs::path(spec_path).stem().string() + "-merged") : g.out;
        prepare_out_dir(out);
        std::string sources;
        for (const auto& d : a->merge) sources += d + "\n";
        write_file_atomic((fs::path(out) / "shards.txt").string(), sources);
        write_summary(out, seeds);
        log::info("sweep", "{} shards merged into {}", a->merge.size(), out);
        return 0;
      }
      if (a->spec.empty()) throw InputError("sweep needs a spec (or --merge DIR...)", "lmx sweep experiments/01_ffn.yaml");
      const auto [shard, shards] = a->shard.empty() ? std::pair<int, int>{0, 1} : parse_shard(a->shard);
      ExperimentSpec spec = load_spec(a->spec);
      add_cli_sets(spec, a->sets);
      if (!a->seeds.empty()) spec.seeds = parse_seeds(a->seeds);
      if (a->quick) spec.seeds.resize(1);
      const auto points = expand(spec, a->quick);  // every config validated before any run
      const bool resume = !a->resume.empty();
      const std::string out = sweep_out_dir(a->resume, g.out, fs::path(a->spec).stem().string());
      signals::install();
      SweepOptions so{out, a->jobs, g.threads, g.quiet};
      so.resume = resume;
      so.spec = a->spec;
      so.shard = shard;
      so.shards = shards;
      SweepResult r = run_sweep(points, spec.seeds, so);
      if (resume) log::info("sweep", "resume: {} finished run(s) kept, {} continued", r.skipped, r.resumed);
      if (!r.seeds.header.empty()) write_summary(out, r.seeds);
      log::info("sweep", "results in {}", out);
      if (r.interrupted) {
        log::warn("sweep", "interrupted: continue with  lmx sweep {} --resume {}", a->spec, out);
        return 130;
      }
      if (r.failed) {
        log::warn("sweep", "{} run(s) failed; their logs are under {}/logs", r.failed, out);
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace lmx::cli
