// Resource guard: how much memory training a config needs, estimated from the config alone
// (no allocation), and the refusal of a config that would not fit in the available RAM.
//
//   parameters  4·P bytes (fp32), gradients 4·P, AdamW exp_avg + exp_avg_sq 8·P;
//   activations kept for the backward pass, B = batch_size rows of T = seq_len tokens:
//     per layer and token  16·C (norms, Q/K/V, attention output, projections, residuals)
//                        + 4·F (gated: 5·F) (FFN input, activation, gate, output)
//                        + 3·H·T (attention scores, mask, softmax)          (fp32 each)
//     the head             3·V per token (logits, log-softmax, their gradient)
//   plus a fixed 256 MiB for the runtime, the corpus and evaluation.
// It is an upper-end estimate for LibTorch's eager CPU training (tests check it against the
// peak RSS of a real run); its purpose is to refuse a 70B preset, not to budget to the MiB.
#pragma once
#include <cstdint>
#include <string>

#include "config/config.h"

namespace lmx {

struct MemoryEstimate {
  int64_t params = 0;            // P
  double weights_bytes = 0;      // 4·P
  double grads_bytes = 0;        // 4·P
  double optimizer_bytes = 0;    // 8·P (AdamW)
  double activation_bytes = 0;   // one training step's saved activations
  double overhead_bytes = 0;     // runtime, data, evaluation
  double total() const { return weights_bytes + grads_bytes + optimizer_bytes + activation_bytes + overhead_bytes; }
};

// Requires cfg.model.vocab_size > 0 (a preset's or resolved from the corpus).
MemoryEstimate estimate_training_memory(const Config& cfg);

// MemAvailable of /proc/meminfo in bytes; -1 when it cannot be read.
double available_memory_bytes();

// "3.2 GiB" / "512.0 MiB"
std::string format_bytes(double bytes);

// InputError (exit 2) naming the config, the estimate (with its parts) and the limit when the
// estimate exceeds available_bytes (skipped when available_bytes < 0).
void check_training_memory(const Config& cfg, double available_bytes);

}  // namespace lmx
