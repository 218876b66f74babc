#include "data/corpus.h"

#include <fmt/format.h>

#include <algorithm>

#include "data/garden.h"
#include "data/rng.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace lmx::data {

const char* split_name(Split s) {
  switch (s) {
    case Split::Train: return "train";
    case Split::Val: return "val";
    case Split::Test: return "test";
  }
  return "?";
}

Split parse_split(const std::string& name) {
  if (name == "train") return Split::Train;
  if (name == "val" || name == "valid" || name == "validation") return Split::Val;
  if (name == "test") return Split::Test;
  throw InputError(fmt::format("unknown split '{}'; valid: train, val, test", name));
}

int32_t Vocab::id(const std::string& word) const {
  auto it = std::find(words.begin(), words.end(), word);
  if (it == words.end())
    throw InputError(fmt::format("'{}' is not in the vocabulary ({} tokens)", word, words.size()),
                     "`lmx data stats` prints the vocabulary");
  return static_cast<int32_t>(it - words.begin());
}

std::string Vocab::decode(const Doc& doc) const {
  if (tokenizer) return tokenizer->decode(doc);
  std::string out;
  for (size_t i = 0; i < doc.size(); ++i) {
    int32_t t = doc[i];
    if (t < 0 || t >= size())
      throw InputError(fmt::format("token id {} at position {} is outside the vocabulary (0..{})", t, i, size() - 1));
    if (!bytes && i > 0) out += ' ';
    out += words[t];
  }
  return out;
}

Doc Vocab::encode(const std::string& text) const {
  if (tokenizer) return tokenizer->encode(text);
  Doc doc;
  if (bytes) {
    // Special names are read as specials; every other byte is itself.
    for (size_t i = 0; i < text.size();) {
      bool special = false;
      for (int32_t s : {bos, eos, pad}) {
        const std::string& name = words[s];
        if (text.compare(i, name.size(), name) == 0) {
          doc.push_back(s);
          i += name.size();
          special = true;
          break;
        }
      }
      if (!special) doc.push_back(static_cast<unsigned char>(text[i++]));
    }
    return doc;
  }
  size_t i = 0;
  while (i < text.size()) {
    size_t b = text.find_first_not_of(" \t\r\n", i);
    if (b == std::string::npos) break;
    size_t e = text.find_first_of(" \t\r\n", b);
    if (e == std::string::npos) e = text.size();
    doc.push_back(id(text.substr(b, e - b)));
    i = e;
  }
  return doc;
}

std::vector<Doc> generate_split(const Garden& garden, uint64_t seed, Split split, int n) {
  // Three independent streams from one seed: train 1, val 2, test 3.
  Rng rng(stream_seed(seed, static_cast<uint64_t>(split) + 1));
  std::vector<Doc> docs;
  docs.reserve(n > 0 ? n : 0);
  for (int i = 0; i < n; ++i) docs.push_back(garden.sample(rng));
  return docs;
}

const std::vector<Doc>& Corpus::split(Split s) const {
  switch (s) {
    case Split::Train: return train;
    case Split::Val: return val;
    case Split::Test: return test;
  }
  return train;
}

}  // namespace lmx::data
