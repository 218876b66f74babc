#include "train/evaluate.h"

#include "kernels/precision.h"

#include "torch_api.h"

#include <algorithm>
#include <cmath>

#include "data/baselines.h"
#include "data/metrics.h"

namespace lmx {

EvalOptions eval_options(const Config& cfg, data::Split split) {
  EvalOptions opt;
  opt.split = split;
  opt.layout = cfg.data.layout;
  opt.seq_len = opt.layout == data::Layout::Packed ? cfg.data.seq_len : 0;
  opt.batch_size = std::max(cfg.train.batch_size, 32);
  opt.max_docs = split == data::Split::Val ? cfg.train.eval_docs : 0;
  opt.precision = cfg.train.precision;
  return opt;
}

int trained_positions(const Config& cfg, const data::Corpus& corpus) {
  if (cfg.data.layout == data::Layout::Packed) return 0;
  int longest = 0;
  for (const auto& row : data::train_rows(corpus.train, cfg, corpus.vocab.eos).rows)
    longest = std::max(longest, static_cast<int>(row.size()) - 1);
  return longest;
}

int64_t targets_beyond(const std::vector<data::Doc>& docs, int trained_len) {
  int64_t n = 0;
  if (trained_len > 0)
    for (const auto& d : docs) n += std::max<int64_t>(0, static_cast<int64_t>(d.size()) - 1 - trained_len);
  return n;
}

// The rows of one evaluation: the split's documents in the layout, their true log-probs, and
// the batches (rows of similar length together: far less padding in the doc layout).
struct Evaluation::Rows {
  std::vector<data::Doc> docs;
  data::Rows rows;
  std::vector<std::vector<double>> truth;  // truth[r][t]: true log p of rows[r][t + 1] (empty without a truth)
  std::vector<std::vector<size_t>> batches;
  // The corpus's metric (null: none), prepared for the documents when each is one row of the
  // doc layout (metric_rows: row r is document r); otherwise for none (its values NaN).
  std::unique_ptr<data::PreparedMetric> metric;
  bool metric_rows = false;
};

namespace {

using EvalRows = Evaluation::Rows;

// On the heap, where it stays: the metric's preparation may keep references to e.docs.
std::unique_ptr<EvalRows> eval_rows(const ModernLM& model, const data::Corpus& corpus, const EvalOptions& opt) {
  auto owned = std::make_unique<EvalRows>();
  EvalRows& e = *owned;
  e.docs = corpus.split(opt.split);
  if (opt.max_docs > 0 && static_cast<int>(e.docs.size()) > opt.max_docs) e.docs.resize(opt.max_docs);
  const bool packed = opt.layout == data::Layout::Packed;
  int seq_len = opt.seq_len;
  if (!packed && seq_len <= 0) {
    for (const auto& d : e.docs) seq_len = std::max<int>(seq_len, static_cast<int>(d.size()) - 1);
    seq_len = std::min(seq_len, model->config().max_seq_len);
  }
  e.rows = data::make_rows(e.docs, opt.layout, seq_len, corpus.vocab.eos);
  const data::Truth* truth = corpus.truth.get();
  if (truth) e.truth = data::row_true_logprobs(*truth, e.docs, opt.layout, seq_len);
  e.batches = data::length_sorted_batches(e.rows, opt.batch_size);
  e.metric_rows = !packed && e.rows.rows.size() == e.docs.size();
  static const std::vector<data::Doc> none;
  if (corpus.metric) e.metric = corpus.metric->prepare(e.metric_rows ? e.docs : none);
  return owned;
}

// The running sums of an evaluation, over the batches in order.
struct EvalSums {
  double nll = 0, true_nll = 0, covered = 0, untrained = 0;
  int64_t true_tokens = 0;
  std::unique_ptr<data::MetricTally> metric;  // null: no metric scores this evaluation
};

// One batch's targets into the sums and r's token counts and ranges (positions at or beyond
// trained_len apart).
void add_eval_batch(EvalResult& r, EvalSums& sums, const torch::Tensor& logits, const data::Batch& b,
                    const std::vector<size_t>& indices, const EvalRows& e, const data::Truth* truth,
                    int64_t trained_len) {
  auto logp = torch::log_softmax(logits, -1);
  auto targets = b.targets.clamp_min(0);
  auto tok_logp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).to(torch::kDouble).contiguous();  // (B, T)
  auto valid = b.targets.ne(data::kIgnore).contiguous();
  auto lp_a = tok_logp.accessor<double, 2>();
  auto ok_a = valid.accessor<bool, 2>();
  const int64_t B = tok_logp.size(0), T = tok_logp.size(1);
  const std::vector<double> no_truth;
  for (int64_t i = 0; i < B; ++i) {
    const size_t row = indices[i];
    const auto& tl = truth ? e.truth[row] : no_truth;
    for (int64_t t = 0; t < T; ++t) {
      if (!ok_a[i][t]) continue;
      const double nll = -lp_a[i][t];
      if (t >= trained_len) {  // a position no training row reached: reported apart
        sums.untrained += nll, ++r.untrained_tokens;
        continue;
      }
      sums.nll += nll;
      ++r.tokens;
      const double tv = t < static_cast<int64_t>(tl.size()) ? tl[t] : std::nan("");
      if (!std::isnan(tv)) sums.true_nll -= tv, sums.covered += nll, ++sums.true_tokens;
      if (truth && std::isnan(tv)) continue;  // by position: the covered targets only
      for (auto& range : r.ranges) {
        if (t >= range.lo && (range.hi < 0 || t < range.hi)) {
          range.nll += nll;
          range.true_nll -= tv;  // NaN without a truth
          ++range.tokens;
        }
      }
    }
    if (sums.metric && e.metric_rows) sums.metric->add(row, logits[i]);  // row `row` is document `row`
  }
}

// The sums as means and perplexities.
void finish_eval(EvalResult& r, const EvalSums& sums) {
  r.loss = r.tokens ? sums.nll / r.tokens : std::nan("");
  r.ppl = std::exp(r.loss);
  r.true_tokens = sums.true_tokens;
  if (r.untrained_tokens > 0) r.untrained_loss = sums.untrained / r.untrained_tokens;
  if (sums.true_tokens > 0) {
    r.true_nll = sums.true_nll / sums.true_tokens;
    r.true_ppl = std::exp(r.true_nll);
    r.covered_loss = sums.covered / sums.true_tokens;
  }
  if (sums.metric) r.metrics = sums.metric->finish();
  for (auto& range : r.ranges) {
    if (range.tokens == 0) continue;
    range.nll /= range.tokens;
    range.true_nll /= range.tokens;
  }
}

}  // namespace

Evaluation::Evaluation(const ModernLM& model, const data::Corpus& corpus, EvalOptions opt)
    : corpus_(&corpus), opt_(std::move(opt)), rows_(eval_rows(model, corpus, opt_)) {}
Evaluation::~Evaluation() = default;
Evaluation::Evaluation(Evaluation&&) noexcept = default;
Evaluation& Evaluation::operator=(Evaluation&&) noexcept = default;

EvalResult Evaluation::run(ModernLM& model) const {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const EvalRows& e = *rows_;
  const EvalOptions& opt = opt_;
  EvalResult r;
  std::vector<int> starts = opt.by_position;
  std::sort(starts.begin(), starts.end());
  for (size_t i = 0; i < starts.size(); ++i)
    r.ranges.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : -1, /*tokens=*/0, /*nll=*/0, /*true_nll=*/0});
  const bool packed = opt.layout == data::Layout::Packed;
  const int64_t trained_len = packed || opt.trained_len <= 0 ? std::numeric_limits<int64_t>::max() : opt.trained_len;
  EvalSums sums;
  if (e.metric) sums.metric = e.metric->start();
  const torch::Device device = model->parameters().front().device();  // cpu or cuda
  for (const auto& indices : e.batches) {
    const data::Batch b = data::rows_batch(e.rows, indices, corpus_->vocab.pad);
    torch::Tensor logits;
    {
      AutocastGuard autocast(opt.precision, device.type());
      logits = model->forward(b.inputs.to(device));  // (B, T, V)
    }
    logits = logits.to(torch::kCPU, torch::kFloat32);  // no copy for fp32 on the CPU
    add_eval_batch(r, sums, logits, b, indices, e, corpus_->truth.get(), trained_len);
  }
  finish_eval(r, sums);
  if (was_training) model->train();
  return r;
}

EvalResult evaluate(ModernLM& model, const data::Corpus& corpus, const EvalOptions& opt) {
  return Evaluation(model, corpus, opt).run(model);
}

}  // namespace lmx
