#include "train/train_state.h"

#include <fmt/format.h>
#include "torch_api.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstdlib>
#include <mutex>

#include "train/optimizer.h"
#include "util/error.h"

namespace lmx {

namespace {


at::Generator default_cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

std::string exact(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.17g}", v); }

const torch::Tensor* find(const Checkpoint& ckpt, const std::string& name) {
  for (const auto& [n, t] : ckpt.tensors)
    if (n == name) return &t;
  return nullptr;
}

}  // namespace


NamedTensors optimizer_tensors(ModernLMImpl& model, FusedAdamW& optimizer) {
  NamedTensors out;
  auto& state = optimizer.state();
  for (const auto& p : model.named_parameters()) {
    auto it = state.find(adamw_state_key(p.value()));
    if (it == state.end()) continue;
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    out.push_back({"optim." + p.key() + ".exp_avg", s.exp_avg()});
    if (s.exp_avg_sq().defined()) out.push_back({"optim." + p.key() + ".exp_avg_sq", s.exp_avg_sq()});
    out.push_back({"optim." + p.key() + ".step", torch::tensor(s.step(), torch::kInt64)});
  }
  out.push_back({"state.torch_rng", default_cpu_generator().get_state().to(torch::kInt32)});
  return out;
}

void restore_optimizer(ModernLMImpl& model, FusedAdamW& optimizer, const Checkpoint& ckpt) {
  auto& state = optimizer.state();
  state.clear();
  for (const auto& p : model.named_parameters()) {
    const std::string base = "optim." + p.key();
    const torch::Tensor* avg = find(ckpt, base + ".exp_avg");
    const torch::Tensor* sq = find(ckpt, base + ".exp_avg_sq");
    const torch::Tensor* step = find(ckpt, base + ".step");
    if (!avg && !sq && !step) continue;  // the parameter had no state yet
    auto bad = [&](const std::string& what) {
      return InputError(fmt::format("{}: optimizer state of {} {}", ckpt.path, p.key(), what),
                        "the checkpoint cannot be resumed; start the run again");
    };
    const bool muon = optimizer.orthogonalized(p.value());  // momentum only
    if (!avg || (!sq && !muon) || !step) throw bad("is incomplete (needs exp_avg, exp_avg_sq and step)");
    if (sq && muon) throw bad("has AdamW's exp_avg_sq, but train.optimizer updates it by Muon");
    for (const torch::Tensor* t : {avg, sq})
      if (t && (!t->sizes().equals(p.value().sizes()) || t->scalar_type() != p.value().scalar_type()))
        throw bad("does not match the parameter's shape or dtype");
    if (step->numel() != 1 || step->scalar_type() != torch::kInt64 || step->item<int64_t>() < 0)
      throw bad("has no valid step count");
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step->item<int64_t>());
    s->exp_avg(avg->clone().to(p.value().device()));
    if (sq) s->exp_avg_sq(sq->clone().to(p.value().device()));
    state[adamw_state_key(p.value())] = std::move(s);
  }
  if (const torch::Tensor* rng = find(ckpt, "state.torch_rng")) {
    try {
      at::Generator gen = default_cpu_generator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng->to(torch::kUInt8));
    } catch (const c10::Error&) {
      throw InputError(fmt::format("{}: state.torch_rng is not a valid generator state", ckpt.path),
                       "the checkpoint cannot be resumed; start the run again");
    }
  }
}

std::map<std::string, std::string> state_metadata(const TrainState& s) {
  return {{"status", status_name(s.status)},
          {"steps", std::to_string(s.steps)},
          {"epoch", exact(s.epoch)},
          {"best_val_ppl", exact(s.best_val_ppl)},
          {"final_val_ppl", exact(s.final_val_ppl)},
          {"final_train_loss", exact(s.final_train_loss)},
          {"last_epoch_loss_sum", exact(s.last_epoch_loss_sum)},
          {"last_epoch_tokens", std::to_string(s.last_epoch_tokens)},
          {"first_loss_sum", exact(s.first_loss_sum)},
          {"first_tokens", std::to_string(s.first_tokens)},
          {"tokens_seen", std::to_string(s.tokens_seen)},
          {"train_seconds", exact(s.train_seconds)},
          {"threads", std::to_string(s.threads)}};
}

TrainState parse_state(const Checkpoint& ckpt) {
  auto get = [&](const std::string& key) -> std::string {
    auto it = ckpt.metadata.find(key);
    if (it == ckpt.metadata.end())
      throw InputError(fmt::format("{}: metadata key '{}' is missing: not a resumable lmx checkpoint", ckpt.path, key),
                       "only checkpoints written by an interrupted `lmx train` can be resumed");
    return it->second;
  };
  auto number = [&](const std::string& key) {
    const std::string v = get(key);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || !end || *end != '\0')
      throw InputError(fmt::format("{}: metadata '{}' = '{}' is not a number", ckpt.path, key, v));
    return d;
  };
  auto integer = [&](const std::string& key) {
    const double d = number(key);
    if (!(d >= 0 && d < 9e15) || d != std::floor(d))
      throw InputError(fmt::format("{}: metadata '{}' = '{}' is not a non-negative integer", ckpt.path, key, get(key)));
    return static_cast<int64_t>(d);
  };
  TrainState s;
  const std::string status = get("status");
  const std::optional<RunStatus> parsed = parse_status(status);
  if (!parsed)
    throw InputError(fmt::format("{}: unknown status '{}' in the checkpoint's metadata", ckpt.path, status),
                     "the checkpoint cannot be resumed; start the run again");
  s.status = *parsed;
  s.steps = integer("steps");
  s.epoch = number("epoch");
  s.best_val_ppl = number("best_val_ppl");
  s.final_val_ppl = number("final_val_ppl");
  s.final_train_loss = number("final_train_loss");
  s.last_epoch_loss_sum = number("last_epoch_loss_sum");
  s.last_epoch_tokens = integer("last_epoch_tokens");
  s.first_loss_sum = number("first_loss_sum");
  s.first_tokens = integer("first_tokens");
  s.tokens_seen = integer("tokens_seen");
  s.train_seconds = number("train_seconds");
  s.threads = static_cast<int>(std::min<int64_t>(integer("threads"), 1 << 20));
  return s;
}

}  // namespace lmx
