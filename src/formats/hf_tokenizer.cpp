// The tokenizer of a Hugging Face folder (formats/hf_llama.h): tokenizer.json (Hugging Face
// tokenizers' format), tokenizer_config.json, special_tokens_map.json; tokenizer.model too for
// SentencePiece (LlamaTokenizer). Garden: WordLevel over the words, split at whitespace.
// SentencePiece: what transformers' LlamaConverter builds from tokenizer.model, without the
// dummy prefix lmx trains without: spaces to ▁, then BPE (merges from the pieces, ranked by the
// merged piece's id = its score) or Unigram (pieces and scores), byte fallback, and the decoder
// back. Bytes: BPE without merges over GPT-2's byte-to-character alphabet (ByteLevel pre-tokenizer
// and decoder), each character mapped to its byte's id.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/tokenizer.h"
#include "formats/gguf.h"
#include "formats/hf_llama.h"
#include "util/csv.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

using Json = nlohmann::ordered_json;

const char* const kSpace = "\xe2\x96\x81";  // ▁

Json added_token(int id, const std::string& content) {
  return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},   {"normalized", false}, {"special", true}};
}

// <bos> $A (the documents lmx trains on start with <bos>; add_special_tokens=false leaves it out).
Json bos_template(const std::string& bos, int bos_id) {
  const Json b = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
  return {{"type", "TemplateProcessing"},
          {"single", {b, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair", {b, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, b, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
          {"special_tokens", {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}}}};
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for 256 + n.
std::string byte_char(int b) {
  const auto printable = [](int c) { return (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174; };
  int code = b;
  if (!printable(b)) {
    code = 256;
    for (int c = 0; c < b; ++c) code += !printable(c);
  }
  if (code < 0x80) return std::string(1, static_cast<char>(code));
  return {static_cast<char>(0xc0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3f))};  // UTF-8, < 0x800
}

Json byte_model(const data::Vocab& v) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  for (int i = 256; i < v.size(); ++i) vocab[v.words[i]] = i;
  return {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", Json::array()}};
}

Json garden_model(const data::Vocab& v) {
  Json vocab = Json::object();
  for (int i = 0; i < v.size(); ++i) vocab[v.words[i]] = i;
  return {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};  // no <unk>: unknown words are errors
}

// BPE merges: every split of a normal piece into two pieces, ranked by the merged piece's id.
Json bpe_merges(const GgufVocab& g, const std::map<std::string, int>& ids) {
  std::vector<std::tuple<int, int, int, std::string, std::string>> merges;
  for (size_t id = 0; id < g.tokens.size(); ++id) {
    const std::string& p = g.tokens[id];
    if (g.types[id] != 1) continue;
    for (size_t i = 1; i < p.size(); ++i) {
      if ((static_cast<unsigned char>(p[i]) & 0xc0) == 0x80) continue;  // inside a UTF-8 character
      auto l = ids.find(p.substr(0, i)), r = ids.find(p.substr(i));
      if (l == ids.end() || r == ids.end() || g.types[l->second] != 1 || g.types[r->second] != 1) continue;
      merges.emplace_back(static_cast<int>(id), l->second, r->second, l->first, r->first);
    }
  }
  std::sort(merges.begin(), merges.end());
  Json out = Json::array();
  for (const auto& m : merges) out.push_back({std::get<3>(m), std::get<4>(m)});
  return out;
}

Json spm_model(const GgufVocab& g) {
  if (g.spm_type == "bpe") {
    std::map<std::string, int> ids;
    Json vocab = Json::object();
    for (size_t i = 0; i < g.tokens.size(); ++i) ids[g.tokens[i]] = static_cast<int>(i), vocab[g.tokens[i]] = i;
    return {{"type", "BPE"},           {"dropout", nullptr},      {"unk_token", g.tokens.at(g.unk)},
            {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", true},
            {"byte_fallback", true},   {"ignore_merges", false},  {"vocab", vocab},
            {"merges", bpe_merges(g, ids)}};
  }
  Json vocab = Json::array();
  for (size_t i = 0; i < g.tokens.size(); ++i) vocab.push_back({g.tokens[i], g.scores[i]});
  return {{"type", "Unigram"}, {"unk_id", g.unk}, {"vocab", vocab}, {"byte_fallback", true}};
}

Json spm_decoder() {
  return {{"type", "Sequence"},
          {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                        {{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}};
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_json(const fs::path& path, const Json& j) { write_file_atomic(path.string(), j.dump(2) + "\n"); }

}  // namespace

void write_hf_tokenizer(const data::Vocab& v, const std::string& dir, int max_len) {
  const fs::path d(dir);
  const std::string bos = v.words.at(v.bos), eos = v.words.at(v.eos), pad = v.words.at(v.pad);
  Json tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", Json::array()},
              {"normalizer", nullptr}, {"pre_tokenizer", nullptr}, {"post_processor", bos_template(bos, v.bos)},
              {"decoder", nullptr}, {"model", nullptr}};
  Json cfg = {{"tokenizer_class", "PreTrainedTokenizerFast"}, {"add_bos_token", true}, {"add_eos_token", false},
              {"bos_token", bos}, {"eos_token", eos}, {"pad_token", pad}, {"model_max_length", max_len},
              {"clean_up_tokenization_spaces", false}};
  if (!v.tokenizer)
    for (int id : {v.pad, v.bos, v.eos}) tok["added_tokens"].push_back(added_token(id, v.words.at(id)));
  if (v.tokenizer) {
    const GgufVocab g = gguf_vocab(v);
    for (size_t i = 0; i < g.tokens.size(); ++i)
      if (g.types[i] == 2 || g.types[i] == 3) tok["added_tokens"].push_back(added_token(static_cast<int>(i), g.tokens[i]));
    tok["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}};
    tok["decoder"] = spm_decoder();
    tok["model"] = spm_model(g);
    cfg["tokenizer_class"] = "LlamaTokenizerFast";
    cfg["unk_token"] = g.tokens.at(g.unk);
    cfg["legacy"] = true;  // no ▁ added after special tokens
    cfg["add_prefix_space"] = false;
    write_file_atomic((d / "tokenizer.model").string(), read_all(v.tokenizer->path()));
  } else if (v.bytes) {
    const Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                             {"use_regex", false}};
    tok["pre_tokenizer"] = tok["decoder"] = byte_level;
    tok["model"] = byte_model(v);
  } else {  // garden; no decoder: tokens joined by spaces
    tok["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
    tok["model"] = garden_model(v);
  }
  write_json(d / "tokenizer.json", tok);
  write_json(d / "tokenizer_config.json", cfg);
  write_json(d / "special_tokens_map.json", {{"bos_token", bos}, {"eos_token", eos}, {"pad_token", pad}});
}

}  // namespace lmx
