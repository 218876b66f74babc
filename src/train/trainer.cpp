#include "train/trainer.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "data/batch.h"
#include "model/checkpoint.h"
#include "train/schedule.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

namespace lmx {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string fmt_num(double v, int digits = 4) {
  if (std::isnan(v)) return "";
  return fmt::format("{:.{}f}", v, digits);
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

// The name of the first parameter whose gradient is not finite ("" if all are).
std::string first_bad_gradient(ModernLM& model) {
  for (const auto& p : model->named_parameters()) {
    const auto& g = p.value().grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>()) return p.key();
  }
  return "";
}

}  // namespace

std::unique_ptr<torch::optim::AdamW> make_optimizer(ModernLM& model, const TrainConfig& t) {
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto opts = torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(t.adam_eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(opts).weight_decay(t.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(opts).weight_decay(0.0)));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), opts);
}

StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const torch::Tensor& inputs,
                      const torch::Tensor& targets, double lr, double grad_clip, bool poison_loss) {
  set_lr(optimizer, lr);
  auto logits = model->forward(inputs);  // (B, T, V)
  auto loss = torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), targets.reshape(-1),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(data::kIgnore));
  if (poison_loss) loss = loss * std::nan("");
  optimizer.zero_grad();
  loss.backward();
  StepResult r;
  r.loss = loss.item<double>();
  r.grad_norm = clip_gradients(model, grad_clip);
  if (std::isfinite(r.loss) && std::isfinite(r.grad_norm)) {
    optimizer.step();
    r.stepped = true;
  }
  return r;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

double clip_gradients(ModernLM& model, double max_norm) {
  return torch::nn::utils::clip_grad_norm_(
      model->parameters(), max_norm > 0 ? max_norm : std::numeric_limits<double>::infinity());
}

int64_t count_parameters(const ModernLM& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

Config resolve_for_corpus(Config cfg, const data::Corpus& corpus) {
  const int v = corpus.vocab.size();
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = v;
  if (cfg.model.vocab_size < v)
    throw InputError(fmt::format("{}: model.vocab_size ({}) is smaller than the {} vocabulary ({})",
                                 cfg.source, cfg.model.vocab_size, corpus.kind, v),
                     "set model.vocab_size: auto");
  return cfg;
}

RunResult train_run(const Config& cfg_in, const data::Corpus& corpus, const RunOptions& opt) {
  namespace fs = std::filesystem;
  const Config cfg = resolve_for_corpus(cfg_in, corpus);
  const TrainConfig& t = cfg.train;
  const auto t_start = Clock::now();
  RunResult res;
  res.seed = opt.seed;

  torch::manual_seed(opt.seed);
  ModernLM model(cfg.model);
  if (!opt.init_from.empty()) load_weights(*model, read_checkpoint(opt.init_from));
  model->train();
  res.params = count_parameters(model);
  auto optimizer = make_optimizer(model, t);

  data::Layout layout = data::parse_layout(cfg.data.layout);
  data::Batcher batcher(data::make_rows(corpus.train, layout, cfg.data.seq_len, corpus.vocab.eos),
                        t.batch_size, opt.seed, corpus.vocab.pad);
  const int64_t per_epoch = std::max<int64_t>(1, batcher.batches_per_epoch());
  const int64_t total = t.steps > 0 ? t.steps : t.epochs * per_epoch;

  write_file_atomic((fs::path(opt.run_dir) / "config.yaml").string(), to_yaml(cfg));
  CsvAppender metrics((fs::path(opt.run_dir) / "metrics.csv").string(),
                      {"step", "epoch", "train_loss", "lr", "grad_norm", "tokens_per_s", "val_loss", "val_ppl"});

  EvalOptions val_opt;
  val_opt.split = data::Split::Val;
  val_opt.layout = layout;
  val_opt.seq_len = layout == data::Layout::Packed ? cfg.data.seq_len : 0;
  val_opt.batch_size = std::max(t.batch_size, 32);
  val_opt.max_docs = t.eval_docs;
  val_opt.pronoun_window = cfg.data.pronoun_window;

  log::info("train", "seed {}: {} parameters, {} steps ({} per epoch), layout {}, seq_len {}",
            opt.seed, res.params, total, per_epoch, cfg.data.layout, cfg.data.seq_len);
  double smoothed_tps = 0;
  int64_t tokens_seen = 0;
  const auto t_train = Clock::now();
  for (int64_t step = 0; step < total; ++step) {
    const auto t_step = Clock::now();
    const double lr = lr_at(t, step, total);
    data::Batch batch = batcher.batch(step);
    const StepResult sr = train_step(model, *optimizer, batch.inputs, batch.targets, lr, t.grad_clip,
                                     /*poison_loss=*/step == opt.inject_nan_at_step);
    const double loss_v = sr.loss;
    const double gnorm = sr.grad_norm;
    if (!sr.stepped) {
      std::string bad = first_bad_gradient(model);
      res.status = "diverged";
      res.message = fmt::format("step {}: loss {} grad norm {}{}", step, loss_v, gnorm,
                                bad.empty() ? "" : ", first non-finite gradient in " + bad);
      log::warn("train", "seed {} diverged at {}", opt.seed, res.message);
      metrics.row({std::to_string(step), fmt_num(static_cast<double>(step) / per_epoch, 3),
                   fmt::format("{}", loss_v), fmt::format("{:.6g}", lr), fmt::format("{}", gnorm), "", "", ""});
      break;
    }
    res.steps = step + 1;
    res.final_train_loss = loss_v;
    tokens_seen += batch.tokens;
    const double tps = batch.tokens / std::max(1e-9, seconds_since(t_step));
    smoothed_tps = smoothed_tps == 0 ? tps : 0.9 * smoothed_tps + 0.1 * tps;

    std::string val_loss, val_ppl;
    const bool last = step + 1 == total;
    if (last || (t.eval_every > 0 && (step + 1) % t.eval_every == 0)) {
      EvalResult v = evaluate(model, corpus, val_opt);
      val_loss = fmt_num(v.loss);
      val_ppl = fmt_num(v.ppl);
      res.final_val_ppl = v.ppl;
      if (std::isnan(res.best_val_ppl) || v.ppl < res.best_val_ppl) res.best_val_ppl = v.ppl;
      log::info("train", "seed {} step {}/{}: train loss {:.4f}, val loss {:.4f}, val ppl {:.3f}",
                opt.seed, step + 1, total, loss_v, v.loss, v.ppl);
    }
    metrics.row({std::to_string(step + 1), fmt_num(static_cast<double>(step + 1) / per_epoch, 3),
                 fmt::format("{:.6f}", loss_v), fmt::format("{:.6g}", lr), fmt::format("{:.6g}", gnorm),
                 fmt::format("{:.0f}", tps), val_loss, val_ppl});
    const double elapsed = seconds_since(t_train);
    const double eta = elapsed / (step + 1) * (total - step - 1);
    if (opt.progress) {
      fmt::print(stderr, "\r[train] seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s   ",
                 opt.seed, step + 1, total, loss_v, lr, smoothed_tps, eta);
      if (last) fmt::print(stderr, "\n");
    } else if ((step + 1) % t.log_every == 0) {
      log::info("train", "seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s", opt.seed,
                step + 1, total, loss_v, lr, smoothed_tps, eta);
    }
    if (signals::interrupted()) {
      res.status = "interrupted";
      res.message = fmt::format("interrupted after step {}", step + 1);
      if (opt.progress) fmt::print(stderr, "\n");
      log::warn("train", "seed {}: {}", opt.seed, res.message);
      break;
    }
  }
  res.tokens_per_s = tokens_seen / std::max(1e-9, seconds_since(t_train));

  save_checkpoint((fs::path(opt.run_dir) / "model.safetensors").string(), model, cfg, {},
                  {{"seed", std::to_string(opt.seed)}, {"steps", std::to_string(res.steps)},
                   {"status", res.status}});
  if (res.status == "ok") {
    EvalOptions test_opt = val_opt;
    test_opt.split = data::Split::Test;
    test_opt.max_docs = 0;
    res.test = evaluate(model, corpus, test_opt);
  }
  res.wall_s = seconds_since(t_start);
  res.peak_rss_mib = peak_rss_mib();
  return res;
}

}  // namespace lmx
