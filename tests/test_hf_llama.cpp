// Hugging Face Llama folders (formats/hf_llama.h): the forward of an HF folder against
// transformers' LlamaForCausalLM written in PyTorch (scripts/dev/make_fixtures.py), the round
// trip lmx -> HF -> lmx, refusals, and the verbs that take a folder.
#include "catch.h"
#include "torch_api.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "formats/checkpoint.h"
#include "formats/hf_llama.h"
#include "helpers.h"
#include "llama_config.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;

namespace {

// A checkpoint file of a freshly initialized model with this model config.
std::string write_checkpoint(const TempDir& dir, const ModelConfig& m, const std::string& name = "ck.safetensors") {
  Config cfg;
  cfg.model = m;
  torch::manual_seed(5);
  ModernLM model(m);
  {  // norms away from 1, so a swapped or dropped norm weight shows
    torch::NoGradGuard ng;
    for (auto& p : model->named_parameters())
      if (p.key().find("norm") != std::string::npos) p.value().uniform_(0.5, 1.5);
  }
  const std::string path = dir.file(name);
  save_checkpoint(path, model, cfg);
  return path;
}

torch::Tensor tensor(const Checkpoint& ck, const std::string& name) {
  for (const auto& [n, t] : ck.tensors)
    if (n == name) return t;
  FAIL(ck.path << " lacks " << name);
  return {};
}

torch::Tensor some_tokens(int64_t vocab) {
  torch::manual_seed(11);
  return torch::randint(vocab, {2, 12}, torch::kInt64);
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(lmx::test::read_file(path)); }

void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2); }

}  // namespace

TEST_CASE("an HF Llama folder gives transformers' logits (PyTorch fixture, rotate_half, linear scaling)",
          "[model][golden][hf]") {
  const std::string dir = lmx::test::source_path("tests/fixtures/hf_llama");
  Checkpoint ck = read_checkpoint(dir);
  const ModelConfig& m = ck.config.model;
  CHECK(m.n_kv_heads == 2);
  CHECK(m.rope_scaling == RopeScaling::Linear);
  CHECK(m.rope_factor == 2.0);
  CHECK(m.rope_theta == 500.0);
  CHECK(m.norm_eps == 1e-6);
  CHECK(m.d_ff == 24);
  auto expected = read_safetensors(dir + "/expected.safetensors").tensors;
  REQUIRE(expected.size() == 2);
  const torch::Tensor tokens = expected[0].second, logits = expected[1].second;
  torch::NoGradGuard no_grad;
  ModernLM model = load_model(ck);
  auto out = model->forward(tokens);
  REQUIRE(out.sizes() == logits.sizes());
  CHECK((out - logits).abs().max().item<double>() < 1e-5);
  KVCache cache;  // and token by token
  std::vector<torch::Tensor> steps;
  for (int64_t t = 0; t < tokens.size(1); ++t) steps.push_back(model->forward(tokens.slice(1, t, t + 1), &cache));
  CHECK((torch::cat(steps, 1) - logits).abs().max().item<double>() < 1e-5);
}

TEST_CASE("lmx -> HF Llama -> lmx keeps the weights, the config and the logits", "[model][hf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  SECTION("half layout, untied, linear scaling: bitwise") {
    m.rope_scaling = RopeScaling::Linear;
    m.rope_factor = 2.0;
    m.head_dim = 8;  // not d_model / n_heads: written as head_dim
    Checkpoint src = read_checkpoint(write_checkpoint(dir, m));
    export_hf_llama(src, dir.file("hf"));
    auto j = read_json(dir.file("hf/config.json"));
    CHECK(j["hidden_size"] == 24);
    CHECK(j["intermediate_size"] == 40);
    CHECK(j["num_attention_heads"] == 4);
    CHECK(j["num_key_value_heads"] == 2);
    CHECK(j["head_dim"] == 8);
    CHECK(j["num_hidden_layers"] == 2);
    CHECK(j["rope_scaling"]["factor"] == 2.0);
    CHECK(j["tie_word_embeddings"] == false);
    CHECK(j["max_position_embeddings"] == 64);
    auto file = read_safetensors(dir.file("hf/model.safetensors"));
    CHECK(file.metadata.count("lmx_config") == 0);  // a plain HF state dict
    CHECK(file.tensors.size() == src.tensors.size());
    Checkpoint back = read_checkpoint(dir.file("hf"));
    CHECK(back.config == src.config);
    for (const auto& [name, t] : src.tensors) CHECK(torch::equal(tensor(back, name), t));
  }
  SECTION("interleaved layout, tied head, ntk scaling: the same function") {
    m.rope_layout = RopeLayout::Interleaved;
    m.tie_embeddings = true;
    m.rope_scaling = RopeScaling::Ntk;
    m.rope_factor = 4.0;
    Checkpoint src = read_checkpoint(write_checkpoint(dir, m));
    export_hf_llama(src, dir.file("hf"));
    auto j = read_json(dir.file("hf/config.json"));
    CHECK(j["rope_scaling"].is_null());
    CHECK(j["rope_theta"].get<double>() == Approx(10000.0 * std::pow(4.0, 6.0 / 4.0)));  // θ·s^(D/(D−2)), D = 6
    CHECK(j["tie_word_embeddings"] == true);
    Checkpoint back = read_checkpoint(dir.file("hf"));
    CHECK(back.config.model.rope_layout == RopeLayout::Half);
    CHECK_FALSE(torch::equal(tensor(back, "model.layers.0.self_attn.q_proj.weight"),
                             tensor(src, "model.layers.0.self_attn.q_proj.weight")));  // permuted rows
    torch::NoGradGuard no_grad;
    auto tokens = some_tokens(m.vocab_size);
    auto a = load_model(src)->forward(tokens), b = load_model(back)->forward(tokens);
    CHECK((a - b).abs().max().item<double>() < 1e-5);
  }
}

TEST_CASE("model.qk_norm exports as Qwen 3 (Qwen3ForCausalLM, q_norm / k_norm) and reads back", "[model][hf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();
  m.qk_norm = true;
  m.rope_layout = GENERATE(RopeLayout::Half, RopeLayout::Interleaved);
  Checkpoint src = read_checkpoint(write_checkpoint(dir, m));
  torch::manual_seed(9);
  for (auto& [name, t] : src.tensors)  // gains other than the initial ones: a permutation must show
    if (name.find("_norm.weight") != std::string::npos && name.find("self_attn") != std::string::npos)
      t = 1 + 0.3 * torch::randn_like(t);
  CHECK(hf_family(m).qk_norm);
  export_hf_llama(src, dir.file("hf"));
  auto j = read_json(dir.file("hf/config.json"));
  CHECK(j["model_type"] == "qwen3");
  CHECK(j["architectures"][0] == "Qwen3ForCausalLM");
  CHECK(j["use_sliding_window"] == false);
  Checkpoint back = read_checkpoint(dir.file("hf"));
  CHECK(back.config.model.qk_norm);
  CHECK(back.config.model.rope_layout == RopeLayout::Half);
  const std::string qn = "model.layers.1.self_attn.q_norm.weight";
  if (m.rope_layout == RopeLayout::Half) {
    for (const auto& [name, t] : src.tensors) CHECK(torch::equal(tensor(back, name), t));
  } else {  // each head's q_norm gains in the half layout's order, as its q rows
    CHECK(torch::equal(tensor(back, qn), to_half_layout(tensor(src, qn), m.dim_head())));
    CHECK_FALSE(torch::equal(tensor(back, qn), tensor(src, qn)));
  }
  torch::NoGradGuard no_grad;
  auto tokens = some_tokens(m.vocab_size);
  auto a = load_model(src)->forward(tokens), b = load_model(back)->forward(tokens);
  CHECK((a - b).abs().max().item<double>() < 1e-5);
}

TEST_CASE("embed_scale sqrt_d exports as a Llama: the scale folded into the embedding, the head its own matrix",
          "[model][hf]") {
  TempDir dir;
  ModelConfig m = lmx::test::small_llama();  // d_model 24: √24 is not a power of two
  m.embed_scale = EmbedScale::SqrtD;
  m.tie_embeddings = GENERATE(true, false);
  Checkpoint src = read_checkpoint(write_checkpoint(dir, m));
  export_hf_llama(src, dir.file("hf"));
  auto j = read_json(dir.file("hf/config.json"));
  CHECK(j["tie_word_embeddings"] == false);
  auto file = read_safetensors(dir.file("hf/model.safetensors"));
  CHECK(file.tensors.size() == src.tensors.size() + (m.tie_embeddings ? 1 : 0));
  const torch::Tensor E = tensor(src, "model.embed_tokens.weight");
  const torch::Tensor H = m.tie_embeddings ? E : tensor(src, "lm_head.weight");
  Checkpoint back = read_checkpoint(dir.file("hf"));
  CHECK(back.config.model.embed_scale == EmbedScale::One);
  CHECK_FALSE(back.config.model.tie_embeddings);
  CHECK(torch::equal(tensor(back, "model.embed_tokens.weight"), E * std::sqrt(24.0)));
  CHECK(torch::equal(tensor(back, "lm_head.weight"), H));
  torch::NoGradGuard no_grad;
  auto tokens = some_tokens(m.vocab_size);
  auto a = load_model(src)->forward(tokens), b = load_model(back)->forward(tokens);
  CHECK((a - b).abs().max().item<double>() < 1e-5);
}

TEST_CASE("export refuses what LlamaForCausalLM cannot express, naming the component", "[model][hf]") {
  TempDir dir;
  auto blocked = [](auto edit) {
    ModelConfig m = lmx::test::small_llama();
    edit(m);
    return hf_llama_blocker(m);
  };
  CHECK(blocked([](ModelConfig&) {}).empty());
  CHECK_THAT(blocked([](ModelConfig& m) { m.norm = "layernorm"; }), Catch::StartsWith("model.norm "));
  CHECK_THAT(blocked([](ModelConfig& m) { m.norm_placement = NormPlacement::Post; }), Catch::StartsWith("model.norm_placement"));
  CHECK_THAT(blocked([](ModelConfig& m) { m.ffn = "geglu"; }), Catch::StartsWith("model.ffn"));
  CHECK_THAT(blocked([](ModelConfig& m) { m.position = "alibi"; }), Catch::StartsWith("model.position"));
  CHECK_THAT(blocked([](ModelConfig& m) { m.bias = true; }), Catch::StartsWith("model.bias"));
  CHECK_THAT(blocked([](ModelConfig& m) { m.attention = "mla"; }), Catch::StartsWith("model.attention"));
  CHECK_THAT(blocked([](ModelConfig& m) { m.rope_scaling = RopeScaling::Yarn; }), Catch::StartsWith("model.rope_scaling"));
  ModelConfig m = lmx::test::small_llama();
  m.norm = "layernorm";
  Checkpoint src = read_checkpoint(write_checkpoint(dir, m));
  CHECK_THROWS_WITH(export_hf_llama(src, dir.file("hf")), Catch::Contains("model.norm is layernorm"));
  CHECK_FALSE(std::filesystem::exists(dir.file("hf")));
}

TEST_CASE("reading an HF folder refuses what lmx cannot build, naming file and key", "[model][hf]") {
  TempDir dir;
  Checkpoint src = read_checkpoint(write_checkpoint(dir, lmx::test::small_llama()));
  export_hf_llama(src, dir.file("hf"));
  const std::string cfg = dir.file("hf/config.json");
  const auto good = read_json(cfg);
  auto refused = [&](const std::string& key, const nlohmann::json& value, const std::string& says) {
    auto j = good;
    if (value.is_discarded()) j.erase(key);
    else j[key] = value;
    write_json(cfg, j);
    INFO(key << " = " << value.dump());
    CHECK_THROWS_AS(read_checkpoint(dir.file("hf")), InputError);
    CHECK_THROWS_WITH(read_checkpoint(dir.file("hf")), Catch::Contains("config.json") && Catch::Contains(says));
  };
  refused("model_type", "gpt2", "model_type");
  refused("hidden_size", nlohmann::json::value_t::discarded, "hidden_size");
  refused("hidden_size", "big", "hidden_size");
  refused("hidden_act", "gelu", "hidden_act");
  refused("attention_bias", true, "attention_bias");
  refused("rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}, "dynamic");
  refused("num_key_value_heads", 3, "n_kv_heads");
  write_json(cfg, good);
  CHECK_NOTHROW(read_checkpoint(dir.file("hf")));
  // weights that do not fit the config: load_weights names the tensor
  auto j = good;
  j["intermediate_size"] = 41;
  write_json(cfg, j);
  CHECK_THROWS_WITH(load_model(read_checkpoint(dir.file("hf"))), Catch::Contains("mlp.gate_proj.weight"));
  std::filesystem::create_directories(dir.file("empty"));
  CHECK_THROWS_WITH(read_checkpoint(dir.file("empty")), Catch::Contains("without config.json"));
}

TEST_CASE("lmx export --hf, then eval, generate and train --init-from take the folder", "[model][hf][cli]") {
  TempDir dir;
  const std::string tiny = "--set data.train_docs=200 --set data.val_docs=50 --set data.test_docs=50";
  auto trained = lmx::test::run_lmx("-q train configs/llama.yaml --set train.steps=8 " + tiny + " --out " +
                                    dir.file("src"));
  REQUIRE(trained.code == 0);
  const std::string ck = dir.file("src/seed0/model.safetensors");
  auto ex = lmx::test::run_lmx("-q export " + ck + " --hf " + dir.file("hf"));
  INFO(ex.output);
  REQUIRE(ex.code == 0);
  auto e1 = lmx::test::run_lmx("-q eval " + ck + " --split val");
  auto e2 = lmx::test::run_lmx("-q eval " + dir.file("hf") + " --split val");
  REQUIRE(e1.code == 0);
  REQUIRE(e2.code == 0);
  CHECK(e1.output == e2.output);  // the same numbers from the same function
  auto g1 = lmx::test::run_lmx("-q generate " + ck + " --prompt \"the girl\" --temperature 0 --max-new 8");
  auto g2 = lmx::test::run_lmx("-q generate " + dir.file("hf") + " --prompt \"the girl\" --temperature 0 --max-new 8");
  REQUIRE(g2.code == 0);
  CHECK(g1.output == g2.output);
  // --max-new past the context: generation stops there and says where and why.
  auto full = lmx::test::run_lmx("generate " + ck + " --temperature 0 --ignore-eos --max-new 100000");
  INFO(full.output);
  CHECK(full.code == 0);
  CHECK_THAT(full.output, Catch::Contains("of --max-new 100000 tokens: the context is full"));
  auto t = lmx::test::run_lmx("-q train configs/llama.yaml --set train.steps=2 " + tiny + " --init-from " +
                              dir.file("hf") + " --out " + dir.file("ft"));
  INFO(t.output);
  CHECK(t.code == 0);
  CHECK_THAT(lmx::test::read_file(dir.file("ft/train.json")), Catch::Contains("init_from"));
  // a config that builds other shapes is refused before anything is written
  auto bad = lmx::test::run_lmx("-q train configs/llama.yaml --set model.d_model=32 --set train.steps=2 " + tiny +
                                " --init-from " + dir.file("hf") + " --out " + dir.file("ft2"));
  CHECK(bad.code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.file("ft2")));
  auto refused = lmx::test::run_lmx("-q export " + ck + " --hf " + dir.file("hf"));  // not empty
  CHECK(refused.code == 2);
  auto textbook = lmx::test::run_lmx("-q train configs/textbook.yaml --set train.steps=1 " + tiny + " --out " +
                                     dir.file("tb"));
  REQUIRE(textbook.code == 0);
  auto blocked = lmx::test::run_lmx("-q export " + dir.file("tb/seed0/model.safetensors") + " --hf " + dir.file("x"));
  CHECK(blocked.code == 2);
  CHECK_THAT(blocked.output, Catch::Contains("model.norm is layernorm"));
  // a foreign folder whose vocabulary is smaller than the data's: one line, exit 2
  auto foreign = lmx::test::run_lmx("-q eval tests/fixtures/hf_llama");
  CHECK(foreign.code == 2);
  CHECK_THAT(foreign.output, Catch::Contains("vocab_size"));
}
