#include "catch.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "config/fields.h"
#include "helpers.h"
#include "util/error.h"

#include <torch/version.h>

using namespace lmx;
using lmx::test::TempDir;

namespace {
// Loads and expects an InputError whose message contains every fragment.
void expect_config_error(const std::string& path, std::vector<std::string> fragments,
                        std::vector<std::string> sets = {}) {
  try {
    load_config(path, sets);
    FAIL("expected an InputError for " << path);
  } catch (const InputError& e) {
    std::string msg = e.what();
    for (const auto& f : fragments) {
      INFO("message: " << msg);
      CHECK(msg.find(f) != std::string::npos);
    }
  }
}
}  // namespace

TEST_CASE("defaults and overrides", "[config]") {
  TempDir dir;
  auto path = dir.write("a.yaml", "model:\n  d_model: 128\n  n_heads: 8\n");
  Config c = load_config(path, {"model.ffn=swiglu", "train.lr=0.01", "model.bias=false"});
  CHECK(c.model.d_model == 128);
  CHECK(c.model.n_heads == 8);
  CHECK(c.model.ffn == "swiglu");
  CHECK(c.train.lr == Approx(0.01));
  CHECK_FALSE(c.model.bias);
  CHECK(c.name == "a");
  CHECK(c.model.n_layers == ModelConfig{}.n_layers);
}

TEST_CASE("extends chains, later wins, paths relative to the including file", "[config]") {
  TempDir dir;
  dir.write("base/root.yaml", "model:\n  d_model: 32\n  n_layers: 3\ntrain:\n  lr: 0.5\n");
  dir.write("base/mid.yaml", "extends: root.yaml\nmodel:\n  n_layers: 5\n");
  auto top = dir.write("top.yaml", "extends: base/mid.yaml\ntrain:\n  lr: 0.25\n");
  Config c = load_config(top);
  CHECK(c.model.d_model == 32);
  CHECK(c.model.n_layers == 5);
  CHECK(c.train.lr == Approx(0.25));
}

TEST_CASE("malformed configs name the file and key", "[config]") {
  TempDir dir;
  SECTION("unknown key with a suggestion") {
    auto p = dir.write("u.yaml", "model:\n  d_model: 64\n  n_haeds: 4\n");
    expect_config_error(p, {"u.yaml:3:3", "model.n_haeds", "n_heads"});
  }
  SECTION("a retired key, with what replaced it (in a file and in --set)") {
    auto p = dir.write("r.yaml", "train:\n  split_batch: false\n");
    expect_config_error(p, {"r.yaml:2:3", "train.split_batch", "train.step_parts", "step_parts: 1"});
    Config c;
    CHECK_THROWS_WITH(apply_override(c, "train.split_batch=true"),
                      Catch::Contains("--set train.split_batch=true") && Catch::Contains("step_parts: 2"));
  }
  SECTION("unknown section") {
    auto p = dir.write("s.yaml", "modle:\n  d_model: 64\n");
    expect_config_error(p, {"s.yaml:1:1", "modle", "model"});
  }
  SECTION("wrong type") {
    auto p = dir.write("t.yaml", "model:\n  d_model: wide\n");
    expect_config_error(p, {"t.yaml:2:12", "model.d_model", "integer"});
  }
  SECTION("a choice not on the list") {
    auto p = dir.write("p.yaml", "train:\n  precision: fp16\n");
    expect_config_error(p, {"p.yaml", "train.precision", "bf16"});
  }
  SECTION("float where an int is due") {
    auto p = dir.write("f.yaml", "model:\n  n_layers: 2.5\n");
    expect_config_error(p, {"f.yaml", "model.n_layers"});
  }
  SECTION("negative size") {
    auto p = dir.write("n.yaml", "model:\n  d_model: -64\n");
    expect_config_error(p, {"n.yaml", "model.d_model", "-64"});
  }
  SECTION("indivisible heads") {
    auto p = dir.write("h.yaml", "model:\n  d_model: 64\n  n_heads: 5\n");
    expect_config_error(p, {"h.yaml", "d_model", "n_heads"});
  }
  SECTION("n_heads not a multiple of n_kv_heads") {
    auto p = dir.write("kv.yaml", "model:\n  n_heads: 4\n  n_kv_heads: 3\n");
    expect_config_error(p, {"kv.yaml", "n_kv_heads"});
  }
  SECTION("odd head dim with rope") {
    auto p = dir.write("r.yaml", "model:\n  d_model: 60\n  n_heads: 4\n  position: rope\n");
    expect_config_error(p, {"r.yaml", "RoPE", "even"});
  }
  SECTION("unknown component name lists the valid ones") {
    auto p = dir.write("c.yaml", "model:\n  ffn: swiglue\n");
    expect_config_error(p, {"c.yaml:2:8", "swiglue", "swiglu", "relu"});
  }
  SECTION("extends cycle") {
    dir.write("x.yaml", "extends: y.yaml\n");
    auto p = dir.write("y.yaml", "extends: x.yaml\n");
    expect_config_error(p, {"cycle", "x.yaml", "y.yaml"});
  }
  SECTION("missing file") {
    expect_config_error(dir.file("nope.yaml"), {"nope.yaml", "no such"});
  }
  SECTION("missing extends target") {
    auto p = dir.write("m.yaml", "extends: gone.yaml\n");
    expect_config_error(p, {"gone.yaml", "no such"});
  }
  SECTION("empty file") {
    auto p = dir.write("e.yaml", "");
    expect_config_error(p, {"e.yaml", "empty"});
  }
  SECTION("not YAML at all") {
    auto p = dir.write("j.yaml", "model: [d_model: {\n\x01\x02 }}}");
    expect_config_error(p, {"j.yaml"});
  }
  SECTION("a scalar instead of sections") {
    auto p = dir.write("k.yaml", "just some text\n");
    expect_config_error(p, {"k.yaml", "mapping"});
  }
  SECTION("bad --set") {
    auto p = dir.write("ok.yaml", "model:\n  d_model: 64\n");
    expect_config_error(p, {"--set", "model.d_modle", "d_model"}, {"model.d_modle=3"});
    expect_config_error(p, {"--set", "train.lr", "number"}, {"train.lr=fast"});
    expect_config_error(p, {"--set", "section.key=value"}, {"model.d_model"});
  }
}

TEST_CASE("d_ff auto matches a plain FFN's parameters", "[config]") {
  ModelConfig m;
  m.d_model = 64;
  m.d_ff = 0;
  CHECK(m.ffn_hidden(false) == 256);
  CHECK(m.ffn_hidden(true) == 171);  // 2/3 · 256, rounded to nearest
  m.d_model = 4096;
  m.d_ff_multiple = 256;
  CHECK(m.ffn_hidden(true) == 11008);  // Llama 2 7B
  m.d_ff = 100;
  CHECK(m.ffn_hidden(true) == 100);
}

TEST_CASE("every shipped config round-trips through show", "[config]") {
  namespace fs = std::filesystem;
  int n = 0;
  for (const char* dir : {"configs", "experiments"}) {
    fs::path root = lmx::test::source_path(dir);
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".yaml") continue;
      // Experiment specs are not model configs; they are checked by their own loader.
      if (std::string(dir) == "experiments") continue;
      INFO(entry.path().string());
      Config a = load_config(entry.path().string());
      Config b = parse_config(to_yaml(a), "shown.yaml");
      CHECK(a == b);
      CHECK(to_yaml(a) == to_yaml(b));
      ++n;
    }
  }
  CHECK(n >= 3);
}

TEST_CASE("the CLI exits 2 with one line for bad input", "[config][cli]") {
  TempDir dir;
  auto p = dir.write("bad.yaml", "model:\n  n_haeds: 4\n");
  auto r = lmx::test::run_lmx("config show '" + p + "'");
  CHECK(r.code == 2);
  CHECK(r.output.find("bad.yaml:2:3") != std::string::npos);
  CHECK(r.output.find("n_heads") != std::string::npos);
  // A file name component longer than the file system allows (255 bytes on ext4): one line, exit 2.
  for (const std::string key : {"data.text_path", "data.grammar", "data.tokenizer_model"}) {
    auto longname = lmx::test::run_lmx("config show configs/llama.yaml --set " + key + "=" + dir.file(std::string(300, 'x')));
    INFO(longname.output);
    CHECK(longname.code == 2);
    CHECK(longname.output.find(key + ": the file name component") != std::string::npos);
    CHECK(std::count(longname.output.begin(), longname.output.end(), '\n') <= 2);  // error + hint
  }
  CHECK(lmx::test::run_lmx("--device cuda --version").code == 2);
  auto tpu = lmx::test::run_lmx("--device tpu --version");
  CHECK(tpu.code == 2);
  CHECK(tpu.output.find("unknown device 'tpu'") != std::string::npos);
  CHECK(tpu.output.find("valid devices: cpu, cuda") != std::string::npos);
  CHECK(lmx::test::run_lmx("frobnicate").code == 2);
  auto v = lmx::test::run_lmx("--version");
  CHECK(v.code == 0);
  CHECK(v.output.find(std::string("LibTorch ") + TORCH_VERSION + "\n") != std::string::npos);
  CHECK(v.output.find("data-parallel backends gloo") != std::string::npos);
}

TEST_CASE("docs/CONFIG.md is the field table as the code has it", "[config]") {
  std::ifstream in(lmx::test::source_path("docs/CONFIG.md"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  // What lmx prints (fields_markdown), from a process of its own: a component that a test in
  // this process adds to the catalog (test_registry's toy FFN) is not lmx's.
  const auto printed = lmx::test::run_shell(std::string("'") + LMX_BINARY + "' config fields --doc 2>/dev/null");
  REQUIRE(printed.code == 0);
  INFO("regenerate with: build/lmx config fields --doc > docs/CONFIG.md");
  CHECK(doc == printed.output);
}

namespace {
// One option enum: its names are the field's choices, each parses to its own value and back,
// and a name outside the list is an InputError naming the key and the valid values.
template <class E>
void check_option(size_t count) {
  const auto& names = OptionNames<E>::names();
  INFO(OptionNames<E>::key);
  REQUIRE(names.size() == count);
  const Field* f = find_field(OptionNames<E>::key);
  REQUIRE(f);
  REQUIRE(f->choices);
  CHECK(f->choices() == names);
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(parse_option<E>(names[i]) == static_cast<E>(i));
    CHECK(option_name(static_cast<E>(i)) == names[i]);
  }
  try {
    parse_option<E>("no_such_value");
    FAIL("parsed an unknown name");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(OptionNames<E>::key) != std::string::npos);
    CHECK(what.find("'no_such_value'") != std::string::npos);
    CHECK(what.find(names.back()) != std::string::npos);
  }
}
}  // namespace

TEST_CASE("option names: each enum's list is its field's choices, parsed both ways", "[config]") {
  check_option<NormPlacement>(3);
  check_option<RopeLayout>(2);
  check_option<RopeScaling>(4);
  check_option<TiedInit>(2);
  check_option<InitScheme>(4);
  check_option<EmbedScale>(2);
  check_option<Schedule>(3);
  check_option<Precision>(2);
  check_option<TokenizerKind>(2);
  check_option<OptimizerKind>(3);
  // The enum order the code relies on.
  CHECK(parse_option<RopeScaling>("yarn") == RopeScaling::Yarn);
  CHECK(parse_option<EmbedScale>("sqrt_d") == EmbedScale::SqrtD);
  CHECK(parse_option<InitScheme>("torch_default") == InitScheme::TorchDefault);
  CHECK(parse_option<InitScheme>("zero_proj") == InitScheme::ZeroProj);
  CHECK(parse_option<NormPlacement>("sandwich") == NormPlacement::Sandwich);
  CHECK(parse_option<OptimizerKind>("muon") == OptimizerKind::Muon);
}

TEST_CASE("the components after Llama: bad combinations are refused in one line naming the key", "[config]") {
  auto refused = [](const std::string& yaml) {
    try {
      parse_config(yaml, "c.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused("model:\n  attention: mla\n  position: rope\n  qk_norm: true\n"),
             Catch::Contains("model.qk_norm needs model.attention mha, not mla"));
  CHECK_THAT(refused("model:\n  ffn: moe\n  moe_experts: 2\n  moe_top_k: 3\n"),
             Catch::Contains("model.moe_top_k (3) exceeds model.moe_experts (2)"));
  CHECK_THAT(refused("train:\n  optimizer: lion\n"), Catch::Contains("train.optimizer") && Catch::Contains("adamw, adam, muon"));
  CHECK_THAT(refused("train:\n  warmup_frac: 1.5\n"), Catch::Contains("train.warmup_frac"));
  CHECK(refused("model:\n  ffn: moe\n  moe_experts: 4\n  moe_top_k: 4\n") == "accepted");
  CHECK_THAT(refused("model:\n  max_seq_len: 64\n  sliding_window: 65\n"),
             Catch::Contains("model.sliding_window (65) exceeds model.max_seq_len (64)"));
  CHECK_THAT(refused("model:\n  attention: mla\n  position: rope\n  attn_softcap: 50\n"),
             Catch::Contains("model.attn_softcap needs model.attention mha, not mla"));
  CHECK_THAT(refused("model:\n  attention: mla\n  position: rope\n  sliding_window: 8\n"),
             Catch::Contains("model.sliding_window needs model.attention mha, not mla"));
  CHECK(refused("model:\n  moe_experts: 2\n  moe_top_k: 3\n") == "accepted");  // not read without ffn moe
}
