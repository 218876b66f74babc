#include "train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include "torch_api.h"
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <vector>

#include "data/batch.h"
#include "data/tokenizer.h"
#include "distributed/dist.h"
#include "formats/checkpoint.h"
#include "kernels/parallel.h"
#include "kernels/precision.h"
#include "model/aux_loss.h"
#include "model/loss.h"
#include "model/memory.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "util/clock.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/faults.h"
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

std::string bad_gradient_note(ModernLM& model) {
  const std::string bad = first_bad_gradient(model);
  return bad.empty() ? "" : fmt::format(", first non-finite gradient in {} (parameter group {})", bad, parameter_group(bad));
}

namespace {
// Muon's parameters: the 2-D weights inside the blocks (muon.py's "hidden weights"), not the
// token embeddings, the head, the position tables (T5's relative_attention_bias is a table),
// norms or biases.
bool hidden_matrix(const std::string& name, const torch::Tensor& p) {
  return p.dim() == 2 && name.rfind("model.layers.", 0) == 0 && name.find("relative_attention_bias") == std::string::npos;
}
}  // namespace

std::unique_ptr<FusedAdamW> make_optimizer(ModernLM& model, const TrainConfig& t) {
  const bool muon = t.optimizer == OptimizerKind::Muon;
  std::vector<torch::Tensor> decay, no_decay, hidden;
  for (auto& p : model->named_parameters())
    (muon && hidden_matrix(p.key(), p.value()) ? hidden : p.value().dim() >= 2 ? decay : no_decay).push_back(p.value());
  // No learning rate here: the schedule owns it, and train_step writes it before every step
  // (set_lr, its one writer). LibTorch's default stands until then.
  auto opts = torch::optim::AdamWOptions().betas({t.beta1, t.beta2}).eps(t.adam_eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(opts).weight_decay(t.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(opts).weight_decay(0.0)));
  if (muon)
    groups.emplace_back(hidden, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(opts).weight_decay(t.weight_decay)));
  auto optimizer = std::make_unique<FusedAdamW>(std::move(groups), opts);
  if (t.optimizer == OptimizerKind::Adam) {
    optimizer->set_rule(0, {GroupRule::Kind::AdamL2});
    optimizer->set_rule(1, {GroupRule::Kind::AdamL2});
  }
  if (muon)  // the schedule's lr times muon_lr / lr: muon_lr at the peak
    optimizer->set_rule(2, {GroupRule::Kind::Muon, t.lr > 0 ? t.muon_lr / t.lr : 0.0, t.muon_momentum, t.muon_ns_steps});
  return optimizer;
}

StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const torch::Tensor& inputs,
                      const torch::Tensor& targets, double lr, double grad_clip,
                      Precision precision, int64_t global_tokens, int parts, double z_loss) {
  return train_step(model, optimizer, std::vector<MicroBatch>{{inputs, targets, {}}}, lr, grad_clip, precision,
                    global_tokens, parts, z_loss);
}

namespace {

// Token ids or targets as contiguous int64 on the CPU, for plain loops (the batcher's already
// are: no copy).
torch::Tensor host_ids(const torch::Tensor& t) { return t.to(torch::kCPU, torch::kInt64).contiguous(); }

// Each row's length: up to its last target that counts (doc layout pads at the end) of (B, T)
// targets.
std::vector<int64_t> row_lengths(const torch::Tensor& targets) {
  const torch::Tensor cpu = host_ids(targets);
  const int64_t B = cpu.size(0), T = cpu.size(1);
  const int64_t* tg = cpu.data_ptr<int64_t>();
  std::vector<int64_t> len(B, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T; t > 0; --t)
      if (tg[b * T + t - 1] != data::kIgnore) {
        len[b] = t;
        break;
      }
  return len;
}

// How many of the targets count (are not kIgnore): a plain loop (a LibTorch compare and sum
// cost ~0.04 ms a step).
int64_t counted_targets(const torch::Tensor& targets) {
  const torch::Tensor cpu = host_ids(targets);
  const int64_t* tg = cpu.data_ptr<int64_t>();
  return std::count_if(tg, tg + cpu.numel(), [](int64_t t) { return t != data::kIgnore; });
}

}  // namespace

MicroBatch padding_free_batch(const torch::Tensor& inputs, const torch::Tensor& targets) {
  const torch::Tensor in = host_ids(inputs);
  const torch::Tensor tg = host_ids(targets);
  const std::vector<int64_t> len = row_lengths(tg);
  const int64_t B = in.size(0), T = in.size(1);
  const bool full = std::all_of(len.begin(), len.end(), [&](int64_t n) { return n == T; });  // packed rows: nothing to cut
  const bool empty = std::all_of(len.begin(), len.end(), [](int64_t n) { return n == 0; });   // no target at all
  if (full || empty) return {inputs, targets, {}};
  MicroBatch m;
  for (int64_t n : len)
    if (n > 0) m.lengths.push_back(n);
  const int64_t N = std::accumulate(m.lengths.begin(), m.lengths.end(), int64_t{0});
  m.inputs = torch::empty({1, N}, in.options());
  m.targets = torch::empty({1, N}, tg.options());
  // Each row's first len[b] tokens, end to end (plain copies: a step cuts ~30 rows, and a
  // LibTorch slice per row cost more than the copying).
  int64_t* mi = m.inputs.data_ptr<int64_t>();
  int64_t* mt = m.targets.data_ptr<int64_t>();
  const int64_t *pi = in.data_ptr<int64_t>(), *pt = tg.data_ptr<int64_t>();
  for (int64_t b = 0, at = 0; b < B; at += len[b], ++b) {
    std::copy_n(pi + b * T, len[b], mi + at);
    std::copy_n(pt + b * T, len[b], mt + at);
  }
  m.inputs = m.inputs.to(inputs.device());
  m.targets = m.targets.to(targets.device());
  return m;
}

std::vector<MicroBatch> micro_batches(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t size) {
  const int64_t B = inputs.size(0);
  if (size <= 0 || size >= B) return {{inputs, targets, {}}};
  const std::vector<int64_t> len = row_lengths(targets);
  std::vector<int64_t> order(B);
  for (int64_t i = 0; i < B; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return len[a] < len[b]; });
  if (len[order.front()] == len[order.back()]) return {{inputs, targets, {}}};  // nothing to save (packed rows)
  std::vector<MicroBatch> out;
  for (int64_t b0 = 0; b0 < B; b0 += size) {
    const int64_t n = std::min(size, B - b0);
    const int64_t t = std::max<int64_t>(1, len[order[b0 + n - 1]]);  // the group's longest row
    auto idx = torch::tensor(std::vector<int64_t>(order.begin() + b0, order.begin() + b0 + n), torch::kInt64)
                   .to(inputs.device());
    out.push_back({inputs.index_select(0, idx).narrow(1, 0, t).contiguous(),
                   targets.index_select(0, idx).narrow(1, 0, t).contiguous(), {}});
  }
  return out;
}

namespace {

// The forward and backward passes of a step's work (split_step's lists), at once on
// concurrent_parts threads (list i on thread i mod threads) or one after another: the token
// losses summed over `tokens` when `summed`, else the mean (one micro-batch in one pass, as
// lm_cross_entropy's kernel scales it). List 0 accumulates its gradients in the parameters'
// .grad, as a one-part step does; every other list collects its own (autograd::grad: no .grad is
// touched), added after all have ended, in list order: the same sums whichever thread ran a list.
struct PassesResult {
  torch::Tensor loss;          // the summed loss, detached
  double fwd_ms = 0, bwd_ms = 0;  // the forwards on this thread; the rest of the wait for all lists
};
PassesResult forward_backward(ModernLM& model, const std::vector<std::vector<MicroBatch>>& work,
                              const std::vector<torch::Tensor>& params, Precision precision, bool summed,
                              int64_t tokens, double z_loss) {
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e3; };
  std::vector<torch::Tensor> part_loss(work.size());
  std::vector<std::vector<torch::Tensor>> part_grads(work.size());
  PassesResult out;
  const bool poisoned = faults::loss_poisoned();  // this thread's flag (tests), for every part
  const int threads = concurrent_parts(work.front().front().inputs.device());
  const bool at_once = threads > 1 && work.size() > 1;
  const auto t0 = Clock::now();
  kernels::parallel_parts(static_cast<int>(work.size()), [&](int part) {
    for (const MicroBatch& m : work[part]) {
      const auto ta = Clock::now();
      // Autocast (bf16) covers the forward and the loss only; the backward runs each op in the
      // dtype its forward used.
      std::optional<AutocastGuard> autocast(std::in_place, precision, m.inputs.device().type());
      take_aux_loss();  // nothing stale from another forward on this thread
      auto logits = m.lengths.empty() ? model->forward(m.inputs) : model->forward_packed(m.inputs, m.lengths);  // (B, T, V)
      const torch::Tensor aux = take_aux_loss();  // the MoE FFNs' load balancing, or undefined
      const auto flat = logits.reshape({-1, logits.size(-1)});
      // What the backward takes: the loss, plus the z-loss term where train.z_loss asks for it.
      torch::Tensor loss, objective;
      if (z_loss > 0) {
        auto [ce, z] = lm_cross_entropy_z(flat, m.targets.reshape(-1), data::kIgnore, summed);
        loss = ce, objective = ce + z_loss * z;
      } else {
        loss = objective = lm_cross_entropy(flat, m.targets.reshape(-1), data::kIgnore, summed);
      }
      if (summed) {
        const double n = std::max<double>(1.0, static_cast<double>(tokens));
        loss = loss / n;
        objective = z_loss > 0 ? objective / n : loss;
      }
      // An auxiliary loss is a mean over the micro-batch's rows: weighted by its share of the
      // batch's targets where the losses are summed over the batch.
      if (aux.defined())
        objective = objective + (summed ? aux * (static_cast<double>(counted_targets(m.targets)) /
                                                 std::max<double>(1.0, static_cast<double>(tokens)))
                                        : aux);
      if (poisoned) loss = loss * std::nan(""), objective = objective * std::nan("");
      autocast.reset();
      const auto tb = Clock::now();
      if (part == 0) {
        objective.backward();
      } else {
        auto grads = torch::autograd::grad({objective}, params, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                           /*allow_unused=*/true);
        auto& sum = part_grads[part];
        if (sum.empty()) sum = std::move(grads);
        else
          for (size_t i = 0; i < sum.size(); ++i)
            if (grads[i].defined()) sum[i] = sum[i].defined() ? sum[i] + grads[i] : grads[i];
      }
      part_loss[part] = part_loss[part].defined() ? part_loss[part] + loss.detach() : loss.detach();
      if (part == 0 || !at_once) out.fwd_ms += ms(ta, tb), out.bwd_ms += ms(tb, Clock::now());
    }
  }, threads);
  out.loss = part_loss[0];
  for (size_t part = 1; part < work.size(); ++part) {
    out.loss = out.loss + part_loss[part];
    for (size_t i = 0; i < part_grads[part].size(); ++i) {
      const torch::Tensor& g = part_grads[part][i];
      if (!g.defined()) continue;
      torch::Tensor p = params[i];
      if (p.grad().defined())
        p.mutable_grad().add_(g);
      else
        p.mutable_grad() = g;
    }
  }
  if (work.size() > 1) out.bwd_ms = ms(t0, Clock::now()) - out.fwd_ms;  // and the sums
  return out;
}

// Data-parallel: the loss, an interrupt flag and every gradient summed over the ranks in one
// all-reduce; the global loss into r.loss, whether any rank was interrupted into r.interrupted.
void allreduce_step(dist::Group& group, const torch::Tensor& loss, const std::vector<torch::Tensor>& params,
                    StepResult& r) {
  dist::fault_point();
  const auto loss1 = loss.reshape({1}).to(torch::kFloat).clone();
  std::vector<torch::Tensor> reduce{loss1, torch::full({1}, signals::interrupted() ? 1.0f : 0.0f, loss1.options())};
  for (auto p : params) {
    // Every rank all-reduces the same list: a parameter this rank's batch did not reach
    // contributes zeros.
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    reduce.push_back(p.grad());
  }
  group.allreduce_sum(reduce, "gradient all-reduce");
  r.loss = reduce[0].item<double>();
  r.interrupted = reduce[1].item<float>() > 0;
}

}  // namespace

StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const std::vector<MicroBatch>& micro, double lr,
                      double grad_clip, Precision precision, int64_t global_tokens, int parts, double z_loss) {
  if (micro.empty()) throw std::logic_error("train_step: no micro-batch");
  set_lr(optimizer, lr);
  dist::Group* group = dist::current();
  StepResult r;
  if (group) {
    if (global_tokens < 0) throw std::logic_error("train_step: data-parallel without the global token count");
    r.tokens = global_tokens;
  } else if (global_tokens >= 0) {
    r.tokens = global_tokens;
  } else {
    for (const auto& m : micro) r.tokens += counted_targets(m.targets);
  }
  const auto work = split_step(micro, parts);
  // One micro-batch (the whole batch) on one thread: the mean over its targets. Several, split or
  // data-parallel: each one's token losses summed over the (global) batch's token count, so that
  // the summed gradient is the whole batch's.
  const bool summed = group != nullptr || micro.size() > 1 || work.size() > 1;
  const auto params = model->parameters();
  clear_gradients(params);
  const PassesResult passes = forward_backward(model, work, params, precision, summed, r.tokens, z_loss);
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e3; };
  const auto t1 = Clock::now();
  if (group)
    allreduce_step(*group, passes.loss, params, r);
  else
    r.loss = passes.loss.item<double>();
  const auto t2 = Clock::now();
  r.grad_norm = clip_gradients(model, grad_clip);
  const auto t3 = Clock::now();
  if (std::isfinite(r.loss) && std::isfinite(r.grad_norm)) {
    optimizer.step();
    r.stepped = true;
  }
  const auto t4 = Clock::now();
  r.phase_ms = {passes.fwd_ms, passes.bwd_ms + ms(t1, t2), ms(t2, t3), ms(t3, t4)};
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

int64_t total_steps(const TrainConfig& t, int64_t batches_per_epoch, double targets_per_batch) {
  if (t.max_tokens > 0) {
    if (!(targets_per_batch > 0))
      throw InputError("train.max_tokens: the training split has no targets to count", "check the data section");
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(t.max_tokens / targets_per_batch)));
  }
  return t.steps > 0 ? t.steps : t.epochs * std::max<int64_t>(1, batches_per_epoch);
}

int64_t planned_steps(const Config& cfg, const data::Corpus& corpus) {
  const data::Batcher batcher(data::train_rows(corpus.train, cfg, corpus.vocab.eos), cfg.train.batch_size, 0,
                              corpus.vocab.pad);
  return total_steps(cfg.train, batcher.batches_per_epoch(), batcher.targets_per_batch());
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

}  // namespace lmx
