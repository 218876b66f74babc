// Turning documents into (input, target) batches, per document or packed, in a
// deterministic order per seed and rank-aware (each rank takes its slice of every
// global batch), so data-parallel runs see the same global batches as one process.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "data/corpus.h"

namespace lmx::data {

inline constexpr int64_t kIgnore = -100;  // target id skipped by the loss

struct Batch {
  torch::Tensor inputs;   // (B, T) int64
  torch::Tensor targets;  // (B, T) int64, kIgnore on padding
  int64_t tokens = 0;     // targets that count (not kIgnore)
  // Targets that count in the whole global batch, every rank's slice together (= tokens in
  // one process): data-parallel ranks normalise their loss by it without an all-reduce.
  int64_t global_tokens = 0;
};

using Layout = DataLayout;  // data.layout (config/config.h)

// The rows a layout makes of a list of documents, before batching.
//   Doc:    one row per document: inputs = doc[0..n-1), targets = doc[1..n). A document
//           with more than seq_len targets is cut into several rows of at most seq_len + 1
//           tokens that overlap by one, so every target is predicted exactly once.
//   Packed: the documents joined (<bos> d1 <eos> d2 <eos> ...; a document's own <bos> is
//           dropped after the first), cut into rows of seq_len + 1 tokens overlapping by
//           one; the last row holds what is left (it is padded and masked in its batch).
struct Rows {
  std::vector<std::vector<int32_t>> rows;  // each holds inputs plus one more target token
  int seq_len = 0;
  Layout layout = Layout::Doc;
};
Rows make_rows(const std::vector<Doc>& docs, Layout layout, int seq_len, int32_t eos);

// The row length a config trains on: packed, data.seq_len; doc, the model's context
// (model.max_seq_len), so that a document is one row unless it is longer than the model can
// see, and training reaches every position that evaluation of whole documents scores.
int train_row_len(const Config& cfg);
// The rows a config trains on: make_rows(docs, data.layout, train_row_len(cfg), eos).
Rows train_rows(const std::vector<Doc>& docs, const Config& cfg, int32_t eos);

// Batches of rows for training: reshuffled every epoch from (seed, epoch), padded with
// `pad` to the longest row of the global batch (Doc) or exactly seq_len (Packed).
// An epoch is rows / batch_size full global batches (the rows left over differ per epoch);
// with fewer rows than batch_size, one batch of all of them. Rank r of `world` takes rows
// [r*B/world, (r+1)*B/world) of each global batch of B rows. Not thread-safe (caches the order).
class Batcher {
 public:
  Batcher(Rows rows, int batch_size, uint64_t seed, int32_t pad, int rank = 0, int world = 1);
  int64_t batches_per_epoch() const;
  // The counted targets of a global batch, the split's mean: min(batch_size, rows) times the
  // mean targets of a row (train.max_tokens' unit).
  double targets_per_batch() const;
  // The batch for a global step (epoch = step / batches_per_epoch); this rank's slice.
  Batch batch(int64_t step) const;

 private:
  Rows rows_;
  int batch_size_;
  uint64_t seed_;
  int32_t pad_;
  int rank_, world_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> order_;
};

// Fixed-order batches over all rows (evaluation); the last batch may be smaller.
std::vector<Batch> eval_batches(const Rows& rows, int batch_size, int32_t pad);

// Evaluation batches as row indices, batch_size rows each (the last may hold fewer): every row
// once, sorted by length (stable: equal lengths keep their order), so that a Doc-layout batch
// pads its rows to nearly their own length instead of the longest of batch_size random
// documents (a garden batch of 32 was ~2x padding). Causal outputs at a row's own positions do
// not depend on the padding after them.
std::vector<std::vector<size_t>> length_sorted_batches(const Rows& rows, int batch_size);
// The batch of the given rows, padded to the longest of them (Doc) or seq_len (Packed).
Batch rows_batch(const Rows& rows, const std::vector<size_t>& indices, int32_t pad);

}  // namespace lmx::data
