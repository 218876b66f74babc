#include "data/pronoun.h"

#include "torch_api.h"

#include <fmt/format.h>

#include <algorithm>

namespace lmx::data {

void PronounAccuracy::add(int distance, bool correct, int window) {
  if (distance > window) {
    ++far_sites;
    far_correct += correct;
  } else {
    ++near_sites;
    near_correct += correct;
  }
}

void PronounAccuracy::add(const PronounSite& site, bool correct, int window) {
  add(site.distance, correct, window);
  if (site.distance <= window) return;
  const int d = distance_bucket(site.distance), i = intervening_bucket(site.intervening);
  ++by_distance_sites[d], by_distance_correct[d] += correct;
  ++by_intervening_sites[i], by_intervening_correct[i] += correct;
}

PronounAccuracy& PronounAccuracy::operator+=(const PronounAccuracy& o) {
  far_sites += o.far_sites, far_correct += o.far_correct;
  near_sites += o.near_sites, near_correct += o.near_correct;
  for (int b = 0; b < kBuckets; ++b) {
    by_distance_sites[b] += o.by_distance_sites[b], by_distance_correct[b] += o.by_distance_correct[b];
    by_intervening_sites[b] += o.by_intervening_sites[b], by_intervening_correct[b] += o.by_intervening_correct[b];
  }
  return *this;
}

bool ranks_first(const std::vector<double>& scores, size_t correct) {
  for (size_t k = 0; k < scores.size(); ++k)
    if (k != correct && !(scores[correct] > scores[k])) return false;
  return true;
}

namespace {

size_t index_of(const std::vector<int32_t>& candidates, int32_t token) {
  return static_cast<size_t>(std::find(candidates.begin(), candidates.end(), token) - candidates.begin());
}

}  // namespace

PronounAccuracy pronoun_accuracy(const Garden& truth, const std::vector<Doc>& docs, int window,
                                 const CandidateScorer& score) {
  const auto candidates = truth.pronouns();
  PronounAccuracy acc;
  for (size_t d = 0; d < docs.size(); ++d)
    for (const auto& site : truth.pronoun_sites(docs[d]))
      acc.add(site, ranks_first(score(d, site.pos, candidates), index_of(candidates, site.correct)), window);
  return acc;
}

void add_pronoun_sites(PronounAccuracy& acc, const Garden& truth, const Doc& doc, int window,
                       const std::vector<std::vector<double>>& rows) {
  const auto candidates = truth.pronouns();
  for (const auto& site : truth.pronoun_sites(doc)) {
    size_t t = static_cast<size_t>(site.pos - 1);
    if (t >= rows.size()) continue;
    std::vector<double> scores;
    for (int32_t c : candidates) scores.push_back(rows[t][c]);
    acc.add(site, ranks_first(scores, index_of(candidates, site.correct)), window);
  }
}

void add_pronoun_sites(PronounAccuracy& acc, const Garden& truth, const Doc& doc, int window,
                       const torch::Tensor& logits) {
  add_pronoun_sites(acc, truth.pronoun_sites(doc), truth.pronouns(), window, logits);
}

void add_pronoun_sites(PronounAccuracy& acc, const std::vector<PronounSite>& sites,
                       const std::vector<int32_t>& candidates, int window, const torch::Tensor& logits) {
  TORCH_CHECK(logits.dim() == 2, "add_pronoun_sites: logits must be (T, V)");
  if (sites.empty()) return;
  std::vector<int64_t> ids(candidates.begin(), candidates.end());
  auto picked = logits.detach().to(torch::kCPU)
                    .index_select(1, torch::tensor(ids, torch::kLong)).to(torch::kDouble).contiguous();  // (T, P)
  const int64_t T = picked.size(0), P = picked.size(1);
  const double* data = picked.data_ptr<double>();
  for (const auto& site : sites) {
    int64_t t = site.pos - 1;
    if (t >= T) continue;
    std::vector<double> scores(data + t * P, data + (t + 1) * P);
    acc.add(site, ranks_first(scores, index_of(candidates, site.correct)), window);
  }
}

CandidateScorer noun_heuristic(const std::vector<Doc>& docs, std::map<int32_t, int32_t> noun_pronoun,
                               std::vector<int32_t> boundaries, bool first) {
  return subject_heuristic(docs, {}, std::move(noun_pronoun), std::move(boundaries), first);
}

CandidateScorer subject_heuristic(const std::vector<Doc>& docs, std::vector<std::vector<int>> subjects,
                                  std::map<int32_t, int32_t> noun_pronoun, std::vector<int32_t> boundaries, bool first) {
  return [&docs, subjects = std::move(subjects), noun_pronoun = std::move(noun_pronoun),
          boundaries = std::move(boundaries), first](size_t d, int pos, const std::vector<int32_t>& candidates) {
    const Doc& doc = docs[d];
    auto eligible = [&](int i) {  // without subject positions, every gendered noun
      return subjects.empty() || std::find(subjects[d].begin(), subjects[d].end(), i) != subjects[d].end();
    };
    int32_t guess = -1;
    for (int i = pos - 1; i > 0; --i) {  // back to the start of the sentence
      if (std::find(boundaries.begin(), boundaries.end(), doc[i]) != boundaries.end()) break;
      auto it = noun_pronoun.find(doc[i]);
      if (it == noun_pronoun.end() || !eligible(i)) continue;
      guess = it->second;
      if (!first) break;  // the nearest: the first one found going back
    }
    std::vector<double> scores;
    for (int32_t c : candidates) scores.push_back(c == guess ? 1.0 : 0.0);
    return scores;
  };
}

std::vector<MetricColumn> pronoun_columns() {
  auto col = [](const char* name, int decimals, unsigned tables, const char* title = "", const char* short_name = "") {
    MetricColumn c;
    c.name = name, c.decimals = decimals, c.tables = tables, c.title = title, c.short_name = short_name;
    return c;
  };
  const unsigned summary = kSummaryTable, eval = kEvalTable;
  return {
      col("far_pronoun_acc", 4, summary | eval | kShortTable | kHeadline, "far pron.", "far_acc"),
      col("far_sites", 0, eval),
      col("near_pronoun_acc", 4, summary | eval | kShortTable, "near pron."),
      col("near_sites", 0, eval),
      // The far sites by distance (6-10, 11-20, 21+ at W = 5) and by intervening other-gender nouns.
      col("far_acc_d_le10", 4, summary), col("far_acc_d11_20", 4, summary), col("far_acc_d21up", 4, summary),
      col("far_acc_i0", 4, summary), col("far_acc_i1", 4, summary), col("far_acc_i2up", 4, summary),
  };
}

namespace {

class PronounTally : public MetricTally {
 public:
  PronounTally(const std::vector<std::vector<PronounSite>>& sites, const std::vector<int32_t>& candidates, int window)
      : sites_(sites), candidates_(candidates), window_(window) {}

  void add(size_t d, const torch::Tensor& logits) override {
    add_pronoun_sites(acc_, sites_.at(d), candidates_, window_, logits);
  }

  Metrics finish() const override {
    const PronounAccuracy& a = acc_;
    const double values[] = {a.far(), double(a.far_sites), a.near(), double(a.near_sites),
                             a.far_by_distance(0), a.far_by_distance(1), a.far_by_distance(2),
                             a.far_by_intervening(0), a.far_by_intervening(1), a.far_by_intervening(2)};
    Metrics m;
    const auto cols = pronoun_columns();
    for (size_t i = 0; i < cols.size(); ++i) m.values.push_back({cols[i], values[i]});
    if (a.far() < kAgreementLearned)  // false for NaN: nothing scored is no plateau
      m.warning = fmt::format("far-pronoun accuracy {:.3f} < {}: this run never learned pronoun agreement (a "
                              "plateau); its perplexity is not comparable with runs that did", a.far(), kAgreementLearned);
    return m;
  }

 private:
  const std::vector<std::vector<PronounSite>>& sites_;
  const std::vector<int32_t>& candidates_;
  int window_;
  PronounAccuracy acc_;
};

class PreparedPronouns : public PreparedMetric {
 public:
  PreparedPronouns(const Garden& truth, const std::vector<Doc>& docs, int window)
      : candidates_(truth.pronouns()), window_(window) {
    for (const auto& doc : docs) sites_.push_back(truth.pronoun_sites(doc));
  }
  std::unique_ptr<MetricTally> start() const override {
    return std::make_unique<PronounTally>(sites_, candidates_, window_);
  }

 private:
  std::vector<std::vector<PronounSite>> sites_;  // each document's
  std::vector<int32_t> candidates_;
  int window_;
};

class PronounMetric : public CorpusMetric {
 public:
  PronounMetric(std::shared_ptr<const Garden> truth, int window) : truth_(std::move(truth)), window_(window) {}
  std::vector<MetricColumn> columns() const override { return pronoun_columns(); }
  std::unique_ptr<PreparedMetric> prepare(const std::vector<Doc>& docs) const override {
    return std::make_unique<PreparedPronouns>(*truth_, docs, window_);
  }

 private:
  std::shared_ptr<const Garden> truth_;
  int window_;
};

}  // namespace

std::shared_ptr<const CorpusMetric> pronoun_metric(std::shared_ptr<const Garden> truth, int window) {
  return std::make_shared<PronounMetric>(std::move(truth), window);
}

}  // namespace lmx::data
