// Lecture 01 probes: activation functions, FFN parameter counts, hidden-layer sparsity.
// The activations are the model's own (model/ffn.h `activation`), evaluated in float64.
#include <fmt/format.h>
#include "torch_api.h"

#include <cmath>

#include "config/registry.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "experiments/probe.h"
#include "formats/checkpoint.h"
#include "model/ffn.h"
#include "model/registry.h"
#include "model/sizes.h"
#include "util/error.h"

namespace lmx::experiments {

namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

// Grid [lo, hi] with the given step, float64.
torch::Tensor grid(double lo, double hi, double step) {
  return torch::linspace(lo, hi, static_cast<int64_t>(std::llround((hi - lo) / step)) + 1, kF64);
}

struct Extremum {
  double at, value;
};

Extremum argmin(const torch::Tensor& x, const torch::Tensor& y) {
  const int64_t i = y.argmin().item<int64_t>();
  return {x[i].item<double>(), y[i].item<double>()};
}

Extremum argmax(const torch::Tensor& x, const torch::Tensor& y) {
  const int64_t i = y.argmax().item<int64_t>();
  return {x[i].item<double>(), y[i].item<double>()};
}

// Lambert W(z) (principal branch, z > 0) by Newton on w·e^w = z.
double lambert_w(double z) {
  double w = 0.5;
  for (int i = 0; i < 50; ++i) w -= (w * std::exp(w) - z) / (std::exp(w) * (w + 1));
  return w;
}

// GELU's minimum: root of d/dx [x·Φ(x)] = Φ(x) + x·φ(x), by Newton (derivative φ(x)(2 − x²)).
double gelu_min_location() {
  auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  auto phi = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); };
  double x = -0.75;
  for (int i = 0; i < 50; ++i) x -= (Phi(x) + x * phi(x)) / (phi(x) * (2 - x * x));
  return x;
}

double gelu_exact(double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

ProbeResult probe_activations(const ProbeOptions&) {
  struct Column {
    std::string label, name;
    double beta;
  };
  const std::vector<Column> columns = {{"relu", "relu", 1.0},          {"gelu", "gelu", 1.0},
                                       {"gelu_tanh", "gelu_tanh", 1.0}, {"silu", "silu", 1.0},
                                       {"swish β=0.1", "swish", 0.1},   {"swish β=1", "swish", 1.0},
                                       {"swish β=10", "swish", 10.0}};
  const std::vector<double> xs = {-5, -3, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 5};  // ±5: the lecture's swish example
  auto x = torch::tensor(xs, kF64);
  ProbeResult res;
  Table values;
  values.header = {"x"};
  std::vector<torch::Tensor> ys;
  for (const auto& c : columns) {
    values.header.push_back(c.label);
    ys.push_back(activation(c.name, x, c.beta));
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<std::string> row = {fmt::format("{:g}", xs[i])};
    for (const auto& y : ys) row.push_back(fixed(y[i].item<double>()));
    values.add(row);
  }
  res.tables.push_back({"values", "Activation values φ(x)", values});

  Table s;
  s.header = {"quantity", "grid", "at x", "value", "reference at x", "reference value"};
  {  // max |gelu − gelu_tanh| on [−5, 0]
    auto g = grid(-5, 0, 1e-5);
    auto d = (activation("gelu", g) - activation("gelu_tanh", g)).abs();
    auto m = argmax(g, d);
    s.add({"max |gelu − gelu_tanh| on [−5, 0]", "step 1e-5", fixed(m.at, 5), sci(m.value), "", ""});
  }
  {  // negative minima
    auto g = grid(-3, 0, 1e-6);
    auto m = argmin(g, activation("gelu", g));
    const double ref = gelu_min_location();
    s.add({"gelu minimum", "step 1e-6", fixed(m.at), fixed(m.value), fixed(ref), fixed(gelu_exact(ref))});
    auto m2 = argmin(g, activation("silu", g));
    const double w = lambert_w(1.0 / std::exp(1.0));  // silu min: x = −1 − W(1/e), value −W(1/e)
    s.add({"silu minimum", "step 1e-6", fixed(m2.at), fixed(m2.value), fixed(-1 - w), fixed(-w)});
  }
  {  // swish limits on [−3, 3]
    auto g = grid(-3, 3, 1e-4);
    for (double beta : {0.01, 0.1}) {
      auto m = argmax(g, (activation("swish", g, beta) - g / 2).abs());
      // leading order: x·σ(βx) − x/2 ≈ βx²/4, largest at |x| = 3
      s.add({fmt::format("swish β={:g}: max |swish − x/2| on [−3, 3]", beta), "step 1e-4", fixed(m.at, 4),
             sci(m.value), "±3 (≈ βx²/4)", sci(beta * 9 / 4)});
    }
    const double w = lambert_w(1.0 / std::exp(1.0));
    for (double beta : {10.0, 100.0}) {
      auto m = argmax(g, (activation("swish", g, beta) - activation("relu", g)).abs());
      // exact: |x|·σ(−β|x|) at both signs, largest W(1/e)/β at |x| = (1 + W(1/e))/β
      s.add({fmt::format("swish β={:g}: max |swish − relu| on [−3, 3]", beta), "step 1e-4", fixed(m.at, 4),
             sci(m.value), "±" + fixed((1 + w) / beta, 4), sci(w / beta)});
    }
  }
  res.tables.push_back({"summary", "Differences, minima and limits (grid search; references in closed form)", s});
  return res;
}

ProbeResult probe_ffn_params(const ProbeOptions&) {
  struct Variant {
    std::string ffn;
    int d_ff;
  };
  const std::vector<Variant> variants = {{"relu", 256}, {"swiglu", 256}, {"swiglu", 171}, {"swiglu", 0}};
  Table t;
  t.header = {"ffn", "d_ff", "formula", "parameters (numel)", "sizes.h", "vs plain 256"};
  int64_t plain = 0;
  for (const auto& v : variants) {
    ModelConfig cfg;  // d_model 64, biases on
    cfg.vocab_size = 1;
    cfg.ffn = v.ffn;
    cfg.d_ff = v.d_ff;
    const bool gated = registry::ffn(cfg).gated;
    const int64_t C = cfg.d_model, F = cfg.ffn_hidden(gated);
    auto module = make_ffn(cfg);
    int64_t numel = 0;
    for (const auto& p : module->parameters()) numel += p.numel();
    const int64_t analytic = count_params(cfg).ffn_per_layer;
    if (analytic != numel)
      throw RuntimeError(fmt::format("ffn-params: {} d_ff {}: module has {} parameters, sizes.h says {}", v.ffn, F,
                                     numel, analytic));
    if (plain == 0) plain = numel;
    const std::string formula = gated ? fmt::format("3·{}·{} + 2·{} + {}", C, F, F, C)
                                      : fmt::format("2·{}·{} + {} + {}", C, F, F, C);
    t.add({v.ffn, v.d_ff == 0 ? fmt::format("{} (auto)", F) : std::to_string(F), formula, std::to_string(numel),
           std::to_string(analytic), fmt::format("{:.3f}×", static_cast<double>(numel) / plain)});
  }
  ProbeResult res;
  res.tables.push_back({"ffn_params", "Parameters of one FFN block (d = 64, with biases)", t});
  return res;
}

ProbeResult probe_sparsity(const ProbeOptions& opt) {
  if (opt.checkpoint.empty())
    throw InputError("probe sparsity needs a checkpoint", "lmx probe sparsity runs/NAME/TIME/seed0/model.safetensors");
  if (opt.docs < 1) throw InputError(fmt::format("--docs {}: must be at least 1", opt.docs));
  torch::NoGradGuard no_grad;
  Checkpoint ck = read_checkpoint(opt.checkpoint);
  ModernLM model = load_model(ck);
  model->eval();
  data::Corpus corpus = data::load_corpus(ck.config.data);
  const size_t n_docs = std::min<size_t>(opt.docs, corpus.val.size());
  std::vector<data::Doc> docs(corpus.val.begin(), corpus.val.begin() + n_docs);
  auto rows = data::make_rows(docs, data::Layout::Doc, data::train_row_len(ck.config), corpus.vocab.eos);
  const int64_t L = model->n_layers();
  std::vector<int64_t> zeros(L, 0), total(L, 0);
  std::vector<torch::Tensor> ever_positive(L);  // (F) bool per layer
  for (int64_t i = 0; i < L; ++i) model->ffn(i)->keep_hidden = true;
  int64_t positions = 0;
  for (const auto& batch : data::eval_batches(rows, 32, corpus.vocab.pad)) {
    model->forward(batch.inputs);
    auto valid = batch.targets != data::kIgnore;  // (B, T): real tokens, not padding
    positions += valid.sum().item<int64_t>();
    for (int64_t i = 0; i < L; ++i) {
      auto h = model->ffn(i)->last_hidden.index({valid});  // (N, F)
      zeros[i] += (h == 0).sum().item<int64_t>();
      total[i] += h.numel();
      auto pos = (h > 0).any(0);  // (F)
      ever_positive[i] = ever_positive[i].defined() ? ever_positive[i].logical_or(pos) : pos;
    }
  }
  for (int64_t i = 0; i < L; ++i) {
    model->ffn(i)->keep_hidden = false;
    model->ffn(i)->last_hidden = torch::Tensor();
  }
  Table t;
  t.header = {"layer", "ffn", "hidden", "positions", "zero fraction", "dead neurons", "dead fraction"};
  for (int64_t i = 0; i < L; ++i) {
    const int64_t F = ever_positive[i].numel();
    const int64_t dead = F - ever_positive[i].sum().item<int64_t>();
    t.add({std::to_string(i), ck.config.model.ffn, std::to_string(F), std::to_string(positions),
           fixed(static_cast<double>(zeros[i]) / std::max<int64_t>(1, total[i]), 4), std::to_string(dead),
           fixed(static_cast<double>(dead) / F, 4)});
  }
  ProbeResult res;
  res.tables.push_back({"sparsity", fmt::format("FFN hidden sparsity, first {} validation documents", n_docs), t});
  res.notes.push_back("hidden = φ(W1x), the activation output before any gating product; dead = never > 0 on these documents");
  return res;
}

}  // namespace lmx::experiments
