// Lecture 02 probes: norm invariances, and gradient norms at initialization for post- vs
// pre-norm models of several depths.
#include <fmt/format.h>
#include "torch_api.h"

#include <cmath>

#include "config/registry.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "experiments/probe.h"
#include "model/lm.h"
#include "model/norm.h"
#include "model/registry.h"
#include "train/trainer.h"
#include "util/error.h"

namespace lmx::experiments {

namespace {

}  // namespace

ProbeResult probe_norm_invariance(const ProbeOptions& opt) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(opt.seed);
  const int64_t C = 64;
  ModelConfig cfg;  // norm_eps = 1e-5
  cfg.norm = "layernorm";
  auto ln = make_norm(cfg, C);
  cfg.norm = "rmsnorm";
  auto rms = make_norm(cfg, C);
  auto x = torch::randn({16, C}) + 0.5;  // (N, C) float32, mean ≠ 0
  Table t;
  t.header = {"norm", "comparison", "max |Δ output|", "expected"};
  for (auto [name, norm] : {std::pair{"LayerNorm", ln}, std::pair{"RMSNorm", rms}}) {
    t.add({name, "N(3x) vs N(x)", sci(max_abs(norm->forward(3 * x), norm->forward(x))), "≈ 0 (ε only)"});
    t.add({name, "N(x + 5) vs N(x)", sci(max_abs(norm->forward(x + 5), norm->forward(x))),
           std::string(name) == "LayerNorm" ? "≈ 0 (re-centred)" : "large (no re-centring)"});
  }
  auto x0 = x - x.mean(-1, /*keepdim=*/true);  // zero mean per row
  t.add({"RMSNorm vs LayerNorm", "zero-mean input", sci(max_abs(rms->forward(x0), ln->forward(x0))), "≈ 0"});
  t.add({"RMSNorm vs LayerNorm", "input with mean ≠ 0", sci(max_abs(rms->forward(x), ln->forward(x))), "large"});

  // Against the formulas, in float64, with random scale and shift.
  auto gamma = torch::randn({C}), beta = torch::randn({C});
  const double eps = cfg.norm_eps;
  auto xd = x.to(torch::kFloat64), gd = gamma.to(torch::kFloat64), bd = beta.to(torch::kFloat64);
  std::dynamic_pointer_cast<RMSNormImpl>(rms)->weight.copy_(gamma);
  auto rms_ref = xd / torch::sqrt(xd.pow(2).mean(-1, true) + eps) * gd;  // x / √(mean(x²) + ε) · γ
  t.add({"RMSNorm", "vs x / √(mean(x²) + ε) · γ (float64)", sci(max_abs(rms->forward(x), rms_ref)), "≈ 0 (float32)"});
  auto lnp = std::dynamic_pointer_cast<LayerNormImpl>(ln);
  lnp->weight.copy_(gamma);
  lnp->bias.copy_(beta);
  auto mu = xd.mean(-1, true), var = (xd - mu).pow(2).mean(-1, true);
  auto ln_ref = (xd - mu) / torch::sqrt(var + eps) * gd + bd;  // (x − μ) / √(σ² + ε) · γ + β
  t.add({"LayerNorm", "vs (x − μ) / √(σ² + ε) · γ + β (float64)", sci(max_abs(ln->forward(x), ln_ref)),
         "≈ 0 (float32)"});
  ProbeResult res;
  res.tables.push_back({"norm_invariance", "LayerNorm and RMSNorm (C = 64, ε = 1e-5, 16 random rows)", t});
  return res;
}

ProbeResult probe_gradnorm(const ProbeOptions& opt) {
  if (opt.depths.empty()) throw InputError("--depths is empty", "example: --depths 6,12,24");
  Config base = load_probe_config(opt.config.empty() ? "configs/textbook.yaml" : opt.config);
  // The fixed batch: the first 32 training documents of the corpus (one row each).
  if (registry::corpus(base.data).doc_counts)
    for (int* n : {&base.data.train_docs, &base.data.val_docs, &base.data.test_docs}) *n = std::min(*n, 32);
  data::Corpus corpus = data::load_corpus(base.data);
  base = resolve_for_corpus(base, corpus);
  std::vector<data::Doc> docs(corpus.train.begin(), corpus.train.begin() + std::min<size_t>(32, corpus.train.size()));
  auto rows = data::make_rows(docs, data::Layout::Doc, data::train_row_len(base), corpus.vocab.eos);
  const data::Batch batch = data::eval_batches(rows, static_cast<int>(rows.rows.size()), corpus.vocab.pad).at(0);

  Table layers, totals;
  layers.header = {"depth", "placement", "layer", "down_proj grad norm"};
  totals.header = {"depth", "placement", "loss", "total grad norm", "first layer", "last layer", "last / first",
                   "stream rms", "embedding rms", "blocks rms"};
  // Target tokens of the batch: the stream RMS is averaged over them (padding excluded).
  const auto target_mask = batch.targets.reshape({-1}) != data::kIgnore;
  for (int depth : opt.depths) {
    if (depth < 1) throw InputError(fmt::format("--depths: {} is not a positive depth", depth));
    for (const NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
      Config cfg = base;
      cfg.model.n_layers = depth;
      cfg.model.norm_placement = placement;
      validate(cfg);
      torch::manual_seed(opt.seed);
      ModernLM model(cfg.model);
      model->train();
      model->keep_stream = true;
      auto logits = model->forward(batch.inputs);  // (B, T, V)
      // RMS over channels of the residual stream after the last block, mean over target tokens:
      // pre-norm's final norm divides every layer's gradient by about this.
      // Split into the embedding's part (the stream the first block reads) and the blocks' part
      // (all residual branches: the stream minus the embedding's part), measured the same way.
      const auto token_rms = [&](const torch::Tensor& s) {
        return s.pow(2).mean(-1).sqrt().reshape({-1}).masked_select(target_mask).mean().item<double>();
      };
      const auto stream = model->last_stream.to(torch::kFloat64), first = model->first_stream.to(torch::kFloat64);
      const double stream_rms = token_rms(stream), embed_rms = token_rms(first), blocks_rms = token_rms(stream - first);
      auto loss = torch::nn::functional::cross_entropy(
          logits.reshape({-1, logits.size(-1)}), batch.targets.reshape({-1}),
          torch::nn::functional::CrossEntropyFuncOptions().ignore_index(data::kIgnore));
      loss.backward();
      double total_sq = 0;
      for (const auto& p : model->parameters())
        if (p.grad().defined()) total_sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
      const auto named = model->named_parameters();
      std::vector<double> norms;
      for (int i = 0; i < depth; ++i) {
        const auto* w = named.find(fmt::format("model.layers.{}.mlp.down_proj.weight", i));
        if (!w || !w->grad().defined())
          throw RuntimeError(fmt::format("gradnorm: layer {} has no mlp.down_proj.weight gradient", i));
        norms.push_back(w->grad().norm().item<double>());
        layers.add({std::to_string(depth), option_name(placement), std::to_string(i), sci(norms.back())});
      }
      totals.add({std::to_string(depth), option_name(placement), fixed(loss.item<double>(), 4), sci(std::sqrt(total_sq)),
                  sci(norms.front()), sci(norms.back()), fixed(norms.back() / norms.front(), 3),
                  fixed(stream_rms, 3), fixed(embed_rms, 3), fixed(blocks_rms, 3)});
    }
  }
  ProbeResult res;
  res.tables.push_back({"layers", "Gradient norm of each layer's FFN output matrix at initialization", layers});
  res.tables.push_back({"totals", "Totals", totals});
  res.notes.push_back(fmt::format("{} ({}), seed {}, one fixed batch of {} documents ({} target tokens)",
                                  base.name, base.source, opt.seed, rows.rows.size(), batch.tokens));
  return res;
}

}  // namespace lmx::experiments
