// The reference twins of the fused kernels (cpu_kernels.h): every entry point of a variant, as
// plain loops over doubles, written from the formulas (as llm.c keeps a naive matmul beside its
// fast one), not from the SIMD code: no tiles, no lanes, no vector exp or erfc approximation,
// no blocking, no scratch. The tests hold each variant against these within stated tolerances;
// nothing else calls them (they are slow: the attention forward is a triple loop per head).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu_kernels.h"

namespace lmx::kernels::reference {

namespace {

// RoPE of one D-row (floats or doubles) at position pos by sign·θ (sign −1: the inverse
// rotation), in doubles. Pairs (d, d + D/2), or (2d, 2d + 1) when interleaved; identity without
// tables.
template <class T>
std::vector<double> rope(const T* x, int64_t pos, const AttnShape& s, double sign) {
  const int64_t D = s.D, h = D / 2;
  std::vector<double> y(x, x + D);
  if (!s.cos) return y;
  for (int64_t d = 0; d < h; ++d) {
    const double c = s.cos[pos * h + d], sn = sign * s.sin[pos * h + d];
    const int64_t i = s.interleaved ? 2 * d : d, j = s.interleaved ? 2 * d + 1 : d + h;
    y[i] = x[i] * c - x[j] * sn;
    y[j] = x[j] * c + x[i] * sn;
  }
  return y;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t d = 0; d < a.size(); ++d) sum += a[d] * b[d];
  return sum;
}

// A scaled score u as the softmax sees it: c·tanh(u/c) with a soft-cap c > 0, else u; and its
// derivative in u (1 − tanh²(u/c), or 1).
double capped(double u, const AttnShape& s) { return s.softcap > 0 ? s.softcap * std::tanh(u / s.softcap) : u; }
double capped_grad(double u, const AttnShape& s) {
  if (s.softcap <= 0) return 1.0;
  const double t = std::tanh(u / s.softcap);
  return 1.0 - t * t;
}

// Query row i's probabilities over the keys [0, n) (zero before first_visible(i)), their
// log-sum-exp, and each key's scaled score before the cap in u.
std::vector<double> softmax(const std::vector<double>& qr, const std::vector<std::vector<double>>& kr, int64_t i,
                            const AttnShape& s, double& lse, std::vector<double>& u) {
  const int64_t lo = s.first_visible(i), n = s.visible(i);
  std::vector<double> p(n, 0.0);
  u.assign(n, 0.0);
  double m = -INFINITY, sum = 0;
  for (int64_t j = lo; j < n; ++j) m = std::max(m, p[j] = capped(u[j] = s.scale * dot(qr, kr[j]), s));
  for (int64_t j = lo; j < n; ++j) sum += p[j] = std::exp(p[j] - m);
  for (auto& x : p) x /= sum;
  lse = m + std::log(sum);
  return p;
}

// Every key row rotated at its own position.
std::vector<std::vector<double>> rotated_keys(const float* k, int64_t k_st, const AttnShape& s) {
  std::vector<std::vector<double>> kr(s.Tk);
  for (int64_t j = 0; j < s.Tk; ++j) kr[j] = rope(k + j * k_st, j, s, 1.0);
  return kr;
}

// Attention of query row i of head r over rotated keys kr: o and lse.
void attend(const ForwardArgs& a, const AttnShape& s, const std::vector<std::vector<double>>& kr, int64_t r,
            int64_t i) {
  const int64_t D = s.D, n = s.visible(i);
  double lse = 0;
  std::vector<double> u;
  const auto p = softmax(rope(a.q + r * a.q_sh + i * a.q_st, s.q_start + i, s, 1.0), kr, i, s, lse, u);
  float* o = a.o + r * a.o_sh + i * a.o_st;
  for (int64_t d = 0; d < D; ++d) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += p[j] * a.v[j * a.v_st + d];
    o[d] = static_cast<float>(sum);
  }
  if (a.lse) a.lse[r * s.Tq + i] = static_cast<float>(lse);
}

// σ(x), Φ(x) and the standard normal density, in doubles.
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }

// φ(x) and φ'(x) of an activation, from their closed forms.
double act(const ActOp& op, double x) {
  switch (op.kind) {
    case ActKind::Relu: return x > 0 ? x : 0.0;
    case ActKind::Gelu: return x * normal_cdf(x);
    case ActKind::GeluTanh: {
      const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(u));
    }
    case ActKind::Silu: return x * sigmoid(x);
    case ActKind::Swish: return x * sigmoid(op.beta * x);
    case ActKind::Relu2: return x > 0 ? x * x : 0.0;
    case ActKind::Custom: return op.custom->phi(static_cast<float>(x), op.beta);  // its own scalar function
    case ActKind::SoftCap: return op.beta * std::tanh(x / op.beta);
  }
  return NAN;
}
double act_grad(const ActOp& op, double x) {
  switch (op.kind) {
    case ActKind::Relu: return x > 0 ? 1.0 : 0.0;
    case ActKind::Gelu: return normal_cdf(x) + x * normal_pdf(x);
    case ActKind::GeluTanh: {
      const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case ActKind::Silu:
    case ActKind::Swish: {
      const double b = op.kind == ActKind::Silu ? 1.0 : op.beta, sg = sigmoid(b * x);
      return sg + b * x * sg * (1.0 - sg);
    }
    case ActKind::Relu2: return x > 0 ? 2.0 * x : 0.0;
    case ActKind::Custom: return op.custom->grad(static_cast<float>(x), op.beta);
    case ActKind::SoftCap: {
      const double t = std::tanh(x / op.beta);
      return 1.0 - t * t;
    }
  }
  return NAN;
}
// What a variant's forward keeps for its backward (act_keeps): GELU's Φ(x).
void keep(const ActOp& op, double x, float* k) {
  if (k && act_keeps(op.kind)) *k = static_cast<float>(normal_cdf(x));
}

// Row n's statistics from h in doubles: the mean (LayerNorm; 0 for RMSNorm) and 1/σ or 1/rms.
void row_stats(const float* h, int64_t C, double eps, bool centered, double& mu, double& s) {
  mu = 0;
  if (centered) {
    for (int64_t c = 0; c < C; ++c) mu += h[c];
    mu /= C;
  }
  double sq = 0;
  for (int64_t c = 0; c < C; ++c) sq += (h[c] - mu) * (h[c] - mu);
  s = 1.0 / std::sqrt(sq / C + eps);
}

void norm_forward(const NormArgs& p, int64_t begin, int64_t end, bool centered) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float* x = p.x + n * C;
    std::vector<float> h(x, x + C);
    if (p.a)
      for (int64_t c = 0; c < C; ++c) p.h[n * C + c] = h[c] = x[c] + p.a[n * C + c];
    double mu, s;
    row_stats(h.data(), C, p.eps, centered, mu, s);
    if (centered) p.mean[n] = static_cast<float>(mu);
    p.rstd[n] = static_cast<float>(s);
    for (int64_t c = 0; c < C; ++c)
      p.y[n * C + c] = static_cast<float>((h[c] - mu) * s * p.w[c] + (centered ? p.b[c] : 0.0));
  }
}

// dx = s·(g − mean(g) − x̂·mean(g·x̂)) (LayerNorm) or s·g − x̂·mean(g·x̂) with x̂ = h·s (RMSNorm), g =
// dy·w, from the forward's row statistics (NormGradArgs carries no ε to recompute them).
void norm_backward(const NormGradArgs& p, int64_t begin, int64_t end, bool centered) {
  const int64_t C = p.C;
  for (int64_t n = begin; n < end; ++n) {
    const float *h = p.h + n * C, *dy = p.dy + n * C;
    const double mu = centered ? p.mean[n] : 0.0, s = p.rstd[n];
    double m1 = 0, m2 = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double xh = (h[c] - mu) * s, g = static_cast<double>(dy[c]) * p.w[c];
      m1 += g;
      m2 += g * xh;
    }
    m1 /= C, m2 /= C;
    for (int64_t c = 0; c < C; ++c) {
      const double xh = (h[c] - mu) * s, g = static_cast<double>(dy[c]) * p.w[c];
      const double dx = s * (g - (centered ? m1 : 0.0) - xh * m2) + (p.dh ? p.dh[n * C + c] : 0.0);
      if (p.dx) p.dx[n * C + c] = static_cast<float>(dx);
      if (!p.dw) continue;
      p.dw[c] = static_cast<float>(p.dw[c] + dy[c] * xh);
      if (centered) p.db[c] += dy[c];
    }
  }
}

}  // namespace

void forward(const ForwardArgs& a, const AttnShape& s, float*) {
  const auto kr = rotated_keys(a.k, a.k_st, s);
  for (int64_t r = 0; r < s.group; ++r)
    for (int64_t i = 0; i < s.Tq; ++i) attend(a, s, kr, r, i);
}

void decode(const ForwardArgs& a, const float* Kt, int64_t kt_ld, const AttnShape& s, float*) {
  std::vector<std::vector<double>> kr(s.Tk, std::vector<double>(s.D));
  for (int64_t j = 0; j < s.Tk; ++j)
    for (int64_t d = 0; d < s.D; ++d) kr[j][d] = Kt[d * kt_ld + j];  // already rotated
  for (int64_t r = 0; r < s.group; ++r) attend(a, s, kr, r, 0);
}

void backward(const BackwardArgs& a, const AttnShape& s, float*) {
  const int64_t D = s.D, Tk = s.Tk;
  const auto kr = rotated_keys(a.k, a.k_st, s);
  std::vector<std::vector<double>> dkr(Tk, std::vector<double>(D)), dv(Tk, std::vector<double>(D));
  for (int64_t r = 0; r < s.group; ++r)
    for (int64_t i = 0; i < s.Tq; ++i) {
      const int64_t n = s.visible(i), pos = s.q_start + i;
      const auto qr = rope(a.q + r * a.q_sh + i * a.q_st, pos, s, 1.0);
      double lse = 0;
      std::vector<double> u;
      const auto p = softmax(qr, kr, i, s, lse, u);
      const float* dout = a.dout + r * a.o_sh + i * a.o_st;
      std::vector<double> dpv(n), dqr(D);
      double row = 0;  // Σ_j p_j·dP_j = dO·O
      for (int64_t j = 0; j < n; ++j) {
        double dp = 0;
        for (int64_t d = 0; d < D; ++d) dp += static_cast<double>(dout[d]) * a.v[j * a.v_st + d];
        dpv[j] = dp;
        row += p[j] * dp;
      }
      for (int64_t j = 0; j < n; ++j) {
        const double ds = p[j] * (dpv[j] - row) * capped_grad(u[j], s) * s.scale;
        for (int64_t d = 0; d < D; ++d) {
          dqr[d] += ds * kr[j][d];
          dkr[j][d] += ds * qr[d];
          dv[j][d] += p[j] * dout[d];
        }
      }
      const auto dq = rope(dqr.data(), pos, s, -1.0);
      for (int64_t d = 0; d < D; ++d) a.dq[r * a.dq_sh + i * a.dq_st + d] = static_cast<float>(dq[d]);
    }
  for (int64_t j = 0; j < Tk; ++j) {
    const auto dk = rope(dkr[j].data(), j, s, -1.0);
    for (int64_t d = 0; d < D; ++d) {
      a.dk[j * a.dk_st + d] = static_cast<float>(dk[d]);
      a.dv[j * a.dv_st + d] = static_cast<float>(dv[j][d]);
    }
  }
}

void act_forward(const ActOp& op, const float* x, int64_t n, float* y, float* kept) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(act(op, x[i]));
    keep(op, x[i], kept ? kept + i : nullptr);
  }
}

void act_backward(const ActOp& op, const float* x, const float*, const float* dy, int64_t n, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(dy[i] * act_grad(op, x[i]));
}

void glu_forward(const ActOp& op, const float* gu, int64_t rows, int64_t F, float* out, float* kept) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t f = 0; f < F; ++f) {
      const double g = gu[r * 2 * F + f], u = gu[r * 2 * F + F + f];
      out[r * F + f] = static_cast<float>(act(op, g) * u);
      keep(op, g, kept ? kept + r * F + f : nullptr);
    }
}

void glu_backward(const ActOp& op, const float* gu, const float*, const float* dout, int64_t rows, int64_t F,
                  float* dgu) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t f = 0; f < F; ++f) {
      const double g = gu[r * 2 * F + f], u = gu[r * 2 * F + F + f], d = dout[r * F + f];
      dgu[r * 2 * F + f] = static_cast<float>(d * u * act_grad(op, g));
      dgu[r * 2 * F + F + f] = static_cast<float>(d * act(op, g));
    }
}

void layernorm_forward(const NormArgs& p, int64_t begin, int64_t end) { norm_forward(p, begin, end, true); }
void rmsnorm_forward(const NormArgs& p, int64_t begin, int64_t end) { norm_forward(p, begin, end, false); }
void layernorm_backward(const NormGradArgs& p, int64_t begin, int64_t end) {
  norm_backward(p, begin, end, true);
}
void rmsnorm_backward(const NormGradArgs& p, int64_t begin, int64_t end) {
  norm_backward(p, begin, end, false);
}

void cross_entropy(const CrossEntropyArgs& p, int64_t begin, int64_t end) {
  const int64_t V = p.V;
  for (int64_t r = begin; r < end; ++r) {
    const float* x = p.logits + r * V;
    float* d = p.dlogits + r * V;
    const int64_t t = p.targets[r];
    if (t == p.ignore) {
      std::fill(d, d + V, 0.0f);
      p.losses[r] = 0;
      if (p.lse) p.lse[r] = 0;
      continue;
    }
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < V; ++j) m = std::max<double>(m, x[j]);
    for (int64_t j = 0; j < V; ++j) sum += std::exp(x[j] - m);
    p.losses[r] = static_cast<float>(m + std::log(sum) - x[t]);
    if (p.lse) p.lse[r] = static_cast<float>(m + std::log(sum));
    for (int64_t j = 0; j < V; ++j)
      d[j] = static_cast<float>(p.scale * (std::exp(x[j] - m) / sum - (j == t ? 1.0 : 0.0)));
  }
}

}  // namespace lmx::kernels::reference
