// The factories of the component catalog (config/registry.h): make_ffn, make_norm,
// make_attention and make_position (model/ffn.h, norm.h, attention/attention.h,
// position/position.h) build the module a config names, from one row per name in registry.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/registry.h"

namespace lmx {
class Ffn;
class Norm;
class Attention;
class Position;
}  // namespace lmx

namespace lmx::registry {

using FfnMake = std::shared_ptr<Ffn> (*)(const ModelConfig&);
using NormMake = std::shared_ptr<Norm> (*)(const ModelConfig&, int64_t dim);
using AttentionMake = std::shared_ptr<Attention> (*)(const ModelConfig&, std::shared_ptr<Position>);
using PositionMake = std::shared_ptr<Position> (*)(const ModelConfig&);

// A component brought at run time by a program or test that links lmx: its catalog row and its
// factory in one call (tests/test_registry.cpp adds a squared-ReLU FFN this way). A built-in
// component is its file plus a row in each table instead.
void add_ffn(Entry entry, FfnMake make);
void add_norm(Entry entry, NormMake make);
void add_attention(Entry entry, AttentionMake make);
void add_position(Entry entry, PositionMake make);

// The names with a factory, in table order (equal to names(kind): tests/test_registry.cpp).
std::vector<std::string> factory_names(Kind kind);

}  // namespace lmx::registry
