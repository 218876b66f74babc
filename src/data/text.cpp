#include "data/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/rng.h"
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

}  // namespace

Corpus load_text_corpus(const DataConfig& cfg) {
  Corpus c;
  c.kind = "text";
  c.vocab = byte_vocab();
  std::vector<Doc> docs;
  for (const auto& file : text_files(cfg.text_path)) {
    const std::string text = read_file(file);
    for (size_t at = 0; at < text.size(); at += cfg.text_doc_len) {
      Doc doc{c.vocab.bos};
      size_t end = std::min(text.size(), at + static_cast<size_t>(cfg.text_doc_len));
      for (size_t i = at; i < end; ++i) doc.push_back(static_cast<unsigned char>(text[i]));
      doc.push_back(c.vocab.eos);
      docs.push_back(std::move(doc));
    }
  }
  const size_t n = docs.size();
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
  std::vector<int> which(n, 0);  // 0 train, 1 val, 2 test
  for (size_t k = 0; k < n_val; ++k) which[order[k]] = 1;
  for (size_t k = n_val; k < n_val + n_test; ++k) which[order[k]] = 2;
  for (size_t i = 0; i < n; ++i) (which[i] == 0 ? c.train : which[i] == 1 ? c.val : c.test).push_back(std::move(docs[i]));
  return c;
}

}  // namespace lmx::data
