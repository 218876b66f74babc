// lmx compare and the bootstrap intervals behind it (train/bootstrap.h): against the normal-
// theory interval on large synthetic samples, and against the exact bootstrap distribution
// enumerated by brute force on small ones.
#include "catch.h"

#include <cmath>
#include <functional>
#include <numeric>

#include "data/rng.h"
#include "helpers.h"
#include "train/bootstrap.h"

using namespace lmx;

namespace {

// n draws of N(mu, sd²) by Box-Muller from a fixed stream.
std::vector<double> normal_sample(size_t n, double mu, double sd, uint64_t seed) {
  data::Rng rng(seed);
  std::vector<double> x(n);
  for (double& v : x) {
    const double u = std::max(rng.uniform(), 1e-300), w = rng.uniform();
    v = mu + sd * std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * w);
  }
  return x;
}

double mean_of(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / x.size(); }
double var_of(const std::vector<double>& x) {
  const double m = mean_of(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / (x.size() - 1);
}

// Every resample of x (n^n, equally likely): their means.
std::vector<double> all_resample_means(const std::vector<double>& x) {
  const size_t n = x.size();
  std::vector<double> out;
  std::vector<size_t> idx(n, 0);
  while (true) {
    double s = 0;
    for (size_t i : idx) s += x[i];
    out.push_back(s / n);
    size_t k = 0;
    while (k < n && ++idx[k] == n) idx[k++] = 0;
    if (k == n) return out;
  }
}

// The exact bootstrap distribution's mass below v (strictly) and at or below v.
std::pair<double, double> mass(const std::vector<double>& values, double v) {
  double below = 0, at_or_below = 0;
  for (double x : values) below += x < v - 1e-12, at_or_below += x <= v + 1e-12;
  return {below / values.size(), at_or_below / values.size()};
}

}  // namespace

TEST_CASE("bootstrap interval of a mean matches the normal-theory interval on a large sample", "[compare]") {
  const auto x = normal_sample(4000, 3.7, 0.05, 7);
  const double half = 1.959964 * std::sqrt(var_of(x) / x.size());
  const Interval ci = bootstrap_mean_interval(x);
  // Tolerance: 5% of the half-width (Monte-Carlo error of 20000 resamples is ~1-2%).
  CHECK(ci.lo == Approx(mean_of(x) - half).margin(0.05 * half));
  CHECK(ci.hi == Approx(mean_of(x) + half).margin(0.05 * half));
}

TEST_CASE("bootstrap interval of a difference matches the Welch normal interval", "[compare]") {
  const auto a = normal_sample(3000, 3.80, 0.04, 11), b = normal_sample(2000, 3.75, 0.08, 12);
  const double half = 1.959964 * std::sqrt(var_of(a) / a.size() + var_of(b) / b.size());
  const double d = mean_of(a) - mean_of(b);
  const Interval ci = bootstrap_diff_interval(a, b);
  CHECK(ci.lo == Approx(d - half).margin(0.05 * half));
  CHECK(ci.hi == Approx(d + half).margin(0.05 * half));
}

TEST_CASE("bootstrap interval lies on the exact resampling distribution's 2.5% and 97.5% points", "[compare]") {
  // 4 values: all 4^4 = 256 resamples enumerated. The Monte-Carlo quantile must sit where the
  // exact distribution crosses 2.5% (97.5%), within 0.5% of mass either side.
  const std::vector<double> x{1.0, 2.5, 4.0, 7.0};
  const auto exact = all_resample_means(x);
  REQUIRE(exact.size() == 256);
  const Interval ci = bootstrap_mean_interval(x);
  auto [lo_below, lo_at] = mass(exact, ci.lo);
  auto [hi_below, hi_at] = mass(exact, ci.hi);
  CHECK(lo_below <= 0.025 + 0.005);
  CHECK(lo_at >= 0.025 - 0.005);
  CHECK(hi_below <= 0.975 + 0.005);
  CHECK(hi_at >= 0.975 - 0.005);
  // Unpaired: every (resample of a, resample of b): 27 x 4 equally likely differences.
  const std::vector<double> a{1.0, 3.0, 4.5}, b{2.0, 2.5};
  std::vector<double> diffs;
  for (double ma : all_resample_means(a))
    for (double mb : all_resample_means(b)) diffs.push_back(ma - mb);
  const Interval cd = bootstrap_diff_interval(a, b);
  CHECK(mass(diffs, cd.lo).first <= 0.03);
  CHECK(mass(diffs, cd.lo).second >= 0.02);
  CHECK(mass(diffs, cd.hi).first <= 0.98);
  CHECK(mass(diffs, cd.hi).second >= 0.97);
}

TEST_CASE("compare pairs by seed when both sides hold the same seeds", "[compare]") {
  const SeedValues a{{0, 1, 2}, {3.70, 3.80, 3.75}}, b{{2, 0, 1}, {3.74, 3.72, 3.79}};
  const Comparison c = compare_values(a, b);
  CHECK(c.paired);
  // Differences by seed: 0: -0.02, 1: +0.01, 2: +0.01.
  CHECK(c.diff == Approx(0.0).margin(1e-12));
  CHECK(c.a_lower == 1);
  CHECK(c.a_higher == 2);
  CHECK(c.pairs == 3);
  CHECK(c.ci.lo == Approx(-0.02).margin(1e-9));  // the smallest possible resample mean: all -0.02
  CHECK(c.ci.hi <= 0.01 + 1e-9);
  CHECK(std::isnan(compare_values(SeedValues{{0}, {3.7}}, SeedValues{{0}, {3.8}}).ci.lo));  // one seed
  const Comparison u = compare_values(a, SeedValues{{5, 6}, {3.0, 3.1}});
  CHECK_FALSE(u.paired);
  CHECK(u.pairs == 6);
  CHECK(u.a_higher == 6);
  CHECK(u.ci.lo > 0);
}

TEST_CASE("lmx compare reads two summaries and writes the interval", "[compare][cli]") {
  test::TempDir dir;
  const std::string head = "name,seed,status,test_ppl,message\n";
  dir.write("a/summary.csv", head + "x,0,ok,3.70,\nx,1,ok,3.72,\nx,2,ok,3.71,\nx,mean,3 ok,3.71,\n");
  dir.write("b/summary.csv", head + "y,0,ok,3.80,\ny,1,ok,3.79,\ny,2,ok,3.83,\nz,0,ok,1,\n");
  auto r = test::run_lmx("compare " + dir.file("a") + " " + dir.file("b") + ":y --csv " + dir.file("c.csv"));
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("paired by seed"));
  CHECK_THAT(r.output, Catch::Contains("A lower in 3 of 3 seeds"));
  const std::string csv = test::read_file(dir.file("c.csv"));
  CHECK(csv.rfind("metric,n_a,n_b,paired,mean_a,mean_b,diff,ci_lo,ci_hi,", 0) == 0);
  CHECK_THAT(csv, Catch::Contains("test_ppl,3,3,1,3.710000,3.806667,-0.096667,"));
  auto several = test::run_lmx("compare " + dir.file("a") + " " + dir.file("b"));
  CHECK(several.code == 2);
  CHECK_THAT(several.output, Catch::Contains("holds several points"));
  auto metric = test::run_lmx("compare " + dir.file("a") + " " + dir.file("b") + ":y --metric nope");
  CHECK(metric.code == 2);
  CHECK_THAT(metric.output, Catch::Contains("no column 'nope'"));
}
