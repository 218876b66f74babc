// The garden grammar as data: rules of weighted choices over words, rules, agreement slots.
// parse_grammar checks the file (unknown rules, recursion, bad weights, slot forms) and
// builds the vocabulary; the walk over it lives in data/garden.*. File format: data/garden.yaml.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"

namespace lmx::data {

struct Symbol {
  enum Kind : uint8_t { Word, Rule, Slot };
  Kind kind = Word;
  int32_t id = 0;  // Word: vocabulary id; Rule: rule index; Slot: slot index
};

struct Choice {
  double p = 0;              // normalized probability within its rule
  std::vector<Symbol> seq;   // empty = the empty choice
  int bind = -1;             // gender bound to the choice's first word (-1: none)
  std::string where;         // "file:line:col: rules.Name[i]" for messages
};

struct Rule {
  std::string name;
  std::vector<Choice> choices;
};

struct Grammar {
  std::string source;                         // file name, for messages
  Vocab vocab;                                // <pad> 0, <bos> 1, <eos> 2, then words sorted
  std::vector<Rule> rules;
  int start = 0;                              // index of the start rule
  std::vector<std::string> genders;           // in the order of the first slot's keys
  std::vector<std::string> slots;            // slot names
  std::vector<std::vector<int32_t>> forms;    // forms[slot][gender] = word id
};

// Parses grammar YAML; throws InputError naming `source`, line:column and the key.
Grammar parse_grammar(const std::string& yaml_text, const std::string& source);
// Reads and parses a grammar file; throws InputError if it cannot be read.
Grammar load_grammar(const std::string& path);
// The built-in grammar file: LMX_SOURCE_DIR/data/garden.yaml.
std::string default_grammar_path();
// data.grammar as a file: empty = the default; a bare name (no "/" or ".") = the built-in
// LMX_SOURCE_DIR/data/NAME.yaml (garden; garden_v2: one clause per sentence; garden_v1: context-free); else the
// path itself. InputError for an unknown bare name.
std::string grammar_path(const std::string& spec);

}  // namespace lmx::data
