// Analytic sizes (model/sizes.h) against published numbers and hand counts, and the
// `lmx params` / `lmx kvcache` verbs. test_sizes_numel.cpp checks the same counts against
// the numel() of real models.
#include "catch.h"
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "config/config.h"
#include "data/corpus.h"
#include "helpers.h"
#include "model/sizes.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::run_lmx;
using lmx::test::source_path;
using lmx::test::TempDir;

namespace {

ModelConfig preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_config(source_path("configs/models/" + name + ".yaml"), sets).model;
}

}  // namespace

TEST_CASE("parameter counts of the published models", "[sizes]") {
  // Sums of numel() over the Hugging Face checkpoints.
  CHECK(count_params(preset("llama2-7b")).total() == 6738415616LL);
  CHECK(count_params(preset("llama2-70b")).total() == 68976648192LL);
  CHECK(count_params(preset("llama3-8b")).total() == 8030261248LL);
  CHECK(count_params(preset("llama3-70b")).total() == 70553706496LL);
  CHECK(count_params(preset("mistral-7b")).total() == 7241732096LL);

  // Llama 2 7B by component: the embedding and head are V·C each, a block is
  // 4·C² (attention) + 3·C·F (SwiGLU) + 2·C (two RMSNorm scales).
  ParamCounts p = count_params(preset("llama2-7b"));
  CHECK(p.embedding == 32000LL * 4096);
  CHECK(p.head == 32000LL * 4096);
  CHECK(p.position == 0);
  CHECK(p.attention_per_layer == 4LL * 4096 * 4096);
  CHECK(p.ffn_per_layer == 3LL * 4096 * 11008);
  CHECK(p.norms_per_layer == 2 * 4096);
  CHECK(p.final_norm == 4096);
  CHECK(p.n_layers == 32);

  // GQA: k and v project to 8 KV heads of 128.
  CHECK(count_params(preset("llama2-70b")).attention_per_layer == 2LL * 8192 * 8192 + 2LL * 8192 * 8 * 128);
}

TEST_CASE("FFN parameter counts of lecture 01 item 2 (d = 64, biases)", "[sizes]") {
  ModelConfig m;
  m.vocab_size = 10;
  m.d_model = 64;
  m.bias = true;
  m.ffn = "relu";
  m.d_ff = 256;
  CHECK(count_params(m).ffn_per_layer == 64 * 256 + 256 + 256 * 64 + 64);  // 33,088
  m.ffn = "swiglu";
  CHECK(count_params(m).ffn_per_layer == 2 * (64 * 256 + 256) + 256 * 64 + 64);  // 49,728
  m.d_ff = 0;  // auto: 2/3 of the plain 4·64 = 256, rounded to nearest: 171
  CHECK(count_params(m).ffn_per_layer == 2 * (64 * 171 + 171) + 171 * 64 + 64);  // 33,238
}

TEST_CASE("small configs counted by hand", "[sizes]") {
  ModelConfig m;
  m.vocab_size = 11;
  m.d_model = 8;
  m.n_layers = 3;
  m.n_heads = 2;
  m.d_ff = 16;
  m.max_seq_len = 5;

  SECTION("textbook layout: layernorm pre, relu, sinusoidal, biases, untied") {
    ParamCounts p = count_params(m);
    CHECK(p.attention_per_layer == 4 * (8 * 8 + 8));
    CHECK(p.ffn_per_layer == 8 * 16 + 16 + 16 * 8 + 8);
    CHECK(p.norms_per_layer == 2 * 2 * 8);
    CHECK(p.final_norm == 2 * 8);
    CHECK(p.head == 11 * 8 + 11);
    CHECK(p.total() == 11 * 8 + 3 * (288 + 280 + 32) + 16 + 99);
  }
  SECTION("post-norm has no final norm; tied head without bias has no parameters") {
    m.norm_placement = NormPlacement::Post;
    m.tie_embeddings = true;
    m.bias = false;
    m.norm = "rmsnorm";
    ParamCounts p = count_params(m);
    CHECK(p.final_norm == 0);
    CHECK(p.head == 0);
    CHECK(p.norms_per_layer == 2 * 8);
  }
  SECTION("positions: learned is max_seq_len·C; t5_bias is buckets·H, shared or per layer; the rest have none") {
    m.position = "learned";
    CHECK(count_params(m).position == 5 * 8);
    m.position = "t5_bias";
    m.t5_num_buckets = 7;
    CHECK(count_params(m).position == 7 * 2);  // one table shared by the layers (T5)
    m.t5_shared = false;
    CHECK(count_params(m).position == 3 * 7 * 2);
    for (const char* pos : {"none", "sinusoidal", "rope", "alibi"}) {
      m.position = pos;
      CHECK(count_params(m).position == 0);
    }
  }
  SECTION("MQA: one KV head of width 4") {
    m.n_kv_heads = 1;
    m.bias = false;
    CHECK(count_params(m).attention_per_layer == 8 * 8 + 2 * 8 * 4 + 8 * 8);
  }
  SECTION("MLA with and without a query latent") {
    m.attention = "mla";
    m.position = "rope";
    m.bias = false;
    m.norm = "rmsnorm";
    m.mla_kv_rank = 6;
    m.mla_rope_dim = 2;
    m.mla_q_rank = 0;
    // q 8→2·(4+2), kv-down 8→6+2, kv-up 6→2·2·4, out 8→8, RMSNorm scale on the 6-wide latent
    CHECK(count_params(m).attention_per_layer == 8 * 12 + 8 * 8 + 6 * 16 + 8 * 8 + 6);
    m.mla_latent_norm = false;
    CHECK(count_params(m).attention_per_layer == 8 * 12 + 8 * 8 + 6 * 16 + 8 * 8);
    m.mla_latent_norm = true;
    CHECK(kv_cache_size(m).per_token_per_layer == 6 + 2);
    m.mla_q_rank = 5;
    // q-down 8→5, q-up 5→12, RMSNorm scales on both latents (5 and 6)
    CHECK(count_params(m).attention_per_layer == 8 * 5 + 5 * 12 + 8 * 8 + 6 * 16 + 8 * 8 + 5 + 6);
  }
  SECTION("vocab auto cannot be counted") {
    m.vocab_size = 0;
    CHECK_THROWS_AS(count_params(m), InputError);
    CHECK_THROWS_AS(forward_flops(m, 4), InputError);
  }
}

TEST_CASE("KV cache of the published models", "[sizes]") {
  // Llama 2 7B: 2 (K, V) · 32 KV heads · 128 · 32 layers · 2 bytes.
  KVCacheSize l7 = kv_cache_size(preset("llama2-7b"));
  CHECK(l7.per_token_per_layer == 2 * 32 * 128);
  CHECK(l7.bytes_per_token(2) == 524288);                // bf16
  CHECK(l7.bytes(2, 32768, 1) == 16LL << 30);           // 16 GiB at 32K
  CHECK(l7.bytes(4, 4096, 3) == 524288LL * 2 * 4096 * 3);  // fp32

  CHECK(kv_cache_size(preset("llama2-70b")).bytes_per_token(2) == 327680);
  CHECK(kv_cache_size(preset("llama2-70b", {"model.n_kv_heads=64"})).bytes_per_token(2) == 2621440);
  CHECK(kv_cache_size(preset("llama3-8b")).bytes_per_token(2) == 131072);
  CHECK(kv_cache_size(preset("llama3-70b")).bytes_per_token(2) == 327680);
  CHECK(kv_cache_size(preset("mistral-7b")).bytes_per_token(2) == 131072);
  // Mistral 7B's rolling cache (W = 4096, every layer): at 32K tokens 8x less than full
  // attention (Jiang et al. 2023, section 2), 512 MiB in bf16; within the window the same.
  const KVCacheSize mistral = kv_cache_size(preset("mistral-7b"));
  CHECK(mistral.windowed_layers == 32);
  CHECK(mistral.bytes(2, 32768, 1) == 131072LL * 4096);
  CHECK(mistral.bytes(2, 32768, 1) * 8 == kv_cache_size(preset("mistral-7b", {"model.sliding_window=0"})).bytes(2, 32768, 1));
  CHECK(mistral.bytes(2, 4000, 3) == 131072LL * 4000 * 3);
  // Gemma 2's pattern (window_global_every 2): layers 1, 3, ... see everything, 0, 2, ... W.
  const KVCacheSize alt = kv_cache_size(preset("mistral-7b", {"model.window_global_every=2"}));
  CHECK(alt.windowed_layers == 16);
  CHECK(alt.bytes(2, 32768, 1) == 4096LL * (16 * 32768 + 16 * 4096));
  CHECK(kv_cache_size(preset("mistral-7b", {"model.window_global_every=3"})).windowed_layers == 22);

  // DeepSeek-V2 MLA: latent 512 + RoPE key 64 per token per layer, 60 layers.
  KVCacheSize ds = kv_cache_size(preset("deepseek-v2"));
  CHECK(ds.per_token_per_layer == 576);
  CHECK(ds.per_token() == 576 * 60);
  CHECK(ds.bytes_per_token(2) == 69120);
}

TEST_CASE("forward FLOPs: 2 per weight per token plus attention's T² term", "[sizes]") {
  ModelConfig m;
  m.vocab_size = 10;
  m.d_model = 4;
  m.n_layers = 1;
  m.n_heads = 2;
  m.d_ff = 8;
  m.bias = false;
  // Weights: attention 4·4·4, FFN 2·4·8, head 10·4.
  CHECK(matmul_params(m) == 64 + 64 + 40);
  ForwardFlops f = forward_flops(m, 3);
  CHECK(f.matmul == 2 * 3 * 168);
  // Per (query, key) pair: 2 heads · (2·2 for Q·Kᵀ + 2·2 for A·V) = 16.
  CHECK(f.attention_causal == 16 * 6);  // pairs 3 + 2 + 1
  CHECK(f.attention_full == 16 * 9);
  CHECK(f.total() == f.matmul + f.attention_causal);
  CHECK(f.per_token(false) == Approx((2 * 3 * 168 + 144) / 3.0));

  m.tie_embeddings = true;  // a tied head is still a matmul
  CHECK(matmul_params(m) == 168);

  // Llama 2 7B: every parameter but the embedding and the norm scales is a matmul weight.
  ModelConfig l7 = preset("llama2-7b");
  CHECK(matmul_params(l7) == 6738415616LL - 32000LL * 4096 - 65LL * 4096);
  ForwardFlops big = forward_flops(l7, 4096);
  CHECK(big.attention_full == 2LL * 32 * 256 * 32 * 4096 * 4096);

  // MLA: queries and keys have D + R dims, values D.
  ModelConfig ds = preset("deepseek-v2");
  CHECK(forward_flops(ds, 2).attention_full == 2LL * 128 * (192 + 128) * 60 * 4);
  CHECK_THROWS_AS(forward_flops(l7, 0), InputError);
}

TEST_CASE("every preset under configs/models loads and validates", "[sizes]") {
  for (const char* name : {"llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "mistral-7b", "deepseek-v2"}) {
    INFO(name);
    Config c = load_config(source_path(std::string("configs/models/") + name + ".yaml"));
    CHECK(parse_config(to_yaml(c), "round-trip") == c);
  }
}

TEST_CASE("lmx params and lmx kvcache", "[sizes][cli]") {
  TempDir dir;
  SECTION("params: exact grouped integers per component, CSV") {
    auto r = run_lmx("params configs/models/llama2-7b.yaml configs/models/llama2-70b.yaml --csv " +
                     dir.file("p.csv"));
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("6,738,415,616") != std::string::npos);
    CHECK(r.output.find("68,976,648,192") != std::string::npos);
    CHECK(r.output.find("| FFN") != std::string::npos);
    std::string csv = lmx::test::read_file(dir.file("p.csv"));
    CHECK(csv.find("config,component,per_layer,layers,count\n") == 0);
    CHECK(csv.find("llama2-7b,total,202383360,32,6738415616\n") != std::string::npos);
    CHECK(csv.find("llama2-70b,token embeddings,,,262144000\n") != std::string::npos);
  }
  SECTION("kvcache: bytes per token and for the context, CSV") {
    auto r = run_lmx("kvcache configs/models/llama2-7b.yaml configs/models/deepseek-v2.yaml "
                     "--context 4096 --batch 2 --dtype fp32 --csv " + dir.file("k.csv"));
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("1,048,576") != std::string::npos);  // Llama 2 7B fp32 bytes per token
    CHECK(r.output.find("8.00 GiB") != std::string::npos);   // × 4096 × 2
    std::string csv = lmx::test::read_file(dir.file("k.csv"));
    CHECK(csv.find("llama2-7b,MHA,8192,32,262144,fp32,1048576,4096,2,8589934592,0,0\n") != std::string::npos);
    CHECK(csv.find("deepseek-v2,MLA,576,60,34560,fp32,138240,4096,2,1132462080,0,0\n") != std::string::npos);
  }
  SECTION("kvcache: a sliding window caps the cache (Mistral 7B: 4096 tokens in every layer)") {
    auto r = run_lmx("kvcache configs/models/mistral-7b.yaml --csv " + dir.file("w.csv"));
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("4,096 tokens in 32 of 32 layers") != std::string::npos);
    CHECK(r.output.find("512.00 MiB") != std::string::npos);  // 32768 tokens: 8x less than 4 GiB
    const std::string csv = lmx::test::read_file(dir.file("w.csv"));
    CHECK(csv.find("mistral-7b,GQA,2048,32,65536,bf16,131072,32768,1,536870912,4096,32\n") != std::string::npos);
  }
  SECTION("kvcache: --set applies to every config (Llama 2 70B as MHA)") {
    auto r = run_lmx("kvcache configs/models/llama2-70b.yaml --set model.n_kv_heads=64");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("2,621,440") != std::string::npos);
    CHECK(r.output.find("80.00 GiB") != std::string::npos);  // 2,621,440 × 32,768 bytes
  }
  SECTION("params: vocab auto is the dataset's; FLOPs line at --seq-len") {
    auto r = run_lmx("params configs/textbook.yaml --seq-len 64 --csv " + dir.file("t.csv"));
    INFO(r.output);
    REQUIRE(r.code == 0);
    Config cfg = load_config(source_path("configs/textbook.yaml"));
    const int vocab = data::load_corpus(cfg.data).vocab.size();
    REQUIRE(vocab > 0);
    cfg.model.vocab_size = vocab;
    CHECK(r.output.find(fmt::format("vocab {} (from the dataset)", vocab)) != std::string::npos);
    CHECK(lmx::test::read_file(dir.file("t.csv")).find(fmt::format("textbook,total,49984,2,{}\n", count_params(cfg.model).total())) !=
          std::string::npos);
    CHECK(r.output.find("at T = 64") != std::string::npos);
  }
  SECTION("bad input: one readable line, exit 2") {
    auto bad_dtype = run_lmx("kvcache configs/models/llama2-7b.yaml --dtype int8");
    CHECK(bad_dtype.code == 2);
    CHECK(bad_dtype.output.find("--dtype: int8 not in") != std::string::npos);
    CHECK(run_lmx("kvcache configs/models/llama2-7b.yaml --dtype fp16").code == 0);
    auto missing = run_lmx("params configs/models/nope.yaml");
    CHECK(missing.code == 2);
    CHECK(missing.output.find("nope.yaml") != std::string::npos);
  }
}
