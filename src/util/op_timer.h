// Where a training step's time goes, measured inside the step: each of lmx's own autograd
// Functions (the linear layers' GEMMs, fused attention, the FFN activations, the norms,
// cross-entropy) adds the wall time of its forward and backward to a per-kind total while timing
// is on. `lmx bench --breakdown` turns it on for its timed steps; the step's time minus these
// totals is what LibTorch's own ops (embedding, ReLU, views, concatenations), the autograd
// engine and allocation cost. Off (the default) a scope costs one relaxed atomic load.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace lmx::op_timer {

enum class Kind { Linear, Attention, Activation, Norm, Loss };  // Loss last: kKinds counts from it
inline constexpr int kKinds = static_cast<int>(Kind::Loss) + 1;

namespace detail {
inline std::atomic<bool> g_on{false};
inline std::array<std::atomic<int64_t>, kKinds> g_ns{};
}  // namespace detail

inline void set_enabled(bool on) { detail::g_on.store(on, std::memory_order_relaxed); }
inline void reset() {
  for (auto& n : detail::g_ns) n.store(0, std::memory_order_relaxed);
}
inline double total_ms(Kind k) {
  return static_cast<double>(detail::g_ns[static_cast<int>(k)].load(std::memory_order_relaxed)) / 1e6;
}

// Adds its lifetime to kind k's total when timing was on at its start (nested scopes of the
// same step would count twice: the Functions above do not nest).
class Scope {
 public:
  explicit Scope(Kind k) : k_(static_cast<int>(k)), on_(detail::g_on.load(std::memory_order_relaxed)) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (!on_) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_);
    detail::g_ns[k_].fetch_add(ns.count(), std::memory_order_relaxed);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  int k_;
  bool on_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace lmx::op_timer
