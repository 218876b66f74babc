// What a training run needs to continue bit for bit after an interruption, stored in the
// run's model.safetensors next to the weights:
//   tensors  "optim.<param>.exp_avg", "optim.<param>.exp_avg_sq" (F32, the parameter's shape),
//            "optim.<param>.step" (I64 scalar): AdamW's state per parameter;
//            "state.torch_rng" (I32): LibTorch's default CPU generator state.
//   metadata "status" (interrupted | running while training | ok | diverged), "steps" (optimizer
//            steps taken; the next batch is Batcher::batch(steps), so this is also the data-order
//            position), "epoch", "best_val_ppl", "final_val_ppl", "final_train_loss",
//            "last_epoch_loss_sum", "last_epoch_tokens", "first_loss_sum", "first_tokens",
//            "tokens_seen", "train_seconds", "threads" (doubles with 17 significant digits).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "model/lm.h"
#include "train/optimizer.h"
#include "train/run_status.h"

namespace lmx {

struct TrainState {
  RunStatus status = RunStatus::Running;
  int64_t steps = 0;
  double epoch = 0;
  double best_val_ppl = std::nan("");
  double final_val_ppl = std::nan("");
  double final_train_loss = std::nan("");
  // Token-weighted train-loss sums: over the last epoch's steps and over the first
  // kFirstSteps steps (the loss each step reported, before its update).
  double last_epoch_loss_sum = 0;
  int64_t last_epoch_tokens = 0;
  double first_loss_sum = 0;
  int64_t first_tokens = 0;
  int64_t tokens_seen = 0;
  double train_seconds = 0;
  int threads = 1;
};

// The optimizer's per-parameter state as "optim.*" tensors (parameters without state are
// skipped; a Muon parameter has no exp_avg_sq), plus "state.torch_rng".
NamedTensors optimizer_tensors(ModernLMImpl& model, FusedAdamW& optimizer);

// Restores what optimizer_tensors saved. InputError naming the checkpoint when a parameter's
// state is missing, misshaped or of another dtype.
void restore_optimizer(ModernLMImpl& model, FusedAdamW& optimizer, const Checkpoint& ckpt);

std::map<std::string, std::string> state_metadata(const TrainState& s);

// Reads the state back from a checkpoint's metadata; InputError naming the key when absent
// or not a number, or the status when it is not one (run_status.h).
TrainState parse_state(const Checkpoint& ckpt);


}  // namespace lmx
