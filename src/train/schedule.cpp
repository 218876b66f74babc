#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace lmx {

double lr_at(const TrainConfig& t, int64_t step, int64_t total) {
  // Warm-up: step 0 already takes a small step (lr/warmup), reaching lr at step = warmup.
  if (t.warmup_steps > 0 && step < t.warmup_steps)
    return t.lr * static_cast<double>(step + 1) / t.warmup_steps;
  const Schedule schedule = t.schedule;
  if (schedule == Schedule::Constant) return t.lr;
  const int64_t decay_steps = std::max<int64_t>(1, total - t.warmup_steps - 1);
  const double progress =
      std::clamp(static_cast<double>(step - t.warmup_steps) / decay_steps, 0.0, 1.0);
  const double shape = schedule == Schedule::Cosine ? 0.5 * (1.0 + std::cos(M_PI * progress))
                                              : 1.0 - progress;  // linear
  return t.min_lr + (t.lr - t.min_lr) * shape;
}

}  // namespace lmx
