// Evaluation (train/evaluate.h): the length-sorted batches against one document at a time, an
// Evaluation prepared once against a fresh evaluate after the weights changed, and a corpus's
// own metric (data/metrics.h) through the evaluation into summary.csv.
#include "catch.h"
#include "torch_api.h"

#include "data/batch.h"
#include "data/corpus.h"
#include "data/metrics.h"
#include "data/pronoun.h"
#include "small_run.h"
#include "train/evaluate.h"
#include "train/summary.h"
#include "train/trainer.h"
#include "util/csv.h"

using namespace lmx;
using lmx::test::small_config;
using lmx::test::small_corpus;

TEST_CASE("evaluate (length-sorted batches) matches a loop over documents one at a time", "[train]") {
  // The reference: each validation document alone (batch 1, no padding), its targets'
  // log-softmax summed in float64; far/near pronoun accuracy from the same logits.
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  torch::manual_seed(3);
  ModernLM model(cfg.model);
  model->eval();
  const auto& corpus = small_corpus();
  EvalOptions opt = eval_options(cfg, data::Split::Val);
  opt.batch_size = 16;
  const EvalResult e = evaluate(model, corpus, opt);

  torch::NoGradGuard no_grad;
  double nll = 0;
  int64_t tokens = 0;
  data::PronounAccuracy acc;
  for (const auto& doc : corpus.val) {
    const auto rows = data::make_rows({doc}, data::Layout::Doc, cfg.model.max_seq_len, corpus.vocab.eos);
    REQUIRE(rows.rows.size() == 1);
    const auto b = data::eval_batches(rows, 1, corpus.vocab.pad).at(0);
    const auto logits = model->forward(b.inputs);
    const auto logp = torch::log_softmax(logits[0].to(torch::kDouble), -1);
    for (int64_t t = 0; t < b.targets.size(1); ++t) nll -= logp[t][b.targets[0][t].item<int64_t>()].item<double>();
    tokens += b.targets.size(1);
    data::add_pronoun_sites(acc, dynamic_cast<const data::Garden&>(*corpus.truth), doc, cfg.data.pronoun_window, logits[0]);
  }
  CHECK(e.tokens == tokens);
  CHECK(e.loss == Approx(nll / tokens).epsilon(1e-6));
  REQUIRE(acc.far_sites > 0);
  CHECK(e.metrics.get("far_sites") == acc.far_sites);
  CHECK(e.metrics.get("near_sites") == acc.near_sites);
  CHECK(e.metrics.get("far_pronoun_acc") == Approx(acc.far()).epsilon(1e-12));
  CHECK(e.metrics.get("near_pronoun_acc") == Approx(acc.near()).epsilon(1e-12));
  const char* buckets[] = {"far_acc_d_le10", "far_acc_d11_20", "far_acc_d21up"};
  for (int b = 0; b < 3; ++b) {
    const double want = acc.far_by_distance(b), got = e.metrics.get(buckets[b]);
    CHECK((std::isnan(want) ? std::isnan(got) : got == Approx(want).epsilon(1e-12)));
  }
  CHECK(e.metrics.get("far_acc_i0") == Approx(acc.far_by_intervening(0)).epsilon(1e-12));
}

TEST_CASE("an Evaluation prepared once and run again after the weights changed is a fresh evaluate", "[train]") {
  // A training run prepares its validation rows, truth and pronoun sites once: nothing of the
  // model may be kept in them.
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  torch::manual_seed(5);
  ModernLM model(cfg.model);
  const EvalOptions opt = eval_options(cfg, data::Split::Val);
  const Evaluation prepared(model, small_corpus(), opt);
  const EvalResult before = prepared.run(model);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.05);
  }
  const EvalResult again = prepared.run(model), fresh = evaluate(model, small_corpus(), opt);
  CHECK(again.loss != before.loss);
  CHECK(again.tokens == fresh.tokens);
  CHECK(again.loss == fresh.loss);  // bitwise: the same batches, the same sums in the same order
  CHECK(again.true_nll == fresh.true_nll);
  REQUIRE(again.metrics.values.size() == fresh.metrics.values.size());
  for (size_t i = 0; i < fresh.metrics.values.size(); ++i) {
    CHECK(again.metrics.values[i].column.name == fresh.metrics.values[i].column.name);
    const double a = again.metrics.values[i].value, f = fresh.metrics.values[i].value;
    CHECK((std::isnan(f) ? std::isnan(a) : a == f));
  }
}

namespace {

// A toy metric, declared the way a corpus declares one (data/metrics.h): the share of documents
// whose first word is the model's top choice after <bos>, and how many documents it scored.
class FirstWordMetric : public data::CorpusMetric {
 public:
  std::vector<data::MetricColumn> columns() const override {
    data::MetricColumn share, docs;
    share.name = "first_word_acc", share.tables = data::kSummaryTable | data::kEvalTable;
    docs.name = "first_word_docs", docs.decimals = 0, docs.tables = data::kEvalTable;
    return {share, docs};
  }
  std::unique_ptr<data::PreparedMetric> prepare(const std::vector<data::Doc>& docs) const override {
    return std::make_unique<Prepared>(*this, docs);
  }

 private:
  struct Prepared : data::PreparedMetric {
    Prepared(const FirstWordMetric& m, const std::vector<data::Doc>& d) : metric(m), docs(d) {}
    std::unique_ptr<data::MetricTally> start() const override { return std::make_unique<Tally>(*this); }
    const FirstWordMetric& metric;
    const std::vector<data::Doc>& docs;
  };
  struct Tally : data::MetricTally {
    explicit Tally(const Prepared& p) : prepared(p) {}
    void add(size_t d, const torch::Tensor& logits) override {
      ++n;
      hits += logits[0].argmax().item<int64_t>() == prepared.docs.at(d).at(1);
    }
    data::Metrics finish() const override {
      const auto cols = prepared.metric.columns();
      return {{{cols[0], n ? double(hits) / n : NAN}, {cols[1], double(n)}}, ""};
    }
    const Prepared& prepared;
    int64_t n = 0, hits = 0;
  };
};

}  // namespace

TEST_CASE("a corpus's own metric reaches the evaluation and the tables; a corpus without one adds no column",
          "[train]") {
  Config cfg = resolve_for_corpus(small_config(), small_corpus());
  torch::manual_seed(7);
  ModernLM model(cfg.model);
  model->eval();
  data::Corpus corpus = small_corpus();
  corpus.metric = std::make_shared<FirstWordMetric>();
  const EvalOptions opt = eval_options(cfg, data::Split::Val);
  const EvalResult e = evaluate(model, corpus, opt);

  // The reference: the top choice after <bos>, document by document.
  torch::NoGradGuard no_grad;
  int64_t hits = 0;
  for (const auto& doc : corpus.val)
    hits += model->forward(torch::tensor({int64_t(doc[0])}, torch::kLong).unsqueeze(0))[0][0].argmax().item<int64_t>() ==
            doc[1];
  REQUIRE(e.metrics.values.size() == 2);
  CHECK(e.metrics.get("first_word_docs") == double(corpus.val.size()));
  CHECK(e.metrics.get("first_word_acc") == Approx(double(hits) / corpus.val.size()).epsilon(1e-12));
  CHECK(e.metrics.in(data::kSummaryTable).size() == 1);
  CHECK(e.metrics.warning.empty());

  // summary.csv: the metric's summary column after the run's columns, before the costs; a row
  // from a corpus without a metric (text) leaves it empty.
  data::Corpus plain = small_corpus();
  plain.metric = nullptr;
  const EvalResult none = evaluate(model, plain, opt);
  CHECK(none.metrics.values.empty());
  SummaryRow with{"toy", cfg, {}}, without{"plain", cfg, {}};
  with.run.test = e, without.run.test = none;
  const Table t = seed_rows({without, with});
  const int col = column(t, "first_word_acc");
  REQUIRE(col == column(t, "test_untrained_loss") + 1);
  CHECK(column(t, "kv_numbers_per_token_per_layer") == col + 1);
  CHECK(column(t, "far_pronoun_acc") < 0);
  CHECK(t.rows[0][col].empty());
  CHECK(t.rows[1][col] == csv_num(e.metrics.get("first_word_acc"), 4));
  CHECK(seed_rows({without}).header.size() + 1 == t.header.size());
}

TEST_CASE("add_rows joins tables by column name", "[train]") {
  Table into, from;
  into.header = {"name", "a", "c"};
  into.add({"x", "1", "3"});
  from.header = {"name", "a", "b", "c"};
  from.add({"y", "4", "5", "6"});
  add_rows(into, from);
  CHECK(into.header == std::vector<std::string>{"name", "a", "b", "c"});
  CHECK(into.rows[0] == std::vector<std::string>{"x", "1", "", "3"});
  CHECK(into.rows[1] == std::vector<std::string>{"y", "4", "5", "6"});
  Table back;
  back.header = {"c", "name"};
  back.add({"9", "z"});
  add_rows(into, back);
  CHECK(into.header.size() == 4);
  CHECK(into.rows[2] == std::vector<std::string>{"z", "", "", "9"});
}
