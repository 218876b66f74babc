// lmx compare A B [--metric test_ppl] [--margin M] [--looks K] [--csv FILE]: a verdict with statistics
// between two sets of runs. A side is a run or sweep folder (its summary.csv) or a summary.csv
// itself, optionally followed by :NAME to pick one config / grid point. Prints each seed's
// value, the mean difference A − B with its 95% t-interval (paired by seed when both sides hold
// the same seeds, Welch's otherwise), the exact permutation p-value, a sign count, the TOST tie
// test at ±M × |mean B| when --margin is given, the runs that failed, and the verdict
// (train/stats.h); --csv writes the same as one row, for scripts (scripts/lecture/report.sh).
// --looks K: this is one look of a group-sequential plan of at most K (seeds added in rounds
// until decided): every test at 0.05 / K, so that over all K looks a false decision stays ≤ 5%.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <tuple>
#include <utility>

#include "cli/app.h"
#include "train/stats.h"
#include "train/summary.h"
#include "util/csv.h"
#include "util/error.h"

namespace lmx::cli {

struct CompareOptions {
  std::string a, b;
  std::string metric = "test_ppl";
  double margin = std::nan("");  // the tie margin relative to |mean B|; NaN: no tie test
  int looks = 1;                 // the looks of a group-sequential plan: tests at kAlpha / looks
  std::string csv;
};

namespace {

// A run of the point that gave no value: not "ok", or its metric empty, NaN or infinite.
struct FailedRun {
  uint64_t seed;
  std::string why;  // its status, or "no value", "nan", "inf"
};

struct Side {
  std::string label;             // as given
  SeedValues values;             // the finished runs
  std::vector<FailedRun> failed;
};

uint64_t parse_seed(const std::string& cell, const std::string& where) {
  char* end = nullptr;
  const unsigned long long s = std::strtoull(cell.c_str(), &end, 10);
  if (cell.empty() || !end || *end != '\0' || cell[0] == '-')
    throw InputError(fmt::format("{}: seed '{}' is not a number", where, cell), "the seed column holds 0, 1, 2, ...");
  return s;
}

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
  std::error_code ec;
  const bool no_bytes = fs::file_size(path, ec) == 0 && !ec;
  const Table t = no_bytes ? Table{} : read_seed_rows(path);
  if (t.rows.empty())
    throw InputError(fmt::format("{}: is empty (no seed rows)", path),
                     "its runs wrote no result yet: finish or --resume them, or give another summary.csv");
  const int col = column(t, metric), status = column(t, "status");
  if (col < 0) throw InputError(fmt::format("{}: no column '{}'", path, metric), "see the header of summary.csv");
  if (status < 0) throw InputError(fmt::format("{}: no column 'status'", path), "give a summary.csv written by lmx");
  std::vector<std::string> names;
  for (const auto& r : t.rows)
    if (std::find(names.begin(), names.end(), r[0]) == names.end()) names.push_back(r[0]);
  if (name.empty() && names.size() == 1) name = names[0];
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError(fmt::format("{}: {} (points: {})", path, name.empty() ? "holds several points, name one"
                                                                           : "no point named '" + name + "'",
                                 fmt::join(names, ", ")),
                     fmt::format("e.g. {}:{}", path, names[0]));
  Side side{spec, {}, {}};
  std::vector<uint64_t> seen;
  for (const auto& r : t.rows) {
    if (r[0] != name) continue;
    const uint64_t seed = parse_seed(r.size() > 1 ? r[1] : "", fmt::format("{}:{}", path, name));
    if (std::find(seen.begin(), seen.end(), seed) != seen.end())
      throw InputError(fmt::format("{}: seed {} of '{}' appears twice", path, seed, name),
                       "keep one row per seed and point (a shard merged twice?), then compare again");
    seen.push_back(seed);
    const auto cell = [&r](int c) { return c < static_cast<int>(r.size()) ? r[c] : std::string(); };
    const std::string text = cell(col);  // strtod's end points into it
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!is_status(cell(status), RunStatus::Ok)) side.failed.push_back({seed, cell(status).empty() ? "no status" : cell(status)});
    else if (text.empty() || *end != '\0') side.failed.push_back({seed, "no value"});
    else if (!std::isfinite(v)) side.failed.push_back({seed, std::isnan(v) ? "nan" : "inf"});
    else side.values.seeds.push_back(seed), side.values.values.push_back(v);
  }
  return side;
}

// Whether `s` ran this seed (finished or failed).
bool ran_seed(const Side& s, uint64_t seed) {
  const auto& f = s.failed;
  return std::find(s.values.seeds.begin(), s.values.seeds.end(), seed) != s.values.seeds.end() ||
         std::any_of(f.begin(), f.end(), [seed](const FailedRun& r) { return r.seed == seed; });
}

// Whether every seed that finished in `a` ran in `b`.
bool finished_ran_in(const Side& a, const Side& b) {
  return std::all_of(a.values.seeds.begin(), a.values.seeds.end(), [&b](uint64_t s) { return ran_seed(b, s); });
}

// The values the statistics see. When both sides ran the same seeds but some failed, a seed
// that failed on one side leaves the other too, so the rest stay paired by seed.
struct Finished {
  SeedValues a, b;
  std::vector<uint64_t> left_out;  // finished seeds dropped for their partner's failure
};
Finished finished_pairs(const Side& A, const Side& B) {
  if (!finished_ran_in(A, B) || !finished_ran_in(B, A)) return {A.values, B.values, {}};
  Finished f;
  for (auto [side, other, out] : {std::tuple{&A, &B, &f.a}, std::tuple{&B, &A, &f.b}}) {
    for (size_t i = 0; i < side->values.seeds.size(); ++i) {
      const uint64_t seed = side->values.seeds[i];
      const auto& os = other->values.seeds;
      if (std::find(os.begin(), os.end(), seed) == os.end()) {
        f.left_out.push_back(seed);
        continue;
      }
      out->seeds.push_back(seed), out->values.push_back(side->values.values[i]);
    }
  }
  return f;
}

std::string seed_cell(const Side& s, uint64_t seed) {
  for (size_t i = 0; i < s.values.seeds.size(); ++i)
    if (s.values.seeds[i] == seed) return fmt::format("{:.4f}", s.values.values[i]);
  for (const auto& f : s.failed)
    if (f.seed == seed) return f.why;
  return "";
}

std::string failed_list(const Side& s) {
  std::vector<std::string> items;
  for (const auto& f : s.failed) items.push_back(fmt::format("seed {} ({})", f.seed, f.why));
  return fmt::format("{}", fmt::join(items, ", "));
}

// "needs ≥ 8 seeds at the observed difference and spread", or that no number would do.
std::string seeds_needed_text(int n, bool paired) {
  if (n == kNeverEnough) return "no number of seeds would decide it at the observed difference and spread";
  return fmt::format("needs ≥ {} seeds{} at the observed difference and spread", n, paired ? "" : " a side");
}

std::string verdict_text(const Comparison& c, const Verdict& v) {
  if (v.failed > 0) return fmt::format("inconclusive ({} run{} failed)", v.failed, v.failed > 1 ? "s" : "");
  if (std::isnan(c.ci.lo)) return "inconclusive (one seed on a side: no interval)";
  // The t-interval excludes 0 where the permutation test cannot follow: the tests disagree.
  const std::string disagree =
      fmt::format("the t-interval excludes 0, permutation p {:.4g} ≥ {:.4g}: a difference {}", c.perm.p, v.alpha,
                  seeds_needed_text(v.seeds_difference, c.paired));
  if (v.sign != 0)
    return fmt::format("A {} than B (the {:g}% t-interval excludes 0 and permutation p {:.4g} < {:.4g}){}",
                       v.sign > 0 ? "higher" : "lower", 100 * (1 - v.alpha), c.perm.p, v.alpha,
                       v.tie ? fmt::format("; also a tie within ±{:.4g} (TOST p {:.4g})", v.margin, v.tost_p) : "");
  if (v.tie)
    return fmt::format("tie within ±{:.4g} (TOST p {:.4g} < {:.4g}){}", v.margin, v.tost_p, v.alpha,
                       v.t_excludes_zero ? "; but " + disagree : "");
  if (v.t_excludes_zero) return fmt::format("inconclusive ({})", disagree);
  return fmt::format("inconclusive ({})", seeds_needed_text(v.seeds_needed, c.paired));
}

void print_comparison(const CompareOptions& o, const Side& A, const Side& B, const std::vector<uint64_t>& left_out,
                      const Comparison& c, const Verdict& v) {
  std::vector<uint64_t> seeds;
  for (const Side* s : {&A, &B}) {
    for (uint64_t seed : s->values.seeds) seeds.push_back(seed);
    for (const auto& f : s->failed) seeds.push_back(f.seed);
  }
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  Table t{{"seed", "A", "B"}, {}};
  for (uint64_t s : seeds) t.add({std::to_string(s), seed_cell(A, s), seed_cell(B, s)});
  std::cout << fmt::format("{}: A = {}, B = {}\n\n{}\n", o.metric, A.label, B.label, t.markdown());
  std::cout << fmt::format("mean A {:.4f} (n {}), mean B {:.4f} (n {})\n", c.mean_a, c.n_a, c.mean_b, c.n_b);
  if (std::isnan(c.diff)) {
    std::cout << "A − B: none (no finished run on a side)\n";
  } else if (std::isnan(c.ci.lo)) {
    std::cout << fmt::format("A − B: {:+.4f}, no interval (one seed on a side)\n", c.diff);
  } else {
    if (o.looks > 1)
      std::cout << fmt::format("a look of a group-sequential plan of at most {} looks: every test at {:g} / {} = {:.4g}\n",
                               o.looks, kAlpha, o.looks, v.alpha);
    std::cout << fmt::format("A − B: {:+.4f}, {:g}% t-interval [{:+.4f}, {:+.4f}] ({}, df {:.4g}, SE {:.4g})\n", c.diff,
                             100 * (1 - v.alpha), v.ci.lo, v.ci.hi, c.paired ? "paired by seed" : "unpaired: Welch",
                             c.df, c.se);
    std::cout << fmt::format("permutation p {:.4g} ({} {} {})\n", c.perm.p,
                             c.perm.exact ? "exact, all" : "Monte Carlo, fixed seed,", c.perm.arrangements,
                             c.paired ? "sign flips of the per-seed differences" : "relabelings of the pooled seeds");
    std::cout << fmt::format("sign: A lower in {} of {} {}, higher in {}, equal in {}\n", c.a_lower, c.pairs,
                             c.paired ? "seeds" : "pairs", c.a_higher, c.equal);
    if (!std::isnan(v.margin))
      std::cout << fmt::format("tie margin ±{:.4f} ({:g} × |mean B|): {:g}% t-interval [{:+.4f}, {:+.4f}], TOST p {:.4g}\n",
                               v.margin, o.margin, 100 * (1 - 2 * v.alpha), v.ci_tost.lo, v.ci_tost.hi, v.tost_p);
  }
  if (!left_out.empty())
    std::cout << fmt::format("left out to keep the pairing (their run failed on the other side): seed {}\n",
                             fmt::join(left_out, ", "));
  if (!A.failed.empty()) std::cout << fmt::format("failed in A: {}\n", failed_list(A));
  if (!B.failed.empty()) std::cout << fmt::format("failed in B: {}\n", failed_list(B));
  std::cout << fmt::format("verdict: {}\n", verdict_text(c, v));
}

// The --csv row. ci_lo / ci_hi are the (1 − alpha) t-interval (95% with one look); tost_lo /
// tost_hi the (1 − 2·alpha) one (with --margin); sig is + / - for a decided difference; seeds_*
// are the projections of train/stats.h at alpha.
void write_comparison_csv(const CompareOptions& o, const Side& A, const Side& B, const Comparison& c,
                          const Verdict& v) {
  auto seeds = [](int n) { return n == 0 ? std::string() : n == kNeverEnough ? "inf" : std::to_string(n); };
  auto flag = [](bool b) { return std::string(b ? "1" : "0"); };
  const bool tost = !std::isnan(v.margin);
  const std::vector<std::pair<const char*, std::string>> cells = {
      {"metric", o.metric},
      {"n_a", std::to_string(c.n_a)},
      {"n_b", std::to_string(c.n_b)},
      {"paired", flag(c.paired)},
      {"mean_a", csv_num(c.mean_a, 6)},
      {"mean_b", csv_num(c.mean_b, 6)},
      {"diff", csv_num(c.diff, 6)},
      {"ci_lo", csv_num(v.ci.lo, 6)},
      {"ci_hi", csv_num(v.ci.hi, 6)},
      {"a_lower", std::to_string(c.a_lower)},
      {"a_higher", std::to_string(c.a_higher)},
      {"equal", std::to_string(c.equal)},
      {"pairs", std::to_string(c.pairs)},
      {"df", csv_num(c.df, 3)},
      {"se", csv_num(c.se, 6)},
      {"p_perm", csv_num(c.perm.p, 6)},
      {"perm_exact", flag(c.perm.exact)},
      {"arrangements", std::to_string(c.perm.arrangements)},
      {"margin", csv_num(v.margin, 6)},
      {"tost_lo", tost ? csv_num(v.ci_tost.lo, 6) : ""},
      {"tost_hi", tost ? csv_num(v.ci_tost.hi, 6) : ""},
      {"tost_p", csv_num(v.tost_p, 6)},
      {"sig", v.sign > 0 ? "+" : v.sign < 0 ? "-" : ""},
      {"tie", tost ? flag(v.tie) : ""},
      {"seeds_diff", seeds(v.seeds_difference)},
      {"seeds_tie", seeds(v.seeds_tie)},
      {"seeds_needed", seeds(v.seeds_needed)},
      {"failed_a", std::to_string(A.failed.size())},
      {"failed_b", std::to_string(B.failed.size())},
      {"alpha", csv_num(v.alpha, 6)},
  };
  Table row;
  row.rows.emplace_back();
  for (const auto& [name, value] : cells) row.header.push_back(name), row.rows[0].push_back(value);
  write_file_atomic(o.csv, row.csv());
}

}  // namespace

int run_compare(const CompareOptions& o, const Globals&) {
  const Side A = read_side(o.a, o.metric), B = read_side(o.b, o.metric);
  const Finished f = finished_pairs(A, B);
  const Comparison c = compare_values(f.a, f.b);
  const double margin = o.margin * std::abs(c.mean_b);  // NaN without --margin
  const Verdict v = decide(c, margin, static_cast<int>(A.failed.size() + B.failed.size()), kAlpha / o.looks);
  print_comparison(o, A, B, f.left_out, c, v);
  if (!o.csv.empty()) write_comparison_csv(o, A, B, c, v);
  return 0;
}

void add_compare_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand(
      "compare", "Two sets of runs: per-seed values, mean difference with its 95% t-interval, permutation p, verdict");
  auto o = std::make_shared<CompareOptions>();
  cmd->add_option("A", o->a, "run or sweep folder, or summary.csv; :NAME picks a point")->required();
  cmd->add_option("B", o->b, "the same for the other side")->required();
  cmd->add_option("--metric", o->metric, "summary.csv column to compare (default test_ppl)");
  cmd->add_option("--margin", o->margin, "tie test (TOST) at ± this fraction of |mean B|, e.g. 0.01 (default none)")
      ->check(Positive);
  cmd->add_option("--looks", o->looks,
                  "a look of a group-sequential plan of at most this many looks (seeds added until decided): "
                  "every test at 0.05 / looks (default 1)")
      ->check(Positive);
  cmd->add_option("--csv", o->csv, "also write the result as one CSV row to this file");
  on_run(cmd, g, o, run_compare);
}

}  // namespace lmx::cli
