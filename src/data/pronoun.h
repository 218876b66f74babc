// The possessive-pronoun metric: at every position where the next token is a possessive
// pronoun (a Garden's pronoun site), does the model score the correct pronoun strictly above
// every other pronoun? Split by the distance to the sentence's subject: far (> W tokens
// back, W = data.pronoun_window) and near (<= W). Ties are not wins, so a uniform model
// scores 0 and a model guessing at random scores about 1 / (number of pronouns).
#pragma once
#include <torch/types.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "data/corpus.h"
#include "data/garden.h"
#include "data/metrics.h"

namespace lmx::data {

struct PronounAccuracy {
  int64_t far_sites = 0, far_correct = 0;
  int64_t near_sites = 0, near_correct = 0;
  // Far sites by distance, buckets (W, 10], [11, 20], [21, inf), and by the number of
  // intervening nouns of another gender (PronounSite::intervening), buckets 0, 1, 2+.
  static constexpr int kBuckets = 3;
  std::array<int64_t, kBuckets> by_distance_sites{}, by_distance_correct{};
  std::array<int64_t, kBuckets> by_intervening_sites{}, by_intervening_correct{};
  static int distance_bucket(int distance) { return distance <= 10 ? 0 : distance <= 20 ? 1 : 2; }
  static int intervening_bucket(int n) { return std::min(n, kBuckets - 1); }
  double far() const { return far_sites ? static_cast<double>(far_correct) / far_sites : NAN; }
  double near() const { return near_sites ? static_cast<double>(near_correct) / near_sites : NAN; }
  double far_by_distance(int b) const { return ratio(by_distance_correct[b], by_distance_sites[b]); }
  double far_by_intervening(int b) const { return ratio(by_intervening_correct[b], by_intervening_sites[b]); }
  void add(int distance, bool correct, int window);
  void add(const PronounSite& site, bool correct, int window);  // also fills the far buckets
  PronounAccuracy& operator+=(const PronounAccuracy& o);

 private:
  static double ratio(int64_t k, int64_t n) { return n ? static_cast<double>(k) / n : NAN; }
};

// True when scores[correct] is strictly above every other score.
bool ranks_first(const std::vector<double>& scores, size_t correct);

// score(doc_index, pos, candidates): the model's score (log-prob or logit) of each
// candidate as doc[pos], given doc[0..pos). Candidates are truth.pronouns().
using CandidateScorer =
    std::function<std::vector<double>(size_t doc_index, int pos, const std::vector<int32_t>& candidates)>;
PronounAccuracy pronoun_accuracy(const Garden& truth, const std::vector<Doc>& docs, int window,
                                 const CandidateScorer& score);

// One document from the model's outputs on inputs doc[0..T): rows[t][v] (or logits[t][v],
// a (T, V) tensor) scores token v as doc[t + 1]. Sites past the last row are skipped.
void add_pronoun_sites(PronounAccuracy& acc, const Garden& truth, const Doc& doc, int window,
                       const std::vector<std::vector<double>>& rows);
void add_pronoun_sites(PronounAccuracy& acc, const Garden& truth, const Doc& doc, int window,
                       const torch::Tensor& logits);
// The same with the document's sites (truth.pronoun_sites(doc)) and the candidates
// (truth.pronouns()) found before: an evaluation repeated during training finds them once.
void add_pronoun_sites(PronounAccuracy& acc, const std::vector<PronounSite>& sites,
                       const std::vector<int32_t>& candidates, int window, const torch::Tensor& logits);

// Baselines without a model: the pronoun of the FIRST (first = true) or of the NEAREST gendered
// noun of the sentence so far (a sentence starts after <bos> or a `boundaries` token such as
// "."); noun_pronoun maps a noun to its pronoun (Garden::noun_pronouns). With pronoun_accuracy
// this measures how much of the task such a shortcut solves. docs must outlive the scorer.
CandidateScorer noun_heuristic(const std::vector<Doc>& docs, std::map<int32_t, int32_t> noun_pronoun,
                               std::vector<int32_t> boundaries, bool first);
// The same over the clause subjects only: subjects[d] holds the positions of docs[d]'s subjects
// (Garden::subject_positions). The nearest subject is the garden's rule; the first is the
// "main clause" reading that a one-clause world rewards.
CandidateScorer subject_heuristic(const std::vector<Doc>& docs, std::vector<std::vector<int>> subjects,
                                  std::map<int32_t, int32_t> noun_pronoun, std::vector<int32_t> boundaries, bool first);

// The garden world's metric (data/metrics.h) over whole documents, window W: far and near
// accuracy, their site counts, and the far sites' accuracy by distance and by intervening
// nouns. Its warning: far accuracy below kAgreementLearned, a run that never learned agreement.
std::shared_ptr<const CorpusMetric> pronoun_metric(std::shared_ptr<const Garden> truth, int window);
std::vector<MetricColumn> pronoun_columns();
// Far-pronoun accuracy below which a run is reported as never having learned agreement.
constexpr double kAgreementLearned = 0.9;

}  // namespace lmx::data
