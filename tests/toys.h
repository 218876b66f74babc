// The proof-by-addition tests (test_toy_activation.cpp, test_toy_position.cpp,
// test_toy_corpus.cpp) each add a component or corpus from outside lmx's sources, in one file,
// and run lmx's verbs on it. Their rows are added only where this test binary runs as lmx
// (tests/main.cpp, LMX_TEST_AS_LMX=1): there, the binary is lmx with the toys' rows, and the
// processes a verb starts (a sweep's or an ablation's runs: runtime::self_path()) are too. The
// test processes themselves keep the built-in catalog, so that every other test sees the rows
// lmx ships.
#pragma once
#include <string>
#include <vector>

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

}  // namespace lmx::test
