// Hostile inputs by class (issue 16): command lines and files crafted to crash, hang, exhaust
// memory or wrap a size. Each is refused with one short error line and exit 2 (or an lmx error
// in process), never a crash, a hang or a wrong number. (The mutation fuzzer over the same
// kinds of files is tests/test_fuzz.cpp.)
#include "catch.h"
#include <sys/stat.h>
#include "torch_api.h"

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "config/config.h"
#include "config/fields.h"
#include "data/grammar.h"
#include "experiments/spec.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "helpers.h"
#include "model/sizes.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/error.h"

using namespace lmx;
using lmx::test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Hostile {
  std::string args;    // lmx arguments (shell-quoted where needed)
  std::string expect;  // a piece of the error line
};

// Runs lmx under a timeout (a hang fails instead of blocking the suite); its stderr only (a
// verb may print results to stdout before an error).
lmx::test::RunResult run_bounded(const std::string& args) {
  return lmx::test::run_shell("cd '" + std::string(LMX_SOURCE_DIR) + "' && timeout 120 '" + LMX_BINARY + "' " + args +
                              " 2>&1 >/dev/null");
}

void expect_refused(const Hostile& h) {
  auto r = run_bounded(h.args);
  INFO(h.args.substr(0, 300) << "\n---\n" << r.output.substr(0, 2000));
  CHECK(r.code == 2);
  CHECK(r.output.rfind("lmx: error: ", 0) == 0);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') <= 2);  // one line (plus a hint)
  CHECK(r.output.size() < 1500);
  CHECK(r.output.find(h.expect) != std::string::npos);
  CHECK(r.output.find("179769") == std::string::npos);  // no DBL_MAX range
}

// A grammar whose rules double at each level: 2^levels words per document.
std::string doubling_grammar(int levels) {
  std::string g = "start: A0\nslots:\n  poss: {he: his}\nrules:\n";
  for (int i = 0; i < levels; ++i) g += fmt::format("  A{}:\n    - 1 A{} A{}\n", i, i + 1, i + 1);
  g += fmt::format("  A{}:\n    - 1 w\n", levels);
  return g;
}

}  // namespace

TEST_CASE("hostile command lines and files: exit 2 with one line, no crash, hang or wrapped size", "[fuzz][cli][hostile]") {
  TempDir dir;
  const std::string q = "'" + dir.path.string() + "/";  // quoted path prefix
  REQUIRE(mkfifo(dir.file("fifo.yaml").c_str(), 0644) == 0);
  dir.write("extends_fifo.yaml", "extends: fifo.yaml\n");
  dir.write("big.yaml", doubling_grammar(26));
  dir.write("dup_key.yaml", "model:\n  d_model: 64\n  d_model: 128\n");
  dir.write("dup_section.yaml", "model: {d_model: 64}\ntrain: {steps: 3}\nmodel: {n_layers: 1}\n");
  dir.write("dup_extends.yaml", "extends: " + lmx::test::source_path("configs/textbook.yaml") +
                                    "\nextends: " + lmx::test::source_path("configs/llama.yaml") + "\n");
  dir.write("two_docs.yaml", "model: {d_model: 64}\n---\ntrain: {steps: 3}\n");
  dir.write("octal.yaml", "extends: " + lmx::test::source_path("configs/textbook.yaml") + "\ntrain: {steps: 010}\n");
  const std::string base = "base: " + lmx::test::source_path("configs/textbook.yaml") + "\n";
  dir.write("seeds.yaml", base + "seeds: [0, 0]\n");
  dir.write("points.yaml", base + "grid:\n  train.lr: [0.001, 0.001]\n");
  dir.write("quick.yaml", base + "set: {train.steps: 5}\nquick: {train.steps: -1}\n");
  dir.write("spec_dup.yaml", base + "set: {train.steps: 5, train.steps: 6}\n");
  dir.write("spec_docs.yaml", base + "---\n" + base);
  dir.write("file", "x");
  fs::create_directory(dir.path / "folder");
  const std::string cfg = "configs/textbook.yaml";
  const std::vector<Hostile> cases = {
      // 1. crashes and hangs
      {"extrapolate --positions '' --out " + q + "ex1'", "--positions is empty"},
      {"extrapolate --positions rope,rope --out " + q + "ex2'", "given twice"},
      {"--threads 100000 config show " + cfg, "at most"},
      {"config show " + q + "extends_fifo.yaml'", "not a regular file"},
      {"config show " + q + "fifo.yaml'", "not a regular file"},
      {"data stats --set data.grammar=" + q + "big.yaml'", "longest document has 67108864 words"},
      // 5. exact sizes
      {"params " + cfg + " --set model.vocab_size=100 --set model.d_model=1073741824 --set model.d_ff=1073741824 "
       "--set model.n_layers=4096", "does not fit in a 64-bit integer"},
      {"config show " + cfg + " --set model.d_model=1073741824 --set model.d_ff=auto", "d_ff auto"},
      {"kvcache configs/models/llama2-70b.yaml --context 4000000000000000000", "does not fit in a 64-bit integer"},
      {"probe kv-table --context 4000000000000000000", "does not fit in a 64-bit integer"},
      {"params " + cfg + " --set model.vocab_size=100 --seq-len 4000000000000000000", "does not fit in a 64-bit integer"},
      // 6. duplicates and ambiguity
      {"config show " + q + "dup_key.yaml'", "'model.d_model' is given twice"},
      {"config show " + q + "dup_section.yaml'", "'model' is given twice"},
      {"config show " + q + "dup_extends.yaml'", "'extends' is given twice"},
      {"config show " + q + "two_docs.yaml'", "second YAML document"},
      {"config show " + q + "octal.yaml'", "decimal integer"},
      {"config show " + cfg + " --set train.steps=010", "decimal integer"},
      {"train " + cfg + " --seeds 0,0 --out " + q + "t1'", "seed 0 is given twice"},
      {"sweep " + q + "seeds.yaml' --out " + q + "s1'", "seed 0 is given twice"},
      {"sweep " + q + "points.yaml' --out " + q + "s2'", "is given twice"},
      {"sweep " + q + "quick.yaml' --out " + q + "s3'", "quick"},
      {"sweep " + q + "spec_dup.yaml' --out " + q + "s4'", "'train.steps' is given twice"},
      {"sweep " + q + "spec_docs.yaml' --out " + q + "s5'", "second YAML document"},
      {"train --resume " + q + "file' --out " + q + "other'", "different directories"},
      // 7. values that cannot train
      {"config show " + cfg + " --set train.adam_eps=0", "train.adam_eps"},
      {"config show " + cfg + " --set model.position=rope --set model.rope_scaling=yarn --set model.yarn_beta_fast=1 "
       "--set model.yarn_beta_slow=2", "yarn_beta_fast"},
      {"ablate --one-at-a-time --tolerance nan", "--tolerance"},
      {"sweep experiments/01_ffn.yaml --shard 0/99999999999", "--shard"},
      {"generate " + q + "none.safetensors' --temperature nan", "--temperature"},
      {"eval " + q + "none.safetensors' --seq-len 0", "--seq-len"},
      {"eval " + q + "none.safetensors' --seq-len -5", "--seq-len"},
      {"--seed 99999999999999999999 config show " + cfg, "--seed"},
      // 8. exit codes and messages
      {"config show " + q + std::string(100000, 'x') + ".yaml'", "bytes)"},
      {"train " + cfg + " --out " + q + "file'", "names a file"},
      {"train " + cfg + " --n-seeds 0", "> 0"},
      {"params " + cfg + " --set model.vocab_size=100 --csv " + q + "folder'", "is a directory"},
  };
  for (const auto& h : cases) expect_refused(h);
  // Nothing was created for a refused command, and no .tmp was left behind.
  for (const char* out : {"ex1", "ex2", "t1", "s1", "s2", "s3", "s4", "s5", "other"})
    CHECK_FALSE(fs::exists(dir.path / out));
  CHECK_FALSE(fs::exists(dir.file("folder.tmp")));
  // --set before or after the config, as the user likes.
  auto a = lmx::test::run_lmx("config show --set model.d_model=48 " + cfg);
  auto b = lmx::test::run_lmx("config show " + cfg + " --set model.d_model=48");
  CHECK(a.code == 0);
  CHECK(a.output == b.output);
  CHECK(a.output.find("d_model: 48") != std::string::npos);
}

TEST_CASE("hostile grammars: bounded documents and nesting, duplicate rules refused", "[fuzz][data][hostile]") {
  // 2^17 = 131072 words per document: over the bound; 2^16 = 65536: fine.
  CHECK_THROWS_WITH(data::parse_grammar(doubling_grammar(17), "g.yaml"), Catch::Contains("longest document has 131072 words"));
  CHECK_NOTHROW(data::parse_grammar(doubling_grammar(16), "g.yaml"));
  std::string deep = "start: A0\nslots:\n  poss: {he: his}\nrules:\n";
  for (int i = 0; i < 300; ++i) deep += fmt::format("  A{}:\n    - 1 A{}\n", i, i + 1);
  deep += "  A300:\n    - 1 w\n";
  CHECK_THROWS_WITH(data::parse_grammar(deep, "g.yaml"), Catch::Contains("nest 301 deep"));
  CHECK_THROWS_WITH(data::parse_grammar("start: S\nslots:\n  poss: {he: his}\nrules:\n  S:\n    - 1 w\n  S:\n    - 1 v\n", "g.yaml"),
                    Catch::Contains("defined twice"));
  TempDir dir;
  REQUIRE(mkfifo(dir.file("g.yaml").c_str(), 0644) == 0);
  CHECK_THROWS_AS(data::load_grammar(dir.file("g.yaml")), InputError);  // not opened: a FIFO blocks
}

TEST_CASE("duplicates and ambiguity in configs and specs are refused", "[fuzz][config][hostile]") {
  for (const char* text : {"model: {d_model: 64, d_model: 128}\n", "model: {}\nmodel: {}\n", "train: {steps: 010}\n",
                           "train: {steps: -007}\n", "train: {steps: 0x10}\n", "model: {d_model: 64}\n---\nx: 1\n"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_config(text, "k.yaml"), InputError);
  }
  CHECK(parse_config("train: {steps: 10}\n", "k.yaml").train.steps == 10);
  CHECK(strict_integer("0") == 0);
  CHECK(strict_integer("-12") == -12);
  CHECK_FALSE(strict_integer("010"));
  CHECK_FALSE(strict_integer("99999999999999999999"));
  CHECK_FALSE(strict_integer("1e3"));
  CHECK_FALSE(strict_integer(""));
  TempDir dir;
  const std::string base = "base: " + lmx::test::source_path("configs/textbook.yaml") + "\n";
  auto spec = [&](const std::string& body) { return load_spec(dir.write("s.yaml", base + body)); };
  CHECK_THROWS_WITH(spec("seeds: [1, 2, 1]\n"), Catch::Contains("seed 1 is given twice"));
  CHECK_THROWS_WITH(spec("seeds: [01]\n"), Catch::Contains("decimal"));
  CHECK_THROWS_WITH(spec("points:\n  a: {train.lr: 0.1}\n  a: {train.lr: 0.2}\n"), Catch::Contains("'a' is given twice"));
  CHECK_THROWS_WITH(spec("grid:\n  train.lr: [0.1]\n  train.lr: [0.2]\n"), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(spec("seeds: [0]\nseeds: [1]\n"), Catch::Contains("'seeds' is given twice"));
  CHECK_THROWS_WITH(expand(spec("grid:\n  model.ffn: [relu, relu]\n"), false), Catch::Contains("given twice"));
  ExperimentSpec cli = spec("seeds: [0]\n");
  add_cli_sets(cli, {"train.lr=0.1,0.1"});
  CHECK_THROWS_WITH(expand(cli, false), Catch::Contains("given twice"));
  // The quick block is checked without --quick too.
  CHECK_THROWS_WITH(expand(spec("quick: {model.ffn: nope}\n"), false), Catch::Contains("quick"));
  CHECK(expand(spec("quick: {train.steps: 3}\n"), true).front().config.train.steps == 3);
}

TEST_CASE("exact sizes: counts that do not fit int64 are refused, never wrapped", "[fuzz][sizes][hostile]") {
  ModelConfig m = load_config(lmx::test::source_path("configs/textbook.yaml")).model;
  m.vocab_size = 100;
  CHECK(count_params(m).total() > 0);
  ModelConfig wide = m;
  wide.d_model = 1 << 30, wide.d_ff = 1 << 30, wide.n_heads = 1, wide.n_layers = 4096;
  CHECK_THROWS_AS(count_params(wide).total(), InputError);
  CHECK_THROWS_AS(forward_flops(m, int64_t(4e18)), InputError);
  CHECK_THROWS_AS(kv_cache_size(m).bytes(2, int64_t(4e18), 4), InputError);
  CHECK(kv_cache_size(m).bytes(2, 1000, 2) == kv_cache_size(m).bytes_per_token(2) * 2000);
  CHECK_THROWS_AS(size_mul(int64_t(1) << 62, 4), InputError);
  CHECK_THROWS_AS(size_add(std::numeric_limits<int64_t>::max(), 1), InputError);
  CHECK(size_mul(-3, 4) == -12);
  // d_ff auto = 4·d_model must fit an int: refused by validate, never -2^31.
  CHECK_THROWS_WITH(load_config(lmx::test::source_path("configs/textbook.yaml"), {"model.d_model=1073741824", "model.d_ff=auto"}),
                    Catch::Contains("d_ff auto"));
}

TEST_CASE("relative paths resolve against the file that sets them", "[fuzz][config][hostile]") {
  TempDir dir;
  dir.write("a/base.yaml", "extends: " + lmx::test::source_path("configs/textbook.yaml") +
                               "\ndata: {grammar: g.yaml, text_path: texts}\n");
  dir.write("b/c.yaml", "extends: ../a/base.yaml\n");
  dir.write("b/d.yaml", "extends: ../a/base.yaml\ndata: {grammar: own.yaml}\n");
  const Config c = load_config(dir.file("b/c.yaml"));
  CHECK(c.data.grammar == dir.file("a/g.yaml"));
  CHECK(c.data.text_path == dir.file("a/texts"));
  CHECK(load_config(dir.file("b/d.yaml")).data.grammar == dir.file("b/own.yaml"));
  // --set: relative to the working directory; absolute stays.
  const Config s = load_config(dir.file("b/c.yaml"), {"data.grammar=x.yaml", "data.text_path=/abs/t"});
  CHECK(s.data.grammar == (fs::current_path() / "x.yaml").lexically_normal().string());
  CHECK(s.data.text_path == "/abs/t");
  // A spec's set: relative to the spec.
  dir.write("s/spec.yaml", "base: ../b/c.yaml\nset: {data.grammar: g2.yaml}\n");
  CHECK(expand(load_spec(dir.file("s/spec.yaml")), false).front().config.data.grammar == dir.file("s/g2.yaml"));
}

TEST_CASE("checkpoints that describe more than they hold are refused before allocating", "[fuzz][checkpoint][hostile]") {
  TempDir dir;
  Config cfg = parse_config(
      "model: {vocab_size: 40, d_model: 16, n_layers: 1, n_heads: 2, d_ff: 32, max_seq_len: 32}\ndata: {seq_len: 16}\n", "tiny.yaml");
  ModernLM model(cfg.model);
  // A config of 4096 layers of width 65536 over the tiny model's weights.
  Config forged = cfg;
  forged.model.n_layers = 4096, forged.model.d_model = 65536, forged.model.d_ff = 65536;
  const std::string path = dir.file("forged.safetensors");
  save_checkpoint(path, model, forged);
  CHECK_THROWS_WITH(load_model(read_checkpoint(path)), Catch::Contains("describes"));
  // The lmx verbs that load a model say so with exit 2.
  for (const char* verb : {"eval", "generate"}) {
    auto r = lmx::test::run_lmx(std::string(verb) + " '" + path + "'");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("describes") != std::string::npos);
  }
  // A header shape whose product wraps around 2^64 (to 0 bytes) is not allocated.
  const std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776,16],\"data_offsets\":[0,0]}}";
  uint64_t n = header.size();
  const std::string wrap = dir.write("wrap.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header);
  CHECK_THROWS_WITH(read_safetensors(wrap), Catch::Contains("more numbers than"));
}
