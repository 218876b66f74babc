// Proof by addition, a corpus with a metric of its own: "counting" documents <bos> 3 4 5 6 <eos>
// (a random first digit, then each digit one more, mod 10, for 2 to 8 digits), scored by how
// often the model's top token is the next digit. Added from this file alone, as a program of
// one's own would (docs/DESIGN.md, "A new corpus"): its loaders and metric columns are one
// registry::add_corpus call. Nothing under src/ names it. lmx's own verbs (this binary as lmx:
// tests/toys.h) list it, train on it (the metric's column in summary.csv), evaluate it (its
// column in lmx eval), decode from it on the inference engine and put its metric in an
// ablation table.
#include "catch.h"

#include "torch_api.h"


#include "data/corpora.h"
#include "data/rng.h"
#include "helpers.h"
#include "toys.h"

using namespace lmx;

namespace {

const data::MetricColumn kCountAcc{"count_acc", 4,
                                   data::kSummaryTable | data::kEvalTable | data::kShortTable | data::kHeadline,
                                   "count acc", "count", 3};

// The share of a document's digits after the first whose top-scored token is the right one.
class CountingTally : public data::MetricTally {
 public:
  explicit CountingTally(const std::vector<data::Doc>& docs) : docs_(docs) {}
  void add(size_t d, const torch::Tensor& logits) override {
    const data::Doc& doc = docs_.at(d);
    const auto top = logits.argmax(-1);
    for (int64_t t = 1; t + 2 < static_cast<int64_t>(doc.size()) && t < logits.size(0); ++t)  // doc[t + 1]: a digit
      ++sites_, right_ += top[t].item<int64_t>() == doc[t + 1];
  }
  data::Metrics finish() const override {
    data::Metrics m;
    m.values.push_back({kCountAcc, sites_ ? static_cast<double>(right_) / sites_ : NAN});
    return m;
  }

 private:
  const std::vector<data::Doc>& docs_;
  int64_t sites_ = 0, right_ = 0;
};

class PreparedCounting : public data::PreparedMetric {
 public:
  explicit PreparedCounting(const std::vector<data::Doc>& docs) : docs_(docs) {}
  std::unique_ptr<data::MetricTally> start() const override { return std::make_unique<CountingTally>(docs_); }

 private:
  const std::vector<data::Doc>& docs_;
};

class CountingMetric : public data::CorpusMetric {
 public:
  std::vector<data::MetricColumn> columns() const override { return {kCountAcc}; }
  std::unique_ptr<data::PreparedMetric> prepare(const std::vector<data::Doc>& docs) const override {
    return std::make_unique<PreparedCounting>(docs);
  }
};

data::Corpus counting_vocabulary(const DataConfig&) {
  data::Corpus c;
  c.vocab.words = {"<pad>", "<bos>", "<eos>"};
  for (int i = 0; i < 10; ++i) c.vocab.words.push_back(std::to_string(i));
  c.vocab.pad = 0, c.vocab.bos = 1, c.vocab.eos = 2;
  return c;
}

data::Corpus counting_corpus(const DataConfig& cfg) {
  data::Corpus c = counting_vocabulary(cfg);
  int split = 0;
  for (auto [docs, n] : {std::pair{&c.train, cfg.train_docs}, {&c.val, cfg.val_docs}, {&c.test, cfg.test_docs}}) {
    data::Rng rng(static_cast<uint64_t>(cfg.seed) * 3 + static_cast<uint64_t>(split++));
    for (int i = 0; i < n; ++i) {
      data::Doc doc{c.vocab.bos};
      const int first = static_cast<int>(rng.next() % 10), len = 2 + static_cast<int>(rng.next() % 7);
      for (int k = 0; k < len; ++k) doc.push_back(3 + (first + k) % 10);
      doc.push_back(c.vocab.eos);
      docs->push_back(std::move(doc));
    }
  }
  c.metric = std::make_shared<CountingMetric>();
  return c;
}

void add_counting() {
  registry::Traits t;
  t.doc_counts = true;  // its splits hold data.train_docs / val_docs / test_docs documents
  registry::add_corpus({"toy_counting", "digits counting up mod 10 (a test's own)", t},
                       {counting_corpus, counting_vocabulary, {kCountAcc}});
}
const test::ToyRows kCountingRows{add_counting};

const std::string kSmallCounting =
    " --set data.kind=toy_counting --set data.train_docs=300 --set data.val_docs=40 --set data.test_docs=40"
    " --set train.steps=30 --set train.eval_every=10 --set train.batch_size=16 --set train.warmup_steps=5";

}  // namespace

TEST_CASE("toy corpus: one row in a test file, and lmx lists it, trains, evaluates, decodes and ablates with its metric",
          "[toy][corpus][cli]") {
  test::TempDir dir;
  const std::string out = dir.path.string();
  test::check_listed("toy_counting");
  const std::string ckpt = test::check_trains(out + "/train", kSmallCounting);
  CHECK_THAT(test::read_file(out + "/train/summary.csv"), Catch::Contains(",count_acc"));
  CHECK_THAT(test::read_file(out + "/train/summary.md"), Catch::Contains("count acc"));
  test::check_evaluates(ckpt, "count_acc");
  test::check_engine_decodes(ckpt);

  CHECK_THAT(test::check_ablates_ffn(out + "/ablate", "gelu", kSmallCounting), Catch::Contains("count acc"));
}
