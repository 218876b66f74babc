// Evaluation of a model on one split: loss and perplexity, the true distribution's NLL on
// the same tokens, the corpus's own metric (data/metrics.h; the garden's pronoun agreement),
// and mean NLL per position range (length extrapolation).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "config/config.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/metrics.h"
#include "model/lm.h"

namespace lmx {

struct EvalOptions {
  data::Split split = data::Split::Val;
  data::Layout layout = data::Layout::Doc;
  int seq_len = 0;                 // packed: row length (required); doc: 0 = whole documents
  int batch_size = 32;
  int max_docs = 0;                // 0 = every document of the split
  std::vector<int> by_position;    // range starts, e.g. {0, 64, 128, 256}; empty = none
  Precision precision = Precision::Fp32;  // fp32 | bf16 (the forward under autocast; log-probs in fp32)
  // Doc layout: targets at row positions >= trained_len were never trained (no training row
  // reached them); they are kept out of loss / ppl and reported apart (untrained_*). 0 = all.
  int trained_len = 0;
};

struct PositionRange {
  int lo = 0, hi = 0;              // target positions [lo, hi); hi = -1: to the end
  int64_t tokens = 0;
  double nll = 0;                  // model's mean NLL in nats
  double true_nll = std::numeric_limits<double>::quiet_NaN();
  // With a truth, tokens, nll and true_nll cover only the targets whose document starts inside
  // their row (row_true_logprobs): the model and the truth see the same context.
};

struct EvalResult {
  int64_t tokens = 0;
  double loss = 0;                 // mean NLL per predicted token (nats)
  double ppl = 0;
  // The exact distribution's NLL over the targets whose document starts inside their row (all of
  // them in the doc layout when documents fit in a row), and the model's NLL over the same ones.
  double true_nll = std::numeric_limits<double>::quiet_NaN();
  double true_ppl = std::numeric_limits<double>::quiet_NaN();
  int64_t true_tokens = 0;
  double covered_loss = std::numeric_limits<double>::quiet_NaN();
  // The corpus's metric over whole documents (doc layout, every document in one row); without
  // a metric none, and NaN values where the layout cannot be scored.
  data::Metrics metrics;
  std::vector<PositionRange> ranges;
  int64_t untrained_tokens = 0;    // targets at positions training never reached (not in loss)
  double untrained_loss = std::numeric_limits<double>::quiet_NaN();  // their mean NLL
};

EvalResult evaluate(ModernLM& model, const data::Corpus& corpus, const EvalOptions& opt);

// One split's evaluation prepared once: its rows and batches, the truth's log-probs and the
// metric's preparation depend on the corpus, the options and the model's max_seq_len only, so a
// training run finds them once and evaluates the model on them at every validation. The
// corpus must outlive it.
class Evaluation {
 public:
  Evaluation(const ModernLM& model, const data::Corpus& corpus, EvalOptions opt);
  ~Evaluation();
  Evaluation(Evaluation&&) noexcept;
  Evaluation& operator=(Evaluation&&) noexcept;
  EvalResult run(ModernLM& model) const;  // what evaluate(model, corpus, opt) returns
  struct Rows;  // (evaluate.cpp)

 private:
  const data::Corpus* corpus_;
  EvalOptions opt_;
  std::unique_ptr<Rows> rows_;
};

// How a training run evaluates a split of its config: the training layout (packed rows of
// seq_len, or whole documents), batch max(batch_size, 32), and train.eval_docs documents for validation (every document for the test split).
EvalOptions eval_options(const Config& cfg, data::Split split);

// Doc layout: the number of row positions the config's training rows reach (the longest
// training row's targets), for EvalOptions::trained_len; packed: 0 (every position of a chunk
// is trained; longer test rows are the length-extrapolation experiment, reported by position).
int trained_positions(const Config& cfg, const data::Corpus& corpus);
// The targets of docs at positions >= trained_len (0: none), which evaluate keeps apart.
int64_t targets_beyond(const std::vector<data::Doc>& docs, int trained_len);

}  // namespace lmx
