// Golden test: fixed-weight models built in plain PyTorch by scripts/dev/make_fixtures.py
// (independently of this code) must give the same logits here, within 1e-5.
#include "catch.h"

#include <filesystem>

#include "formats/checkpoint.h"
#include "helpers.h"
#include "model/attention/attention.h"

using namespace lmx;

namespace {

torch::Tensor find(const Checkpoint& ckpt, const std::string& name) {
  for (const auto& [n, t] : ckpt.tensors)
    if (n == name) return t;
  FAIL("fixture " << ckpt.path << " lacks " << name);
  return {};
}

}  // namespace

TEST_CASE("logits match the PyTorch reference fixtures", "[model][golden]") {
  const auto dir = std::filesystem::path(lmx::test::source_path("tests/fixtures"));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 9);
  torch::NoGradGuard no_grad;
  for (const auto& file : files) {
    DYNAMIC_SECTION(std::filesystem::path(file).stem().string()) {
      auto ckpt = read_checkpoint(file);
      ModernLM model = load_model(ckpt);
      auto tokens = find(ckpt, "state.tokens"), expected = find(ckpt, "state.logits");
      auto logits = model->forward(tokens);
      REQUIRE(logits.sizes() == expected.sizes());
      CHECK((logits - expected).abs().max().item<double>() < 1e-5);
      KVCache cache;  // and decoding token by token
      std::vector<torch::Tensor> steps;
      for (int64_t t = 0; t < tokens.size(1); ++t) steps.push_back(model->forward(tokens.slice(1, t, t + 1), &cache));
      CHECK((torch::cat(steps, 1) - expected).abs().max().item<double>() < 1e-5);
      if (ckpt.config.model.attention == "mla") {  // the absorbed path on the same weights
        for (int64_t l = 0; l < model->n_layers(); ++l)
          std::dynamic_pointer_cast<MultiHeadLatentAttentionImpl>(model->attention(l))->absorb = true;
        CHECK((model->forward(tokens) - expected).abs().max().item<double>() < 1e-5);
      }
    }
  }
}
