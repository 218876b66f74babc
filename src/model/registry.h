// The factories of the component catalog (config/registry.h): make_ffn, make_norm,
// make_attention and make_position build the module a config names (declared and defined with
// the rows, registry.cpp). registry.cpp holds the built-in rows, one per variant: name,
// description, traits and factory (an FFN's: its activation).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/registry.h"
#include "kernels/cpu_kernels.h"

namespace lmx {
class Ffn;
class Norm;
class Attention;
class Position;
}  // namespace lmx

namespace lmx {

// The module the config's row builds: cfg.ffn, cfg.norm (of width dim), cfg.attention (with the
// layer's position scheme) and cfg.position.
std::shared_ptr<Ffn> make_ffn(const ModelConfig& cfg);
std::shared_ptr<Norm> make_norm(const ModelConfig& cfg, int64_t dim);
std::shared_ptr<Attention> make_attention(const ModelConfig& cfg, std::shared_ptr<Position> position);
std::shared_ptr<Position> make_position(const ModelConfig& cfg);

}  // namespace lmx

namespace lmx::registry {

using FfnMake = std::shared_ptr<Ffn> (*)(const ModelConfig&);
using NormMake = std::shared_ptr<Norm> (*)(const ModelConfig&, int64_t dim);
using AttentionMake = std::shared_ptr<Attention> (*)(const ModelConfig&, std::shared_ptr<Position>);
using PositionMake = std::shared_ptr<Position> (*)(const ModelConfig&);

// A component's catalog row and its factory, in one call: registry.cpp adds the built-in rows
// this way when the program starts, and a program or test that links lmx brings its own later
// (tests/test_registry.cpp adds a squared-ReLU FFN).
void add_ffn(Entry entry, FfnMake make);
// An FFN row built from an activation φ the fused kernels run: W2·φ(W1x), or W2·(φ(W1x) ⊙ W3x)
// where the entry's traits are gated. act: a built-in kernel op (kernels::ActKind), or Custom
// with a program's own scalar φ and φ' (act.custom, kept alive by the caller; act.beta is
// model.swish_beta's at build time). The FFN modules, the decoding engine and the kernel tests
// take φ from the row.
void add_ffn(Entry entry, kernels::ActOp act);
void add_norm(Entry entry, NormMake make);
void add_attention(Entry entry, AttentionMake make);
void add_position(Entry entry, PositionMake make);

// The names with a factory, in table order (equal to names(kind): tests/test_registry.cpp).
std::vector<std::string> factory_names(Kind kind);

// The activations of the FFN rows: the plain rows named by their activation (relu, gelu, ...),
// in table order, and the activation an FFN row applies (none for a row with its own factory).
struct ActivationRow {
  std::string name;
  kernels::ActOp act;
};
std::vector<ActivationRow> activations();
std::optional<kernels::ActOp> ffn_activation(const std::string& ffn);
// The activation named `name` (a plain row of activations()); InputError naming the valid ones.
kernels::ActOp activation_named(const std::string& name);

}  // namespace lmx::registry
