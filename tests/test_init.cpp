// model.init: the normal scheme, PyTorch's module defaults (nn.Linear, nn.Embedding,
// nn.LayerNorm), GPT-2's scaled residual projections and zeroed ones, checked per parameter
// against the closed-form bounds and moments.
#include "catch.h"

#include <cmath>

#include "model/lm.h"

using namespace lmx;

namespace {

ModelConfig small_model(const std::string& init) {
  ModelConfig m;
  m.vocab_size = 50;
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.d_ff = 256;
  m.init = parse_option<InitScheme>(init);
  return m;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("init torch_default: Linear U(±1/√fan_in) for weight and bias, Embedding N(0, 1), norms 1 and 0",
          "[model][init]") {
  for (const char* position : {"sinusoidal", "learned", "t5_bias"}) {
    ModelConfig m = small_model("torch_default");
    m.position = position;
    INFO("position " << position);
    torch::manual_seed(0);
    ModernLM model(m);
    // The bias of a linear layer draws from its weight's fan_in; the head's fan_in is d_model.
    std::map<std::string, int64_t> fan_in;
    for (const auto& p : model->named_parameters())
      if (ends_with(p.key(), ".weight") && p.value().dim() == 2)
        fan_in[p.key().substr(0, p.key().size() - 7)] = p.value().size(1);
    for (const auto& p : model->named_parameters()) {
      const std::string& name = p.key();
      const auto& t = p.value();
      INFO(name);
      const std::string module = name.substr(0, name.rfind('.'));
      if (name.find("layernorm") != std::string::npos || name.rfind("model.norm.", 0) == 0) {
        CHECK(t.eq(ends_with(name, ".bias") ? 0.0 : 1.0).all().item<bool>());
      } else if (ends_with(module, "embed_tokens") || ends_with(module, "embed_positions") ||
                 ends_with(module, "relative_attention_bias")) {
        // N(0, 1): the sample std of n values is within 5/√(2n) of 1 (5 sigma)
        const double n = static_cast<double>(t.numel());
        CHECK(std::abs(t.std().item<double>() - 1.0) < 5.0 / std::sqrt(2 * n));
        CHECK(std::abs(t.mean().item<double>()) < 5.0 / std::sqrt(n));
      } else {
        REQUIRE(fan_in.count(module));
        const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in[module]));
        CHECK(t.abs().max().item<double>() <= bound);
        // U(-b, b) has std b/√3; the sample std of n draws is within 5·0.9·(b/√3)/√n of it
        const double n = static_cast<double>(t.numel()), sd = bound / std::sqrt(3.0);
        if (n >= 64) CHECK(std::abs(t.std().item<double>() - sd) < 5 * 0.9 * sd / std::sqrt(n));
      }
    }
  }
}

TEST_CASE("init normal: N(0, init_std²) for matrices and tables, biases 0", "[model][init]") {
  ModelConfig m = small_model("normal");
  m.init_std = 0.05;
  torch::manual_seed(0);
  ModernLM model(m);
  for (const auto& p : model->named_parameters()) {
    INFO(p.key());
    const auto& t = p.value();
    if (p.key().find("layernorm") != std::string::npos || p.key().rfind("model.norm.", 0) == 0)
      CHECK(t.eq(ends_with(p.key(), ".bias") ? 0.0 : 1.0).all().item<bool>());
    else if (ends_with(p.key(), ".bias"))
      CHECK(t.eq(0.0).all().item<bool>());
    else
      CHECK(std::abs(t.std().item<double>() - 0.05) < 5 * 0.05 / std::sqrt(2.0 * t.numel()));
  }
}

TEST_CASE("init gpt2: residual output projections N(0, (init_std/√(2L))²); zero_proj: zero; the rest as normal",
          "[model][init]") {
  for (const std::string scheme : {"gpt2", "zero_proj"}) {
    ModelConfig m = small_model(scheme);
    m.init_std = 0.05;
    m.n_layers = 4;
    torch::manual_seed(0);
    ModernLM model(m);
    const double residual = scheme == "gpt2" ? 0.05 / std::sqrt(8.0) : 0.0;
    int outputs = 0;
    for (const auto& p : model->named_parameters()) {
      INFO(scheme << " " << p.key());
      const auto& t = p.value();
      const bool output = ends_with(p.key(), "o_proj.weight") || ends_with(p.key(), "down_proj.weight");
      if (p.key().find("layernorm") != std::string::npos || p.key().rfind("model.norm.", 0) == 0 || ends_with(p.key(), ".bias"))
        continue;
      if (output) ++outputs;
      const double sd = output ? residual : 0.05;
      if (sd == 0)
        CHECK(t.eq(0.0).all().item<bool>());
      else  // the sample std of n normal draws: within 5 of its standard errors σ/√(2n)
        CHECK(std::abs(t.std().item<double>() - sd) < 5 * sd / std::sqrt(2.0 * t.numel()));
    }
    CHECK(outputs == 8);  // o_proj and down_proj in each of 4 layers
  }
}

TEST_CASE("tied head under torch_default: the embedding keeps N(0, 1), the head bias U(±1/√d_model)",
          "[model][init]") {
  ModelConfig m = small_model("torch_default");
  m.tie_embeddings = true;
  torch::manual_seed(1);
  ModernLM model(m);
  auto params = model->named_parameters();
  CHECK(params.find("lm_head.weight") == nullptr);
  CHECK(std::abs(params["model.embed_tokens.weight"].std().item<double>() - 1.0) < 0.05);
  CHECK(params["lm_head.bias"].abs().max().item<double>() <= 1.0 / 8.0);
  CHECK(params["lm_head.bias"].abs().max().item<double>() > 0.0);
}

TEST_CASE("tied head with tied_init linear: the shared matrix draws nn.Linear's U(±1/√d_model)", "[model][init]") {
  ModelConfig m = small_model("torch_default");
  m.tie_embeddings = true;
  m.tied_init = TiedInit::Linear;
  torch::manual_seed(1);
  ModernLM model(m);
  auto params = model->named_parameters();
  const auto& w = params["model.embed_tokens.weight"];
  const double bound = 1.0 / 8.0, sd = bound / std::sqrt(3.0), n = static_cast<double>(w.numel());
  CHECK(w.abs().max().item<double>() <= bound);
  CHECK(std::abs(w.std().item<double>() - sd) < 5 * 0.9 * sd / std::sqrt(n));
  // the untied model's other tables keep N(0, 1): only the shared matrix changes
  m.position = "learned";
  torch::manual_seed(1);
  ModernLM learned(m);
  CHECK(std::abs(learned->named_parameters()["model.embed_positions.weight"].std().item<double>() - 1.0) < 0.1);
  // untied, tied_init is ignored: the embedding keeps N(0, 1) (a preset untied with one --set)
  m.tie_embeddings = false;
  torch::manual_seed(1);
  ModernLM untied(m);
  CHECK(std::abs(untied->named_parameters()["model.embed_tokens.weight"].std().item<double>() - 1.0) < 0.05);
}

TEST_CASE("embed_scale sqrt_d multiplies the token embeddings by √d_model", "[model][init]") {
  ModelConfig m = small_model("torch_default");
  m.position = "none";
  m.n_layers = 1;
  torch::manual_seed(2);
  ModernLM plain(m);
  m.embed_scale = EmbedScale::SqrtD;
  torch::manual_seed(2);
  ModernLM scaled(m);
  // Same weights; with the embeddings scaled by 8 the model's logits differ, and scaling the
  // plain model's embedding table by 8 by hand gives the scaled model's logits.
  auto tokens = torch::randint(0, 50, {2, 7}, torch::kLong);
  torch::NoGradGuard no_grad;
  auto expected = scaled->forward(tokens);
  CHECK((plain->forward(tokens) - expected).abs().max().item<double>() > 1e-3);
  plain->named_parameters()["model.embed_tokens.weight"].mul_(8.0);
  CHECK((plain->forward(tokens) - expected).abs().max().item<double>() < 1e-5);
}
