#include "train/stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "data/rng.h"

namespace lmx {

namespace {

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf) by the modified Lentz method.
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  auto guard = [](double v) { return std::abs(v) < tiny ? tiny : v; };
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 / guard(1 - qab * x / qap), h = d;
  for (int m = 1; m <= 100000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));  // the even step
    d = 1 / guard(1 + aa * d), c = guard(1 + aa / c), h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));  // the odd step
    d = 1 / guard(1 + aa * d), c = guard(1 + aa / c);
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < eps) break;
  }
  return h;
}

double mean(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / x.size(); }

// Sample standard deviation (n − 1); NaN for fewer than 2 values.
double sample_sd(const std::vector<double>& x) {
  if (x.size() < 2) return std::nan("");
  const double m = mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / (x.size() - 1));
}

// C(n, k), or `cap` + 1 when it exceeds cap.
uint64_t choose_capped(uint64_t n, uint64_t k, uint64_t cap) {
  k = std::min(k, n - k);
  long double c = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > cap) return cap + 1;
  }
  return static_cast<uint64_t>(std::llround(static_cast<double>(c)));
}

// Floating ties: arrangements whose statistic equals the observed one up to rounding count as
// reaching it (sums of the same values in another order differ in the last bits).
double tie_tolerance(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::abs(v);
  return 1e-12 * s;
}

// The smallest n in [n_min, kMaxSeeds] where holds(n) (monotone: false, then true), or kNeverEnough.
int smallest_n(int n_min, const std::function<bool(int)>& holds) {
  constexpr int kMaxSeeds = 1 << 20;
  if (!holds(kMaxSeeds)) return kNeverEnough;
  int lo = n_min - 1, hi = kMaxSeeds;  // holds(hi); lo below every candidate
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (holds(mid) ? hi : lo) = mid;
  }
  return hi;
}

// The standard error and df the comparison would have with n seeds (pairs, or n a side) and the
// same spread.
struct Projection {
  double se, df;
};
Projection project(const Comparison& c, int n) {
  if (c.paired) return {c.sd_a / std::sqrt(n), n - 1.0};
  const double va = c.sd_a * c.sd_a, vb = c.sd_b * c.sd_b;
  const double se = std::sqrt((va + vb) / n);
  return {se, se > 0 ? welch_df(va, n, vb, n) : 2.0 * n - 2};
}

// The fewest seeds at which the permutation test can reach p < alpha at all: its smallest p is
// 2 / 2^n with n pairs, 2 / C(2n, n) with n a side (an arrangement and its mirror).
int fewest_permutation_seeds(bool paired, double alpha) {
  for (int n = 2;; ++n) {
    const double arrangements = paired ? std::ldexp(1.0, n) : static_cast<double>(choose_capped(2 * n, n, 1u << 30));
    if (2 / arrangements < alpha) return n;
  }
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  // The fraction converges fast for x < (a + 1) / (a + b + 2); else use I_x(a, b) = 1 − I_{1−x}(b, a).
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return std::nan("");
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) return std::nan("");
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  if (p == 0.5) return 0;
  // Newton's method on cdf(t) − p inside a bracket [lo, hi] that bisection takes over whenever a
  // step would leave it. The CDF is concave for t > 0, so steps from below never overshoot.
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p) lo = hi, hi *= 2;
  const double log_norm = std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * M_PI);
  double t = lo;
  for (int k = 0; k < 200; ++k) {
    const double f = student_t_cdf(t, df) - p;
    if (f == 0) return t;
    (f < 0 ? lo : hi) = t;
    const double density = std::exp(log_norm - (df + 1) / 2 * std::log1p(t * t / df));
    double next = t - f / density;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::abs(next - t) <= 1e-14 * std::max(1.0, std::abs(t))) return next;
    t = next;
  }
  return t;
}

double welch_df(double var_a, size_t n_a, double var_b, size_t n_b) {
  const double ua = var_a / n_a, ub = var_b / n_b;
  return (ua + ub) * (ua + ub) / (ua * ua / (n_a - 1.0) + ub * ub / (n_b - 1.0));
}

Interval t_mean_interval(const std::vector<double>& x, double level) {
  if (x.size() < 2) return {std::nan(""), std::nan("")};
  const double half = student_t_quantile((1 + level) / 2, x.size() - 1.0) * sample_sd(x) / std::sqrt(x.size());
  const double m = mean(x);
  return {m - half, m + half};
}

Permutation sign_flip_p(const std::vector<double>& d) {
  const size_t n = d.size();
  if (n == 0) return {std::nan(""), 0, true};
  const double observed = std::abs(std::accumulate(d.begin(), d.end(), 0.0)) - tie_tolerance(d);
  if (n <= 21) {  // 2^n ≤ kExactArrangements
    const uint64_t total = uint64_t{1} << n;
    uint64_t hits = 0;
    for (uint64_t mask = 0; mask < total; ++mask) {
      double s = 0;
      for (size_t i = 0; i < n; ++i) s += (mask >> i & 1) ? -d[i] : d[i];
      hits += std::abs(s) >= observed;
    }
    return {static_cast<double>(hits) / total, total, true};
  }
  data::Rng rng(kPermutationSeed);
  uint64_t hits = 0;
  for (uint64_t k = 0; k < kPermutationDraws; ++k) {
    double s = 0;
    for (double v : d) s += (rng.next() >> 63) ? -v : v;
    hits += std::abs(s) >= observed;
  }
  return {(1.0 + hits) / (1.0 + kPermutationDraws), kPermutationDraws, false};
}

Permutation two_sample_permutation_p(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t na = a.size(), nb = b.size(), n = na + nb;
  if (na == 0 || nb == 0) return {std::nan(""), 0, true};
  std::vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  const double center = std::accumulate(pooled.begin(), pooled.end(), 0.0) / n;
  for (double& v : pooled) v -= center;  // the statistic is shift-invariant; centered sums cancel less
  double total = 0, total_sq = 0;
  for (double v : pooled) total += v, total_sq += v * v;
  // A relabeling is its A group's sum s and sum of squares q (the pooled totals are fixed). The
  // statistic is Welch's |t| (studentized: valid when the sides' spreads differ, where the plain
  // mean difference rejects 2-3 times too often); with one value a side, |mean a − mean b|.
  auto stat = [&](double s, double q) {
    const double d = std::abs(s / na - (total - s) / nb);
    if (na < 2 || nb < 2) return d;
    const double va = std::max(0.0, q - s * s / na) / (na - 1);
    const double vb = std::max(0.0, (total_sq - q) - (total - s) * (total - s) / nb) / (nb - 1);
    const double se = std::sqrt(va / na + vb / nb);
    return se > 0 ? d / se : d > 0 ? INFINITY : 0.0;
  };
  double s0 = 0, q0 = 0;
  for (size_t i = 0; i < na; ++i) s0 += pooled[i], q0 += pooled[i] * pooled[i];
  const double t0 = stat(s0, q0);
  const double observed = std::isinf(t0) ? t0 : t0 * (1 - 1e-9);  // floating ties reach it
  const uint64_t count = choose_capped(n, na, kExactArrangements);
  if (count <= kExactArrangements) {
    std::vector<size_t> idx(na);  // the A group, as increasing indices into pooled
    std::iota(idx.begin(), idx.end(), 0);
    uint64_t hits = 0, seen = 0;
    while (true) {
      double s = 0, q = 0;
      for (size_t i : idx) s += pooled[i], q += pooled[i] * pooled[i];
      hits += stat(s, q) >= observed, ++seen;
      size_t k = na;  // the next combination: bump the last index that can move, reset the rest
      while (k > 0 && idx[k - 1] == n - na + k - 1) --k;
      if (k == 0) break;
      ++idx[k - 1];
      for (size_t j = k; j < na; ++j) idx[j] = idx[j - 1] + 1;
    }
    return {static_cast<double>(hits) / seen, seen, true};
  }
  data::Rng rng(kPermutationSeed);
  uint64_t hits = 0;
  for (uint64_t k = 0; k < kPermutationDraws; ++k) {
    double s = 0, q = 0;
    for (size_t i = 0; i < na; ++i) {  // a partial Fisher–Yates shuffle: the first na are group A
      std::swap(pooled[i], pooled[i + rng.below(n - i)]);
      s += pooled[i], q += pooled[i] * pooled[i];
    }
    hits += stat(s, q) >= observed;
  }
  return {(1.0 + hits) / (1.0 + kPermutationDraws), kPermutationDraws, false};
}

Comparison compare_values(const SeedValues& a, const SeedValues& b) {
  Comparison c;
  c.n_a = a.values.size(), c.n_b = b.values.size();
  const double nan = std::nan("");
  c.ci = c.ci90 = {nan, nan};
  c.se = c.df = c.sd_a = c.sd_b = nan;
  if (c.n_a == 0 || c.n_b == 0) {
    c.mean_a = c.n_a ? mean(a.values) : nan, c.mean_b = c.n_b ? mean(b.values) : nan;
    c.diff = nan, c.perm.p = nan;
    return c;
  }
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
    c.sd_a = c.sd_b = sample_sd(d);
    c.se = c.sd_a / std::sqrt(d.size()), c.df = d.size() - 1.0;
    c.perm = sign_flip_p(d);
  } else {
    for (double x : a.values)
      for (double y : b.values) count(x, y);
    c.sd_a = sample_sd(a.values), c.sd_b = sample_sd(b.values);
    const double va = c.sd_a * c.sd_a, vb = c.sd_b * c.sd_b;
    c.se = std::sqrt(va / c.n_a + vb / c.n_b);
    c.df = c.se > 0 ? welch_df(va, c.n_a, vb, c.n_b) : c.n_a + c.n_b - 2.0;  // no spread at all: df moot
    c.perm = two_sample_permutation_p(a.values, b.values);
  }
  c.pairs = c.a_lower + c.a_higher + c.equal;
  if (std::isnan(c.se)) return c;  // one value (or one pair) has no spread: no interval
  const double h95 = student_t_quantile(1 - kAlpha / 2, c.df) * c.se, h90 = student_t_quantile(1 - kAlpha, c.df) * c.se;
  c.ci = {c.diff - h95, c.diff + h95}, c.ci90 = {c.diff - h90, c.diff + h90};
  return c;
}

int seeds_for_difference(const Comparison& c, double alpha) {
  if (std::isnan(c.se)) return 0;
  if (!(std::abs(c.diff) > 0)) return kNeverEnough;
  return smallest_n(fewest_permutation_seeds(c.paired, alpha), [&c, alpha](int n) {
    const Projection p = project(c, n);
    return student_t_quantile(1 - alpha / 2, p.df) * p.se < std::abs(c.diff);
  });
}

int seeds_for_tie(const Comparison& c, double margin, double alpha) {
  if (std::isnan(c.se)) return 0;
  if (std::isnan(margin) || !(std::abs(c.diff) < margin || (c.se == 0 && std::abs(c.diff) <= margin)))
    return kNeverEnough;
  return smallest_n(2, [&c, margin, alpha](int n) {
    const Projection p = project(c, n);
    return std::abs(c.diff) + student_t_quantile(1 - alpha, p.df) * p.se <= margin;
  });
}

Verdict decide(const Comparison& c, double margin, int failed, double alpha) {
  Verdict v;
  v.alpha = alpha;
  v.failed = failed, v.margin = margin;
  v.tost_p = std::nan("");
  v.ci = v.ci_tost = {std::nan(""), std::nan("")};
  if (std::isnan(c.ci.lo)) return v;  // no spread: no test, nothing to project from
  if (alpha == kAlpha) {
    v.ci = c.ci, v.ci_tost = c.ci90;
  } else {
    const double h = student_t_quantile(1 - alpha / 2, c.df) * c.se, ht = student_t_quantile(1 - alpha, c.df) * c.se;
    v.ci = {c.diff - h, c.diff + h}, v.ci_tost = {c.diff - ht, c.diff + ht};
  }
  v.t_excludes_zero = v.ci.lo > 0 || v.ci.hi < 0;
  if (v.t_excludes_zero && c.perm.p < alpha) v.sign = c.diff > 0 ? 1 : -1;
  if (!std::isnan(margin)) {
    // TOST: H0 diff ≤ −m, rejected when (diff + m) / se is large; H0 diff ≥ m likewise.
    const double p_low = c.se > 0 ? student_t_cdf(-(c.diff + margin) / c.se, c.df) : (c.diff > -margin ? 0 : 1);
    const double p_high = c.se > 0 ? student_t_cdf((c.diff - margin) / c.se, c.df) : (c.diff < margin ? 0 : 1);
    v.tost_p = std::max(p_low, p_high);
    v.tie = v.ci_tost.lo >= -margin && v.ci_tost.hi <= margin;
  }
  // The seeds each outcome would need; where the projection is met already but the outcome is
  // not (the permutation p fell short at these seeds), at least one more.
  const int now = static_cast<int>(c.paired ? c.n_a : std::min(c.n_a, c.n_b));
  auto one_more = [now](int n, bool reached) { return reached || n == kNeverEnough ? n : std::max(n, now + 1); };
  v.seeds_difference = one_more(seeds_for_difference(c, alpha), v.sign != 0);
  v.seeds_tie = std::isnan(margin) ? 0 : one_more(seeds_for_tie(c, margin, alpha), v.tie);
  if (failed > 0) v.sign = 0, v.tie = false;
  if (!v.decided() && failed == 0) {
    const int d = v.seeds_difference, t = v.seeds_tie == 0 ? kNeverEnough : v.seeds_tie;
    v.seeds_needed = d == kNeverEnough ? t : t == kNeverEnough ? d : std::min(d, t);
  }
  return v;
}

}  // namespace lmx
