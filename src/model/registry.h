// Component registry: one aligned name → (description, factory) table per component kind.
// The names and descriptions are visible here without LibTorch so that config validation,
// `lmx list` and `--help` all print the same tables; the rows and their factories live in
// model/registry.cpp (make_ffn, make_norm, make_attention, make_position in model/*.h).
#pragma once
#include <string>
#include <vector>

namespace lmx::registry {

enum class Kind { Ffn, Norm, Attention, Position };

struct Entry {
  std::string name;
  std::string description;
};

const std::vector<Kind>& kinds();
const char* kind_name(Kind kind);          // "ffn", "norm", "attention", "position"
std::vector<Entry> entries(Kind kind);      // in table order
std::vector<std::string> names(Kind kind);  // in table order

}  // namespace lmx::registry
