#include "model/memory.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "config/registry.h"
#include "model/sizes.h"
#include "util/error.h"

namespace lmx {

MemoryEstimate estimate_training_memory(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  MemoryEstimate e;
  e.params = count_params(m).total();
  const double P = static_cast<double>(e.params);
  e.weights_bytes = 4 * P;
  e.grads_bytes = 4 * P;
  e.optimizer_bytes = 8 * P;
  const double B = cfg.train.batch_size, T = std::min(cfg.data.seq_len, m.max_seq_len);
  const double C = m.d_model, H = m.n_heads, V = m.vocab_size, L = m.n_layers;
  const bool gated = registry::ffn(m).gated;
  const double F = m.ffn_hidden(gated);
  const double per_layer_token = 16 * C + (gated ? 5 : 4) * F + 3 * H * T;
  e.activation_bytes = 4 * B * T * (L * per_layer_token + 3 * V + 2 * C);
  e.overhead_bytes = 256.0 * 1024 * 1024;
  return e;
}

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream ss(line.substr(13));
    double kib = -1;
    ss >> kib;
    return kib >= 0 ? kib * 1024 : -1;
  }
  return -1;
}

std::string format_bytes(double bytes) {
  const double gib = bytes / (1024.0 * 1024 * 1024);
  if (gib >= 1024) return fmt::format("{:.1f} TiB", gib / 1024);
  if (gib >= 1) return fmt::format("{:.1f} GiB", gib);
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
}

void check_training_memory(const Config& cfg, double available_bytes) {
  if (available_bytes < 0) return;
  const MemoryEstimate e = estimate_training_memory(cfg);
  if (e.total() <= available_bytes) return;
  throw InputError(
      fmt::format("{}: training needs about {} of memory ({} parameters: weights {}, gradients {}, AdamW state {}; "
                  "activations {} for batch {} x seq_len {} x {} layers) but only {} is available (MemAvailable)",
                  cfg.source.empty() ? cfg.name : cfg.source, format_bytes(e.total()), e.params,
                  format_bytes(e.weights_bytes), format_bytes(e.grads_bytes), format_bytes(e.optimizer_bytes),
                  format_bytes(e.activation_bytes), cfg.train.batch_size, cfg.data.seq_len, cfg.model.n_layers,
                  format_bytes(available_bytes)),
      "use a smaller model, train.batch_size or data.seq_len (lmx params CONFIG shows the sizes)");
}

}  // namespace lmx
