#include "train/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/sizes.h"

namespace lmx {

namespace {

std::string num(double v, int digits = 4) { return std::isnan(v) ? "" : fmt::format("{:.{}f}", v, digits); }

// Numeric columns of the per-seed rows, in CSV order after the text columns.
struct Column {
  const char* name;
  int digits;
  double (*get)(const SummaryRow&);
};

const std::vector<Column>& numeric_columns() {
  static const std::vector<Column> cols = {
      {"params", 0, [](const SummaryRow& r) { return double(r.run.params); }},
      {"steps", 0, [](const SummaryRow& r) { return double(r.run.steps); }},
      {"final_train_loss", 4, [](const SummaryRow& r) { return r.run.final_train_loss; }},
      {"best_val_ppl", 4, [](const SummaryRow& r) { return r.run.best_val_ppl; }},
      {"final_val_ppl", 4, [](const SummaryRow& r) { return r.run.final_val_ppl; }},
      {"test_loss", 4, [](const SummaryRow& r) { return r.run.test.tokens ? r.run.test.loss : std::nan(""); }},
      {"test_ppl", 4, [](const SummaryRow& r) { return r.run.test.tokens ? r.run.test.ppl : std::nan(""); }},
      {"true_test_ppl", 4, [](const SummaryRow& r) { return r.run.test.true_ppl; }},
      {"unigram_test_ppl", 4, [](const SummaryRow& r) { return r.run.unigram_test_ppl; }},
      {"far_pronoun_acc", 4, [](const SummaryRow& r) { return r.run.test.far_acc; }},
      {"near_pronoun_acc", 4, [](const SummaryRow& r) { return r.run.test.near_acc; }},
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

Table summary_table(const std::vector<SummaryRow>& rows) {
  Table t;
  t.header = {"name", "seed", "status"};
  for (const auto& c : numeric_columns()) t.header.push_back(c.name);
  t.header.push_back("message");
  for (const auto& r : rows) {
    std::vector<std::string> cells = {r.name, std::to_string(r.run.seed), r.run.status};
    for (const auto& c : numeric_columns()) cells.push_back(num(c.get(r), c.digits));
    cells.push_back(r.run.message);
    t.add(cells);
  }
  // Aggregates per name, over the seeds that finished (status ok).
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (const auto& name : names) {
    std::vector<const SummaryRow*> ok;
    for (const auto& r : rows)
      if (r.name == name && r.run.status == "ok") ok.push_back(&r);
    for (const char* agg : {"mean", "std", "min", "max"}) {
      std::vector<std::string> cells = {name, agg, fmt::format("{} ok", ok.size())};
      for (const auto& c : numeric_columns()) {
        std::vector<double> v;
        for (auto* r : ok) v.push_back(c.get(*r));
        Stats s = stats(v);
        double x = std::string(agg) == "mean" ? s.mean : std::string(agg) == "std" ? s.std
                   : std::string(agg) == "min" ? s.min : s.max;
        cells.push_back(num(x, c.digits + (std::string(agg) == "std" ? 1 : 0)));
      }
      cells.push_back("");
      t.add(cells);
    }
  }
  return t;
}

std::string summary_markdown(const std::vector<SummaryRow>& rows) {
  Table t;
  t.header = {"name", "seed", "params", "test ppl", "true ppl", "unigram ppl", "far pron.", "near pron.", "wall s", "status"};
  std::vector<std::string> names;
  for (const auto& r : rows) {
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
    t.add({r.name, std::to_string(r.run.seed), std::to_string(r.run.params), num(r.run.test.ppl, 3),
           num(r.run.test.true_ppl, 3), num(r.run.unigram_test_ppl, 2), num(r.run.test.far_acc, 3),
           num(r.run.test.near_acc, 3), num(r.run.wall_s, 1), r.run.status});
  }
  for (const auto& name : names) {
    std::vector<double> ppl, far, near, wall;
    for (const auto& r : rows)
      if (r.name == name && r.run.status == "ok")
        ppl.push_back(r.run.test.ppl), far.push_back(r.run.test.far_acc), near.push_back(r.run.test.near_acc),
            wall.push_back(r.run.wall_s);
    auto pm = [](const std::vector<double>& v, int d) {
      Stats s = stats(v);
      return s.n ? fmt::format("{:.{}f} ± {:.{}f}", s.mean, d, s.std, d) : std::string("");
    };
    if (ppl.size() > 1)
      t.add({name, "mean ± std", "", pm(ppl, 3), "", "", pm(far, 3), pm(near, 3), pm(wall, 1),
             fmt::format("{} ok", ppl.size())});
  }
  return t.markdown();
}

}  // namespace lmx
