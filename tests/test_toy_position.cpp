// Proof by addition, a position encoding: a fixed table added to the token embeddings,
// x + sin(p/(c + 2))/2 at position p and channel c, added from this file alone as a program of
// one's own would (docs/DESIGN.md, "A new position encoding"): its module says what it does
// (PositionEffect::AddsTable) and its row is one call, registry::add_position. Nothing under
// src/ names it. lmx's own verbs (this binary as lmx: tests/toys.h) then list it, train it
// (padding-free, through embed_at), evaluate it, decode it on the inference engine (which adds
// the table's rows) and put it in an extrapolation table beside NoPE.
#include "catch.h"

#include "torch_api.h"


#include "helpers.h"
#include "model/position/position.h"
#include "model/registry.h"
#include "toys.h"

using namespace lmx;
using lmx::test::run_as_lmx;

namespace {

class RampPositionImpl : public Position {
 public:
  explicit RampPositionImpl(int64_t d_model) : d_(d_model) {}
  const char* module_name() const override { return "toy_ramp"; }
  PositionEffect effect() const override { return PositionEffect::AddsTable; }
  torch::Tensor embed(const torch::Tensor& x, int64_t start) override {
    return x + table(start + x.size(1), x.device()).slice(0, start).unsqueeze(0).to(x.scalar_type());
  }
  torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) override {
    const int64_t len = positions.max().item<int64_t>() + 1;
    return x + table(len, x.device()).index_select(0, positions).unsqueeze(0).to(x.scalar_type());
  }

 private:
  torch::Tensor table(int64_t len, const torch::Device& device) const {
    const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    const auto p = torch::arange(len, opts).unsqueeze(1), c = torch::arange(d_, opts).unsqueeze(0);
    return torch::sin(p / (c + 2.0)) * 0.5;  // (len, C)
  }
  int64_t d_;
};

void add_ramp() {
  registry::add_position({"toy_ramp", "x + sin(p/(c + 2))/2, fixed (a test's own)", {}},
                         [](const ModelConfig& c) -> std::shared_ptr<Position> {
                           return std::make_shared<RampPositionImpl>(c.d_model);
                         });
}
const test::ToyRows kRampRows{add_ramp};

const std::string kSmallRamp =
    " --set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.eval_every=10"
    " --set train.batch_size=8 --set train.warmup_steps=5";

}  // namespace

TEST_CASE("toy position: one row in a test file, and lmx lists, trains, evaluates, decodes and extrapolates it",
          "[toy][position][cli]") {
  test::TempDir dir;
  const std::string out = dir.path.string();
  test::check_listed("toy_ramp");
  const std::string ckpt = test::check_trains(out + "/train", " --set model.position=toy_ramp --set train.steps=20" + kSmallRamp);
  test::check_evaluates(ckpt);
  test::check_engine_decodes(ckpt);

  const auto extra = run_as_lmx("-q --threads 1 --out " + out + "/extra extrapolate configs/textbook.yaml --positions toy_ramp,none"
                                " --train-len 16 --test-len 32 --steps 10" + kSmallRamp);
  INFO(extra.output);
  REQUIRE(extra.code == 0);
  const std::string table = test::read_file(out + "/extra/by_position.csv");
  CHECK_THAT(table, Catch::Contains("toy_ramp,0,0-15,"));
  CHECK_THAT(table, Catch::Contains("toy_ramp,0,16-31,"));
  CHECK_THAT(table, Catch::Contains("none,0,0-15,"));
}
