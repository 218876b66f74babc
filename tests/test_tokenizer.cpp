// Subword tokenizers (data/tokenizer.h): `lmx data tokenizer` trains SentencePiece BPE / unigram
// on the training split of text the test generates; the corpus, training, checkpoints, eval
// and generate use it; a missing, corrupt or changed model file is a one-line exit 2.
#include "catch.h"

#include <filesystem>
#include <random>
#include <regex>

#include "config/config.h"
#include "data/corpus.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;

namespace {

// ~40 KB of sentences over a small word list (a few with UTF-8 letters), seeded.
std::string generated_text() {
  const std::vector<std::string> words = {"the", "garden", "gardener", "waters", "a", "rose", "roses", "tulip",
                                          "every", "morning", "café", "naïve", "bee", "visits", "yellow", "red"};
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < 40000) {
    const int n = 4 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) text += (i ? " " : "") + words[rng() % words.size()];
    text += rng() % 3 ? ". " : ".\n";
  }
  return text;
}

struct TextSetup {
  TempDir dir;
  std::string config;
  TextSetup(const std::string& tokenizer = "sentencepiece") {
    dir.write("corpus.txt", generated_text());
    config = dir.write("own.yaml", "extends: " + lmx::test::source_path("configs/llama.yaml") +
                                       "\nmodel:\n  d_model: 32\n  n_layers: 1\n"
                                       "data:\n  kind: text\n  text_path: corpus.txt\n  text_doc_len: 128\n"
                                       "  layout: packed\n  seq_len: 32\n  tokenizer: " + tokenizer + "\n");
  }
  std::string model() const { return dir.file("own.tokenizer.model"); }
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

TEST_CASE("lmx data tokenizer trains BPE and unigram beside the config, encode and decode are exact",
          "[data][tokenizer]") {
  TextSetup s;
  const std::string type = GENERATE(std::string("bpe"), std::string("unigram"));
  auto r = lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 100 --type " + type);
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(std::filesystem::exists(s.model()));
  auto tok = data::Tokenizer::load(s.model());
  CHECK(tok->size() == 100);
  CHECK(tok->hash() == data::file_hash(s.model()));
  CHECK(tok->hash().size() == 16);

  Config cfg = load_config(s.config);
  CHECK(cfg.data.tokenizer_model == s.model());
  data::Corpus c = data::load_corpus(cfg.data);
  CHECK(c.vocab.size() == 100);
  CHECK(c.vocab.bos == tok->bos());
  CHECK(c.vocab.eos == tok->eos());
  CHECK(c.vocab.pad == tok->pad());
  // the documents decode to the text they were cut from (every character was in the training split)
  const std::string text = generated_text();
  std::string joined;
  int64_t tokens = 0;
  for (const auto* split : {&c.train, &c.val, &c.test})
    for (const auto& doc : *split) {
      REQUIRE(doc.front() == c.vocab.bos);
      REQUIRE(doc.back() == c.vocab.eos);
      for (int32_t id : doc) REQUIRE((id >= 0 && id < 100));
      tokens += static_cast<int64_t>(doc.size()) - 2;
      CHECK(text.find(c.vocab.decode(data::Doc(doc.begin() + 1, doc.end() - 1))) != std::string::npos);
    }
  const std::string sample = "the gardener waters every rose. café naïve.\n";
  CHECK(c.vocab.decode(c.vocab.encode(sample)) == sample);
  // subwords: fewer tokens than bytes (measured here, shown by data stats)
  CHECK(static_cast<double>(tokens) / static_cast<double>(text.size()) < 0.6);
  auto stats = lmx::test::run_lmx("-q data stats " + s.config);
  REQUIRE(stats.code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(stats.output, m, std::regex("tokens per byte: train ([0-9.]+)")));
  CHECK(std::stod(m[1]) < 0.6);
  CHECK(std::stod(m[1]) > 0.05);
}

TEST_CASE("the byte tokenizer's corpus is unchanged, and data stats says 1 token per byte", "[data][tokenizer]") {
  TextSetup s("bytes");
  auto stats = lmx::test::run_lmx("-q data stats " + s.config);
  REQUIRE(stats.code == 0);
  CHECK_THAT(stats.output, Catch::Contains("tokens per byte: train 1.0000 val 1.0000 test 1.0000"));
  // training a tokenizer for a bytes config still writes the default file beside it
  auto r = lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 100");
  CHECK(r.code == 0);
  CHECK(std::filesystem::exists(s.model()));
}

TEST_CASE("train, eval and generate use the run's tokenizer copy, and a missing, corrupt or changed file is exit 2",
          "[data][tokenizer][cli]") {
  TextSetup s;
  // no model yet: one line naming the file
  auto missing = lmx::test::run_lmx("-q data stats " + s.config);
  CHECK(missing.code == 2);
  CHECK_THAT(first_line(missing.output), Catch::Contains(s.model()) && Catch::Contains("not found"));
  REQUIRE(lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 100").code == 0);
  auto trained = lmx::test::run_lmx("-q train " + s.config + " --set train.steps=3 --out " + s.dir.file("run"));
  INFO(trained.output);
  REQUIRE(trained.code == 0);
  const std::string ck = s.dir.file("run/seed0/model.safetensors");
  Checkpoint c = read_checkpoint(ck);
  CHECK(c.metadata.at("tokenizer") == s.model());
  CHECK(c.metadata.at("tokenizer_hash") == data::file_hash(s.model()));
  CHECK(c.config.model.vocab_size == 100);
  // the run holds its own copy, and reading the checkpoint takes it
  const std::string copy = s.dir.file("run/seed0/tokenizer.model");
  REQUIRE(std::filesystem::exists(copy));
  CHECK(data::file_hash(copy) == data::file_hash(s.model()));
  CHECK(c.config.data.tokenizer_model == copy);
  auto eval = lmx::test::run_lmx("-q eval " + ck);
  CHECK(eval.code == 0);
  auto gen = lmx::test::run_lmx("-q generate " + ck + " --prompt \"the gardener\" --max-new 5 --temperature 0");
  INFO(gen.output);
  CHECK(gen.code == 0);
  CHECK_THAT(gen.output, Catch::StartsWith("the gardener | "));

  // the config's model retrained with another vocabulary: the run keeps working with its copy
  REQUIRE(lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 90").code == 0);
  CHECK(lmx::test::run_lmx("-q eval " + ck).code == 0);
  // a copy that is not the file the run trained with
  s.dir.write("run/seed0/tokenizer.model", lmx::test::read_file(s.model()));
  auto tampered = lmx::test::run_lmx("-q eval " + ck);
  CHECK(tampered.code == 2);
  CHECK_THAT(first_line(tampered.output), Catch::Contains(copy) && Catch::Contains("is not the one the checkpoint"));
  // without its copy the checkpoint reads the config's file, which has changed
  std::filesystem::remove(copy);
  auto changed = lmx::test::run_lmx("-q eval " + ck);
  CHECK(changed.code == 2);
  CHECK_THAT(first_line(changed.output), Catch::Contains("has changed since the checkpoint"));
  // not a SentencePiece model
  s.dir.write("own.tokenizer.model", "this is not a model");
  auto corrupt = lmx::test::run_lmx("-q eval " + ck);
  CHECK(corrupt.code == 2);
  CHECK_THAT(first_line(corrupt.output), Catch::Contains("not a SentencePiece model"));
  std::filesystem::remove(s.model());
  auto gone = lmx::test::run_lmx("-q generate " + ck);
  CHECK(gone.code == 2);
  CHECK_THAT(first_line(gone.output), Catch::Contains("not found"));
  // a garden config cannot take a subword tokenizer; --vocab is required
  auto garden = lmx::test::run_lmx("-q data stats configs/textbook.yaml --set data.tokenizer=sentencepiece");
  CHECK(garden.code == 2);
  CHECK_THAT(garden.output, Catch::Contains("data.tokenizer"));
  CHECK(lmx::test::run_lmx("-q data tokenizer " + s.config).code == 2);
  // too few pieces for the text's characters: the hint says which way to go
  auto tiny = lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 8");
  CHECK(tiny.code == 2);
  CHECK_THAT(tiny.output, Catch::Contains("hint: a larger --vocab"));
}

TEST_CASE("a run folder travels: moved, its checkpoints eval, generate, export and uptrain from anywhere",
          "[data][tokenizer][cli]") {
  namespace fs = std::filesystem;
  TextSetup s;
  // byte pieces: the exports (llama.cpp, HF) need them
  REQUIRE(lmx::test::run_lmx("-q data tokenizer " + s.config + " --vocab 300 --byte-fallback").code == 0);
  // trained from the config's folder with relative paths, as a user does
  auto trained = lmx::test::run_lmx("-q train own.yaml --set train.steps=3 --set model.n_kv_heads=4 --out run",
                                    s.dir.path.string());
  INFO(trained.output);
  REQUIRE(trained.code == 0);
  // the run moves to another folder; the config's tokenizer model is gone
  TempDir elsewhere;
  fs::rename(s.dir.file("run"), elsewhere.file("moved"));
  fs::remove(s.model());
  const std::string ck = elsewhere.file("moved/seed0/model.safetensors");
  TempDir cwd;  // and the commands run from a third folder
  auto eval = lmx::test::run_lmx("-q eval " + ck, cwd.path.string());
  INFO(eval.output);
  CHECK(eval.code == 0);
  auto gen = lmx::test::run_lmx("generate " + ck + " --prompt \"the gardener\" --max-new 12 --temperature 0 --ignore-eos",
                                cwd.path.string());
  INFO(gen.output);
  CHECK(gen.code == 0);
  CHECK_THAT(gen.output, Catch::Contains("[generate] 11 tokens after the first"));  // <eos> did not stop it
  auto hf = lmx::test::run_lmx("-q export " + ck + " --hf hf --gguf m.gguf", cwd.path.string());
  INFO(hf.output);
  CHECK(hf.code == 0);
  CHECK(fs::exists(cwd.file("hf/tokenizer.json")));
  CHECK(fs::exists(cwd.file("m.gguf")));
  auto up = lmx::test::run_lmx("-q uptrain " + ck + " --kv-heads 1 --init mean --steps 2 --no-scratch --out up",
                               cwd.path.string());
  INFO(up.output);
  CHECK(up.code == 0);
  // the converted checkpoint carries the tokenizer too
  CHECK(fs::exists(cwd.file("up/kv1-mean-s0/tokenizer.model")));
  CHECK(lmx::test::run_lmx("-q eval up/kv1-mean-s0/converted.safetensors", cwd.path.string()).code == 0);
}
