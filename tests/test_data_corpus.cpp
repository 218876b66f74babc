// Corpora (garden and text), baselines and the pronoun metric.
#include "catch.h"
#include "torch_api.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "data/baselines.h"
#include "data/corpus.h"
#include "data/garden.h"
#include "data/pronoun.h"
#include "data/rng.h"
#include "data/text.h"
#include "helpers.h"
#include "util/error.h"

using namespace lmx;
using namespace lmx::data;
using lmx::test::TempDir;

namespace {

// 400 training documents of a built-in world, for the pronoun-shortcut baselines.
Corpus shortcut_corpus(const std::string& grammar) {
  DataConfig d;
  d.grammar = grammar;
  d.train_docs = 400, d.val_docs = 10, d.test_docs = 10;
  return load_corpus(d);
}

DataConfig small_data(int seed = 1234) {
  DataConfig cfg;
  cfg.seed = seed;
  cfg.train_docs = 400;
  cfg.val_docs = 300;
  cfg.test_docs = 300;
  return cfg;
}

}  // namespace

TEST_CASE("same seed, same corpus, another seed, another corpus", "[data]") {
  Corpus a = load_corpus(small_data(5)), b = load_corpus(small_data(5)), c = load_corpus(small_data(6));
  CHECK(a.train == b.train);
  CHECK(a.val == b.val);
  CHECK(a.test == b.test);
  CHECK(a.vocab.words == c.vocab.words);
  CHECK(a.train != c.train);
  CHECK(a.val != c.val);
  CHECK(a.train.size() == 400);
  CHECK(a.val.size() == 300);
  CHECK(a.test.size() == 300);
  // The splits come from different streams: the first documents differ.
  CHECK_FALSE((a.train[0] == a.val[0] && a.val[0] == a.test[0] && a.train[1] == a.val[1]));
  // A larger split begins with the same documents (each split is its own stream).
  DataConfig more = small_data(5);
  more.train_docs = 500;
  Corpus d = load_corpus(more);
  CHECK(std::equal(a.train.begin(), a.train.end(), d.train.begin()));
  CHECK(d.val == a.val);
  // Pinned: the first training document of seed 1234. The generator uses its own RNG, so
  // this holds on every platform; it changes only when data/garden.yaml or the walk does.
  Corpus e = load_corpus(small_data(1234));
  CHECK(e.vocab.decode(e.train[0]) ==
        "<bos> in the shed , the gardener that the farmer from the tree likes washes his ball and waits and then waits . <eos>");
  for (const auto& doc : e.train) {
    CHECK(doc.front() == e.vocab.bos);
    CHECK(doc.back() == e.vocab.eos);
    CHECK(e.vocab.encode(e.vocab.decode(doc)) == doc);
  }
}

TEST_CASE("baselines: true NLL is the scorer's sum, unigram is smoothed train counts", "[data]") {
  Corpus c = load_corpus(small_data());
  REQUIRE(c.truth);
  auto unigram = unigram_logprobs(c);
  double mass = 0;
  for (double lq : unigram) mass += std::exp(lq);
  CHECK(mass == Approx(1.0).margin(1e-12));
  CHECK(std::isinf(unigram[c.vocab.bos]));
  CHECK(std::isinf(unigram[c.vocab.pad]));
  for (Split s : {Split::Train, Split::Val, Split::Test}) {
    SplitStats st = split_stats(c, s, unigram);
    double true_sum = 0, uni_sum = 0;
    int64_t tokens = 0, length = 0;
    for (const Doc& doc : c.split(s)) {
      auto lp = c.truth->logprobs(doc);
      CHECK(lp[0] == 0.0);
      for (size_t i = 1; i < doc.size(); ++i) true_sum -= lp[i], uni_sum -= unigram[doc[i]], ++tokens;
      length += static_cast<int64_t>(doc.size());
    }
    CHECK(st.tokens == tokens);
    CHECK(st.docs == static_cast<int64_t>(c.split(s).size()));
    CHECK(st.mean_doc_len == Approx(static_cast<double>(length) / st.docs));
    CHECK(st.true_nll * st.tokens == Approx(true_sum).epsilon(1e-12));
    CHECK(st.unigram_nll * st.tokens == Approx(uni_sum).epsilon(1e-12));
    // The truth beats the unigram model by a wide margin.
    CHECK(st.true_ppl() < st.unigram_ppl() / 4);
  }
}

TEST_CASE("true log-probs line up with the rows of both layouts, and cut documents are not scored", "[data]") {
  Corpus c = load_corpus(small_data());
  const double total = true_nll_sum(*c.truth, c.val);
  std::map<int32_t, double> first;  // p(word | <bos>)
  for (auto [tok, p] : dynamic_cast<const Garden&>(*c.truth).next_distribution({c.vocab.bos})) first[tok] = p;
  for (Layout layout : {Layout::Doc, Layout::Packed})
    for (int T : {7, 64, 512}) {
      INFO((layout == Layout::Doc ? "doc" : "packed") << " T " << T);
      Rows rows = make_rows(c.val, layout, T, c.vocab.eos);
      auto scores = row_true_logprobs(*c.truth, c.val, layout, T);
      REQUIRE(scores.size() == rows.rows.size());
      double sum = 0;
      int64_t cut = 0;
      for (size_t r = 0; r < rows.rows.size(); ++r) {
        REQUIRE(scores[r].size() + 1 == rows.rows[r].size());
        // A target is scored exactly when its document starts inside the row: a <bos> or <eos>
        // among the inputs up to it.
        bool starts = false;
        for (size_t t = 0; t < scores[r].size(); ++t) {
          starts = starts || rows.rows[r][t] == c.vocab.bos || rows.rows[r][t] == c.vocab.eos;
          CHECK(std::isnan(scores[r][t]) == !starts);
          if (!starts) {
            ++cut;
            continue;
          }
          sum -= scores[r][t];
          // Packed: the word after an <eos> is scored as a document's first word.
          if (rows.rows[r][t] == c.vocab.eos) CHECK(scores[r][t] == Approx(std::log(first[rows.rows[r][t + 1]])));
        }
      }
      if (layout == Layout::Doc && T == 512) {  // no document is cut: every target scored
        CHECK(cut == 0);
        CHECK(sum == Approx(total).epsilon(1e-12));
      } else {
        CHECK(cut > 0);
        CHECK(sum < total);
      }
    }
}

TEST_CASE("default splits land on the design targets", "[data]") {
  Corpus c = load_corpus(DataConfig{});
  CHECK(c.train.size() == 8000);
  CHECK(c.val.size() == 1000);
  CHECK(c.test.size() == 1000);
  auto unigram = unigram_logprobs(c);
  for (Split s : {Split::Val, Split::Test}) {
    SplitStats st = split_stats(c, s, unigram);
    INFO(split_name(s) << ": true ppl " << st.true_ppl() << ", unigram ppl " << st.unigram_ppl() << ", mean length "
                       << st.mean_doc_len);
    // The calibration targets of the default world (the lecture's: 3.655, 44.3, ~25 tokens).
    CHECK(st.true_ppl() > 3.5);
    CHECK(st.true_ppl() < 3.8);
    CHECK(st.unigram_ppl() > 40.0);
    CHECK(st.unigram_ppl() < 48.0);
  }
  // Document length: v3's calibration rule (docs/results_notes.md) states it on the test
  // split (27.8); the training split, which the models see, is checked too. The validation
  // split's 28.8 is above the 28 target, a miss the notes report.
  for (Split s : {Split::Train, Split::Test}) {
    SplitStats st = split_stats(c, s, unigram);
    INFO(split_name(s) << ": mean length " << st.mean_doc_len);
    CHECK(st.mean_doc_len > 22.0);
    CHECK(st.mean_doc_len < 28.0);
  }
  // Pronoun distances reach from 2 to beyond 10, with a sizeable share beyond the window.
  int lo = 1000, hi = 0;
  int64_t far = 0, all = 0;
  for (const Doc& doc : c.val)
    for (const auto& site : dynamic_cast<const Garden&>(*c.truth).pronoun_sites(doc)) {
      lo = std::min(lo, site.distance), hi = std::max(hi, site.distance);
      ++all, far += site.distance > 5;
    }
  CHECK(lo == 2);
  CHECK(hi >= 20);
  CHECK(far > all / 4);
}

TEST_CASE("pronoun shortcuts: the first noun solves the v1 world, not the default one", "[data]") {
  // The first (or nearest) gendered noun of the sentence as the antecedent, scored by the
  // same metric as a model. In garden_v1 the subject is always the sentence's first noun.
  auto far_accuracy = [](const std::string& grammar, bool first) {
    Corpus c = shortcut_corpus(grammar);
    auto garden = std::dynamic_pointer_cast<const Garden>(c.truth);
    REQUIRE(garden);
    std::vector<int32_t> stops{c.vocab.bos, c.vocab.eos, c.vocab.id(".")};
    return pronoun_accuracy(*garden, c.train, 5, noun_heuristic(c.train, garden->noun_pronouns(), stops, first)).far();
  };
  CHECK(far_accuracy("garden_v1", true) == 1.0);
  const double first = far_accuracy("garden", true), nearest = far_accuracy("garden", false);
  INFO("default world: first noun " << first << ", nearest noun " << nearest);
  CHECK(first < 0.9);
  CHECK(nearest < 0.9);
}

TEST_CASE("noun_heuristic picks the first or the nearest gendered noun of the sentence", "[data]") {
  // Hand-made ids: 10 = "girl" (her = 20), 11 = "boy" (his = 21), 3 = ".", 1 = <bos>.
  const std::vector<Doc> docs{{1, 11, 3, 10, 5, 11, 6}};
  const std::map<int32_t, int32_t> nouns{{10, 20}, {11, 21}};
  const std::vector<int32_t> candidates{20, 21};
  auto first = noun_heuristic(docs, nouns, {1, 3}, true)(0, 6, candidates);
  auto nearest = noun_heuristic(docs, nouns, {1, 3}, false)(0, 6, candidates);
  CHECK(first == std::vector<double>{1.0, 0.0});    // girl: the sentence starts after "."
  CHECK(nearest == std::vector<double>{0.0, 1.0});  // boy
  CHECK(noun_heuristic(docs, nouns, {1, 3}, true)(0, 3, candidates) == std::vector<double>{0.0, 0.0});
}

TEST_CASE("pronoun metric: the truth scores 1, a uniform model 0, a random one about 1/3", "[data]") {
  Corpus c = load_corpus(small_data());
  const auto& garden = dynamic_cast<const Garden&>(*c.truth);
  const int W = 5;
  // The scorer as a model: each candidate's true probability.
  auto truth_scores = [&](size_t d, int pos, const std::vector<int32_t>& cands) {
    const Doc& doc = c.val[d];
    auto dist = garden.next_distribution(Doc(doc.begin(), doc.begin() + pos));
    std::vector<double> out;
    for (int32_t cand : cands) {
      double p = 0;
      for (auto [tok, q] : dist) p += tok == cand ? q : 0;
      out.push_back(p);
    }
    return out;
  };
  PronounAccuracy exact = pronoun_accuracy(garden, c.val, W, truth_scores);
  REQUIRE(exact.far_sites > 50);
  REQUIRE(exact.near_sites > 50);
  CHECK(exact.far() == 1.0);
  CHECK(exact.near() == 1.0);

  PronounAccuracy uniform = pronoun_accuracy(
      garden, c.val, W, [](size_t, int, const std::vector<int32_t>& k) { return std::vector<double>(k.size(), -1.0); });
  CHECK(uniform.far_sites == exact.far_sites);
  CHECK(uniform.far() == 0.0);
  CHECK(uniform.near() == 0.0);

  Rng rng(11);
  PronounAccuracy random = pronoun_accuracy(garden, c.val, W, [&](size_t, int, const std::vector<int32_t>& k) {
    std::vector<double> s;
    for (size_t i = 0; i < k.size(); ++i) s.push_back(rng.uniform());
    return s;
  });
  double share = static_cast<double>(random.far_correct + random.near_correct) / (random.far_sites + random.near_sites);
  CHECK(share == Approx(1.0 / 3).margin(0.04));

  // The same from per-position rows and from a logits tensor (row t scores doc[t + 1]).
  PronounAccuracy from_rows, from_tensor, blind;
  for (size_t d = 0; d < c.val.size(); ++d) {
    const Doc& doc = c.val[d];
    const int V = c.vocab.size();
    std::vector<std::vector<double>> rows(doc.size() - 1, std::vector<double>(V, -1e9));
    for (size_t t = 0; t + 1 < doc.size(); ++t)
      for (auto [tok, q] : garden.next_distribution(Doc(doc.begin(), doc.begin() + t + 1))) rows[t][tok] = std::log(q);
    add_pronoun_sites(from_rows, garden, doc, W, rows);
    auto logits = torch::empty({static_cast<int64_t>(rows.size()), V}, torch::kFloat);
    for (size_t t = 0; t < rows.size(); ++t)
      for (int v = 0; v < V; ++v) logits[t][v] = static_cast<float>(rows[t][v]);
    add_pronoun_sites(from_tensor, garden, doc, W, logits);
    add_pronoun_sites(blind, garden, doc, W, torch::zeros({static_cast<int64_t>(rows.size()), V}));
  }
  CHECK(from_rows.far_sites == exact.far_sites);
  CHECK(from_rows.near_sites == exact.near_sites);
  CHECK(from_rows.far() == 1.0);
  CHECK(from_tensor.far() == 1.0);
  CHECK(from_tensor.near() == 1.0);
  CHECK(blind.far() == 0.0);
  // The window splits the sites: everything is near for a huge W.
  PronounAccuracy wide = pronoun_accuracy(garden, c.val, 1000, truth_scores);
  CHECK(wide.far_sites == 0);
  CHECK(wide.near_sites == exact.far_sites + exact.near_sites);
  CHECK(std::isnan(wide.far()));
}

TEST_CASE("text corpus: bytes, deterministic splits, round trip", "[data]") {
  TempDir dir;
  std::string a, b;
  for (int i = 0; i < 300; ++i) a += "line " + std::to_string(i) + " of the first file\n";
  for (int i = 0; i < 200; ++i) b += "zweite Datei, Zeile " + std::to_string(i) + " \xc3\xa4\n";
  dir.write("texts/a.txt", a);
  dir.write("texts/b.txt", b);
  dir.write("texts/skip.md", "not read");
  DataConfig cfg;
  cfg.kind = "text";
  cfg.text_path = dir.file("texts");
  cfg.text_doc_len = 64;
  cfg.val_fraction = 0.1;
  cfg.test_fraction = 0.05;
  Corpus c = load_corpus(cfg);
  CHECK(c.kind == "text");
  CHECK_FALSE(c.truth);
  CHECK(c.vocab.size() == 259);
  CHECK(c.vocab.bytes);
  const size_t n = (a.size() + 63) / 64 + (b.size() + 63) / 64;
  CHECK(c.train.size() + c.val.size() + c.test.size() == n);
  CHECK(c.val.size() == static_cast<size_t>(std::llround(0.1 * n)));
  CHECK(c.test.size() == static_cast<size_t>(std::llround(0.05 * n)));
  // Every piece of every file is one document, <bos> bytes <eos>.
  std::vector<std::string> expected, got;
  for (const std::string* text : {&a, &b})
    for (size_t at = 0; at < text->size(); at += 64) expected.push_back(text->substr(at, 64));
  for (Split s : {Split::Train, Split::Val, Split::Test})
    for (const Doc& doc : c.split(s)) {
      REQUIRE(doc.front() == c.vocab.bos);
      REQUIRE(doc.back() == c.vocab.eos);
      std::string bytes;
      for (size_t i = 1; i + 1 < doc.size(); ++i) bytes += static_cast<char>(doc[i]);
      got.push_back(bytes);
      CHECK(c.vocab.encode(c.vocab.decode(doc)) == doc);
    }
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  CHECK(got == expected);
  // Deterministic per seed; another seed picks other validation documents.
  Corpus again = load_corpus(cfg);
  CHECK(again.val == c.val);
  cfg.seed = 99;
  CHECK(load_corpus(cfg).val != c.val);
  SplitStats st = split_stats(c, Split::Val);
  CHECK(std::isnan(st.true_nll));
  CHECK(st.unigram_ppl() > 1.0);
  CHECK(st.unigram_ppl() < 259.0);

  cfg.text_path = dir.file("nowhere");
  CHECK_THROWS_AS(load_corpus(cfg), InputError);
  cfg.text_path = dir.write("tiny.txt", "abc");
  CHECK_THROWS_AS(load_corpus(cfg), InputError);
}

TEST_CASE("splits by name", "[data]") {
  CHECK(parse_split("val") == Split::Val);
  CHECK(std::string(split_name(Split::Test)) == "test");
  CHECK_THROWS_AS(parse_split("dev"), InputError);
}

TEST_CASE("v3 pronouns agree with the nearest subject of the sentence, not the first", "[data][pronoun]") {
  // Shortcut baselines scored by the metric itself: the nearest clause subject is the rule
  // (1.0); the first subject is right only where no clause of another gender came before.
  auto accuracies = [](const std::string& grammar) {
    Corpus c = shortcut_corpus(grammar);
    auto garden = std::dynamic_pointer_cast<const Garden>(c.truth);
    REQUIRE(garden);
    std::vector<std::vector<int>> subjects;
    for (const Doc& doc : c.train) subjects.push_back(garden->subject_positions(doc));
    std::vector<int32_t> stops{c.vocab.bos, c.vocab.eos, c.vocab.id(".")};
    const auto nouns = garden->noun_pronouns();
    return std::pair{pronoun_accuracy(*garden, c.train, 5, subject_heuristic(c.train, subjects, nouns, stops, false)),
                     pronoun_accuracy(*garden, c.train, 5, subject_heuristic(c.train, subjects, nouns, stops, true))};
  };
  auto [nearest, first] = accuracies("garden");
  CHECK(nearest.far() == 1.0);
  CHECK(nearest.near() == 1.0);
  INFO("v3 first subject: far " << first.far());
  CHECK(first.far() < 0.95);
  auto [nearest2, first2] = accuracies("garden_v2");  // one clause per sentence: the same subject
  CHECK(nearest2.far() == 1.0);
  CHECK(first2.far() == 1.0);
}

TEST_CASE("a pronoun site counts the other-gender nouns between its subject and itself", "[data][pronoun]") {
  Corpus c = load_corpus(small_data());
  const auto& garden = dynamic_cast<const Garden&>(*c.truth);
  const auto pron = garden.noun_pronouns();  // noun -> its pronoun: another pronoun = another gender
  int64_t with = 0, sites = 0;
  for (const Doc& doc : c.val)
    for (const auto& site : garden.pronoun_sites(doc)) {
      int n = 0;  // recounted here from the words alone
      for (int j = site.pos - site.distance + 1; j < site.pos; ++j)
        if (auto it = pron.find(doc[j]); it != pron.end() && it->second != site.correct) ++n;
      CHECK(site.intervening == n);
      // The antecedent itself is a noun of the pronoun's gender.
      REQUIRE(pron.count(doc[site.pos - site.distance]));
      CHECK(pron.at(doc[site.pos - site.distance]) == site.correct);
      ++sites, with += n > 0;
    }
  CHECK(with > 0);
  CHECK(with < sites);
}

TEST_CASE("far-site buckets: distance W+1 to 10, 11 to 20, 21+, intervening 0, 1, 2+", "[data][pronoun]") {
  PronounAccuracy acc;
  const int W = 5;
  for (int d : {3, 6, 10, 11, 20, 21, 40}) acc.add(PronounSite{50, d, 7, d % 4}, /*correct=*/d != 20, W);
  CHECK(acc.far_sites == 6);
  CHECK(acc.near_sites == 1);
  CHECK(acc.by_distance_sites == std::array<int64_t, 3>{2, 2, 2});
  CHECK(acc.far_by_distance(0) == 1.0);
  CHECK(acc.far_by_distance(1) == 0.5);
  // intervening d % 4 for d = 6, 10, 11, 20, 21, 40: 2, 2, 3, 0, 1, 0 -> buckets 0: 2, 1: 1, 2+: 3
  CHECK(acc.by_intervening_sites == std::array<int64_t, 3>{2, 1, 3});
  CHECK(acc.far_by_intervening(0) == 0.5);  // d = 20 (wrong) and d = 40
  PronounAccuracy sum = acc;
  sum += acc;
  CHECK(sum.by_distance_sites == std::array<int64_t, 3>{4, 4, 4});
  CHECK(sum.far_by_distance(1) == 0.5);
}
