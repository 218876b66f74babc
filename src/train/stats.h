// The statistics behind verdicts (`lmx compare`, the ci95 rows of sweep summaries and
// scripts/lecture/report.sh), in one place:
//   - Student's t distribution (CDF through the regularized incomplete beta, quantile by
//     safeguarded Newton), so intervals are closed forms that hold their coverage at 3 to 10 seeds;
//   - the t-interval of a mean, and of a difference: paired by seed (t on the per-seed
//     differences, df n − 1) when both sides hold the same seeds, Welch's otherwise;
//   - exact permutation p-values: sign flips of the paired differences (2^n arrangements), or
//     every relabeling of the pooled values (C(n_a + n_b, n_a)) with Welch's t as statistic;
//     a fixed-seed Monte-Carlo estimate where there are too many to enumerate;
//   - the verdict: a decisive difference needs the 95% t-interval to exclude 0 AND the
//     permutation p < 0.05; a tie is TOST at a margin m (the 90% t-interval inside [−m, m]);
//     otherwise inconclusive, with the seeds the observed difference and spread would need.
// A sign-flip p-value with n pairs is never below 2 / 2^n (0.0625 at n = 5), so with fewer than
// 6 paired seeds no difference is decisive however large: the two tests must agree.
#pragma once
#include <cstdint>
#include <vector>

namespace lmx {

inline constexpr double kAlpha = 0.05;  // the tests' level: 95% intervals, p < 0.05

// Student's t with df > 0 degrees of freedom (a real number: Welch's df are fractional).
double student_t_cdf(double t, double df);
// The p-quantile, p in (0, 1), to the CDF's accuracy (~1e-13; ~1e-9 at df ~1e6).
double student_t_quantile(double p, double df);
// I_x(a, b), the regularized incomplete beta function (continued fraction, modified Lentz).
double incomplete_beta(double a, double b, double x);

// Welch–Satterthwaite degrees of freedom of mean(a) − mean(b), from the sample variances and
// sizes: (va/na + vb/nb)² / ((va/na)²/(na−1) + (vb/nb)²/(nb−1)).
double welch_df(double var_a, size_t n_a, double var_b, size_t n_b);

struct Interval {
  double lo = 0, hi = 0;
};

// The level t-interval of the mean of x: mean ± t_{(1+level)/2, n−1} · s / √n. NaN for n < 2.
Interval t_mean_interval(const std::vector<double>& x, double level = 0.95);

// A permutation test's two-sided p-value: the share of arrangements whose |statistic| reaches
// the observed one (exact), or (1 + hits) / (1 + draws) over kPermutationDraws random ones.
struct Permutation {
  double p = 1;
  uint64_t arrangements = 0;  // enumerated (exact) or drawn
  bool exact = true;
};
inline constexpr uint64_t kExactArrangements = 1u << 21;  // enumerate up to ~2 million
inline constexpr uint64_t kPermutationDraws = 200000;
inline constexpr uint64_t kPermutationSeed = 20261201;

// Sign flips of the paired differences d (statistic |Σ d|): 2^n arrangements.
Permutation sign_flip_p(const std::vector<double>& d);
// Relabelings of the pooled a ∪ b into groups of |a| and |b|; the statistic is Welch's |t|
// (|mean a − mean b| with one value a side): exact when the sides are exchangeable, and closer to
// its level than the plain difference when their spreads differ (at 10 vs 5 seeds, spreads 1 : 3:
// 8% rejections against 17%).
Permutation two_sample_permutation_p(const std::vector<double>& a, const std::vector<double>& b);

// One side of a comparison: a value per seed (finished runs only).
struct SeedValues {
  std::vector<uint64_t> seeds;
  std::vector<double> values;
};

struct Comparison {
  bool paired = false;        // same seeds on both sides: the per-seed differences
  size_t n_a = 0, n_b = 0;
  double mean_a = 0, mean_b = 0;
  double diff = 0;            // mean(a) − mean(b) (paired: the mean of the differences, the same)
  double sd_a = 0, sd_b = 0;  // sample SDs of the sides, or (paired) both the SD of the differences
  double se = 0, df = 0;      // standard error of diff; the t-interval's degrees of freedom
  Interval ci, ci90;          // 95% and 90% t-intervals of diff; NaN with fewer than 2 seeds a side
  Permutation perm;
  int a_lower = 0, a_higher = 0, equal = 0;  // sign count: per seed (paired) or over all pairs
  int pairs = 0;              // seeds (paired) or n_a × n_b (unpaired)
};

// Compares a against b (either may be empty: then the numbers are NaN).
Comparison compare_values(const SeedValues& a, const SeedValues& b);

inline constexpr int kNeverEnough = -1;  // no number of seeds would decide

// The smallest number of seeds (pairs, or seeds a side when unpaired) at which the observed
// difference and spread would decide: a difference needs t_{0.975,df}·se < |diff| and enough
// seeds for the permutation test to reach p < 0.05 (6 pairs; 4 a side); a tie at margin m needs
// |diff| + t_{0.95,df}·se ≤ m. kNeverEnough when diff is 0 (difference) or |diff| ≥ m (tie);
// 0 when there is no spread to project from (a side with one seed).
// At a level alpha other than kAlpha (a look of a group-sequential plan), the same at that level.
int seeds_for_difference(const Comparison& c, double alpha = kAlpha);
int seeds_for_tie(const Comparison& c, double margin, double alpha = kAlpha);

// The verdict on a comparison. `margin` is the tie margin m in the metric's units (NaN: no tie
// test); `failed` the runs of either side that did not finish with a value: any makes the
// verdict inconclusive (a verdict that leaves out the runs that failed is biased). `alpha` is the
// level of every test (kAlpha: 95% intervals, p < 0.05, TOST's 90% interval). A group-sequential
// plan of K looks (more seeds in rounds until decided) tests each look at kAlpha / K: by the union
// bound the chance of any false decision over all K looks stays ≤ kAlpha whatever the looks'
// dependence (Bonferroni; checked by simulation in tests/test_compare.cpp).
struct Verdict {
  double alpha = kAlpha;
  Interval ci, ci_tost;          // the (1 − alpha) t-interval of the difference, and TOST's (1 − 2·alpha)
  int failed = 0;
  bool t_excludes_zero = false;  // the (1 − alpha) t-interval excludes 0
  int sign = 0;                  // +1 / −1: A − B decisively > 0 / < 0 (t-interval and permutation)
  double margin = 0;             // m; NaN without a tie test
  bool tie = false;              // TOST at m: the (1 − 2·alpha) t-interval inside [−m, m]
  double tost_p = 0;             // the larger of the two one-sided p-values; NaN without m
  // Seeds for a decided difference and for a tie (seeds_for_*, at least one more than now where
  // that outcome is not reached); the smaller of them when inconclusive. 0: not projected.
  int seeds_difference = 0, seeds_tie = 0, seeds_needed = 0;
  bool decided() const { return failed == 0 && (sign != 0 || tie); }
};
Verdict decide(const Comparison& c, double margin, int failed, double alpha = kAlpha);

}  // namespace lmx
