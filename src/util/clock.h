// Wall-clock timing of steps and runs.
#pragma once
#include <chrono>

namespace lmx {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace lmx
