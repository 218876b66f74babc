// The corpus rows (corpora.h): the built-in garden and text rows, and the loaders that
// load_corpus and load_vocabulary dispatch to by data.kind.
#include "data/corpora.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "data/garden.h"
#include "data/pronoun.h"
#include "data/text.h"
#include "util/log.h"

namespace lmx::registry {

namespace {
// The loaders of each corpus row, by name, in catalog order (a function-local static: it
// exists before the built-in rows are added).
std::vector<std::pair<std::string, data::CorpusLoaders>>& loaders() {
  static std::vector<std::pair<std::string, data::CorpusLoaders>> table;
  return table;
}
}  // namespace

void add_corpus(Entry entry, data::CorpusLoaders corpus) {
  const std::string name = entry.name;
  add(Kind::Corpus, std::move(entry));
  loaders().emplace_back(name, std::move(corpus));
}

std::vector<std::string> corpus_loader_names() {
  std::vector<std::string> out;
  for (const auto& row : loaders()) out.push_back(row.first);
  return out;
}

}  // namespace lmx::registry

namespace lmx::data {

namespace {

// The loaders of data.kind (registry::find names the valid ones for an unknown name).
const CorpusLoaders& loaders_of(const std::string& kind) {
  registry::find(registry::Kind::Corpus, kind);
  for (const auto& [name, l] : registry::loaders())
    if (name == kind) return l;
  throw std::logic_error(fmt::format("registry: corpus '{}' is in the catalog but has no loader", kind));
}

Corpus garden_vocabulary(const DataConfig& cfg) {
  auto garden = Garden::load(cfg.grammar);
  Corpus c;
  c.vocab = garden->vocab();
  c.truth = garden;
  return c;
}

Corpus garden_corpus(const DataConfig& cfg) {
  Corpus c = garden_vocabulary(cfg);
  const auto garden = std::static_pointer_cast<const Garden>(c.truth);
  const auto seed = static_cast<uint64_t>(cfg.seed);
  c.train = generate_split(*garden, seed, Split::Train, cfg.train_docs);
  c.val = generate_split(*garden, seed, Split::Val, cfg.val_docs);
  c.test = generate_split(*garden, seed, Split::Test, cfg.test_docs);
  c.metric = pronoun_metric(garden, cfg.pronoun_window);
  return c;
}

Corpus text_vocabulary(const DataConfig& cfg) {
  Corpus c;
  c.vocab = text_vocab(cfg);
  return c;
}

registry::Traits garden_traits() {
  registry::Traits t;
  t.has_truth = true;
  t.doc_counts = true;
  return t;
}
registry::Traits text_traits() {
  registry::Traits t;
  t.text_source = true;
  t.check = [](const DataConfig& d) -> std::string {
    return d.text_path.empty() ? "data.kind is text but data.text_path is empty" : "";
  };
  return t;
}

// The built-in rows, added when the program starts (load_corpus, below, links this file into
// every program that reads data).
[[maybe_unused]] const bool kBuiltinsAdded = [] {
  registry::add_corpus({"garden", "the garden world: a toy language with its exact distribution (data.grammar)",
                        garden_traits()},
                       {garden_corpus, garden_vocabulary, pronoun_columns()});
  registry::add_corpus({"text", "plain text from data.text_path: bytes, or subwords (data.tokenizer)", text_traits()},
                       {load_text_corpus, text_vocabulary, {}});
  return true;
}();

}  // namespace

Corpus load_corpus(const DataConfig& cfg) {
  Corpus c = loaders_of(cfg.kind).load(cfg);
  c.kind = cfg.kind;
  log::debug("data", "{} corpus: vocab {}, train/val/test {}/{}/{} documents", c.kind, c.vocab.size(), c.train.size(),
             c.val.size(), c.test.size());
  return c;
}

Corpus load_vocabulary(const DataConfig& cfg) {
  Corpus c = loaders_of(cfg.kind).vocabulary(cfg);
  c.kind = cfg.kind;
  return c;
}

std::vector<MetricColumn> known_metric_columns() {
  std::vector<MetricColumn> out;
  for (const auto& [name, l] : registry::loaders())
    for (const auto& col : l.metric_columns)
      if (std::none_of(out.begin(), out.end(), [&](const MetricColumn& m) { return m.name == col.name; }))
        out.push_back(col);
  return out;
}

}  // namespace lmx::data
