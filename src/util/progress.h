// Where a job of several runs stands (sweep, ablate, extrapolate, uptrain): "runs done / total"
// and an ETA from the rate so far. Each run can carry a weight (its steps, when runs differ in
// length); the rate counts only the runs this process ran, not those kept from before a resume.
#pragma once
#include <string>

#include "util/clock.h"

namespace lmx {

class RunProgress {
 public:
  RunProgress(int total_runs, double total_work);
  // A run that finished before this process (kept on resume): done, but not in the rate.
  void kept(double work = 1);
  // A run that ended now: "[k/N] ... 3m02s elapsed, ETA 5m40s" pieces; ended() returns the
  // time part (no ETA after the last run), counter() the "[k/N]" part.
  std::string ended(double work = 1);
  std::string counter() const;
  int done() const { return done_; }
  int total() const { return total_; }

 private:
  int total_, done_ = 0;
  double total_work_, kept_work_ = 0, ran_work_ = 0;
  Clock::time_point start_ = Clock::now();
};

// "42s", "3m02s", "1h05m".
std::string format_duration(double seconds);

}  // namespace lmx
