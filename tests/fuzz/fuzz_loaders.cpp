// libFuzzer driver (optional, coverage-guided; CI runs the deterministic tests/test_fuzz.cpp):
// any byte string given to the config loader or the experiment-spec loader must load or
// throw lmx::Error; any other exception aborts, which libFuzzer reports with the input.
// Built and run by scripts/fuzz.sh (clang -fsanitize=fuzzer,address,undefined).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <unistd.h>

#include "config/config.h"
#include "experiments/spec.h"
#include "util/error.h"

#ifndef LMX_FUZZ_TARGET
#define LMX_FUZZ_TARGET 0  // 0 = config, 1 = spec
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    if (LMX_FUZZ_TARGET == 0) {
      lmx::Config c = lmx::parse_config(text, "fuzz.yaml");
      lmx::parse_config(lmx::to_yaml(c), "fuzz.yaml (resolved)");
    } else {
      static const std::string path = "/tmp/lmx-libfuzzer-spec-" + std::to_string(getpid()) + ".yaml";
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      lmx::ExperimentSpec spec = lmx::load_spec(path);
      lmx::expand(spec, false);
    }
  } catch (const lmx::Error&) {
    // a clean refusal
  } catch (const std::exception& e) {
    std::fprintf(stderr, "escaped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
