// Running a grid of configs × seeds: each run is a child `lmx train` process in its own
// numbered directory (so runs can go in parallel without sharing thread pools), then one
// combined summary.csv / summary.md with mean ± std per grid point.
#pragma once
#include <string>
#include <vector>

#include "experiments/spec.h"
#include "util/csv.h"

namespace lmx {

struct SweepOptions {
  std::string out;        // results directory (fresh)
  int jobs = 1;           // runs at once
  int threads = 0;        // per run; 0 = cores / jobs
  bool quiet = false;
};

struct SweepResult {
  Table seeds;            // per-seed rows of every run
  int failed = 0;         // runs whose process failed (not diverged: those are results)
  bool interrupted = false;
};

SweepResult run_sweep(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                      const SweepOptions& opt);

// Spawns this binary with args; stdout and stderr go to log_path. Returns the child's pid.
int spawn_self(const std::vector<std::string>& args, const std::string& log_path);

}  // namespace lmx
