// Lecture 04 probes: RoPE's relative property, its long-range decay, the two RoPE layouts,
// and the T5 bucket table. RoPE is the model's RoPEImpl (model/position/rope.h); a vector
// is rotated to position p by rotate(x (1, 1, D), start = p).
#include <fmt/format.h>
#include "torch_api.h"

#include <cmath>

#include "experiments/probe.h"
#include "model/position/absolute.h"
#include "model/position/rope.h"
#include "model/position/t5_bias.h"

namespace lmx::experiments {

namespace {

constexpr int64_t kDim = 64;

RopeOptions rope_layout(int64_t dim, bool interleaved) {
  RopeOptions o;  // θ 10000, no scaling
  o.dim = dim;
  o.interleaved = interleaved;
  return o;
}

// R_p x for a (D) vector -> (D).
torch::Tensor rotate_at(RoPEImpl& rope, const torch::Tensor& x, int64_t p) {
  return rope.rotate(x.view({1, 1, -1}), p).view({-1});
}

double dot64(const torch::Tensor& a, const torch::Tensor& b) {
  return a.to(torch::kFloat64).dot(b.to(torch::kFloat64)).item<double>();
}

}  // namespace

ProbeResult probe_rope_relative(const ProbeOptions& opt) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(opt.seed);
  auto q = torch::randn({kDim}), k = torch::randn({kDim});  // (D) float32
  RoPEImpl rope(rope_layout(kDim, /*interleaved=*/false));
  const std::vector<std::pair<int64_t, int64_t>> pairs = {{3, 1}, {10, 8}, {100, 98}, {1000, 998}};
  auto pe = SinusoidalPositionImpl::table(1001, kDim);  // (L, D)
  Table t;
  t.header = {"m", "n", "m − n", "RoPE (R_m q)·(R_n k)", "sinusoidal (q + p_m)·(k + p_n)", "|R_m q|", "|q|"};
  double rope_lo = 1e300, rope_hi = -1e300, sin_lo = 1e300, sin_hi = -1e300, norm_err = 0;
  for (auto [m, n] : pairs) {
    auto rq = rotate_at(rope, q, m);
    const double s_rope = dot64(rq, rotate_at(rope, k, n));
    const double s_sin = dot64(q + pe[m], k + pe[n]);
    const double nq = std::sqrt(dot64(q, q)), nrq = std::sqrt(dot64(rq, rq));
    rope_lo = std::min(rope_lo, s_rope), rope_hi = std::max(rope_hi, s_rope);
    sin_lo = std::min(sin_lo, s_sin), sin_hi = std::max(sin_hi, s_sin);
    norm_err = std::max(norm_err, std::abs(nrq - nq));
    t.add({std::to_string(m), std::to_string(n), std::to_string(m - n), fixed(s_rope), fixed(s_sin), fixed(nrq),
           fixed(nq)});
  }
  ProbeResult res;
  res.tables.push_back({"rope_relative", fmt::format("One random (q, k) pair, D = {}, θ = 10000 (seed {})", kDim, opt.seed), t});
  Table s;
  s.header = {"quantity", "value"};
  s.add({"RoPE score spread (max − min)", sci(rope_hi - rope_lo)});
  s.add({"sinusoidal score spread (max − min)", sci(sin_hi - sin_lo)});
  s.add({"max ||R_m q| − |q||", sci(norm_err)});
  res.tables.push_back({"summary", "Spread over the four pairs", s});
  return res;
}

ProbeResult probe_rope_decay(const ProbeOptions&) {
  torch::NoGradGuard no_grad;
  RoPEImpl rope(rope_layout(kDim, /*interleaved=*/false));
  auto ones = torch::ones({kDim});
  Table t;
  t.header = {"distance", "score", "score / D", "reference Σ 2·cos(d·θ^(−2i/D))"};
  for (int64_t d : {0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}) {
    const double score = dot64(rotate_at(rope, ones, d), rotate_at(rope, ones, 0));
    double ref = 0;  // each pair i contributes 2·cos(d·ω_i) for q = k = ones
    for (int64_t i = 0; i < kDim / 2; ++i) ref += 2 * std::cos(d * std::pow(10000.0, -2.0 * i / kDim));
    t.add({std::to_string(d), fixed(score, 4), fixed(score / kDim, 4), fixed(ref, 4)});
  }
  ProbeResult res;
  res.tables.push_back({"rope_decay", "RoPE score of q = k = ones(64), θ = 10000, at distance d = m − n (n = 0)", t});
  return res;
}

ProbeResult probe_rope_layout(const ProbeOptions& opt) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(opt.seed);
  RoPEImpl inter(rope_layout(kDim, /*interleaved=*/true)), half(rope_layout(kDim, /*interleaved=*/false));
  // Interleaved pair (2i, 2i+1) is half-split pair (i, i + D/2): v_half = v_int[perm].
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < kDim; i += 2) perm.push_back(i);
  for (int64_t i = 1; i < kDim; i += 2) perm.push_back(i);
  auto P = torch::tensor(perm, torch::kInt64);
  Table t;
  t.header = {"m", "n", "interleaved", "half-split, permuted", "|Δ|", "half-split, not permuted"};
  double worst = 0;
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {3, 1}, {10, 8}, {37, 5}, {100, 98}, {500, 0}}) {
    auto q = torch::randn({kDim}), k = torch::randn({kDim});
    const double s_int = dot64(rotate_at(inter, q, m), rotate_at(inter, k, n));
    const double s_half = dot64(rotate_at(half, q.index_select(0, P), m), rotate_at(half, k.index_select(0, P), n));
    const double s_plain = dot64(rotate_at(half, q, m), rotate_at(half, k, n));
    worst = std::max(worst, std::abs(s_int - s_half));
    t.add({std::to_string(m), std::to_string(n), fixed(s_int), fixed(s_half), sci(std::abs(s_int - s_half)),
           fixed(s_plain)});
  }
  ProbeResult res;
  res.tables.push_back({"rope_layout", "Interleaved (2i, 2i+1) vs half-split (i, i + D/2) RoPE, random (q, k) per row", t});
  res.notes.push_back(fmt::format("permutation: half[i] = int[2i], half[i + D/2] = int[2i + 1]; max |Δ| = {}", sci(worst)));
  return res;
}

ProbeResult probe_t5_buckets(const ProbeOptions&) {
  const int64_t N = 32, max_distance = 128;
  std::vector<int64_t> distances;
  for (int64_t d = 0; d <= 10; ++d) distances.push_back(d);
  for (int64_t d : {12, 15, 16, 20, 32, 50, 64, 100, 128, 200, 500}) distances.push_back(d);
  auto rel = -torch::tensor(distances, torch::kInt64);  // key − query = −distance (causal)
  auto buckets = t5_relative_position_bucket(rel, N, max_distance);
  Table t;
  t.header = {"distance", "bucket", "kind"};
  for (size_t i = 0; i < distances.size(); ++i) {
    const int64_t b = buckets[i].item<int64_t>();
    t.add({std::to_string(distances[i]), std::to_string(b),
           distances[i] < N / 2 ? "exact" : (b == N - 1 ? "log-spaced (last)" : "log-spaced")});
  }
  ProbeResult res;
  res.tables.push_back({"t5_buckets", "T5 relative-position buckets (causal, 32 buckets, max distance 128)", t});
  return res;
}

}  // namespace lmx::experiments
