// A small, fast training setup shared by the training and evaluation tests: the textbook model
// (or another preset) on a small garden corpus.
#pragma once
#include <string>

#include "config/config.h"
#include "data/corpus.h"
#include "helpers.h"

namespace lmx::test {

inline Config small_config(const std::string& base = "configs/textbook.yaml") {
  return load_config(source_path(base), {"data.train_docs=300", "data.val_docs=60", "data.test_docs=60",
                                         "train.steps=20", "train.eval_every=10", "train.warmup_steps=5",
                                         "train.batch_size=16"});
}

inline const data::Corpus& small_corpus() {
  static const data::Corpus corpus = data::load_corpus(small_config().data);
  return corpus;
}

}  // namespace lmx::test
