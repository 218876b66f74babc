// The field table: one row per config key, the only place that knows how to read, write,
// compare and document a field. Everything else (YAML loading, --set, `config show`,
// `config fields`, equality) walks this table.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/strings.h"  // closest, join (the messages here use them)

namespace YAML { class Node; }

namespace lmx {

struct Field {
  std::string key;       // "section.name", e.g. "model.d_model"
  std::string type;      // int | float | bool | string | choice
  std::string help;      // one line: meaning and example
  bool zero_is_auto = false;              // int fields where 0 means "derive it" (written `auto`)
  double min = -1e300, max = 1e300;       // allowed range for numbers
  std::function<std::vector<std::string>()> choices;  // for `choice` fields
  std::function<std::string(const Config&)> get;       // the value as a YAML scalar
  // Sets from a YAML scalar; throws InputError prefixed with `where`.
  std::function<void(Config&, const YAML::Node&, const std::string& where)> set;
};

const std::vector<Field>& config_fields();
const Field* find_field(const std::string& key);

// Markdown table of every field: key, type, default, meaning (docs/CONFIG.md).
std::string fields_markdown();

// The keys that name files (data.grammar, data.text_path): a relative value is resolved against
// the directory of the file that sets it (the working directory for --set), and kept absolute,
// so that a checkpoint or sweep names the same file from any directory.
// A bare data.grammar value (no "/" or ".") names a built-in world (garden, garden_v2,
// garden_v1) and stays as it is; resolve_key_value applies both rules to any key's value.
bool is_path_key(const std::string& key);
std::string resolve_path(const std::string& value, const std::string& base_dir);
std::string resolve_key_value(const std::string& key, const std::string& value, const std::string& base_dir);

// The one YAML document of `text` (a config's, spec's or grammar's); a second document (after
// ---) is an InputError naming `source`, line and column. YAML::LoadAll can loop forever on some
// malformed input, so documents are counted by a parser stopped after the second.
YAML::Node load_single_document(const std::string& text, const std::string& source);

// Where a node is, for error messages: "file:line:column" (just "file" when the node has no mark).
std::string yaml_at(const std::string& file, const YAML::Node& node);

// YAML integer text in strict decimal: "010" (octal 8 to yaml-cpp), "0x1F", "+5" and "1_000" are
// ambiguous or surprising and return nullopt, as does anything that is not an integer or does
// not fit int64.
std::optional<long long> strict_integer(const std::string& text);

}  // namespace lmx
