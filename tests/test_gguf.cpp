// GGUF export (formats/gguf.h): the file read back by a minimal GGUF reader written here from
// ggml's gguf.md (header, metadata types, tensor infos, alignment, data offsets), the Q/K
// permutation against a naive reference and against RoPE itself, refusals, atomic writes, and
// the vocabularies (garden words; SentencePiece pieces, scores and types) through the CLI.
// llama.cpp itself runs the files in scripts/interop/check.sh.
#include "catch.h"
#include "torch_api.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "formats/checkpoint.h"
#include "formats/gguf.h"
#include "formats/hf_llama.h"
#include "helpers.h"
#include "llama_config.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;

namespace {

// ---- a minimal GGUF reader, independent of the writer ----
struct GgufTensor {
  std::vector<uint64_t> dims;  // fastest-first, as stored
  uint32_t type = 0;
  uint64_t offset = 0;
};

struct Gguf {
  uint32_t version = 0;
  std::map<std::string, std::pair<uint32_t, nlohmann::json>> kv;  // key -> (gguf type, value)
  std::vector<std::pair<std::string, GgufTensor>> tensors;
  uint64_t data_start = 0;
  std::string bytes;

  const nlohmann::json& at(const std::string& key) const { return kv.at(key).second; }
  const GgufTensor& tensor(const std::string& name) const {
    for (const auto& [n, t] : tensors)
      if (n == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  torch::Tensor f32(const std::string& name) const {  // (dims reversed = row-major shape)
    const GgufTensor& t = tensor(name);
    std::vector<int64_t> shape(t.dims.rbegin(), t.dims.rend());
    auto out = torch::empty(shape, torch::kFloat32);
    std::memcpy(out.data_ptr(), bytes.data() + data_start + t.offset, out.nbytes());
    return out;
  }
};

struct GgufCursor {
  const std::string& s;
  size_t pos = 0;
  template <class T>
  T get() {
    REQUIRE(pos + sizeof(T) <= s.size());
    T v;
    std::memcpy(&v, s.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = get<uint64_t>();
    REQUIRE(pos + n <= s.size());
    pos += n;
    return s.substr(pos - n, n);
  }
  nlohmann::json value(uint32_t type) {
    switch (type) {
      case 0: return get<uint8_t>();
      case 1: return get<int8_t>();
      case 2: return get<uint16_t>();
      case 3: return get<int16_t>();
      case 4: return get<uint32_t>();
      case 5: return get<int32_t>();
      case 6: return get<float>();
      case 7: return get<uint8_t>() != 0;
      case 8: return str();
      case 10: return get<uint64_t>();
      case 11: return get<int64_t>();
      case 12: return get<double>();
      case 9: {
        const auto elem = get<uint32_t>();
        const auto n = get<uint64_t>();
        nlohmann::json a = nlohmann::json::array();
        for (uint64_t i = 0; i < n; ++i) a.push_back(value(elem));
        return a;
      }
    }
    FAIL("unknown GGUF value type " << type);
    return {};
  }
};

Gguf read_gguf(const std::string& path) {
  Gguf g;
  g.bytes = lmx::test::read_file(path);
  GgufCursor c{g.bytes};
  REQUIRE(g.bytes.substr(0, 4) == "GGUF");
  c.pos = 4;
  g.version = c.get<uint32_t>();
  const auto n_tensors = c.get<uint64_t>(), n_kv = c.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = c.str();
    const auto type = c.get<uint32_t>();
    g.kv[key] = {type, c.value(type)};
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const std::string name = c.str();
    GgufTensor t;
    const auto n_dims = c.get<uint32_t>();
    for (uint32_t d = 0; d < n_dims; ++d) t.dims.push_back(c.get<uint64_t>());
    t.type = c.get<uint32_t>();
    t.offset = c.get<uint64_t>();
    g.tensors.push_back({name, t});
  }
  const uint64_t align = g.kv.count("general.alignment") ? g.at("general.alignment").get<uint64_t>() : 32;
  g.data_start = (c.pos + align - 1) / align * align;
  return g;
}

Checkpoint gguf_checkpoint(const TempDir& dir, const ModelConfig& m) {
  Config cfg;
  cfg.model = m;
  torch::manual_seed(5);
  ModernLM model(m);
  save_checkpoint(dir.file("ck.safetensors"), model, cfg);
  return read_checkpoint(dir.file("ck.safetensors"));
}

GgufVocab gguf_words(int n) {
  GgufVocab v;
  v.model = "gpt2";
  for (int i = 0; i < n; ++i) v.tokens.push_back("w" + std::to_string(i)), v.types.push_back(i < 3 ? 3 : 1);
  v.pad = 0, v.bos = 1, v.eos = 2;
  return v;
}

torch::Tensor gguf_param(const Checkpoint& ck, const std::string& name) {
  for (const auto& [n, t] : ck.tensors)
    if (n == name) return t;
  FAIL(name);
  return {};
}

// x rotated by RoPE at position pos: pairs (i, i + D/2) (half) or (2i, 2i + 1) (interleaved).
torch::Tensor naive_rope(const torch::Tensor& x, int64_t pos, bool half) {
  const int64_t D = x.size(-1);
  auto out = x.clone();
  for (int64_t i = 0; i < D / 2; ++i) {
    const double a = pos * std::pow(10000.0, -2.0 * i / D);
    const int64_t p = half ? i : 2 * i, q = half ? i + D / 2 : 2 * i + 1;
    out.select(-1, p) = x.select(-1, p) * std::cos(a) - x.select(-1, q) * std::sin(a);
    out.select(-1, q) = x.select(-1, p) * std::sin(a) + x.select(-1, q) * std::cos(a);
  }
  return out;
}

}  // namespace

TEST_CASE("half_to_interleaved is convert_hf_to_gguf's permute, and RoPE scores stay the same", "[model][gguf]") {
  const int64_t D = 8, H = 3, C = 5;
  torch::manual_seed(1);
  const auto w = torch::randn({H * D, C}, torch::kFloat64);
  const auto p = half_to_interleaved(w, D);
  for (int64_t r = 0; r < H * D; ++r) {  // naive: row 2i <- i, row 2i+1 <- i + D/2, per head
    const int64_t h = r / D, j = r % D;
    const int64_t src = h * D + (j % 2 ? j / 2 + D / 2 : j / 2);
    CHECK(torch::equal(p[r], w[src]));
  }
  // q·k after RoPE: half-layout weights with half RoPE == permuted weights with adjacent-pair RoPE
  const auto x = torch::randn({C}, torch::kFloat64), y = torch::randn({C}, torch::kFloat64);
  const auto wk = torch::randn({D, C}, torch::kFloat64);
  const auto q = w.slice(0, 0, D).matmul(x), k = wk.matmul(y);
  const auto qi = half_to_interleaved(w, D).slice(0, 0, D).matmul(x), ki = half_to_interleaved(wk, D).matmul(y);
  for (int64_t pos : {0, 3, 17}) {
    const double half = naive_rope(q, pos, true).dot(naive_rope(k, 0, true)).item<double>();
    const double inter = naive_rope(qi, pos, false).dot(naive_rope(ki, 0, false)).item<double>();
    CHECK(half == Approx(inter).epsilon(1e-12));
  }
}

TEST_CASE("export_gguf writes GGUF v3 that a minimal reader parses back exactly", "[model][gguf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  const bool tied = GENERATE(false, true);
  m.tie_embeddings = tied;
  const Checkpoint ck = gguf_checkpoint(dir, m);
  export_gguf(ck, gguf_words(17), dir.file("m.gguf"));  // 17 words: padded to 19 with unused entries
  const Gguf g = read_gguf(dir.file("m.gguf"));
  CHECK(g.version == 3);
  CHECK(g.kv.at("general.alignment").first == 4);  // u32
  CHECK(g.at("general.alignment") == 32);
  CHECK(g.at("general.architecture") == "llama");
  CHECK(g.at("llama.embedding_length") == 24);
  CHECK(g.at("llama.feed_forward_length") == 40);
  CHECK(g.at("llama.block_count") == 2);
  CHECK(g.at("llama.attention.head_count") == 4);
  CHECK(g.at("llama.attention.head_count_kv") == 2);
  CHECK(g.at("llama.context_length") == 64);
  CHECK(g.at("llama.rope.freq_base").get<double>() == 10000.0);
  CHECK(g.at("llama.attention.layer_norm_rms_epsilon").get<double>() == Approx(1e-5).epsilon(1e-6));
  CHECK(g.kv.at("llama.rope.freq_base").first == 6);  // f32
  CHECK(g.at("tokenizer.ggml.model") == "gpt2");
  CHECK(g.at("tokenizer.ggml.merges").empty());
  REQUIRE(g.at("tokenizer.ggml.tokens").size() == 19);
  CHECK(g.at("tokenizer.ggml.tokens")[3] == "w3");
  CHECK(g.at("tokenizer.ggml.token_type")[18] == 5);
  CHECK(g.at("tokenizer.ggml.bos_token_id") == 1);
  CHECK(g.tensors.size() == (tied ? 2u : 3u) + 2u * 9u);
  for (const auto& [name, t] : g.tensors) {
    INFO(name);
    CHECK(t.offset % 32 == 0);
    CHECK(t.type == 0);  // F32
  }
  CHECK(g.tensor("token_embd.weight").dims == std::vector<uint64_t>{24, 19});  // fastest-first
  CHECK(g.tensor("blk.1.attn_k.weight").dims == std::vector<uint64_t>{24, 12});
  CHECK(torch::equal(g.f32("token_embd.weight"), gguf_param(ck, "model.embed_tokens.weight")));
  CHECK(torch::equal(g.f32("blk.1.ffn_down.weight"), gguf_param(ck, "model.layers.1.mlp.down_proj.weight")));
  CHECK(torch::equal(g.f32("blk.0.attn_q.weight"), half_to_interleaved(gguf_param(ck, "model.layers.0.self_attn.q_proj.weight"), 6)));
  CHECK(torch::equal(g.f32("blk.0.attn_k.weight"), half_to_interleaved(gguf_param(ck, "model.layers.0.self_attn.k_proj.weight"), 6)));
  CHECK(torch::equal(g.f32("blk.0.attn_v.weight"), gguf_param(ck, "model.layers.0.self_attn.v_proj.weight")));
  const auto last = g.tensors.back().second;
  CHECK(g.data_start + last.offset + 4 * last.dims[0] * (last.dims.size() > 1 ? last.dims[1] : 1) <= g.bytes.size());
  SECTION("embed_scale sqrt_d: token_embd scaled, output the unscaled head, tied or not") {
    m.embed_scale = EmbedScale::SqrtD;
    const Checkpoint cs = gguf_checkpoint(dir, m);
    export_gguf(cs, gguf_words(19), dir.file("s.gguf"));
    const Gguf gs = read_gguf(dir.file("s.gguf"));
    CHECK(gs.tensors.size() == 3u + 2u * 9u);
    const torch::Tensor E = gguf_param(cs, "model.embed_tokens.weight");
    CHECK(torch::equal(gs.f32("token_embd.weight"), E * std::sqrt(24.0)));
    CHECK(torch::equal(gs.f32("output.weight"), tied ? E : gguf_param(cs, "lm_head.weight")));
  }
  SECTION("interleaved RoPE weights are written as they are; f16 halves the matrices, norms stay f32") {
    m.rope_layout = RopeLayout::Interleaved;
    const Checkpoint ci = gguf_checkpoint(dir, m);
    export_gguf(ci, gguf_words(19), dir.file("i.gguf"), "f16");
    const Gguf gi = read_gguf(dir.file("i.gguf"));
    CHECK(gi.tensor("blk.0.attn_q.weight").type == 1);
    CHECK(gi.tensor("blk.0.attn_norm.weight").type == 0);
    CHECK(gi.at("general.file_type") == 1);
  }
}

TEST_CASE("model.qk_norm exports as llama.cpp's qwen3: its keys, attn_q_norm / attn_k_norm, half-split RoPE rows",
          "[model][gguf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  m.qk_norm = true;
  m.rope_layout = GENERATE(RopeLayout::Half, RopeLayout::Interleaved);
  Checkpoint ck = gguf_checkpoint(dir, m);
  torch::manual_seed(9);
  for (auto& [name, t] : ck.tensors)  // gains other than ones: a permutation must show
    if (name.find("self_attn.q_norm") != std::string::npos || name.find("self_attn.k_norm") != std::string::npos)
      t = 1 + 0.3 * torch::randn_like(t);
  export_gguf(ck, gguf_words(19), dir.file("q.gguf"));
  const Gguf g = read_gguf(dir.file("q.gguf"));
  CHECK(g.at("general.architecture") == "qwen3");
  CHECK(g.at("qwen3.embedding_length") == 24);
  CHECK(g.at("qwen3.attention.head_count_kv") == 2);
  CHECK(g.at("qwen3.attention.key_length") == 6);
  CHECK(g.kv.count("llama.embedding_length") == 0);
  CHECK(g.tensors.size() == 3u + 2u * 11u);
  CHECK(g.tensor("blk.1.attn_q_norm.weight").dims == std::vector<uint64_t>{6});
  const bool half = m.rope_layout == RopeLayout::Half;
  auto layout = [&](const torch::Tensor& t) { return half ? t : to_half_layout(t, 6); };
  for (const char* n : {"q_proj", "k_proj", "q_norm", "k_norm"}) {
    INFO(n);
    const std::string gg = std::string("blk.0.attn_") + (n[0] == 'q' ? "q" : "k") + (n[2] == 'n' ? "_norm" : "") + ".weight";
    CHECK(torch::equal(g.f32(gg), layout(gguf_param(ck, std::string("model.layers.0.self_attn.") + n + ".weight"))));
  }
  CHECK_FALSE(torch::equal(to_half_layout(gguf_param(ck, "model.layers.0.self_attn.q_norm.weight"), 6),
                           gguf_param(ck, "model.layers.0.self_attn.q_norm.weight")));  // not vacuous
}

TEST_CASE("model.ffn moe exports as llama.cpp's Mixtral: expert counts, the experts stacked, the router",
          "[model][gguf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  m.ffn = "moe", m.moe_experts = 3, m.moe_top_k = 2;
  const Checkpoint ck = gguf_checkpoint(dir, m);
  export_gguf(ck, gguf_words(19), dir.file("x.gguf"));
  const Gguf g = read_gguf(dir.file("x.gguf"));
  CHECK(g.at("general.architecture") == "llama");
  CHECK(g.at("llama.expert_count") == 3);
  CHECK(g.at("llama.expert_used_count") == 2);
  const torch::Tensor gate1 = gguf_param(ck, "model.layers.1.mlp.experts.1.gate_proj.weight");  // (F, C)
  const int64_t F = gate1.size(0);
  CHECK(g.at("llama.feed_forward_length") == F);
  CHECK(g.tensors.size() == 3u + 2u * 10u);  // per layer: 2 norms, q/k/v/o, the router, 3 expert stacks
  CHECK(g.tensor("blk.1.ffn_gate_exps.weight").dims == std::vector<uint64_t>{24, static_cast<uint64_t>(F), 3});
  CHECK(g.tensor("blk.1.ffn_down_exps.weight").dims == std::vector<uint64_t>{static_cast<uint64_t>(F), 24, 3});
  for (const char* w : {"gate", "up", "down"})
    for (int64_t e = 0; e < 3; ++e) {
      INFO(w << " expert " << e);
      CHECK(torch::equal(g.f32(fmt::format("blk.1.ffn_{}_exps.weight", w))[e],
                         gguf_param(ck, fmt::format("model.layers.1.mlp.experts.{}.{}_proj.weight", e, w))));
    }
  CHECK(torch::equal(g.f32("blk.0.ffn_gate_inp.weight"), gguf_param(ck, "model.layers.0.mlp.router.weight")));
  // Shared experts (DeepSeek's) and an HF folder are refused, naming why
  ModelConfig shared = m;
  shared.moe_shared_experts = 1;
  CHECK_THAT(gguf_blocker(shared), Catch::Contains("moe_shared_experts is 1"));
  CHECK_THAT(hf_llama_blocker(m), Catch::Contains("GGUF only"));
}

TEST_CASE("export_gguf refuses what llama.cpp's llama cannot express, leaving the old file", "[model][gguf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  std::string component;
  SECTION("layernorm") { m.norm = "layernorm", component = "model.norm is layernorm"; }
  SECTION("biases") { m.bias = true, component = "model.bias is true"; }
  SECTION("gelu ffn") { m.ffn = "gelu", component = "model.ffn is gelu"; }
  SECTION("yarn") { m.rope_scaling = RopeScaling::Yarn, m.rope_factor = 2, component = "model.rope_scaling is yarn"; }
  const Checkpoint ck = gguf_checkpoint(dir, m);
  const std::string out = dir.write("old.gguf", "previous");
  CHECK_THROWS_AS(export_gguf(ck, gguf_words(19), out), InputError);
  CHECK_THROWS_WITH(export_gguf(ck, gguf_words(19), out), Catch::Contains(component) && Catch::Contains("GGUF"));
  CHECK(lmx::test::read_file(out) == "previous");
  CHECK_FALSE(std::filesystem::exists(out + ".tmp"));
  const Checkpoint ok = gguf_checkpoint(dir, lmx::test::small_llama());
  CHECK_THROWS_WITH(export_gguf(ok, gguf_words(20), out), Catch::Contains("20 tokens"));  // more words than rows
  CHECK_THROWS_WITH(export_gguf(ok, gguf_words(19), out, "q4"), Catch::Contains("--gguf-type"));
  CHECK(lmx::test::read_file(out) == "previous");
}

TEST_CASE("lmx export --gguf --hf: the garden words in both, the ids in config.json, refusals write nothing",
          "[model][gguf][cli]") {
  TempDir dir;
  const std::string tiny = "--set data.train_docs=200 --set data.val_docs=50 --set data.test_docs=50";
  REQUIRE(lmx::test::run_lmx("-q train configs/llama.yaml --set train.steps=2 " + tiny + " --out " + dir.file("g")).code == 0);
  const std::string ck = dir.file("g/seed0/model.safetensors");
  auto ex = lmx::test::run_lmx("-q export " + ck + " --gguf " + dir.file("g.gguf") + " --hf " + dir.file("hf"));
  INFO(ex.output);
  REQUIRE(ex.code == 0);
  const Gguf g = read_gguf(dir.file("g.gguf"));
  const auto tok = nlohmann::json::parse(lmx::test::read_file(dir.file("hf/tokenizer.json")));
  const auto& words = g.at("tokenizer.ggml.tokens");
  CHECK(g.at("tokenizer.ggml.model") == "gpt2");
  CHECK(words[0] == "<pad>");
  CHECK(words[1] == "<bos>");
  CHECK(words[2] == "<eos>");
  CHECK(tok["model"]["type"] == "WordLevel");
  REQUIRE(tok["model"]["vocab"].size() == words.size());
  for (size_t i = 0; i < words.size(); ++i) CHECK(tok["model"]["vocab"][words[i].get<std::string>()] == i);
  const auto cfg = nlohmann::json::parse(lmx::test::read_file(dir.file("hf/config.json")));
  CHECK(cfg["pad_token_id"] == 0);
  CHECK(cfg["bos_token_id"] == 1);
  CHECK(cfg["eos_token_id"] == 2);
  const auto gen = nlohmann::json::parse(lmx::test::read_file(dir.file("hf/generation_config.json")));
  CHECK(gen["eos_token_id"] == 2);
  CHECK(std::filesystem::exists(dir.file("hf/special_tokens_map.json")));
  CHECK(std::filesystem::exists(dir.file("hf/tokenizer_config.json")));
  // a textbook model (LayerNorm, biases): one line naming the component, exit 2, no file
  REQUIRE(lmx::test::run_lmx("-q train configs/textbook.yaml --set train.steps=1 " + tiny + " --out " + dir.file("t")).code == 0);
  auto no = lmx::test::run_lmx("-q export " + dir.file("t/seed0/model.safetensors") + " --gguf " + dir.file("t.gguf") +
                               " --hf " + dir.file("thf"));
  CHECK(no.code == 2);
  CHECK_THAT(no.output, Catch::StartsWith("lmx: error:") && Catch::Contains("model.norm is layernorm"));
  CHECK_FALSE(std::filesystem::exists(dir.file("t.gguf")));
  CHECK_FALSE(std::filesystem::exists(dir.file("thf")));
  auto full = lmx::test::run_lmx("-q export " + ck + " --gguf " + dir.file("x.gguf") + " --hf " + dir.file("hf"));
  CHECK(full.code == 2);  // --hf not empty: checked before the GGUF is written
  CHECK_FALSE(std::filesystem::exists(dir.file("x.gguf")));
}

TEST_CASE("lmx export --gguf carries a SentencePiece model's pieces, scores and types, refuses one without byte pieces",
          "[model][gguf][cli][tokenizer]") {
  TempDir dir;
  std::string text;
  for (int i = 0; text.size() < 20000; ++i) text += i % 7 ? "the rose visits a café. " : "every naïve bee waters.\n";
  dir.write("corpus.txt", text);
  const std::string config = dir.write(
      "spm.yaml", "extends: " + lmx::test::source_path("configs/llama.yaml") +
                      "\nmodel:\n  d_model: 32\n  n_layers: 1\ndata:\n  kind: text\n  text_path: corpus.txt\n"
                      "  text_doc_len: 128\n  layout: packed\n  seq_len: 32\n  tokenizer: sentencepiece\n");
  const bool bytes = GENERATE(true, false);
  auto t = lmx::test::run_lmx("-q data tokenizer " + config + (bytes ? " --vocab 300 --byte-fallback" : " --vocab 60"));
  INFO(t.output);
  REQUIRE(t.code == 0);
  REQUIRE(lmx::test::run_lmx("-q train " + config + " --set train.steps=1 --out " + dir.file("r")).code == 0);
  auto ex = lmx::test::run_lmx("-q export " + dir.file("r/seed0/model.safetensors") + " --gguf " + dir.file("s.gguf"));
  INFO(ex.output);
  if (!bytes) {
    CHECK(ex.code == 2);
    CHECK_THAT(ex.output, Catch::Contains("no byte pieces") && Catch::Contains("--byte-fallback"));
    CHECK_FALSE(std::filesystem::exists(dir.file("s.gguf")));
    return;
  }
  REQUIRE(ex.code == 0);
  const Gguf g = read_gguf(dir.file("s.gguf"));
  const auto tok = data::Tokenizer::load(dir.file("spm.tokenizer.model"));
  const auto& pieces = g.at("tokenizer.ggml.tokens");
  REQUIRE(static_cast<int>(pieces.size()) == tok->size());
  for (int i = 0; i < tok->size(); ++i) CHECK(pieces[i] == tok->piece(i));
  CHECK(g.at("tokenizer.ggml.model") == "llama");
  CHECK(g.at("tokenizer.ggml.add_space_prefix") == false);
  CHECK(g.at("tokenizer.ggml.token_type")[tok->bos()] == 3);                  // control
  CHECK(g.at("tokenizer.ggml.token_type")[tok->unk()] == 2);                  // unknown
  CHECK(pieces[4] == "<0x00>");                                               // bytes follow the specials
  CHECK(g.at("tokenizer.ggml.token_type")[4] == 6);
  CHECK(g.at("tokenizer.ggml.scores")[300 - 1].get<double>() < g.at("tokenizer.ggml.scores")[261].get<double>());
  CHECK(g.at("tokenizer.ggml.bos_token_id") == tok->bos());
  CHECK(g.at("tokenizer.ggml.padding_token_id") == tok->pad());
}

TEST_CASE("a byte vocabulary: llama.cpp pieces that split text into bytes, GPT-2's byte alphabet for HF",
          "[model][gguf][hf]") {
  const data::Vocab bytes = data::byte_vocab();
  const GgufVocab g = gguf_vocab(bytes);
  REQUIRE(g.tokens.size() == 259u);
  CHECK(g.model == "llama");
  CHECK(g.tokens[' '] == "\xe2\x96\x81");  // ▁, what llama.cpp's tokenizer writes for a space
  CHECK(g.tokens['A'] == "A");
  CHECK(g.types['A'] == 1);
  CHECK(g.tokens['\n'] == "<0x0A>");
  CHECK(g.types['\n'] == 6);
  CHECK(g.tokens[0xc3] == "<0xC3>");
  CHECK(g.tokens[257] == "<bos>");
  CHECK(g.types[257] == 3);
  CHECK(g.bos == 257);
  TempDir dir;
  write_hf_tokenizer(bytes, dir.path.string(), 64);
  const auto vocab = nlohmann::json::parse(lmx::test::read_file(dir.file("tokenizer.json")))["model"]["vocab"];
  REQUIRE(vocab.size() == 259u);
  // GPT-2's bytes_to_unicode (openai/gpt-2 encoder.py): printable Latin-1 as itself, the rest from U+0100 on
  CHECK(vocab["A"] == 'A');
  CHECK(vocab["\xc4\x80"] == 0);     // Ā U+0100
  CHECK(vocab["\xc4\x8a"] == '\n');  // Ċ U+010A
  CHECK(vocab["\xc4\xa0"] == ' ');   // Ġ U+0120
  CHECK(vocab["\xc4\xa1"] == 0x7f);  // ġ U+0121
  CHECK(vocab["\xc5\x83"] == 0xad);  // Ń U+0143
  CHECK(vocab["\xc3\xa9"] == 0xe9);  // é stands for itself
  CHECK(vocab["<eos>"] == 258);
}
