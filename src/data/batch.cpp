#include "data/batch.h"

#include <fmt/format.h>
#include "torch_api.h"

#include <algorithm>

#include "data/rng.h"
#include "util/error.h"

namespace lmx::data {

namespace {

// Rows of at most seq_len + 1 tokens from `tokens`, overlapping by one token.
void cut(const std::vector<int32_t>& tokens, int seq_len, std::vector<std::vector<int32_t>>& out) {
  const size_t n = tokens.size();
  for (size_t start = 0; start + 1 < n; start += seq_len) {
    size_t end = std::min(n, start + seq_len + 1);
    out.emplace_back(tokens.begin() + start, tokens.begin() + end);
  }
}

// The targets a row holds at width T.
int64_t targets_in(const std::vector<int32_t>& row, int64_t T) {
  return std::max<int64_t>(0, std::min<int64_t>(static_cast<int64_t>(row.size()) - 1, T));
}

// One batch of the given rows: inputs padded with pad, targets with kIgnore, to width T.
Batch make_batch(const std::vector<const std::vector<int32_t>*>& rows, int64_t T, int32_t pad) {
  const int64_t B = static_cast<int64_t>(rows.size());
  std::vector<int64_t> in(B * T, pad), tgt(B * T, kIgnore);
  Batch batch;
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = *rows[b];
    for (int64_t t = 0; t < targets_in(r, T); ++t) {
      in[b * T + t] = r[t];
      tgt[b * T + t] = r[t + 1];
    }
    batch.tokens += targets_in(r, T);
  }
  batch.global_tokens = batch.tokens;
  batch.inputs = torch::tensor(in, torch::kLong).view({B, T});
  batch.targets = torch::tensor(tgt, torch::kLong).view({B, T});
  return batch;
}

int64_t width(const Rows& rows, const std::vector<const std::vector<int32_t>*>& batch) {
  if (rows.layout == Layout::Packed) return rows.seq_len;
  size_t longest = 1;
  for (const auto* r : batch) longest = std::max(longest, r->size());
  return static_cast<int64_t>(longest) - 1;
}

}  // namespace

Rows make_rows(const std::vector<Doc>& docs, Layout layout, int seq_len, int32_t eos) {
  if (seq_len < 1) throw InputError(fmt::format("data.seq_len must be >= 1, got {}", seq_len));
  Rows out;
  out.seq_len = seq_len;
  out.layout = layout;
  if (layout == Layout::Doc) {
    for (const Doc& doc : docs) cut(doc, seq_len, out.rows);
    return out;
  }
  std::vector<int32_t> stream;
  for (const Doc& doc : docs) {
    if (doc.empty()) continue;
    if (stream.empty()) {
      stream = doc;
    } else {
      if (stream.back() != eos) stream.push_back(eos);
      stream.insert(stream.end(), doc.begin() + 1, doc.end());  // without the document's <bos>
    }
  }
  cut(stream, seq_len, out.rows);
  return out;
}

int train_row_len(const Config& cfg) {
  return cfg.data.layout == Layout::Packed ? cfg.data.seq_len : cfg.model.max_seq_len;
}

Rows train_rows(const std::vector<Doc>& docs, const Config& cfg, int32_t eos) {
  return make_rows(docs, cfg.data.layout, train_row_len(cfg), eos);
}

Batcher::Batcher(Rows rows, int batch_size, uint64_t seed, int32_t pad, int rank, int world)
    : rows_(std::move(rows)), batch_size_(batch_size), seed_(seed), pad_(pad), rank_(rank), world_(world) {
  if (rows_.rows.empty()) throw InputError("no training rows: the training split is empty");
  if (batch_size_ < 1) throw InputError(fmt::format("train.batch_size must be >= 1, got {}", batch_size_));
  if (world_ < 1 || rank_ < 0 || rank_ >= world_)
    throw InputError(fmt::format("rank {} is outside a world of {} processes", rank_, world_));
}

int64_t Batcher::batches_per_epoch() const {
  const int64_t n = static_cast<int64_t>(rows_.rows.size());
  return std::max<int64_t>(1, n / batch_size_);
}

double Batcher::targets_per_batch() const {
  const int64_t n = static_cast<int64_t>(rows_.rows.size());
  if (n == 0) return 0;
  int64_t targets = 0;
  for (const auto& r : rows_.rows) targets += std::max<int64_t>(0, static_cast<int64_t>(r.size()) - 1);
  return static_cast<double>(targets) / static_cast<double>(n) * static_cast<double>(std::min<int64_t>(n, batch_size_));
}

Batch Batcher::batch(int64_t step) const {
  const int64_t per_epoch = batches_per_epoch();
  const int64_t epoch = step / per_epoch, index = step % per_epoch;
  const int64_t n = static_cast<int64_t>(rows_.rows.size());
  if (epoch != cached_epoch_) {
    // Fisher-Yates with a stream of its own per epoch.
    order_.resize(n);
    for (int64_t i = 0; i < n; ++i) order_[i] = i;
    Rng rng(stream_seed(seed_, 1000 + static_cast<uint64_t>(epoch)));
    for (int64_t i = n; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(static_cast<uint64_t>(i))]);
    cached_epoch_ = epoch;
  }
  const int64_t B = std::min<int64_t>(batch_size_, n);
  std::vector<const std::vector<int32_t>*> global;
  for (int64_t k = 0; k < B; ++k) global.push_back(&rows_.rows[order_[index * B + k]]);
  const int64_t T = width(rows_, global);  // same width on every rank
  std::vector<const std::vector<int32_t>*> mine(global.begin() + rank_ * B / world_,
                                                global.begin() + (rank_ + 1) * B / world_);
  Batch batch = make_batch(mine, T, pad_);
  batch.global_tokens = 0;
  for (const auto* r : global) batch.global_tokens += targets_in(*r, T);
  return batch;
}

Batch rows_batch(const Rows& rows, const std::vector<size_t>& indices, int32_t pad) {
  std::vector<const std::vector<int32_t>*> chunk;
  for (size_t k : indices) chunk.push_back(&rows.rows.at(k));
  return make_batch(chunk, width(rows, chunk), pad);
}

namespace {

// The rows' indices in batches of batch_size (the last may hold fewer), in row order or, with
// by_length, shortest first (stable).
std::vector<std::vector<size_t>> index_batches(const Rows& rows, int batch_size, bool by_length) {
  if (batch_size < 1) throw InputError(fmt::format("batch size must be >= 1, got {}", batch_size));
  std::vector<size_t> order(rows.rows.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  if (by_length)
    std::stable_sort(order.begin(), order.end(),
                     [&rows](size_t a, size_t b) { return rows.rows[a].size() < rows.rows[b].size(); });
  std::vector<std::vector<size_t>> out;
  for (size_t start = 0; start < order.size(); start += batch_size)
    out.emplace_back(order.begin() + start, order.begin() + std::min(order.size(), start + batch_size));
  return out;
}

}  // namespace

std::vector<Batch> eval_batches(const Rows& rows, int batch_size, int32_t pad) {
  std::vector<Batch> out;
  for (const auto& indices : index_batches(rows, batch_size, /*by_length=*/false))
    out.push_back(rows_batch(rows, indices, pad));
  return out;
}

std::vector<std::vector<size_t>> length_sorted_batches(const Rows& rows, int batch_size) {
  return index_batches(rows, batch_size, /*by_length=*/true);
}

}  // namespace lmx::data
