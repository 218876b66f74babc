// The component catalog (config/registry.h) and its factories (model/registry.h): the same
// names in both tables, one Llama row per kind, and a component added from outside lmx's sources
// in one call (a cubed-ReLU FFN with a module of its own), which config validation, the
// parameter arithmetic and the model then take like a built-in one. Also the layering and
// environment rules that keep such changes in one place: an include that reaches up a layer,
// or a LibTorch header in util or config, fails cmake/check_layers.cmake, and every LMX_* variable is read through util/env.h and
// documented in docs/USAGE.md.
#include "catch.h"

#include "torch_api.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "config/config.h"
#include "config/registry.h"
#include "data/corpora.h"
#include "formats/hf_llama.h"
#include "helpers.h"
#include "model/ffn.h"
#include "model/lm.h"
#include "model/registry.h"
#include "model/sizes.h"
#include "util/env.h"

using namespace lmx;
using lmx::test::read_file;
using lmx::test::run_shell;
using lmx::test::source_path;

namespace {

// W2·relu(W1x)³: a toy FFN defined here, not in src/ (its own module, not a kernel op).
class CubedReluFfnImpl : public Ffn {
 public:
  explicit CubedReluFfnImpl(const ModelConfig& c) {
    const int64_t f = c.ffn_hidden(false);
    up_proj = register_module("up_proj", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, f).bias(c.bias)));
    down_proj = register_module("down_proj", torch::nn::Linear(torch::nn::LinearOptions(f, c.d_model).bias(c.bias)));
  }
  torch::Tensor forward(const torch::Tensor& x) override { return down_proj(torch::relu(up_proj(x)).pow(3)); }
  torch::nn::Linear up_proj{nullptr}, down_proj{nullptr};
};

std::set<std::string> names_in(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

}  // namespace

TEST_CASE("every catalog row has a factory (a corpus its loaders), in the same order, and each model kind one Llama row",
          "[registry]") {
  CHECK(registry::corpus_loader_names() == registry::names(registry::Kind::Corpus));
  for (auto kind : registry::kinds()) {
    if (kind == registry::Kind::Corpus) continue;
    INFO(registry::kind_name(kind));
    CHECK(registry::factory_names(kind) == registry::names(kind));
    int llama = 0;
    for (const auto& e : registry::entries(kind)) llama += e.traits.llama;
    CHECK(llama == 1);
  }
  Config llama = load_config(source_path("configs/llama.yaml"));
  CHECK(hf_llama_blocker(llama.model).empty());
  llama.model.ffn = "geglu";
  CHECK(hf_llama_blocker(llama.model) == "model.ffn is geglu (Llama: swiglu)");
}

TEST_CASE("a component added at run time is validated, counted and built like a built-in one", "[registry]") {
  if (registry::factory_names(registry::Kind::Ffn).back() != "relu3")
    registry::add_ffn({"relu3", "W2·relu(W1x)³", {}},
                      [](const ModelConfig& c) -> std::shared_ptr<Ffn> { return std::make_shared<CubedReluFfnImpl>(c); });
  CHECK(registry::names(registry::Kind::Ffn).back() == "relu3");
  CHECK_THROWS_WITH(parse_config("model:\n  ffn: relu33\n", "toy.yaml"), Catch::Contains("did you mean 'relu3'?") && Catch::Contains("moe, relu3"));
  Config c = parse_config("model:\n  ffn: relu3\n  vocab_size: 11\n  d_model: 16\n  d_ff: 24\n", "toy.yaml");
  torch::manual_seed(0);
  ModernLM model(c.model);
  int64_t numel = 0;
  for (const auto& p : model->parameters()) numel += p.numel();
  CHECK(numel == count_params(c.model).total());
  const auto tokens = torch::randint(0, 11, {2, 5}, torch::kLong);
  const auto logits = model->forward(tokens);
  CHECK(logits.sizes() == torch::IntArrayRef({2, 5, 11}));
  CHECK(torch::isfinite(logits).all().item<bool>());
  CHECK_THROWS_AS(registry::add(registry::Kind::Ffn, {"relu3", "again", {}}), std::logic_error);
}

TEST_CASE("an include that reaches up a layer, or LibTorch in util or config, fails the layer check", "[registry]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "lmx_layers_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "util");
  fs::create_directories(dir / "model");
  std::ofstream(dir / "model" / "m.h") << "#include \"util/u.h\"\n";  // down: allowed
  std::ofstream(dir / "util" / "u.h") << "#pragma once\n";
  const std::string check = "cmake -DSRC=" + dir.string() + " -DLAYERS=util,config,model -DNO_TORCH=util,config -DSTAMP=" +
                            (dir / "stamp").string() + " -P " + source_path("cmake/check_layers.cmake") + " 2>&1";
  std::ofstream(dir / "model" / "t.h") << "#include <torch/torch.h>\n";  // LibTorch above config: allowed
  auto ok = run_shell(check);
  CHECK(ok.code == 0);
  std::ofstream(dir / "util" / "u.h") << "#pragma once\n#include \"model/m.h\"\n";  // up: refused
  auto bad = run_shell(check);
  CHECK(bad.code != 0);
  CHECK_THAT(bad.output, Catch::Contains("util/u.h: #include \"model/m.h\": the util layer may include util only"));
  std::ofstream(dir / "util" / "u.h") << "#pragma once\n#include <ATen/Parallel.h>\n";  // LibTorch in util: refused
  auto torch = run_shell(check);
  CHECK(torch.code != 0);
  CHECK_THAT(torch.output, Catch::Contains("util/u.h: #include <ATen/Parallel.h>: the util layer uses no LibTorch"));
  fs::remove_all(dir);
}

TEST_CASE("every LMX_* variable is read through util/env.h and documented in USAGE.md", "[registry]") {
  namespace fs = std::filesystem;
  std::set<std::string> table;
  for (const auto& v : env::variables()) table.insert(v.name);
  // No other getenv of an LMX_ variable in src/.
  for (const auto& f : fs::recursive_directory_iterator(source_path("src"))) {
    if (!f.is_regular_file() || f.path().filename() == "env.cpp") continue;
    const std::string text = read_file(f.path().string());
    INFO(f.path().string());
    CHECK(names_in(text, std::regex(R"(getenv\("(LMX_[A-Z0-9_]+)\"\))")).empty());
    for (const auto& name : names_in(text, std::regex(R"(env::(?:get|text)\("(LMX_[A-Z0-9_]+)\"\))")))
      CHECK(table.count(name) == 1);
  }
  // USAGE.md's table rows name exactly the table's variables.
  const std::string usage = read_file(source_path("docs/USAGE.md"));
  const auto begin = usage.find("## Environment variables");
  REQUIRE(begin != std::string::npos);
  const std::string section = usage.substr(begin, usage.find("\n## ", begin + 1) - begin);
  std::set<std::string> documented;
  std::istringstream rows(section);
  for (std::string line; std::getline(rows, line);)
    if (line.rfind("| `", 0) == 0)
      for (const auto& n : names_in(line.substr(0, line.find(" | ")), std::regex(R"((LMX_[A-Z0-9_]+))"))) documented.insert(n);
  CHECK(documented == table);
  CHECK_THROWS_AS(env::get("LMX_NOT_IN_THE_TABLE"), std::logic_error);
}
