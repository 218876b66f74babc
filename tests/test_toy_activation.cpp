// Proof by addition, an activation: softsign φ(x) = x/(1 + |x|) added from this file alone, as a
// program of one's own would (docs/DESIGN.md, "A new FFN activation"). Its row is one call,
// registry::add_ffn with a Custom kernel op (scalar φ and φ', which the fused kernels apply a lane
// at a time); nothing under src/ names it. It is then listed, trained, evaluated, decoded on the
// inference engine and ablated by lmx's own verbs (this binary as lmx: tests/toys.h), and its
// kernel is held to LibTorch's ops on the same formula.
#include "catch.h"

#include "torch_api.h"

#include <cmath>

#include "helpers.h"
#include "model/ffn.h"
#include "model/options.h"
#include "model/registry.h"
#include "toys.h"

using namespace lmx;

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
  test::check_listed("toy_softsign");
  const std::string ckpt = test::check_trains(out + "/train", " --set model.ffn=toy_softsign" + kSmallSoftsign);
  CHECK_THAT(test::read_file(out + "/train/seed0/config.yaml"), Catch::Contains("ffn: \"toy_softsign\""));
  test::check_evaluates(ckpt);
  test::check_engine_decodes(ckpt);

  CHECK_THAT(test::check_ablates_ffn(out + "/ablate", "toy_softsign", kSmallSoftsign), Catch::Contains("ffn=toy_softsign"));
}
