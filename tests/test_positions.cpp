// Train on what we test (issue 30): in the doc layout a document is one training row unless it is
// longer than the model's context, so the presets train every position their evaluation scores,
// and evaluation keeps positions no training row reached out of its perplexity.
#include "catch.h"
#include "torch_api.h"

#include <algorithm>
#include <cmath>

#include "config/config.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "helpers.h"
#include "model/lm.h"
#include "train/evaluate.h"
#include "train/trainer.h"

using namespace lmx;

namespace {

int longest_targets(const std::vector<data::Doc>& docs) {
  size_t n = 0;
  for (const auto& d : docs) n = std::max(n, d.size());
  return static_cast<int>(n) - 1;
}

}  // namespace

TEST_CASE("the presets train every position their evaluation scores", "[data][positions]") {
  for (const char* preset : {"configs/textbook.yaml", "configs/original.yaml", "configs/llama.yaml"}) {
    INFO(preset);
    const Config cfg = load_config(test::source_path(preset));
    REQUIRE(cfg.data.layout == DataLayout::Doc);
    const data::Corpus corpus = data::load_corpus(cfg.data);
    const data::Rows rows = data::train_rows(corpus.train, cfg, corpus.vocab.eos);
    CHECK(rows.rows.size() == corpus.train.size());  // no training document is cut
    const int trained = trained_positions(cfg, corpus);
    CHECK(trained == longest_targets(corpus.train));
    // The test split's whole documents reach no position that training did not: every test
    // target is in test_ppl. Validation targets past it (a few in the longest documents) are
    // counted apart: here, recounted naively.
    CHECK(longest_targets(corpus.test) <= trained);
    int64_t beyond = 0, all = 0;
    for (const auto& d : corpus.val)
      for (size_t t = 0; t + 1 < d.size(); ++t) ++all, beyond += static_cast<int>(t) >= trained;
    CHECK(targets_beyond(corpus.val, trained) == beyond);
    CHECK(beyond < all / 1000);
  }
}

TEST_CASE("doc rows are cut only at the model's context, packed rows at data.seq_len", "[data][positions]") {
  Config cfg;
  cfg.model.max_seq_len = 8;
  cfg.data.seq_len = 3;
  const std::vector<data::Doc> docs{{1, 5, 6, 7, 2}, {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 2}};
  CHECK(data::train_row_len(cfg) == 8);
  const auto doc = data::train_rows(docs, cfg, 2);
  REQUIRE(doc.rows.size() == 3);  // the second document (11 targets) is longer than 8: two rows
  CHECK(doc.rows[0] == docs[0]);
  CHECK(doc.rows[1].size() == 9);
  cfg.data.layout = DataLayout::Packed;
  CHECK(data::train_row_len(cfg) == 3);
}

TEST_CASE("evaluation reports targets past the trained positions apart", "[train][positions]") {
  Config cfg = load_config(test::source_path("configs/textbook.yaml"),
                           {"data.train_docs=20", "data.val_docs=40", "data.test_docs=40"});
  const data::Corpus corpus = data::load_corpus(cfg.data);
  cfg = resolve_for_corpus(cfg, corpus);
  torch::manual_seed(0);
  ModernLM model(cfg.model);
  EvalOptions opt = eval_options(cfg, data::Split::Test);
  const EvalResult all = evaluate(model, corpus, opt);
  CHECK(all.untrained_tokens == 0);
  opt.trained_len = 10;  // as if training had reached positions 0..9 only
  const EvalResult cut = evaluate(model, corpus, opt);
  // Naive count of the test targets at positions >= 10 (target t is doc[t + 1]).
  int64_t beyond = 0, every = 0;
  for (const auto& d : corpus.test) {
    every += static_cast<int64_t>(d.size()) - 1;
    beyond += std::max<int64_t>(0, static_cast<int64_t>(d.size()) - 1 - 10);
  }
  REQUIRE(beyond > 0);
  CHECK(targets_beyond(corpus.test, 10) == beyond);
  CHECK(cut.untrained_tokens == beyond);
  CHECK(cut.tokens == every - beyond);
  CHECK(all.tokens == every);
  // The two parts add up to the whole: token-weighted losses.
  CHECK(cut.loss * cut.tokens + cut.untrained_loss * beyond == Approx(all.loss * all.tokens).epsilon(1e-9));
}
