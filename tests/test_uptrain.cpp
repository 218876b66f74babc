// MHA -> GQA / MQA conversion (formats/convert.h) and `lmx uptrain`.
#include "catch.h"
#include "torch_api.h"

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "formats/checkpoint.h"
#include "formats/convert.h"
#include "helpers.h"
#include "util/csv.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;

namespace {

Config small_mha() {
  Config c;
  c.model.vocab_size = 23;
  c.model.d_model = 32;
  c.model.n_heads = 4;
  c.model.n_layers = 2;
  c.model.d_ff = 48;
  c.model.position = "rope";
  return c;
}

torch::Tensor param(ModernLMImpl& m, const std::string& name) {
  for (auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  FAIL("no parameter " << name);
  return {};
}

// Rows of head h of a (H·D, ...) projection.
torch::Tensor head(const torch::Tensor& w, int64_t h, int64_t d) { return w.narrow(0, h * d, d); }

const char* kKv[] = {"k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias"};

}  // namespace

TEST_CASE("mean and first pooling of identical heads in a group leave the model's function unchanged", "[uptrain]") {
  TempDir dir;
  torch::manual_seed(3);
  Config cfg = small_mha();
  ModernLM m(cfg.model);
  const int64_t D = cfg.model.dim_head();
  const int kv = GENERATE(2, 1);
  const int group = 4 / kv;
  {
    torch::NoGradGuard ng;
    for (int l = 0; l < 2; ++l)
      for (const char* name : kKv) {
        auto w = param(*m, "model.layers." + std::to_string(l) + ".self_attn." + name);
        for (int h = 0; h < 4; ++h) head(w, h, D).copy_(head(w, h / group * group, D));
      }
  }
  const std::string path = dir.file("mha.safetensors");
  save_checkpoint(path, m, cfg);
  Checkpoint ck = read_checkpoint(path);
  auto tokens = torch::randint(0, 23, {2, 11}, torch::kLong);
  auto ref = m->forward(tokens);
  for (const char* init : {"mean", "first"}) {
    ModernLM g = convert_kv_heads(ck, kv, init);
    CHECK(g->config().kv_heads() == kv);
    INFO("kv " << kv << " init " << init);
    CHECK((g->forward(tokens) - ref).abs().max().item<double>() < 1e-5);
  }
}

TEST_CASE("pooled K/V heads are each group's mean or first head, everything else is copied", "[uptrain]") {
  TempDir dir;
  torch::manual_seed(5);
  Config cfg = small_mha();
  ModernLM m(cfg.model);
  const std::string path = dir.file("mha.safetensors");
  save_checkpoint(path, m, cfg);
  Checkpoint ck = read_checkpoint(path);
  const int64_t D = cfg.model.dim_head();
  torch::manual_seed(99);
  ModernLM mean = convert_kv_heads(ck, 2, "mean"), first = convert_kv_heads(ck, 2, "first"),
           rnd = convert_kv_heads(ck, 2, "random");
  for (auto& p : m->named_parameters()) {
    const std::string& name = p.key();
    const bool is_kv = name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos;
    if (!is_kv) {
      CHECK(torch::equal(param(*mean, name), p.value()));
      CHECK(torch::equal(param(*rnd, name), p.value()));
      continue;
    }
    for (int g = 0; g < 2; ++g) {  // naive reference: heads 2g and 2g+1 form group g
      auto a = head(p.value(), 2 * g, D), b = head(p.value(), 2 * g + 1, D);
      CHECK(torch::allclose(head(param(*mean, name), g, D), (a + b) / 2, 1e-6, 1e-7));
      CHECK(torch::equal(head(param(*first, name), g, D), a));
      if (name.find(".weight") != std::string::npos)  // biases start at zero in both
        CHECK_FALSE(torch::allclose(head(param(*rnd, name), g, D), a));
    }
  }
}

TEST_CASE("conversion refuses what it cannot do, naming the problem", "[uptrain]") {
  TempDir dir;
  Config cfg = small_mha();
  ModernLM m(cfg.model);
  save_checkpoint(dir.file("mha.safetensors"), m, cfg);
  Checkpoint ck = read_checkpoint(dir.file("mha.safetensors"));
  CHECK_THROWS_AS(convert_kv_heads(ck, 3, "mean"), InputError);
  CHECK_THROWS_AS(convert_kv_heads(ck, 0, "mean"), InputError);
  CHECK_THROWS_WITH(convert_kv_heads(ck, 2, "median"), Catch::Contains("median"));
  Config mla = cfg;
  mla.model.attention = "mla";
  mla.model.position = "none";
  ModernLM mm(mla.model);
  save_checkpoint(dir.file("mla.safetensors"), mm, mla);
  CHECK_THROWS_WITH(convert_kv_heads(read_checkpoint(dir.file("mla.safetensors")), 2, "mean"),
                    Catch::Contains("mla"));
}

TEST_CASE("lmx uptrain evaluates the source, each conversion and continuation, and a scratch run", "[uptrain][cli]") {
  TempDir dir;
  const std::string tiny = "--set data.train_docs=200 --set data.val_docs=50 --set data.test_docs=50";
  auto trained = lmx::test::run_lmx("-q train configs/textbook.yaml --set train.steps=6 " + tiny + " --out " +
                                    dir.file("src"));
  REQUIRE(trained.code == 0);
  auto r = lmx::test::run_lmx("-q uptrain " + dir.file("src/seed0/model.safetensors") +
                              " --kv-heads 1 --init mean,random --steps 2,4 --out " + dir.file("up"));
  INFO(r.output);
  REQUIRE(r.code == 0);
  Table t = read_csv(dir.file("up/uptrain.csv"));
  REQUIRE(t.rows.size() == 1 + 2 * 3 + 1);  // source, 2 inits x (0, 2, 4 steps), scratch
  const int init = column(t, "init"), steps = column(t, "steps"), ppl = column(t, "test_ppl");
  CHECK(t.rows[0][init] == "source");
  CHECK(t.rows[1][init] == "mean");
  CHECK(t.rows[1][steps] == "0");
  CHECK(t.rows[3][steps] == "4");
  CHECK(t.rows.back()[init] == "scratch");
  CHECK(t.rows.back()[steps] == "6");  // the source's budget
  for (const auto& row : t.rows) CHECK(std::stod(row[ppl]) > 1.0);
  CHECK(std::filesystem::exists(dir.file("up/kv1-mean-s0/converted.safetensors")));

  auto bad = lmx::test::run_lmx("-q uptrain " + dir.file("src/seed0/model.safetensors") + " --kv-heads 3 --out " +
                                dir.file("up2"));
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Catch::Contains("--kv-heads 3"));
}
