#include "data/metrics.h"

#include "data/pronoun.h"

namespace lmx::data {

std::vector<MetricValue> Metrics::in(MetricTable table) const {
  std::vector<MetricValue> picked;
  for (const auto& v : values)
    if (v.column.tables & table) picked.push_back(v);
  return picked;
}

double Metrics::get(std::string_view name) const {
  for (const auto& v : values)
    if (v.column.name == name) return v.value;
  return NAN;
}

std::vector<MetricColumn> known_metric_columns() { return pronoun_columns(); }

}  // namespace lmx::data
