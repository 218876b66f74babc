// summary.csv: one row per seed plus aggregate rows (mean, std, min, max over the seeds
// that finished), and the short Markdown table printed at the end of `lmx train`.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"
#include "train/trainer.h"
#include "util/csv.h"

namespace lmx {

struct SummaryRow {
  std::string name;   // config / grid point
  Config config;      // resolved
  RunResult run;
};

// The per-seed rows and the aggregate rows, as a CSV table.
Table summary_table(const std::vector<SummaryRow>& rows);

// The Markdown table for stdout: one line per seed, then mean ± std.
std::string summary_markdown(const std::vector<SummaryRow>& rows);

// mean ± sample std of the finite values ("" when none).
struct Stats {
  int n = 0;
  double mean = 0, std = 0, min = 0, max = 0;
};
Stats stats(const std::vector<double>& values);

}  // namespace lmx
