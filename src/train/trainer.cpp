#include "train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "data/batch.h"
#include "data/tokenizer.h"
#include "dist/dist.h"
#include "model/checkpoint.h"
#include "model/loss.h"
#include "model/memory.h"
#include "train/optimizer.h"
#include "model/precision.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "util/csv.h"
#include "util/clock.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace lmx {

namespace {

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
  return std::make_unique<FusedAdamW>(std::move(groups), opts);
}

StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const torch::Tensor& inputs,
                      const torch::Tensor& targets, double lr, double grad_clip, bool poison_loss,
                      const std::string& precision, int64_t global_tokens) {
  set_lr(optimizer, lr);
  const auto t0 = Clock::now();
  // Autocast (bf16) covers the forward and the loss only; the backward runs each op in the
  // dtype its forward used.
  std::optional<AutocastGuard> autocast(std::in_place, precision, inputs.device().type());
  auto logits = model->forward(inputs);  // (B, T, V)
  dist::Group* group = dist::current();
  StepResult r;
  // Data-parallel: this rank's token losses summed over the global batch's token count, so
  // that the sum of the ranks' gradients is one process's gradient of the global batch.
  torch::Tensor loss = lm_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape(-1), data::kIgnore,
                                        /*sum=*/group != nullptr);
  if (group) {
    if (global_tokens < 0) throw std::logic_error("train_step: data-parallel without the global token count");
    r.tokens = global_tokens;
    loss = loss / std::max<double>(1.0, static_cast<double>(r.tokens));
  } else {
    r.tokens = global_tokens >= 0 ? global_tokens : (targets != data::kIgnore).sum().item<int64_t>();
  }
  if (poison_loss) loss = loss * std::nan("");
  autocast.reset();
  const auto t1 = Clock::now();
  const auto params = model->parameters();
  clear_gradients(params);
  loss.backward();
  if (group) {
    dist::fault_point();
    const auto loss1 = loss.detach().reshape({1}).to(torch::kFloat).clone();
    std::vector<torch::Tensor> reduce{loss1, torch::full({1}, signals::interrupted() ? 1.0f : 0.0f, loss1.options())};
    for (auto& p : params) {
      // Every rank all-reduces the same list: a parameter this rank's batch did not reach
      // contributes zeros.
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      reduce.push_back(p.grad());
    }
    group->allreduce_sum(reduce, "gradient all-reduce");
    r.loss = reduce[0].item<double>();
    r.interrupted = reduce[1].item<float>() > 0;
  } else {
    r.loss = loss.item<double>();
  }
  const auto t2 = Clock::now();
  r.grad_norm = clip_gradients(model, grad_clip);
  const auto t3 = Clock::now();
  if (std::isfinite(r.loss) && std::isfinite(r.grad_norm)) {
    optimizer.step();
    r.stepped = true;
  }
  const auto t4 = Clock::now();
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e3; };
  r.phase_ms = {ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4)};
  return r;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

double clip_gradients(ModernLM& model, double max_norm) { return clip_grad_norm(model->parameters(), max_norm); }

int64_t count_parameters(const ModernLM& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

int64_t total_steps(const TrainConfig& t, int64_t batches_per_epoch) {
  return t.steps > 0 ? t.steps : t.epochs * std::max<int64_t>(1, batches_per_epoch);
}

int64_t planned_steps(const Config& cfg, const data::Corpus& corpus) {
  const data::Batcher batcher(data::train_rows(corpus.train, cfg, corpus.vocab.eos), cfg.train.batch_size, 0,
                              corpus.vocab.pad);
  return total_steps(cfg.train, batcher.batches_per_epoch());
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

namespace {

// metrics.csv of a resumed run: the header and the rows of the steps the checkpoint holds
// (a run killed after a periodic checkpoint may have logged later steps), written atomically.
void truncate_metrics(const std::string& path, int64_t steps) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the metrics of the run to resume", path));
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      kept += line + "\n";
      header = false;
      continue;
    }
    const std::string first = line.substr(0, line.find(','));
    char* end = nullptr;
    const long long step = std::strtoll(first.c_str(), &end, 10);
    if (first.empty() || *end != '\0') continue;  // a half-written last line
    if (step <= steps && step >= 0) kept += line + "\n";
  }
  write_file_atomic(path, kept);
}

// The module a parameter belongs to, at block-component level:
// "model.layers.1.mlp.down_proj.weight" -> "model.layers.1.mlp",
// "model.layers.0.input_layernorm.weight" -> "model.layers.0.input_layernorm",
// "model.embed_tokens.weight" -> "model.embed_tokens", "lm_head.weight" -> "lm_head".
std::string parameter_group(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(name.substr(start, dot - start));
  parts.push_back(name.substr(start));
  if (parts.size() > 1) parts.pop_back();                                  // weight / bias
  if (parts.size() >= 5 && parts[0] == "model" && parts[1] == "layers") parts.resize(4);  // ... .mlp
  return fmt::format("{}", fmt::join(parts, "."));
}

}  // namespace

RunResult train_run(const Config& cfg_in, const data::Corpus& corpus, const RunOptions& opt) {
  namespace fs = std::filesystem;
  const Config cfg = resolve_for_corpus(cfg_in, corpus);
  const TrainConfig& t = cfg.train;
  const auto t_start = Clock::now();
  RunResult res;
  res.seed = opt.seed;
  const std::string ckpt_path = (fs::path(opt.run_dir) / "model.safetensors").string();
  const std::string metrics_path = (fs::path(opt.run_dir) / "metrics.csv").string();

  if (opt.check_memory) check_training_memory(cfg, available_memory_bytes());  // before allocating
  torch::manual_seed(opt.seed);
  ModernLM model(cfg.model);
  if (!opt.init_from.empty()) load_weights(*model, read_checkpoint(opt.init_from));
  // cuda without a CUDA LibTorch: InputError; data-parallel ranks take one GPU each
  const torch::Device device = runtime::make_device(cfg.train.device, dist::local_rank());
  model->to(device);  // before the optimizer takes the parameters
  const bool writer = dist::writer();  // data-parallel: only rank 0 writes
  model->train();
  res.params = count_parameters(model);
  auto optimizer = make_optimizer(model, t);

  data::Batcher batcher(data::train_rows(corpus.train, cfg, corpus.vocab.eos),
                        t.batch_size, opt.seed, corpus.vocab.pad, dist::rank(), dist::world());
  const int64_t per_epoch = std::max<int64_t>(1, batcher.batches_per_epoch());
  const int64_t total = total_steps(t, per_epoch);

  TrainState state;
  state.threads = runtime::threads();
  bool finished_before = false;
  if (opt.resume) {
    // Weights, AdamW moments and steps, RNG and progress from the interrupted run's checkpoint.
    Checkpoint ck = read_checkpoint(ckpt_path);
    TrainState saved = parse_state(ck);
    // A finished checkpoint (ok / diverged) whose result was not written (killed during the
    // final test evaluation): the run is finished from it, without training.
    finished_before = saved.status == "ok" || saved.status == "diverged";
    if (!resumable_status(saved.status) && !finished_before)
      throw InputError(fmt::format("{}: unknown status '{}' in the checkpoint's metadata", ckpt_path, saved.status),
                       "the checkpoint cannot be resumed; start the run again");
    if (to_yaml(ck.config) != to_yaml(cfg))
      throw InputError(fmt::format("{}: the checkpoint's config differs from the config to resume with", ckpt_path),
                       "resume with the run's own config (lmx train --resume DIR takes no --set)");
    auto seed_it = ck.metadata.find("seed");
    if (seed_it == ck.metadata.end() || seed_it->second != std::to_string(opt.seed))
      throw InputError(fmt::format("{}: the checkpoint is not of seed {}", ckpt_path, opt.seed));
    if (saved.steps > total)
      throw InputError(fmt::format("{}: metadata steps {} exceeds the run's {} steps", ckpt_path, saved.steps, total));
    if (saved.threads != state.threads)
      log::warn("train", "seed {}: resuming with {} thread(s), the run used {}: results may differ in the last bits",
                opt.seed, state.threads, saved.threads);
    load_weights(*model, ck);
    if (!finished_before) {
      restore_optimizer(*model, *optimizer, ck);
      // Without AdamW's moments the run would continue as another one: refused, never silently.
      if (saved.steps > 0 && optimizer->state().empty())
        throw InputError(fmt::format("{}: status {} at step {} but no optimizer state: the run cannot be resumed exactly",
                                     ckpt_path, saved.status, saved.steps),
                         "start the run again (remove the seed's directory)");
    }
    saved.threads = state.threads;
    state = saved;
    res.steps = state.steps;
    res.final_train_loss = state.final_train_loss;
    res.best_val_ppl = state.best_val_ppl;
    res.final_val_ppl = state.final_val_ppl;
    if (finished_before) {
      res.status = saved.status;
      auto m = ck.metadata.find("message");
      res.message = m == ck.metadata.end() ? "" : m->second;
      log::info("train", "seed {}: {} finished training (status {}) without its result: finishing it", opt.seed,
                opt.run_dir, saved.status);
    } else {
      if (writer) truncate_metrics(metrics_path, state.steps);
      log::info("train", "seed {}: resuming {} after step {}", opt.seed, opt.run_dir, state.steps);
    }
  }

  // Every rank starts from rank 0's weights (the same seed gives the same init; this makes sure).
  if (auto* group = dist::current()) group->broadcast(model->parameters(), "broadcast of the initial weights");
  if (writer) write_file_atomic((fs::path(opt.run_dir) / "config.yaml").string(), to_yaml(cfg));
  std::optional<CsvAppender> metrics;
  if (writer)
    metrics.emplace(metrics_path,
                    std::vector<std::string>{"step", "epoch", "train_loss", "lr", "grad_norm", "tokens_per_s",
                                             "val_loss", "val_ppl"},
                    /*append=*/opt.resume);

  EvalOptions val_opt = eval_options(cfg, data::Split::Val), test_opt = eval_options(cfg, data::Split::Test);
  val_opt.trained_len = test_opt.trained_len = trained_positions(cfg, corpus);  // doc layout
  for (data::Split s : {data::Split::Val, data::Split::Test})
    if (int64_t n = targets_beyond(corpus.split(s), val_opt.trained_len))
      log::warn("train", "{} {} targets lie at positions >= {}, which no training row reaches: kept out of its loss "
                "({})", n, data::split_name(s), val_opt.trained_len,
                s == data::Split::Test ? "reported apart: summary.csv test_untrained_*" : "and out of val ppl");

  // Writes the checkpoint; with optimizer state when the run can be continued from it.
  auto checkpoint = [&](const std::string& status, double train_seconds) {
    if (!writer) return;
    state.status = status;
    state.steps = res.steps;
    state.epoch = static_cast<double>(res.steps) / per_epoch;
    state.best_val_ppl = res.best_val_ppl;
    state.final_val_ppl = res.final_val_ppl;
    state.final_train_loss = res.final_train_loss;
    state.train_seconds = train_seconds;
    auto meta = state_metadata(state);
    meta["seed"] = std::to_string(opt.seed);
    meta["message"] = res.message;
    if (corpus.vocab.tokenizer) {  // eval and generate check that the file is still the same
      meta["tokenizer"] = corpus.vocab.tokenizer->path();
      meta["tokenizer_hash"] = corpus.vocab.tokenizer->hash();
    }
    save_checkpoint(ckpt_path, model, cfg, resumable_status(status) ? optimizer_tensors(*model, *optimizer) : NamedTensors{},
                    meta);
  };

  log::info("train", "seed {}: {} parameters, {} steps ({} per epoch), layout {}, rows of <= {} targets",
            opt.seed, res.params, total, per_epoch, cfg.data.layout, data::train_row_len(cfg));
  double smoothed_tps = 0;
  const double seconds_before = state.train_seconds;
  const int64_t first_step = state.steps;
  const auto t_train = Clock::now();
  for (int64_t step = first_step; step < total && !finished_before; ++step) {
    const auto t_step = Clock::now();
    const double lr = lr_at(t, step, total);
    data::Batch batch = batcher.batch(step);
    // Fault injection (tests): a NaN gradient in one named parameter at this step.
    std::optional<torch::Tensor> hooked;
    unsigned hook = 0;
    if (step == opt.inject_nan_grad_at_step) {
      for (auto& p : model->named_parameters())
        if (p.key() == opt.inject_nan_grad_param) hooked = p.value();
      if (!hooked) throw InputError(fmt::format("no parameter named {}", opt.inject_nan_grad_param));
      hook = hooked->register_hook([](torch::Tensor g) { return g * std::nan(""); });
    }
    const StepResult sr = train_step(model, *optimizer, batch.inputs.to(device), batch.targets.to(device), lr, t.grad_clip,
                                     /*poison_loss=*/step == opt.inject_nan_at_step, t.precision,
                                     batch.global_tokens);
    if (hooked) hooked->remove_hook(hook);
    const double loss_v = sr.loss;
    const double gnorm = sr.grad_norm;
    if (!sr.stepped) {
      std::string bad = first_bad_gradient(model);
      res.status = "diverged";
      res.message = fmt::format("step {}: loss {} grad norm {}{}", step, loss_v, gnorm,
                                bad.empty() ? "" : fmt::format(", first non-finite gradient in {} (parameter group {})",
                                                               bad, parameter_group(bad)));
      log::warn("train", "seed {} diverged at {}", opt.seed, res.message);
      if (metrics) metrics->row({std::to_string(step), csv_num(static_cast<double>(step) / per_epoch, 3),
                   fmt::format("{}", loss_v), fmt::format("{:.6g}", lr), fmt::format("{}", gnorm), "", "", ""});
      break;
    }
    res.steps = step + 1;
    res.final_train_loss = loss_v;
    if (step >= total - per_epoch) state.last_epoch_loss_sum += loss_v * sr.tokens, state.last_epoch_tokens += sr.tokens;
    if (step < kFirstSteps) state.first_loss_sum += loss_v * sr.tokens, state.first_tokens += sr.tokens;
    state.tokens_seen += sr.tokens;  // the global batch's
    const double tps = sr.tokens / std::max(1e-9, seconds_since(t_step));
    smoothed_tps = smoothed_tps == 0 ? tps : 0.9 * smoothed_tps + 0.1 * tps;

    std::string val_loss, val_ppl;
    const bool last = step + 1 == total;
    if (last || (t.eval_every > 0 && (step + 1) % t.eval_every == 0)) {
      EvalResult v = evaluate(model, corpus, val_opt);
      val_loss = csv_num(v.loss);
      val_ppl = csv_num(v.ppl);
      res.final_val_ppl = v.ppl;
      if (std::isnan(res.best_val_ppl) || v.ppl < res.best_val_ppl) res.best_val_ppl = v.ppl;
      log::info("train", "seed {} step {}/{}: train loss {:.4f}, val loss {:.4f}, val ppl {:.3f}",
                opt.seed, step + 1, total, loss_v, v.loss, v.ppl);
    }
    if (metrics) metrics->row({std::to_string(step + 1), csv_num(static_cast<double>(step + 1) / per_epoch, 3),
                 fmt::format("{:.6f}", loss_v), fmt::format("{:.6g}", lr), fmt::format("{:.6g}", gnorm),
                 fmt::format("{:.0f}", tps), val_loss, val_ppl});
    const double elapsed = seconds_since(t_train);
    const double eta = elapsed / static_cast<double>(step + 1 - first_step) * (total - step - 1);
    if (opt.progress) {
      fmt::print(stderr, "\r[train] seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s   ",
                 opt.seed, step + 1, total, loss_v, lr, smoothed_tps, eta);
      if (last) fmt::print(stderr, "\n");
    } else if ((step + 1) % t.log_every == 0) {
      log::info("train", "seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s", opt.seed,
                step + 1, total, loss_v, lr, smoothed_tps, eta);
    }
    if (step + 1 == opt.interrupt_after_step) signals::raise_interrupt();  // fault injection (tests)
    // Data-parallel: every rank stops after the same step, the first whose all-reduce carried a
    // rank's interrupt flag.
    if (dist::current() ? sr.interrupted : signals::interrupted()) {
      res.status = "interrupted";
      res.message = fmt::format("interrupted after step {}; continue with lmx train --resume", step + 1);
      if (opt.progress) fmt::print(stderr, "\n");
      log::warn("train", "seed {}: {}", opt.seed, res.message);
      break;
    }
    if (!last && t.checkpoint_every > 0 && (step + 1) % t.checkpoint_every == 0)
      checkpoint("running", seconds_before + seconds_since(t_train));
  }
  const double train_seconds = seconds_before + seconds_since(t_train);
  res.tokens_per_s = state.tokens_seen / std::max(1e-9, train_seconds);
  if (state.last_epoch_tokens > 0) res.train_loss_last_epoch = state.last_epoch_loss_sum / state.last_epoch_tokens;
  if (state.first_tokens > 0) res.train_loss_first = state.first_loss_sum / state.first_tokens;

  if (!finished_before) checkpoint(res.status, train_seconds);
  if (res.status == "ok") {
    res.test = evaluate(model, corpus, test_opt);
    // An infinite (or NaN) perplexity is no result: the run diverged, and its checkpoint says so.
    if (!std::isfinite(res.final_val_ppl) || !std::isfinite(res.test.ppl)) {
      res.status = "diverged";
      res.message = fmt::format("val ppl {} test ppl {}: not finite", res.final_val_ppl, res.test.ppl);
      log::warn("train", "seed {} diverged: {}", opt.seed, res.message);
      checkpoint(res.status, train_seconds);
    }
    // A plateau: gender-blind pronouns (his/her at chance) beyond the window. Such a seed
    // decides a mean of perplexities by itself; say so where the run ends.
    if (res.test.far_acc < kAgreementLearned)
      log::warn("train", "seed {}: far-pronoun accuracy {:.3f} < {}: this run never learned pronoun agreement "
                "(a plateau); its perplexity is not comparable with runs that did", opt.seed, res.test.far_acc,
                kAgreementLearned);
  }
  res.wall_s = seconds_since(t_start) + seconds_before;
  res.peak_rss_mib = peak_rss_mib();
  return res;
}

}  // namespace lmx
