// A corpus: a vocabulary and three splits of documents, from the garden world (with its
// exact distribution) or from plain text (bytes), or any corpus row (data/corpora.h). This
// header is the contract the trainer, the evaluator and the experiments use; data/garden.*
// and data/text.* fill it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace lmx::data {

using Doc = std::vector<int32_t>;  // token ids: <bos> w1 ... wn <eos>

class Tokenizer;     // data/tokenizer.h
class CorpusMetric;  // data/metrics.h

enum class Split { Train, Val, Test };
const char* split_name(Split s);
Split parse_split(const std::string& name);  // throws InputError

// Garden: <pad> 0, <bos> 1, <eos> 2, then the grammar's words in byte order.
// Text: byte b has id b (0..255), then <pad> 256, <bos> 257, <eos> 258; with
// data.tokenizer sentencepiece the model's pieces (words) and ids (data/tokenizer.h).
struct Vocab {
  std::vector<std::string> words;  // id -> word; specials included
  int32_t bos = -1, eos = -1, pad = -1;
  bool bytes = false;              // text: tokens are bytes, decoded without separators
  std::shared_ptr<const Tokenizer> tokenizer;  // sentencepiece: encodes and decodes
  int size() const { return static_cast<int>(words.size()); }
  int32_t id(const std::string& word) const;  // throws InputError for an unknown word
  std::string decode(const Doc& doc) const;   // words joined by spaces (bytes for text)
  Doc encode(const std::string& text) const;  // inverse of decode; throws InputError
};

// The exact distribution of a corpus's language, where it knows one (the garden world): the
// floor of every loss (true NLL and perplexity columns, the plots' floor lines).
class Truth {
 public:
  virtual ~Truth() = default;
  // log p(doc[i] | doc[0..i)) for i = 1..n-1 (index 0 holds 0: <bos> is given).
  // Throws InputError naming the first position if doc is not in the language.
  virtual std::vector<double> logprobs(const Doc& doc) const = 0;
};

struct Corpus {
  std::string kind;  // its row (data.kind: registry::Kind::Corpus, data/corpora.h)
  Vocab vocab;
  std::vector<Doc> train, val, test;
  std::shared_ptr<const Truth> truth;  // null where the corpus knows no distribution (text)
  std::shared_ptr<const CorpusMetric> metric;  // beyond the loss (garden: pronoun agreement); null for none

  const std::vector<Doc>& split(Split s) const;
};

// Builds the corpus data.kind names, by its row's loader (data/corpora.h; the garden generates
// its documents deterministically from data.seed).
Corpus load_corpus(const DataConfig& cfg);

// The same corpus's vocabulary (and truth) without its documents: all that generating from a
// checkpoint or exporting it needs (a text run's checkpoint works without its text).
Corpus load_vocabulary(const DataConfig& cfg);

}  // namespace lmx::data
