// Subword tokenization of text corpora by SentencePiece (Kudo & Richardson 2018; Debian's
// libsentencepiece): data.tokenizer sentencepiece reads the model file data.tokenizer_model,
// which `lmx data tokenizer CONFIG --vocab N` trains (BPE or unigram) on the training split.
// Ids are SentencePiece's: <unk> 0, <bos> 1, <eos> 2, <pad> 3, then the pieces. Models are
// trained without normalization or extra-whitespace removal and every character of the training
// split is kept, so decode(encode(text)) == text for text made of those characters.
// This file only: no LibTorch header sees SentencePiece's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lmx::data {

class Tokenizer {
 public:
  // InputError (exit 2, one line naming the file) when the file is missing or not a model.
  static std::shared_ptr<const Tokenizer> load(const std::string& path);
  ~Tokenizer();

  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // control ids (<bos>, ...) dropped
  int size() const;
  std::string piece(int32_t id) const;
  int32_t unk() const;
  int32_t bos() const;
  int32_t eos() const;
  int32_t pad() const;
  const std::string& path() const { return path_; }
  const std::string& hash() const { return hash_; }  // file_hash of the model file

 private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_, hash_;
};

// The names `lmx data tokenizer --type` accepts.
const std::vector<std::string>& tokenizer_types();

// Trains a SentencePiece model of `type` (bpe | unigram) with `vocab` pieces (specials included)
// on the texts and writes it to path atomically. InputError for a vocabulary the texts cannot
// fill or an unknown type. byte_fallback: the 256 byte pieces <0x00>..<0xFF> too (counted in vocab).
void train_tokenizer(const std::vector<std::string>& texts, int vocab, const std::string& type,
                     const std::string& path, bool byte_fallback = false);

// FNV-1a 64 of a file's bytes as 16 hex digits (checkpoints record their tokenizer's).
std::string file_hash(const std::string& path);

}  // namespace lmx::data
