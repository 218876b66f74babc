// Safetensors files and checkpoints: round trips, parameter names, and errors for files
// that are corrupt, truncated or do not match the model.
#include "catch.h"

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "helpers.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;

namespace {

// Reading must throw an InputError naming the file and containing `fragment`.
void expect_corrupt(const std::string& path, const std::string& fragment) {
  try {
    read_safetensors(path);
    FAIL("expected an InputError for " << path);
  } catch (const InputError& e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find(fragment) != std::string::npos);
  }
}

// A file with a hand-written header and `data_bytes` zero bytes of data.
std::string raw_file(const TempDir& dir, const std::string& name, const std::string& header, size_t data_bytes) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  return dir.write(name, bytes + header + std::string(data_bytes, '\0'));
}

Config textbook(int vocab) {
  Config cfg = load_config(lmx::test::source_path("configs/textbook.yaml"));
  cfg.model.vocab_size = vocab;
  return cfg;
}

std::vector<std::string> names_of(ModernLM& m) {
  std::vector<std::string> out;
  for (const auto& p : m->named_parameters()) out.push_back(p.key());
  return out;
}

}  // namespace

TEST_CASE("safetensors round trip: dtypes, shapes, order, metadata", "[model][safetensors]") {
  TempDir dir;
  NamedTensors tensors = {{"z.f32", torch::randn({3, 4})},
                          {"a.f16", torch::randn({5}).to(torch::kFloat16)},
                          {"m.bf16", torch::randn({2, 1, 3}).to(torch::kBFloat16)},
                          {"i64", torch::arange(7, torch::kInt64)},
                          {"i32", torch::tensor({-1, 2, 1 << 30}, torch::kInt32)},
                          {"scalar", torch::tensor(3.5f)},
                          {"empty", torch::zeros({0, 4})}};
  auto path = dir.file("t.safetensors");
  write_safetensors(path, tensors, {{"k", "v: with \"quotes\"\nand a newline"}});
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  auto file = read_safetensors(path);
  REQUIRE(file.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CHECK(file.tensors[i].first == tensors[i].first);
    CHECK(file.tensors[i].second.scalar_type() == tensors[i].second.scalar_type());
    CHECK(file.tensors[i].second.sizes() == tensors[i].second.sizes());
    CHECK(torch::equal(file.tensors[i].second, tensors[i].second));
  }
  CHECK(file.metadata.at("k") == "v: with \"quotes\"\nand a newline");
  const std::string bytes = lmx::test::read_file(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);  // data aligned to 8 bytes
  CHECK_THROWS_AS(write_safetensors(dir.file("d.safetensors"), {{"x", torch::zeros({1}, torch::kFloat64)}}), InputError);
}

TEST_CASE("corrupt and truncated safetensors files are InputErrors that say what is wrong", "[model][safetensors]") {
  TempDir dir;
  auto good = dir.file("good.safetensors");
  write_safetensors(good, {{"w", torch::randn({4, 4})}}, {{"a", "b"}});
  const std::string bytes = lmx::test::read_file(good);
  expect_corrupt(dir.write("short.safetensors", bytes.substr(0, 5)), "shorter than the 8-byte header length");
  expect_corrupt(dir.write("cut.safetensors", bytes.substr(0, bytes.size() - 10)), "outside");
  expect_corrupt(dir.write("cuthead.safetensors", bytes.substr(0, 30)), "runs past the end");
  expect_corrupt(dir.write("empty.safetensors", ""), "0 bytes");
  expect_corrupt(raw_file(dir, "json.safetensors", "{\"w\": [1, 2", 0), "does not parse");
  expect_corrupt(raw_file(dir, "dtype.safetensors", R"({"w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 16),
                 "unsupported dtype");
  expect_corrupt(raw_file(dir, "size.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                 "do not hold shape");
  expect_corrupt(raw_file(dir, "overlap.safetensors",
                          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          12),
                 "overlap");
  expect_corrupt(raw_file(dir, "fields.safetensors", R"({"w":{"dtype":"F32"}})", 0), "lacks");
  expect_corrupt(raw_file(dir, "meta.safetensors", R"({"__metadata__":{"a":1}})", 0), "not a string");
  // A tensor named twice (JSON keeps only one of them): refused, not loaded.
  expect_corrupt(raw_file(dir, "twice.safetensors",
                          R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          8),
                 "names 'w' twice");
  expect_corrupt(dir.file("missing.safetensors"), "cannot open");
}

TEST_CASE("parameter names follow Hugging Face Llama / DeepSeek-V2", "[model][checkpoint]") {
  ModelConfig c;
  c.vocab_size = 11;
  c.n_layers = 1;
  SECTION("textbook: layernorm pre-norm, plain FFN, biases, untied") {
    ModernLM m(c);
    std::vector<std::string> want = {
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.bias",
        "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.k_proj.bias",
        "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.v_proj.bias",
        "model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.bias",
        "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.bias",
        "model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.bias",
        "model.layers.0.input_layernorm.weight", "model.layers.0.input_layernorm.bias",
        "model.layers.0.post_attention_layernorm.weight", "model.layers.0.post_attention_layernorm.bias",
        "model.norm.weight", "model.norm.bias", "lm_head.weight", "lm_head.bias"};
    CHECK(names_of(m) == want);
    CHECK(m->named_buffers().size() == 0);
  }
  SECTION("llama-like: rmsnorm, swiglu, GQA, no bias, tied; learned and T5 positions") {
    c.norm = "rmsnorm";
    c.ffn = "swiglu";
    c.bias = false;
    c.tie_embeddings = true;
    c.position = "t5_bias";
    auto names = names_of(*std::make_unique<ModernLM>(c));
    for (const char* n : {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                          "model.layers.0.self_attn.relative_attention_bias.weight", "model.norm.weight"})
      CHECK(std::count(names.begin(), names.end(), n) == 1);
    for (const auto& n : names) CHECK(n.find("lm_head") == std::string::npos);
    c.position = "learned";
    names = names_of(*std::make_unique<ModernLM>(c));
    CHECK(std::count(names.begin(), names.end(), "model.embed_positions.weight") == 1);
    CHECK(std::count_if(names.begin(), names.end(),
                        [](const std::string& n) { return n.find("embed_positions") != std::string::npos; }) == 1);
  }
  SECTION("MLA with and without a query latent") {
    c.attention = "mla";
    c.position = "rope";
    c.mla_q_rank = 8;
    auto names = names_of(*std::make_unique<ModernLM>(c));
    for (const char* n : {"model.layers.0.self_attn.q_a_proj.weight", "model.layers.0.self_attn.q_b_proj.weight",
                          "model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
                          "model.layers.0.self_attn.kv_b_proj.weight", "model.layers.0.self_attn.o_proj.weight"})
      CHECK(std::count(names.begin(), names.end(), n) == 1);
  }
}

TEST_CASE("checkpoint save -> load gives identical logits — extra optim./state. tensors are ignored", "[model][checkpoint]") {
  TempDir dir;
  for (const char* ffn : {"relu", "swiglu"}) {
    Config cfg = textbook(29);
    cfg.model.ffn = ffn;
    cfg.model.tie_embeddings = std::string(ffn) == "swiglu";
    cfg.name = "ckpt-test";
    torch::manual_seed(8);
    ModernLM model(cfg.model);
    auto path = dir.file(std::string(ffn) + ".safetensors");
    save_checkpoint(path, model, cfg, {{"optim.step", torch::tensor(7, torch::kInt64)}, {"state.rng", torch::zeros({3})}},
                    {{"note", "hello"}});
    auto ckpt = read_checkpoint(path);
    CHECK(ckpt.config == cfg);
    CHECK(ckpt.config.name == "ckpt-test");
    CHECK(ckpt.metadata.at("note") == "hello");
    ModernLM loaded = load_model(ckpt);
    torch::NoGradGuard no_grad;
    auto x = torch::randint(29, {2, 9}, torch::kInt64);
    CHECK(torch::equal(loaded->forward(x), model->forward(x)));
  }
}

TEST_CASE("loading a checkpoint that does not match its model says exactly what differs", "[model][checkpoint]") {
  TempDir dir;
  Config cfg = textbook(13);
  ModernLM model(cfg.model);
  NamedTensors tensors;
  for (const auto& p : model->named_parameters()) {
    if (p.key() == "model.layers.1.mlp.up_proj.weight") continue;                       // missing
    if (p.key() == "lm_head.bias") tensors.push_back({p.key(), torch::zeros({14})});     // shape
    else if (p.key() == "model.norm.bias") tensors.push_back({p.key(), torch::zeros({64}, torch::kFloat16)});  // dtype
    else tensors.push_back({p.key(), p.value()});
  }
  tensors.push_back({"model.layers.0.self_attn.rotary.inv_freq", torch::zeros({4})});  // unexpected
  auto path = dir.file("bad.safetensors");
  write_safetensors(path, tensors, {{"lmx_config", to_yaml(cfg)}});
  try {
    load_model(read_checkpoint(path));
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find("missing: model.layers.1.mlp.up_proj.weight") != std::string::npos);
    CHECK(msg.find("unexpected: model.layers.0.self_attn.rotary.inv_freq") != std::string::npos);
    CHECK(msg.find("lm_head.bias shape [14] in file vs [13] in model") != std::string::npos);
    CHECK(msg.find("model.norm.bias dtype Half in file vs Float in model") != std::string::npos);
  }
  auto no_config = dir.file("plain.safetensors");
  write_safetensors(no_config, {{"w", torch::zeros({1})}});
  CHECK_THROWS_WITH(read_checkpoint(no_config), Catch::Contains("not an lmx checkpoint"));
}
