// Shared by the training reliability tests (test_resume, test_train_signals,
// test_train_guards): a small config and corpus for in-process runs, the small --set flags
// for lmx train runs, and a check that a checkpoint holds AdamW's state.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "train/trainer.h"
#include "util/faults.h"

namespace lmx::test {

inline const std::vector<std::string> kResumeSets = {"data.train_docs=300", "data.val_docs=60", "data.test_docs=60",
                                                     "train.steps=24",      "train.eval_every=5", "train.warmup_steps=5",
                                                     "train.batch_size=16"};

inline Config resume_config() { return load_config(source_path("configs/textbook.yaml"), kResumeSets); }

inline const data::Corpus& resume_corpus() {
  static const data::Corpus corpus = data::load_corpus(resume_config().data);
  return corpus;
}

inline bool has_optimizer_state(const Checkpoint& ck) {
  std::set<std::string> names;
  for (const auto& [n, t] : ck.tensors) names.insert(n);
  for (const auto& [n, t] : ck.tensors) {
    if (n.rfind("optim.", 0) == 0 || n.rfind("state.", 0) == 0) continue;
    if (!names.count("optim." + n + ".exp_avg") || !names.count("optim." + n + ".exp_avg_sq") ||
        !names.count("optim." + n + ".step"))
      return false;
  }
  return names.count("state.torch_rng") > 0;
}

// A run of resume_corpus() interrupted (as by SIGINT) during step `step` − 1 (fault injection).
inline lmx::RunResult train_interrupted(const Config& cfg, const lmx::RunOptions& opt, int64_t step) {
  faults::Plan plan;
  plan.interrupt_after_step = step;
  const faults::Scope fault(plan);
  return train_run(cfg, resume_corpus(), opt);
}

inline const std::string kCliSmall =
    "--set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.batch_size=8 "
    "--set train.eval_every=40 --set train.warmup_steps=10";

}  // namespace lmx::test
