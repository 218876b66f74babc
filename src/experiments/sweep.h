// Running a grid of configs × seeds: each run is a child `lmx train` process in its own
// numbered directory (so runs can go in parallel without sharing thread pools), then one
// combined summary.csv / summary.md with mean ± std per grid point.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "experiments/spec.h"
#include "train/run_plan.h"
#include "util/csv.h"
#include "util/fork_server.h"

namespace lmx {

struct SweepOptions {
  std::string out;        // results directory (fresh)
  int jobs = 1;           // runs at once
  int threads = 0;        // per run; 0 = cores / jobs
  bool quiet = false;
  bool resume = false;    // out holds an interrupted sweep of the same spec: skip finished runs,
                          // resume interrupted ones (lmx train --resume), start the others
  std::string spec{};     // the spec's path (recorded in shard.json)
  int shard = 0;          // run only the runs k (grid point-major, seed-minor) with k % shards == shard
  int shards = 1;
  // A child `lmx train`'s command line after the program name (the CLI spells its flags:
  // cli/app.h, train_child_args).
  std::function<std::vector<std::string>(const TrainChild&)> child_args{};
};

struct SweepResult {
  Table seeds;            // per-seed rows of every run, in run order (grid point, then seed)
  int failed = 0;         // runs whose process failed (not diverged: those are results)
  bool interrupted = false;
  int skipped = 0;        // finished runs kept (resume)
  int resumed = 0;        // interrupted runs continued (resume)
};

// "I/N" -> {I, N} with 0 <= I < N; InputError otherwise.
std::pair<int, int> parse_shard(const std::string& text);

// The run directories' name: NNN-<point>-s<seed> (NNN = the grid point's index).
std::string run_id(size_t point_index, const std::string& point_name, uint64_t seed);

// Combines the output directories of `lmx sweep --shard I/N` (every I once) into the per-seed
// table a single sweep of the same spec writes, in run order. InputError when a shard is
// missing or repeated, the shards are of different sweeps, or a run has no summary.
// *spec (when given) receives the spec's path.
Table merge_shards(const std::vector<std::string>& dirs, std::string* spec = nullptr);

SweepResult run_sweep(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                      const SweepOptions& opt);

// Spawns this binary with args in its own process group (a terminal's Ctrl-C reaches only
// the parent, which forwards it once: see util/signals) and registers it with util/signals.
// stdout and stderr go to log_path (appended when append; empty: inherited); env adds or
// replaces "KEY=VALUE" entries of this process's environment. Returns the child's pid. With a
// fork server (util/fork_server.h), the child is forked by it rather than exec'd (exec when
// the server cannot).
int spawn_self(const std::vector<std::string>& args, const std::string& log_path, bool append = false,
               const std::vector<std::string>& env = {}, fork_server::Client* server = nullptr);

// A waitpid status as an exit code: the child's code, or 128 + the signal that ended it.
int exit_code(int wstatus);

}  // namespace lmx
