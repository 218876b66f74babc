// lmx probe: every probe runs, and its key numbers match independent references (closed
// forms, published model sizes, a direct transcription of T5's bucket function).
#include "catch.h"
#include "torch_api.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "data/batch.h"
#include "data/corpus.h"
#include "experiments/probe.h"
#include "formats/checkpoint.h"
#include "helpers.h"
#include "model/ffn.h"
#include "train/trainer.h"

using namespace lmx;
using namespace lmx::experiments;
using Catch::Contains;

namespace {

// (key by pointer: a std::string temporary bound to a reference parameter makes GCC 14+ warn
// -Wdangling-reference about the returned reference, which points into r.)
const Table& table(const ProbeResult& r, const char* key) {
  for (const auto& t : r.tables)
    if (t.key == key) return t.table;
  FAIL("no table " << key);
  throw;
}

size_t col_of(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return i;
  FAIL("no column " << name);
  return 0;
}

// The row whose first cell is `first` (and second cell `second`, when given).
const std::vector<std::string>& row(const Table& t, const std::string& first, const std::string& second = "") {
  for (const auto& r : t.rows)
    if (r.at(0) == first && (second.empty() || r.at(1) == second)) return r;
  FAIL("no row " << first << " " << second);
  throw;
}

double num(const Table& t, const std::vector<std::string>& r, const std::string& col) {
  return std::stod(r.at(col_of(t, col)));
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// T5's _relative_position_bucket(bidirectional=False), transcribed with double math.
int64_t t5_bucket_reference(int64_t distance, int64_t num_buckets, int64_t max_distance) {
  const int64_t max_exact = num_buckets / 2;
  if (distance < max_exact) return distance;
  const int64_t large = max_exact + static_cast<int64_t>(std::log(static_cast<double>(distance) / max_exact) /
                                                         std::log(static_cast<double>(max_distance) / max_exact) *
                                                         (num_buckets - max_exact));
  return std::min(large, num_buckets - 1);
}

}  // namespace

TEST_CASE("probe activations: minima, gelu vs gelu_tanh, swish limits", "[probe]") {
  auto r = probe_activations({});
  const auto& v = table(r, "values");
  REQUIRE(v.rows.size() == 11);
  // The lecture's example: swish with β = 0.1 maps −5 to −5·σ(−0.5) = −1.888.
  CHECK(num(v, row(v, "-5"), "swish β=0.1") == Approx(-5 / (1 + std::exp(0.5))).margin(1e-6));
  CHECK(num(v, row(v, "5"), "relu") == 5.0);
  CHECK(num(v, row(v, "-1"), "relu") == 0.0);
  CHECK(num(v, row(v, "2"), "relu") == 2.0);
  CHECK(num(v, row(v, "1"), "gelu") == Approx(0.5 * (1 + std::erf(1 / std::sqrt(2.0)))).margin(1e-6));
  CHECK(num(v, row(v, "-2"), "silu") == Approx(-2 / (1 + std::exp(2.0))).margin(1e-6));
  CHECK(num(v, row(v, "3"), "swish β=10") == Approx(3 / (1 + std::exp(-30.0))).margin(1e-6));
  const auto& s = table(r, "summary");
  // x·Φ(x) has its minimum at x ≈ −0.751791524, value ≈ −0.169971306 (Φ(x) + xφ(x) = 0).
  auto gelu = row(s, "gelu minimum");
  CHECK(num(s, gelu, "at x") == Approx(-0.751791524).margin(2e-6));
  CHECK(num(s, gelu, "value") == Approx(-0.169971306).margin(2e-6));
  // x·σ(x): minimum at x = −1 − W(1/e), value −W(1/e), W(1/e) = 0.278464542761074.
  auto silu = row(s, "silu minimum");
  CHECK(num(s, silu, "at x") == Approx(-1.278464542761074).margin(2e-6));
  CHECK(num(s, silu, "value") == Approx(-0.278464542761074).margin(2e-6));
  // max |gelu − gelu_tanh| on [−5, 0], recomputed here with std::erf / std::tanh.
  double worst = 0;
  for (int i = 0; i <= 500000; ++i) {
    const double x = -5.0 + i * 1e-5;
    const double exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    const double approx = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    worst = std::max(worst, std::abs(exact - approx));
  }
  CHECK(num(s, row(s, "max |gelu − gelu_tanh| on [−5, 0]"), "value") == Approx(worst).epsilon(1e-3));
  // swish → relu as β → ∞: the gap is exactly W(1/e)/β; → x/2 as β → 0: ≈ 9β/4 on [−3, 3].
  CHECK(num(s, row(s, "swish β=100: max |swish − relu| on [−3, 3]"), "value") ==
        Approx(0.278464542761074 / 100).epsilon(1e-3));
  CHECK(num(s, row(s, "swish β=0.01: max |swish − x/2| on [−3, 3]"), "value") == Approx(0.0225).epsilon(0.01));
}

TEST_CASE("probe ffn-params: 33,088 for the plain FFN, gated 3·C·F + 2F + C", "[probe]") {
  auto r = probe_ffn_params({});
  const auto& t = r.tables.at(0).table;
  CHECK(num(t, row(t, "relu", "256"), "parameters (numel)") == 33088);
  CHECK(num(t, row(t, "swiglu", "256"), "parameters (numel)") == 3 * 64 * 256 + 2 * 256 + 64);
  CHECK(num(t, row(t, "swiglu", "171"), "parameters (numel)") == 3 * 64 * 171 + 2 * 171 + 64);
}

TEST_CASE("probe sparsity: exact zero fraction and dead neurons on a rigged checkpoint", "[probe]") {
  test::TempDir dir;
  Config cfg = load_probe_config("configs/textbook.yaml");
  cfg.data.train_docs = 20;
  cfg.data.val_docs = 30;
  cfg.data.test_docs = 5;
  data::Corpus corpus = data::load_corpus(cfg.data);
  cfg = resolve_for_corpus(cfg, corpus);
  torch::manual_seed(0);
  ModernLM model(cfg.model);
  {  // layer 0: W1 = 0, bias −1 for neurons 0..9 (dead), +1 for the rest (always positive)
    torch::NoGradGuard no_grad;
    auto ffn = std::dynamic_pointer_cast<PlainFfnImpl>(model->ffn(0));
    REQUIRE(ffn);
    ffn->up_proj->weight.zero_();
    ffn->up_proj->bias.fill_(1.0);
    ffn->up_proj->bias.slice(0, 0, 10).fill_(-1.0);
  }
  const std::string ckpt = dir.file("model.safetensors");
  save_checkpoint(ckpt, model, cfg);
  ProbeOptions opt;
  opt.checkpoint = ckpt;
  opt.docs = 10;
  auto r = probe_sparsity(opt);
  const auto& t = r.tables.at(0).table;
  REQUIRE(t.rows.size() == 2);
  CHECK(num(t, row(t, "0"), "dead neurons") == 10);
  CHECK(num(t, row(t, "0"), "zero fraction") == Approx(10.0 / 256).margin(1e-4));
  const double z1 = num(t, row(t, "1"), "zero fraction");
  CHECK(z1 > 0.2);  // ReLU at init: about half of the pre-activations are negative
  CHECK(z1 < 0.8);
  int64_t tokens = 0;  // positions counted: the targets of the first 10 documents
  for (int i = 0; i < 10; ++i) tokens += static_cast<int64_t>(corpus.val[i].size()) - 1;
  CHECK(num(t, row(t, "0"), "positions") == tokens);
}

TEST_CASE("probe norm-invariance: LayerNorm shift- and scale-invariant, RMSNorm scale only", "[probe]") {
  auto r = probe_norm_invariance({});
  const auto& t = r.tables.at(0).table;
  const std::string col = "max |Δ output|";
  CHECK(num(t, row(t, "LayerNorm", "N(3x) vs N(x)"), col) < 1e-4);
  CHECK(num(t, row(t, "LayerNorm", "N(x + 5) vs N(x)"), col) < 1e-4);
  CHECK(num(t, row(t, "RMSNorm", "N(3x) vs N(x)"), col) < 1e-4);
  CHECK(num(t, row(t, "RMSNorm", "N(x + 5) vs N(x)"), col) > 0.5);
  CHECK(num(t, row(t, "RMSNorm vs LayerNorm", "zero-mean input"), col) < 1e-4);
  CHECK(num(t, row(t, "RMSNorm vs LayerNorm", "input with mean ≠ 0"), col) > 0.1);
  CHECK(num(t, row(t, "RMSNorm", "vs x / √(mean(x²) + ε) · γ (float64)"), col) < 1e-5);
}

TEST_CASE("probe gradnorm: one row per layer, matching a direct backward pass", "[probe]") {
  ProbeOptions opt;
  opt.depths = {2, 3};
  auto r = probe_gradnorm(opt);
  const auto& layers = table(r, "layers");
  REQUIRE(layers.rows.size() == 2 * (2 + 3));
  const auto& totals = table(r, "totals");
  REQUIRE(totals.rows.size() == 4);
  // Recompute depth 2, pre-norm: the same seed, the same batch (first 32 training documents).
  Config cfg = load_probe_config("configs/textbook.yaml");
  cfg.data.train_docs = cfg.data.val_docs = cfg.data.test_docs = 32;
  data::Corpus corpus = data::load_corpus(cfg.data);
  cfg = resolve_for_corpus(cfg, corpus);
  // Rows as the probe and training cut them: whole documents up to the model's context.
  auto rows = data::make_rows(corpus.train, data::Layout::Doc, data::train_row_len(cfg), corpus.vocab.eos);
  auto batch = data::eval_batches(rows, static_cast<int>(rows.rows.size()), corpus.vocab.pad).at(0);
  torch::manual_seed(0);
  ModernLM model(cfg.model);
  model->keep_stream = true;
  auto logits = model->forward(batch.inputs);
  auto mask = batch.targets != data::kIgnore;
  auto logp = torch::log_softmax(logits, -1).gather(-1, batch.targets.clamp_min(0).unsqueeze(-1)).squeeze(-1);
  auto loss = -(logp * mask).sum() / mask.sum();
  loss.backward();
  for (int i = 0; i < 2; ++i) {
    auto ffn = std::dynamic_pointer_cast<PlainFfnImpl>(model->ffn(i));
    const double expected = ffn->down_proj->weight.grad().norm().item<double>();
    const auto& rw = layers.rows.at(2 + i);  // depth 2: post layers 0, 1, then pre layers 0, 1
    REQUIRE((rw.at(0) == "2" && rw.at(1) == "pre" && rw.at(2) == std::to_string(i)));
    CHECK(num(layers, rw, "down_proj grad norm") == Approx(expected).epsilon(1e-3));
  }
  CHECK(std::stod(row(totals, "2", "pre").at(col_of(totals, "loss"))) == Approx(loss.item<double>()).margin(1e-4));
  // Stream RMS, pre-norm: per token sqrt(mean_c x²) of the stream after the last block, averaged
  // over the target tokens (a loop over them here).
  const auto s = model->last_stream.to(torch::kFloat64);
  double sum = 0;
  int64_t n = 0;
  for (int64_t b = 0; b < s.size(0); ++b)
    for (int64_t t = 0; t < s.size(1); ++t)
      if (batch.targets[b][t].item<int64_t>() != data::kIgnore) {
        sum += std::sqrt(s[b][t].pow(2).mean().item<double>());
        ++n;
      }
  CHECK(std::stod(row(totals, "2", "pre").at(col_of(totals, "stream rms"))) == Approx(sum / n).margin(1e-3));
  // The split: the embedding's part is token embedding (× √C with embed_scale sqrt_d, the
  // preset's) + sinusoidal position (Vaswani et al.: sin on even channels, cos on odd, angle
  // pos / 10000^(2i/C)), the blocks' part the rest.
  const auto W = model->named_parameters()["model.embed_tokens.weight"].detach().to(torch::kFloat64);
  const int64_t C = W.size(1);
  const double scale = cfg.model.embed_scale == EmbedScale::SqrtD ? std::sqrt(static_cast<double>(C)) : 1.0;
  double emb_sum = 0, blk_sum = 0;
  for (int64_t b = 0; b < s.size(0); ++b)
    for (int64_t t = 0; t < s.size(1); ++t) {
      if (batch.targets[b][t].item<int64_t>() == data::kIgnore) continue;
      auto e = W[batch.inputs[b][t].item<int64_t>()] * scale;
      for (int64_t c = 0; c < C; ++c) {
        const double angle = static_cast<double>(t) / std::pow(10000.0, static_cast<double>(c / 2 * 2) / C);
        e[c] += c % 2 == 0 ? std::sin(angle) : std::cos(angle);
      }
      emb_sum += std::sqrt(e.pow(2).mean().item<double>());
      blk_sum += std::sqrt((s[b][t] - e).pow(2).mean().item<double>());
    }
  CHECK(std::stod(row(totals, "2", "pre").at(col_of(totals, "embedding rms"))) == Approx(emb_sum / n).margin(1e-3));
  CHECK(std::stod(row(totals, "2", "pre").at(col_of(totals, "blocks rms"))) == Approx(blk_sum / n).margin(1e-3));
  // Post-norm: the stream after the last block is a LayerNorm's output with γ = 1, β = 0 at
  // init, zero mean and unit variance per token, so its RMS is √(σ² / (σ² + ε)) ≈ 1.
  for (const char* depth : {"2", "3"})
    CHECK(std::stod(row(totals, depth, "post").at(col_of(totals, "stream rms"))) == Approx(1.0).margin(2e-3));
}

TEST_CASE("probe kv-decode: cached decoding equals recomputation — cache shrinks with KV heads", "[probe]") {
  auto r = probe_kv_decode({});
  const auto& t = r.tables.at(0).table;
  REQUIRE(t.rows.size() == 3);
  for (const auto& [heads, numbers] : std::vector<std::pair<std::string, int>>{{"4", 12288}, {"2", 6144}, {"1", 3072}}) {
    const auto& rw = t.rows.at(heads == "4" ? 0 : heads == "2" ? 1 : 2);
    CHECK(rw.at(1) == heads);
    CHECK(num(t, rw, "max |Δlogits|") < 1e-4);
    // The inference engine computes the module path's cached logits bit for bit (test_decoder.cpp).
    CHECK(rw.at(col_of(t, "engine max |Δlogits|")) == rw.at(col_of(t, "max |Δlogits|")));
    CHECK(num(t, rw, "cache numbers (all layers)") == numbers);  // 2 · Hk · 16 · 2 layers · 48 tokens
    CHECK(num(t, rw, "sizes.h") == numbers);
  }
}

TEST_CASE("probe mla: absorption exact without RoPE and with decoupled RoPE, wrong with RoPE on keys", "[probe]") {
  auto r = probe_mla({});
  const auto& t = table(r, "mla_scores");
  REQUIRE(t.rows.size() == 4);
  CHECK(num(t, t.rows[0], "max |Δ|") < 1e-4);
  CHECK(num(t, t.rows[1], "max |Δ|") > 0.05 * num(t, t.rows[1], "max |score|"));
  CHECK(num(t, t.rows[2], "max |Δ|") < 1e-4);
  CHECK(num(t, t.rows[3], "max |Δ|") < 1e-4);
  const auto& c = table(r, "mla_cache");
  CHECK(num(c, c.rows.at(0), "cached per token per layer") == 32 + 8);
  CHECK(num(c, c.rows.at(1), "cached per token per layer") == 2 * 4 * 16);
  CHECK(num(c, row(c, "deepseek-v2"), "cached per token per layer") == 512 + 64);
}

TEST_CASE("probe kv-table: published models per token at BF16", "[probe]") {
  auto r = probe_kv_table({});
  const auto& t = r.tables.at(0).table;
  const std::string b = "bytes per token (BF16)";
  CHECK(num(t, row(t, "llama2-7b"), b) == 524288);  // 2 · 32 heads · 128 · 32 layers · 2 bytes
  CHECK(num(t, row(t, "llama2-7b"), "GiB at 32768 tokens") == Approx(16.0));
  CHECK(num(t, row(t, "llama2-70b"), b) == 2 * 8 * 128 * 80 * 2);
  CHECK(num(t, row(t, "llama2-70b as MHA"), b) == 2 * 64 * 128 * 80 * 2);
  CHECK(num(t, row(t, "llama3-8b"), b) == 131072);
  CHECK(num(t, row(t, "deepseek-v2"), b) == (512 + 64) * 60 * 2);
}

TEST_CASE("probe rope: relative property, decay, layouts", "[probe]") {
  auto rel = probe_rope_relative({});
  const auto& t = table(rel, "rope_relative");
  REQUIRE(t.rows.size() == 4);
  const double s0 = num(t, t.rows[0], "RoPE (R_m q)·(R_n k)");
  for (const auto& rw : t.rows) {
    CHECK(num(t, rw, "RoPE (R_m q)·(R_n k)") == Approx(s0).margin(1e-4));
    CHECK(num(t, rw, "|R_m q|") == Approx(num(t, rw, "|q|")).margin(1e-4));
  }
  const auto& s = table(rel, "summary");
  CHECK(num(s, row(s, "sinusoidal score spread (max − min)"), "value") > 0.1);

  auto decay = probe_rope_decay({});
  const auto& d = decay.tables.at(0).table;
  REQUIRE(d.rows.size() == 11);
  for (const auto& rw : d.rows) {
    const double dist = std::stod(rw.at(0));
    double ref = 0;
    for (int i = 0; i < 32; ++i) ref += 2 * std::cos(dist * std::pow(10000.0, -i / 32.0));
    CHECK(num(d, rw, "score") == Approx(ref).margin(2e-3));
  }
  CHECK(num(d, row(d, "0"), "score") == Approx(64).margin(1e-4));

  auto layout = probe_rope_layout({});
  const auto& l = layout.tables.at(0).table;
  double differs = 0;
  for (const auto& rw : l.rows) {
    CHECK(num(l, rw, "|Δ|") < 1e-4);
    differs = std::max(differs, std::abs(num(l, rw, "interleaved") - num(l, rw, "half-split, not permuted")));
  }
  CHECK(differs > 0.1);  // without the permutation the layouts disagree
}

TEST_CASE("probe t5-buckets: the T5 reference bucket function", "[probe]") {
  auto r = probe_t5_buckets({});
  const auto& t = r.tables.at(0).table;
  REQUIRE(t.rows.size() == 22);
  for (const auto& rw : t.rows)
    CHECK(std::stoll(rw.at(1)) == t5_bucket_reference(std::stoll(rw.at(0)), 32, 128));
  CHECK(row(t, "16").at(1) == "16");
  CHECK(row(t, "128").at(1) == "31");
}

TEST_CASE("lmx probe: list, unknown name, CSV output", "[probe]") {
  auto list = test::run_lmx("probe --list");
  REQUIRE(list.code == 0);
  for (const auto& p : probes()) CHECK_THAT(list.output, Contains(p.name));
  auto bad = test::run_lmx("probe nonsense");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Contains("unknown probe 'nonsense'; valid: activations"));
  auto help = test::run_lmx("probe --help");
  CHECK_THAT(help.output, Contains("rope-layout"));
  test::TempDir dir;
  auto t5 = test::run_lmx("probe t5-buckets --csv " + dir.file("t5.csv"));
  REQUIRE(t5.code == 0);
  CHECK_THAT(t5.output, Contains("| distance |"));
  CHECK(read(dir.file("t5.csv")).rfind("distance,bucket,kind\n0,0,exact\n", 0) == 0);
  auto act = test::run_lmx("probe activations --csv " + dir.file("act.csv"));
  REQUIRE(act.code == 0);
  CHECK_THAT(read(dir.file("act_summary.csv")), Contains("silu minimum"));
  auto no_ckpt = test::run_lmx("probe sparsity");
  CHECK(no_ckpt.code == 2);
}
