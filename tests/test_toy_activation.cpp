// Proof by addition, an activation: softsign φ(x) = x/(1 + |x|) added from this file alone, as a
// program of one's own would (docs/DESIGN.md, "A new FFN activation"). Its row is one call,
// registry::add_ffn with a Custom kernel op (scalar φ and φ', which the fused kernels apply a lane
// at a time); nothing under src/ names it. It is then listed, trained, evaluated, decoded on the
// inference engine and ablated by lmx's own verbs (this binary as lmx: tests/toys.h), and its
// kernel is held to LibTorch's ops on the same formula.
#include "catch.h"

#include "torch_api.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "model/ffn.h"
#include "model/options.h"
#include "model/registry.h"
#include "toys.h"

using namespace lmx;
using lmx::test::run_as_lmx;

namespace {

float softsign(float x, float) { return x / (1.0f + std::fabs(x)); }
float softsign_grad(float x, float) {
  const float d = 1.0f + std::fabs(x);
  return 1.0f / (d * d);
}
const kernels::CustomAct kSoftsign{softsign, softsign_grad};

// The row: its name, its description, its traits (plain), its kernel op.
void add_softsign() {
  registry::add_ffn({"toy_softsign", "W2·softsign(W1x), x/(1 + |x|) (a test's own)", {}},
                    kernels::ActOp{kernels::ActKind::Custom, 1.0f, &kSoftsign});
}
const test::ToyRows kSoftsignRows{add_softsign};

const std::string kSmallSoftsign =
    " --set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.steps=20"
    " --set train.eval_every=10 --set train.batch_size=8 --set train.warmup_steps=5";

}  // namespace

TEST_CASE("toy activation: the Custom kernel op matches LibTorch's ops on its formula, plain and gated",
          "[toy][ffn]") {
  ModelConfig c;
  c.d_model = 16, c.d_ff = 24;
  const kernels::ActOp op{kernels::ActKind::Custom, 1.0f, &kSoftsign};
  for (const bool gated : {false, true}) {
    INFO("gated " << gated);
    torch::manual_seed(3);
    std::shared_ptr<Ffn> ffn = gated ? std::shared_ptr<Ffn>(std::make_shared<GatedFfnImpl>(ffn_options(c, true), op))
                                     : std::shared_ptr<Ffn>(std::make_shared<PlainFfnImpl>(ffn_options(c, false), op));
    const auto x = (torch::randn({3, 37, 16}) * 3).requires_grad_();
    const auto y = ffn->forward(x);
    // The reference: the same weights, φ as LibTorch ops, autograd's derivative.
    const auto x_ref = x.detach().clone().requires_grad_();
    auto soft = [](const torch::Tensor& t) { return t / (1 + t.abs()); };
    const auto p = ffn->named_parameters();
    auto lin = [&](const torch::Tensor& t, const std::string& name) {
      return torch::nn::functional::linear(t, p[name + ".weight"], p[name + ".bias"]);
    };
    const auto y_ref = gated ? lin(soft(lin(x_ref, "gate_proj")) * lin(x_ref, "up_proj"), "down_proj")
                             : lin(soft(lin(x_ref, "up_proj")), "down_proj");
    CHECK(torch::allclose(y, y_ref, 1e-5, 1e-6));
    const auto dy = torch::randn_like(y);
    (y * dy).sum().backward();
    (y_ref * dy).sum().backward();
    CHECK(torch::allclose(x.grad(), x_ref.grad(), 1e-5, 1e-6));
  }
}

TEST_CASE("toy activation: one row in a test file, and lmx lists, trains, evaluates, decodes and ablates it",
          "[toy][ffn][cli]") {
  test::TempDir dir;
  const std::string out = dir.path.string();
  const auto list = run_as_lmx("list");
  INFO(list.output);
  REQUIRE(list.code == 0);
  CHECK_THAT(list.output, Catch::Contains("toy_softsign"));

  const auto train = run_as_lmx("-q --threads 1 --out " + out + "/train train configs/textbook.yaml --set model.ffn=toy_softsign" + kSmallSoftsign);
  INFO(train.output);
  REQUIRE(train.code == 0);
  CHECK_THAT(test::read_file(out + "/train/seed0/config.yaml"), Catch::Contains("ffn: \"toy_softsign\""));
  const std::string summary = test::read_file(out + "/train/summary.csv");
  CHECK_THAT(summary, Catch::Contains("textbook,0,ok,"));

  const std::string ckpt = out + "/train/seed0/model.safetensors";
  const auto eval = run_as_lmx("eval " + ckpt);
  INFO(eval.output);
  CHECK(eval.code == 0);
  CHECK_THAT(eval.output, Catch::Contains("| test  |"));

  // Decoded on the engine (it says when it falls back to the modules), the same text as the
  // modules give.
  const auto engine = run_as_lmx("-v generate " + ckpt + " --max-new 40 --ignore-eos --seed 2");
  const auto modules = run_as_lmx("generate " + ckpt + " --max-new 40 --ignore-eos --seed 2 --module-path");
  INFO(engine.output);
  CHECK(engine.code == 0);
  CHECK(modules.code == 0);
  CHECK(engine.output.find("decoding through the modules") == std::string::npos);
  const auto text = [](const std::string& s) { return s.substr(s.find("<bos>")); };
  CHECK(text(engine.output).substr(0, text(modules.output).size()) == text(modules.output));

  std::ofstream(out + "/toy.yaml") << "extends: " << test::source_path("configs/textbook.yaml")
                                   << "\nmodel:\n  ffn: toy_softsign\n";
  const auto ablate = run_as_lmx("-q --out " + out + "/ablate ablate --one-at-a-time --from configs/textbook.yaml --to " + out +
                                 "/toy.yaml --order ffn --jobs 2" + kSmallSoftsign);
  INFO(ablate.output);
  REQUIRE(ablate.code == 0);
  CHECK_THAT(test::read_file(out + "/ablate/ablation.md"), Catch::Contains("ffn=toy_softsign"));
}
