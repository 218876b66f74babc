// The component catalog (registry.h). Its rows are added by the layer that builds the modules:
// model/registry.cpp's built-in rows when the program starts, then any a program adds itself.
#include "config/registry.h"

#include <fmt/format.h>

#include <map>

#include "util/error.h"
#include "util/strings.h"

namespace lmx::registry {

Traits gated() { Traits t; t.gated = true; return t; }
Traits latent() { Traits t; t.latent = true; return t; }
Traits rotary() { Traits t; t.rotary = true; return t; }
Traits llama(Traits t) { t.llama = true; return t; }

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {Kind::Ffn, Kind::Norm, Kind::Attention, Kind::Position, Kind::Corpus};
  return all;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return "ffn";
    case Kind::Norm: return "norm";
    case Kind::Attention: return "attention";
    case Kind::Position: return "position";
    case Kind::Corpus: return "corpus";
  }
  return "?";
}

const char* kind_key(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return "model.ffn";
    case Kind::Norm: return "model.norm";
    case Kind::Attention: return "model.attention";
    case Kind::Position: return "model.position";
    case Kind::Corpus: return "data.kind";
  }
  return "?";
}

namespace {
// A kind's rows in the order they were added (a function-local static: it exists before the
// first row is added, whichever file's static initialization comes first).
std::vector<Entry>& rows_of(Kind kind) {
  static std::map<Kind, std::vector<Entry>> rows;
  return rows[kind];
}
}  // namespace

const std::vector<Entry>& entries(Kind kind) { return rows_of(kind); }

void add(Kind kind, Entry entry) {
  auto& rows = rows_of(kind);
  for (const auto& e : rows)
    if (e.name == entry.name) throw std::logic_error(fmt::format("registry: {} '{}' exists already", kind_name(kind), e.name));
  rows.push_back(std::move(entry));
}

std::vector<std::string> names(Kind kind) {
  std::vector<std::string> out;
  for (const auto& e : entries(kind)) out.push_back(e.name);
  return out;
}

const Entry& find(Kind kind, const std::string& name) {
  for (const auto& e : entries(kind))
    if (e.name == name) return e;
  throw InputError(fmt::format("unknown {} '{}'; valid: {}", kind_name(kind), name, join(names(kind))),
                   "`lmx list` prints every component with its description");
}

std::string llama_name(Kind kind) {
  for (const auto& e : entries(kind))
    if (e.traits.llama) return e.name;
  return "";
}

const Traits& ffn(const ModelConfig& m) { return find(Kind::Ffn, m.ffn).traits; }
const Traits& norm(const ModelConfig& m) { return find(Kind::Norm, m.norm).traits; }
const Traits& attention(const ModelConfig& m) { return find(Kind::Attention, m.attention).traits; }
const Traits& position(const ModelConfig& m) { return find(Kind::Position, m.position).traits; }
const Traits& corpus(const DataConfig& d) { return find(Kind::Corpus, d.kind).traits; }

}  // namespace lmx::registry
