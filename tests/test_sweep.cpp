#include "catch.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <cstring>

#include "data/corpus.h"
#include "config/fields.h"
#include "experiments/spec.h"
#include "model/sizes.h"
#include "helpers.h"
#include "train/summary.h"
#include "util/error.h"
#include "util/fork_server.h"

using namespace lmx;
using lmx::test::TempDir;
namespace fs = std::filesystem;

TEST_CASE("experiment specs: points x grid, command-line axes, quick overrides", "[sweep]") {
  TempDir dir;
  dir.write("base.yaml", "model:\n  d_model: 32\n");
  auto path = dir.write("spec.yaml",
                        "kind: train\nbase: base.yaml\nseeds: [3, 4]\nset: {train.steps: 7}\n"
                        "points:\n  a: {model.ffn: relu}\n  b: {model.ffn: swiglu, model.d_ff: auto}\n"
                        "grid:\n  train.lr: [0.01, 0.02]\nquick: {train.steps: 2}\n");
  ExperimentSpec spec = load_spec(path);
  CHECK(spec.seeds == std::vector<uint64_t>{3, 4});
  add_cli_sets(spec, {"model.n_layers=1,3", "train.batch_size=8"});
  auto points = expand(spec, false);
  REQUIRE(points.size() == 2 * 2 * 2);
  CHECK(points[0].name == "a,train.lr=0.01,model.n_layers=1");
  CHECK(points[1].name == "a,train.lr=0.02,model.n_layers=1");
  CHECK(points[7].name == "b,train.lr=0.02,model.n_layers=3");
  CHECK(points[7].config.model.ffn == "swiglu");
  CHECK(points[7].config.model.n_layers == 3);
  CHECK(points[7].config.train.batch_size == 8);
  CHECK(points[7].config.train.steps == 7);
  CHECK(points[7].config.model.d_model == 32);
  CHECK(expand(spec, true)[0].config.train.steps == 2);
}

TEST_CASE("a spec point may start from its own base config", "[sweep]") {
  TempDir dir;
  dir.write("configs/base.yaml", "model:\n  d_model: 32\n");
  dir.write("configs/other.yaml", "model:\n  d_model: 48\n  ffn: gelu\n");
  auto path = dir.write("exp/spec.yaml",
                        "base: ../configs/base.yaml\nset: {train.steps: 5}\n"
                        "points:\n  one: {model.n_layers: 1}\n  other: {base: ../configs/other.yaml, model.n_layers: 3}\n");
  auto points = expand(load_spec(path), false);
  REQUIRE(points.size() == 2);
  CHECK(points[0].config.model.d_model == 32);
  CHECK(points[1].name == "other");
  CHECK(points[1].config.model.d_model == 48);
  CHECK(points[1].config.model.ffn == "gelu");
  CHECK(points[1].config.model.n_layers == 3);
  CHECK(points[1].config.train.steps == 5);
  dir.write("exp/bad.yaml", "base: ../configs/base.yaml\npoints:\n  x: {base: ../configs/missing.yaml}\n");
  CHECK_THROWS_WITH(expand(load_spec(dir.file("exp/bad.yaml")), false), Catch::Contains("missing.yaml"));
}

TEST_CASE("a spec names a built-in grammar bare and a grammar file relative to itself", "[sweep]") {
  // As a config and --set do: a value without "/" or "." is a built-in world (garden_v2), not a
  // file next to the spec; a path is resolved against the spec's folder.
  TempDir dir;
  dir.write("base.yaml", "model:\n  d_model: 32\n");
  auto path = dir.write("exp/spec.yaml",
                        "base: ../base.yaml\nset: {data.grammar: garden_v2}\n"
                        "points:\n  v1: {data.grammar: garden_v1}\n  file: {data.grammar: ../my_world.yaml}\n"
                        "  v2: {}\n");
  auto points = expand(load_spec(path), false);
  REQUIRE(points.size() == 3);
  CHECK(points[0].config.data.grammar == "garden_v1");
  CHECK(points[1].config.data.grammar == (fs::path(dir.file("my_world.yaml"))).lexically_normal().string());
  CHECK(points[2].config.data.grammar == "garden_v2");
  auto grid = dir.write("exp/grid.yaml", "base: ../base.yaml\ngrid:\n  data.grammar: [garden_v2, garden]\n");
  auto gpoints = expand(load_spec(grid), false);
  REQUIRE(gpoints.size() == 2);
  CHECK(gpoints[0].config.data.grammar == "garden_v2");
  CHECK(gpoints[1].config.data.grammar == "garden");
  // The one rule, for every way a value arrives.
  CHECK(resolve_key_value("data.grammar", "garden_v2", "/x") == "garden_v2");
  CHECK(resolve_key_value("data.grammar", "w.yaml", "/x") == "/x/w.yaml");
  CHECK(resolve_key_value("data.text_path", "corpus", "/x") == "/x/corpus");  // no built-in texts
  CHECK(resolve_key_value("train.lr", "0.1", "/x") == "0.1");
}

TEST_CASE("match_params re-matches the other points' d_ff to the reference's parameter count", "[sweep]") {
  TempDir dir;
  dir.write("base.yaml", "model:\n  vocab_size: 40\n  d_ff: 256\n");
  auto path = dir.write("spec.yaml",
                        "base: base.yaml\nmatch_params: plain\n"
                        "points:\n  plain: {model.ffn: relu}\n  gated: {model.ffn: swiglu, model.bias: false}\n"
                        "  near: {model.d_ff: 257}\n");
  auto points = expand(load_spec(path), false);
  REQUIRE(points.size() == 3);
  const int64_t target = count_params(points[0].config.model).total();
  CHECK(points[0].config.model.d_ff == 256);
  CHECK(points[2].config.model.d_ff == 257);  // within 1% already: left alone
  const ModelConfig& g = points[1].config.model;
  CHECK(g.d_ff != 256);
  CHECK(points[1].overrides.back() == "model.d_ff=" + std::to_string(g.d_ff));
  // the closest width: one more or one less is no closer (a naive scan over d_ff)
  const auto gap = [&](int f) { ModelConfig m = g; m.d_ff = f; return std::llabs(count_params(m).total() - target); };
  CHECK(gap(g.d_ff) <= gap(g.d_ff - 1));
  CHECK(gap(g.d_ff) <= gap(g.d_ff + 1));
  CHECK(gap(g.d_ff) < target / 100);
  dir.write("bad.yaml", "base: base.yaml\nmatch_params: nosuch\npoints:\n  a: {model.ffn: relu}\n");
  CHECK_THROWS_WITH(load_spec(dir.file("bad.yaml")), Catch::Contains("match_params") && Catch::Contains("nosuch"));
}

TEST_CASE("malformed specs are rejected before anything runs", "[sweep]") {
  TempDir dir;
  dir.write("base.yaml", "model:\n  d_model: 32\n");
  auto check = [&](const std::string& text, const std::string& fragment) {
    auto p = dir.write("bad.yaml", text);
    try {
      ExperimentSpec s = load_spec(p);
      expand(s, false);
      FAIL("expected an InputError for: " << text);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  check("base: base.yaml\nseedz: [1]\n", "seeds");
  check("base: base.yaml\npoints:\n  x: {model.d_modle: 3}\n", "d_model");
  check("base: base.yaml\ngrid:\n  train.lr: 0.1\n", "non-empty list");
  check("base: nothere.yaml\n", "nothere.yaml");
  check("seeds: [1]\n", "base");
  check("base: base.yaml\nkind: dance\n", "dance");
  check("base: base.yaml\nseeds: [-1]\n", "seeds");
}

TEST_CASE("aggregates come from the per-seed table, skipping failed seeds", "[sweep]") {
  Table seeds;
  seeds.header = {"name", "seed", "status", "test_ppl", "message"};
  seeds.add({"a", "0", "ok", "4.0", ""});
  seeds.add({"a", "1", "ok", "6.0", ""});
  seeds.add({"a", "2", "diverged", "", "step 3"});
  Table t = with_aggregates(seeds);
  REQUIRE(t.rows.size() == 3 + 6);
  CHECK(t.rows[3] == std::vector<std::string>{"a", "mean", "2 ok", "5.0000", ""});
  CHECK(t.rows[4][3] == "1.41421");  // sample std of {4, 6}
  CHECK(t.rows[5][3] == "4.0000");
  CHECK(t.rows[6][3] == "6.0000");
  // The 95% t-interval of the mean of {4, 6}: 5 ± t_{0.975,1} · √2/√2, t_{0.975,1} = 12.706205.
  CHECK(t.rows[7][1] == "ci95_lo");
  CHECK(t.rows[7][3] == "-7.70620");
  CHECK(t.rows[8][3] == "17.70620");
}

TEST_CASE("one value has no spread: no std of 0 and no plus-minus 0 in the Markdown", "[sweep]") {
  Table seeds;
  seeds.header = {"name", "seed", "status", "test_ppl", "wall_s", "message"};
  seeds.add({"a", "0", "ok", "4.0", "1.5", ""});
  seeds.add({"a", "1", "ok", "", "2.5", ""});  // no test ppl (e.g. not evaluated)
  Table t = with_aggregates(seeds);
  REQUIRE(t.rows.size() == 2 + 6);
  CHECK(t.rows[2][3] == "4.0000");  // mean of the one value
  CHECK(t.rows[3][3] == "");        // its std: none
  CHECK(t.rows[3][4] == "0.70711");
  const std::string md = summary_markdown(seeds);
  CHECK(md.find("± 0.000") == std::string::npos);
  CHECK(md.find("2.0 ± 0.7") != std::string::npos);
}

TEST_CASE("lmx sweep runs the grid in parallel jobs and writes one summary", "[sweep][cli]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0, 1]\nset: {train.steps: 6, train.eval_every: 0, data.train_docs: 100, "
                                      "data.val_docs: 20, data.test_docs: 20}\n");
  auto out = dir.file("out");
  auto r = lmx::test::run_lmx("-q sweep '" + spec + "' --set model.ffn=relu,swiglu --jobs 2 --out '" + out + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  Table t = read_csv(out + "/summary.csv");
  int ok_rows = 0;
  for (const auto& row : t.rows) ok_rows += row[2] == "ok";
  CHECK(ok_rows == 4);
  CHECK(r.output.find("model.ffn=swiglu") != std::string::npos);
  CHECK(fs::exists(out + "/runs/001-model.ffn=swiglu-s1/seed1/model.safetensors"));
}

// A safetensors file's tensor bytes (after its JSON header, whose metadata holds the wall time).
std::string tensor_bytes(const std::string& path) {
  const std::string s = lmx::test::read_file(path);
  uint64_t header = 0;
  REQUIRE(s.size() >= 8);
  std::memcpy(&header, s.data(), 8);
  REQUIRE(s.size() >= 8 + header);
  return s.substr(8 + header);
}

TEST_CASE("a sweep's runs forked by its fork server are the runs exec'd one by one, bit for bit",
          "[sweep][cli]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/llama.yaml") +
                                      "\nseeds: [0, 1]\nset: {train.steps: 6, train.eval_every: 3, data.train_docs: 100, "
                                      "data.val_docs: 20, data.test_docs: 20, train.batch_size: 8}\n");
  // Two jobs at one thread each (the lecture's way) and one job at two threads (its two parts at
  // once, OpenBLAS's and LibTorch's pools started in the forked process).
  for (const std::string jobs : {"--jobs 2 --threads 1", "--jobs 1 --threads 2"}) {
    INFO(jobs);
    auto forked = lmx::test::run_lmx("-v sweep '" + spec + "' " + jobs + " --out '" + dir.file("forked") + "'");
    INFO(forked.output);
    REQUIRE(forked.code == 0);
    CHECK(forked.output.find("forked by the fork server") != std::string::npos);
    auto exec = lmx::test::run_lmx("-v sweep '" + spec + "' " + jobs + " --out '" + dir.file("exec") + "'", LMX_SOURCE_DIR,
                                   "LMX_FORK_SERVER=0");
    INFO(exec.output);
    REQUIRE(exec.code == 0);
    CHECK(exec.output.find("fork server") == std::string::npos);
    int compared = 0;
    for (const auto& f : fs::recursive_directory_iterator(dir.file("forked/runs"))) {
      if (f.path().filename() != "metrics.csv") continue;
      const fs::path a = f.path().parent_path();
      const fs::path b = dir.file("exec/runs") / fs::relative(a, dir.file("forked/runs"));
      INFO(a.string());
      CHECK(lmx::test::metrics_without_speed((a / "metrics.csv").string()) ==
            lmx::test::metrics_without_speed((b / "metrics.csv").string()));
      CHECK(tensor_bytes((a / "model.safetensors").string()) == tensor_bytes((b / "model.safetensors").string()));
      ++compared;
    }
    CHECK(compared == 2);
    fs::remove_all(dir.file("forked"));
    fs::remove_all(dir.file("exec"));
  }
}

TEST_CASE("a bad LMX_FORK_SERVER is refused in one line before a sweep writes anything", "[sweep][cli]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/llama.yaml") + "\nseeds: [0]\n");
  auto r = lmx::test::run_lmx("sweep '" + spec + "' --out '" + dir.file("out") + "'", LMX_SOURCE_DIR, "LMX_FORK_SERVER=yes");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("LMX_FORK_SERVER=yes: expected 0 or 1"));
  CHECK(!fs::exists(dir.file("out")));
}

TEST_CASE("a fork server that cannot start or stops answering is given up once, with the reason", "[sweep]") {
  std::string why;
  fork_server::Client missing;
  CHECK(missing.spawn("/nonexistent/lmx", {"lmx", "--version"}, {}, "", false, &why) == -1);
  CHECK_THAT(why, Catch::Contains("cannot start it"));
  why.clear();
  CHECK(missing.spawn("/nonexistent/lmx", {"lmx", "--version"}, {}, "", false, &why) == -1);
  CHECK(why.empty());  // said once
  fork_server::Client gone;  // a program that exits at once: no answer
  CHECK(gone.spawn("/bin/true", {"lmx", "--version"}, {}, "", false, &why) == -1);
  CHECK_THAT(why, Catch::Contains("stopped answering"));
}

TEST_CASE("run_lmx forks what sh would exec: the same words, output and exit code", "[sweep][cli]") {
  // shell_words splits as sh does, or declines.
  for (const std::string line : {"a b  c", "'x y' z", "--set 'a=[1, 2]' \"q r\"", "it\\'s", "'' e"}) {
    INFO(line);
    std::vector<std::string> words;
    REQUIRE(lmx::test::shell_words(line, words));
    std::string joined;
    for (const auto& w : words) joined += w + "\n";
    CHECK(lmx::test::run_shell("printf '%s\\n' " + line).output == joined);
  }
  std::vector<std::string> words;
  for (const std::string line : {"a | b", "a > f", "$HOME", "a;b", "\"$x\"", "*.yaml", "'open"}) CHECK(!lmx::test::shell_words(line, words));
  // Forked (plain words) and through sh (a redirection makes run_lmx use it): the same result.
  for (const std::string args : {"config show configs/llama.yaml", "config show configs/missing.yaml", "frobnicate"}) {
    INFO(args);
    const auto forked = lmx::test::run_lmx(args);
    const auto shell = lmx::test::run_lmx(args + " < /dev/null");
    CHECK(forked.code == shell.code);
    CHECK(forked.output == shell.output);
  }
}

TEST_CASE("a sweep starts its runs from the binary it started as, even once that file is replaced",
          "[sweep][cli]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0, 1]\nset: {train.steps: 2, train.eval_every: 0, data.train_docs: 100, "
                                      "data.val_docs: 20, data.test_docs: 20, train.batch_size: 8}\n");
  // A copy of lmx next to it (its tokenizer module lives there) runs the sweep, which waits for
  // its first job slot (an empty jobserver pipe) while the copy is deleted and its path given
  // to a file that is no program (a rebuild does the same). Then one slot: both runs must start.
  const std::string copy = std::string(LMX_BINARY) + ".replaced-" + std::to_string(::getpid());
  const std::string d = dir.path.string();
  auto r = lmx::test::run_shell(
      "cd '" + d + "' && cp '" + LMX_BINARY + "' '" + copy + "' && mkfifo slots && exec 3<>slots && " +
      "{ LMX_JOBSERVER=slots '" + copy + "' --threads 1 sweep '" + spec + "' --out out > sweep.log 2>&1 & } && " +
      // The event, not a sleep: the sweep logs its job slots once it runs (its binary open).
      "pid=$! && for i in $(seq 6000); do grep -q 'sharing job slots' sweep.log && break; sleep 0.01; done && " +
      "rm '" + copy + "' && echo 'not lmx' > '" + copy + "' && printf x >&3 && " +
      "{ wait $pid; echo rc=$?; rm -f '" + copy + "'; cat sweep.log; }");
  INFO(r.output);
  CHECK(r.output.find("rc=0") != std::string::npos);
  Table t = read_csv(d + "/out/summary.csv");
  int ok_rows = 0;
  for (const auto& row : t.rows) ok_rows += row[2] == "ok";
  CHECK(ok_rows == 2);
}

TEST_CASE("lmx ablate --one-at-a-time walks original -> llama one change per step", "[sweep][cli]") {
  TempDir dir;
  auto out = dir.file("ab");
  auto r = lmx::test::run_lmx("-q ablate --one-at-a-time --jobs 2 --set train.steps=4 --set train.eval_every=0 "
                              "--set data.train_docs=100 --set data.val_docs=20 --set data.test_docs=20 --out '" + out + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  Table t = read_csv(out + "/ablation.csv");
  REQUIRE(t.rows.size() == 7);  // start + norm placement, norm, ffn, position, kv heads, bias
  CHECK(t.rows[1][1] == "norm_placement=pre");
  CHECK(t.rows[3][1] == "ffn=swiglu d_ff=auto");
  // GQA and dropping the biases remove weights: d_ff is re-matched so that every step stays
  // within 1% of the start's parameter count.
  CHECK(t.rows[5][1].rfind("n_kv_heads=2 d_ff=", 0) == 0);
  CHECK(t.rows[6][1].rfind("bias=false d_ff=", 0) == 0);
  const double start = std::stod(t.rows[0][2]);
  for (const auto& row : t.rows) CHECK(std::abs(std::stod(row[2]) - start) <= 0.01 * start);
  // Without re-matching, the last step is the llama preset: its parameter count.
  auto plain = lmx::test::run_lmx("-q ablate --one-at-a-time --no-match-params --jobs 2 --set train.steps=2 "
                                  "--set train.eval_every=0 --set data.train_docs=50 --set data.val_docs=20 "
                                  "--set data.test_docs=20 --out '" + dir.file("plain") + "'");
  REQUIRE(plain.code == 0);
  Table tp = read_csv(dir.file("plain") + "/ablation.csv");
  Config llama = load_config(lmx::test::source_path("configs/llama.yaml"));
  llama.model.vocab_size = data::load_corpus(llama.data).vocab.size();
  CHECK(tp.rows.back()[2] == std::to_string(count_params(llama.model).total()));
  CHECK(lmx::test::run_lmx("ablate --one-at-a-time --order norm,swap --out '" + dir.file("x") + "'").code == 2);
}
