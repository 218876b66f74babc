// Vocabularies for GGUF (formats/gguf.h): garden words, bytes, SentencePiece pieces. The pieces'
// scores and types come from the SentencePiece model file itself (ModelProto, read here with a
// minimal protobuf reader: field 1 = pieces {1 piece, 2 score, 3 type}).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "data/tokenizer.h"
#include "formats/gguf.h"
#include "util/error.h"

namespace lmx {

namespace {

enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

struct ProtoReader {
  const std::string& s;
  size_t pos, end;
  std::string file;

  InputError bad(const std::string& what) const {
    return InputError(fmt::format("{}: not a SentencePiece model: {} at byte {}", file, what, pos),
                      "train one with `lmx data tokenizer CONFIG --vocab N --byte-fallback`");
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end) throw bad("truncated varint");
      const auto b = static_cast<uint8_t>(s[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw bad("varint longer than 10 bytes");
  }
  // Skips a field of wire type w (or returns its length-delimited span in [b, e)).
  void field(uint32_t w, size_t* b = nullptr, size_t* e = nullptr) {
    size_t n = 0;
    if (w == 0) return void(varint());
    if (w == 1) n = 8;
    else if (w == 5) n = 4;
    else if (w == 2) n = varint();
    else throw bad(fmt::format("wire type {}", w));
    if (n > end - pos) throw bad("field runs past its end");
    if (b) *b = pos, *e = pos + n;
    pos += n;
  }
};

// The pieces (field 1 of ModelProto) as (piece, score, type).
void read_pieces(const std::string& file, GgufVocab& v) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the SentencePiece model", file));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  ProtoReader r{bytes, 0, bytes.size(), file};
  while (r.pos < r.end) {
    const uint64_t key = r.varint();
    size_t b = 0, e = 0;
    r.field(key & 7, &b, &e);
    if (key == ((2 << 3) | 2)) {  // trainer_spec: field 3 model_type (1 unigram, 2 bpe, 3 word, 4 char)
      ProtoReader t{bytes, b, e, file};
      while (t.pos < t.end) {
        const uint64_t k = t.varint();
        if (k != ((3 << 3) | 0)) t.field(k & 7);
        else v.spm_type = std::vector<std::string>{"?", "unigram", "bpe", "word", "char"}.at(std::min<uint64_t>(t.varint(), 4));
      }
    }
    if (key != ((1 << 3) | 2)) continue;
    ProtoReader p{bytes, b, e, file};
    std::string piece;
    float score = 0;
    int32_t type = kNormal;
    while (p.pos < p.end) {
      const uint64_t k = p.varint();
      size_t pb = 0, pe = 0;
      if (k == ((3 << 3) | 0)) type = static_cast<int32_t>(p.varint());
      else p.field(k & 7, &pb, &pe);
      if (k == ((1 << 3) | 2)) piece = bytes.substr(pb, pe - pb);
      if (k == ((2 << 3) | 5)) std::memcpy(&score, bytes.data() + pb, 4);
    }
    v.tokens.push_back(piece);
    v.scores.push_back(score);
    v.types.push_back(type);
  }
}

GgufVocab sentencepiece_vocab(const data::Tokenizer& tok) {
  GgufVocab v;
  v.model = "llama";
  read_pieces(tok.path(), v);
  if (static_cast<int>(v.tokens.size()) != tok.size())
    throw InputError(fmt::format("{}: {} pieces read, SentencePiece reports {}", tok.path(), v.tokens.size(), tok.size()));
  if (std::find(v.types.begin(), v.types.end(), kByte) == v.types.end())
    throw InputError(fmt::format("{}: the SentencePiece model has no byte pieces (<0x00>..<0xFF>); llama.cpp needs "
                                 "them to tokenize (node-llama-cpp aborts without)", tok.path()),
                     "retrain it with `lmx data tokenizer CONFIG --vocab N --byte-fallback` (then the model)");
  v.bos = tok.bos(), v.eos = tok.eos(), v.pad = tok.pad(), v.unk = tok.unk();
  return v;
}

// Bytes 0..255 then the specials. Printable ASCII as itself (space as SentencePiece's ▁, which
// llama.cpp's tokenizer writes for it), the other bytes as byte pieces: llama.cpp then splits
// any text into exactly lmx's byte ids.
GgufVocab byte_vocab(const data::Vocab& vocab) {
  GgufVocab v;
  v.model = "llama";
  for (int b = 0; b < 256; ++b) {
    const bool printable = b > 0x20 && b < 0x7f;
    v.tokens.push_back(b == 0x20 ? "\xe2\x96\x81" : printable ? std::string(1, static_cast<char>(b))
                                                             : fmt::format("<0x{:02X}>", b));
    v.types.push_back(b == 0x20 || printable ? kNormal : kByte);
  }
  for (int i = 256; i < vocab.size(); ++i) {
    v.tokens.push_back(vocab.words[i]);
    v.types.push_back(kControl);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  return v;
}

}  // namespace

GgufVocab gguf_vocab(const data::Vocab& vocab) {
  GgufVocab v;
  if (vocab.tokenizer) {
    v = sentencepiece_vocab(*vocab.tokenizer);
  } else if (vocab.bytes) {
    v = byte_vocab(vocab);
  } else {  // garden: words, usable by id ("gpt2" without merges: llama.cpp does not split text into them)
    v.model = "gpt2";
    v.tokens = vocab.words;
    for (int i = 0; i < vocab.size(); ++i)
      v.types.push_back(i == vocab.bos || i == vocab.eos || i == vocab.pad ? kControl : kNormal);
  }
  v.bos = vocab.bos, v.eos = vocab.eos, v.pad = vocab.pad;
  return v;
}

}  // namespace lmx
