#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace lmx {

int64_t warmup_steps(const TrainConfig& t, int64_t total) {
  return t.warmup_frac > 0 ? std::llround(t.warmup_frac * static_cast<double>(total)) : t.warmup_steps;
}

double lr_at(const TrainConfig& t, int64_t step, int64_t total, double time_progress) {
  const int64_t warmup = warmup_steps(t, total);
  // Warm-up: step 0 already takes a small step (lr/warmup), reaching lr at step = warmup.
  if (warmup > 0 && step < warmup) return t.lr * static_cast<double>(step + 1) / warmup;
  const Schedule schedule = t.schedule;
  if (schedule == Schedule::Constant) return t.lr;
  const int64_t decay_steps = std::max<int64_t>(1, total - warmup - 1);
  const double progress = std::clamp(
      time_progress >= 0 ? time_progress : static_cast<double>(step - warmup) / decay_steps, 0.0, 1.0);
  const double shape = schedule == Schedule::Cosine ? 0.5 * (1.0 + std::cos(M_PI * progress))
                                              : 1.0 - progress;  // linear
  return t.min_lr + (t.lr - t.min_lr) * shape;
}

}  // namespace lmx
