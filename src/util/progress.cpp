#include "util/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lmx {

RunProgress::RunProgress(int total_runs, double total_work) : total_(total_runs), total_work_(total_work) {}

void RunProgress::kept(double work) {
  ++done_;
  kept_work_ += work;
}

std::string RunProgress::ended(double work) {
  ++done_;
  ran_work_ += work;
  const double elapsed = seconds_since(start_);
  std::string text = format_duration(elapsed) + " elapsed";
  const double left = std::max(0.0, total_work_ - kept_work_ - ran_work_);
  if (done_ < total_ && ran_work_ > 0 && left > 0) text += ", ETA " + format_duration(elapsed / ran_work_ * left);
  return text;
}

std::string RunProgress::counter() const { return fmt::format("[{}/{}]", done_, total_); }

std::string format_duration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
}

}  // namespace lmx
