// Evaluation (train/evaluate.h): the length-sorted batches against one document at a time, and
// an Evaluation prepared once against a fresh evaluate after the weights changed.
#include "catch.h"
#include <torch/torch.h>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/pronoun.h"
#include "small_run.h"
#include "train/evaluate.h"
#include "train/trainer.h"

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
    data::add_pronoun_sites(acc, *corpus.truth, doc, opt.pronoun_window, logits[0]);
  }
  CHECK(e.tokens == tokens);
  CHECK(e.loss == Approx(nll / tokens).epsilon(1e-6));
  CHECK(e.far_sites == acc.far_sites);
  CHECK(e.far_acc == Approx(acc.far()).epsilon(1e-12));
  CHECK(e.near_acc == Approx(acc.near()).epsilon(1e-12));
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
  CHECK(again.far_sites == fresh.far_sites);
  CHECK(again.far_acc == fresh.far_acc);
  CHECK(again.near_acc == fresh.near_acc);
}
