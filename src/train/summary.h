// summary.csv: one row per seed (per grid point) plus aggregate rows (mean, std, min, max
// over the seeds that finished), and the short Markdown table printed at the end.
// Aggregation works on the per-seed table itself, so `train`, `sweep` (whose runs may be
// separate processes) and merged shards all aggregate the same way.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>
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

// The per-seed rows (no aggregates).
Table seed_rows(const std::vector<SummaryRow>& rows);

// Appends from's rows to into's, column by name: a column only one of them has (a corpus's
// metric columns, data/metrics.h) joins the header after the column before it in `from`, and is
// empty in the rows without it.
void add_rows(Table& into, const Table& from);

// Per-seed rows read back from a summary.csv (aggregate rows dropped).
Table read_seed_rows(const std::string& summary_csv);

// True when the table has rows, a status column, and every row's status is one of `allowed`.
bool all_status(const Table& t, std::initializer_list<RunStatus> allowed);

// seed rows + mean / std / min / max rows per name over the rows with status ok.
Table with_aggregates(const Table& seeds);

// The Markdown view: one line per seed, then mean ± std per name with more than one seed.
std::string summary_markdown(const Table& seeds);

struct Stats {
  int n = 0;
  double mean = 0, std = 0, min = 0, max = 0;
};
// Over the finite values; std is the sample standard deviation (0 for one value).
Stats stats(const std::vector<double>& values);

}  // namespace lmx
