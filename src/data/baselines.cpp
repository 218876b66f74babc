#include "data/baselines.h"

#include <algorithm>

namespace lmx::data {

std::vector<double> unigram_logprobs(const Corpus& corpus) {
  const int V = corpus.vocab.size();
  std::vector<int64_t> count(V, 0);
  int64_t n = 0;
  for (const Doc& doc : corpus.train)
    for (size_t i = 1; i < doc.size(); ++i) ++count[doc[i]], ++n;
  const int predictable = V - 2;  // all but <bos> and <pad>
  std::vector<double> out(V);
  for (int t = 0; t < V; ++t)
    out[t] = (t == corpus.vocab.bos || t == corpus.vocab.pad)
                 ? -INFINITY
                 : std::log(static_cast<double>(count[t] + 1) / static_cast<double>(n + predictable));
  return out;
}

double true_nll_sum(const Truth& truth, const std::vector<Doc>& docs, int64_t* tokens) {
  double sum = 0;
  int64_t count = 0;
  for (const Doc& doc : docs) {
    auto lp = truth.logprobs(doc);
    for (size_t i = 1; i < lp.size(); ++i) sum -= lp[i], ++count;
  }
  if (tokens) *tokens = count;
  return sum;
}

namespace {

// The same cut as make_rows: pieces of seq_len targets; piece j scores tokens [j*T + 1, ...].
// origin[i]: where token i's document starts (its <bos>, or the <eos> before it when packed).
// A token whose document starts before the piece is NaN: the model sees only the tail of
// that document, so the exact p(token | whole prefix) is not what it can be compared with.
void cut_scores(const std::vector<double>& lp, const std::vector<size_t>& origin, int seq_len,
                std::vector<std::vector<double>>& out) {
  const size_t n = lp.size();
  for (size_t start = 0; start + 1 < n; start += seq_len) {
    std::vector<double> row(lp.begin() + start + 1, lp.begin() + std::min(n, start + seq_len + 1));
    for (size_t j = 0; j < row.size(); ++j)
      if (origin[start + 1 + j] < start) row[j] = std::nan("");
    out.push_back(std::move(row));
  }
}

}  // namespace

std::vector<std::vector<double>> row_true_logprobs(const Truth& truth, const std::vector<Doc>& docs, Layout layout,
                                                   int seq_len) {
  std::vector<std::vector<double>> out;
  if (layout == Layout::Doc) {
    for (const Doc& doc : docs) {
      auto lp = truth.logprobs(doc);
      cut_scores(lp, std::vector<size_t>(lp.size(), 0), seq_len, out);
    }
    return out;
  }
  std::vector<double> stream;  // aligned with make_rows' packed stream (valid documents end in <eos>)
  std::vector<size_t> origin;  // a document after the first starts at the <eos> before it
  for (const Doc& doc : docs) {
    if (doc.empty()) continue;
    auto lp = truth.logprobs(doc);
    const size_t begin = stream.empty() ? 0 : stream.size() - 1;
    stream.insert(stream.end(), stream.empty() ? lp.begin() : lp.begin() + 1, lp.end());
    origin.resize(stream.size(), begin);
  }
  cut_scores(stream, origin, seq_len, out);
  return out;
}

SplitStats split_stats(const Corpus& corpus, Split split, std::vector<double> unigram) {
  if (unigram.empty()) unigram = unigram_logprobs(corpus);
  const auto& docs = corpus.split(split);
  SplitStats s;
  s.docs = static_cast<int64_t>(docs.size());
  double uni = 0;
  int64_t length = 0;
  for (const Doc& doc : docs) {
    length += static_cast<int64_t>(doc.size());
    for (size_t i = 1; i < doc.size(); ++i) uni -= unigram[doc[i]], ++s.tokens;
  }
  if (s.docs > 0) s.mean_doc_len = static_cast<double>(length) / static_cast<double>(s.docs);
  if (s.tokens > 0) {
    s.unigram_nll = uni / static_cast<double>(s.tokens);
    if (corpus.truth) s.true_nll = true_nll_sum(*corpus.truth, docs) / static_cast<double>(s.tokens);
  }
  return s;
}

}  // namespace lmx::data
