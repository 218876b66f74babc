// Learning-rate schedule: linear warm-up from 0, then constant, cosine or linear decay
// to min_lr at the last step (or, with train.max_time, at the end of the time budget).
#pragma once
#include <cstdint>

#include "config/config.h"

namespace lmx {

// The warm-up steps of a run of `total` steps: round(warmup_frac · total) where
// train.warmup_frac > 0, else train.warmup_steps.
int64_t warmup_steps(const TrainConfig& t, int64_t total);

// lr for optimizer step `step` (0-based) of `total` steps. time_progress >= 0 (train.max_time:
// the training seconds before this step over max_time) places the decay by time instead of
// steps; the warm-up stays in steps.
double lr_at(const TrainConfig& t, int64_t step, int64_t total, double time_progress = -1);

}  // namespace lmx
