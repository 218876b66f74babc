// The split training step's cutting (train.step_parts; declared in train/trainer.h): how many
// parts a step's batch is split into, and how its micro-batches are shared out among them.
#include "train/trainer.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/torch_runtime.h"
#include "util/runtime.h"

namespace lmx {

int step_parts(const TrainConfig& t, const c10::Device& device) { return device.is_cpu() ? std::max(1, t.step_parts) : 1; }

int concurrent_parts(const c10::Device& device) {
  return device.is_cpu() && torch_runtime::torch_threads() == 1 ? std::max(1, runtime::threads()) : 1;
}

namespace {

// Several micro-batches: largest first, each to the list with the fewest tokens so far (ties:
// the lower list).
std::vector<std::vector<MicroBatch>> deal_micro_batches(const std::vector<MicroBatch>& micro, int parts) {
  std::vector<size_t> order(micro.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return micro[a].inputs.numel() > micro[b].inputs.numel(); });
  const size_t n = std::min<size_t>(parts, micro.size());
  std::vector<std::vector<MicroBatch>> out(n);
  std::vector<int64_t> load(n, 0);
  for (size_t i : order) {
    const size_t to = std::min_element(load.begin(), load.end()) - load.begin();
    out[to].push_back(micro[i]);
    load[to] += micro[i].inputs.numel();
  }
  return out;
}

// A (B, T) batch: row blocks, as equal as B allows.
std::vector<std::vector<MicroBatch>> row_blocks(const MicroBatch& m, int parts) {
  const int64_t B = m.inputs.size(0), n = std::min<int64_t>(parts, B);
  std::vector<std::vector<MicroBatch>> out;
  for (int64_t i = 0, at = 0; i < n; ++i) {
    const int64_t rows = B / n + (i < B % n ? 1 : 0);
    out.push_back({{m.inputs.narrow(0, at, rows), m.targets.narrow(0, at, rows), {}}});
    at += rows;
  }
  return out;
}

// A padding-free row: runs of whole sequences in order; part i ends at the cut nearest to i + 1
// shares of the tokens (a sequence joins while that brings the running count closer).
std::vector<std::vector<MicroBatch>> sequence_runs(const MicroBatch& m, int parts) {
  const int64_t total = std::accumulate(m.lengths.begin(), m.lengths.end(), int64_t{0});
  const int64_t n = std::min<int64_t>(parts, static_cast<int64_t>(m.lengths.size()));
  std::vector<std::vector<MicroBatch>> out;
  size_t seq = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    MicroBatch part;
    const size_t last = m.lengths.size() - static_cast<size_t>(n - 1 - i);  // leave one for each later part
    const int64_t goal = total * (i + 1) / n;
    int64_t len = 0;
    while (seq < last && (part.lengths.empty() || i == n - 1 || 2 * (at + len) + m.lengths[seq] < 2 * goal)) {
      part.lengths.push_back(m.lengths[seq]);
      len += m.lengths[seq++];
    }
    part.inputs = m.inputs.narrow(1, at, len);
    part.targets = m.targets.narrow(1, at, len);
    at += len;
    out.push_back({std::move(part)});
  }
  return out;
}

}  // namespace

std::vector<std::vector<MicroBatch>> split_step(const std::vector<MicroBatch>& micro, int parts) {
  if (parts <= 1 || micro.empty()) return {micro};
  if (micro.size() > 1) return deal_micro_batches(micro, parts);
  return micro.front().lengths.empty() ? row_blocks(micro.front(), parts) : sequence_runs(micro.front(), parts);
}

}  // namespace lmx
