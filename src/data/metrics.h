// What a corpus scores a model with beyond the loss: the garden world its pronoun agreement
// (data/pronoun.h), plain text nothing. An evaluation feeds each whole document's logits to
// the corpus's metric and keeps the values it finishes with; the tables that report an
// evaluation (summary.csv and summary.md, `lmx eval`, uptrain.csv) show the columns the metric
// declares for them. The trainer, the evaluator and the tables know no metric by name.
#pragma once
#include <torch/types.h>

#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/corpus.h"

namespace lmx::data {

// The tables a metric column appears in (bits of MetricColumn::tables).
enum MetricTable : unsigned {
  kSummaryTable = 1,  // summary.csv: a column per seed, with the aggregates over seeds
  kEvalTable = 2,     // `lmx eval`'s table
  kShortTable = 4,    // summary.md, under `title`
  kHeadline = 8,      // the narrowest tables (uptrain.csv), under `short_name`: the metric's one number
};

struct MetricColumn {
  std::string name;        // the column in summary.csv and `lmx eval`
  int decimals = 4;        // there; 0: a count
  unsigned tables = 0;     // MetricTable bits
  std::string title;       // kShortTable's column
  std::string short_name;  // kHeadline's column
  int short_decimals = 3;  // the decimals of kShortTable and kHeadline
};

struct MetricValue {
  MetricColumn column;
  double value = NAN;  // NaN: nothing to score (no site in the documents, or a layout it cannot score)
};

// The values of one evaluation, in the metric's column order.
struct Metrics {
  std::vector<MetricValue> values;
  // Where the values fail the metric's own bar (the garden: a run that never learned pronoun
  // agreement), a sentence a training run warns with at its end; "" otherwise.
  std::string warning;

  std::vector<MetricValue> in(MetricTable table) const;
  double get(std::string_view name) const;  // NaN when no column has that name
};

// One evaluation's running score over the documents the metric was prepared for.
class MetricTally {
 public:
  virtual ~MetricTally() = default;
  // Document d (its index in the prepared documents) from the model's outputs on doc[0..T):
  // logits (T, V), row t scoring each token as doc[t + 1].
  virtual void add(size_t d, const torch::Tensor& logits) = 0;
  virtual Metrics finish() const = 0;
};

// A metric prepared for one set of documents (what it finds in them, found once: a run
// evaluates the same validation documents many times). The documents must outlive it.
class PreparedMetric {
 public:
  virtual ~PreparedMetric() = default;
  virtual std::unique_ptr<MetricTally> start() const = 0;
};

class CorpusMetric {
 public:
  virtual ~CorpusMetric() = default;
  virtual std::vector<MetricColumn> columns() const = 0;  // every column, in table order
  virtual std::unique_ptr<PreparedMetric> prepare(const std::vector<Doc>& docs) const = 0;
};

// Every column any corpus row's metric declares, in row order (summary.md shows those its table
// holds; defined with the rows, data/corpora.cpp).
std::vector<MetricColumn> known_metric_columns();

}  // namespace lmx::data
