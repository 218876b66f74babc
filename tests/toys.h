// The proof-by-addition tests (test_toy_activation.cpp, test_toy_position.cpp,
// test_toy_corpus.cpp) each add a component or corpus from outside lmx's sources, in one file,
// and run lmx's verbs on it. Their rows are added only where this test binary runs as lmx
// (tests/main.cpp, LMX_TEST_AS_LMX=1): there, the binary is lmx with the toys' rows, and the
// processes a verb starts (a sweep's or an ablation's runs: runtime::self_path()) are too. The
// test processes themselves keep the built-in catalog, so that every other test sees the rows
// lmx ships.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.h"
#include "helpers.h"
#include "util/runtime.h"

namespace lmx::test {

using AddRows = void (*)();

// The toys' row-adding functions, in the order their files registered them (static init).
inline std::vector<AddRows>& toy_rows() {
  static std::vector<AddRows> adders;
  return adders;
}
struct ToyRows {
  explicit ToyRows(AddRows add) { toy_rows().push_back(add); }
};

// This test binary as lmx (with the toys' rows) on the given shell-quoted arguments, from `dir`
// (default: the source root); stdout and stderr together.
inline RunResult run_as_lmx(const std::string& args, const std::string& dir = LMX_SOURCE_DIR) {
  return run_shell("cd '" + dir + "' && LMX_TEST_AS_LMX=1 '" + runtime::self_path() + "' " + args + " 2>&1");
}

// The checks every toy goes through, by lmx's own verbs:
// `lmx list` names it;
inline void check_listed(const std::string& name) {
  const auto list = run_as_lmx("list");
  INFO(list.output);
  REQUIRE(list.code == 0);
  CHECK_THAT(list.output, Catch::Contains(name));
}
// `lmx train` (one seed, quiet, one thread) with these arguments into out finishes, its
// summary.csv has the seed ok; returns the checkpoint.
inline std::string check_trains(const std::string& out, const std::string& args) {
  const auto train = run_as_lmx("-q --threads 1 --out " + out + " train configs/textbook.yaml" + args);
  INFO(train.output);
  REQUIRE(train.code == 0);
  CHECK_THAT(read_file(out + "/summary.csv"), Catch::Contains("textbook,0,ok,"));
  return out + "/seed0/model.safetensors";
}
// `lmx eval` on it prints the test row (and `column` where given);
inline void check_evaluates(const std::string& ckpt, const std::string& column = "") {
  const auto eval = run_as_lmx("eval " + ckpt);
  INFO(eval.output);
  CHECK(eval.code == 0);
  CHECK_THAT(eval.output, Catch::Contains("| test  |"));
  if (!column.empty()) CHECK_THAT(eval.output, Catch::Contains(column));
}
// `lmx generate` decodes on the engine (no fallback said), the text the modules give.
inline void check_engine_decodes(const std::string& ckpt) {
  const auto engine = run_as_lmx("-v generate " + ckpt + " --max-new 40 --ignore-eos --seed 2");
  const auto modules = run_as_lmx("generate " + ckpt + " --max-new 40 --ignore-eos --seed 2 --module-path");
  INFO(engine.output);
  REQUIRE(engine.code == 0);
  REQUIRE(modules.code == 0);
  CHECK(engine.output.find("decoding through the modules") == std::string::npos);
  const auto text = [](const std::string& s) { return s.substr(std::min(s.find("<bos>"), s.size())); };
  CHECK(!text(modules.output).empty());
  CHECK(text(engine.output).substr(0, text(modules.output).size()) == text(modules.output));
}

// `lmx ablate --order ffn` from the textbook preset to the textbook with model.ffn = ffn (two
// runs at once, spawned as lmx) finishes into out; returns its ablation.md.
inline std::string check_ablates_ffn(const std::string& out, const std::string& ffn, const std::string& args) {
  std::filesystem::create_directories(out);
  std::ofstream(out + "/to.yaml") << "extends: " << source_path("configs/textbook.yaml") << "\nmodel:\n  ffn: " << ffn << "\n";
  const auto ablate = run_as_lmx("-q --out " + out + "/runs ablate --one-at-a-time --from configs/textbook.yaml --to " + out +
                                 "/to.yaml --order ffn --jobs 2" + args);
  INFO(ablate.output);
  REQUIRE(ablate.code == 0);
  return read_file(out + "/runs/ablation.md");
}

}  // namespace lmx::test
