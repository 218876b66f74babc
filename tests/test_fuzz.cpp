// No input crashes lmx: a deterministic mutation fuzzer over the three kinds of files a user
// hands to lmx (config YAML, experiment specs, safetensors checkpoints). Every mutated,
// truncated or spliced variant of the real files must either load or throw lmx::Error
// (InputError / RuntimeError); any other exception fails the test, a crash kills it.
// Seeded and bounded (a few seconds); LMX_FUZZ_SCALE=N runs N times as many inputs.
#include "catch.h"
#include <sys/stat.h>
#include "torch_api.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>

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

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// n cases times LMX_FUZZ_SCALE (default 1; 0.25 under the sanitizers, scripts/sanitize.sh), at
// least 1.
int cases(int n) {
  const char* s = std::getenv("LMX_FUZZ_SCALE");
  const double f = s ? std::atof(s) : 1.0;
  return std::max(1, static_cast<int>(n * (f > 0 ? f : 1.0)));
}

// Tokens that YAML, JSON and the config schema care about.
const std::vector<std::string>& dictionary() {
  static const std::vector<std::string> d = {
      ":", "\n", " ", "  ", "- ", "[", "]", "{", "}", ",", "#", "'", "\"", "&a ", "*a", "!!binary ", "!!str ", "? ",
      "|", ">", "~", "null", "true", "no", "0", "-1", "1e309", "-1e309", ".nan", ".inf", "99999999999999999999",
      "2147483648", "-2147483649", "0x1F", "1.5", "", "\t", "\r\n", "%YAML 1.2\n", "---\n", "...\n", "<<: *a\n",
      "extends: textbook.yaml\n", "extends: [a]\n", "model:\n", "train:\n", "data:\n", "model.ffn", "swiglu", "mla",
      "rope", "alibi", "t5_bias", "packed", "text", "auto", "d_model", "n_heads", "n_kv_heads", "vocab_size",
      "points:\n", "grid:\n", "seeds: ", "base: ", "set: ", "quick: ", "kind: ", "\xff\xfe", std::string("\0", 1),
      "\"dtype\":\"F32\"", "\"shape\":[", "\"data_offsets\":[", "\"__metadata__\"", "4294967296", "18446744073709551615",
      "-0", "1e-400", "[[[[[[[[[[[[[[[[", "{{{{{{{{{{{{{{{{",
  };
  return d;
}

// One random mutation of `s` (or several stacked).
std::string mutate(std::string s, std::mt19937_64& rng, const std::vector<std::string>& others) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng() % n); };
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < rounds; ++k) {
    switch (rng() % 10) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng() % 256);
        break;
      case 2:  // insert a dictionary token
        s.insert(pick(s.size() + 1), dictionary()[pick(dictionary().size())]);
        break;
      case 3: {  // delete a range
        if (s.empty()) break;
        const size_t a = pick(s.size()), n = 1 + pick(std::min<size_t>(64, s.size() - a));
        s.erase(a, n);
        break;
      }
      case 4: {  // duplicate a range
        if (s.empty()) break;
        const size_t a = pick(s.size()), n = 1 + pick(std::min<size_t>(64, s.size() - a));
        s.insert(pick(s.size() + 1), s.substr(a, n));
        break;
      }
      case 5:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 6: {  // splice in a piece of another file
        const std::string& o = others[pick(others.size())];
        if (o.empty()) break;
        const size_t a = pick(o.size()), n = 1 + pick(std::min<size_t>(200, o.size() - a));
        s.insert(pick(s.size() + 1), o.substr(a, n));
        break;
      }
      case 7: {  // replace a digit run with an extreme number
        const size_t a = s.find_first_of("0123456789", pick(s.size() + 1));
        if (a == std::string::npos) break;
        const size_t e = s.find_first_not_of("0123456789.", a);
        static const char* extremes[] = {"0", "-1", "4294967295", "99999999999", "1e308", "-0.0", "nan", "007", "1e-320"};
        s.replace(a, (e == std::string::npos ? s.size() : e) - a, extremes[pick(9)]);
        break;
      }
      case 8:  // swap two lines' indentation by inserting spaces at a line start
        if (auto nl = s.find('\n', pick(s.size() + 1)); nl != std::string::npos) s.insert(nl + 1, std::string(pick(5), ' '));
        break;
      default:  // random bytes
        for (size_t i = 0, n = 1 + pick(16); i < n; ++i) s.insert(pick(s.size() + 1), 1, static_cast<char>(rng() % 256));
    }
  }
  return s;
}

struct Tally {
  int inputs = 0, accepted = 0, input_errors = 0, runtime_errors = 0;
};

// Runs f; an lmx::Error is a clean refusal, anything else fails the test (the input is saved).
template <typename F>
void expect_clean(Tally& tally, const std::string& kind, const std::string& input, F&& f) {
  ++tally.inputs;
  std::string failure;
  try {
    f();
    ++tally.accepted;
    return;
  } catch (const InputError& e) {
    ++tally.input_errors;
    return;
  } catch (const RuntimeError& e) {
    ++tally.runtime_errors;
    return;
  } catch (const Error& e) {
    failure = std::string("lmx::Error with exit code ") + std::to_string(e.exit_code()) + ": " + e.what();
  } catch (const c10::Error& e) {
    failure = std::string("c10::Error: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    failure = std::string("std::exception: ") + e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  const std::string saved = (fs::temp_directory_path() / ("lmx-fuzz-" + kind + "-" + std::to_string(tally.inputs))).string();
  spit(saved, input);
  FAIL(kind << " input #" << tally.inputs << " (saved to " << saved << ") escaped as " << failure);
}

void report(const std::string& kind, const Tally& t, double seconds) {
  std::cerr << fmt::format("fuzz {}: {} inputs in {:.2f} s ({} accepted, {} InputError, {} RuntimeError)\n", kind,
                           t.inputs, seconds, t.accepted, t.input_errors, t.runtime_errors);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> config_texts() {
  std::vector<std::string> texts;
  for (const char* dir : {"configs", "configs/models", "experiments"})
    for (const auto& e : fs::directory_iterator(lmx::test::source_path(dir)))
      if (e.path().extension() == ".yaml") texts.push_back(lmx::test::read_file(e.path().string()));
  return texts;
}

}  // namespace

TEST_CASE("fuzz: mutated config files load or give an lmx error", "[fuzz][config]") {
  TempDir dir;
  // extends: relative to the file, so the presets sit next to the mutated file.
  fs::create_directory_symlink(lmx::test::source_path("configs/models"), dir.path / "models");
  for (const char* name : {"textbook.yaml", "llama.yaml", "original.yaml"})
    fs::create_symlink(lmx::test::source_path(std::string("configs/") + name), dir.path / name);
  const auto seeds = config_texts();
  std::mt19937_64 rng(20261129);
  Tally tally;
  const auto t0 = std::chrono::steady_clock::now();
  const int n = cases(3000);
  for (int i = 0; i < n; ++i) {
    const std::string text = mutate(seeds[rng() % seeds.size()], rng, seeds);
    if (i % 8 == 0) {  // through a file: extends, file errors
      const std::string path = dir.file("fuzz.yaml");
      spit(path, text);
      expect_clean(tally, "config", text, [&] { load_config(path); });
    } else {
      expect_clean(tally, "config", text, [&] {
        Config c = parse_config(text, "fuzz.yaml");
        // What a valid config is used for next: printing and reparsing it must work too.
        Config back = parse_config(to_yaml(c), "fuzz.yaml (resolved)");
        if (to_yaml(back) != to_yaml(c)) throw std::logic_error("to_yaml -> parse_config is not a round trip");
      });
    }
  }
  // --set overrides: mutated key=value strings.
  const std::vector<std::string> sets = {"model.d_model=64", "train.lr=0.003", "model.ffn=swiglu", "data.layout=packed"};
  for (int i = 0; i < cases(1000); ++i) {
    const std::string s = mutate(sets[rng() % sets.size()], rng, sets);
    expect_clean(tally, "override", s, [&] { load_config(lmx::test::source_path("configs/textbook.yaml"), {s}); });
  }
  report("config", tally, since(t0));
  CHECK(tally.input_errors > tally.inputs / 4);  // most mutations are caught
  CHECK(tally.accepted > 0);                    // and the fuzzer is not only producing junk
}

TEST_CASE("fuzz: mutated experiment specs load and expand or give an lmx error", "[fuzz][sweep]") {
  TempDir dir;
  fs::create_directory_symlink(lmx::test::source_path("configs"), dir.path / "configs");
  fs::create_directories(dir.path / "experiments");
  std::vector<std::string> seeds;
  for (const auto& e : fs::directory_iterator(lmx::test::source_path("experiments")))
    if (e.path().extension() == ".yaml") seeds.push_back(lmx::test::read_file(e.path().string()));
  seeds.push_back(
      "base: ../configs/textbook.yaml\nseeds: [0, 1]\nset: {train.steps: 6}\n"
      "grid:\n  train.lr: [0.001, 0.003]\n  model.ffn: [relu, swiglu]\nquick: {train.steps: 2}\n");
  const auto others = config_texts();
  std::mt19937_64 rng(8);
  Tally tally;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = (dir.path / "experiments" / "fuzz.yaml").string();
  for (int i = 0; i < cases(1500); ++i) {
    const std::string text = mutate(seeds[rng() % seeds.size()], rng, others);
    spit(path, text);
    expect_clean(tally, "spec", text, [&] {
      ExperimentSpec spec = load_spec(path);
      if (spec.points.size() * std::max<size_t>(1, spec.grid.size()) < 64) {
        add_cli_sets(spec, {"train.lr=0.001,0.002"});
        expand(spec, i % 2 == 0);
      }
    });
  }
  report("spec", tally, since(t0));
  CHECK(tally.input_errors > tally.inputs / 4);
  CHECK(tally.accepted > 0);
}

TEST_CASE("fuzz: corrupt and truncated checkpoints give an lmx error, never a crash", "[fuzz][checkpoint]") {
  TempDir dir;
  Config cfg = parse_config(
      "model: {vocab_size: 40, d_model: 16, n_layers: 1, n_heads: 2, d_ff: 32, max_seq_len: 32}\ndata: {seq_len: 16}\n", "tiny.yaml");
  torch::manual_seed(0);
  ModernLM model(cfg.model);
  auto optimizer = make_optimizer(model, cfg.train);
  {  // one step so that AdamW has state, then a resumable checkpoint as train_run writes it
    auto x = torch::randint(0, 40, {2, 8});
    model->forward(x).sum().backward();
    optimizer->step();
  }
  TrainState st;
  st.status = RunStatus::Interrupted;
  st.steps = 1;
  auto meta = state_metadata(st);
  meta["seed"] = "0";
  const std::string good_path = dir.file("good.safetensors");
  save_checkpoint(good_path, model, cfg, optimizer_tensors(*model, *optimizer), meta);
  const std::string good = lmx::test::read_file(good_path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, good.data(), 8);
  const std::string good_yaml = to_yaml(read_checkpoint(good_path).config);

  std::mt19937_64 rng(77);
  Tally tally;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = dir.file("fuzz.safetensors");
  const std::vector<std::string> others = {good.substr(8, header_len), "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"};
  for (int i = 0; i < cases(1500); ++i) {
    std::string bytes;
    switch (i % 4) {
      case 0:  // mutate the JSON header only, keep the length field consistent
      case 1: {
        std::string header = mutate(good.substr(8, header_len), rng, others);
        uint64_t n = header.size();
        bytes = std::string(reinterpret_cast<const char*>(&n), 8) + header + good.substr(8 + header_len);
        break;
      }
      case 2:  // anywhere (length field, data), or truncated
        bytes = mutate(good, rng, others);
        break;
      default:  // truncated at a random byte
        bytes = good.substr(0, rng() % good.size());
    }
    spit(path, bytes);
    expect_clean(tally, "checkpoint", bytes, [&] {
      Checkpoint ck = read_checkpoint(path);
      if (to_yaml(ck.config) != good_yaml) return;  // another (valid) model: building it could be huge
      ModernLM m = load_model(ck);
      auto opt = make_optimizer(m, ck.config.train);
      parse_state(ck);
      restore_optimizer(*m, *opt, ck);
    });
  }
  report("checkpoint", tally, since(t0));
  CHECK(tally.input_errors > tally.inputs / 2);
}

TEST_CASE("fuzz: the lmx binary turns bad files into one error line and exit 2", "[fuzz][cli]") {
  TempDir dir;
  const auto seeds = config_texts();
  std::mt19937_64 rng(5);
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string text = mutate(seeds[rng() % seeds.size()], rng, seeds);
    const std::string path = dir.write(fmt::format("c{}.yaml", i), text);
    auto r = lmx::test::run_lmx("config show '" + path + "'");
    INFO(text << "\n---\n" << r.output);
    REQUIRE((r.code == 0 || r.code == 2));
    if (r.code == 2) {
      ++refused;
      CHECK(r.output.rfind("lmx: error: ", 0) == 0);
      // One line (plus an optional hint line).
      const auto lines = std::count(r.output.begin(), r.output.end(), '\n');
      CHECK(lines <= 2);
    }
  }
  CHECK(refused > 0);
  // A truncated checkpoint given to eval and generate.
  auto bytes = std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13);
  const std::string ck = dir.write("bad.safetensors", bytes);
  for (const char* verb : {"eval", "generate"}) {
    auto r = lmx::test::run_lmx(std::string(verb) + " '" + ck + "'");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("bad.safetensors") != std::string::npos);
  }
}

TEST_CASE("fuzz regressions: inputs that once escaped as other exceptions", "[fuzz]") {
  TempDir dir;
  // scripts/fuzz.sh config: a complex (`? `) key made yaml-cpp throw BadConversion (exit 1).
  for (const char* text : {"? position:\n", "model:\n  ? [a]\n  : 1\n", "? {a: b}\n", "model: {? : 3}\n"}) {
    INFO(text);
    try {
      parse_config(text, "k.yaml");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("k.yaml", 0) == 0);
    }
    const std::string spec = dir.write("s.yaml", std::string("base: x.yaml\n") + text);
    CHECK_THROWS_AS(load_spec(spec), InputError);
  }
  // test_fuzz checkpoint: a number that overflows double in the JSON header (json out_of_range).
  const std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,2701e308]}}";
  uint64_t n = header.size();
  const std::string path = dir.write("o.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header + "abcd");
  CHECK_THROWS_AS(read_safetensors(path), InputError);
}
