// The test binary's main: Catch2's session, or, with LMX_TEST_AS_LMX=1, lmx itself with the
// rows the proof-by-addition tests add (tests/toys.h): how those tests run lmx's verbs, and the
// runs a verb starts, on a component that is not in lmx's sources.
#include <cstdlib>
#include <cstring>

#if __has_include(<catch2/catch.hpp>)
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#else
#include <catch2/catch_session.hpp>
#endif

#include "cli/entry.h"
#include "toys.h"

int main(int argc, char** argv) {
  if (const char* as_lmx = std::getenv("LMX_TEST_AS_LMX"); as_lmx && std::strcmp(as_lmx, "1") == 0) {
    for (const auto add : lmx::test::toy_rows()) add();
    return lmx::cli::run_main(argc, argv);
  }
  return Catch::Session().run(argc, argv);
}
