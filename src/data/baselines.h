// Reference points for a split: the true distribution's NLL (garden only) and a unigram
// model's NLL from training frequencies. Every NLL is a mean in nats over predicted tokens:
// positions 1..n-1 of each document, <eos> included, <bos> never predicted.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "data/corpus.h"

namespace lmx::data {

struct SplitStats {
  int64_t docs = 0;
  int64_t tokens = 0;          // predicted tokens (sum of n-1 over documents)
  double mean_doc_len = 0;     // tokens per document, <bos> and <eos> included
  double true_nll = NAN;       // mean -log p(token | prefix) under the truth; NaN without truth
  double unigram_nll = NAN;    // mean -log q(token) under unigram_logprobs
  double true_ppl() const { return std::exp(true_nll); }
  double unigram_ppl() const { return std::exp(unigram_nll); }
};

// The unigram model: q(t) = (count(t) + 1) / (N + V') over the predicted tokens of the
// training split (N of them), add-one smoothed over the V' tokens that can be predicted
// (every id but <bos> and <pad>, which get -inf). Returns log q indexed by token id.
std::vector<double> unigram_logprobs(const Corpus& corpus);

// Sum of -log p over the predicted tokens of docs under the truth (throws InputError for a
// document outside the language); *tokens receives the count.
double true_nll_sum(const Truth& truth, const std::vector<Doc>& docs, int64_t* tokens = nullptr);

// The truth's log p of every target of the rows make_rows(docs, layout, seq_len, eos) makes:
// out[r][t] scores rows[r][t + 1]. In the packed layout a document's first word (after the
// previous <eos>) is scored as after <bos>: documents are independent. A target whose document
// starts before its row (a packed row cut mid-document, or a long document's later piece) is
// NaN: what the model sees cannot determine the exact prefix. For the true NLL by position of
// the length-extrapolation experiment and of packed evaluation.
std::vector<std::vector<double>> row_true_logprobs(const Truth& truth, const std::vector<Doc>& docs, Layout layout,
                                                   int seq_len);

// All figures for one split; `unigram` from unigram_logprobs (computed if empty).
SplitStats split_stats(const Corpus& corpus, Split split, std::vector<double> unigram = {});

}  // namespace lmx::data
