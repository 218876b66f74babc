// train_run in three phases: prepare the run (the config resolved for the corpus, the memory
// check, the model, the optimizer, the resume state, the output files), the step loop (step,
// evaluate, checkpoint, interrupt), finish (final checkpoint and test evaluation).
#include <fmt/format.h>
#include "torch_api.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "data/batch.h"
#include "data/tokenizer.h"
#include "distributed/dist.h"
#include "formats/checkpoint.h"
#include "kernels/precision.h"
#include "kernels/torch_runtime.h"
#include "model/memory.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/faults.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

// One run while it trains: what prepare_run builds, the step loop advances and finish_run
// reports.
struct Training {
  Training(Config cfg_, const data::Corpus& corpus_, const RunOptions& opt_)
      : cfg(std::move(cfg_)),
        corpus(corpus_),
        opt(opt_),
        ckpt_path((fs::path(opt_.run_dir) / "model.safetensors").string()),
        metrics_path((fs::path(opt_.run_dir) / "metrics.csv").string()),
        fault(faults::plan()) {
    res.seed = opt_.seed;
  }
  const Config cfg;  // resolved for the corpus
  const data::Corpus& corpus;
  const RunOptions& opt;
  const std::string ckpt_path, metrics_path;
  const faults::Plan fault;  // fault injection (tests): read once for the run
  ModernLM model{nullptr};
  torch::Device device{torch::kCPU};
  bool writer = false;  // data-parallel: only rank 0 writes
  std::unique_ptr<FusedAdamW> optimizer;
  std::optional<data::Batcher> batcher;
  int64_t per_epoch = 1, total = 0;
  TrainState state;
  bool finished_before = false;  // resumed from a finished checkpoint: no step left to take
  double seconds_before = 0;     // training seconds before this process resumed the run
  std::optional<CsvAppender> metrics;  // rank 0
  EvalOptions val_opt, test_opt;
  std::optional<Evaluation> val_eval;  // built at the first validation, reused by the later ones
  RunResult res;
};

// ---- prepare ----

// Memory check, the model (seeded init, or the --init-from weights) on its device, AdamW, and
// this rank's batches.
void build_run_model(Training& tr) {
  if (tr.opt.check_memory) check_training_memory(tr.cfg, available_memory_bytes());  // before allocating
  if (tr.cfg.train.max_time > 0 && dist::world() > 1)  // each rank's clock would stop it at another step
    throw InputError(fmt::format("train.max_time is {} s but the run is data-parallel ({} ranks)", tr.cfg.train.max_time,
                                 dist::world()),
                     "use train.max_tokens or train.steps for a data-parallel run");
  torch::manual_seed(tr.opt.seed);
  tr.model = ModernLM(tr.cfg.model);
  if (!tr.opt.init_from.empty()) load_weights(*tr.model, read_checkpoint(tr.opt.init_from));
  // cuda without a CUDA LibTorch: InputError; data-parallel ranks take one GPU each
  tr.device = torch_runtime::make_device(tr.cfg.train.device, dist::local_rank());
  tr.model->to(tr.device);  // before the optimizer takes the parameters
  tr.writer = dist::writer();
  tr.model->train();
  tr.res.params = count_parameters(tr.model);
  tr.optimizer = make_optimizer(tr.model, tr.cfg.train);
  tr.batcher.emplace(data::train_rows(tr.corpus.train, tr.cfg, tr.corpus.vocab.eos), tr.cfg.train.batch_size,
                     tr.opt.seed, tr.corpus.vocab.pad, dist::rank(), dist::world());
  tr.per_epoch = std::max<int64_t>(1, tr.batcher->batches_per_epoch());
  tr.total = total_steps(tr.cfg.train, tr.per_epoch, tr.batcher->targets_per_batch());
}

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

// The state in the checkpoint to resume from, refused when it is not this run's (status,
// config, seed, steps).
TrainState checked_resume_state(const Training& tr, const Checkpoint& ck) {
  TrainState saved = parse_state(ck);
  if (to_yaml(ck.config) != to_yaml(tr.cfg))
    throw InputError(fmt::format("{}: the checkpoint's config differs from the config to resume with", tr.ckpt_path),
                     "resume with the run's own config (lmx train --resume DIR takes no --set)");
  auto seed_it = ck.metadata.find("seed");
  if (seed_it == ck.metadata.end() || seed_it->second != std::to_string(tr.opt.seed))
    throw InputError(fmt::format("{}: the checkpoint is not of seed {}", tr.ckpt_path, tr.opt.seed));
  if (saved.steps > tr.total)
    throw InputError(fmt::format("{}: metadata steps {} exceeds the run's {} steps", tr.ckpt_path, saved.steps, tr.total));
  if (saved.threads != tr.state.threads)
    log::warn("train", "seed {}: resuming with {} thread(s), the run used {}: results may differ in the last bits",
              tr.opt.seed, tr.state.threads, saved.threads);
  return saved;
}

// --resume: weights, AdamW moments and steps, RNG and progress from the interrupted run's
// checkpoint. A finished checkpoint (ok / diverged) whose result was not written (killed
// during the final test evaluation) finishes the run from it, without training.
void resume_run(Training& tr) {
  Checkpoint ck = read_checkpoint(tr.ckpt_path);
  TrainState saved = checked_resume_state(tr, ck);
  tr.finished_before = finished(saved.status);
  load_weights(*tr.model, ck);
  if (!tr.finished_before) {
    restore_optimizer(*tr.model, *tr.optimizer, ck);
    // Without AdamW's moments the run would continue as another one: refused, never silently.
    if (saved.steps > 0 && tr.optimizer->state().empty())
      throw InputError(fmt::format("{}: status {} at step {} but no optimizer state: the run cannot be resumed exactly",
                                   tr.ckpt_path, status_name(saved.status), saved.steps),
                       "start the run again (remove the seed's directory)");
  }
  saved.threads = tr.state.threads;
  tr.state = saved;
  tr.res.steps = tr.state.steps;
  tr.res.final_train_loss = tr.state.final_train_loss;
  tr.res.best_val_ppl = tr.state.best_val_ppl;
  tr.res.final_val_ppl = tr.state.final_val_ppl;
  if (tr.finished_before) {
    tr.res.status = saved.status;
    auto m = ck.metadata.find("message");
    tr.res.message = m == ck.metadata.end() ? "" : m->second;
    log::info("train", "seed {}: {} finished training (status {}) without its result: finishing it", tr.opt.seed,
              tr.opt.run_dir, status_name(saved.status));
  } else {
    if (tr.writer) truncate_metrics(tr.metrics_path, tr.state.steps);
    log::info("train", "seed {}: resuming {} after step {}", tr.opt.seed, tr.opt.run_dir, tr.state.steps);
  }
}

// Every rank starts from rank 0's weights; rank 0 writes config.yaml and opens metrics.csv
// (appended to when resuming).
void open_run_outputs(Training& tr) {
  // The same seed gives the same init; this makes sure.
  if (auto* group = dist::current()) group->broadcast(tr.model->parameters(), "broadcast of the initial weights");
  if (tr.writer) write_file_atomic((fs::path(tr.opt.run_dir) / "config.yaml").string(), to_yaml(tr.cfg));
  if (tr.writer)
    tr.metrics.emplace(tr.metrics_path,
                       std::vector<std::string>{"step", "epoch", "train_loss", "lr", "grad_norm", "tokens_per_s",
                                                "val_loss", "val_ppl", "val_true_nll"},
                       /*append=*/tr.opt.resume);
}

// Validation and test as the run evaluates them; targets at positions no training row
// reaches are kept out, and said so.
void prepare_run_evaluation(Training& tr) {
  tr.val_opt = eval_options(tr.cfg, data::Split::Val);
  tr.test_opt = eval_options(tr.cfg, data::Split::Test);
  tr.val_opt.trained_len = tr.test_opt.trained_len = trained_positions(tr.cfg, tr.corpus);  // doc layout
  for (data::Split s : {data::Split::Val, data::Split::Test})
    if (int64_t n = targets_beyond(tr.corpus.split(s), tr.val_opt.trained_len))
      log::warn("train", "{} {} targets lie at positions >= {}, which no training row reaches: kept out of its loss "
                "({})", n, data::split_name(s), tr.val_opt.trained_len,
                s == data::Split::Test ? "reported apart: summary.csv test_untrained_*" : "and out of val ppl");
}

void prepare_run(Training& tr) {
  build_run_model(tr);
  tr.state.threads = runtime::threads();
  if (tr.opt.resume) resume_run(tr);
  open_run_outputs(tr);
  prepare_run_evaluation(tr);
}

// Writes the checkpoint (rank 0); with optimizer state when the run can be continued from it.
void write_run_checkpoint(Training& tr, RunStatus status, double train_seconds) {
  if (!tr.writer) return;
  TrainState& state = tr.state;
  state.status = status;
  state.steps = tr.res.steps;
  state.epoch = static_cast<double>(tr.res.steps) / tr.per_epoch;
  state.best_val_ppl = tr.res.best_val_ppl;
  state.final_val_ppl = tr.res.final_val_ppl;
  state.final_train_loss = tr.res.final_train_loss;
  state.train_seconds = train_seconds;
  auto meta = state_metadata(state);
  meta["seed"] = std::to_string(tr.opt.seed);
  meta["message"] = tr.res.message;
  // Where the tokenizer came from (save_checkpoint copies it beside the checkpoint with its hash).
  if (tr.corpus.vocab.tokenizer) meta["tokenizer"] = tr.corpus.vocab.tokenizer->path();
  save_checkpoint(tr.ckpt_path, tr.model, tr.cfg,
                  resumable(status) ? optimizer_tensors(*tr.model, *tr.optimizer) : NamedTensors{}, meta);
}

// ---- the step loop ----

// The optimizer step at `step` on its batch.
StepResult take_run_step(Training& tr, int64_t step, double lr) {
  data::Batch batch = tr.batcher->batch(step);
  // Fault injection (tests): a NaN loss, or a NaN gradient in one named parameter, at this step.
  const faults::Plan& fault = tr.fault;
  const faults::PoisonLoss poison(step == fault.nan_loss_step);
  std::optional<torch::Tensor> hooked;
  unsigned hook = 0;
  if (step == fault.nan_grad_step) {
    for (auto& p : tr.model->named_parameters())
      if (p.key() == fault.nan_grad_param) hooked = p.value();
    if (!hooked) throw InputError(fmt::format("no parameter named {}", fault.nan_grad_param));
    hook = hooked->register_hook([](torch::Tensor g) { return g * std::nan(""); });
  }
  // Padding-free where the model takes it (the fused MHA kernel, no autocast), else micro-batches by length.
  const bool packed = tr.cfg.train.padding_free && !autocasts(tr.cfg.train.precision, tr.device.type()) &&
                      tr.model->packable();
  std::vector<MicroBatch> micro = packed ? std::vector<MicroBatch>{padding_free_batch(batch.inputs, batch.targets)}
                                         : micro_batches(batch.inputs, batch.targets, tr.cfg.train.micro_batch_size);
  for (auto& m : micro) m.inputs = m.inputs.to(tr.device), m.targets = m.targets.to(tr.device);
  const StepResult sr = train_step(tr.model, *tr.optimizer, micro, lr, tr.cfg.train.grad_clip, tr.cfg.train.precision,
                                   batch.global_tokens, step_parts(tr.cfg.train, tr.device), tr.cfg.train.z_loss);
  if (hooked) hooked->remove_hook(hook);
  return sr;
}

// A step that took no update (its loss or gradient norm is not finite): the run diverged.
void record_divergence(Training& tr, int64_t step, double lr, const StepResult& sr) {
  const std::string bad = bad_gradient_note(tr.model);
  tr.res.status = RunStatus::Diverged;
  tr.res.message = fmt::format("step {}: loss {} grad norm {}{}", step, sr.loss, sr.grad_norm, bad);
  log::warn("train", "seed {} diverged at {}", tr.opt.seed, tr.res.message);
  if (tr.metrics)
    tr.metrics->row({std::to_string(step), csv_num(static_cast<double>(step) / tr.per_epoch, 3),
                     fmt::format("{}", sr.loss), fmt::format("{:.6g}", lr), fmt::format("{}", sr.grad_norm), "", "",
                     ""});
}

// The step's loss into the run's totals: the last epoch's, the first steps', the tokens seen.
void count_step_loss(Training& tr, int64_t step, const StepResult& sr) {
  const double loss_v = sr.loss;
  tr.res.steps = step + 1;
  tr.res.final_train_loss = loss_v;
  TrainState& state = tr.state;
  if (step >= tr.total - tr.per_epoch) state.last_epoch_loss_sum += loss_v * sr.tokens, state.last_epoch_tokens += sr.tokens;
  if (step < kFirstSteps) state.first_loss_sum += loss_v * sr.tokens, state.first_tokens += sr.tokens;
  state.tokens_seen += sr.tokens;  // the global batch's
}

// Validation after the last step and every eval_every steps: its loss, its perplexity and its
// floor (the NLL under the truth of the targets the loss covers; lmx plot draws it) as metrics
// cells ("" at the other steps, and for the floor without a truth).
std::array<std::string, 3> validate_if_due(Training& tr, int64_t step, double train_loss, bool last) {
  const int eval_every = tr.cfg.train.eval_every;
  if (!last && !(eval_every > 0 && (step + 1) % eval_every == 0)) return {};
  if (!tr.val_eval) tr.val_eval.emplace(tr.model, tr.corpus, tr.val_opt);
  EvalResult v = tr.val_eval->run(tr.model);
  tr.res.final_val_ppl = v.ppl;
  if (std::isnan(tr.res.best_val_ppl) || v.ppl < tr.res.best_val_ppl) tr.res.best_val_ppl = v.ppl;
  log::info("train", "seed {} step {}/{}: train loss {:.4f}, val loss {:.4f}, val ppl {:.3f}", tr.opt.seed, step + 1,
            tr.total, train_loss, v.loss, v.ppl);
  return {csv_num(v.loss), csv_num(v.ppl), csv_num(v.true_nll, 6)};
}

// The live progress line on a terminal, else a log line every log_every steps.
void report_step_progress(const Training& tr, int64_t step, double loss, double lr, double tokens_per_s, double eta,
                          bool last) {
  if (tr.opt.progress) {
    fmt::print(stderr, "\r[train] seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s   ", tr.opt.seed,
               step + 1, tr.total, loss, lr, tokens_per_s, eta);
    if (last) fmt::print(stderr, "\n");
  } else if ((step + 1) % tr.cfg.train.log_every == 0) {
    log::info("train", "seed {} step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s ETA {:.0f}s", tr.opt.seed, step + 1,
              tr.total, loss, lr, tokens_per_s, eta);
  }
}

// Whether the run stops after this step on an interrupt. Data-parallel: every rank stops after
// the same step, the first whose all-reduce carried a rank's interrupt flag.
bool stop_if_interrupted(Training& tr, int64_t step, const StepResult& sr) {
  if (!(dist::current() ? sr.interrupted : signals::interrupted())) return false;
  tr.res.status = RunStatus::Interrupted;
  tr.res.message = fmt::format("interrupted after step {}; continue with lmx train --resume", step + 1);
  if (tr.opt.progress) fmt::print(stderr, "\n");
  log::warn("train", "seed {}: {}", tr.opt.seed, tr.res.message);
  return true;
}

// Steps until the last, a divergence, an interrupt or the end of train.max_time; returns the
// run's training seconds (those before a resume included).
double step_loop(Training& tr) {
  const TrainConfig& t = tr.cfg.train;
  log::info("train", "seed {}: {} parameters, {} steps ({} per epoch), layout {}, rows of <= {} targets", tr.opt.seed,
            tr.res.params, tr.total, tr.per_epoch, option_name(tr.cfg.data.layout), data::train_row_len(tr.cfg));
  if (t.max_time > 0) log::info("train", "seed {}: time budget {} s of training (train.max_time)", tr.opt.seed, t.max_time);
  double smoothed_tps = 0;
  tr.seconds_before = tr.state.train_seconds;
  const int64_t first_step = tr.state.steps;
  const auto t_train = Clock::now();
  auto trained = [&] { return tr.seconds_before + seconds_since(t_train); };
  for (int64_t step = first_step; step < tr.total && !tr.finished_before; ++step) {
    const auto t_step = Clock::now();
    const double lr = lr_at(t, step, tr.total, t.max_time > 0 ? trained() / t.max_time : -1);
    const StepResult sr = take_run_step(tr, step, lr);
    if (!sr.stepped) {
      record_divergence(tr, step, lr, sr);
      break;
    }
    count_step_loss(tr, step, sr);
    const double tps = sr.tokens / std::max(1e-9, seconds_since(t_step));
    smoothed_tps = smoothed_tps == 0 ? tps : 0.9 * smoothed_tps + 0.1 * tps;
    const bool out_of_time = t.max_time > 0 && trained() >= t.max_time;
    const bool last = step + 1 == tr.total || out_of_time;
    const auto [val_loss, val_ppl, val_floor] = validate_if_due(tr, step, sr.loss, last);
    if (tr.metrics)
      tr.metrics->row({std::to_string(step + 1), csv_num(static_cast<double>(step + 1) / tr.per_epoch, 3),
                       fmt::format("{:.6f}", sr.loss), fmt::format("{:.6g}", lr), fmt::format("{:.6g}", sr.grad_norm),
                       fmt::format("{:.0f}", tps), val_loss, val_ppl, val_floor});
    const double elapsed = seconds_since(t_train);
    double eta = elapsed / static_cast<double>(step + 1 - first_step) * (tr.total - step - 1);
    if (t.max_time > 0) eta = std::min(eta, std::max(0.0, t.max_time - trained()));
    report_step_progress(tr, step, sr.loss, lr, smoothed_tps, eta, last);
    if (out_of_time) {
      log::info("train", "seed {}: train.max_time ({} s) reached after step {} of {}", tr.opt.seed, t.max_time, step + 1,
                tr.total);
      break;
    }
    if (step + 1 == tr.fault.interrupt_after_step) signals::raise_interrupt();  // fault injection (tests)
    if (stop_if_interrupted(tr, step, sr)) break;
    if (step + 1 != tr.total && t.checkpoint_every > 0 && (step + 1) % t.checkpoint_every == 0)
      write_run_checkpoint(tr, RunStatus::Running, trained());
  }
  return trained();
}

// ---- finish ----

// The final test evaluation of a run that trained to the end. An infinite (or NaN)
// perplexity is no result: the run diverged, and its checkpoint says so.
void test_run(Training& tr, double train_seconds) {
  RunResult& res = tr.res;
  res.test = evaluate(tr.model, tr.corpus, tr.test_opt);
  if (!std::isfinite(res.final_val_ppl) || !std::isfinite(res.test.ppl)) {
    res.status = RunStatus::Diverged;
    res.message = fmt::format("val ppl {} test ppl {}: not finite", res.final_val_ppl, res.test.ppl);
    log::warn("train", "seed {} diverged: {}", tr.opt.seed, res.message);
    write_run_checkpoint(tr, res.status, train_seconds);
  }
  // The corpus's metric says where a run fails its bar (the garden: a plateau, gender-blind
  // pronouns beyond the window; such a seed decides a mean of perplexities by itself).
  if (!res.test.metrics.warning.empty()) log::warn("train", "seed {}: {}", tr.opt.seed, res.test.metrics.warning);
}

void finish_run(Training& tr, double train_seconds, Clock::time_point t_start) {
  RunResult& res = tr.res;
  const TrainState& state = tr.state;
  res.tokens_per_s = state.tokens_seen / std::max(1e-9, train_seconds);
  if (state.last_epoch_tokens > 0) res.train_loss_last_epoch = state.last_epoch_loss_sum / state.last_epoch_tokens;
  if (state.first_tokens > 0) res.train_loss_first = state.first_loss_sum / state.first_tokens;
  if (!tr.finished_before) write_run_checkpoint(tr, res.status, train_seconds);
  if (res.status == RunStatus::Ok) test_run(tr, train_seconds);
  res.wall_s = seconds_since(t_start) + tr.seconds_before;
  res.peak_rss_mib = peak_rss_mib();
}

}  // namespace

RunResult train_run(const Config& cfg_in, const data::Corpus& corpus, const RunOptions& opt) {
  Training tr(resolve_for_corpus(cfg_in, corpus), corpus, opt);
  const auto t_start = Clock::now();
  prepare_run(tr);
  const double train_seconds = step_loop(tr);
  finish_run(tr, train_seconds, t_start);
  return tr.res;
}

}  // namespace lmx
