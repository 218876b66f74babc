// Test helpers on checkpoints (LibTorch): bitwise comparison of two runs' weights.
#pragma once
#include "catch.h"

#include "torch_api.h"

#include <map>
#include <string>

#include "formats/checkpoint.h"

namespace lmx::test {

// Every model parameter of two checkpoints bitwise equal.
inline void require_same_weights(const std::string& a, const std::string& b) {
  Checkpoint ca = read_checkpoint(a), cb = read_checkpoint(b);
  std::map<std::string, torch::Tensor> tb(cb.tensors.begin(), cb.tensors.end());
  int compared = 0;
  for (const auto& [name, t] : ca.tensors) {
    if (name.rfind("model.", 0) != 0 && name.rfind("lm_head", 0) != 0) continue;
    INFO(name);
    REQUIRE(tb.count(name));
    CHECK(torch::equal(t, tb.at(name)));
    ++compared;
  }
  CHECK(compared > 0);
}

}  // namespace lmx::test
