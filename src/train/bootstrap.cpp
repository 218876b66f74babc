#include "train/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/rng.h"

namespace lmx {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::nan("");
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

namespace {

double mean(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / x.size(); }

// The mean of one resample of x (with replacement, |x| draws).
double resample_mean(const std::vector<double>& x, data::Rng& rng) {
  double sum = 0;
  for (size_t k = 0; k < x.size(); ++k) sum += x[rng.below(x.size())];
  return sum / x.size();
}

Interval percentile_interval(std::vector<double> stats, double level) {
  std::sort(stats.begin(), stats.end());
  return {quantile_sorted(stats, (1 - level) / 2), quantile_sorted(stats, (1 + level) / 2)};
}

}  // namespace

Interval bootstrap_mean_interval(const std::vector<double>& x, double level, int resamples, uint64_t seed) {
  data::Rng rng(seed);
  std::vector<double> means(resamples);
  for (double& m : means) m = resample_mean(x, rng);
  return percentile_interval(std::move(means), level);
}

Interval bootstrap_diff_interval(const std::vector<double>& a, const std::vector<double>& b, double level,
                                 int resamples, uint64_t seed) {
  data::Rng rng(seed);
  std::vector<double> diffs(resamples);
  for (double& d : diffs) {
    const double ma = resample_mean(a, rng);
    d = ma - resample_mean(b, rng);
  }
  return percentile_interval(std::move(diffs), level);
}

Comparison compare_values(const SeedValues& a, const SeedValues& b, double level) {
  Comparison c;
  c.mean_a = mean(a.values), c.mean_b = mean(b.values);
  c.diff = c.mean_a - c.mean_b;
  auto count = [&c](double x, double y) { x < y ? ++c.a_lower : x > y ? ++c.a_higher : ++c.equal; };
  std::vector<uint64_t> sa = a.seeds, sb = b.seeds;
  std::sort(sa.begin(), sa.end()), std::sort(sb.begin(), sb.end());
  c.paired = sa == sb && std::adjacent_find(sa.begin(), sa.end()) == sa.end();
  if (c.paired) {
    std::vector<double> d;
    for (size_t i = 0; i < a.seeds.size(); ++i) {
      const size_t j = std::find(b.seeds.begin(), b.seeds.end(), a.seeds[i]) - b.seeds.begin();
      d.push_back(a.values[i] - b.values[j]);
      count(a.values[i], b.values[j]);
    }
    c.diff = mean(d);
    c.ci = bootstrap_mean_interval(d, level);
  } else {
    for (double x : a.values)
      for (double y : b.values) count(x, y);
    c.ci = bootstrap_diff_interval(a.values, b.values, level);
  }
  c.pairs = c.a_lower + c.a_higher + c.equal;
  // One value (or one pair) has no spread to resample: no interval.
  if ((c.paired ? a.values.size() : std::min(a.values.size(), b.values.size())) < 2) c.ci = {std::nan(""), std::nan("")};
  return c;
}

}  // namespace lmx
