#include "data/metrics.h"

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

}  // namespace lmx::data
