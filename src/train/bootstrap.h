// Verdicts with statistics: the mean difference of a metric between two sets of runs, with a
// 95% percentile-bootstrap confidence interval, paired by seed when both sides hold the same
// seeds (resampling the seeds' differences) and otherwise unpaired (resampling each side on its
// own). Deterministic: the resamples come from data::Rng with a fixed seed. `lmx compare` prints
// it; sweep summaries carry the interval of each point's mean (summary.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmx {

inline constexpr int kBootstrapResamples = 20000;
inline constexpr uint64_t kBootstrapSeed = 20261201;

struct Interval {
  double lo = 0, hi = 0;
};

// The level-quantile interval [q((1-level)/2), q((1+level)/2)] of the means of `resamples`
// resamples (with replacement, same size) of x. x must not be empty.
Interval bootstrap_mean_interval(const std::vector<double>& x, double level = 0.95,
                                 int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// The same for mean(a) - mean(b), a and b resampled independently.
Interval bootstrap_diff_interval(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95,
                                 int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// Linear-interpolated quantile (q in [0, 1]) of sorted values (R's type 7).
double quantile_sorted(const std::vector<double>& sorted, double q);

// One side of a comparison: a value per seed.
struct SeedValues {
  std::vector<uint64_t> seeds;
  std::vector<double> values;
};

struct Comparison {
  bool paired = false;        // same seeds on both sides: differences per seed
  double mean_a = 0, mean_b = 0;
  double diff = 0;            // mean(a) - mean(b) (paired: the mean of the differences, the same)
  Interval ci;                // 95% bootstrap interval of diff; NaN with fewer than 2 seeds (pairs) a side
  int a_lower = 0, a_higher = 0, equal = 0;  // sign count: per seed (paired) or over all pairs
  int pairs = 0;              // seeds (paired) or n_a x n_b (unpaired)
};

// Compares a against b; InputError-free: both sides must be non-empty (the caller checks).
Comparison compare_values(const SeedValues& a, const SeedValues& b, double level = 0.95);

}  // namespace lmx
