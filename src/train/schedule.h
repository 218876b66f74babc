// Learning-rate schedule: linear warm-up from 0, then constant, cosine or linear decay
// to min_lr at the last step.
#pragma once
#include <cstdint>

#include "config/config.h"

namespace lmx {

// lr for optimizer step `step` (0-based) of `total` steps.
double lr_at(const TrainConfig& t, int64_t step, int64_t total);

}  // namespace lmx
