#include "data/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/rng.h"
#include "data/tokenizer.h"
#include "util/error.h"

namespace lmx::data {

namespace fs = std::filesystem;

Vocab byte_vocab() {
  Vocab v;
  for (int b = 0; b < 256; ++b) v.words.push_back(std::string(1, static_cast<char>(b)));
  v.words.insert(v.words.end(), {"<pad>", "<bos>", "<eos>"});
  v.pad = 256, v.bos = 257, v.eos = 258;
  v.bytes = true;
  return v;
}

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read (data.text_path)", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files data.text_path names: the file itself, or the directory's .txt files by name.
std::vector<fs::path> text_files(const std::string& path) {
  std::error_code ec;
  if (path.empty()) throw InputError("data.text_path is empty", "set it to a text file or a directory of .txt files");
  if (fs::is_regular_file(path, ec)) return {path};
  if (!fs::is_directory(path, ec))
    throw InputError(fmt::format("data.text_path: '{}' is neither a file nor a directory", path));
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(path, ec))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(fmt::format("data.text_path: no .txt files under '{}'", path));
  return files;
}

// The documents' texts, each at most data.text_doc_len bytes (utf8: cut only at character starts).
std::vector<std::string> cut_documents(const DataConfig& cfg, bool utf8) {
  std::vector<std::string> docs;
  for (const auto& file : text_files(cfg.text_path)) {
    const std::string text = read_file(file);
    for (size_t at = 0, end = 0; at < text.size(); at = end) {
      end = std::min(text.size(), at + static_cast<size_t>(cfg.text_doc_len));
      if (utf8)  // continuation bytes are 10xxxxxx
        while (end < text.size() && end > at + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
      docs.push_back(text.substr(at, end - at));
    }
  }
  return docs;
}

// Which split each of n documents goes to: 0 train, 1 val, 2 test.
std::vector<int> assign_splits(const DataConfig& cfg, size_t n) {
  auto count = [n](double fraction) {
    return fraction > 0 ? std::max<size_t>(1, static_cast<size_t>(std::llround(fraction * n))) : 0;
  };
  const size_t n_val = count(cfg.val_fraction), n_test = count(cfg.test_fraction);
  if (n < n_val + n_test + 1)
    throw InputError(fmt::format("data.text_path '{}': {} documents of {} bytes are too few for train, val and test",
                                 cfg.text_path, n, cfg.text_doc_len),
                     "use more text or a smaller data.text_doc_len");
  // A seeded permutation picks the val and test documents; each split keeps file order.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(stream_seed(static_cast<uint64_t>(cfg.seed), 4));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<int> which(n, 0);
  for (size_t k = 0; k < n_val; ++k) which[order[k]] = 1;
  for (size_t k = n_val; k < n_val + n_test; ++k) which[order[k]] = 2;
  return which;
}

bool subwords(const DataConfig& cfg) { return cfg.tokenizer == TokenizerKind::SentencePiece; }

}  // namespace

Vocab text_vocab(const DataConfig& cfg) {
  if (!subwords(cfg)) return byte_vocab();
  auto tok = Tokenizer::load(cfg.tokenizer_model);
  Vocab v;
  for (int32_t i = 0; i < tok->size(); ++i) v.words.push_back(tok->piece(i));
  v.bos = tok->bos(), v.eos = tok->eos(), v.pad = tok->pad();
  v.tokenizer = tok;
  return v;
}

Corpus load_text_corpus(const DataConfig& cfg) {
  Corpus c;
  c.vocab = text_vocab(cfg);
  const std::vector<std::string> texts = cut_documents(cfg, subwords(cfg));
  const std::vector<int> which = assign_splits(cfg, texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    Doc doc{c.vocab.bos};
    if (c.vocab.tokenizer) {
      Doc ids = c.vocab.tokenizer->encode(texts[i]);
      doc.insert(doc.end(), ids.begin(), ids.end());
    } else {
      for (unsigned char b : texts[i]) doc.push_back(b);
    }
    doc.push_back(c.vocab.eos);
    (which[i] == 0 ? c.train : which[i] == 1 ? c.val : c.test).push_back(std::move(doc));
  }
  return c;
}

std::vector<std::string> text_training_split(const DataConfig& cfg) {
  const std::vector<std::string> texts = cut_documents(cfg, true);
  const std::vector<int> which = assign_splits(cfg, texts.size());
  std::vector<std::string> train;
  for (size_t i = 0; i < texts.size(); ++i)
    if (which[i] == 0) train.push_back(texts[i]);
  return train;
}

}  // namespace lmx::data
