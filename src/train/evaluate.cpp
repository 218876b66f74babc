#include "train/evaluate.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace lmx {

namespace {

// Per predicted token of every row: the true log-probability (NaN without a truth), the
// document and its position (for pronoun sites). Rows follow data::make_rows.
struct RowTruth {
  std::vector<std::vector<double>> logp;  // [row][t] for target t
};

// Truth for the doc layout: row i is document i, target t is doc[t + 1].
RowTruth doc_truth(const std::vector<data::Doc>& docs, const data::Rows& rows, const data::Truth* truth) {
  RowTruth out;
  out.logp.resize(rows.rows.size());
  for (size_t i = 0; i < rows.rows.size(); ++i) {
    const size_t n = rows.rows[i].size() - 1;
    out.logp[i].assign(n, std::numeric_limits<double>::quiet_NaN());
    if (!truth) continue;
    auto lp = truth->logprobs(docs[i]);
    for (size_t t = 0; t < n && t + 1 < lp.size(); ++t) out.logp[i][t] = lp[t + 1];
  }
  return out;
}

// Truth for the packed layout: the stream <bos> d1[1:] d2[1:] ... carries each document's
// own log-probabilities; rows are windows of seq_len + 1 tokens with stride seq_len.
RowTruth packed_truth(const std::vector<data::Doc>& docs, const data::Rows& rows, const data::Truth* truth) {
  std::vector<double> stream(1, 0.0);
  for (const auto& d : docs) {
    std::vector<double> lp = truth ? truth->logprobs(d)
                                   : std::vector<double>(d.size(), std::numeric_limits<double>::quiet_NaN());
    stream.insert(stream.end(), lp.begin() + 1, lp.end());
  }
  RowTruth out;
  out.logp.resize(rows.rows.size());
  const size_t stride = rows.seq_len;
  for (size_t i = 0; i < rows.rows.size(); ++i) {
    const size_t n = rows.rows[i].size() - 1;
    out.logp[i].resize(n);
    for (size_t t = 0; t < n; ++t) out.logp[i][t] = stream.at(i * stride + t + 1);
  }
  return out;
}

}  // namespace

EvalResult evaluate(ModernLM& model, const data::Corpus& corpus, const EvalOptions& opt) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();

  std::vector<data::Doc> docs = corpus.split(opt.split);
  if (opt.max_docs > 0 && static_cast<int>(docs.size()) > opt.max_docs) docs.resize(opt.max_docs);
  const bool packed = opt.layout == data::Layout::Packed;
  int seq_len = opt.seq_len;
  if (!packed && seq_len <= 0) {
    for (const auto& d : docs) seq_len = std::max<int>(seq_len, static_cast<int>(d.size()) - 1);
    seq_len = std::min(seq_len, model->config().max_seq_len);
  }
  const data::Rows rows = data::make_rows(docs, opt.layout, seq_len, corpus.vocab.eos);
  const data::Truth* truth = corpus.truth.get();
  const RowTruth row_truth = packed ? packed_truth(docs, rows, truth) : doc_truth(docs, rows, truth);
  const auto batches = data::eval_batches(rows, opt.batch_size, corpus.vocab.pad);

  std::vector<int32_t> pronouns = truth ? truth->pronouns() : std::vector<int32_t>{};
  auto pronoun_index = torch::tensor(std::vector<int64_t>(pronouns.begin(), pronouns.end()), torch::kInt64);

  EvalResult r;
  std::vector<int> starts = opt.by_position;
  std::sort(starts.begin(), starts.end());
  for (size_t i = 0; i < starts.size(); ++i)
    r.ranges.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : -1, 0, 0, 0});
  double nll_sum = 0, true_sum = 0;
  int64_t true_tokens = 0, far_win = 0, near_win = 0;
  size_t row0 = 0;
  for (const auto& b : batches) {
    auto logp = torch::log_softmax(model->forward(b.inputs), -1);  // (B, T, V)
    auto targets = b.targets.clamp_min(0);
    auto tok_logp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).to(torch::kDouble).contiguous();  // (B, T)
    auto valid = b.targets.ne(data::kIgnore).contiguous();
    auto lp_a = tok_logp.accessor<double, 2>();
    auto ok_a = valid.accessor<bool, 2>();
    const int64_t B = tok_logp.size(0), T = tok_logp.size(1);
    for (int64_t i = 0; i < B; ++i) {
      const auto& tl = row_truth.logp[row0 + i];
      for (int64_t t = 0; t < T; ++t) {
        if (!ok_a[i][t]) continue;
        const double nll = -lp_a[i][t];
        nll_sum += nll;
        ++r.tokens;
        const double tv = t < static_cast<int64_t>(tl.size()) ? tl[t] : std::nan("");
        if (!std::isnan(tv)) true_sum -= tv, ++true_tokens;
        for (auto& range : r.ranges) {
          if (t >= range.lo && (range.hi < 0 || t < range.hi)) {
            range.nll += nll;
            range.true_nll = (range.tokens == 0 ? 0.0 : range.true_nll) - tv;
            ++range.tokens;
          }
        }
      }
      // Pronoun agreement (doc layout: row i is document row0 + i; target t is doc[t + 1]).
      if (!packed && truth) {
        for (const auto& site : truth->pronoun_sites(docs[row0 + i])) {
          const int t = site.pos - 1;
          if (t < 0 || t >= T) continue;
          auto scores = logp[i][t].index_select(0, pronoun_index);
          const auto correct_pos =
              std::find(pronouns.begin(), pronouns.end(), site.correct) - pronouns.begin();
          const double correct = scores[correct_pos].item<double>();
          scores[correct_pos] = -std::numeric_limits<float>::infinity();
          const bool win = correct > scores.max().item<double>();
          if (site.distance > opt.pronoun_window)
            ++r.far_sites, far_win += win;
          else
            ++r.near_sites, near_win += win;
        }
      }
    }
    row0 += B;
  }
  r.loss = r.tokens ? nll_sum / r.tokens : std::nan("");
  r.ppl = std::exp(r.loss);
  if (true_tokens == r.tokens && r.tokens > 0) {
    r.true_nll = true_sum / true_tokens;
    r.true_ppl = std::exp(r.true_nll);
  }
  if (r.far_sites) r.far_acc = static_cast<double>(far_win) / r.far_sites;
  if (r.near_sites) r.near_acc = static_cast<double>(near_win) / r.near_sites;
  for (auto& range : r.ranges) {
    if (range.tokens == 0) continue;
    range.nll /= range.tokens;
    range.true_nll /= range.tokens;  // NaN stays NaN without a truth
  }
  if (was_training) model->train();
  return r;
}

}  // namespace lmx
