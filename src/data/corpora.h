// The corpora as rows (data.kind): each a catalog row (config/registry.h: name, description,
// traits) and its loaders here. A new corpus is its file and one add_corpus call: its loader
// fills a Corpus (documents, vocabulary, and where it has them a Truth and a CorpusMetric), and
// the columns its metric declares join summary.md and the ablation tables
// (known_metric_columns). The built-in rows: garden (data/garden.h, the pronoun metric) and
// text (data/text.h).
#pragma once
#include <string>
#include <vector>

#include "config/registry.h"
#include "data/corpus.h"
#include "data/metrics.h"

namespace lmx::data {

struct CorpusLoaders {
  Corpus (*load)(const DataConfig&);        // the splits, vocabulary, truth and metric
  Corpus (*vocabulary)(const DataConfig&);  // the vocabulary and truth alone (a checkpoint's)
  std::vector<MetricColumn> metric_columns;   // every column its metric declares; none: no metric
};

}  // namespace lmx::data

namespace lmx::registry {

// A corpus row: the catalog's entry and its loaders, in one call (the built-in rows when the
// program starts; a program's or test's own later: tests/test_toy_corpus.cpp).
void add_corpus(Entry entry, data::CorpusLoaders loaders);
// The names with loaders, in table order (equal to names(Kind::Corpus): tests/test_registry.cpp).
std::vector<std::string> corpus_loader_names();

}  // namespace lmx::registry
