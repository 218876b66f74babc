// Rows and batches: per-document and packed layouts, masking, order, rank slices.
#include "catch.h"
#include "torch_api.h"

#include <set>

#include "data/batch.h"
#include "data/corpus.h"
#include "util/error.h"

using namespace lmx;
using namespace lmx::data;

namespace {

constexpr int32_t kPad = 0, kBos = 1, kEos = 2;

// Documents of lengths 3..(3 + n - 1) with distinct word ids.
std::vector<Doc> make_docs(int n) {
  std::vector<Doc> docs;
  int32_t next = 10;
  for (int i = 0; i < n; ++i) {
    Doc d{kBos};
    for (int k = 0; k < 1 + i % 9; ++k) d.push_back(next++);
    d.push_back(kEos);
    docs.push_back(d);
  }
  return docs;
}

std::vector<int64_t> to_vector(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

TEST_CASE("doc rows: one per document, long ones cut with every target once", "[data]") {
  std::vector<Doc> docs{{kBos, 10, 11, kEos}, {kBos, 20, 21, 22, 23, 24, 25, 26, kEos}};
  Rows rows = make_rows(docs, Layout::Doc, 4, kEos);
  REQUIRE(rows.rows.size() == 3);
  CHECK(rows.rows[0] == std::vector<int32_t>{kBos, 10, 11, kEos});
  CHECK(rows.rows[1] == std::vector<int32_t>{kBos, 20, 21, 22, 23});
  CHECK(rows.rows[2] == std::vector<int32_t>{23, 24, 25, 26, kEos});
  CHECK_THROWS_AS(parse_option<DataLayout>("stacked"), InputError);
  CHECK(parse_option<DataLayout>("packed") == Layout::Packed);
}

TEST_CASE("packed rows: documents joined by <eos>, seq_len + 1 tokens overlapping by one", "[data]") {
  auto docs = make_docs(40);
  for (int T : {1, 5, 16, 64}) {
    Rows rows = make_rows(docs, Layout::Packed, T, kEos);
    std::vector<int32_t> stream = docs[0];
    for (size_t i = 1; i < docs.size(); ++i) stream.insert(stream.end(), docs[i].begin() + 1, docs[i].end());
    std::vector<int32_t> joined = rows.rows[0];
    for (size_t r = 1; r < rows.rows.size(); ++r) {
      CHECK(rows.rows[r].front() == rows.rows[r - 1].back());
      joined.insert(joined.end(), rows.rows[r].begin() + 1, rows.rows[r].end());
    }
    CHECK(joined == stream);
    for (size_t r = 0; r + 1 < rows.rows.size(); ++r) CHECK(rows.rows[r].size() == static_cast<size_t>(T + 1));
    CHECK(std::count(stream.begin(), stream.end(), kBos) == 1);
    CHECK(std::count(stream.begin(), stream.end(), kEos) == 40);
    // Every batch is exactly T wide; the short last row is padded and masked.
    auto batches = eval_batches(rows, 7, kPad);
    int64_t tokens = 0;
    for (const auto& b : batches) {
      CHECK(b.inputs.size(1) == T);
      tokens += b.tokens;
      CHECK(b.tokens == (b.targets != kIgnore).sum().item<int64_t>());
    }
    CHECK(tokens == static_cast<int64_t>(stream.size()) - 1);
  }
}

TEST_CASE("doc batches: start at <bos>, padding masked, widths from the longest row", "[data]") {
  auto docs = make_docs(50);
  Rows rows = make_rows(docs, Layout::Doc, 64, kEos);
  Batcher batcher(rows, 8, 42, kPad);
  CHECK(batcher.batches_per_epoch() == 6);  // 50 / 8, the rest waits for another epoch's order
  std::set<std::vector<int64_t>> seen;
  for (int64_t step = 0; step < batcher.batches_per_epoch(); ++step) {
    Batch b = batcher.batch(step);
    REQUIRE(b.inputs.sizes() == b.targets.sizes());
    REQUIRE(b.inputs.size(0) == 8);
    auto in = to_vector(b.inputs), tgt = to_vector(b.targets);
    const int64_t T = b.inputs.size(1);
    int64_t counted = 0, longest = 0;
    for (int64_t r = 0; r < 8; ++r) {
      CHECK(in[r * T] == kBos);
      int64_t len = 0;  // targets up to and including <eos>
      while (len < T && tgt[r * T + len] != kIgnore) ++len;
      longest = std::max(longest, len);
      CHECK(tgt[r * T + len - 1] == kEos);
      for (int64_t t = len; t < T; ++t) {
        CHECK(tgt[r * T + t] == kIgnore);
        CHECK(in[r * T + t] == kPad);
      }
      for (int64_t t = 0; t + 1 < len; ++t) CHECK(tgt[r * T + t] == in[r * T + t + 1]);
      counted += len;
      seen.insert(std::vector<int64_t>(in.begin() + r * T, in.begin() + r * T + len));
    }
    CHECK(longest == T);
    CHECK(b.tokens == counted);
  }
  CHECK(seen.size() == 48);  // no row twice within an epoch
}

TEST_CASE("batch order: deterministic per (seed, epoch)", "[data]") {
  Rows rows = make_rows(make_docs(64), Layout::Doc, 64, kEos);
  Batcher a(rows, 16, 3, kPad), b(rows, 16, 3, kPad), c(rows, 16, 4, kPad);
  const int64_t E = a.batches_per_epoch();
  REQUIRE(E == 4);
  bool differs_by_seed = false, differs_by_epoch = false;
  for (int64_t step = 0; step < 2 * E; ++step) {
    auto x = a.batch(step);
    CHECK(torch::equal(x.inputs, b.batch(step).inputs));
    differs_by_seed = differs_by_seed || !torch::equal(x.inputs, c.batch(step).inputs) ||
                      x.inputs.sizes() != c.batch(step).inputs.sizes();
  }
  auto first = a.batch(0), again = a.batch(E);
  differs_by_epoch = first.inputs.sizes() != again.inputs.sizes() || !torch::equal(first.inputs, again.inputs);
  CHECK(differs_by_seed);
  CHECK(differs_by_epoch);
  // Going back to an earlier step gives the same batch (the order cache is per epoch).
  CHECK(torch::equal(a.batch(1).inputs, b.batch(1).inputs));
}

TEST_CASE("rank slices partition each global batch", "[data]") {
  Rows rows = make_rows(make_docs(100), Layout::Doc, 64, kEos);
  for (int world : {2, 3, 5}) {
    Batcher global(rows, 32, 9, kPad);
    std::vector<Batcher> ranks;
    for (int r = 0; r < world; ++r) ranks.emplace_back(rows, 32, 9, kPad, r, world);
    for (int64_t step : {0, 1, 4, 7}) {
      Batch g = global.batch(step);
      std::vector<torch::Tensor> parts;
      int64_t tokens = 0;
      for (int r = 0; r < world; ++r) {
        Batch part = ranks[r].batch(step);
        CHECK(part.inputs.size(0) == (r + 1) * 32 / world - r * 32 / world);
        parts.push_back(part.inputs);
        tokens += part.tokens;
        // Every rank knows the global batch's target count (its loss normaliser).
        CHECK(part.global_tokens == g.tokens);
      }
      CHECK(torch::equal(torch::cat(parts), g.inputs));
      CHECK(tokens == g.tokens);
      CHECK(g.global_tokens == g.tokens);
      CHECK(g.tokens == (g.targets != kIgnore).sum().item<int64_t>());
    }
  }
  CHECK_THROWS_AS(Batcher(rows, 32, 9, kPad, 3, 3), InputError);
}

TEST_CASE("eval batches keep the order — fewer rows than a batch make one batch", "[data]") {
  auto docs = make_docs(10);
  Rows rows = make_rows(docs, Layout::Doc, 64, kEos);
  auto batches = eval_batches(rows, 4, kPad);
  REQUIRE(batches.size() == 3);
  CHECK(batches[2].inputs.size(0) == 2);
  CHECK(to_vector(batches[0].inputs[0].slice(0, 0, 2)) == std::vector<int64_t>{kBos, 10});
  Batcher small(rows, 32, 1, kPad);
  CHECK(small.batches_per_epoch() == 1);
  CHECK(small.batch(0).inputs.size(0) == 10);
  CHECK(small.batch(3).inputs.size(0) == 10);
}

TEST_CASE("length-sorted eval batches: every row once, shortest first, equal lengths in order", "[data]") {
  auto docs = make_docs(23);
  Rows rows = make_rows(docs, Layout::Doc, 64, kEos);
  auto batches = length_sorted_batches(rows, 5);
  REQUIRE(batches.size() == 5);
  CHECK(batches.back().size() == 3);
  std::vector<size_t> seen;
  for (const auto& b : batches) seen.insert(seen.end(), b.begin(), b.end());
  REQUIRE(seen.size() == rows.rows.size());
  CHECK(std::set<size_t>(seen.begin(), seen.end()).size() == rows.rows.size());
  for (size_t k = 1; k < seen.size(); ++k) {
    const size_t a = rows.rows[seen[k - 1]].size(), b = rows.rows[seen[k]].size();
    CHECK(a <= b);
    if (a == b) CHECK(seen[k - 1] < seen[k]);
  }
  // A batch is padded to its own longest row: no wider than the longest row it holds.
  for (const auto& b : batches) {
    size_t longest = 0;
    for (size_t k : b) longest = std::max(longest, rows.rows[k].size());
    CHECK(rows_batch(rows, b, kPad).inputs.size(1) == static_cast<int64_t>(longest) - 1);
  }
  CHECK_THROWS_AS(length_sorted_batches(rows, 0), InputError);
}
