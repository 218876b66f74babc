// lmx compare A B [--metric test_ppl]: a verdict with statistics between two sets of runs.
// A side is a run or sweep folder (its summary.csv) or a summary.csv itself, optionally
// followed by :NAME to pick one config / grid point. Prints each seed's value, the mean
// difference A − B, its 95% bootstrap interval (paired by seed when both sides hold the same
// seeds) and a sign count; --csv writes the same as one row, for scripts (scripts/lecture/report.sh).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/app.h"
#include "train/bootstrap.h"
#include "train/summary.h"
#include "util/csv.h"
#include "util/error.h"

namespace lmx::cli {

struct CompareOptions {
  std::string a, b;
  std::string metric = "test_ppl";
  std::string csv;
};

namespace {

struct Side {
  std::string label;  // as given
  SeedValues values;
};

// "PATH[:NAME]": PATH is a summary.csv or a folder holding one.
Side read_side(const std::string& spec, const std::string& metric) {
  namespace fs = std::filesystem;
  std::string path = spec, name;
  if (!fs::exists(path)) {
    const size_t colon = spec.rfind(':');
    if (colon != std::string::npos) path = spec.substr(0, colon), name = spec.substr(colon + 1);
  }
  if (fs::is_directory(path)) path = (fs::path(path) / "summary.csv").string();
  if (!fs::exists(path))
    throw InputError(fmt::format("{}: no summary.csv there", spec), "give a run or sweep folder, or its summary.csv");
  const Table t = read_seed_rows(path);
  const int col = column(t, metric), status = column(t, "status");
  if (col < 0) throw InputError(fmt::format("{}: no column '{}'", path, metric), "see the header of summary.csv");
  std::vector<std::string> names;
  for (const auto& r : t.rows)
    if (std::find(names.begin(), names.end(), r[0]) == names.end()) names.push_back(r[0]);
  if (name.empty() && names.size() == 1) name = names[0];
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError(fmt::format("{}: {} (points: {})", path, name.empty() ? "holds several points, name one"
                                                                           : "no point named '" + name + "'",
                                 fmt::join(names, ", ")),
                     fmt::format("e.g. {}:{}", path, names.empty() ? "NAME" : names[0]));
  Side side{spec, {}};
  for (const auto& r : t.rows) {
    if (r[0] != name || r[status] != "ok" || r[col].empty()) continue;
    const double v = std::strtod(r[col].c_str(), nullptr);
    if (!std::isfinite(v)) continue;
    side.values.seeds.push_back(std::stoull(r[1]));
    side.values.values.push_back(v);
  }
  if (side.values.values.empty()) throw InputError(fmt::format("{}:{}: no finished seed with a {}", path, name, metric));
  return side;
}

std::string seed_value(const SeedValues& s, uint64_t seed) {
  for (size_t i = 0; i < s.seeds.size(); ++i)
    if (s.seeds[i] == seed) return fmt::format("{:.4f}", s.values[i]);
  return "";
}

}  // namespace

int run_compare(const CompareOptions& a, const Globals&) {
  const Side A = read_side(a.a, a.metric), B = read_side(a.b, a.metric);
  const Comparison c = compare_values(A.values, B.values);
  std::vector<uint64_t> seeds = A.values.seeds;
  for (uint64_t s : B.values.seeds)
    if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
  std::sort(seeds.begin(), seeds.end());
  Table t{{"seed", "A", "B"}, {}};
  for (uint64_t s : seeds) t.add({std::to_string(s), seed_value(A.values, s), seed_value(B.values, s)});
  std::cout << fmt::format("{}: A = {}, B = {}\n\n{}\n", a.metric, A.label, B.label, t.markdown());
  std::cout << fmt::format("mean A {:.4f} (n {}), mean B {:.4f} (n {})\n", c.mean_a, A.values.values.size(), c.mean_b,
                           B.values.values.size());
  if (std::isnan(c.ci.lo))
    std::cout << fmt::format("A − B: {:+.4f}, no interval (one seed on a side)\n", c.diff);
  else
    std::cout << fmt::format("A − B: {:+.4f}, 95% bootstrap interval [{:+.4f}, {:+.4f}] ({}, {} resamples)\n", c.diff,
                             c.ci.lo, c.ci.hi, c.paired ? "paired by seed" : "unpaired", kBootstrapResamples);
  std::cout << fmt::format("sign: A lower in {} of {} {}, higher in {}, equal in {}\n", c.a_lower, c.pairs,
                           c.paired ? "seeds" : "pairs", c.a_higher, c.equal);
  if (!a.csv.empty()) {
    Table row{{"metric", "n_a", "n_b", "paired", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi", "a_lower", "a_higher",
               "equal", "pairs"}, {}};
    row.add({a.metric, std::to_string(A.values.values.size()), std::to_string(B.values.values.size()),
             c.paired ? "1" : "0", csv_num(c.mean_a, 6), csv_num(c.mean_b, 6), csv_num(c.diff, 6), csv_num(c.ci.lo, 6),
             csv_num(c.ci.hi, 6), std::to_string(c.a_lower), std::to_string(c.a_higher), std::to_string(c.equal),
             std::to_string(c.pairs)});
    write_file_atomic(a.csv, row.csv());
  }
  return 0;
}

void add_compare_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("compare", "Two sets of runs: per-seed values, mean difference, 95% bootstrap interval");
  auto o = std::make_shared<CompareOptions>();
  cmd->add_option("A", o->a, "run or sweep folder, or summary.csv; :NAME picks a point")->required();
  cmd->add_option("B", o->b, "the same for the other side")->required();
  cmd->add_option("--metric", o->metric, "summary.csv column to compare (default test_ppl)");
  cmd->add_option("--csv", o->csv, "also write the result as one CSV row to this file");
  on_run(cmd, g, o, run_compare);
}

}  // namespace lmx::cli
