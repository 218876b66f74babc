#include "train/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "data/metrics.h"
#include "model/sizes.h"
#include "train/stats.h"

namespace lmx {

namespace {

// Numeric columns of the per-seed rows: the run's (CSV order after name, seed, status), then
// the corpus's metric columns (data/metrics.h), then the costs (before the message).
struct Column {
  const char* name;
  int digits;
  double (*get)(const SummaryRow&);
};

const std::vector<Column>& run_columns() {
  static const std::vector<Column> cols = {
      {"params", 0, [](const SummaryRow& r) { return double(r.run.params); }},
      {"steps", 0, [](const SummaryRow& r) { return double(r.run.steps); }},
      {"final_train_loss", 4, [](const SummaryRow& r) { return r.run.final_train_loss; }},
      {"train_loss_last_epoch", 5, [](const SummaryRow& r) { return r.run.train_loss_last_epoch; }},
      {"train_loss_first50", 4, [](const SummaryRow& r) { return r.run.train_loss_first; }},
      {"best_val_ppl", 4, [](const SummaryRow& r) { return r.run.best_val_ppl; }},
      {"final_val_ppl", 4, [](const SummaryRow& r) { return r.run.final_val_ppl; }},
      {"test_loss", 4, [](const SummaryRow& r) { return r.run.test.tokens ? r.run.test.loss : std::nan(""); }},
      {"test_ppl", 4, [](const SummaryRow& r) { return r.run.test.tokens ? r.run.test.ppl : std::nan(""); }},
      {"true_test_ppl", 4, [](const SummaryRow& r) { return r.run.test.true_ppl; }},
      {"unigram_test_ppl", 4, [](const SummaryRow& r) { return r.run.unigram_test_ppl; }},
      {"test_untrained_targets", 0, [](const SummaryRow& r) { return double(r.run.test.untrained_tokens); }},
      {"test_untrained_loss", 4, [](const SummaryRow& r) { return r.run.test.untrained_loss; }},
  };
  return cols;
}

const std::vector<Column>& cost_columns() {
  static const std::vector<Column> cols = {
      {"kv_numbers_per_token_per_layer", 0,
       [](const SummaryRow& r) { return double(kv_cache_size(r.config.model).per_token_per_layer); }},
      {"kv_bytes_per_token_bf16", 0,
       [](const SummaryRow& r) { return double(kv_cache_size(r.config.model).bytes_per_token(2)); }},
      {"tokens_per_s", 0, [](const SummaryRow& r) { return r.run.tokens_per_s; }},
      {"wall_s", 1, [](const SummaryRow& r) { return r.run.wall_s; }},
      {"peak_rss_mib", 1, [](const SummaryRow& r) { return r.run.peak_rss_mib; }},
  };
  return cols;
}

// The cells of `row` (under `from`) in the order of `header`; "" where `from` has no such column.
std::vector<std::string> reordered(const std::vector<std::string>& row, const std::vector<std::string>& from,
                                   const std::vector<std::string>& header) {
  std::vector<std::string> cells;
  for (const auto& name : header) {
    const auto it = std::find(from.begin(), from.end(), name);
    const size_t i = static_cast<size_t>(it - from.begin());
    cells.push_back(it != from.end() && i < row.size() ? row[i] : "");
  }
  return cells;
}

bool is_aggregate(const std::string& seed) {
  return seed == "mean" || seed == "std" || seed == "min" || seed == "max" || seed == "ci95_lo" || seed == "ci95_hi";
}

double cell_value(const std::vector<std::string>& row, int col) {
  if (col < 0 || col >= static_cast<int>(row.size()) || row[col].empty()) return std::nan("");
  char* end = nullptr;
  double v = std::strtod(row[col].c_str(), &end);
  return end && *end == '\0' ? v : std::nan("");
}

std::vector<std::string> names_in_order(const Table& t) {
  std::vector<std::string> names;
  for (const auto& r : t.rows)
    if (std::find(names.begin(), names.end(), r[0]) == names.end()) names.push_back(r[0]);
  return names;
}

// Values of column `col` over the ok rows of `name`.
std::vector<double> ok_values(const Table& t, const std::string& name, int col) {
  const int status = column(t, "status");
  std::vector<double> v;
  for (const auto& r : t.rows)
    if (r[0] == name && is_status(r[status], RunStatus::Ok)) v.push_back(cell_value(r, col));
  return v;
}

}  // namespace

Stats stats(const std::vector<double>& values) {
  Stats s;
  double sum = 0;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    ++s.n;
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  if (s.n == 0) return Stats{0, NAN, NAN, NAN, NAN};
  s.mean = sum / s.n;
  double ss = 0;
  for (double v : values)
    if (std::isfinite(v)) ss += (v - s.mean) * (v - s.mean);
  s.std = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

Table seed_rows(const std::vector<SummaryRow>& rows) {
  Table t;
  t.header = {"name", "seed", "status"};
  for (const auto& c : run_columns()) t.header.push_back(c.name);
  for (const auto& c : cost_columns()) t.header.push_back(c.name);
  t.header.push_back("message");
  for (const auto& r : rows) {
    Table one;
    one.header = {"name", "seed", "status"};
    std::vector<std::string> cells = {r.name, std::to_string(r.run.seed), status_name(r.run.status)};
    for (const auto& c : run_columns()) one.header.push_back(c.name), cells.push_back(csv_num(c.get(r), c.digits));
    for (const auto& m : r.run.test.metrics.in(data::kSummaryTable))
      one.header.push_back(m.column.name), cells.push_back(csv_num(m.value, m.column.decimals));
    for (const auto& c : cost_columns()) one.header.push_back(c.name), cells.push_back(csv_num(c.get(r), c.digits));
    one.header.push_back("message"), cells.push_back(r.run.message);
    one.add(cells);
    add_rows(t, one);
  }
  return t;
}

void add_rows(Table& into, const Table& from) {
  if (into.header.empty()) into.header = from.header;
  if (from.header != into.header) {  // the union: each new column after the one before it in `from`
    std::vector<std::string> header = into.header;
    for (size_t i = 0; i < from.header.size(); ++i) {
      if (std::find(header.begin(), header.end(), from.header[i]) != header.end()) continue;
      const auto at = i == 0 ? header.begin() : std::find(header.begin(), header.end(), from.header[i - 1]) + 1;
      header.insert(at, from.header[i]);
    }
    if (header != into.header) {
      for (auto& row : into.rows) row = reordered(row, into.header, header);
      into.header = header;
    }
  }
  for (const auto& row : from.rows) into.add(from.header == into.header ? row : reordered(row, from.header, into.header));
}

Table read_seed_rows(const std::string& summary_csv) {
  Table all = read_csv(summary_csv);
  Table t;
  t.header = all.header;
  for (auto& r : all.rows)
    if (r.size() > 1 && !is_aggregate(r[1])) t.add(r);
  return t;
}

Table with_aggregates(const Table& seeds) {
  Table t = seeds;
  const int status = column(seeds, "status"), message = column(seeds, "message");
  for (const auto& name : names_in_order(seeds)) {
    // ci95_lo / ci95_hi: the 95% Student-t interval of the mean over the seeds (train/stats.h).
    const char* labels[] = {"mean", "std", "min", "max", "ci95_lo", "ci95_hi"};
    std::vector<std::vector<std::string>> agg(std::size(labels), std::vector<std::string>(seeds.header.size()));
    for (size_t k = 0; k < agg.size(); ++k) agg[k][0] = name, agg[k][1] = labels[k];
    for (size_t col = 3; col < seeds.header.size(); ++col) {
      if (static_cast<int>(col) == message) continue;
      std::vector<double> values = ok_values(seeds, name, static_cast<int>(col));
      Stats s = stats(values);
      agg[0][col] = csv_num(s.mean, 4), agg[1][col] = s.n > 1 ? csv_num(s.std, 5) : "";  // one value has no spread
      agg[2][col] = csv_num(s.min, 4), agg[3][col] = csv_num(s.max, 4);
      values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
      if (values.size() < 2) continue;  // one value has no interval
      const Interval ci = t_mean_interval(values);
      agg[4][col] = csv_num(ci.lo, 5), agg[5][col] = csv_num(ci.hi, 5);
    }
    const size_t ok = ok_values(seeds, name, status).size();
    for (auto& row : agg) row[status] = fmt::format("{} ok", ok), t.add(row);
  }
  return t;
}

std::string summary_markdown(const Table& seeds) {
  struct View {
    std::string title, col;
    int digits;
  };
  std::vector<View> views = {{"params", "params", 0},
                             {"test ppl", "test_ppl", 3},
                             {"true ppl", "true_test_ppl", 3},
                             {"unigram ppl", "unigram_test_ppl", 2}};
  for (const auto& m : data::known_metric_columns())  // the metric columns the table holds
    if ((m.tables & data::kShortTable) && column(seeds, m.name) >= 0) views.push_back({m.title, m.name, m.short_decimals});
  views.push_back({"wall s", "wall_s", 1});
  Table t;
  t.header = {"name", "seed"};
  for (const auto& v : views) t.header.push_back(v.title);
  t.header.push_back("status");
  const int status = column(seeds, "status");
  for (const auto& r : seeds.rows) {
    std::vector<std::string> cells = {r[0], r[1]};
    for (const auto& v : views) cells.push_back(csv_num(cell_value(r, column(seeds, v.col)), v.digits));
    cells.push_back(r[status]);
    t.add(cells);
  }
  for (const auto& name : names_in_order(seeds)) {
    if (ok_values(seeds, name, status).size() < 2) continue;
    std::vector<std::string> cells = {name, "mean ± std"};
    for (const auto& v : views) {
      Stats s = stats(ok_values(seeds, name, column(seeds, v.col)));
      // One value has no spread to show (not "± 0.000"); equal values do, for test ppl.
      bool constant = s.n == 1 || (s.n > 0 && s.std == 0 && v.col != "test_ppl");
      cells.push_back(s.n == 0 ? "" : constant ? csv_num(s.mean, v.digits)
                                                : fmt::format("{:.{}f} ± {:.{}f}", s.mean, v.digits, s.std, v.digits));
    }
    cells.push_back(fmt::format("{} ok", ok_values(seeds, name, status).size()));
    t.add(cells);
  }
  return t.markdown();
}

bool all_status(const Table& t, std::initializer_list<RunStatus> allowed) {
  const int st = t.header.empty() ? -1 : column(t, "status");
  if (st < 0 || t.rows.empty()) return false;
  return std::all_of(t.rows.begin(), t.rows.end(), [&](const std::vector<std::string>& row) {
    if (st >= static_cast<int>(row.size())) return false;
    const std::optional<RunStatus> s = parse_status(row[st]);
    return s && std::find(allowed.begin(), allowed.end(), *s) != allowed.end();
  });
}

}  // namespace lmx
